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


def lzw(data: bytes) -> bytes:
    """TIFF LZW (compression 5) of ``data`` as literal 9-bit codes, with a Clear code every 250
    bytes so the table never reaches a 10-bit width: valid for any LZW decoder, written without
    imagecodecs (which tifffile needs to write or read LZW)."""
    codes: list[int] = []
    for start in range(0, len(data), 250):
        codes += [256, *data[start : start + 250]]
    codes.append(257)  # EndOfInformation
    bits = "".join(f"{code:09b}" for code in codes)
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


def lzw_tiff(array: np.ndarray, **write: object) -> bytes:
    """A one-strip TIFF of ``array`` (tifffile ``write`` keywords) whose strip is LZW-compressed:
    written uncompressed, then its strip moved to the end as LZW and the tags patched."""
    import io
    import struct

    out = io.BytesIO()
    tifffile.imwrite(out, array, rowsperstrip=array.shape[0], **write)  # type: ignore[arg-type]
    data = bytearray(out.getvalue())
    with tifffile.TiffFile(io.BytesIO(bytes(data))) as tif:
        page = tif.pages.first
        (offset,), (count,) = page.dataoffsets, page.databytecounts
        tags = {code: (page.tags[code].valueoffset, {3: "H", 4: "I"}[int(page.tags[code].dtype)]) for code in (259, 273, 279)}
        order = tif.byteorder
    strip = lzw(bytes(data[offset : offset + count]))
    for code, value in ((259, 5), (273, len(data)), (279, len(strip))):
        where, fmt = tags[code]
        struct.pack_into(order + fmt, data, where, value)
    return bytes(data) + strip
