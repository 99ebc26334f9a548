"""The fixed cost of one ``imij_plugins.read`` of a small image (issue 27): time per read, and
optionally where it goes (cProfile by stage) and how many instructions it runs (callgrind).

Times are medians of many rounds of ``time.perf_counter`` (robust on a loaded machine);
``--callgrind N`` runs each case under ``valgrind --tool=callgrind`` with N and 2N reads and
reports the difference per read, which excludes start-up and repeats to the instruction.

    python benchmarks/fixed_costs.py                   # every size, RGB u8, both codecs
    python benchmarks/fixed_costs.py --all --profile   # every layout and sample type, stages
    python benchmarks/fixed_costs.py --sizes 16 --callgrind 200
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import imij_plugins

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
    """One image to read: ``size`` x ``size`` pixels of ``layout`` and ``sample``, coded by ``codec``."""

    size: int
    layout: str
    sample: str
    codec: str

    @property
    def name(self) -> str:
        return f"{self.size}x{self.size} {self.layout} {self.sample} {self.codec}"

    def image(self) -> np.ndarray:
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


def cases(sizes: list[int], layouts: list[str], samples: list[str], codecs: list[str]) -> list[Case]:
    return [Case(s, lay, smp, c) for c in codecs for lay in layouts for smp in samples for s in sizes]


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
    totals = []
    for n in (reads, 2 * reads):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                   "--reads-only", str(n), "--sizes", str(case.size), "--layouts", case.layout,
                   "--samples", case.sample, "--codecs", case.codec]
            env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same hashing, so the same work, each run
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            totals.append(parse_callgrind_total(out.read_text()))
    return (totals[1] - totals[0]) / reads


def parse_callgrind_total(text: str) -> int:
    """The event total (Ir) of a callgrind output file."""
    found = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.MULTILINE)
    if found is None:
        raise ValueError("no callgrind summary line")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    """Run the cases the arguments name, print a table, return its rows."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1,16,64,128")
    p.add_argument("--layouts", default="rgb")
    p.add_argument("--samples", default="u8")
    p.add_argument("--codecs", default="entropy,quick")
    p.add_argument("--all", action="store_true", help="every layout and sample type")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--reads", type=int, default=200, help="reads per round (fewer for larger images)")
    p.add_argument("--profile", action="store_true", help="cProfile breakdown by stage")
    p.add_argument("--callgrind", type=int, default=0, metavar="N", help="instructions per read from N and 2N reads")
    p.add_argument("--reads-only", type=int, default=0, help=argparse.SUPPRESS)  # the callgrind child
    args = p.parse_args(argv)
    layouts = list(LAYOUTS) if args.all else args.layouts.split(",")
    samples = list(DTYPES) if args.all else args.samples.split(",")
    todo = cases([int(s) for s in args.sizes.split(",")], layouts, samples, args.codecs.split(","))
    if args.reads_only:
        for case in todo:
            data = case.encoded()
            for _ in range(args.reads_only):
                imij_plugins.read(data)
        return []
    rows: list[dict[str, object]] = []
    print(f"backend {imij_plugins._backend.active()}; median of {args.rounds} rounds")
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


if __name__ == "__main__":
    main()
