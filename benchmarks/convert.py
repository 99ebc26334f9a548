"""``imij convert`` throughput on the benchmark corpus as PNG files, and output size against WebP lossless.

    python benchmarks/convert.py                      # corpus in benchmarks/.corpus (benchmarks/corpus.py builds it)
    python benchmarks/convert.py --corpus DIR --results benchmarks/RESULTS.md

Every corpus image PNG can hold (8-bit Gray, GrayAlpha, RGB, RGBA and 16-bit Gray) is written
as a PNG (Pillow, default level); the folder is converted to IMI by the ``imij convert``
command (a new process, verify on, default effort) at 1 and 2 jobs: files/s and input MB/s of
the whole command, start-up included. The IMI bytes are compared with Pillow WebP lossless
(``lossless=True, quality=75, method=4``: ``cwebp -lossless`` defaults) of the 8-bit images.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
SECTION = "## imij convert from PNG"
MB = 1e6


def load_corpus(folder: Path) -> dict[str, np.ndarray]:
    """The corpus arrays PNG stores sample for sample, by name (manifest order)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    out = {}
    for image in manifest["images"]:
        array = np.load(folder / image["file"])
        if _png_mode(array) is not None:
            out[image["name"]] = array
    return out


def _png_mode(array: np.ndarray) -> str | None:
    """The Pillow mode that writes ``array`` to PNG exactly, or None."""
    channels = 1 if array.ndim == 2 else array.shape[2]
    if array.dtype == np.uint8:
        return {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}.get(channels)
    return "I;16" if array.dtype == np.uint16 and channels == 1 else None


def _webp_bytes(array: np.ndarray) -> int | None:
    """Pillow WebP lossless size with cwebp -lossless defaults, for 8-bit images."""
    if array.dtype != np.uint8:
        return None
    image = Image.fromarray(array.squeeze())
    out = io.BytesIO()
    image.save(out, "WEBP", lossless=True, quality=75, method=4)
    return len(out.getvalue())


def measure(arrays: dict[str, np.ndarray], workdir: Path, jobs: tuple[int, ...] = (1, 2)) -> dict[str, object]:
    """Write the PNGs, convert them with each job count, and compare sizes."""
    source = workdir / "png"
    source.mkdir(parents=True)
    for name, array in arrays.items():
        Image.fromarray(array.squeeze() if array.ndim == 3 and array.shape[2] == 1 else array).save(source / f"{name}.png")
    png_bytes = sum(p.stat().st_size for p in source.iterdir())
    runs = []
    for n in jobs:
        out = workdir / f"imi-j{n}"
        start = time.perf_counter()
        cmd = [sys.executable, "-m", "imij_plugins.cli", "convert", str(source), "-o", str(out), "-j", str(n), "-q"]
        subprocess.run(cmd, check=True)
        seconds = time.perf_counter() - start
        runs.append({"jobs": n, "seconds": seconds, "files_per_s": len(arrays) / seconds, "mb_per_s": png_bytes / MB / seconds})
    imi = {p.stem: p.stat().st_size for p in (workdir / f"imi-j{jobs[0]}").iterdir()}
    webp = {name: _webp_bytes(array) for name, array in arrays.items()}
    eight = [name for name, size in webp.items() if size is not None]
    return {
        "load_average": os.getloadavg()[0],  # other work on the machine moves the rates
        "cores": os.cpu_count(),
        "files": len(arrays),
        "png_bytes": png_bytes,
        "imi_bytes": sum(imi.values()),
        "eight_bit_files": len(eight),
        "imi_bytes_8bit": sum(imi[n] for n in eight),
        "webp_bytes_8bit": sum(webp[n] or 0 for n in eight),
        "runs": runs,
    }


def section(record: dict[str, object]) -> str:
    """The RESULTS.md section for one measurement."""
    rows = "\n".join(
        f"| {r['jobs']} | {r['seconds']:.2f} s | {r['files_per_s']:.1f} | {r['mb_per_s']:.2f} |" for r in record["runs"]  # type: ignore[union-attr]
    )
    ratio = record["imi_bytes_8bit"] / record["webp_bytes_8bit"] if record["webp_bytes_8bit"] else float("nan")  # type: ignore[operator]
    return (
        f"{SECTION}\n\n`benchmarks/convert.py`: the {record['files']} corpus images PNG can hold, written as PNG "
        f"({record['png_bytes']:,} bytes), converted by `imij convert DIR -o OUT -j N` (a new process each run: "
        "start-up, spawn and the verify decode included; default effort), on "
        f"{record['cores']} cores with a 1-minute load average of {record['load_average']:.1f} at the end "
        "(the rates are only comparable between runs on an idle machine).\n\n"
        "| jobs | wall time | files/s | PNG MB/s |\n|---:|---:|---:|---:|\n"
        f"{rows}\n\n"
        f"IMI output {record['imi_bytes']:,} bytes ({record['imi_bytes'] / record['png_bytes']:.3f} of PNG). "  # type: ignore[operator]
        f"For the {record['eight_bit_files']} 8-bit images, IMI {record['imi_bytes_8bit']:,} bytes against Pillow WebP "
        f"lossless (`quality=75, method=4`, `cwebp -lossless` defaults) {record['webp_bytes_8bit']:,} bytes: "
        f"IMI / WebP = {ratio:.3f}.\n"
    )


def write_section(path: Path, text: str) -> None:
    """Put this section last in ``path`` (replacing an older run's), keeping the others."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    parts = old.rstrip("\n").split("\n\n## ")
    kept = [part for part in parts if not ("## " + part).startswith(SECTION)]
    path.write_text("\n\n## ".join(kept) + "\n\n" + text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=HERE / ".corpus")
    parser.add_argument("--results", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        record = measure(load_corpus(args.corpus), Path(folder))
    print(json.dumps(record))
    if args.results:
        write_section(args.results, section(record))


if __name__ == "__main__":
    main()
