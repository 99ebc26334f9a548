"""The model chooser's shortcuts for small images give what the plain formulas give: estimate_bits
(the palette comparison's float estimate, bit for bit), coded_tables of partition's 2-D rows
and of a list of rows, the map choice's exactness test on a channel's distinct words, and the
words present of every channel of a small image counted at once."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins.payload.counts import histogram
from imij_plugins.payload.entropy.context_stats import CLASSES
from imij_plugins.payload.entropy.mapchoice import (
    PRESENCE_WORDS,
    Channel,
    _distinct,
    _exact,
    _first_exact,
    candidate_maps,
    word_presence,
)
from imij_plugins.payload.entropy.maps import REPLICATE, SCALE
from imij_plugins.payload.entropy.modeling import (
    _EXTRA_BITS,
    SlotStats,
    coded_tables,
    estimate_bits,
    estimate_bits_each,
)
from imij_plugins.payload.head import ChannelMap


def _plain_estimate(st: SlotStats) -> float:
    """estimate_bits as first written: per-array sums and masks."""
    tot = (st.vh.sum(axis=1) + st.rh.sum(axis=1)).astype(np.float64)
    used = np.concatenate([st.vh[st.vh != 0], st.rh[st.rh != 0]]).astype(np.float64)
    ent = float((tot * np.log2(np.maximum(tot, 1))).sum() - (used * np.log2(used)).sum())
    extra = _EXTRA_BITS[: st.vh.shape[1]]
    vcol, rcol = st.vh.sum(axis=0, dtype=np.int64), st.rh.sum(axis=0, dtype=np.int64)
    return ent + float(int(vcol @ extra) + int(rcol @ extra))


@pytest.mark.parametrize("buckets", [1, 17, 256, 300, 640])
@pytest.mark.parametrize("seed", range(4))
def test_estimate_bits_is_the_plain_formula(buckets, seed):
    rng = np.random.default_rng(seed)
    vh = (rng.integers(0, 1 << 20, (CLASSES, buckets)) >> rng.integers(0, 21, (CLASSES, buckets))).astype(np.uint32)
    vh[rng.random((CLASSES, buckets)) < 0.7] = 0
    rh = np.zeros((CLASSES, buckets), dtype=np.uint32)
    rh[rng.integers(0, CLASSES, 5), rng.integers(0, buckets, 5)] = rng.integers(1, 100, 5)
    zr = rng.integers(0, 1000, CLASSES).astype(np.uint32)
    st = SlotStats(vh, zr, rh)
    assert estimate_bits(st) == _plain_estimate(st)  # exactly: the palette comparison reads it


def _stats(rng, buckets: int, sparse: float = 0.7) -> SlotStats:
    vh = (rng.integers(0, 1 << 20, (CLASSES, buckets)) >> rng.integers(0, 21, (CLASSES, buckets))).astype(np.uint32)
    vh[rng.random((CLASSES, buckets)) < sparse] = 0
    rh = np.zeros((CLASSES, buckets), dtype=np.uint32)
    rh[rng.integers(0, CLASSES, 5), rng.integers(0, buckets, 5)] = rng.integers(1, 100, 5)
    return SlotStats(vh, rng.integers(0, 1000, CLASSES).astype(np.uint32), rh)


@pytest.mark.parametrize("seed", range(8))
def test_estimate_bits_each_is_estimate_bits(seed):
    """The slots' estimates made together are each slot's own, bit for bit (one width or not)."""
    rng = np.random.default_rng(seed)
    buckets = [256, 256, 256, 256] if seed < 3 else [352] * 3 if seed < 6 else [256, 352]
    stats = [_stats(rng, b, float(rng.random())) for b in buckets]
    if seed == 2:
        stats[1] = SlotStats(*(np.zeros_like(a) for a in (stats[1].vh, stats[1].zr, stats[1].rh)))  # an empty slot
    assert estimate_bits_each(stats) == [estimate_bits(st) for st in stats]


@pytest.mark.parametrize("seed", range(6))
def test_coded_tables_of_rows_as_array_or_list(seed):
    rng = np.random.default_rng(seed)
    ctxs, width = int(rng.integers(1, 5)), int(rng.integers(1, 257))
    H = (rng.integers(0, 1 << 12, (ctxs, width)) >> rng.integers(0, 12, (ctxs, width))).astype(np.int64)
    H[rng.random((ctxs, width)) < 0.5] = 0
    if seed % 3 == 0:
        H[:, -3:] = 0  # trailing symbols no context uses
    if seed % 2 and ctxs > 1:
        H[0] = 0  # an unused context
    H[-1, 0] += 1
    before = H.copy()
    as_array = coded_tables(H, range(1, 9))
    as_list = coded_tables(list(H), range(1, 9))
    assert as_array == as_list
    assert np.array_equal(H, before)  # the caller's rows stay as they were
    for code, freq, cum in as_array:
        assert len(code.codes) == len(freq) == len(cum)
        assert list(cum) == [sum(freq[:i]) for i in range(len(freq))]


@pytest.mark.parametrize("seed", range(8))
def test_map_exactness_of_8_bit_words_by_bits(seed):
    """_first_exact's 8-bit path (the words present as bits against each map's exact words)
    picks what testing the channel's distinct words one map at a time picks."""
    rng = np.random.default_rng(seed)
    bits = int(rng.integers(1, 8))
    levels = rng.integers(0, 1 << bits, (24, 20))
    word = ((levels * 255) // ((1 << bits) - 1)).astype(np.uint8)  # Scale content: exact at ``bits``
    if seed % 2:
        word[rng.integers(0, 24), rng.integers(0, 20)] ^= 1  # one stray value: no scaled map is exact
    ch = Channel(0, word, "u", 8, 0, "u8", False, False)
    tests = sorted([(b, r, ChannelMap(mode, b, 0)) for b in range(1, 8) for r, mode in ((2, REPLICATE), (3, SCALE))],
                   key=lambda t: (t[0], t[1]))
    distinct = _distinct(ch)
    want = next((t for t in tests if len(distinct) <= (1 << t[0]) and _exact(distinct, ch, t[2])), None)
    assert _first_exact(ch, tests) == want
    assert candidate_maps(ch)  # the choice runs through it


@pytest.mark.parametrize("shape", [(1, 1, 1), (16, 16, 4), (7, 9, 3), (32, 32, 4), (40, 30, 2), (33, 33, 4), (90, 70, 3)])
def test_word_presence_is_each_channels_histogram(shape):
    """word_presence's one count over every channel gives each channel's own words present (the
    histogram kernel's), or for images of more than PRESENCE_WORDS words those of a sample of them."""
    rng = np.random.default_rng(shape[0] * 7 + shape[2])
    words = rng.integers(0, 256, shape).astype(np.uint8)
    words[..., -1] = rng.choice([0, 17, 255], shape[:2])  # a channel of few words
    got = word_presence(words)
    assert len(got) == shape[2]
    for c, (present, sampled) in enumerate(got):
        counts = histogram(words[:, :, c], 8)
        every = sum(1 << v for v in range(256) if counts[v])
        if words.size <= PRESENCE_WORDS:
            assert (present, sampled) == (every, None)
        else:
            assert present is None and sampled and sampled & ~every == 0  # some of the channel's words


@pytest.mark.parametrize("seed", range(8))
def test_the_map_choice_with_presence_given_sampled_or_counted_agrees(seed):
    """A channel's words present, given (word_presence's), sampled or counted on first use, choose
    the same maps: a sample's words rule a map out only where the channel's would."""
    rng = np.random.default_rng(seed)
    bits = int(rng.integers(1, 9))
    image = ((rng.integers(0, 1 << bits, (40, 50, 3)) * 255) // ((1 << bits) - 1 or 1)).astype(np.uint8)
    if seed % 2:
        image[int(rng.integers(0, 40)), int(rng.integers(0, 50)), 1] ^= 1  # one stray value, in a sample or not
    present = word_presence(image)
    sampled = word_presence(image[: 30, : 40])  # a window of at most PRESENCE_WORDS words: all present
    for c in range(3):
        word = image[:, :, c]
        counted = candidate_maps(Channel(c, word, "u", 8, 0, "u8", False, False))
        assert candidate_maps(Channel(c, word, "u", 8, 0, "u8", False, False, None, *present[c])) == counted
        assert candidate_maps(Channel(c, word, "u", 8, 0, "u8", False, False, None, None, sampled[c][0])) == counted
