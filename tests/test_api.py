"""The core API through real files: round trips of every sample type and layout, options, errors."""

import io
import os

import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported
from imij_plugins.payload.quick.unit import MODE_BIT_SMART, MODE_PACKETS, MODE_RAW
from imij_plugins.registry.samples import LAYOUTS, SAMPLE_TYPES

SIGNATURE = b"IMIJ\r\n\x87\n"
SIZES = [(1, 1), (1, 9), (9, 1), (7, 13)]


def make(shape, dtype, seed=0):
    """Random samples of any dtype, float bit patterns (NaN payloads, -0.0) included."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("sample", sorted(SAMPLE_TYPES))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_round_trip_every_sample_and_layout(sample, layout, backend):
    st, lay = SAMPLE_TYPES[sample], LAYOUTS[layout]
    for h, w in SIZES:
        a = make((h, w, lay.channels), st.dtype, seed=h * 31 + w)
        data = imij_plugins.encode(a, layout=lay.name)
        f = imij_plugins.open(data)
        assert (f.header.sample, f.header.channels) == (sample, layout)
        assert f.dtype == np.dtype(st.dtype) and f.layout == lay.name
        assert same_bits(f.read(), a)


@pytest.mark.parametrize("effort", [1, 5])
def test_each_quick_mode_is_chosen_and_decodes(effort, backend):
    noise = make((16, 16, 3), "<u1", seed=1)  # raw wins
    smooth = np.repeat(np.arange(16, dtype=np.uint8)[None, :, None], 16, 0).repeat(3, 2)  # packets
    lowbits = (make((32, 32, 1), "<u2", seed=2) & 0x00F3).astype("<u2")  # bit-smart planes
    for array, mode in ((noise, MODE_RAW), (smooth, MODE_PACKETS), (lowbits, MODE_BIT_SMART)):
        if (mode == MODE_BIT_SMART) != (effort >= 4):
            mode = None  # effort 1 never writes bit-smart units; at 5 they may beat packets too
        f = imij_plugins.open(imij_plugins.encode(array, effort=effort, codec="quick"))
        payload = f.payload()
        first = payload.units[0]
        used = payload.buf[first.body_start]
        if mode is not None:
            assert used == mode
        assert same_bits(f.read(), array.reshape(f.shape))
        assert ("quick_bit_smarts" in f.features) == (used == MODE_BIT_SMART)


def test_two_dimensional_input_reads_as_one_channel(tmp_path):
    a = np.arange(12, dtype=np.uint16).reshape(3, 4)
    path = tmp_path / "g.imi"
    imij_plugins.write(path, a)
    assert path.read_bytes().startswith(SIGNATURE)
    out = imij_plugins.read(path)
    assert out.shape == (3, 4, 1) and (out[..., 0] == a).all()


def test_bool_array_stores_as_u8():
    a = np.eye(5, dtype=bool)
    assert (imij_plugins.read(imij_plugins.encode(a))[..., 0] == a.astype(np.uint8)).all()


def test_big_endian_input_is_stored_exactly():
    a = np.arange(20, dtype=">u2").reshape(4, 5)
    assert (imij_plugins.read(imij_plugins.encode(a))[..., 0] == a).all()


def test_sources_path_bytes_and_file_object(tmp_path):
    a = make((5, 6, 3), "<u1")
    path = tmp_path / "x.imi"
    imij_plugins.write(str(path), a)
    data = path.read_bytes()
    for src in (path, str(path), data, bytearray(data), memoryview(data), io.BytesIO(data)):
        assert same_bits(imij_plugins.read(src), a)


def test_write_to_file_object():
    buf = io.BytesIO()
    imij_plugins.write(buf, make((2, 2, 3), "<u1"))
    assert buf.getvalue().startswith(SIGNATURE)


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "keep.imi"
    imij_plugins.write(path, make((4, 4, 3), "<u1"))
    before = path.read_bytes()
    with pytest.raises(TypeError):
        imij_plugins.write(path, np.zeros((4, 4, 3), dtype=np.complex64))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["keep.imi"]  # no temporary left behind


@pytest.mark.parametrize(
    "array, kwargs, error",
    [
        (np.zeros((2, 2, 5), np.uint8), {}, ValueError),  # 5 channels
        (np.zeros((2, 2, 3), np.uint8), {"layout": "RGBA"}, ValueError),
        (np.zeros((2, 2, 3), np.uint8), {"layout": "XYZ"}, ValueError),
        (np.zeros((0, 2, 3), np.uint8), {}, ValueError),
        (np.zeros((2, 2), np.complex64), {}, TypeError),
    ],
)
def test_write_rejects_what_imi_cannot_hold(array, kwargs, error):
    with pytest.raises(error):
        imij_plugins.encode(array, **kwargs)


@pytest.mark.parametrize("layout, features", [("CMYK", {"pixel_models"}), ("Oklab", {"pixel_models"})])
def test_layouts_declare_their_features(layout, features):
    channels = 4 if layout == "CMYK" else 3
    f = imij_plugins.open(imij_plugins.encode(np.zeros((2, 2, channels), np.float32), layout=layout))
    assert features <= set(f.features) and f.layout == layout


@pytest.mark.parametrize("codec, coded", [("quick", {"quick_pixels"}), ("entropy", set())])
def test_features_declared_exactly(codec, coded):
    f = imij_plugins.open(imij_plugins.encode(np.zeros((2, 2), np.int8), codec=codec))
    assert set(f.features) == {"signed_samples"} | coded
    assert f.profiles == ["Lossless 0.2"]
    f = imij_plugins.open(imij_plugins.encode(np.zeros((2, 2), np.float64), codec=codec))
    assert set(f.features) == {"wide_samples", "samples_32"} | coded
    assert f.profiles == ["Lossless 0.1", "Extended 0.2"]


def test_metadata_chunks_round_trip():
    data = imij_plugins.encode(np.zeros((2, 2, 3), np.uint8), icc_profile=b"icc", exif=b"Exif", xmp=b"<x/>")
    f = imij_plugins.open(data)
    assert {k: f.metadata[k] for k in ("icc_profile", "exif", "xmp")} == {"icc_profile": b"icc", "exif": b"Exif", "xmp": b"<x/>"}
    assert [t for t, _ in f.chunks] == ["iCCP", "eXIf", "xMPp", "DATA"]


@pytest.mark.parametrize("size", [(3, 3), (300, 700), (2000, 40)])
def test_checksum_option_writes_a_verified_table(size):
    a = make(size + (3,), "<u1", seed=3)
    data = imij_plugins.encode(a, checksum=True, stripe_rows=16)
    f = imij_plugins.open(data)
    assert "cSUM" in [t for t, _ in f.chunks] and f.container.piece_table is not None
    assert same_bits(f.read(), a)
    damaged = bytearray(data)
    damaged[-1] ^= 1
    with pytest.raises(Corrupt, match="checksum mismatch"):
        imij_plugins.open(bytes(damaged))
    imij_plugins.open(bytes(damaged), verify=False)  # not verifying: no table check


@pytest.mark.parametrize("geometry", [dict(stripe_rows=4), dict(stripe_rows=5, group_cols=6), dict(group_cols=1)])
def test_region_reads_match_full_reads(geometry, backend):
    a = make((23, 17, 2), "<u2", seed=4)
    f = imij_plugins.open(imij_plugins.encode(a, **geometry))
    full = f.read()
    for region in [(0, 0, 17, 23), (3, 2, 5, 7), (16, 22, 1, 1), (6, 0, 6, 23), (0, 9, 17, 1)]:
        x, y, w, h = region
        assert same_bits(f.read(region=region), full[y : y + h, x : x + w])


def test_region_outside_the_image():
    f = imij_plugins.open(imij_plugins.encode(np.zeros((4, 4), np.uint8)))
    for region in [(0, 0, 5, 4), (-1, 0, 1, 1), (0, 0, 0, 1)]:
        with pytest.raises(ValueError):
            f.read(region=region)


def test_threads_give_the_same_pixels(backend):
    a = make((300, 64, 4), "<u1", seed=5)
    data = imij_plugins.encode(a, stripe_rows=8, threads=4)
    assert same_bits(imij_plugins.read(data, threads=1), a)
    assert same_bits(imij_plugins.read(data, threads=4), a)


def test_too_large_is_refused_before_allocating():
    data = imij_plugins.encode(np.zeros((64, 64, 3), np.uint8), stripe_rows=8, group_cols=8)
    f = imij_plugins.open(data, limits=imij_plugins.Limits(max_image_bytes=1000))
    with pytest.raises(TooLarge):
        f.read()
    assert f.read(region=(0, 0, 8, 8)).shape == (8, 8, 3)


def test_huge_header_dimensions_fail_typed_not_by_allocation():
    # a 2^32-1 square image header over a tiny quick payload
    from tests.test_mutation import quick_file

    data = quick_file(width=2**32 - 1, height=2**32 - 1, units=b"")
    with pytest.raises(ImijError):
        imij_plugins.read(data)


def test_lossy_header_is_unsupported_naming_the_feature():
    data = SIGNATURE + bytes([5, 2, 1, 2, 1, 1]) + b"DATA\x01"  # coding 2, 1x1
    with pytest.raises(Unsupported, match="lossy"):
        imij_plugins.open(data)


def test_backend_attribute():
    assert imij_plugins.backend in ("c", "python")


def test_written_files_get_the_usual_mode(tmp_path):
    import os

    path = tmp_path / "m.imi"
    imij_plugins.write(path, np.zeros((2, 2), np.uint8))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    path.chmod(0o640)
    imij_plugins.write(path, np.zeros((2, 2), np.uint8))
    assert path.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its mode


# --- close, ImageInfo, Frame, previews, dpi ----------------------------------------------------


def _mapped(path) -> bool:
    """Whether ``path`` is mapped into this process (/proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith(str(path)) for line in maps)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_close_releases_the_memory_map_of_every_frame_and_view(tmp_path):
    path = tmp_path / "anim.imi"
    frames = [make((12, 10, 3), np.uint8, seed) for seed in range(3)]
    imij_plugins.write(path, frames, previews=(2,))
    with imij_plugins.open(path) as f:
        f.read(2)
        f.read(1, region=(1, 1, 4, 4))
        assert f.previews()[0].read().shape == (6, 5, 3)
        f.metadata, f.extra_chunks(), f.locator_status
        assert _mapped(path)
    assert not _mapped(path)
    assert f.closed
    with pytest.raises(ValueError, match="closed"):
        f.read(0)
    with pytest.raises(ValueError, match="closed"):
        f.metadata
    f.close()  # again: nothing to do


def test_image_info_describes_every_page_from_its_own_header():
    gray16 = make((5, 7), np.uint16)
    bits1 = (make((4, 4), np.uint8) & 1)
    data = imij_plugins.encode(
        [imij_plugins.Frame(make((6, 8, 4), np.uint8), "CMYK"), gray16, imij_plugins.Frame(bits1, sig_bits=(1,))],
        kind="pages",
        cicp=(9, 16, 0, 1),
    )
    with imij_plugins.open(data) as f:
        assert f.kind == "mixed pages"
        first, second, third = (f.image_info(i) for i in range(3))
        assert (first.layout, first.shape, first.dtype, first.cicp) == ("CMYK", (6, 8, 4), np.uint8, (9, 16, 0, 1))
        assert (second.layout, second.shape, second.dtype, second.sig_bits) == ("Gray", (5, 7, 1), np.uint16, (16,))
        assert (third.sig_bits, third.sample) == ((1,), "u8")
        assert same_bits(f.read(2), bits1[:, :, None])


def test_animation_frames_share_one_description():
    a = make((4, 5), np.uint8)
    with pytest.raises(ValueError, match="sig_bits"):
        imij_plugins.encode([imij_plugins.Frame(a & 1, sig_bits=(1,)), a & 1])
    with pytest.raises(ValueError, match="layout"):
        imij_plugins.Frame(a, layout="Lab")
    data = imij_plugins.encode([imij_plugins.Frame(a & 1, sig_bits=(1,))] * 2)
    with imij_plugins.open(data) as f:
        assert f.image_info(1).sig_bits == (1,)


def test_previews_are_box_averaged_downscales_before_data():
    a = np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) % 1000
    data = imij_plugins.encode(a, previews=(4, 16), stripe_rows=8)
    with imij_plugins.open(data) as f:
        tags = [tag for tag, _ in f.chunks]
        assert tags.index("pRVW") < tags.index("DATA")
        small = [p.read()[:, :, 0] for p in f.previews()]
        assert [s.shape for s in small] == [(12, 16), (3, 4)]
        want = np.floor(a.reshape(12, 4, 16, 4).mean(axis=(1, 3)) + 0.5).astype(np.uint16)
        assert same_bits(small[0], want)
        assert same_bits(f.read()[:, :, 0], a)


def test_dpi_travels_as_exif_resolution_tags():
    exif = bytes.fromhex("4d4d002a00000008000101120003000000010006000000000000")  # Orientation 6, big-endian
    data = imij_plugins.encode(make((3, 4), np.uint8), dpi=(300, 150.5), exif=exif)
    with imij_plugins.open(data) as f:
        assert f.metadata["dpi"] == pytest.approx((300, 150.5))
        from PIL import Image

        tags = Image.Exif()
        tags.load(f.metadata["exif"])
        assert tags[0x0112] == 6  # the caller's Exif is kept
    with imij_plugins.open(imij_plugins.encode(make((3, 4), np.uint8))) as f:
        assert "dpi" not in f.metadata
