"""What a TIFF's own tags say, kept as they say it: resolution, bits per sample, extra samples, orientation."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

import imij_plugins
from imij_plugins.convert import ConvertOptions, convert_file, read_source
from imij_plugins.pillow import register_pillow

from .conftest import noise


def tiff(path: Path, array: np.ndarray, **write: object) -> Path:
    tifffile.imwrite(path, array, metadata=None, **write)
    return path


def to_imi(src: Path) -> Path:
    out = src.with_suffix(".imi")
    record = convert_file(src, out, ConvertOptions())
    assert record.status == "converted", record.reason
    return out


def test_a_tiff_without_resolution_tags_has_no_dpi(tmp_path):
    src = tmp_path / "plain.tif"
    Image.fromarray(noise((5, 6))).save(src)  # Pillow writes no X/YResolution; it reads them back as dpi (1, 1)
    assert 282 not in tifffile.TiffFile(src).pages.first.tags
    assert read_source(src).metadata.dpi is None
    assert "dpi" not in imij_plugins.open(to_imi(src)).metadata


def test_a_zero_resolution_is_no_dpi_not_a_refusal(tmp_path):
    src = tiff(tmp_path / "zero.tif", noise((5, 6)), resolution=(0, 0), resolutionunit="INCH")
    assert "dpi" not in imij_plugins.open(to_imi(src)).metadata


def packed_gray_tiff(array: np.ndarray, bits: int) -> bytes:
    """A little-endian TIFF of one uncompressed strip of ``bits``-bit gray samples, rows padded to bytes."""
    height, width = array.shape
    per_byte = 8 // bits
    padded = np.zeros((height, -(-width // per_byte) * per_byte), np.uint8)
    padded[:, :width] = array
    groups = padded.reshape(height, -1, per_byte).astype(np.uint16)
    pixels = sum(groups[..., i] << (8 - bits * (i + 1)) for i in range(per_byte)).astype(np.uint8).tobytes()
    tags = [(256, width), (257, height), (258, bits), (259, 1), (262, 1), (273, 0), (277, 1), (278, height), (279, len(pixels))]
    ifd_size = 2 + 12 * len(tags) + 4
    tags[5] = (273, 8 + ifd_size)  # the strip follows the IFD
    entries = b"".join(struct.pack("<HHII", code, 4, 1, value) for code, value in tags)
    return b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", len(tags)) + entries + b"\x00" * 4 + pixels


@pytest.mark.parametrize("bits", [2, 4])
def test_gray_of_few_bits_declares_them_and_opens_as_pillow_reads_the_source(tmp_path, bits):
    array = noise((7, 9)) % (1 << bits)
    src = tmp_path / f"gray{bits}.tif"
    src.write_bytes(packed_gray_tiff(array, bits))
    out = to_imi(src)
    with imij_plugins.open(out) as f:
        assert f.image_info(0).sig_bits == (bits,)
        assert np.array_equal(f.read(0)[..., 0], array)
    register_pillow()
    with Image.open(out) as got, Image.open(src) as want:
        assert got.mode == want.mode == "L" and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_associated_alpha_is_kept_premultiplied_and_declared(tmp_path, dtype):
    rgba = noise((6, 5, 4), dtype)
    rgba[..., :3] = np.minimum(rgba[..., :3], rgba[..., 3:])  # premultiplied: colour <= alpha
    src = tiff(tmp_path / "assoc.tif", rgba, photometric="rgb", extrasamples=["assocalpha"])
    out = to_imi(src)
    with imij_plugins.open(out) as f:
        assert f.image_info(0).alpha_mode == 1 and np.array_equal(f.read(0), rgba)
    back = tmp_path / "back.tif"
    assert convert_file(out, back, ConvertOptions()).status == "converted"
    page = tifffile.TiffFile(back).pages.first
    assert tuple(int(e) for e in page.extrasamples) == (1,) and np.array_equal(page.asarray(), rgba)
    record = convert_file(out, tmp_path / "back.png", ConvertOptions())
    assert record.status == "failed" and "premultiplied alpha" in record.reason


def test_an_unspecified_extra_sample_is_declared_padding_not_alpha(tmp_path):
    array = noise((6, 5, 2))
    src = tiff(tmp_path / "extra.tif", array, photometric="minisblack", planarconfig="contig", extrasamples=["unspecified"])
    with imij_plugins.open(to_imi(src)) as f:
        assert f.image_info(0).alpha_mode == 3 and np.array_equal(f.read(0), array)


def test_signed_8_bit_samples_stay_signed(tmp_path):
    array = noise((6, 5)).view(np.int8)
    with imij_plugins.open(to_imi(tiff(tmp_path / "signed.tif", array))) as f:
        assert f.read(0).dtype == np.int8 and np.array_equal(f.read(0)[..., 0], array)


def test_an_orientation_pillow_applied_is_not_applied_again(tmp_path):
    # min-is-white has no IMI layout as tifffile reads it: Pillow reads it, turning it as the tag says
    src = tiff(tmp_path / "turned.tif", noise((6, 10)), photometric="miniswhite", extratags=[(274, "H", 1, 6, True)])
    decoded = read_source(src)
    assert decoded.reader == "pillow:TIFF"
    with Image.open(src) as im:
        im.load()  # every supported Pillow turns the pixels (Pillow 9 keeps the tag in getexif())
        assert decoded.frames[0].array.shape[:2] == (im.height, im.width) == (10, 6)
    assert decoded.metadata.orientation == 1
    with imij_plugins.open(to_imi(src)) as f:
        assert f.metadata["orientation"] == 1
        assert "exif" not in f.metadata or _exif(f.metadata["exif"]).get(274, 1) == 1


def _exif(block: bytes) -> Image.Exif:
    exif = Image.Exif()
    exif.load(b"Exif\x00\x00" + block)
    return exif


def test_a_later_page_with_premultiplied_alpha_is_read_straight_by_pillow(tmp_path):
    """The encoder declares an alpha mode on the first image only: such a file is read as
    Pillow reads it (unpremultiplied), or refused where that loses depth, never relabelled."""
    src = tmp_path / "pages.tif"
    with tifffile.TiffWriter(src) as tif:
        tif.write(noise((4, 5, 3)), photometric="rgb", metadata=None)
        tif.write(noise((4, 5, 4)) // 2, photometric="rgb", extrasamples=["assocalpha"], metadata=None)
    assert read_source(src).reader == "pillow:TIFF"
    with Image.open(src) as im, imij_plugins.open(to_imi(src)) as f:
        im.seek(1)
        assert f.image_info(1).alpha_mode == 0 and np.array_equal(f.read(1), np.asarray(im.convert("RGBA")))
