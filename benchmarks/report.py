"""Reporting for run.py: the markdown section of RESULTS.md from one JSON run of measure.py.

Pure text from data: nothing is measured or imported from the other benchmark scripts, so a
saved JSON (``run.py --report-only``) gives the same section again.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path

SECTION = "Codec comparison"

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
    """One run's measured rows, indexed by image and codec, with ratio and median helpers."""

    def __init__(self, data: dict, classes: Sequence[str]) -> None:
        self.data = data
        self.rows = [r for r in data["rows"] if "bpp" in r]
        self.by = {(r["image"], r["codec"]): r for r in self.rows}
        self.images = data["corpus"]["images"]
        self.classes = [c for c in classes if any(i["class"] == c for i in self.images)]
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

    def megapixels(self, image: str) -> float:
        shape = next(i["shape"] for i in self.images if i["name"] == image)
        return shape[0] * shape[1] / 1e6

    def ratios(self, cls: str, a: str, b: str, key: str, inverse: bool = False,
               band: tuple[float, float] | None = None) -> tuple[float | None, int]:
        """Geometric mean over the class's images (those of ``band`` megapixels, low inclusive)
        of a[key] / b[key] (both measured)."""
        xs = []
        for img in self.class_images(cls):
            if band is not None and not band[0] <= self.megapixels(img) < band[1]:
                continue
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


def report(data: dict, classes: Sequence[str], section: str = SECTION) -> str:
    """The markdown section '## <section>' for one run; ``classes`` orders the per-class tables."""
    R = Results(data, classes)
    m = data["machine"]
    lines: list[str] = [f"## {section}", ""]
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
    builder = data["corpus"].get("builder", "benchmarks/corpus.py")
    lines += [f"Corpus (`python {builder}`, sources and licenses in `benchmarks/CORPUS.md`):", "",
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
    lines += _current_targets(R)
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
    lines = ["### Decode speed of this package", "",
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


# (label, class, effort ('default'|'max'), key, reference, op, bound): ratios to another codec
CURRENT_TARGETS = [
    ("graphics decode >= 2.5x PNG", "graphics", "default", "dec_mbps", "png", ">=", 2.5),
    ("screenshot decode >= 4x PNG", "screenshot", "default", "dec_mbps", "png", ">=", 4.0),
    ("graphics encode >= 2x PNG", "graphics", "default", "enc_mbps", "png", ">=", 2.0),
    ("screenshot encode >= 2x PNG", "screenshot", "default", "enc_mbps", "png", ">=", 2.0),
    ("photo decode >= 1.0x QOI", "photo", "default", "dec_mbps", "qoi", ">=", 1.0),
]
# the graphics targets also per size: the band the targets were set on (logos, icons and
# palettes of 0.02-0.3 megapixels), and the icons below it
GRAPHICS_BANDS = [((0.02, 0.3), "0.02-0.3 MP"), ((0.0, 0.02), "below 0.02 MP")]
# (class, bound on the default effort's median bpp, bound on the highest effort's)
CURRENT_BPP = [("screenshot", 0.67, 0.60)]
EFFORT_DECODE = 0.85  # the highest effort's files decode at least this fast against the default's
TARGETS = [
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


def _current_targets(R: Results) -> list[str]:
    """The targets now pursued: speed against PNG and QOI, the highest effort's decode speed
    against the default effort's (every class; worst image too) and screenshot bits per pixel."""
    option = R.default_codec if R.default_codec in R.option_variants() else next(iter(R.option_variants()), None)
    efforts = R.efforts(option)
    d = R.variant_for(option, R.default_effort)
    mx = R.variant_for(option, efforts[-1]) if efforts and efforts[-1] != R.default_effort else None
    if d is None:
        return []
    lines = ["### Targets", "",
             f"`{d}` (and `{mx or '-'}`) at all cores: geometric means of per-image ratios in this run, medians "
             "of bits per pixel.", "", "| target | measured | |", "|---|---:|---|"]
    for label, cls, _, key, ref, op, bound in CURRENT_TARGETS:
        x, n = R.ratios(cls, d, ref, key)
        if n:
            lines.append(f"| {label} | {fmt(x)}x (n={n}) | {_verdict(x, op, bound)} |")
        for (low, high), name in GRAPHICS_BANDS if cls == "graphics" else ():
            xb, nb = R.ratios(cls, d, ref, key, band=(low, high))
            if nb and nb != n:
                lines.append(f"| {label}, {name} | {fmt(xb)}x (n={nb}) | {_verdict(xb, op, bound)} |")
    if mx is not None:
        for cls in R.classes:
            xs = [R.row(i, mx)["dec_mbps"] / R.row(i, d)["dec_mbps"] for i in R.class_images(cls)
                  if R.row(i, mx) and R.row(i, d)]
            ones = [R.row(i, mx, 1)["dec_mbps"] / R.row(i, d, 1)["dec_mbps"] for i in R.class_images(cls)
                    if R.row(i, mx, 1) and R.row(i, d, 1)]
            if xs:
                g = gmean(xs)
                lines.append(f"| {cls}: {mx.split()[-1]} decode >= {EFFORT_DECODE}x {d.split()[-1]}'s | "
                             f"{fmt(g)}x, worst {fmt(min(xs))}x; 1 thread {fmt(gmean(ones))}x, worst "
                             f"{fmt(min(ones) if ones else None)}x (n={len(xs)}) | {_verdict(g, '>=', EFFORT_DECODE)} |")
    for cls, bound_d, bound_mx in CURRENT_BPP:
        for v, bound in ((d, bound_d), (mx, bound_mx)):
            b = R.med(cls, v, "bpp") if v is not None and cls in R.classes else None
            if b is not None:
                webp = R.med(cls, "webp", "bpp")
                lines.append(f"| {cls} median bpp, {v.split()[-1]} <= {bound} | {fmt(b, 3)} (WebP {fmt(webp, 3)}) "
                             f"| {_verdict(b, '<=', bound)} |")
    lines.append("")
    return lines


def _targets(R: Results) -> list[str]:
    opts = R.option_variants()
    heads = []
    for option in opts:
        efforts = R.efforts(option)
        heads.append((option, R.variant_for(option, R.default_effort), R.variant_for(option, efforts[-1]) if efforts else None))
    lines = ["### Targets of the first performance round", "",
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


def write_section(path: Path, section: str, name: str = SECTION) -> None:
    """Replace the '## <name>' section of ``path`` with ``section`` (or append it); keep everything else."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    lines = text.splitlines(keepends=True)
    start = end = None
    for i, line in enumerate(lines):
        if line.rstrip("\n") == f"## {name}":
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
