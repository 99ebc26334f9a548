"""The fixed cost of one ``imij_plugins.read`` of a small image: time per read,
and optionally where it goes (cProfile by stage) and how many instructions it runs (callgrind).

Times are medians of many rounds of ``time.perf_counter`` (robust on a loaded machine), or with
``--cpu`` of ``time.process_time`` (CPU time of every thread: what a busy machine's other jobs
do not add, though a parallel read counts each thread's time); ``--callgrind N`` runs each case
under ``valgrind --tool=callgrind`` with N and 2N reads and reports the difference per read, which
excludes start-up and repeats to the instruction (valgrind has no AVX-512: the kernels take their
AVX2 path there).

``--graphics`` reads real content instead of gradients: centre crops of the corpus's graphics
(``python benchmarks/corpus.py`` builds it) and synthetic palette graphics, RGB and RGBA u8 at the
default effort, each also decoded as PNG by Pillow and read through the Pillow plugin
(``Image.open(...).load()``), the three interleaved in one process; ``ratio`` is PNG's time over
``imij_plugins.read``'s.

    python benchmarks/fixed_costs.py                   # every size, RGB u8, both codecs
    python benchmarks/fixed_costs.py --all --profile   # every layout and sample type, stages
    python benchmarks/fixed_costs.py --sizes 16 --callgrind 200
    python benchmarks/fixed_costs.py --graphics --sizes 64,128,256,512 --callgrind 20
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

import imij_plugins

CORPUS = Path(__file__).resolve().parent / ".corpus"
GRAPHICS = ("sk-logo", "mpl-gift-icon", "jxl-color-ring")  # corpus graphics cropped to each size
PALETTES = ("palette-16", "palette-dither")  # synthetic palette graphics (Case.image)
LAYOUTS = {"gray": 1, "rgb": 3, "rgba": 4}
DTYPES = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}
# Stages of one read, by (file suffix, function): cumulative time of the first call of each
STAGES = (
    ("open (container)", "container/file.py", "read_container"),
    ("DATA head", "payload/head.py", "read_lossless_head"),
    ("maps and models", "payload/entropy/decoder.py", "prepare"),
    ("unit walk", "payload/units.py", "walk_units"),
    ("decode units", "payload/data.py", "decode_into"),
    ("pSUM check", "reader.py", "_verify_bitmap"),
    ("close", "reader.py", "close"),
)


@dataclass(frozen=True)
class Case:
    """One image to read: ``size`` x ``size`` pixels of ``layout`` and ``sample``, coded by ``codec``;
    ``source`` "gradient" (noise on a gradient), a corpus name (its centre crop) or a PALETTES name."""

    size: int
    layout: str
    sample: str
    codec: str
    source: str = "gradient"

    @property
    def name(self) -> str:
        what = "" if self.source == "gradient" else f"{self.source} "
        return f"{what}{self.size}x{self.size} {self.layout} {self.sample} {self.codec}"

    def image(self) -> np.ndarray:
        if self.source in PALETTES:
            return palette_image(self.source, self.size, LAYOUTS[self.layout])
        if self.source != "gradient":
            return corpus_crop(self.source, self.size, LAYOUTS[self.layout])
        return self.gradient()

    def gradient(self) -> np.ndarray:
        """A gradient with noise: not constant, so the coder keeps its ordinary models."""
        rng = np.random.default_rng(self.size)
        y, x = np.mgrid[0 : self.size, 0 : self.size]
        planes = [(x * (3 + c) + y * (5 - c)) % 200 + rng.integers(0, 24, x.shape) for c in range(LAYOUTS[self.layout])]
        image = np.stack(planes, axis=2)
        if self.sample == "u16":
            return (image * 257).astype(np.uint16)
        if self.sample == "f32":
            return (image / 255.0).astype(np.float32)
        return image.astype(np.uint8)

    def encoded(self) -> bytes:
        return imij_plugins.encode(self.image(), codec=self.codec)


def cases(sizes: list[int], layouts: list[str], samples: list[str], codecs: list[str], sources: tuple[str, ...] = ("gradient",)) -> list[Case]:
    return [Case(s, lay, smp, c, src) for src in sources for c in codecs for lay in layouts for smp in samples
            for s in sizes if fits(src, s)]


def fits(source: str, size: int) -> bool:
    """Whether ``source`` has a ``size`` x ``size`` crop (a corpus image at least that large)."""
    if source == "gradient" or source in PALETTES:
        return True
    return min(np.load(CORPUS / f"{source}.npy", mmap_mode="r").shape[:2]) >= size


def corpus_crop(name: str, size: int, channels: int) -> np.ndarray:
    """The centre ``size`` x ``size`` crop of corpus image ``name``, as ``channels`` (3 or 4) u8
    channels: RGB drops alpha, RGBA of an RGB image adds an opaque one."""
    image = np.load(CORPUS / f"{name}.npy")
    h, w = image.shape[:2]
    y, x = (h - size) // 2, (w - size) // 2
    crop = image[y : y + size, x : x + size]
    if crop.shape[2] < channels:
        crop = np.concatenate([crop, np.full((size, size, 1), 255, np.uint8)], axis=2)
    return np.ascontiguousarray(crop[:, :, :channels])


def palette_image(kind: str, size: int, channels: int) -> np.ndarray:
    """Synthetic palette graphics: "palette-16", rectangles of 16 colours (flat areas and edges, as
    icons); "palette-dither", 64 colours ordered-dithered over a gradient (high entropy: every
    pixel's index differs from its neighbours', as dithered GIFs)."""
    rng = np.random.default_rng(size)
    colours = rng.integers(0, 256, (16 if kind == "palette-16" else 64, channels), dtype=np.uint8)
    if channels == 4:
        colours[:, 3] = np.where(np.arange(len(colours)) % 4 == 0, 0, 255)  # some transparent
    if kind == "palette-16":
        index = np.zeros((size, size), np.int64)
        for _ in range(size // 2):
            y, x = rng.integers(0, size, 2)
            h, w = rng.integers(2, max(3, size // 4), 2)
            index[y : y + h, x : x + w] = rng.integers(0, 16)
    else:
        y, x = np.mgrid[0:size, 0:size]
        bayer = np.array([[0, 8, 2, 10], [12, 4, 14, 6], [3, 11, 1, 9], [15, 7, 13, 5]]) / 16
        level = (x + y) * 63 / (2 * size - 2)
        index = np.clip(np.floor(level + bayer[y % 4, x % 4]).astype(np.int64), 0, 63)
    return colours[index]


def decoders(case: Case) -> dict[str, Callable[[], object]]:
    """The case's three decodes: ``imij_plugins.read``, the Pillow plugin, and PNG by Pillow (the
    same pixels, Pillow's default PNG compression); each returns what it decoded."""
    from imij_plugins.pillow import register_pillow

    register_pillow()
    image = case.image()
    data = case.encoded()
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "PNG")
    png = buf.getvalue()
    return {
        "imi": lambda: imij_plugins.read(data),
        "pillow": lambda: loaded(Image.open(io.BytesIO(data))),
        "png": lambda: loaded(Image.open(io.BytesIO(png))),
    }


def loaded(image: Image.Image) -> Image.Image:
    """``image`` after ``load()``: its pixels decoded."""
    image.load()
    return image


def interleaved(fns: dict[str, Callable[[], object]], rounds: int, reads: int, clock: Callable[[], float]) -> dict[str, float]:
    """Median over ``rounds`` of each decode's mean time over ``reads`` runs, in seconds; every
    round runs each decode in turn, so load that comes and goes reaches all of them alike."""
    for fn in fns.values():
        fn()  # warm caches (models, stores, the pool)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = clock()
            for _ in range(reads):
                fn()
            times[name].append((clock() - start) / reads)
    return {name: statistics.median(t) for name, t in times.items()}


def time_per_read(data: bytes, rounds: int, reads: int) -> float:
    """Median over ``rounds`` of the mean time of ``reads`` reads, in seconds."""
    imij_plugins.read(data)  # warm caches (models, stores, the pool)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reads):
            imij_plugins.read(data)
        times.append((time.perf_counter() - start) / reads)
    return statistics.median(times)


def stages(data: bytes, reads: int) -> list[tuple[str, float]]:
    """Cumulative time per read of each stage in STAGES under cProfile (inflated by the profiler)."""
    imij_plugins.read(data)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(reads):
        imij_plugins.read(data)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(cum for (f, _, fn), (_, _, _, cum, _) in stats.items() if fn == "read" and f.endswith("api.py"))
    out = [("read (total)", total / reads)]
    for label, suffix, func in STAGES:
        cum = sum(v[3] for (f, _, fn), v in stats.items() if fn == func and f.endswith(suffix))
        out.append((label, cum / reads))
    return out


def instructions(case: Case, reads: int) -> float:
    """Instructions per read: callgrind totals of ``2 * reads`` and ``reads`` reads, differenced."""
    return per_call_instructions(
        lambda n: [__file__, "--reads-only", str(n), "--sizes", str(case.size), "--layouts", case.layout,
                   "--samples", case.sample, "--codecs", case.codec, "--sources", case.source], reads)


def per_call_instructions(child: Callable[[int], list[str]], n: int) -> float:
    """Instructions per call of a script that makes ``count`` calls when run with ``child(count)``
    (a path and its arguments): callgrind totals of 2n and n calls, differenced."""
    totals = []
    for count in (n, 2 * n):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *child(count)]
            # the same hashing, so the same work, each run; no BLAS threads spinning in the count
            env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            totals.append(parse_callgrind_total(out.read_text()))
    return (totals[1] - totals[0]) / n


def parse_callgrind_total(text: str) -> int:
    """The event total (Ir) of a callgrind output file."""
    found = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.MULTILINE)
    if found is None:
        raise ValueError("no callgrind summary line")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    """Run the cases the arguments name, print a table, return its rows."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=None, help="default 1,16,64,128; with --graphics 64,128,256,512")
    p.add_argument("--layouts", default=None, help="default rgb; with --graphics rgb,rgba")
    p.add_argument("--samples", default="u8")
    p.add_argument("--codecs", default=None, help="default entropy,quick; with --graphics entropy")
    p.add_argument("--all", action="store_true", help="every layout and sample type")
    p.add_argument("--graphics", action="store_true", help="corpus crops and palette graphics, against PNG")
    p.add_argument("--sources", default=None, help="with --graphics: corpus and palette names to read")
    p.add_argument("--cpu", action="store_true", help="CPU time (time.process_time) instead of wall time")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--reads", type=int, default=200, help="reads per round (fewer for larger images)")
    p.add_argument("--profile", action="store_true", help="cProfile breakdown by stage")
    p.add_argument("--callgrind", type=int, default=0, metavar="N", help="instructions per read from N and 2N reads")
    p.add_argument("--reads-only", type=int, default=0, help=argparse.SUPPRESS)  # the callgrind child
    args = p.parse_args(argv)
    graphics = args.graphics or args.sources is not None
    sizes = args.sizes or ("64,128,256,512" if graphics else "1,16,64,128")
    layouts = list(LAYOUTS) if args.all else (args.layouts or ("rgb,rgba" if graphics else "rgb")).split(",")
    samples = list(DTYPES) if args.all else args.samples.split(",")
    codecs = (args.codecs or ("entropy" if graphics else "entropy,quick")).split(",")
    sources = tuple(args.sources.split(",")) if args.sources else (*GRAPHICS, *PALETTES) if graphics else ("gradient",)
    todo = cases([int(s) for s in sizes.split(",")], layouts, samples, codecs, sources)
    if args.reads_only:
        for case in todo:
            data = case.encoded()
            imij_plugins.read(data)  # the plan and the modules settled, as in the timed reads
            gc.collect()
            gc.freeze()  # collections during the reads walk their own garbage, not the start-up heap
            for _ in range(args.reads_only):
                imij_plugins.read(data)
        return []
    rows: list[dict[str, object]] = []
    clock = time.process_time if args.cpu else time.perf_counter
    print(f"backend {imij_plugins._backend.active()}; median of {args.rounds} rounds"
          f" of {'CPU' if args.cpu else 'wall'} time")
    if graphics:
        return graphics_rows(todo, args, clock)
    for case in todo:
        data = case.encoded()
        reads = max(1, args.reads * 16 * 16 // max(case.size * case.size, 256))
        row: dict[str, object] = {"case": case.name, "bytes": len(data), "us": 1e6 * time_per_read(data, args.rounds, reads)}
        line = f"{case.name:28} {len(data):7d} B {row['us']:9.1f} us"
        if args.callgrind:
            row["instructions"] = instructions(case, args.callgrind)
            line += f" {row['instructions'] / 1e3:9.1f} k instr"
        print(line, flush=True)
        if args.profile:
            row["stages"] = stages(data, reads)
            for label, seconds in row["stages"]:  # type: ignore[union-attr]
                print(f"    {label:20} {1e6 * seconds:8.1f} us")
        rows.append(row)
    return rows


def graphics_rows(todo: list[Case], args: argparse.Namespace, clock: Callable[[], float]) -> list[dict[str, object]]:
    """--graphics: each case's three decodes interleaved (``decoders``), one row each."""
    rows: list[dict[str, object]] = []
    print(f"{'case':40} {'IMI B':>7} {'PNG B':>7} {'read us':>9} {'Pillow us':>9} {'PNG us':>9} {'ratio':>6}")
    for case in todo:
        fns = decoders(case)
        reads = max(1, args.reads * 16 * 16 // max(case.size * case.size, 256))
        us = {name: 1e6 * t for name, t in interleaved(fns, args.rounds, reads, clock).items()}
        row: dict[str, object] = {"case": case.name, "bytes": len(case.encoded()), **{f"{k}_us": v for k, v in us.items()},
                                  "ratio": us["png"] / us["imi"]}
        line = (f"{case.name:40} {row['bytes']:7d} {png_size(case):7d} {us['imi']:9.1f} {us['pillow']:9.1f}"
                f" {us['png']:9.1f} {row['ratio']:6.2f}")
        if args.callgrind:
            row["instructions"] = instructions(case, args.callgrind)
            line += f" {row['instructions'] / 1e3:9.1f} k instr"
        print(line, flush=True)
        rows.append(row)
    return rows


def png_size(case: Case) -> int:
    buf = io.BytesIO()
    Image.fromarray(case.image()).save(buf, "PNG")
    return len(buf.getvalue())


if __name__ == "__main__":
    main()
