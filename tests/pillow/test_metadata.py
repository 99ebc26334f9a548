"""ICC, Exif and XMP: read into info, written from parameters or im.info, surviving open -> save -> open."""

from __future__ import annotations

import functools
import io
import struct
import warnings

import numpy as np
import pytest
from PIL import ExifTags, Image, ImageCms, ImageOps

import imij_plugins
from imij_plugins.container import metadata as md

from .helper import sample_image, save_bytes

XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></x:xmpmeta>'


@functools.cache
def _icc() -> bytes:
    """An sRGB profile (cached: the profile's header holds its creation time)."""
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def _exif() -> Image.Exif:
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = 6
    exif[ExifTags.Base.Make] = "imij"
    return exif


def _opened(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


def test_metadata_from_parameters_reaches_info():
    data = save_bytes(sample_image("RGB"), icc_profile=_icc(), exif=_exif(), xmp=XMP)
    with _opened(data) as im:
        assert im.info["icc_profile"] == _icc()
        assert im.info["xmp"] == XMP
        assert im.info["exif"].startswith(b"Exif\x00\x00")  # PngImagePlugin's convention
        exif = im.getexif()
        assert exif[ExifTags.Base.Orientation] == 6 and exif[ExifTags.Base.Make] == "imij"
        assert im._getexif()[ExifTags.Base.Orientation] == 6
        assert ImageCms.getProfileName(ImageCms.ImageCmsProfile(io.BytesIO(im.info["icc_profile"])))


def test_the_exif_chunk_holds_the_tiff_header_onward():
    for given in (_exif(), _exif().tobytes(), _exif().tobytes()[6:]):
        with imij_plugins.open(save_bytes(sample_image("L"), exif=given)) as f:
            assert f.metadata["exif"][:4] in (b"II*\x00", b"MM\x00*")


def test_metadata_survives_open_save_open(tmp_path):
    first, second = tmp_path / "a.imi", tmp_path / "b.imi"
    sample_image("RGBA").save(first, icc_profile=_icc(), exif=_exif(), xmp=XMP)
    with Image.open(first) as im:
        im.save(second)  # no parameters: everything falls back to im.info
    with Image.open(second) as im:
        assert im.info["icc_profile"] == _icc()
        assert im.info["xmp"] == XMP
        assert im.getexif()[ExifTags.Base.Orientation] == 6


def test_metadata_survives_a_conversion_and_save_all(tmp_path):
    frames = [sample_image("RGB", (5, 5), i) for i in range(3)]
    data = save_bytes(frames[0], save_all=True, append_images=frames[1:], icc_profile=_icc(), xmp=XMP)
    with _opened(data) as im:
        converted = im.convert("RGBA")  # info is copied with the image
        again = save_bytes(converted)
    with _opened(again) as im:
        assert (im.info["icc_profile"], im.info["xmp"]) == (_icc(), XMP)


def test_parameters_win_over_info_and_empty_values_drop_metadata():
    with _opened(save_bytes(sample_image("L"), icc_profile=_icc(), xmp=XMP)) as im:
        replaced = save_bytes(im, xmp=b"<y/>", icc_profile=b"")
    with _opened(replaced) as im:
        assert im.info["xmp"] == b"<y/>"
        assert "icc_profile" not in im.info


def test_xmp_as_text():
    with _opened(save_bytes(sample_image("L"), xmp=XMP.decode())) as im:
        assert im.info["xmp"] == XMP


def test_getexif_without_exif_is_empty():
    with _opened(save_bytes(sample_image("L"))) as im:
        assert "exif" not in im.info
        assert dict(im.getexif()) == {}
        assert im._getexif() is None


def test_cicp_is_the_effective_tuple():
    with _opened(save_bytes(sample_image("RGB"))) as im:
        assert im.info["cicp"] == (1, 13, 0, 1)  # sRGB, the default of RGB layouts (1.0)
    with _opened(save_bytes(sample_image("CMYK"))) as im:
        assert im.info["cicp"] == (2, 2, 0, 1)


def test_unknown_safe_to_copy_chunks_are_carried_into_a_resaved_file():
    data = imij_plugins.encode(
        np.zeros((2, 3), np.uint8), chunks=[(b"tEXt", b"kept", "before"), (b"zAPP", b"dropped", "after")]
    )
    with _opened(data) as im:
        assert im.info["imij_chunks"] == [(b"tEXt", b"kept", "before")]  # zAPP: unsafe to copy (1.1)
        again = save_bytes(im)
    with imij_plugins.open(again) as f:
        assert f.extra_chunks() == [(b"tEXt", b"kept", "before")]


def test_page_metadata_is_the_pages_own(monkeypatch):
    """Pages carry their own description (1.3: nothing is inherited); info follows seek."""
    data = save_bytes(sample_image("L"), save_all=True, append_images=[sample_image("RGB")], pages=True, xmp=XMP)
    with _opened(data) as im:
        assert im.info["xmp"] == XMP
        im.seek(1)
        assert "xmp" not in im.info  # the core writes metadata for the first page only (for now)
        im.seek(0)
        assert im.info["xmp"] == XMP


MASTERING = md.MasteringDisplay((35400, 14600), (8500, 39850), (6550, 2300), (15635, 16450), 10_000_000, 50)
LIGHT = md.ContentLightLevel(10_000_000, 4_000_000)


def _hdr() -> bytes:
    a = np.random.default_rng(4).integers(0, 65536, (6, 5, 3), dtype=np.uint16)
    return imij_plugins.encode(
        a, cicp=(9, 16, 0, 1), mastering_display=MASTERING, content_light_level=LIGHT, diffuse_white=203.0
    )


def test_hdr_records_reach_info():
    with _opened(_hdr()) as im:
        assert im.info["cicp"] == (9, 16, 0, 1)
        assert im.info["mastering_display"] == MASTERING
        assert im.info["content_light_level"] == LIGHT
        assert im.info["diffuse_white"] == md.DiffuseWhite.from_nits(203.0)
        assert im.info["imij_bit_depth"] == 16


def test_what_is_safe_to_copy_survives_open_save_open():
    """CICP and mDCv are safe to copy (1.1, lower-case fourth letter); cLLI and dWHI describe the
    pixels and are written only when passed."""
    with _opened(_hdr()) as im:
        resaved = save_bytes(im)
        passed = save_bytes(im, content_light_level=LIGHT, diffuse_white=im.info["diffuse_white"])
    with _opened(resaved) as im:
        assert im.info["cicp"] == (9, 16, 0, 1)
        assert im.info["mastering_display"] == MASTERING
        assert "content_light_level" not in im.info and "diffuse_white" not in im.info
    with _opened(passed) as im:
        assert im.info["content_light_level"] == LIGHT
        assert im.info["diffuse_white"] == md.DiffuseWhite.from_nits(203.0)


def test_cicp_parameter_and_a_layout_default_left_to_the_new_layout():
    with _opened(save_bytes(sample_image("RGB"), cicp=(9, 18, 0, 1))) as im:
        assert im.info["cicp"] == (9, 18, 0, 1)
    with _opened(save_bytes(sample_image("CMYK"))) as im:
        converted = im.convert("RGB")
    assert converted.info["cicp"] == (2, 2, 0, 1)
    with _opened(save_bytes(converted)) as im:
        assert im.info["cicp"] == (1, 13, 0, 1)  # the CMYK default is not carried into an RGB file


def test_science_records_reach_info_and_are_written_only_when_passed():
    calibration = md.Calibration((md.ChannelCalibration(slope=0.5, offset=-3.0, unit="K"),))
    data = imij_plugins.encode(np.arange(6, dtype=np.uint16).reshape(2, 3), science={"calibration": calibration})
    with _opened(data) as im:
        assert im.info["imij_science"].calibration == calibration
        resaved = save_bytes(im)
        passed = save_bytes(im, science={"calibration": calibration})
    with _opened(resaved) as im:
        assert "imij_science" not in im.info  # unsafe to copy (1.5): an edited image drops them
    with _opened(passed) as im:
        assert im.info["imij_science"].calibration == calibration


def test_a_malformed_record_keeps_the_pixels_and_says_why():
    data = imij_plugins.encode(np.full((2, 3), 9, np.uint8), icc_profile=b"icc", chunks=[(b"dWHI", b"\x7f\x80\x00\x00", "before")])
    with pytest.warns(UserWarning, match="IMI metadata not read"):
        im = _opened(data)
    with im:
        assert "diffuse_white" in im.info["imij_metadata_error"]
        assert im.info["icc_profile"] == b"icc"  # one bad chunk hides nothing else
        assert im.getpixel((0, 0)) == 9


def test_header_orientation_shows_in_getexif_and_exif_transpose():
    a = np.arange(6, dtype=np.uint8).reshape(2, 3)
    with _opened(imij_plugins.encode(a, orientation=6)) as im:
        assert "exif" not in im.info
        assert im.getexif()[ExifTags.Base.Orientation] == 6
        upright = ImageOps.exif_transpose(im)
    assert upright.size == (2, 3)
    assert np.array_equal(np.asarray(upright), np.rot90(a, -1))
    with imij_plugins.open(save_bytes(upright)) as f:
        assert f.header.orientation == 1  # transposed: saved upright, not rotated twice


def test_orientation_survives_open_save_open():
    with _opened(imij_plugins.encode(np.zeros((2, 3), np.uint8), orientation=8)) as im:
        resaved = save_bytes(im)
    with imij_plugins.open(resaved) as f:
        assert f.header.orientation == 8
    with imij_plugins.open(save_bytes(sample_image("L"), exif=_exif())) as f:
        assert f.header.orientation == 6  # the Exif Orientation becomes the header's too
    with imij_plugins.open(save_bytes(sample_image("L"), exif=_exif(), orientation=1)) as f:
        assert f.header.orientation == 1


def test_an_unparsable_exif_is_written_and_has_no_orientation():
    im = sample_image("L")
    im.info["exif"] = b"not exif"
    with imij_plugins.open(save_bytes(im)) as f:
        assert f.metadata["exif"] == b"not exif" and f.header.orientation == 1


@pytest.mark.parametrize("mode", ["RGB", "I;16", "F"])
def test_metadata_with_every_kind_of_sample(mode):
    with _opened(save_bytes(sample_image(mode), exif=_exif())) as im:
        assert im.getexif()[ExifTags.Base.Make] == "imij"


def _exif_with_thumbnail() -> bytes:
    """Little-endian Exif with IFD0 (Make) and an IFD1 describing a 4-byte JPEG thumbnail, as a
    camera writes it (``flower.jpg`` of Pillow's test images); Pillow's Exif writer has no IFD1."""
    ifd0 = struct.pack("<H", 1) + struct.pack("<HHI4s", 0x010F, 2, 4, b"cam\x00") + struct.pack("<I", 26)
    ifd1 = struct.pack("<H", 3) + b"".join(
        struct.pack("<HHII", tag, kind, 1, value) for tag, kind, value in ((0x0103, 3, 6), (0x0201, 4, 68), (0x0202, 4, 4))
    )
    return b"II*\x00" + struct.pack("<I", 8) + ifd0 + ifd1 + struct.pack("<I", 0) + b"\xff\xd8\xff\xd9"


def _jpeg(**params: object) -> Image.Image:
    buf = io.BytesIO()
    sample_image("RGB").save(buf, format="JPEG", **params)
    im = Image.open(buf)
    im.load()
    return im


@pytest.mark.skipif(not hasattr(ExifTags, "IFD"), reason="Pillow reads IFD1 from 9.4")
def test_the_thumbnail_ifd_survives_when_dpi_joins_the_exif():
    source = _jpeg(exif=b"Exif\x00\x00" + _exif_with_thumbnail(), dpi=(300, 300))
    assert source.info["dpi"] == (300, 300)
    with _opened(save_bytes(source)) as out:
        exif = out.getexif()
        assert exif[ExifTags.Base.Make] == "cam"
        assert dict(exif.get_ifd(ExifTags.IFD.IFD1)) == dict(source.getexif().get_ifd(ExifTags.IFD.IFD1))
        thumbnail_at = exif.get_ifd(ExifTags.IFD.IFD1)[0x0201]
        assert out.info["exif"][6 + thumbnail_at : 6 + thumbnail_at + 4] == b"\xff\xd8\xff\xd9"  # still where IFD1 says
        assert out.info["dpi"] == pytest.approx((300, 300))


@pytest.mark.parametrize(
    "raw",
    [b"\xff\xff\xff\xff\x00\x00\x00\x08\x00\x00", b"MM\x00*\x00\x00\x00"],  # invalid-exif.jpg, truncated_exif_dpi.jpg
    ids=["bad-header", "truncated"],
)
def test_exif_that_does_not_parse_is_carried_through_and_the_dpi_left_out_with_a_warning(raw):
    source = _jpeg(dpi=(72, 72))
    source.info["exif"] = b"Exif\x00\x00" + raw
    with pytest.warns(UserWarning, match=r"dpi \(72.0, 72.0\) not written"):
        data = save_bytes(source)
    with _opened(data) as out:
        assert out.info["exif"] == b"Exif\x00\x00" + raw  # as Pillow's PNG, WebP, JPEG and TIFF writers keep it
        assert "dpi" not in out.info


def test_an_unknown_resolution_of_0_0_in_info_is_left_out():
    """DCX and PCX files say (0, 0) when they carry no resolution (``hopper.dcx``)."""
    source = sample_image("RGB")
    source.info["dpi"] = (0, 0)
    with _opened(save_bytes(source)) as out:
        assert "dpi" not in out.info and "exif" not in out.info
    with pytest.raises(ValueError, match="dpi"):
        save_bytes(source, dpi=(0, 0))  # a resolution passed to save is still checked


def _pillow_dpi(exif: bytes) -> tuple[float, float] | None:
    """The dpi Pillow reads from Exif resolution tags (the reference the core's reader follows)."""
    tags = Image.Exif()
    try:
        with warnings.catch_warnings():  # Pillow warns about the truncated Exif
            warnings.simplefilter("ignore")
            tags.load(exif)
        x, y, unit = tags.get(282), tags.get(283), tags.get(296, 2)
        if x is None or y is None or unit not in (2, 3) or not float(x) > 0 or not float(y) > 0:
            return None
        return float(x) * (2.54 if unit == 3 else 1.0), float(y) * (2.54 if unit == 3 else 1.0)
    except Exception:
        return None


def _resolution_exif(order: str, x: tuple[int, int], y: tuple[int, int], unit: tuple[int, int] | None) -> bytes:
    """Exif (TIFF header onward) with IFD0 XResolution and YResolution (RATIONAL) and ResolutionUnit
    given as (type, value), written by hand so byte order, types and bad values can be chosen."""
    mark = b"II" if order == "<" else b"MM"
    entries = [(282, 5, 1, None), (283, 5, 1, None)] + ([(296, unit[0], 1, unit[1])] if unit else [])
    values_at = 8 + 2 + 12 * len(entries) + 4
    out = mark + struct.pack(order + "HI", 42, 8) + struct.pack(order + "H", len(entries))
    for index, (tag, kind, count, value) in enumerate(entries):
        if value is None:
            field = struct.pack(order + "I", values_at + 8 * index)
        else:
            field = struct.pack(order + ("H" if kind == 3 else "I"), value).ljust(4, b"\0")
        out += struct.pack(order + "HHI", tag, kind, count) + field
    return out + struct.pack(order + "I", 0) + struct.pack(order + "4I", *x, *y)


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize(
    ("x", "y", "unit"),
    [((300, 1), (150, 1), (3, 2)), ((72, 1), (72, 1), None), ((1181, 10), (1181, 10), (3, 3)),
     ((300, 1), (300, 1), (4, 3)), ((300, 1), (300, 1), (3, 1)), ((300, 0), (300, 1), (3, 2)), ((0, 1), (1, 1), None)],
)
def test_the_reader_takes_the_dpi_pillow_reads_from_exif(order, x, y, unit):
    """The core reads Exif resolution itself (no Pillow in the core); it agrees with Pillow's
    ``Image.Exif`` on whole and on every truncation of the Exif."""
    exif = _resolution_exif(order, x, y, unit)
    for end in (len(exif), *range(0, len(exif), 5)):
        data = imij_plugins.encode(np.zeros((2, 2), np.uint8), exif=exif[:end])
        with imij_plugins.open(data) as f:
            found = f.metadata.get("dpi")
        expected = _pillow_dpi(exif[:end])
        assert found == (pytest.approx(expected) if expected else None), end
