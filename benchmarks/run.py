"""Codec comparison in one process: every corpus image through every codec.

    python benchmarks/run.py                      # full run: builds benchmarks/.corpus/ if needed
    python benchmarks/run.py --codecs imi,png --efforts default --repeats 3   # a quick look

For each image and codec: bits per pixel, encode and decode MB/s of raw pixel bytes (median of
repeats), the peak memory of one encode and one decode, and a lossless round-trip check (bit for
bit). This package runs at each codec option and effort level, with 1 thread and with all
cores; the files the two thread counts write are compared too. It writes the section
"Codec comparison" of benchmarks/RESULTS.md (other sections are left as they are) and every
measurement as JSON (default: results.json in the corpus folder).

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
import math
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
SECTION = "Codec comparison"


def _load(name: str, filename: str):
    """Import a sibling file by path ('codecs' is a standard-library name, imported at startup)."""
    key = f"imij_bench_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, HERE / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


corpus = _load("corpus", "corpus.py")
codecs = _load("codecs", "codecs.py")


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
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    started = time.perf_counter()
    cdir = Path(args.corpus)
    if not (cdir / corpus.MANIFEST).exists():
        if args.corpus_no_build:
            raise SystemExit(f"no corpus in {cdir}")
        log(f"building the corpus in {cdir} ...")
        corpus.build(cdir)
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
        "corpus": {"dir": str(cdir), "images": [r for r, _ in items],
                   "tools": json.loads((cdir / corpus.MANIFEST).read_text()).get("tools", {})},
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


# ----------------------------------------------------------------------------- the report


def gmean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def median(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}" if digits >= 1 else f"{x:.0f}"
    return f"{x:.{digits}f}"


class Results:
    def __init__(self, data: dict) -> None:
        self.data = data
        self.rows = [r for r in data["rows"] if "bpp" in r]
        self.by = {(r["image"], r["codec"]): r for r in self.rows}
        self.images = data["corpus"]["images"]
        self.classes = [c for c in corpus.CLASSES if any(i["class"] == c for i in self.images)]
        variants: list[str] = []
        for c in data["codecs"]:
            if c["variant"] not in variants:
                variants.append(c["variant"])
        self.variants = variants
        self.family = {c["variant"]: c["family"] for c in data["codecs"]}
        self.all_t = max(data["imij"]["threads"])
        imi = data["imij"]
        self.default_codec, self.default_effort = imi["default_codec"], imi["default_effort"]

    def codec_name(self, variant: str, threads: int | None = None) -> str:
        if self.family.get(variant) == "imi":
            return f"{variant} t{threads if threads is not None else self.all_t}"
        return variant

    def row(self, image: str, variant: str, threads: int | None = None) -> dict | None:
        r = self.by.get((image, self.codec_name(variant, threads)))
        if r is None and self.family.get(variant) == "imi" and threads is None:
            r = self.by.get((image, f"{variant} t1"))  # only one thread count was run
        return r

    def class_images(self, cls: str) -> list[str]:
        return [i["name"] for i in self.images if i["class"] == cls]

    def ratios(self, cls: str, a: str, b: str, key: str, inverse: bool = False) -> tuple[float | None, int]:
        """Geometric mean over the class's images of a[key] / b[key] (both measured)."""
        xs = []
        for img in self.class_images(cls):
            ra, rb = self.row(img, a), self.row(img, b)
            if ra and rb and ra.get(key) and rb.get(key):
                xs.append(ra[key] / rb[key])
        return gmean(xs), len(xs)

    def med(self, cls: str, variant: str, key: str, threads: int | None = None) -> float | None:
        return median([self.row(i, variant, threads)[key] for i in self.class_images(cls)
                       if self.row(i, variant, threads) and self.row(i, variant, threads).get(key) is not None])

    def count(self, cls: str, variant: str) -> int:
        return sum(1 for i in self.class_images(cls) if self.row(i, variant))

    def imi_variants(self) -> list[str]:
        return [v for v in self.variants if self.family.get(v) == "imi"]

    def option_variants(self) -> dict[object, list[str]]:
        """This package's variants grouped by codec option, in run order."""
        out: dict[object, list[str]] = {}
        for c in self.data["codecs"]:
            if c["family"] == "imi" and c["variant"] not in out.setdefault(c.get("imi_codec"), []):
                out[c.get("imi_codec")].append(c["variant"])
        return out

    def efforts(self, option: object) -> list[int]:
        return sorted({c["effort"] for c in self.data["codecs"]
                       if c["family"] == "imi" and c.get("imi_codec") == option and c.get("effort") is not None})

    def variant_for(self, option: object, effort: int | None) -> str | None:
        for c in self.data["codecs"]:
            if c["family"] == "imi" and c.get("imi_codec") == option and c.get("effort") == effort:
                return c["variant"]
        return None


MEM_MIN_BYTES = 1 << 20  # RSS peaks of smaller images are within the kernel counters' slack


def _peak_ratio(r: dict | None, key: str) -> float | None:
    if not r or r.get(key) is None or not r["raw_bytes"]:
        return None
    if key in ("enc_peak", "dec_peak") and r["raw_bytes"] < MEM_MIN_BYTES:
        return None
    return r[key] / r["raw_bytes"]


def report(data: dict) -> str:
    R = Results(data)
    m = data["machine"]
    lines: list[str] = [f"## {SECTION}", ""]
    when = data["when"][:10]
    lines += [
        f"`benchmarks/run.py` ({'`' + ' '.join(data['argv']) + '`' if data['argv'] else 'defaults'}), {when}, "
        f"{data['elapsed_s'] / 60:.1f} minutes, one process. Machine: {m.get('cpu', '?')}, {m.get('cores')} cores, "
        f"Python {m.get('python')}, numpy {m.get('numpy')}, imij-plugins {m.get('imij-plugins')}"
        f"{' at ' + m['commit'] if m.get('commit') else ''}; Pillow {m.get('pillow')} (libwebp {m.get('libwebp')}, "
        f"zlib {m.get('zlib (Pillow)')}), qoi {m.get('qoi')}, imagecodecs {m.get('imagecodecs')} (libjxl "
        f"{m.get('libjxl')}, zstd {m.get('zstd')}, CharLS {m.get('charls')}), tifffile {m.get('tifffile')}. "
        "The VM's speed varies between runs (other tenants): compare codecs within a run, not across runs.",
        "",
    ]
    # corpus
    lines += ["Corpus (`python benchmarks/corpus.py`, sources and licenses in `benchmarks/CORPUS.md`):", "",
              "| class | images | megapixels | raw MB | sample types |", "|---|---:|---:|---:|---|"]
    for cls in R.classes:
        imgs = [i for i in R.images if i["class"] == cls]
        mp = sum(i["shape"][0] * i["shape"][1] for i in imgs) / 1e6
        mb = sum(i["bytes"] for i in imgs) / 1e6
        kinds = sorted({f"{i['dtype']} x{1 if len(i['shape']) == 2 else i['shape'][2]}" for i in imgs})
        lines.append(f"| {cls} | {len(imgs)} | {mp:.2f} | {mb:.1f} | {', '.join(kinds)} |")
    lines.append("")
    imi = data["imij"]
    s = data["settings"]
    mem = {"rss+mallopt": "peak RSS (VmHWM after a /proc/self/clear_refs reset) above the RSS at the call, glibc "
                          "mmap threshold 64 KiB and malloc_trim(0) before each call (so memory freed earlier and "
                          "reused still counts), so C-library allocations count too; the kernel's RSS counters "
                          "are approximate to a few hundred KiB, so the tables use it for images of at least 1 MiB "
                          "only; the largest over the runs after the first (a configuration's first calls also pay "
                          "one-time costs: imports, thread pools, caches), the first's when it is the only run",
           "rss": "peak RSS above the RSS at the call (VmHWM after a clear_refs reset), images of at least 1 MiB only",
           "tracemalloc": "tracemalloc peak (numpy and Python allocations only; C-library buffers are not seen)",
           "none": "not measured"}[data["memory_method"]]
    if data["memory_method"] != "none":
        mem += ("; for this package also tracemalloc's peak over one extra untimed call (\"traced\"), exact "
                "because all it allocates is numpy and Python memory (its C kernels write into numpy buffers); "
                f"taken for calls of at most {s.get('traced_max_seconds', 0.5)} s only (tracemalloc slows "
                "pure-Python code about 5x)")
    lines += [
        "Method: MB/s are raw pixel bytes (H x W x channels x bytes per sample) per second, medians over "
        f"the images of a class of each image's median run (at least {s['min_repeats']} runs and "
        f"{s['min_time']} s, at most {s['repeats']}; one run when a run takes over {s['single_above']} s). "
        "bpp = 8 x file bytes / pixels. Ratios (×) are geometric means over the images both codecs coded, "
        "per image: size = this file / that file; speed = this MB/s / that MB/s. "
        f"Memory: {mem}; \"peak/raw\" divides it by the raw bytes (encode: input; decode: output). "
        "Every decode is compared bit for bit with the original.",
        "",
        f"This package: `imij_plugins.encode(array, effort=e, codec=c, threads=t)` and "
        f"`imij_plugins.read(data, threads=t)`; efforts {imi['efforts']}, codec options {imi['codecs']} "
        f"(found at run time: {imi['how'].splitlines()[0]}), default effort {imi['default_effort']}, default codec "
        f"{imi['default_codec']!r}; t1 = 1 thread, t{R.all_t} = all cores. Cells \"a / b\" are 1 thread / all cores.",
        "",
    ]
    if data["notes"]:
        lines += ["Limited configurations:", ""] + [f"- {n}" for n in data["notes"]] + [""]
    lines += ["Other codecs:", ""] + [f"- `{c['name']}`: {c['note']}" for c in data["codecs"] if c["family"] != "imi"]
    if data["unavailable"]:
        lines += [f"- not installed: {', '.join(f'{k} ({v})' for k, v in data['unavailable'].items())}"]
    lines.append("")

    # failures
    bad = [r for r in R.rows if not r["lossless"]]
    errors = [r for r in data["rows"] if "error" in r]
    mism = _thread_mismatches(R)
    lines.append(f"Round trips: {len(R.rows) - len(bad)} of {len(R.rows)} exact"
                 + ("." if not bad else "; NOT exact: " + ", ".join(f"{r['codec']} on {r['image']}" for r in bad) + "."))
    if errors:
        lines.append("Errors: " + "; ".join(f"{r['codec']} on {r['image']}: {r['error']}" for r in errors[:20])
                     + (f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""))
    lines.append("Files written with 1 thread and with all cores: " + (
        "identical for every image and configuration." if not mism else "DIFFER for " + ", ".join(mism[:20]) + "."))
    lines.append("")

    # targets
    lines += _targets(R)
    lines += _decode_table(R)
    lines += _versus_tables(R)
    lines += _class_tables(R)
    return "\n".join(lines).rstrip() + "\n"


def _thread_mismatches(R: Results) -> list[str]:
    out = []
    for v in R.imi_variants():
        for img in [i["name"] for i in R.images]:
            a, b = R.by.get((img, f"{v} t1")), R.by.get((img, f"{v} t{R.all_t}"))
            if a and b and a.get("digest") != b.get("digest"):
                out.append(f"{v} on {img}")
    return out


def _class_tables(R: Results) -> list[str]:
    lines = ["### Per class", "",
             "bpp, MB/s and peak/raw are medians over the class's images; × columns are geometric means of "
             "per-image ratios against PNG (Pillow, default level 6; for float: TIFF zstd). n = images coded.", ""]
    for cls in R.classes:
        base = "png" if cls != "float" else "tiff zstd"
        lines += [f"#### {cls} ({len(R.class_images(cls))} images; × against {base})", "",
                  "| codec | n | bpp | size × | encode MB/s | decode MB/s | enc × | dec × | peak/raw enc / dec (RSS) "
                  "| traced enc / dec |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for v in R.variants:
            n = R.count(cls, v)
            if not n:
                continue
            is_imi = R.family.get(v) == "imi"
            bpp = R.med(cls, v, "bpp")
            size_x, _ = R.ratios(cls, v, base, "bytes")
            enc_x, _ = R.ratios(cls, v, base, "enc_mbps")
            dec_x, _ = R.ratios(cls, v, base, "dec_mbps")
            if is_imi:
                e1, ea = R.med(cls, v, "enc_mbps", 1), R.med(cls, v, "enc_mbps", R.all_t)
                d1, da = R.med(cls, v, "dec_mbps", 1), R.med(cls, v, "dec_mbps", R.all_t)
                enc, dec = f"{fmt(e1, 1)} / {fmt(ea, 1)}", f"{fmt(d1, 1)} / {fmt(da, 1)}"
            else:
                enc, dec = fmt(R.med(cls, v, "enc_mbps"), 1), fmt(R.med(cls, v, "dec_mbps"), 1)
            imgs = R.class_images(cls)
            ep, dp = (median([_peak_ratio(R.row(i, v), k) for i in imgs]) for k in ("enc_peak", "dec_peak"))
            te, td = (median([_peak_ratio(R.row(i, v), k) for i in imgs]) for k in ("enc_traced", "dec_traced"))
            name = f"**{v}**" if is_imi and v == R.variant_for(R.default_codec, R.default_effort) else v
            traced = f"{fmt(te)} / {fmt(td)}" if is_imi else "—"
            lines.append(f"| {name} | {n} | {fmt(bpp)} | {fmt(size_x)} | {enc} | {dec} | {fmt(enc_x)} | {fmt(dec_x)} "
                         f"| {fmt(ep)} / {fmt(dp)} | {traced} |")
        lines.append("")
    return lines


def _versus_tables(R: Results) -> list[str]:
    refs = [v for v in R.variants if R.family.get(v) != "imi"]
    lines = ["### This package against each codec", "",
             "Geometric means of per-image ratios, all cores: size × / decode speed × / encode speed × "
             "(size below 1 and speeds above 1 favour this package); n = images both coded.", ""]
    for option, variants in R.option_variants().items():
        efforts = R.efforts(option)
        picks = []
        if R.variant_for(option, R.default_effort) in variants:
            picks.append(("default effort", R.variant_for(option, R.default_effort)))
        if efforts and R.variant_for(option, efforts[-1]) in variants and efforts[-1] != R.default_effort:
            picks.append(("maximum effort", R.variant_for(option, efforts[-1])))
        if not picks and variants:
            picks.append(("", variants[0]))
        for label, v in picks:
            lines += [f"#### {v}{' (' + label + ')' if label else ''}", "",
                      "| against | " + " | ".join(R.classes) + " |", "|---|" + "---:|" * len(R.classes)]
            for ref in refs:
                cells = []
                for cls in R.classes:
                    s, n = R.ratios(cls, v, ref, "bytes")
                    d, _ = R.ratios(cls, v, ref, "dec_mbps")
                    e, _ = R.ratios(cls, v, ref, "enc_mbps")
                    cells.append("—" if not n else f"{fmt(s)} / {fmt(d)} / {fmt(e)} (n={n})")
                lines.append(f"| {ref} | " + " | ".join(cells) + " |")
            lines.append("")
    return lines


def _decode_table(R: Results) -> list[str]:
    lines = ["### Decode speed of this package (issue 3)", "",
             f"Median MB/s of decoded pixel bytes per class at the default effort, 1 thread / all {R.all_t} cores "
             "(speed-up = median of per-image all-core / 1-thread ratios).", "",
             "| codec option | " + " | ".join(R.classes) + " |", "|---|" + "---:|" * len(R.classes)]
    for option, variants in R.option_variants().items():
        v = R.variant_for(option, R.default_effort) or variants[0]
        cells = []
        for cls in R.classes:
            d1, da = R.med(cls, v, "dec_mbps", 1), R.med(cls, v, "dec_mbps", R.all_t)
            ups = []
            for i in R.class_images(cls):
                a, b = R.by.get((i, f"{v} t1")), R.by.get((i, f"{v} t{R.all_t}"))
                if a and b:
                    ups.append(b["dec_mbps"] / a["dec_mbps"])
            n = R.count(cls, v)
            cells.append("—" if not n else f"{fmt(d1, 1)} / {fmt(da, 1)} (×{fmt(median(ups))}, n={n})")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


TARGETS = [
    # (label, class, effort ('default'|'max'), key, reference, op, bound)
    ("photo size <= 0.85x PNG", "photo", "default", "bytes", "png", "<=", 0.85),
    ("photo size (max effort) <= 1.10x WebP", "photo", "max", "bytes", "webp", "<=", 1.10),
    ("screenshot size <= 0.8x QOI", "screenshot", "default", "bytes", "qoi", "<=", 0.8),
    ("screenshot size < PNG", "screenshot", "default", "bytes", "png", "<", 1.0),
    ("graphics size <= 0.8x QOI", "graphics", "default", "bytes", "qoi", "<=", 0.8),
    ("graphics size < PNG", "graphics", "default", "bytes", "png", "<", 1.0),
    ("16-bit size <= 0.95x PNG", "16-bit", "default", "bytes", "png", "<=", 0.95),
    ("float size < TIFF zstd + fp predictor", "float", "default", "bytes", "tiff zstd", "<", 1.0),
    ("photo decode >= 3x PNG", "photo", "default", "dec_mbps", "png", ">=", 3.0),
    ("photo decode >= 0.7x QOI", "photo", "default", "dec_mbps", "qoi", ">=", 0.7),
    ("screenshot decode >= 2x PNG", "screenshot", "default", "dec_mbps", "png", ">=", 2.0),
    ("graphics decode >= 2x PNG", "graphics", "default", "dec_mbps", "png", ">=", 2.0),
    ("photo encode >= 5x PNG", "photo", "default", "enc_mbps", "png", ">=", 5.0),
    ("screenshot encode >= PNG", "screenshot", "default", "enc_mbps", "png", ">=", 1.0),
    ("graphics encode >= PNG", "graphics", "default", "enc_mbps", "png", ">=", 1.0),
]


def _verdict(x: float | None, op: str, bound: float) -> str:
    if x is None:
        return "—"
    ok = {"<=": x <= bound, "<": x < bound, ">=": x >= bound}[op]
    return "met" if ok else "missed"


def _targets(R: Results) -> list[str]:
    opts = R.option_variants()
    heads = []
    for option in opts:
        efforts = R.efforts(option)
        heads.append((option, R.variant_for(option, R.default_effort), R.variant_for(option, efforts[-1]) if efforts else None))
    lines = ["### Issue 4 targets", "",
             "Geometric means of per-image ratios at all cores (the targets are ratios in the same run); "
             "memory: peak / raw bytes of this package's calls (traced: tracemalloc, every image; RSS: images "
             "of at least 1 MiB).", "",
             "| target | " + " | ".join(f"{d or m}" for _, d, m in heads) + " |", "|---|" + "---|" * len(heads)]
    for label, cls, which, key, ref, op, bound in TARGETS:
        if cls not in R.classes:
            continue
        cells = []
        for _, d, mx in heads:
            v = d if which == "default" else mx
            if v is None:
                cells.append("—")
                continue
            x, n = R.ratios(cls, v, ref, key)
            cells.append("—" if not n else f"{fmt(x)}x, {_verdict(x, op, bound)} (n={n}{', ' + v.split()[-1] if which == 'max' else ''})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, key, bound in (("decode peak <= 1.3x output", "dec", 1.3), ("encode peak <= 2x input", "enc", 2.0)):
        for cls in R.classes:
            cells = []
            for _, d, _mx in heads:
                if d is None:
                    cells.append("—")
                    continue
                rows = [R.row(i, d) for i in R.class_images(cls)]
                xs = [x for x in (_peak_ratio(r, f"{key}_traced") for r in rows) if x is not None]
                rss = [x for x in (_peak_ratio(r, f"{key}_peak") for r in rows) if x is not None]
                worst = max(xs) if xs else None
                cell = "—" if worst is None else (f"traced {fmt(worst)}x max, median {fmt(median(xs))}x, "
                                                  f"{_verdict(worst, '<=', bound)}")
                if rss:
                    cell += f"; RSS {fmt(max(rss))}x max (n={len(rss)})"
                cells.append(cell)
            lines.append(f"| {cls}: {label} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


# ----------------------------------------------------------------------------- RESULTS.md


def write_section(path: Path, section: str) -> None:
    """Replace the '## Codec comparison' section of ``path`` (or append it); keep everything else."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    lines = text.splitlines(keepends=True)
    start = end = None
    for i, line in enumerate(lines):
        if line.rstrip("\n") == f"## {SECTION}":
            start = i
        elif start is not None and line.startswith("## "):
            end = i
            break
    if start is None:
        body = text if text.endswith("\n") else text + "\n"
        path.write_text(body + "\n" + section)
        return
    end = len(lines) if end is None else end
    tail = "".join(lines[end:])
    path.write_text("".join(lines[:start]) + section + ("\n" + tail if tail else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Codec comparison: every corpus image through every codec, in one process.")
    ap.add_argument("--corpus", default=str(corpus.DEFAULT_DIR), help="corpus folder (built there when missing)")
    ap.add_argument("--corpus-no-build", action="store_true", help="fail instead of building a missing corpus")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"), help="markdown file whose section is (re)written")
    ap.add_argument("--json", default=None, help="all measurements as JSON (default: results.json in the corpus folder)")
    ap.add_argument("--report-only", default=None, metavar="JSON", help="rewrite the section from a saved JSON run")
    ap.add_argument("--codecs", default=None, help="comma list of families/names/variants, e.g. 'imi,png,qoi,jxl e1'")
    ap.add_argument("--imi-codecs", default=None, help="comma list of this package's codec options (default: all found)")
    ap.add_argument("--efforts", default="all", help="'all' (default), 'default' or a comma list")
    ap.add_argument("--threads", default=None, help="this package's thread counts, e.g. '1,all' (default)")
    ap.add_argument("--classes", nargs="*", default=None, choices=corpus.CLASSES)
    ap.add_argument("--images", nargs="*", default=None, help="substrings of image names to keep")
    ap.add_argument("--repeats", type=int, default=5, help="at most this many timed runs per measurement")
    ap.add_argument("--min-repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds of runs to reach before stopping")
    ap.add_argument("--single-above", type=float, default=1.0, help="one run when a run takes longer (seconds)")
    ap.add_argument("--slow-mbps", type=float, default=1.0, help="probe speed below which a configuration is slow")
    ap.add_argument("--slow-max-bytes", type=int, default=450_000, help="largest image (raw bytes) a slow one codes")
    ap.add_argument("--no-memory", action="store_true", help="do not measure peak memory")
    ap.add_argument("--traced-max-seconds", type=float, default=0.5,
                    help="tracemalloc run of this package only for calls at most this long (it slows them ~5x)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    args.classes = set(args.classes) if args.classes else None

    if args.report_only:
        data = json.loads(Path(args.report_only).read_text())
    else:
        data = run(args)
        out = Path(args.json) if args.json else Path(args.corpus) / "results.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1, default=str))
        print(f"measurements: {out}", file=sys.stderr)
    write_section(Path(args.results), report(data))
    print(f"wrote the '{SECTION}' section of {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
