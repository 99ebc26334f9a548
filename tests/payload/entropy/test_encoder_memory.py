"""The encoder's narrow planes and block-wise stream writer (streams.py, csrc/encode.c): kernels on
uint8 / uint16 / uint32 inputs agree with each other and with the Python references, streams of
many row blocks (runs crossing blocks) match the writer's coder, and one encode stays within a
small multiple of its input (5)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import stats
from imij_plugins.payload.entropy.encoder import encode_tuned
from imij_plugins.payload.entropy.modeling import SlotStats, choose_model, effort_of
from imij_plugins.payload.entropy.palettes import lookup8, palette
from imij_plugins.payload.entropy.residuals import residuals
from imij_plugins.payload.entropy.scratch import value_dtype
from imij_plugins.payload.entropy.search import choose, costs
from imij_plugins.payload.entropy.streams import stream

from .backends import NEEDS_C, both


def _smooth(rng: np.random.Generator, S: int, h: int, w: int, n: int) -> np.ndarray:
    """S planes of n-bit coded values: a gradient, noise and a flat band (zero runs)."""
    y, x = np.mgrid[0:h, 0:w]
    planes = (x[None] * np.arange(1, S + 1)[:, None, None] + 3 * y[None] + rng.integers(0, 4, (S, h, w)))
    planes[:, h // 3 : h // 2] = 7
    return (planes % (1 << n)).astype(value_dtype([n]))


@NEEDS_C
@pytest.mark.parametrize("n", [8, 12, 16, 24])
def test_kernels_read_every_width_alike(n):
    rng = np.random.default_rng(n)
    planes = _smooth(rng, 3, 9, 300, n)
    depths = [n] * 3
    with _backend.use("c"):
        wide = costs(planes.astype(np.uint32), depths, 16, True, 0x7F, 0xF, 1, 1)
        narrow = costs(planes, depths, 16, True, 0x7F, 0xF, 1, 1)
        assert np.array_equal(wide, narrow)
        mode, preds, _ = choose(narrow, 0xF)
        u = residuals(planes, depths, 16, preds, mode)
        assert u.dtype == value_dtype(depths)
        assert np.array_equal(u, residuals(planes.astype(np.uint32), depths, 16, preds, mode))
        x = stats(u[1], u[0], 16, 0, 4)
        y = stats(u[1].astype(np.uint32), u[0].astype(np.uint32), 16, 0, 4)
        assert all(np.array_equal(p, q) for xa, ya in zip(x, y) for p, q in zip(xa, ya))
        assert palette(planes) is None or palette(planes)[0] == palette(planes.astype(np.uint32))[0]
    ub = both(residuals, planes, depths, 16, preds, mode)[1]
    assert np.array_equal(u, ub)


@pytest.mark.parametrize("n", [8, 12, 24])
def test_residuals_in_place(backend, n):
    """Residuals written over their own planes (each row read before it is replaced, 32-bit words
    too) equal those into a new array, with decorrelation and every intra predictor in turn."""
    rng = np.random.default_rng(40 + n)
    planes = _smooth(rng, 3, 14, 130, n)
    depths = [n] * 3
    preds = [0] + [int(p) for p in rng.integers(0, 7, 13)]
    for mode in (0, 3):
        want = residuals(planes, depths, 5, preds, mode)
        work = planes.copy()
        got = residuals(work, depths, 5, preds, mode, in_place=True)
        assert got is work and np.array_equal(got, want)
    with pytest.raises(ValueError):
        residuals(planes[:, :, ::2], depths, 5, preds, 0, in_place=True)  # not contiguous


@NEEDS_C
@pytest.mark.parametrize("seed", range(3))
def test_streams_of_many_blocks_match_the_writers_coder(seed):
    """Units of several 16384-position blocks, with zero runs crossing the blocks' rows."""
    rng = np.random.default_rng(300 + seed)
    h, w = int(rng.integers(40, 70)), int(rng.integers(700, 1100))
    lanes = int(rng.integers(1, 17))
    u = rng.integers(0, 40, (h, w)).astype(np.uint8)
    u[rng.random((h, w)) < 0.3] = 0
    u[10:30] = 0  # long runs across rows and blocks
    u[35:, : w // 2] = 0
    u0 = rng.integers(0, 20, (h, w)).astype(np.uint8)
    with _backend.use("c"):
        plain, cross = stats(u, u0, lanes, 0, 4)
    model = choose_model({False: SlotStats(*plain), True: SlotStats(*cross)}, 8, 0, effort_of(9))
    a, b = both(stream, u, u0, lanes, model.enc)
    assert a == b
    with _backend.use("c"):
        assert stream(u.astype(np.uint32), u0.astype(np.uint16), lanes, model.enc) == a


@NEEDS_C
def test_stream_output_grows_past_the_first_buffer():
    """Noise that does not compress needs the second, worst-case output buffer."""
    rng = np.random.default_rng(5)
    u = rng.integers(0, 1 << 16, (64, 512)).astype(np.uint16)
    with _backend.use("c"):
        plain, _ = stats(u, None, 16, 0, 4)
    model = choose_model({False: SlotStats(*plain)}, 16, 0, effort_of(1))
    a, b = both(stream, u[:8], None, 16, model.enc)
    assert a == b


@NEEDS_C
def test_stream_of_three_ops_per_position_fits_the_bound():
    """32-bit residuals of 17 or more extra bits everywhere, 16 lanes: 3 ops per position."""
    rng = np.random.default_rng(6)
    u = (rng.integers(1 << 30, 1 << 31, (4, 256)) | 1).astype(np.uint32)
    with _backend.use("c"):
        plain, _ = stats(u, None, 16, 16, 4)
    model = choose_model({False: SlotStats(*plain)}, 32, 16, effort_of(1))
    a, b = both(stream, u, None, 16, model.enc)
    assert a == b


@NEEDS_C
@pytest.mark.parametrize("threads", [1, 2])
def test_encode_memory_stays_near_the_input(threads):
    """5: one encode of a mid-size photo-like image peaks below twice its size (tracemalloc), on
    two threads too: below a megapixel they share one statistics sum (about 80 KiB per slot and
    cross variant; a copy per thread measured 2.45x on a 512 x 512 photo)."""
    rng = np.random.default_rng(9)
    y, x = np.mgrid[0:512, 0:512]
    img = np.stack([(x + y) // 3, (2 * x + y) // 5, (x + 3 * y) // 7], axis=-1) + rng.integers(0, 8, (512, 512, 3))
    img = (img % 256).astype(np.uint8)
    assert _encode_peak(img, threads) < 2 * img.nbytes


def _encode_peak(img: np.ndarray, threads: int) -> int:
    """tracemalloc's peak over one encode on the C kernels, after one that settles caches."""
    with _backend.use("c"):
        encode_tuned(img, threads=threads)
        tracemalloc.start()
        try:
            encode_tuned(img, threads=threads)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


@NEEDS_C
def test_float_encode_memory_stays_near_the_input():
    """5: a float32 channel whose distinct values only a whole pass finds too many for a value
    table peaks below 1.8x its size in one encode (tracemalloc; 1.57x measured). Sorting a
    whole-channel copy for its distinct values peaked at 2.13x."""
    rng = np.random.default_rng(4)
    y, x = np.mgrid[0:1024, 0:512]
    img = (np.round(np.sin(x / 40.0) * np.cos(y / 60.0) * 1000) / 10).astype(np.float32)
    # the strided sample (every 8th word: columns 0, 8, ...) sees about 2,000 values, the rows more
    img[:, 1::8] += rng.random(img[:, 1::8].shape).astype(np.float32)
    assert _encode_peak(img, 1) < 1.8 * img.nbytes


@NEEDS_C
def test_lookup8_agrees_and_does_not_widen_the_plane():
    """imij_enc_lookup8 maps a uint8 plane through a short table as numpy's indexing does, without
    its intp copy of the plane: a palette's index plane of 2^16 pixels (16-bit values, 200 levels)
    costs about a byte a pixel, not nine."""
    rng = np.random.default_rng(3)
    lut = rng.permutation(200).astype(np.uint8)
    plane = rng.integers(0, 200, (300, 217), dtype=np.uint8)
    a, b = both(lookup8, lut, plane)
    assert a.dtype == np.uint8 and np.array_equal(a, b) and np.array_equal(a, lut[plane])
    planes = (rng.integers(0, 200, (1, 256, 256)) * 300).astype(np.uint16)
    with _backend.use("c"):
        palette(planes)
        tracemalloc.start()
        try:
            entries, index = palette(planes)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(entries) == len(np.unique(planes)) and peak < 3 * index.size


@NEEDS_C
def test_map_choice_of_many_distinct_16_bit_values_stays_small():
    """A 256 x 256 16-bit channel whose words are nearly all distinct: the map choice tests its
    candidates on the distinct values (as many as the words) EXACT_CHUNK at a time. Whole-array
    tests made several 64-bit temporaries of them: the encode peaked at 7.5x its input."""
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:256, 0:256]
    img = ((np.sin(x / 20) * np.cos(y / 30) + 1) * 20000 + rng.integers(0, 64, (256, 256))).astype(np.uint16)
    assert _encode_peak(img, 1) < 5 * img.nbytes
