"""How fast files of a higher effort decode against the default effort's, per image and class,
measured and as the encoder's decode-cost model predicts it.

Efforts above the default keep their files' modeled decode cost within ``decode_cost.BOUND``
of the default effort's file (``slow_decode=True`` lifts the bound). This script checks the
model against the clock: each image is written at the default effort, at the higher effort, and
at the higher effort with ``slow_decode=True``; the three files are read in interleaved rounds
(medians, so a busy machine moves all three alike) on one thread and on every core.

    python benchmarks/effort_speed.py                          # benchmarks/.corpus, effort 9
    python benchmarks/effort_speed.py --corpus benchmarks/.corpus-desktop --classes screenshot
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import imij_plugins
from imij_plugins.options import DEFAULT_EFFORT
from imij_plugins.payload.entropy.encoder import encode_tuned

HERE = Path(__file__).resolve().parent
CLASSES = ("photo", "screenshot", "graphics")
VARIANTS = ("default", "bounded", "slow")  # the default effort, the higher effort, it with slow_decode


def encodings(image: np.ndarray, effort: int) -> dict[str, tuple[bytes, float]]:
    """Each variant's file and its modeled decode cost (the payload's, as the encoder sees it)."""
    out = {}
    for variant, eff, slow in (("default", DEFAULT_EFFORT, False), ("bounded", effort, False), ("slow", effort, True)):
        cost = encode_tuned(image, effort=eff, slow_decode=slow).decode_cost
        out[variant] = (imij_plugins.encode(image, effort=eff, slow_decode=slow), cost)
    return out


def read_times(files: dict[str, bytes], threads: int | None, rounds: int) -> dict[str, float]:
    """Median seconds per read of each file, the files read in turn within every round."""
    times: dict[str, list[float]] = {k: [] for k in files}
    for _ in range(rounds):
        for k, data in files.items():
            t = time.perf_counter()
            imij_plugins.read(data, threads=threads)
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def measure(corpus: Path, classes: tuple[str, ...], effort: int, rounds: int) -> list[dict]:
    manifest = json.loads((corpus / "manifest.json").read_text())
    rows = []
    for item in manifest["images"]:
        if item["class"] not in classes:
            continue
        image = np.load(corpus / item["file"])
        enc = encodings(image, effort)
        files = {k: data for k, (data, _) in enc.items()}
        row = {"image": item["name"], "class": item["class"],
               "bytes": {k: len(data) for k, data in files.items()},
               "cost": {k: c for k, (_, c) in enc.items()}}
        for label, threads in (("1", 1), ("all", None)):
            row[f"seconds_{label}"] = read_times(files, threads, rounds)
        rows.append(row)
        print(f"{item['class']:10} {item['name']:30} " + _line(row), file=sys.stderr, flush=True)
    return rows


def _speed(row: dict, variant: str, label: str) -> float:
    """Decode speed of ``variant`` against the default effort's file (> 1: faster)."""
    t = row[f"seconds_{label}"]
    return t["default"] / t[variant]


def _line(row: dict) -> str:
    b, c = row["bytes"], row["cost"]
    return (f"size {b['bounded'] / b['default']:.3f} (slow {b['slow'] / b['default']:.3f})  "
            f"speed 1t {_speed(row, 'bounded', '1'):.2f} (slow {_speed(row, 'slow', '1'):.2f})  "
            f"model {c['default'] / c['bounded']:.2f} (slow {c['default'] / c['slow']:.2f})")


def gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def report(rows: list[dict], effort: int) -> str:
    """Markdown: per class, then per image."""
    lines = [f"Effort {effort} against effort {DEFAULT_EFFORT} (bounded) and with `slow_decode=True` (slow): "
             "file size and decode speed as ratios to the effort 5 file (speed > 1: faster), geometric means, "
             "the worst image in brackets; \"model\" is the encoder's predicted speed ratio.", "",
             "| class | images | size | size, slow | speed 1 thread | speed, slow | speed all cores | model |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for cls in dict.fromkeys(r["class"] for r in rows):
        rs = [r for r in rows if r["class"] == cls]
        size = [r["bytes"]["bounded"] / r["bytes"]["default"] for r in rs]
        slow = [r["bytes"]["slow"] / r["bytes"]["default"] for r in rs]
        s1 = [_speed(r, "bounded", "1") for r in rs]
        ss = [_speed(r, "slow", "1") for r in rs]
        sa = [_speed(r, "bounded", "all") for r in rs]
        model = [r["cost"]["default"] / r["cost"]["bounded"] for r in rs]
        lines.append(f"| {cls} | {len(rs)} | {gmean(size):.3f} | {gmean(slow):.3f} | {gmean(s1):.2f} ({min(s1):.2f}) "
                     f"| {gmean(ss):.2f} ({min(ss):.2f}) | {gmean(sa):.2f} ({min(sa):.2f}) | {gmean(model):.2f} |")
    lines += ["", "| image | class | size | size, slow | speed 1 thread | speed, slow | model | model, slow |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b, c = r["bytes"], r["cost"]
        lines.append(f"| {r['image']} | {r['class']} | {b['bounded'] / b['default']:.3f} | {b['slow'] / b['default']:.3f} "
                     f"| {_speed(r, 'bounded', '1'):.2f} | {_speed(r, 'slow', '1'):.2f} "
                     f"| {c['default'] / c['bounded']:.2f} | {c['default'] / c['slow']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(HERE / ".corpus"), help="a folder benchmarks/corpus.py built")
    ap.add_argument("--classes", nargs="*", default=list(CLASSES))
    ap.add_argument("--effort", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=None, help="write every measurement here")
    args = ap.parse_args(argv)
    rows = measure(Path(args.corpus), tuple(args.classes), args.effort, args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(report(rows, args.effort))
    return 0


if __name__ == "__main__":
    sys.exit(main())
