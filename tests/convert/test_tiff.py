"""TIFF inputs tifffile cannot decode: Pillow only when it keeps the depth, else a clear one-line refusal."""

from __future__ import annotations

import importlib.util
import io
import struct

import numpy as np
import pytest
import tifffile
from PIL import Image

import imij_plugins
from imij_plugins.convert import ConvertOptions, convert_file, read_source
from imij_plugins.errors import Corrupt

from .conftest import lzw_tiff, noise

HAS_IMAGECODECS = importlib.util.find_spec("imagecodecs") is not None
no_imagecodecs = pytest.mark.skipif(HAS_IMAGECODECS, reason="imagecodecs is installed: tifffile reads LZW itself")


@no_imagecodecs
@pytest.mark.parametrize("alpha", [False, True], ids=["RGB", "RGBA"])
def test_16bit_lzw_rgb_is_refused_not_read_at_8_bits(tmp_path, alpha):
    array = noise((6, 5, 4 if alpha else 3), np.uint16)
    src = tmp_path / "deep.tif"
    src.write_bytes(lzw_tiff(array, photometric="rgb", extrasamples=["unassalpha"] if alpha else None))
    assert Image.open(src).mode in ("RGB", "RGBA")  # what Pillow would have given: 8 bits
    record = convert_file(src, tmp_path / "deep.imi", ConvertOptions())
    assert record.status == "failed" and record.reason.startswith("Unsupported: tifffile cannot decode this TIFF")
    assert "pip install imagecodecs" in record.reason and "uint16" in record.reason and "\n" not in record.reason
    assert not (tmp_path / "deep.imi").exists()


@no_imagecodecs
def test_16bit_lzw_gray_is_read_by_pillow_at_its_depth(tmp_path):
    array = noise((7, 9), np.uint16)
    src = tmp_path / "gray.tif"
    src.write_bytes(lzw_tiff(array))
    assert convert_file(src, tmp_path / "gray.imi", ConvertOptions()).status == "converted"
    assert np.array_equal(imij_plugins.read(tmp_path / "gray.imi")[..., 0], array)


@no_imagecodecs
def test_tiff_read_by_pillow_keeps_the_metadata_of_its_tags(tmp_path):
    xmp = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF/></x:xmpmeta>'
    src = tmp_path / "tagged.tif"
    src.write_bytes(lzw_tiff(noise((7, 9), np.uint16), iccprofile=b"\x01" * 300, resolution=(72, 96), resolutionunit="INCH",
                             extratags=[(700, "B", len(xmp), xmp, True), (271, "s", 0, "imij", True)], metadata=None))
    assert read_source(src).reader == "pillow:TIFF"
    assert convert_file(src, tmp_path / "tagged.imi", ConvertOptions()).status == "converted"
    meta = imij_plugins.open(tmp_path / "tagged.imi").metadata
    assert meta["xmp"] == xmp and meta["icc_profile"] == b"\x01" * 300
    assert meta["dpi"] == pytest.approx((72, 96))
    exif = Image.Exif()
    exif.load(b"Exif\x00\x00" + meta["exif"])
    assert exif[0x010F] == "imij"


def test_16bit_lzw_rgba_with_imagecodecs_converts_exactly(tmp_path):
    pytest.importorskip("imagecodecs")
    array = noise((6, 5, 4), np.uint16)
    src = tmp_path / "deep.tif"
    src.write_bytes(lzw_tiff(array, photometric="rgb", extrasamples=["unassalpha"]))
    assert convert_file(src, tmp_path / "deep.imi", ConvertOptions()).status == "converted"
    with imij_plugins.open(tmp_path / "deep.imi") as f:
        assert f.image_info(0).layout == "RGBA" and np.array_equal(f.read(0), array)


def test_min_is_white_float_reads_as_pillow_reads_it(tmp_path):
    array = noise((8, 8), np.float32)
    src = tmp_path / "white.tif"
    tifffile.imwrite(src, array, photometric="miniswhite")
    decoded = read_source(src)
    assert decoded.reader == "pillow:TIFF" and decoded.frames[0].array.dtype == np.float32
    assert np.array_equal(decoded.frames[0].array[..., 0], array)


def test_first_ifd_outside_the_file_is_corrupt_with_a_reason(tmp_path):
    src = tmp_path / "far.tif"
    src.write_bytes(b"II*\x00" + struct.pack("<I", 0x7FFFFFF0) + bytes(64))
    with pytest.raises(Corrupt, match="TIFF has no readable page"):
        read_source(src)


@pytest.mark.parametrize("palette", [False, True], ids=["RGB", "P"])
def test_truncated_tiff_says_truncated(tmp_path, palette):
    image = Image.fromarray(noise((64, 64, 3)))
    out = io.BytesIO()
    (image.quantize(16) if palette else image).save(out, "TIFF")
    src = tmp_path / "cut.tif"
    src.write_bytes(out.getvalue()[:-100] if palette else out.getvalue()[:1000])
    record = convert_file(src, tmp_path / "cut.imi", ConvertOptions())
    assert record.status == "failed"
    assert record.reason.startswith("Corrupt: TIFF is truncated: the data of page 0 ends at byte ")



def test_an_ifd_chain_that_loops_back_ends_there(tmp_path):
    src = tmp_path / "loop.tif"
    pages = [noise((4, 5)), noise((4, 5))]
    with tifffile.TiffWriter(src) as tif:
        for page in pages:
            tif.write(page, metadata=None)
    data = bytearray(src.read_bytes())
    with tifffile.TiffFile(src) as tif:
        first, second = tif.pages[0], tif.pages[1]
        next_pointer = second.offset + 2 + 12 * len(second.tags)
    struct.pack_into("<I", data, next_pointer, first.offset)  # page 1 points back at page 0
    src.write_bytes(bytes(data))
    decoded = read_source(src)
    assert len(decoded.frames) == 2 and all(np.array_equal(f.array.reshape(p.shape), p) for f, p in zip(decoded.frames, pages))


@no_imagecodecs
def test_a_codec_neither_reader_has_names_imagecodecs(tmp_path):
    src = tmp_path / "webp.tif"
    tifffile.imwrite(src, noise((6, 6, 3)), photometric="rgb")
    data = bytearray(src.read_bytes())
    with tifffile.TiffFile(src) as tif:
        struct.pack_into("<H", data, tif.pages.first.tags[259].valueoffset, 50001)  # Compression: WEBP
    src.write_bytes(bytes(data))
    record = convert_file(src, tmp_path / "webp.imi", ConvertOptions())
    assert record.reason.startswith("Unsupported: tifffile cannot decode this TIFF") and "(pip install imagecodecs); nor can Pillow" in record.reason
