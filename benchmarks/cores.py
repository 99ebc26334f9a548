"""What two threads do over one on this machine: the ceiling on every "all cores" ratio.

Each workload runs its calls on one thread, then the same calls on two threads at once (each
thread its own copy of the input, nothing shared); the scaling is the two threads' throughput
over the one's (2.0 on two free cores). Workloads: zlib compression (level 6, what Pillow's PNG
writer runs; the GIL is released for the whole call), this package's read and encode of one
image on one thread each (``threads=1``: the C kernels release the GIL, the Python around them
does not), and for comparison the package's own split of one call over both cores
(``threads=2`` against ``threads=1``). Medians over interleaved rounds.

    python benchmarks/cores.py
    python benchmarks/cores.py --image chromium-docs --rounds 9
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

import imij_plugins

CORPUS = Path(__file__).resolve().parent / ".corpus"


def _image(name: str) -> np.ndarray:
    path = CORPUS / f"{name}.npy"
    if path.exists():
        return np.load(path)
    rng = np.random.default_rng(1)  # no corpus: a screen-like image of flat areas and text-like noise
    image = np.repeat(rng.integers(0, 4, (100, 160, 1), np.uint8) * 60, 3, axis=2)
    return np.ascontiguousarray(np.kron(image, np.ones((8, 8, 1), np.uint8)))


def workloads(name: str) -> dict[str, Callable[[], Callable[[], object]]]:
    """Per workload, a maker of one thread's call (its own input)."""
    image = _image(name)
    data = imij_plugins.encode(image)

    def zlib_call() -> Callable[[], object]:
        raw = image.tobytes()
        return lambda: zlib.compress(raw, 6)

    def read_call() -> Callable[[], object]:
        own = bytes(data)
        return lambda: imij_plugins.read(own, threads=1)

    def encode_call() -> Callable[[], object]:
        own = image.copy()
        return lambda: imij_plugins.encode(own, threads=1)

    return {"zlib level 6": zlib_call, "imi read, threads=1": read_call, "imi encode, threads=1": encode_call}


def _run(fns: list[Callable[[], object]], calls: int) -> float:
    """Seconds for every fn to make ``calls`` calls, each fn on its own thread."""
    def loop(fn: Callable[[], object]) -> None:
        for _ in range(calls):
            fn()

    threads = [threading.Thread(target=loop, args=(fn,)) for fn in fns]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def scaling(make: Callable[[], Callable[[], object]], calls: int, rounds: int) -> float:
    """Two threads' throughput over one's (medians of interleaved rounds)."""
    one, two = [make()], [make(), make()]
    _run(two, 1)  # warm: imports, pools, caches
    t1, t2 = [], []
    for _ in range(rounds):
        t1.append(_run(one, calls))
        t2.append(_run(two, calls))
    return 2 * statistics.median(t1) / statistics.median(t2)


def own_split(name: str, rounds: int) -> tuple[float, float]:
    """This package's read and encode of one image at threads=2 against threads=1."""
    image = _image(name)
    data = imij_plugins.encode(image)
    out = []
    for fn in (lambda t: imij_plugins.read(data, threads=t), lambda t: imij_plugins.encode(image, threads=t)):
        fn(2)
        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(rounds):
            for t in (1, 2):
                start = time.perf_counter()
                fn(t)
                times[t].append(time.perf_counter() - start)
        out.append(statistics.median(times[1]) / statistics.median(times[2]))
    return out[0], out[1]


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", default="chromium-docs", help="benchmarks corpus image (python benchmarks/corpus.py)")
    p.add_argument("--calls", type=int, default=10, help="calls per thread per round")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    out = {label: scaling(make, args.calls, args.rounds) for label, make in workloads(args.image).items()}
    out["imi read, threads=2 vs 1"], out["imi encode, threads=2 vs 1"] = own_split(args.image, args.rounds)
    print(f"| workload ({args.image}) | two threads over one |\n|---|---:|")
    for label, x in out.items():
        print(f"| {label} | {x:.2f}x |")
    return out


if __name__ == "__main__":
    main()
