"""Each input format to IMI and back out, pixels and metadata compared through the public API."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image, PngImagePlugin

import imij_plugins
from imij_plugins.convert import ConvertOptions, convert_file, difference, read_source

from .conftest import noise

XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF/></x:xmpmeta>'


def to_imi(src: Path, **options: object) -> Path:
    """Convert ``src`` beside itself to IMI and assert it converted."""
    dst = src.with_name(src.name + ".imi")
    record = convert_file(src, dst, ConvertOptions(**options))  # type: ignore[arg-type]
    assert record.status == "converted", record.reason
    assert record.bytes_in == src.stat().st_size and record.bytes_out == dst.stat().st_size
    return dst


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shape, dtype and bytes, after (H, W) becomes (H, W, 1)."""
    a, b = (x if x.ndim == 3 else x[:, :, None] for x in (np.asarray(a), np.asarray(b)))
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def png_samples(path: Path) -> np.ndarray:
    """A PNG's samples as Pillow reads them, 16-bit gray as uint16 on every Pillow (Pillow 9 opens
    it as int32 mode I): checked against the bit depth and colour type of the file's IHDR."""
    with Image.open(path) as im:
        array = np.asarray(im)
        if im.mode == "I":
            assert path.read_bytes()[24:26] == b"\x10\x00"  # 16-bit gray
            array = array.astype(np.uint16)
    return array


def back_out(imi: Path, fmt: str) -> Path:
    """Convert an IMI file out to ``fmt`` and assert it reads back equal to the IMI file's pixels."""
    dst = imi.with_suffix("." + fmt)
    record = convert_file(imi, dst, ConvertOptions(to=fmt))
    assert record.status == "converted", record.reason
    assert difference(read_source(imi), read_source(dst)) is None
    return dst


@pytest.mark.parametrize(
    "array",
    [noise((9, 11)), noise((9, 11), np.uint16), noise((9, 11, 2)), noise((9, 11, 3)), noise((9, 11, 4))],
    ids=["L", "I;16", "LA", "RGB", "RGBA"],
)
def test_png_to_imi_and_back_exact(tmp_path, array):
    src = tmp_path / "in.png"
    Image.fromarray(array).save(src)
    imi = to_imi(src)
    assert same_bits(imij_plugins.read(imi), array)
    assert same_bits(png_samples(back_out(imi, "png")), array)
    assert same_bits(tifffile.imread(back_out(imi, "tiff")), array)
    assert same_bits(np.load(back_out(imi, "npy")), array)


def test_palette_png_is_stored_expanded(tmp_path):
    src = tmp_path / "pal.png"
    Image.fromarray(noise((8, 8, 3))).quantize(7).save(src)
    assert same_bits(imij_plugins.read(to_imi(src)), np.asarray(Image.open(src).convert("RGB")))


@pytest.mark.parametrize("name, save", [("in.jpg", {"quality": 85}), ("in.webp", {"lossless": True}), ("in.bmp", {}), ("in.ppm", {})])
def test_pillow_formats_to_imi_exact(tmp_path, name, save):
    src = tmp_path / name
    Image.fromarray(noise((10, 12, 3))).save(src, **save)
    assert same_bits(imij_plugins.read(to_imi(src)), np.asarray(Image.open(src)))


def test_gif_animation_keeps_frames_durations_and_loop(mixed):
    src = mixed / "sub" / "anim.gif"
    imi = to_imi(src)
    with Image.open(src) as gif, imij_plugins.open(imi) as f:
        assert (f.kind, f.n_frames, f.loop_count) == ("animation", 3, 3)
        assert [f.frame_info(i).duration for i in range(3)] == [Fraction(40, 1000), Fraction(80, 1000), Fraction(120, 1000)]
        for i in range(3):
            gif.seek(i)
            assert same_bits(f.read(i), np.asarray(gif.convert("RGB")))
    with Image.open(back_out(imi, "png")) as apng:  # back out as APNG
        assert (apng.n_frames, apng.info["loop"]) == (3, 3)
        assert [apng.seek(i) or apng.info["duration"] for i in range(3)] == [40, 80, 120]


def test_tiff_pages_keep_mixed_dtypes(mixed):
    src = mixed / "sub" / "stack.tif"
    imi = to_imi(src)
    with tifffile.TiffFile(src) as tif, imij_plugins.open(imi) as f:
        assert f.kind == "mixed pages" and f.n_frames == 3
        for i, page in enumerate(tif.pages):
            assert same_bits(f.read(i), page.asarray())
    back = back_out(imi, "tiff")
    with tifffile.TiffFile(back) as tif:
        assert [p.dtype for p in tif.pages] == [np.uint16, np.float32, np.int16]


def test_planar_tiff(tmp_path):
    src = tmp_path / "planar.tiff"
    planes = noise((3, 7, 9), np.uint16)
    tifffile.imwrite(src, planes, photometric="rgb", planarconfig="separate")
    assert same_bits(imij_plugins.read(to_imi(src)), np.moveaxis(planes, 0, -1))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8])
def test_npy_to_imi_and_back(tmp_path, dtype):
    src = tmp_path / "a.npy"
    array = noise((6, 5, 3), dtype)
    np.save(src, array)
    imi = to_imi(src)
    assert same_bits(imij_plugins.read(imi), array)
    assert same_bits(np.load(back_out(imi, "npy")), array)


def test_png_metadata_survives_imi_and_back(tmp_path):
    src = tmp_path / "meta.png"
    icc = bytes(range(256)) * 2
    exif = Image.Exif()
    exif[0x010F] = "imij"  # Make
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", XMP.decode())
    Image.fromarray(noise((6, 6, 3))).save(src, icc_profile=icc, exif=exif, pnginfo=info, dpi=(300, 150))
    imi = to_imi(src)
    meta = imij_plugins.open(imi).metadata
    assert meta["icc_profile"] == icc and meta["xmp"] == XMP
    assert meta["dpi"] == pytest.approx((300, 150), rel=1e-3)
    with Image.open(back_out(imi, "png")) as out:
        xmp = out.info.get("xmp") or out.info["XML:com.adobe.xmp"].encode()  # the iTXt key on Pillow 9
        assert out.info["icc_profile"] == icc and xmp == XMP
        assert out.info["dpi"] == pytest.approx((300, 150), rel=1e-3)
        assert out.getexif()[0x010F] == "imij"


def test_16_bit_pgm_is_stored_as_u16(tmp_path):
    """Pillow opens a 16-bit PGM, like Pillow 9 a 16-bit PNG, as int32 mode I: stored at its own depth."""
    src = tmp_path / "deep.pgm"
    array = noise((9, 11), np.uint16)
    src.write_bytes(b"P5 11 9 65535\n" + array.astype(">u2").tobytes())
    assert same_bits(imij_plugins.read(to_imi(src)), array)


def test_jpeg_xmp_survives(tmp_path):
    src = tmp_path / "x.jpg"
    jpeg = io.BytesIO()
    Image.fromarray(noise((8, 8, 3))).save(jpeg, format="JPEG")
    segment = b"http://ns.adobe.com/xap/1.0/\x00" + XMP
    app1 = b"\xff\xe1" + struct.pack(">H", len(segment) + 2) + segment  # right after SOI, as cameras write it
    src.write_bytes(jpeg.getvalue()[:2] + app1 + jpeg.getvalue()[2:])
    assert imij_plugins.open(to_imi(src)).metadata["xmp"] == XMP


def test_mpo_metadata_is_the_first_frames(tmp_path):
    """Pillow leaves a later MPO frame's XMP in info after seeking back to frame 0: not the file's."""
    first, second = (Image.fromarray(noise((8, 8, 3))) for _ in range(2))
    second.encoderinfo = {"xmp": XMP}  # only the second frame's JPEG carries XMP
    src = tmp_path / "pair.mpo"
    first.save(src, "MPO", save_all=True, append_images=[second])
    with Image.open(src) as im:
        assert im.n_frames == 2 and "xmp" not in im.info
    assert read_source(src).metadata.xmp is None


def test_tiff_metadata_survives_imi_and_back(tmp_path):
    src = tmp_path / "meta.tif"
    icc = b"\x01" * 300
    tifffile.imwrite(src, noise((5, 4, 3)), photometric="rgb", iccprofile=icc, resolution=(72, 96), resolutionunit="INCH",
                     extratags=[(700, "B", len(XMP), XMP, True)], metadata=None)
    imi = to_imi(src)
    assert imij_plugins.open(imi).metadata["xmp"] == XMP
    with tifffile.TiffFile(back_out(imi, "tiff")) as tif:
        tags = tif.pages.first.tags
        assert tags[34675].value == icc and bytes(tags[700].value) == XMP
        assert tags[282].value == (72, 1) and tags[283].value == (96, 1)


def test_tiff_descriptive_tags_and_orientation_become_exif(tmp_path):
    src = tmp_path / "camera.tif"
    exif = Image.Exif()
    exif[0x010F], exif[0x0110], exif[0x0112] = "imij", "model 7", 6  # Make, Model, Orientation
    Image.fromarray(noise((5, 4, 3))).save(src, tiffinfo=exif, dpi=(200, 200))
    imi = to_imi(src)
    with imij_plugins.open(imi) as f:
        assert f.metadata["orientation"] == 6 and f.metadata["dpi"] == pytest.approx((200, 200))
    with Image.open(back_out(imi, "png")) as out:
        tags = out.getexif()
        assert (tags[0x010F], tags[0x0110], tags[0x0112]) == ("imij", "model 7", 6)
        assert out.info["dpi"] == pytest.approx((200, 200), rel=1e-3)


def tiff_with_exif_ifd(pixels: bytes, width: int, height: int) -> bytes:
    """A little-endian 8-bit gray TIFF, built by hand (neither Pillow nor tifffile writes an Exif
    IFD into a TIFF), whose IFD0 has Make and points (tag 34665) at an Exif IFD holding
    ExposureTime 1/250 (RATIONAL), DateTimeOriginal (ASCII) and a pointer (tag 40965) to an
    Interoperability IFD holding InteropIndex "R98"."""
    date, make = b"2024:01:02 03:04:05\x00", b"imij\x00"
    n0, n1, n2 = 10, 3, 1
    exif_ifd = 8 + 2 + 12 * n0 + 4
    interop_ifd = exif_ifd + 2 + 12 * n1 + 4
    rational_at = interop_ifd + 2 + 12 * n2 + 4
    date_at = rational_at + 8
    make_at = date_at + len(date)
    strip_at = make_at + len(make)

    def entry(tag: int, typ: int, count: int, value: int | bytes) -> bytes:
        if isinstance(value, bytes):
            packed = value.ljust(4, b"\x00")  # a value of 4 bytes or fewer, inline
        else:
            packed = struct.pack("<HH", value, 0) if typ == 3 else struct.pack("<I", value)  # SHORT, else LONG/offset
        return struct.pack("<HHI", tag, typ, count) + packed

    ifd0 = [entry(256, 3, 1, width), entry(257, 3, 1, height), entry(258, 3, 1, 8), entry(259, 3, 1, 1),
            entry(262, 3, 1, 1), entry(271, 2, len(make), make_at), entry(273, 4, 1, strip_at),
            entry(278, 3, 1, height), entry(279, 4, 1, len(pixels)), entry(34665, 4, 1, exif_ifd)]
    ifd1 = [entry(33434, 5, 1, rational_at), entry(36867, 2, len(date), date_at), entry(40965, 4, 1, interop_ifd)]
    ifd2 = [entry(1, 2, 4, b"R98\x00")]
    return (b"II*\x00" + struct.pack("<IH", 8, n0) + b"".join(ifd0) + struct.pack("<IH", 0, n1) + b"".join(ifd1)
            + struct.pack("<IH", 0, n2) + b"".join(ifd2) + struct.pack("<III", 0, 1, 250) + date + make + pixels)


def test_tiff_exif_ifd_becomes_exif(tmp_path):
    src = tmp_path / "camera.tif"
    array = noise((3, 4))
    src.write_bytes(tiff_with_exif_ifd(array.tobytes(), 4, 3))
    imi = to_imi(src)
    assert same_bits(imij_plugins.read(imi), array)
    exif = Image.Exif()
    exif.load(b"Exif\x00\x00" + imij_plugins.open(imi).metadata["exif"])
    assert exif[0x010F] == "imij"
    exif_ifd = exif.get_ifd(0x8769)
    assert (exif_ifd[33434], exif_ifd[36867]) == (Fraction(1, 250), "2024:01:02 03:04:05")
    assert exif.get_ifd(0xA005) == {1: "R98"}  # the Interoperability IFD, not a stale offset
    with Image.open(back_out(imi, "png")) as out:
        assert out.getexif().get_ifd(0x8769)[36867] == "2024:01:02 03:04:05"


def test_reader_is_chosen_by_content(tmp_path):
    src = tmp_path / "really_a_png.tif"
    array = noise((5, 5, 3))
    Image.fromarray(array).save(src, format="PNG")
    assert read_source(src).reader == "pillow:PNG"
    assert same_bits(imij_plugins.read(to_imi(src)), array)
    npy = io.BytesIO()
    np.save(npy, array)
    (tmp_path / "array.png").write_bytes(npy.getvalue())
    assert read_source(tmp_path / "array.png").reader == "npy"


@pytest.mark.parametrize("fmt, message", [("png", "PNG cannot hold Gray f32"), ("npy", "holds one image")])
def test_outputs_that_cannot_hold_the_input_fail_clearly(mixed, fmt, message):
    src = mixed / "sub" / "stack.tif"
    if fmt == "png":
        src = mixed / "f.tif"
        tifffile.imwrite(src, noise((4, 4), np.float32))
    record = convert_file(src, src.with_suffix("." + fmt), ConvertOptions(to=fmt))
    assert record.status == "failed" and message in record.reason
    assert not src.with_suffix("." + fmt).exists()


def test_near_lossless_is_checked_within_the_bound(tmp_path):
    src = tmp_path / "n.npy"
    np.save(src, noise((16, 16), np.uint16))
    imi = to_imi(src, encode=imij_plugins.EncodeOptions(max_error=3))
    error = np.abs(imij_plugins.read(imi)[..., 0].astype(int) - np.load(src).astype(int))
    assert error.max() <= 3


def test_verify_catches_a_decoder_that_changes_a_sample(tmp_path, monkeypatch):
    src = tmp_path / "v.png"
    Image.fromarray(noise((8, 8, 3))).save(src)
    read = imij_plugins.ImijFile.read

    def corrupt(self, *args, **kwargs):
        out = read(self, *args, **kwargs)
        out[0, 0, 0] ^= 1
        return out

    monkeypatch.setattr(imij_plugins.ImijFile, "read", corrupt)
    record = convert_file(src, tmp_path / "v.imi", ConvertOptions())
    assert record.status == "failed" and record.reason == "verify: image 0: 1 samples differ"
    assert not (tmp_path / "v.imi").exists()
    assert convert_file(src, tmp_path / "v.imi", ConvertOptions(verify=False)).status == "converted"


def test_a_tga_read_first_does_not_shadow_later_formats(tmp_path):
    """Pillow 13 registers only the plugin of a file's extension before ``Image.init()``: a TGA
    opened first put TGA, which accepts almost any header, before ICO (pillow.ico read as TGA)."""
    Image.fromarray(noise((4, 4, 3))).save(tmp_path / "first.tga")
    script = (
        "import sys; from PIL import Image; from imij_plugins.convert import read_source; "
        "read_source(sys.argv[1]); ids = list(Image.ID); print(ids.index('ICO') < ids.index('TGA'))"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "first.tga")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
