"""``ImageFile.LOAD_TRUNCATED_IMAGES``: a cut or damaged file loads the units that decoded and
black (0) elsewhere, as Pillow's PNG and JPEG decoders do; without the flag, load() is Corrupt."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import pytest
from PIL import Image, ImageFile, UnidentifiedImageError

import imij_plugins

from . import helper  # noqa: F401  (registers the plugin)

ROWS, UNITS = 8, 5
SOURCE = np.random.default_rng(11).integers(0, 256, (ROWS * UNITS, 20, 3), dtype=np.uint8)


@pytest.fixture
def truncated_ok() -> Iterator[None]:
    """LOAD_TRUNCATED_IMAGES on for the test, restored after it."""
    saved = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = saved


def _encoded(codec: str) -> tuple[bytes, list[int]]:
    """The source as IMI bytes and the file offset where each unit record ends."""
    data = imij_plugins.encode(SOURCE, stripe_rows=ROWS, codec=codec)
    with imij_plugins.open(data) as f:
        return data, [u.end for u in f.payload().units]


def _load(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return np.asarray(im)


@pytest.mark.parametrize("codec", ["quick", "entropy"])
def test_a_cut_file_loads_its_leading_units(codec, truncated_ok):
    data, ends = _encoded(codec)
    for cut in sorted({*ends[:-1], *(e - 3 for e in ends), ends[0] - (ends[1] - ends[0]) // 2}):
        count = sum(1 for e in ends if e <= cut)
        pixels = _load(data[:cut])
        np.testing.assert_array_equal(pixels[: count * ROWS], SOURCE[: count * ROWS])
        assert not pixels[count * ROWS :].any()


@pytest.mark.parametrize("codec", ["quick", "entropy"])
def test_without_the_flag_a_cut_file_is_corrupt_at_load(codec):
    data, ends = _encoded(codec)
    assert not ImageFile.LOAD_TRUNCATED_IMAGES
    for cut in (ends[0], ends[2] - 3, len(data) - 1):
        with Image.open(io.BytesIO(data[:cut])) as im:
            assert im.size == (20, ROWS * UNITS)
            with pytest.raises(imij_plugins.Corrupt):
                im.load()


def test_a_cut_header_is_still_unidentified(truncated_ok):
    data, _ = _encoded("quick")
    with pytest.raises(UnidentifiedImageError):
        Image.open(io.BytesIO(data[:11]))


def test_a_corrupt_middle_unit_keeps_the_others(truncated_ok):
    data, ends = _encoded("quick")
    mutated = bytearray(data)
    mutated[ends[2] - (ROWS * 20 * 3 + 1)] = 9  # unit 2's mode byte: not a quick mode (2.13)
    pixels = _load(bytes(mutated))
    expected = SOURCE.copy()
    expected[2 * ROWS : 3 * ROWS] = 0
    np.testing.assert_array_equal(pixels, expected)


def test_a_later_frame_cut_short_loads_partially(truncated_ok):
    frames = [np.roll(SOURCE, seed, axis=1) for seed in range(3)]
    data = imij_plugins.encode(frames, stripe_rows=ROWS, codec="quick", durations=0.04)
    cut = len(data) - 5  # inside the last frame's last unit
    with Image.open(io.BytesIO(data[:cut])) as im:
        assert im.n_frames == 3
        im.seek(1)
        im.load()
        np.testing.assert_array_equal(np.asarray(im), frames[1])
        im.seek(2)
        im.load()
        last = np.asarray(im)
    np.testing.assert_array_equal(last[: 4 * ROWS], frames[2][: 4 * ROWS])
    assert not last[4 * ROWS :].any()
