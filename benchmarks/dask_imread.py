"""Dask imread of 10,000 files on a two-worker LocalCluster: ``imij_plugins.dask.imread`` over IMI
files against dask-image's ``imread`` over the same images as PNG.

    python benchmarks/dask_imread.py                    # prints the RESULTS.md section (about 5 minutes)
    python benchmarks/dask_imread.py -n 2000 --json out.json

N gradient-plus-noise gray u8 images (SIZE x SIZE) are written once as IMI (default options) and
as PNG (Pillow); both readers get a glob pattern. Per reader: array creation time (median of
three), tasks in the graph, the largest task and the whole graph pickled (cloudpickle), and
wall time of ``x.sum()`` on a ``LocalCluster`` of two single-threaded worker processes (median
of RUNS, after a warm-up on 20 files) and, once, on dask's synchronous scheduler in this process
(the readers' own cost, without the cluster's per-task overhead); the two stacks are checked equal
on a sample of frames. dask-image (``pip install dask-image``) is optional: without it only the
IMI rows are printed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import os
import platform
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable

import cloudpickle
import dask
import dask.array as da
import distributed
import numpy as np
from PIL import Image

import imij_plugins
from imij_plugins import dask as imij_dask


def image(i: int, size: int) -> np.ndarray:
    """Image ``i``: a gradient shifted by ``i`` plus noise, so every file differs."""
    y, x = np.mgrid[:size, :size]
    noise = np.random.default_rng(i).integers(0, 8, (size, size))
    return ((2 * x + y + i) % 248 + noise).astype(np.uint8)


def write_files(folder: str, n: int, size: int) -> None:
    """``img{i}.imi`` and ``img{i}.png`` for i < n, unless the folder has them already."""
    if os.path.exists(os.path.join(folder, f"img{n - 1}.png")):
        return
    for i in range(n):
        a = image(i, size)
        imij_plugins.write(os.path.join(folder, f"img{i}.imi"), a)
        Image.fromarray(a).save(os.path.join(folder, f"img{i}.png"))


def graph_bytes(x: da.Array) -> tuple[int, int, int]:
    """Tasks in ``x``'s graph, the largest pickled task and the whole graph pickled, in bytes."""
    graph = dict(x.__dask_graph__())
    return len(graph), max(len(cloudpickle.dumps(t)) for t in graph.values()), len(cloudpickle.dumps(graph))


def bench(reader: Callable[[str], da.Array], pattern: str, client: distributed.Client, runs: int) -> dict:
    """Creation time, graph sizes and cluster ``sum`` time of one reader."""
    creates = []
    for _ in range(3):
        start = time.perf_counter()
        x = reader(pattern)
        creates.append(time.perf_counter() - start)
    tasks, largest, whole = graph_bytes(x)
    total = x.sum(dtype=np.uint64)
    client.compute(x[:20].sum(), sync=True)  # warm-up: workers import the readers
    sums, value = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        value = int(client.compute(total, sync=True))
        sums.append(time.perf_counter() - start)
    start = time.perf_counter()
    local = int(total.compute(scheduler="synchronous"))
    local_s = time.perf_counter() - start
    assert local == value, (local, value)
    return {"shape": list(x.shape), "dtype": str(x.dtype), "create_s": statistics.median(creates), "tasks": tasks,
            "largest_task_bytes": largest, "graph_bytes": whole, "sum_s": statistics.median(sums), "sum": value,
            "synchronous_sum_s": local_s}


def dask_image_reader() -> Callable[[str], da.Array] | None:
    """dask-image's imread, where installed."""
    try:
        from dask_image.imread import imread
    except ImportError:
        return None
    return imread


def command(n: int, size: int, runs: int) -> str:
    """The command line that gives these numbers (non-default options only)."""
    options = [f"-n {n}"] * (n != 10_000) + [f"--size {size}"] * (size != 64) + [f"--runs {runs}"] * (runs != 1)
    return " ".join(["python benchmarks/dask_imread.py", *options])


def markdown(results: dict, n: int, size: int, runs: int) -> str:
    """The RESULTS.md section."""
    versions = f"dask {dask.__version__}, distributed {distributed.__version__}"
    if results.get("dask_image_version"):
        versions += f", dask-image {results['dask_image_version']}"
    intro = (
        f"`{command(n, size, runs)}`: {n:,} gray u8 images of {size} x {size} (gradient plus noise), one file "
        "each, as IMI (default options) and as PNG (Pillow), read through a glob pattern into one (N, H, W) "
        "dask array and summed on a `distributed.LocalCluster` of 2 worker processes with 1 thread each. "
        "Creation: median of 3 `imread` calls; graph: tasks, largest task and whole graph through cloudpickle; "
        f"sum: wall time of `client.compute(x.sum())`, median of {runs} after a warm-up on 20 files; sync s: the "
        "same sum once on dask's synchronous scheduler in this process (the readers' cost without the "
        f"cluster's per-task overhead). Machine: {results['machine']}; {versions}."
    )
    lines = [
        f"## Dask imread, {n:,} files",
        "",
        textwrap.fill(intro, 100, break_on_hyphens=False, break_long_words=False),
        "",
        "| reader | files | create ms | tasks | largest task B | graph KB | sum s | files/s | sync s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results["readers"].items():
        lines.append(f"| {name} | {r['files']} | {r['create_s'] * 1e3:.0f} | {r['tasks']:,} | {r['largest_task_bytes']:,} | "
                     f"{r['graph_bytes'] / 1e3:,.0f} | {r['sum_s']:.1f} | {n / r['sum_s']:,.0f} | {r['synchronous_sum_s']:.1f} |")
    lines.append("")
    lines.append(f"Both stacks equal on the sampled frames: {'yes' if results.get('equal') else 'not checked'}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="number of files (default 10,000)")
    parser.add_argument("--size", type=int, default=64, help="image side in pixels (default 64)")
    parser.add_argument("--runs", type=int, default=1, help="timed sums per reader (default 1)")
    parser.add_argument("--dir", help="folder for the files (kept; default a temporary one)")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or tmp
        os.makedirs(folder, exist_ok=True)
        start = time.perf_counter()
        write_files(folder, args.n, args.size)
        print(f"files ready in {time.perf_counter() - start:.1f} s", flush=True)
        readers: dict[str, tuple[str, Callable[[str], da.Array]]] = {
            "imij_plugins.dask.imread": ("IMI", imij_dask.imread)}
        other = dask_image_reader()
        if other is not None:
            readers["dask_image.imread.imread"] = ("PNG", other)
        results: dict = {"machine": f"{platform.processor() or platform.machine()}, cores {os.cpu_count()}, "
                                    f"python {platform.python_version()}", "readers": {}}
        if other is not None:
            results["dask_image_version"] = importlib.metadata.version("dask-image")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
            arrays = {}
            for name, (kind, reader) in readers.items():
                pattern = os.path.join(folder, "img*." + kind.lower())
                results["readers"][name] = {"files": kind, **bench(reader, pattern, client, args.runs)}
                arrays[name] = reader(pattern)
                print(name, results["readers"][name], flush=True)
            if len(arrays) == 2:
                sample = [a[:: max(1, args.n // 20)] for a in arrays.values()]
                first, second = client.compute(sample, sync=True)
                results["equal"] = bool(np.array_equal(first, second))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(markdown(results, args.n, args.size, args.runs))


if __name__ == "__main__":
    main()
