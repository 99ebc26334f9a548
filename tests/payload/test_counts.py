"""payload/counts.py: value counts of narrow words, the C kernel against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.counts import distinct_values, histogram

from .entropy.backends import NEEDS_C, both


@NEEDS_C
@pytest.mark.parametrize("dtype,D", [(np.uint8, 1), (np.uint8, 8), (np.uint16, 10), (np.uint16, 16)])
def test_histogram_kernel(dtype, D):
    """Counts of every value (runs of one value, odd lengths, strided views, channels of pixels
    counted in place), as bincount finds them; a value of more than D bits is refused."""
    rng = np.random.default_rng(D)
    for shape in ((1, 1), (3, 5), (64, 67)):
        words = rng.integers(0, 1 << D, shape).astype(dtype)
        words[:, : shape[1] // 2] = words[0, 0]  # runs of one value
        pixels = np.stack([words, words[::-1]], axis=-1)  # (h, w, 2): one channel is one step apart
        for view in (words, words[:, ::2], pixels[..., 0], pixels[..., 1], pixels[::2, :, 1], pixels[:, ::-1, 0]):
            x, y = both(histogram, view, D)
            assert x.tolist() == y.tolist() and x.sum() == view.size
    if D < 8 * np.dtype(dtype).itemsize:
        with _backend.use("c"), pytest.raises(ValueError):
            histogram(np.array([[1 << D]], dtype=dtype), D)


@pytest.mark.parametrize("size", [1, 300, 1 << 10, (1 << 10) + 1, 5000])
def test_distinct_values_either_way(size):
    """Sorted copy (at most 2^D words) or histogram (more): the same sorted distinct values."""
    rng = np.random.default_rng(size)
    words = rng.integers(0, 1 << 10, size).astype(np.uint16)
    got = distinct_values(words, 10)
    assert got.dtype == np.int64 and got.tolist() == sorted(set(words.tolist()))


@pytest.mark.parametrize("shape,index,stride", [((4, 5, 3), (Ellipsis, 1), 3), ((4, 5), (slice(None), slice(None)), 1),
                                                ((4, 5, 3), (slice(None), slice(None, None, 2), 0), 0),
                                                ((1, 5, 4), (0, slice(None), 2), 4), ((4, 1, 3), (Ellipsis, 2), 3)])
def test_word_stride(shape, index, stride):
    """A view's words are counted in place when they lie one step apart in C order (0: copied)."""
    from imij_plugins.payload.counts import _word_stride

    assert _word_stride(np.zeros(shape, np.uint8)[index]) == stride
