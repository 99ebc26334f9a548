"""The mode table (imij_plugins/pillow/modes.py) tested both ways: as data, and through real files."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import imij_plugins
from imij_plugins.pillow import modes
from imij_plugins.registry.samples import LAYOUTS, SAMPLE_TYPES

from .helper import assert_image_equal, reopen, sample_image, save_bytes, with_header

# Pillow modes that open back as another mode (the saved file is the canonical mode's)
CANONICAL = {"RGBX": "RGB", "I;16L": "I;16", "I;16B": "I;16", "I;16N": "I;16", "P": "RGB", "PA": "RGBA"}


# --- the table as data -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(modes.SAVE_MODES))
def test_every_saved_mode_opens_as_its_canonical_mode(mode):
    entry = modes.SAVE_MODES[mode]
    dtype = np.dtype(f"{entry.sample[0]}{int(entry.sample[1:]) // 8}")
    bits = (entry.sig_bits,) if entry.sig_bits is not None else ()
    opened = modes.open_mode(entry.layout, dtype, bits, entry.alpha_mode)
    assert opened.mode == CANONICAL.get(mode, mode)
    assert opened.lossless or mode == "1"  # 1 is "nonzero is white": its stored 0/1 come back


@pytest.mark.parametrize("key", sorted(modes.OPEN_MODES, key=str))
def test_every_opened_mode_saves_back_to_the_same_layout(key):
    layout, sample, bits = key
    entry = modes.OPEN_MODES[key]
    target = modes.SAVE_MODES[entry.mode]
    assert target.layout == layout
    assert target.sig_bits == (None if entry.convert == modes.SCALE else bits)  # a scaled view is full 8-bit L
    if entry.convert == modes.EXACT and entry.mode not in ("I", "F"):
        assert target.sample == sample  # I and F widen: i8/i16/u32 -> i32, f16 -> f32, values exact
    if entry.convert == modes.HIGH_BYTE:
        assert target.sample == "u8"


def test_every_layout_and_sample_type_is_either_a_mode_or_refused_with_a_nominal_mode():
    for layout in LAYOUTS.values():
        for sample in SAMPLE_TYPES.values():
            dtype = np.dtype(sample.dtype)
            entry = modes.open_mode(layout.name, dtype)
            if entry is None:
                assert Image.getmodebands(modes.nominal_mode(layout.name, dtype)) in (1, layout.channels)
                assert "imij_plugins.read" in modes.unsupported_message(layout.name, dtype)
            else:
                assert Image.getmodebands(entry.mode) == layout.channels


def test_pillow_cannot_hold_what_the_table_refuses():
    refused = {(layout.name, s.name) for layout in LAYOUTS.values() for s in SAMPLE_TYPES.values()} - {
        (layout, sample) for layout, sample, _ in modes.OPEN_MODES
    }
    assert ("Oklab", "u8") in refused and ("Gray", "u64") in refused and ("RGB", "f32") in refused
    assert ("Gray", "f64") in refused and ("RGB", "i16") in refused


def test_one_significant_bit_selects_mode_1():
    assert modes.open_mode("Gray", np.dtype(np.uint8), (1,)).mode == "1"
    assert modes.open_mode("Gray", np.dtype(np.uint8), (2,)).mode == "L"
    assert modes.open_mode("Gray", np.dtype(np.uint8), (8,)).mode == "L"
    assert modes.open_mode("Gray", np.dtype(np.uint16), (1,)).mode == "I;16"


# --- through real files ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["1", "L", "LA", "La", "RGB", "RGBA", "RGBa", "CMYK", "I;16", "I", "F"])
def test_round_trip_is_exact(mode):
    im = sample_image(mode)
    out = reopen(save_bytes(im))
    assert_image_equal(out, im)


@pytest.mark.parametrize("mode", ["RGBX", "I;16B", "I;16L", "P", "PA"])
def test_round_trip_through_the_canonical_mode(mode):
    im = sample_image(mode)
    out = reopen(save_bytes(im))
    assert_image_equal(out, im.convert(CANONICAL[mode]))


def test_mode_1_is_stored_as_0_1_with_one_significant_bit():
    im = sample_image("1")
    with imij_plugins.open(save_bytes(im)) as f:
        assert (f.layout, f.dtype, f.header.effective_sig_bits) == ("Gray", np.uint8, (1,))
        assert np.array_equal(f.read()[..., 0], np.asarray(im).astype(np.uint8))


def test_a_one_bit_gray_file_opens_as_mode_1():
    bits = np.random.default_rng(3).integers(0, 2, (6, 9), dtype=np.uint8)
    data = with_header(imij_plugins.encode(bits), sig_bits=(1,))
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == "1"
        assert_image_equal(im, Image.fromarray(bits.astype(bool)))


@pytest.mark.parametrize("transparency", [False, True])
def test_palette_with_a_gray_palette_is_stored_as_l_or_la(transparency):
    im = Image.fromarray(np.arange(60, dtype=np.uint8).reshape(6, 10), "L").convert("P")
    im.putpalette(bytes(v for i in range(256) for v in (i, i, i)))
    if transparency:
        im.info["transparency"] = 5
    with imij_plugins.open(save_bytes(im)) as f:
        assert f.layout == ("GrayAlpha" if transparency else "Gray")
    assert_image_equal(reopen(save_bytes(im)), im.convert("LA" if transparency else "L"))


def test_palette_with_transparency_is_stored_as_rgba():
    im = sample_image("P")
    im.info["transparency"] = 7
    assert_image_equal(reopen(save_bytes(im)), im.convert("RGBA"))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint32])
def test_integer_gray_opens_as_i_exactly(dtype):
    info = np.iinfo(dtype)
    a = np.array([[info.min, 0, 1], [info.max if dtype != np.uint32 else 2**31 - 1, -1 if info.min else 7, 5]], dtype)
    out = reopen(imij_plugins.encode(a))
    assert out.mode == "I"
    assert np.array_equal(np.asarray(out), a.astype(np.int64))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_float_gray_opens_as_f_exactly(dtype):
    a = np.array([[np.nan, -0.0, np.inf], [1.5, -2.25, 65504]], dtype)
    out = reopen(imij_plugins.encode(a))
    assert out.mode == "F"
    assert np.asarray(out).astype(dtype).tobytes() == a.tobytes()


@pytest.mark.parametrize(("channels", "mode", "layout"), [(2, "LA", None), (3, "RGB", None), (4, "RGBA", None), (4, "CMYK", "CMYK")])
def test_sixteen_bit_colour_opens_as_eight_bit_with_the_stored_depth_in_info(channels, mode, layout):
    a = np.random.default_rng(1).integers(0, 65536, (5, 4, channels), dtype=np.uint16)
    with Image.open(io.BytesIO(imij_plugins.encode(a, layout=layout))) as im:
        assert im.mode == mode
        assert im.info["imij_bit_depth"] == 16
        assert np.array_equal(np.asarray(im).reshape(a.shape), (a >> 8).astype(np.uint8))  # PNG's RGB;16B
        assert np.array_equal(im.imij.read(), a)  # the exact samples


@pytest.mark.parametrize(
    ("array", "layout", "nominal"),
    [
        (np.zeros((3, 4, 3), np.uint8), "Oklab", "RGB"),
        (np.zeros((3, 4, 4), np.uint8), "OklabAlpha", "RGBA"),
        (np.zeros((3, 4), np.uint64), None, "I"),
        (np.zeros((3, 4), np.int64), None, "I"),
        (np.zeros((3, 4), np.float64), None, "F"),
        (np.zeros((3, 4, 3), np.float32), None, "RGB"),
        (np.zeros((3, 4, 3), np.int16), None, "RGB"),
        (np.zeros((3, 4, 2), np.float16), None, "LA"),
    ],
)
def test_what_pillow_cannot_hold_opens_and_refuses_at_load(array, layout, nominal):
    with Image.open(io.BytesIO(imij_plugins.encode(array, layout=layout))) as im:
        assert im.mode == nominal
        with pytest.raises(imij_plugins.Unsupported, match="imij_plugins.read"):
            im.load()
        assert np.array_equal(im.imij.read(), array.reshape(im.imij.shape))


def test_u32_above_the_int32_range_refuses_at_load():
    with Image.open(io.BytesIO(imij_plugins.encode(np.array([[2**31]], np.uint32)))) as im:
        assert im.mode == "I"
        with pytest.raises(imij_plugins.Unsupported, match="2\\*\\*31"):
            im.load()


@pytest.mark.parametrize("mode", ["YCbCr", "LAB", "HSV"])
def test_modes_without_an_imi_form_are_refused(mode, tmp_path):
    im = Image.new(mode, (3, 2))
    with pytest.raises(OSError, match=f"cannot write mode {mode} as IMI"):
        save_bytes(im)
    path = tmp_path / "x.imi"
    with pytest.raises(OSError):
        im.save(path)
    assert not path.exists()  # Image.save removes the file it created


@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(["L", "LA", "La", "RGB", "RGBA", "RGBa", "CMYK", "I;16", "I", "F", "1", "P"]),
    width=st.integers(1, 40),
    height=st.integers(1, 20),
    seed=st.integers(0, 2**32 - 1),
    effort=st.integers(1, 9),
)
def test_any_size_and_content_round_trips(mode, width, height, seed, effort):
    im = sample_image(mode, (width, height), seed)
    assert_image_equal(reopen(save_bytes(im, effort=effort)), im.convert(CANONICAL.get(mode, mode)))


def test_load_failures_are_oserrors_as_pillow_programs_expect():
    """Pillow's convention: load() raises OSError; the core's error class and message stay."""
    with Image.open(io.BytesIO(imij_plugins.encode(np.zeros((2, 3, 3), np.float32)))) as im:
        with pytest.raises(OSError, match="imij_plugins.read") as caught:
            im.load()
    assert isinstance(caught.value, imij_plugins.Unsupported)
    assert isinstance(caught.value.__cause__, imij_plugins.Unsupported)
    damaged = bytearray(imij_plugins.encode(np.arange(4096, dtype=np.uint8).reshape(64, 64), checksum=True))
    damaged[-20] ^= 0xFF
    try:
        with Image.open(io.BytesIO(bytes(damaged))) as im:
            im.load()
    except OSError as e:  # the usual except clause of a Pillow program catches it
        assert isinstance(e, imij_plugins.Corrupt)
    else:
        raise AssertionError("a damaged file loaded")


def _png_with_key(mode: str, key: object, array: np.ndarray) -> Image.Image:
    """A PNG with a tRNS colour key, opened: what ``1_trns.png``, ``l_trns.png``, ``i_trns.png`` and
    ``rgb_trns.png`` of Pillow's test images are (a mode without alpha and ``info["transparency"]``)."""
    buf = io.BytesIO()
    Image.fromarray(array).convert(mode).save(buf, format="PNG", transparency=key)
    im = Image.open(buf)
    im.load()
    assert im.mode == mode and im.info["transparency"] == key
    return im


@pytest.mark.parametrize(
    ("mode", "key", "alpha_mode"),
    [("1", 255, "LA"), ("L", 7, "LA"), ("RGB", (1, 2, 3), "RGBA")],
)
def test_a_transparency_key_is_stored_as_alpha(mode, key, alpha_mode):
    rng = np.random.default_rng(5)
    array = rng.integers(0, 8, (9, 11, 3), dtype=np.uint8) if mode == "RGB" else rng.integers(0, 8, (9, 11), dtype=np.uint8)
    if mode == "1":
        array = array * 255 // 7
    array[0, :3] = key if mode != "1" else 255  # the key occurs
    source = _png_with_key(mode, key, array)
    out = reopen(save_bytes(source))
    assert out.mode == alpha_mode
    assert_image_equal(out.convert("RGBA"), source.convert("RGBA"))
    assert 0 in np.asarray(out)[..., -1]


def test_a_transparency_key_on_16_bit_gray_keeps_every_bit_as_16_bit_gray_alpha():
    array = np.arange(99, dtype=np.uint16).reshape(9, 11) * 661
    source = Image.fromarray(array)  # as PNG opens 16-bit gray with tRNS (Pillow 9.4's PNG writer cannot make one)
    source.info["transparency"] = 661 * 5
    data = save_bytes(source)
    stored = imij_plugins.read(data)
    assert stored.dtype == np.uint16 and stored.shape == (9, 11, 2)
    assert (stored[..., 0] == array).all()
    assert (stored[..., 1] == np.where(array == 661 * 5, 0, 0xFFFF)).all()
    out = reopen(data)  # Pillow has no 16-bit mode with alpha: LA from the high byte, as 16-bit PNG
    assert out.mode == "LA"
    assert (np.asarray(out)[..., 0] == array >> 8).all()


def test_frames_with_a_transparency_key_animate_with_alpha():
    """A GIF frame without a palette opens as L (or RGB) with ``info["transparency"]``."""
    frames = [sample_image("L", seed=s) for s in (1, 2)]
    frames[0].info["transparency"] = int(np.asarray(frames[0])[0, 0])
    with Image.open(io.BytesIO(save_bytes(frames[0], save_all=True, append_images=frames[1:]))) as im:
        assert im.mode == "LA" and im.n_frames == 2
        for index, frame in enumerate(frames):
            im.seek(index)
            assert_image_equal(im.convert("RGBA"), frame.convert("RGBA"), f"frame {index}")


@pytest.mark.parametrize(("bits", "factor"), [(2, 85), (4, 17), (3, 255 / 7)])
def test_gray_of_fewer_significant_bits_opens_scaled_to_eight_bits(bits, factor):
    """A 2- or 4-bit gray TIFF or PNG opens in Pillow as L spanning 0..255 ("L;2", "L;4"); so does
    IMI gray whose samples declare that many right-aligned significant bits (1.0)."""
    values = np.arange(1 << bits, dtype=np.uint8).reshape(1, -1)
    data = imij_plugins.encode(imij_plugins.Frame(values[:, :, None], "Gray", (bits,)))
    out = reopen(data)
    assert out.mode == "L"
    assert (np.asarray(out) == np.round(values * factor).astype(np.uint8)).all()
    assert (imij_plugins.read(data)[..., 0] == values).all()  # the stored samples are unchanged
