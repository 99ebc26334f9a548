"""Pillow thumbnails served from preview layers (pRVW) against a full decode.

Writes a photo-like RGB image (default 6000 x 4000, 24 megapixels) with
``previews=(8, 32)`` to a file, then times, in one process and alternating rounds, ``Image.open`` +
``load()`` (the full decode) and ``Image.open`` + ``thumbnail((256, 256))`` (``draft`` picks
the smallest preview at least twice the thumbnail, Pillow's reducing_gap). Prints a JSON
record; ``--results FILE`` also rewrites that file's "Thumbnails from previews" section.

    python benchmarks/thumbnail.py [--width 6000 --height 4000 --rounds 5 --results benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

import imij_plugins

SECTION = "## Thumbnails from previews"
# 858 x 572 and 215 x 143 of 6000 x 4000: the largest factor whose short side still covers the
# 512 x 512 that Pillow's thumbnail((256, 256)) asks draft() for (reducing_gap 2), and one for icons
PREVIEWS = (7, 28)


def photo(width: int, height: int, seed: int = 1) -> np.ndarray:
    """Smooth gradients with fine noise: about what a photo costs to code."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([x / width * 200, y / height * 180, (x + y) / (width + height) * 160], axis=2)
    waves = 30 * np.sin(x / 97.0)[..., None] * np.cos(y / 61.0)[..., None]
    return np.clip(base + waves + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8)


def _best(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(folder: Path, width: int, height: int, rounds: int, size: tuple[int, int] = (256, 256)) -> dict[str, object]:
    """Full decode and thumbnail times of a file in ``folder`` (medians of ``rounds``), and its
    bytes with and without previews."""
    image = photo(width, height)
    plain = imij_plugins.encode(image)
    path = folder / "thumbnail-bench.imi"
    imij_plugins.write(path, image, previews=PREVIEWS)
    data = path.read_bytes()

    def full() -> None:
        with Image.open(path) as im:
            im.load()

    def thumb() -> None:
        with Image.open(path) as im:
            im.thumbnail(size)

    with Image.open(path) as im:
        im.thumbnail(size)
        preview = im.info.get("imij_preview")
    full_s, thumb_s = [], []
    for _ in range(rounds):  # alternating, so both see the same machine load
        full_s.append(_best(full, 1))
        thumb_s.append(_best(thumb, 1))
    return {
        "width": width,
        "height": height,
        "thumbnail": list(size),
        "preview_used": list(preview) if preview else None,
        "bytes_without_previews": len(plain),
        "bytes_with_previews": len(data),
        "full_decode_ms": statistics.median(full_s) * 1000,
        "thumbnail_ms": statistics.median(thumb_s) * 1000,
        "ratio": statistics.median(thumb_s) / statistics.median(full_s),
        "machine": f"{platform.processor() or platform.machine()}, Python {platform.python_version()}",
        "backend": imij_plugins.backend,
    }


def section(r: dict[str, object]) -> str:
    """RESULTS.md's section for one run."""
    return (
        f"{SECTION}\n\n`benchmarks/thumbnail.py`: a {r['width']} x {r['height']} photo-like RGB image written with "
        f"`previews={PREVIEWS}` to a file; Pillow `Image.open` + `thumbnail({r['thumbnail'][0]}, {r['thumbnail'][1]})` against "  # type: ignore[index]
        f"`Image.open` + `load()`, medians of alternating rounds ({r['machine']}, backend {r['backend']}).\n\n"
        "| | value |\n|---|---:|\n"
        f"| full decode | {r['full_decode_ms']:.1f} ms |\n"
        f"| thumbnail (preview {r['preview_used']}) | {r['thumbnail_ms']:.1f} ms |\n"
        f"| thumbnail / full decode | {100 * r['ratio']:.1f}% (target: under 5%) |\n"  # type: ignore[operator]
        f"| file bytes, previews / none | {r['bytes_with_previews']:,} / {r['bytes_without_previews']:,} "
        f"({100 * (r['bytes_with_previews'] / r['bytes_without_previews'] - 1):.1f}% more) |\n"  # type: ignore[operator]
    )


def write_section(path: Path, text: str) -> None:
    """Replace (or append) the section in ``path``, keeping the others."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start = old.find(SECTION)
    if start < 0:
        path.write_text(old.rstrip("\n") + "\n\n" + text)
        return
    end = old.find("\n## ", start + len(SECTION))
    path.write_text(old[:start] + text + (old[end + 1 :] if end >= 0 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=6000)
    parser.add_argument("--height", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        record = measure(Path(folder), args.width, args.height, args.rounds)
    print(json.dumps(record))
    if args.results:
        write_section(args.results, section(record))


if __name__ == "__main__":
    main()
