"""Remote reads over HTTP: an IMI file read by ranges against the same image as a Cloud Optimized
GeoTIFF-style tiled TIFF read by tifffile through an fsspec file object, with and without latency.

    python benchmarks/remote_reads.py              # prints the RESULTS.md section (about a minute)
    python benchmarks/remote_reads.py --json out.json

The image is 4096x4096 RGB u8, a gradient under noise (tests/remote's ``textured``, seed 2). IMI:
64x256 units and a filled unit table (the file the region-read bound is set on); TIFF: 256x256 tiles, zlib with the
horizontal predictor (``tifffile.imwrite(tile=(256, 256), compression="zlib", predictor=True)``).
Both are served by tests/remote's HTTP server (Python's ``http.server``, Range support), which
counts requests (HEAD and GET) and body bytes and can delay every response (``--latency``).

Reads, each from a fresh open: a 64x64 region at (2000, 1000) and the whole image. IMI goes through
``imij_plugins.open(url)``; TIFF through ``tifffile.TiffFile(fsspec.open(url, block_size=...))``,
the region by ``zarr.open(page.aszarr())`` (tiles by seek and read, fsspec's read-ahead cache),
the whole image by ``page.asarray()``, at fsspec's default 5 MiB blocks and at 64 KiB (about
GDAL's /vsicurl/ chunking). Every result is checked against the image. Times are the best of
``--repeat``; requests and bytes are the last run's. Local rows read the same files from disk.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable

import fsspec
import numpy as np
import tifffile
import zarr

import imij_plugins

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from remote.images import textured  # noqa: E402 - the tests' image and server, not copies
from remote.server import FileServer, Served  # noqa: E402

SIZE = 4096
REGION = (2000, 1000, 64, 64)  # x, y, width, height: straddles two stripes and two column groups
SMALL_BLOCK = 64 << 10


def imi_read(src: str, region: tuple[int, int, int, int] | None) -> np.ndarray:
    with imij_plugins.open(src) as f:
        return f.read(region=region)


def tiff_read(src: str, region: tuple[int, int, int, int] | None, block_size: int | None) -> np.ndarray:
    """tifffile over an fsspec file object (a URL) or a local path."""
    opened = fsspec.open(src, "rb", **({"block_size": block_size} if block_size else {})) if "://" in src else None
    with (opened or open(src, "rb")) as fh, tifffile.TiffFile(fh) as tif:
        page = tif.pages[0]
        if region is None:
            return page.asarray()
        x, y, w, h = region
        with page.aszarr() as store:
            return zarr.open(store, mode="r")[y : y + h, x : x + w]


def measure(served: Served, read: Callable[[], np.ndarray], want: np.ndarray, repeat: int) -> dict[str, float]:
    """Best time of ``repeat`` runs, and the last run's requests and bytes; the result checked."""
    best = float("inf")
    for _ in range(repeat):
        served.reset()
        start = time.perf_counter()
        got = read()
        best = min(best, time.perf_counter() - start)
        np.testing.assert_array_equal(got, want)
    return {"seconds": best, "requests": served.requests, "bytes": served.bytes}


def run(latency: float, repeat: int) -> tuple[dict[str, int], list[dict[str, object]]]:
    img = textured(SIZE, SIZE, 2)
    x, y, w, h = REGION
    region = img[y : y + h, x : x + w]
    imi = imij_plugins.encode(img, stripe_rows=64, group_cols=256, unit_table="filled")
    with tempfile.TemporaryDirectory() as tmp:
        tif_path, imi_path = os.path.join(tmp, "scan.tif"), os.path.join(tmp, "scan.imi")
        tifffile.imwrite(tif_path, img, tile=(256, 256), compression="zlib", predictor=True, photometric="rgb")
        with open(imi_path, "wb") as fh:
            fh.write(imi)
        with open(tif_path, "rb") as fh:
            tif = fh.read()
        sizes = {"imi": len(imi), "tiff": len(tif)}
        served = Served(files={"/scan.imi": imi, "/scan.tif": tif})
        server = FileServer(served)
        readers: list[tuple[str, str, Callable[[tuple[int, int, int, int] | None], np.ndarray]]] = [
            ("IMI, imij_plugins.open", "imi", lambda r: imi_read(server.url("scan.imi"), r)),
            ("TIFF, tifffile + fsspec 5 MiB blocks", "tiff", lambda r: tiff_read(server.url("scan.tif"), r, None)),
            ("TIFF, tifffile + fsspec 64 KiB blocks", "tiff", lambda r: tiff_read(server.url("scan.tif"), r, SMALL_BLOCK)),
        ]
        rows: list[dict[str, object]] = []
        try:
            for delay in (0.0, latency):
                served.delay = delay
                for name, kind, read in readers:
                    for what, box, want in (("64x64 region", REGION, region), ("full", None, img)):
                        rows.append({"reader": name, "file": kind, "latency_ms": delay * 1000, "read": what,
                                     **measure(served, lambda: read(box), want, repeat)})
            local = Served()  # counts nothing: local reads make no requests
            for name, kind, read_local in (("IMI, local path", "imi", lambda r: imi_read(imi_path, r)),
                                           ("TIFF, tifffile local path", "tiff", lambda r: tiff_read(tif_path, r, None))):
                for what, box, want in (("64x64 region", REGION, region), ("full", None, img)):
                    rows.append({"reader": name, "file": kind, "latency_ms": None, "read": what,
                                 **measure(local, lambda: read_local(box), want, repeat)})
        finally:
            server.close()
    return sizes, rows


def section(sizes: dict[str, int], rows: list[dict[str, object]], latency: float, repeat: int) -> str:
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("fsspec", "aiohttp", "tifffile", "zarr"))
    lines = [
        "## Remote reads",
        "",
        f"`python benchmarks/remote_reads.py`: a {SIZE}x{SIZE} RGB u8 image (gradient under noise) as IMI "
        f"(64x256 units, filled unit table: {sizes['imi']:,} B) and as a tiled TIFF (256x256 tiles, zlib + "
        f"horizontal predictor: {sizes['tiff']:,} B), served over local HTTP (Python's `http.server`, Range "
        f"support) with no added latency and with {latency * 1000:.0f} ms per response. Each read from a fresh "
        f"open; region = 64x64 at ({REGION[0]}, {REGION[1]}). Time: best of {repeat}; requests (HEAD + GET) "
        f"and body bytes as the server counted them. Machine: {platform.machine()}, cores {os.cpu_count()}, "
        f"python {platform.python_version()}; {versions}.",
        "",
        "| reader | latency | read | requests | bytes | of file | time ms |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lat = "local" if r["latency_ms"] is None else f"{r['latency_ms']:.0f} ms"
        req = "-" if r["latency_ms"] is None else f"{r['requests']:,}"
        nbytes = "-" if r["latency_ms"] is None else f"{r['bytes']:,}"
        share = "-" if r["latency_ms"] is None else f"{100 * r['bytes'] / sizes[str(r['file'])]:.2f}%"
        lines.append(f"| {r['reader']} | {lat} | {r['read']} | {req} | {nbytes} | {share} | {1000 * r['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.020, help="seconds each response waits (default 0.020)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = ap.parse_args()
    sizes, rows = run(args.latency, args.repeat)
    print(section(sizes, rows, args.latency, args.repeat))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"sizes": sizes, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
