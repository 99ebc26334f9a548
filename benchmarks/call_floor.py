"""The floor under small-image ratios: instructions per call of this package's smallest encode
and read (a 1 x 1 image) and of a 16 x 16 icon, against Pillow's PNG save and open of that icon.

A 1 x 1 call is all fixed cost (options, container, payload head, models, the calls into the
kernels); where it alone costs more than PNG's whole call on an icon, no kernel work brings the
icon to a ratio above their quotient. Instructions, not time: callgrind (``PYTHONHASHSEED=0``)
runs N and 2N calls after three warm ones and the difference is divided by N, so start-up and
one-time costs drop out and a busy machine does not move the counts (the start-up heap is frozen
first, so garbage collections walk only the calls' own objects).

    python benchmarks/call_floor.py                       # every call, N = 10
    python benchmarks/call_floor.py --calls 20 --only "imi read 1x1"
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixed_costs import per_call_instructions  # noqa: E402

import imij_plugins  # noqa: E402

ICON = Path(__file__).resolve().parent / ".corpus-desktop" / "gnome-16-audio-headphones.npy"


def icon() -> np.ndarray:
    """The desktop corpus's 16 x 16 RGBA icon when built (corpus_desktop.py), else a drawn one."""
    if ICON.exists():
        return np.load(ICON)
    y, x = np.mgrid[0:16, 0:16]
    disc = (y - 7.5) ** 2 + (x - 7.5) ** 2 < 49
    rgba = np.stack([x * 16, y * 16, (x ^ y) * 16, np.where(disc, 255, 0)], axis=2)
    return (rgba * disc[..., None]).astype(np.uint8)


def calls() -> dict[str, Callable[[], object]]:
    """Each measured call by name (made once: the data they read is encoded here)."""
    tiny, small = np.zeros((1, 1, 4), np.uint8), icon()
    tiny_imi, small_imi = imij_plugins.encode(tiny), imij_plugins.encode(small)
    png = io.BytesIO()
    Image.fromarray(small).save(png, "PNG")
    small_png = png.getvalue()

    def save_png() -> bytes:
        out = io.BytesIO()
        Image.fromarray(small).save(out, "PNG")
        return out.getvalue()

    return {
        "imi encode 1x1": lambda: imij_plugins.encode(tiny),
        "imi encode 16x16": lambda: imij_plugins.encode(small, threads=1),
        "imi encode 16x16 quick": lambda: imij_plugins.encode(small, codec="quick"),
        "png encode 16x16": save_png,
        "imi read 1x1": lambda: imij_plugins.read(tiny_imi),
        "imi read 16x16": lambda: imij_plugins.read(small_imi, threads=1),
        "png read 16x16": lambda: np.asarray(Image.open(io.BytesIO(small_png))),
    }


def instructions(name: str, n: int) -> float:
    """Instructions per call of ``name``: callgrind totals of 2n and n calls, differenced."""
    return per_call_instructions(lambda count: [__file__, "--child", str(count), "--only", name], n)


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=10, help="N: callgrind runs N and 2N calls")
    p.add_argument("--only", action="append", default=None, help="measure only this call (repeatable)")
    p.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)  # the call loop callgrind runs
    args = p.parse_args(argv)
    fns = calls()
    names = args.only or list(fns)
    if args.child:
        for name in names:
            for _ in range(3):
                fns[name]()
            gc.collect()
            gc.freeze()  # collections during the calls walk their own garbage, not the start-up heap
            for _ in range(args.child):
                fns[name]()
        return {}
    counts = {name: instructions(name, args.calls) for name in names}
    print("| call | instructions |\n|---|---:|")
    for name, count in counts.items():
        print(f"| {name} | {count / 1e3:,.0f} k |")
    return counts


if __name__ == "__main__":
    main()
