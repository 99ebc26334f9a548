"""What one unit's decode costs: time per step, not per sample.

A unit's lanes (2.3: at most 16, each at least 16 columns wide here) are decoded side by side, a
step being one column of every lane, and a step's context comes from the value its lane has just
decoded (3.1), so the steps of a lane form one chain. A unit then takes about rows x columns per
lane x slots x the time of one slot's step, whatever its content and however many lanes it has.
This script reads one-unit RGB images of a fixed height and growing width (noise, and a smooth
gradient with a little noise; both of many colours, so three slots) on one thread and prints the
time per read and per slot step.

    python benchmarks/unit_steps.py
    python benchmarks/unit_steps.py --rows 128 --widths 16,64,256,1024
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import imij_plugins
from imij_plugins.payload.entropy.encoder import lanes_for


def image(kind: str, rows: int, width: int) -> np.ndarray:
    """An RGB u8 image: "noise" or "smooth" (a gradient with a little noise)."""
    rng = np.random.default_rng(width)
    if kind == "noise":
        return rng.integers(0, 256, (rows, width, 3), dtype=np.uint8)
    y, x = np.mgrid[0:rows, 0:width]
    planes = np.stack([(x + y) % 256, (2 * x) % 256, (3 * y) % 256], axis=2)
    return (planes + rng.integers(0, 3, planes.shape)).astype(np.uint8)


def read_time(data: bytes, reads: int) -> float:
    """Median process time of one read on one thread."""
    imij_plugins.read(data, threads=1)
    times = []
    for _ in range(reads):
        start = time.process_time()
        imij_plugins.read(data, threads=1)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--widths", default="16,32,64,128,256,512")
    p.add_argument("--reads", type=int, default=60)
    args = p.parse_args(argv)
    rows = []
    print("| content | width | lanes | columns per lane | us per read | ns per slot step |\n|---|---:|---:|---:|---:|---:|")
    for kind in ("noise", "smooth"):
        for width in (int(w) for w in args.widths.split(",")):
            data = imij_plugins.encode(image(kind, args.rows, width), stripe_rows=args.rows)  # one unit
            seconds = read_time(data, args.reads)
            lanes = lanes_for(width)
            steps = args.rows * -(-width // lanes) * 3
            rows.append({"content": kind, "width": width, "us": 1e6 * seconds, "ns_per_step": 1e9 * seconds / steps})
            print(f"| {kind} | {width} | {lanes} | {-(-width // lanes)} | {1e6 * seconds:.0f} | {1e9 * seconds / steps:.1f} |",
                  flush=True)
    return rows


if __name__ == "__main__":
    main()
