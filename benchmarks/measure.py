"""Measuring for run.py: time, peak memory and round trip of every corpus image through every codec.

Timing: time.perf_counter around the call alone, gc collected before and off during it. Repeats:
at least --min-repeats and until --min-time seconds, at most --repeats; one run when a single
run takes longer than --single-above seconds.

Memory: the peak resident set size (VmHWM of /proc/self/status, reset before each call by
writing 5 to /proc/self/clear_refs) minus the resident size at the reset, so allocations by C
libraries (libpng, libwebp, libjxl, this package's kernels) count as well as numpy's. glibc is
told to serve every block of 64 KiB or more by mmap and to trim freed memory, so a call's large
buffers show up as new resident pages instead of reusing ones a previous call left. The largest
peak over the timed runs after the first is kept (the first alone when it is the only run): a
configuration's first calls in the process also pay one-time costs (lazy imports, thread pools,
caches) that are not the memory of a call. Where /proc/self/clear_refs cannot be written, tracemalloc's
peak is used instead (numpy and Python allocations only) and the report says so.

Slow configurations: each configuration of this package is first timed on a 128x128 crop; one
slower than --slow-mbps MB/s is run only on images of at most --slow-max-bytes raw bytes, and
when a codec option has more than three slow effort levels only the lowest, the default and the
highest of them are run. The report lists what was limited.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import gc
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402


def _load_codecs():
    """benchmarks/codecs.py by path: the name 'codecs' is a standard-library module imported at startup."""
    key = "imij_bench_codecs"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / "codecs.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


codecs = _load_codecs()


# ----------------------------------------------------------------------------- memory


class Memory:
    """Peak memory of one call: RSS high-water mark (Linux) or tracemalloc's peak (elsewhere)."""

    def __init__(self, enabled: bool = True) -> None:
        self.method = "none"
        if not enabled:
            return
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self._rss()
            self.method = "rss"
        except OSError:
            self.method = "tracemalloc"
        if self.method == "rss":
            self._trim = None
            try:  # glibc: mmap for blocks >= 64 KiB, trim the heap above 128 KiB of free space
                libc = ctypes.CDLL("libc.so.6")
                libc.mallopt(-3, 64 * 1024)  # M_MMAP_THRESHOLD
                libc.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD
                self._trim = libc.malloc_trim  # before each call: free heap pages go back to the kernel,
                self.method = "rss+mallopt"  # so a call that reuses them shows them again
            except (OSError, AttributeError):
                pass

    @staticmethod
    def _rss() -> tuple[int, int]:
        rss = hwm = 0
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
        return rss, hwm

    def start(self) -> int:
        if self.method.startswith("rss"):
            if getattr(self, "_trim", None) is not None:
                self._trim(0)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return self._rss()[0]
        if self.method == "tracemalloc":
            tracemalloc.start()
            tracemalloc.reset_peak()
        return 0

    def stop(self, base: int) -> int | None:
        if self.method.startswith("rss"):
            return max(0, self._rss()[1] - base)
        if self.method == "tracemalloc":
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            return peak
        return None


def traced_peak(fn: Callable[[], object]) -> int:
    """tracemalloc's peak over one untimed call: every numpy and Python allocation, in all threads."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
        del result
    finally:
        tracemalloc.stop()
    return peak


# ----------------------------------------------------------------------------- timing


class Timer:
    def __init__(self, args: argparse.Namespace, memory: Memory) -> None:
        self.max_repeats = max(1, args.repeats)
        self.min_repeats = max(1, min(args.min_repeats, self.max_repeats))
        self.min_time = args.min_time
        self.single_above = args.single_above
        self.memory = memory

    def measure(self, fn: Callable[[], object]) -> tuple[object, list[float], int | None]:
        """(first result, run times, largest peak memory of the runs after the first, or of the
        first when it is the only one); timing excludes the memory probes."""
        times: list[float] = []
        peaks: list[int] = []
        first = None
        while True:
            gc.collect()
            base = self.memory.start()
            gc.disable()
            t0 = time.perf_counter()
            try:
                result = fn()
            finally:
                t1 = time.perf_counter()
                gc.enable()
            peak = self.memory.stop(base)
            if peak is not None:
                peaks.append(peak)
            if first is None:
                first = result
            del result
            times.append(t1 - t0)
            n = len(times)
            if n >= self.max_repeats or times[0] >= self.single_above:
                break
            if n >= self.min_repeats and sum(times) >= self.min_time:
                break
        return first, times, (max(peaks[1:] or peaks) if peaks else None)


# ----------------------------------------------------------------------------- the run


def _select(all_codecs: list, tokens: list[str] | None) -> list:
    if not tokens:
        return all_codecs
    out = []
    for c in all_codecs:
        for t in tokens:
            if t in (c.family, c.name, c.variant) or c.name.startswith(t + " "):
                out.append(c)
                break
    return out


def _probe_crop(items: list[tuple[dict, np.ndarray]]) -> np.ndarray:
    for r, a in items:
        if r["class"] == "photo" and a.shape[0] >= 128 and a.shape[1] >= 128:
            y, x = (a.shape[0] - 128) // 2, (a.shape[1] - 128) // 2
            return np.ascontiguousarray(a[y : y + 128, x : x + 128])
    r, a = items[0]
    return np.ascontiguousarray(a[:128, :128])


def plan_imi(imi: list, items, args, log) -> tuple[list, dict[str, int | None], list[str]]:
    """Probe each IMI configuration on a crop; slow ones get a size limit (and fewer efforts)."""
    probe = _probe_crop(items)
    limits: dict[str, int | None] = {}
    notes: list[str] = []
    speed: dict[str, float] = {}
    for c in imi:
        if c.threads not in (1, 0, None) and c.variant in speed:
            continue
        t0 = time.perf_counter()
        try:
            c.encode(probe)
        except Exception as exc:  # noqa: BLE001 - the real run records the error per image
            log(f"  probe {c.name}: {type(exc).__name__}: {exc}")
            speed[c.variant] = float("inf")
            continue
        dt = time.perf_counter() - t0
        speed[c.variant] = probe.nbytes / 1e6 / max(dt, 1e-9)
    slow = {v for v, s in speed.items() if s < args.slow_mbps}
    keep = set(speed)
    by_option: dict[object, list] = {}
    for c in imi:
        if c.variant in slow:
            by_option.setdefault(c.params.get("codec"), []).append(c)
    options = codecs.imij_options()
    for option, cs in by_option.items():
        efforts = sorted({c.params.get("effort") for c in cs if c.params.get("effort") is not None})
        if len(efforts) > 3:
            chosen = {efforts[0], efforts[-1]}
            if options.default_effort in efforts:
                chosen.add(options.default_effort)
            dropped = [e for e in efforts if e not in chosen]
            keep -= {c.variant for c in cs if c.params.get("effort") in dropped}
            notes.append(f"codec={option!r}: slow at efforts {efforts} (probe {min(speed[c.variant] for c in cs):.2f}-"
                         f"{max(speed[c.variant] for c in cs):.2f} MB/s on a 128x128 crop): run at efforts "
                         f"{sorted(chosen)} only")
    for v in sorted(slow & keep):
        limits[v] = args.slow_max_bytes
        notes.append(f"{v}: {speed[v]:.2f} MB/s on the probe, below {args.slow_mbps} MB/s: "
                     f"only images of at most {args.slow_max_bytes:,} raw bytes")
    return [c for c in imi if c.variant in keep], limits, notes


def run(args: argparse.Namespace) -> dict:
    """Every selected image through every selected codec; the run as one JSON-ready dict."""
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    started = time.perf_counter()
    cdir = Path(args.corpus)
    if not (cdir / corpus.MANIFEST).exists():
        if args.corpus_no_build:
            raise SystemExit(f"no corpus in {cdir}")
        log(f"building the corpus in {cdir} ...")
        corpus.build(cdir)
    manifest = json.loads((cdir / corpus.MANIFEST).read_text())
    items = corpus.load(cdir)
    if args.classes:
        items = [(r, a) for r, a in items if r["class"] in args.classes]
    if args.images:
        items = [(r, a) for r, a in items if any(s in r["name"] for s in args.images)]
    if not items:
        raise SystemExit("no images selected")

    memory = Memory(enabled=not args.no_memory)
    timer = Timer(args, memory)
    options = codecs.imij_options()
    efforts = None
    if args.efforts == "default":
        efforts = [options.default_effort] if options.default_effort is not None else []
    elif args.efforts != "all":
        efforts = [int(e) for e in args.efforts.split(",")]
    threads = None
    if args.threads:
        threads = sorted({codecs.ALL_THREADS if t == "all" else int(t) for t in args.threads.split(",")})
    imi_opts = args.imi_codecs.split(",") if args.imi_codecs else None
    imi = codecs.imij_codecs(options, efforts=efforts, codec_options=imi_opts, thread_counts=threads)
    refs = codecs.reference_codecs()
    tokens = args.codecs.split(",") if args.codecs else None
    imi, refs = _select(imi, tokens), _select(refs, tokens)
    imi, limits, notes = plan_imi(imi, items, args, log) if imi else ([], {}, [])
    for n in notes:
        log("  " + n)
    all_codecs = imi + refs

    rows: list[dict] = []
    for r, a in items:
        raw = int(a.nbytes)
        pixels = int(a.shape[0] * a.shape[1])
        log(f"{r['class']:10s} {r['name']:26s} {'x'.join(map(str, a.shape)):>14s} {a.dtype}")
        for c in all_codecs:
            row = {"image": r["name"], "class": r["class"], "codec": c.name, "variant": c.variant, "family": c.family,
                   "threads": c.threads, "raw_bytes": raw, "pixels": pixels, "dtype": str(a.dtype),
                   "channels": codecs.channels(a), "default": bool(c.params.get("default")),
                   "effort": c.params.get("effort"), "imi_codec": c.params.get("codec")}
            why = c.supports(a)
            if why:
                rows.append({**row, "skipped": why})
                continue
            limit = limits.get(c.variant)
            if limit is not None and raw > limit:
                rows.append({**row, "skipped": f"slow configuration, image over {limit:,} raw bytes"})
                continue
            try:
                encoded, enc_t, enc_peak = timer.measure(lambda: c.encode(a))
                blob = bytes(encoded)
                del encoded
                decoded, dec_t, dec_peak = timer.measure(lambda: c.decode(blob))
                ok = codecs.same_pixels(a, codecs.roundtrip_view(c, a, decoded))
                del decoded
            except Exception as exc:  # noqa: BLE001 - one failure is a result, not the end of the run
                rows.append({**row, "error": f"{type(exc).__name__}: {exc}"[:300]})
                log(f"    {c.name:22s} ERROR {type(exc).__name__}: {exc}")
                continue
            tm_enc = tm_dec = None
            enc_s, dec_s = statistics.median(enc_t), statistics.median(dec_t)
            if c.family == "imi" and not args.no_memory:  # exact for this package: its kernels allocate nothing
                if enc_s <= args.traced_max_seconds:  # tracemalloc slows pure-Python code about 5x
                    tm_enc = traced_peak(lambda: c.encode(a))
                if dec_s <= args.traced_max_seconds:
                    tm_dec = traced_peak(lambda: c.decode(blob))
            rows.append({**row, "bytes": len(blob), "bpp": len(blob) * 8 / pixels,
                         "enc_s": enc_s, "dec_s": dec_s, "enc_runs": len(enc_t), "dec_runs": len(dec_t),
                         "enc_mbps": raw / 1e6 / enc_s, "dec_mbps": raw / 1e6 / dec_s,
                         "enc_peak": enc_peak, "dec_peak": dec_peak, "enc_traced": tm_enc, "dec_traced": tm_dec,
                         "lossless": ok,
                         "digest": _digest(blob) if c.family == "imi" else None})
            if not args.quiet:
                x = rows[-1]
                log(f"    {c.name:22s} {x['bpp']:7.3f} bpp  enc {x['enc_mbps']:8.1f}  dec {x['dec_mbps']:8.1f} MB/s"
                    f"{'' if ok else '  ROUND TRIP FAILED'}")

    elapsed = time.perf_counter() - started
    return {
        "when": _dt.datetime.now().isoformat(timespec="seconds"),
        "elapsed_s": elapsed,
        "argv": sys.argv[1:],
        "machine": machine_info(),
        "memory_method": memory.method,
        "imij": {"signature": options.signature, "efforts": list(options.efforts), "codecs": list(options.codecs),
                 "default_effort": options.default_effort, "default_codec": options.default_codec,
                 "how": options.how, "threads": [1, codecs.ALL_THREADS]},
        "notes": notes,
        "codecs": [{"name": c.name, "variant": c.variant, "family": c.family, "note": c.note,
                    "imi_codec": c.params.get("codec"), "effort": c.params.get("effort")} for c in all_codecs],
        "unavailable": codecs.unavailable(),
        "corpus": {"dir": str(cdir), "images": [r for r, _ in items], "tools": manifest.get("tools", {}),
                   **({"builder": manifest["builder"]} if "builder" in manifest else {})},
        "rows": rows,
        "settings": {k: getattr(args, k) for k in ("repeats", "min_repeats", "min_time", "single_above",
                                                    "slow_mbps", "slow_max_bytes", "traced_max_seconds")},
    }


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()[:16]


def machine_info() -> dict:
    import importlib.metadata as md

    info = {"python": platform.python_version(), "cores": os.cpu_count(), "platform": platform.platform()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    for dist in ("imij-plugins", "numpy", "pillow", "imagecodecs", "qoi", "tifffile"):
        try:
            info[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    try:
        from PIL import features

        info["libwebp"] = features.version("webp")
        info["zlib (Pillow)"] = features.version("zlib")
    except Exception:  # noqa: BLE001
        pass
    try:
        import imagecodecs

        v = imagecodecs.version(dict)
        for k in ("libjxl", "zstd", "libpng", "charls", "zlib_ng", "libdeflate"):
            if k in v:
                info[k] = v[k]
    except Exception:  # noqa: BLE001
        pass
    try:
        commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        if commit:
            info["commit"] = commit
            dirty = subprocess.run(["git", "--no-optional-locks", "-C", str(HERE.parent), "diff", "--quiet", "HEAD",
                                    "--", "imij_plugins", "csrc"], capture_output=True, timeout=30).returncode
            if dirty == 1:
                info["commit"] += " plus uncommitted changes to imij_plugins/ or csrc/"
    except (OSError, subprocess.SubprocessError):
        pass
    return info
