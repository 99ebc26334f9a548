"""Real input files of every kind the converter reads, written by Pillow, tifffile and numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

RNG = np.random.default_rng(23)


def noise(shape: tuple[int, ...], dtype: type = np.uint8) -> np.ndarray:
    """Random samples over the whole range of an integer dtype, or 0..1 for floats."""
    if np.dtype(dtype).kind == "f":
        return RNG.random(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def write_pngs(folder: Path, count: int, size: tuple[int, int] = (24, 32)) -> list[Path]:
    """``count`` small RGB PNGs with smooth content (they compress) under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    y, x = np.mgrid[: size[0], : size[1]]
    paths = []
    for i in range(count):
        image = np.stack([(x * 3 + i) % 256, (y * 5 + i) % 256, (x + y) % 256], axis=-1).astype(np.uint8)
        paths.append(folder / f"img{i:03}.png")
        Image.fromarray(image).save(paths[-1])
    return paths


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A folder of one file per reader: PNG, JPEG, GIF animation, WebP, BMP, TIFF pages, .npy, in subfolders."""
    root = tmp_path / "in"
    (root / "sub" / "deeper").mkdir(parents=True)
    Image.fromarray(noise((16, 20, 3))).save(root / "rgb.png")
    Image.fromarray(noise((16, 20, 3))).save(root / "sub" / "photo.jpg", quality=90)
    frames = [Image.fromarray(noise((12, 10, 3))).quantize(16) for _ in range(3)]
    frames[0].save(root / "sub" / "anim.gif", save_all=True, append_images=frames[1:], duration=[40, 80, 120], loop=3)
    Image.fromarray(noise((10, 14, 4))).save(root / "sub" / "deeper" / "alpha.webp", lossless=True)
    Image.fromarray(noise((9, 7, 3))).save(root / "paint.bmp")
    with tifffile.TiffWriter(root / "sub" / "stack.tif") as tif:
        for dtype in (np.uint16, np.float32, np.int16):
            tif.write(noise((8, 6), dtype))
    np.save(root / "deeper.npy", noise((5, 6, 2), np.float64))
    return root
