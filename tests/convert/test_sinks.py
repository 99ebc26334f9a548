"""Outputs: TIFF compressed (deflate with a predictor by default, ``--compression``), PNG with a dpi pHYs cannot hold."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import tifffile
from PIL import Image

import imij_plugins
from imij_plugins import EncodeOptions
from imij_plugins.cli import main
from imij_plugins.convert import ConvertOptions, convert_file

from .conftest import noise


def smooth(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    y, x = np.mgrid[: shape[0], : shape[1]]
    ramp = (x * 37 + y * 11).astype(np.float64)
    ramp = ramp[..., None].repeat(shape[2], axis=2) if len(shape) == 3 else ramp
    return ramp.astype(dtype)


def imi_of(tmp_path, array: np.ndarray) -> str:
    path = tmp_path / "in.imi"
    path.write_bytes(imij_plugins.encode(array, EncodeOptions()))
    return str(path)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_tiff_output_is_deflated_with_a_predictor_by_default(tmp_path, dtype):
    array = smooth((64, 48, 3), dtype)
    dst = tmp_path / "out.tif"
    assert convert_file(imi_of(tmp_path, array), dst, ConvertOptions()).status == "converted"
    with tifffile.TiffFile(dst) as tif:
        page = tif.pages.first
        assert page.compression == tifffile.COMPRESSION.ADOBE_DEFLATE
        if np.dtype(dtype).kind == "u":
            assert page.predictor == tifffile.PREDICTOR.HORIZONTAL
        assert np.array_equal(page.asarray(), array)
    assert dst.stat().st_size < array.nbytes / 2


def test_compression_none_and_lzma(tmp_path):
    src = imi_of(tmp_path, smooth((16, 16), np.uint16))
    assert main(["convert", src, "-o", str(tmp_path / "raw.tif"), "--compression", "none", "-q"]) == 0
    assert main(["convert", src, "-o", str(tmp_path / "xz.ome.tif"), "--compression", "lzma", "-q"]) == 0
    assert tifffile.TiffFile(tmp_path / "raw.tif").pages.first.compression == tifffile.COMPRESSION.NONE
    assert tifffile.TiffFile(tmp_path / "xz.ome.tif").pages.first.compression == tifffile.COMPRESSION.LZMA


def test_zstd_needs_imagecodecs(tmp_path, capsys):
    src = imi_of(tmp_path, smooth((16, 16), np.uint16))
    status = main(["convert", src, "-o", str(tmp_path / "z.tif"), "--compression", "zstd", "-q"])
    if importlib.util.find_spec("imagecodecs") is None:
        assert status == 2 and "needs imagecodecs" in capsys.readouterr().err
    else:
        assert status == 0 and tifffile.TiffFile(tmp_path / "z.tif").pages.first.compression == tifffile.COMPRESSION.ZSTD


def test_png_with_a_dpi_phys_cannot_hold_keeps_it_in_exif(tmp_path):
    src = tmp_path / "far.jpg"
    exif = Image.Exif()
    exif[0x011A], exif[0x011B], exif[0x0128] = 4294967295.0, 4294967295.0, 2  # X/YResolution, inch
    Image.fromarray(noise((6, 6, 3))).save(src, exif=exif)
    imi = tmp_path / "far.imi"
    assert convert_file(src, imi, ConvertOptions()).status == "converted"
    record = convert_file(imi, tmp_path / "back.png", ConvertOptions())
    assert record.status == "converted", record.reason
    with Image.open(tmp_path / "back.png") as out:
        assert "dpi" not in out.info and float(out.getexif()[0x011A]) == 4294967295.0


def test_apng_output_refuses_equal_consecutive_frames_it_would_merge(tmp_path):
    frame = noise((5, 6, 3))
    src = tmp_path / "still.imi"
    src.write_bytes(imij_plugins.encode([frame, frame.copy(), noise((5, 6, 3))], EncodeOptions(), kind="animation", durations=[0.1, 0.1, 0.1]))
    record = convert_file(src, tmp_path / "out.png", ConvertOptions())
    assert record.status == "failed"
    assert record.reason == "ValueError: APNG cannot hold equal consecutive frames 0 and 1 (Pillow's writer merges them): convert to tiff or imi"


def test_apng_output_refuses_16_bit_frames(tmp_path):
    src = tmp_path / "deep.imi"
    frames = [noise((5, 6), np.uint16) for _ in range(3)]
    src.write_bytes(imij_plugins.encode(frames, EncodeOptions(), kind="animation", durations=[0.1, 0.1, 0.1]))
    record = convert_file(src, tmp_path / "out.png", ConvertOptions())
    assert record.status == "failed"
    assert record.reason == "ValueError: APNG cannot hold 16-bit gray frames (Pillow's APNG writer does not write them): convert to tiff or imi"
    assert not (tmp_path / "out.png").exists()
