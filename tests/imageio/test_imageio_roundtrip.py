"""Round trips through iio.imwrite / iio.imread: every sample type and layout, batches, pages."""

from __future__ import annotations

import io
from fractions import Fraction

import imageio.v3 as iio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import imij_plugins
from imij_plugins.imageio import ImiPlugin
from imij_plugins.registry.samples import LAYOUTS, SAMPLE_TYPES

DTYPES = [np.dtype(s.dtype) for s in SAMPLE_TYPES.values()]
DTYPE_BY_NAME = {s.name: np.dtype(s.dtype) for s in SAMPLE_TYPES.values()}
LAYOUT_CHANNELS = {c.name: c.channels for c in LAYOUTS.values()}

# bit patterns a float round trip must keep: -0.0, quiet and signalling NaNs with payloads,
# negative NaN, infinities, the smallest subnormal
SPECIAL_BITS = {
    2: [0x8000, 0x7E01, 0x7C01, 0xFE3F, 0x7C00, 0xFC00, 0x0001],
    4: [0x80000000, 0x7FC00001, 0x7F800001, 0xFFC12345, 0x7F800000, 0xFF800000, 0x00000001],
    8: [1 << 63, 0x7FF8000000000001, 0x7FF0000000000001, 0xFFF8DEADBEEF0000, 0x7FF0 << 48, 0xFFF0 << 48, 1],
}


def random_image(dtype: np.dtype, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random bits of ``dtype`` (every value, NaN payloads included), specials first for floats."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(shape).copy()
    if dtype.kind == "f":
        bits = np.array(SPECIAL_BITS[dtype.itemsize], dtype=f"<u{dtype.itemsize}")
        n = min(bits.size, a.size)
        a.reshape(-1)[:n] = bits[:n].view(dtype)
    return a


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("layout", list(LAYOUT_CHANNELS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_and_layout(registered, tmp_path, dtype, layout):
    channels = LAYOUT_CHANNELS[layout]
    shape = (7, 9) if channels == 1 else (7, 9, channels)
    a = random_image(dtype, shape)
    path = tmp_path / "a.imi"
    iio.imwrite(path, a, layout=layout)
    b = iio.imread(path)
    assert same_bits(a, b), (dtype, layout)
    props = iio.improps(path)
    assert (props.shape, props.dtype, props.is_batch, props.n_images) == (shape, dtype, False, None)
    meta = iio.immeta(path)
    assert (meta["layout"], DTYPE_BY_NAME[meta["sample"]]) == (layout, dtype)


def test_gray_with_a_channel_axis_reads_as_2d(registered, tmp_path):
    a = random_image(np.dtype(np.uint16), (4, 5, 1))
    iio.imwrite(tmp_path / "g.imi", a)
    assert same_bits(a[:, :, 0], iio.imread(tmp_path / "g.imi"))


def test_big_endian_input_reads_back_native(registered, tmp_path):
    a = random_image(np.dtype(">f4"), (4, 5, 3))
    iio.imwrite(tmp_path / "be.imi", a)
    b = iio.imread(tmp_path / "be.imi")
    assert b.dtype == np.dtype("<f4") and b.tobytes() == a.astype("<f4").tobytes()


@pytest.mark.parametrize("dtype", ["<u8", "<i8", "<f8"])
@pytest.mark.parametrize("shape", [(1, 1, 2), (6, 7)], ids=["1x1x2", "6x7"])
def test_64_bit_samples_with_constant_words(registered, tmp_path, dtype, shape):
    """A 64-bit sample is two coded words; constant high words (and a 1x1 image's constant
    everything) take the Const map, which numpy 1.x once refused to join with the other word."""
    low = np.random.default_rng(7).integers(0, 2**32, size=shape, dtype=np.uint64)
    for high in (0, 0xDEADBEEF):
        a = ((np.uint64(high) << np.uint64(32)) | low).view(dtype)
        iio.imwrite(tmp_path / "w.imi", a)
        assert same_bits(a, iio.imread(tmp_path / "w.imi"))


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    height=st.integers(1, 40),
    width=st.integers(1, 40),
    channels=st.sampled_from([None, 2, 3, 4]),
    seed=st.integers(0, 2**32 - 1),
)
def test_bytes_round_trip_any_shape(dtype, height, width, channels, seed):
    shape = (height, width) if channels is None else (height, width, channels)
    a = random_image(dtype, shape, seed)
    data = iio.imwrite("<bytes>", a, plugin=ImiPlugin)
    assert isinstance(data, bytes) and data[:4] == b"IMIJ"
    assert same_bits(a, iio.imread(data, plugin=ImiPlugin))


def test_bytes_target_with_extension(registered):
    a = random_image(np.dtype(np.int16), (6, 6, 2))
    data = iio.imwrite("<bytes>", a, extension=".imi")
    assert same_bits(a, iio.imread(data))
    assert same_bits(a, iio.imread(data, extension=".imi"))


def test_file_object_target(registered):
    a = random_image(np.dtype(np.uint8), (6, 6, 3))
    buffer = io.BytesIO()
    iio.imwrite(buffer, a, extension=".imi")
    buffer.seek(0)
    assert same_bits(a, iio.imread(buffer, extension=".imi"))


# --- batches: animations and pages -------------------------------------------------------


def frames(n: int = 4, shape: tuple[int, ...] = (12, 10, 3), dtype=np.uint16) -> list[np.ndarray]:
    """Frames that change in a moving patch, so later ones are stored as cropped updates."""
    base = random_image(np.dtype(dtype), shape, 1)
    out = []
    for i in range(n):
        f = base.copy()
        f[i : i + 3, 2 * i : 2 * i + 3] = i
        out.append(f)
    out.append(out[-1].copy())  # an unchanged frame (stored empty)
    return out


def test_animation_from_a_list(registered, tmp_path):
    seq = frames()
    path = tmp_path / "anim.imi"
    iio.imwrite(path, seq, durations=np.array([0.1, 0.2, 0.3, 0.25, 1.5]), loop=3)  # any sequence
    stack = iio.imread(path)  # index=None: every frame of an animation
    assert stack.shape == (5, 12, 10, 3) and same_bits(np.stack(seq), stack)
    assert same_bits(seq[2], iio.imread(path, index=2))
    assert same_bits(seq[-1], iio.imread(path, index=-1))
    for a, b in zip(seq, iio.imiter(path), strict=True):
        assert same_bits(a, b)
    props = iio.improps(path)
    assert (props.shape, props.n_images, props.is_batch) == ((5, 12, 10, 3), 5, True)
    assert iio.improps(path, index=1).shape == (12, 10, 3)
    meta = iio.immeta(path)
    assert (meta["kind"], meta["n_images"], meta["loop"]) == ("animation", 5, 3)
    assert [iio.immeta(path, index=i)["duration"] for i in range(5)] == [
        Fraction(1, 10), Fraction(1, 5), Fraction(3, 10), Fraction(1, 4), Fraction(3, 2)
    ]
    assert iio.immeta(path, index=4)["empty"] and iio.immeta(path, index=4)["header"] is None


def test_animation_from_a_batch_array(registered, tmp_path):
    batch = np.stack([f[..., 0] for f in frames()])  # (N, H, W): gray frames
    iio.imwrite(tmp_path / "b.imi", batch, is_batch=True, durations=0.04)
    assert same_bits(batch, iio.imread(tmp_path / "b.imi"))
    assert same_bits(batch, iio.imread(tmp_path / "b.imi", index=...))


def test_batch_of_one_stays_a_batch(registered, tmp_path):
    batch = random_image(np.dtype(np.float32), (1, 4, 4, 3))
    iio.imwrite(tmp_path / "one.imi", batch, is_batch=True)
    assert same_bits(batch, iio.imread(tmp_path / "one.imi"))


def test_pages_same_shape(registered, tmp_path):
    seq = frames()
    path = tmp_path / "pages.imi"
    iio.imwrite(path, seq, pages=True)
    assert iio.immeta(path)["kind"] == "pages"
    assert same_bits(seq[0], iio.imread(path))  # index=None: page 0 of a document
    assert same_bits(np.stack(seq), iio.imread(path, index=...))
    assert same_bits(seq[3], iio.imread(path, index=3))
    props = iio.improps(path, index=...)
    assert (props.shape, props.n_images, props.is_batch) == ((5, 12, 10, 3), 5, True)


def test_mixed_pages(registered, tmp_path):
    seq = [
        random_image(np.dtype(np.uint8), (5, 7, 3), 1),
        random_image(np.dtype(np.float64), (3, 4), 2),
        random_image(np.dtype(np.int32), (9, 2, 4), 3),
    ]
    path = tmp_path / "mixed.imi"
    iio.imwrite(path, seq, pages=True, durations=[1, 2, 3])
    assert iio.immeta(path)["kind"] == "mixed pages"
    for i, (a, b) in enumerate(zip(seq, iio.imiter(path), strict=True)):
        assert same_bits(a, b)
        assert same_bits(a, iio.imread(path, index=i))
        props = iio.improps(path, index=i)
        assert (props.shape, props.dtype) == (a.shape, a.dtype)
    page = iio.immeta(path, index=1)
    assert (page["duration"], page["header"]["layout"], page["header"]["sample"]) == (2, "Gray", "f64")
    with pytest.raises(ValueError, match=r"iter\(\)"):
        iio.imread(path, index=...)
    with pytest.raises(ValueError, match=r"iter\(\)"):
        iio.improps(path, index=...)


def test_animation_frames_must_agree(registered, tmp_path):
    with pytest.raises(ValueError, match="pages=True"):
        iio.imwrite(tmp_path / "x.imi", [np.zeros((2, 2), np.uint8), np.zeros((3, 2), np.uint8)])
    assert not (tmp_path / "x.imi").exists()


def test_a_4d_array_needs_is_batch(registered, tmp_path):
    with pytest.raises(ValueError, match="is_batch=True"):
        iio.imwrite(tmp_path / "x.imi", np.zeros((2, 3, 3, 3), np.uint8))


@pytest.mark.parametrize("dtype", ["u1", "u2", "i2", "i4"])
def test_near_lossless_write_stays_within_max_error(registered, tmp_path, dtype):
    image = random_image(np.dtype(dtype), (24, 40, 3), seed=3)
    path = tmp_path / "near.imi"
    iio.imwrite(path, image, max_error=4)
    back = iio.imread(path)
    assert back.dtype == image.dtype and back.shape == image.shape
    assert np.abs(back.astype(np.int64) - image.astype(np.int64)).max() <= 4
    # 2.6: bounds exist for u8, u16, u32 and i32 only; other samples are written exactly
    assert ("near_lossless" in iio.immeta(path)["features"]) == (dtype != "i2")
    assert dtype != "i2" or np.array_equal(back, image)


def test_codec_choice(registered, tmp_path):
    image = random_image(np.dtype("u1"), (16, 16, 3))
    iio.imwrite(tmp_path / "q.imi", image, codec="quick")
    assert "quick_pixels" in iio.immeta(tmp_path / "q.imi")["features"]
    assert np.array_equal(iio.imread(tmp_path / "q.imi"), image)


def test_any_encode_option_passes_through_and_unknown_ones_are_refused(registered):
    a = np.arange(64 * 48, dtype=np.uint8).reshape(48, 64)
    data = iio.imwrite("<bytes>", a, extension=".imi", dpi=(300, 300), previews=(4,), stripe_rows=8)
    meta = iio.immeta(data, extension=".imi")
    assert meta["dpi"] == pytest.approx((300, 300))
    with imij_plugins.open(data) as f:
        assert [p.width for p in f.previews()] == [16]
    with pytest.raises(TypeError, match="durations= in seconds"):
        iio.imwrite("<bytes>", a, extension=".imi", duration=100)
    with pytest.raises(ValueError, match="stripe_rows"):
        iio.imwrite("<bytes>", a, extension=".imi", stripe_rows=0)


def test_write_takes_the_writers_option_names_and_refuses_others_by_name(registered):
    frames = [np.full((3, 4), v, np.uint8) for v in (1, 2)]
    data = iio.imwrite("<bytes>", frames, extension=".imi", loop_count=2, durations=0.5)  # the reader's name for loop
    assert iio.immeta(data, extension=".imi")["loop"] == 2
    with pytest.raises(TypeError, match="efort"):
        iio.imwrite("<bytes>", frames[0], extension=".imi", efort=3)
    with pytest.raises(ValueError, match="pages=True"):
        iio.imwrite("<bytes>", frames, extension=".imi", pages=True, kind="animation")
    data = iio.imwrite("<bytes>", frames, extension=".imi", kind="pages")
    assert iio.immeta(data, extension=".imi")["kind"] == "pages"
