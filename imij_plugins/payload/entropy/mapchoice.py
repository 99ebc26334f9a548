"""Channel-map choice (2.1, 2.6, 5): per coded channel the exact map with the fewest coded bits,
the near-lossless bound each channel can take, and the coded values of a unit.

Candidates: Const (alpha and 64-bit lo words with one value), Lsb (the fewest bits holding the
largest ordered value), Shift (zero low bits), Replicate and Scale (10-, 12-bit ... content
scaled up to the container), Offset (32-bit words: a base plus few bits; feature offset_map),
F16InF32 and UnormF32 (f32), FloatShift (f16 / f32 whose raw low bits are zero; feature
float_shift) and value tables (map 9, feature value_tables, section 5's rule, estimated with the
search kernel on windows). Ties keep the simpler map and the map without a feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.counts import distinct_values, histogram
from imij_plugins.payload.entropy.maps import (
    CONST,
    F16_IN_F32,
    FLOAT_SHIFT,
    LSB,
    OFFSET,
    REPLICATE,
    SCALE,
    SHIFT,
    TABLE,
    UNORM_F32,
    CodedChannel,
    expand,
    native_order,
    order_map,
    reduce,
    to_word,
)
from imij_plugins.payload.entropy.scratch import NARROW, ptr, use_c
from imij_plugins.payload.entropy.search import choose, costs
from imij_plugins.payload.head import ChannelMap

U64 = np.uint64
TABLE_MAX_ENTRIES = 1 << 14  # 5: value tables of up to 2^14 entries
SAMPLE = 4096  # values a 32-bit candidate is first tried on
SMALL_CHANNEL = 1 << 18  # words up to which a channel's map tests run on its distinct values at once
EXACT_CHUNK = 1 << 11  # words per step of a map's exactness test: about 13 64-bit temporaries each, 208 KiB
CHUNK_SAMPLES = 1 << 12  # coded values made through 64-bit words per step (32 KiB per temporary)
PRESENCE_WORDS = 1 << 12  # 8-bit words up to which word_presence counts every channel at once


@dataclass
class Channel:
    """One coded channel's source words and what the choice needs."""

    index: int
    word: np.ndarray  # (H, W) raw words in their unsigned dtype (uint8 / uint16 / uint32)
    kind: str  # order map: u / i / f (lo words: u)
    D: int
    sample: int  # header sample code
    sample_name: str
    alpha: bool
    lo: bool
    summary: tuple[int, int, int, int] | None = None  # word_summary's, made on first use
    present: int | None = None  # word_presence's (D <= 8), made on first use
    sampled: int | None = None  # word_presence's of a strided sample of the pixels: some of present's words

    def summarize(self) -> tuple[int, int, int, int]:
        """The largest, smallest and or of the ordered words, and the or of the raw words."""
        if self.summary is None:
            self.summary = word_summary(self.word[:, :, None], self.kind, self.D)[0]
        return self.summary

    def presence(self) -> int:
        """The words present (D <= 8) as the bits of one integer: bit v set when word v occurs."""
        if self.present is None:
            self.present = int.from_bytes(np.packbits(histogram(self.word, self.D) > 0, bitorder="little").tobytes(),
                                          "little")
        return self.present


def _cc(ch: Channel, cmap: ChannelMap) -> CodedChannel:
    return CodedChannel(ch.index, ch.index, ch.lo, ch.alpha, ch.D, ch.kind, ch.sample, cmap)


def _exact(values: np.ndarray, ch: Channel, cmap: ChannelMap) -> bool:
    """Whether ``cmap`` reproduces every raw word in ``values`` (maps.forward's test), EXACT_CHUNK
    words at a time: the test makes several 64-bit temporaries of what it is given, and a channel's
    distinct 16-bit values can be as many as its words."""
    cc = _cc(ch, cmap)
    with np.errstate(all="ignore"):
        for start in range(0, len(values), EXACT_CHUNK):
            part = values[start : start + EXACT_CHUNK].astype(U64, copy=False)
            s = reduce(part, cc) if cmap.mode != LSB else order_map(part, ch.kind, ch.D)
            if cmap.bits < 64 and np.any(s >> U64(cmap.bits)):
                return False
            if not np.array_equal(to_word(expand(s, cc), cc), part):
                return False
    return True


@lru_cache(maxsize=256)
def _exact_bits(kind: str, D: int, sample: int, alpha: bool, lo: bool, cmap: ChannelMap) -> int:
    """Per word 0 .. 2^D - 1 whether ``cmap`` reproduces it (_exact on each alone), as the bits of
    one integer (bit v: word v is reproduced)."""
    ch = Channel(-1, np.zeros((0, 0), U64), kind, D, sample, "", alpha, lo)
    words = np.arange(1 << D, dtype=U64)
    cc = _cc(ch, cmap)
    with np.errstate(all="ignore"):
        s = reduce(words, cc) if cmap.mode != LSB else order_map(words, kind, D)
        ok = to_word(expand(s, cc), cc) == words
        if cmap.bits < 64:
            ok &= (s >> U64(cmap.bits)) == 0
    return int.from_bytes(np.packbits(ok, bitorder="little").tobytes(), "little")


def _trailing_zeros(v: int, D: int) -> int:
    return D if v == 0 else (v & -v).bit_length() - 1


def _distinct(ch: Channel) -> np.ndarray | None:
    """Every distinct raw word (D <= 16), else None."""
    if ch.D > 16:
        return None
    return distinct_values(ch.word, ch.D).astype(U64)


def _strided_sample(w: np.ndarray, count: int) -> np.ndarray:
    """Every (size // count)-th word of w in raster order: a view of contiguous words, else
    gathered by index (three int64 per word taken) or, where that is larger, from a copy."""
    step = max(1, w.size // count)
    if w.flags.c_contiguous or step * w.itemsize <= 24:
        return np.ascontiguousarray(w).reshape(-1)[::step]
    flat = np.arange(0, w.size, step)
    return w[flat // w.shape[1], flat % w.shape[1]]


def _fitting(ch: Channel, tests: Sequence[tuple[int, int, ChannelMap]], present: int) -> tuple[int, int, ChannelMap] | None:
    """The first of ``tests`` whose map codes every word of ``present`` (bit v: word v) exactly."""
    count = present.bit_count()
    return next((t for t in tests if count <= (1 << t[0])
                 and not present & ~_exact_bits(ch.kind, ch.D, ch.sample, ch.alpha, ch.lo, t[2])), None)


def _first_exact(ch: Channel, tests: Sequence[tuple[int, int, ChannelMap]]) -> tuple[int, int, ChannelMap] | None:
    """The first of ``tests`` (in order) that codes every word of the channel exactly: n bits
    code at most 2^n values. A small channel of at most 16-bit words is tested on its distinct
    values at once; a larger one on a strided sample first (most candidates fail on it), and only
    then on its distinct values (or, for 32-bit words, every word)."""
    w = ch.word
    if w.size <= SMALL_CHANNEL and ch.D <= 8:  # the words present, as bits of one integer, against a map's exact ones
        if ch.present is None and ch.sampled is not None and _fitting(ch, tests, ch.sampled) is None:
            return None  # a sample's words already fit no map, and the channel holds every one of them
        return _fitting(ch, tests, ch.presence())
    if w.size <= SMALL_CHANNEL and ch.D <= 16:
        distinct = _distinct(ch)
        return next((t for t in tests if len(distinct) <= (1 << t[0]) and _exact(distinct, ch, t[2])), None)
    sample = _strided_sample(w, SAMPLE).astype(U64)
    small = sample[:: max(1, len(sample) // 64)]
    seen = len(np.unique(sample))
    live = [t for t in tests if seen <= (1 << t[0]) and _exact(small, ch, t[2]) and _exact(sample, ch, t[2])]
    if not live:
        return None
    distinct = _distinct(ch)
    count = len(distinct) if distinct is not None else len(np.unique(sample))
    for bits, rank, cmap in live:
        if count > (1 << bits):
            continue
        if _exact(distinct if distinct is not None else w.ravel(), ch, cmap):  # (no 64-bit copy of w)
            return bits, rank, cmap
    return None


@lru_cache(maxsize=256)
def _tests(D: int, f32: bool, regular_bits: int) -> tuple[tuple[int, int, ChannelMap], ...]:
    """The maps whose exactness needs a test on the values, with fewer bits than ``regular_bits``
    (Replicate, Scale; of f32 hi words also F16InF32 and UnormF32), fewest bits first, simpler
    first on ties: made once per kind of channel, not per channel."""
    tests: list[tuple[int, int, ChannelMap]] = []
    top = min(D - 1, 16)
    for bits in range(1, min(top, regular_bits - 1) + 1):
        tests.append((bits, 2, ChannelMap(REPLICATE, bits, 0)))
        tests.append((bits, 3, ChannelMap(SCALE, bits, 0)))
    if f32:
        if regular_bits > 16:
            tests.append((16, 4, ChannelMap(F16_IN_F32, 16, 0)))
        for bits in range(1, min(16, regular_bits - 1) + 1):
            tests.append((bits, 4, ChannelMap(UNORM_F32, bits, 0)))
    tests.sort(key=lambda t: (t[0], t[1]))
    return tuple(tests)


def candidate_maps(ch: Channel, allow_features: bool = True) -> list[ChannelMap]:
    """Every exact regular map of the channel (no tables), fewest bits first, simpler first on ties."""
    D = ch.D
    omax, omin, oor, raw_or = ch.summarize()
    cands: list[tuple[int, int, ChannelMap]] = []  # (bits, rank, map)
    if (ch.alpha or ch.lo) and omax == omin:
        return [ChannelMap(CONST, 0, omin)]
    cands.append((omax.bit_length(), 0, ChannelMap(LSB, omax.bit_length(), 0)))
    tz = _trailing_zeros(oor, D)
    if 0 < tz < D:
        cands.append((D - tz, 1, ChannelMap(SHIFT, D - tz, 0)))
    if D == 32 and allow_features and omax > omin:  # Offset: 32- and 64-bit samples
        bits = (omax - omin).bit_length()
        cands.append((bits, 5, ChannelMap(OFFSET, bits, omin)))
    if ch.sample_name in ("f16", "f32") and not ch.lo and allow_features:
        rtz = _trailing_zeros(raw_or, D)
        if 0 < rtz < D:
            cands.append((D - rtz, 6, ChannelMap(FLOAT_SHIFT, D - rtz, 0)))
    tests = _tests(D, ch.sample_name == "f32" and not ch.lo, min(c[0] for c in cands))
    found = _first_exact(ch, tests) if tests else None
    if found is not None:
        cands.append(found)  # the fewest bits among the tested maps
    cands.sort(key=lambda c: (c[0], c[1]))
    # 5: FloatShift when it codes as many bits as an F16InF32 map
    if cands[0][2].mode == F16_IN_F32:
        fs = [c for c in cands if c[2].mode == FLOAT_SHIFT and c[0] <= 16]
        if fs:
            cands.remove(fs[0])
            cands.insert(0, fs[0])
    return [c[2] for c in cands]


def coded(word: np.ndarray, ch: Channel, cmap: ChannelMap) -> np.ndarray:
    """The coded values s of raw words under an exact map: in the words' own unsigned type for
    Lsb, Shift and Replicate (no wider copy of the image), else uint32."""
    if cmap.mode in (LSB, SHIFT, REPLICATE):  # 4: the word, or its top n bits
        s = native_order(word, ch.kind, ch.D)
        if cmap.mode != LSB:
            s = s >> word.dtype.type(ch.D - cmap.bits)
        return s if s.dtype.itemsize <= 4 else s.astype(np.uint32)
    if cmap.mode == TABLE and ch.D <= 16:  # 2.1 map 9: each value's entry index, looked up
        return _table_lut(cmap.table, ch.D)[native_order(word, ch.kind, ch.D)]
    out = np.empty(word.shape, dtype=np.uint32)
    step = max(1, CHUNK_SAMPLES // max(1, word[:1].size))  # 64-bit work a few rows at a time
    for r0 in range(0, word.shape[0], step):
        part = word[r0 : r0 + step].astype(U64)
        if cmap.mode == TABLE:
            out[r0 : r0 + step] = np.searchsorted(_table_values(cmap.table), order_map(part, ch.kind, ch.D))
        else:
            out[r0 : r0 + step] = reduce(part, _cc(ch, cmap))
    return out


@lru_cache(maxsize=8)
def _table_values(table: tuple[int, ...]) -> np.ndarray:
    """A value table's entries as one array (made once per table, not per chunk)."""
    return np.asarray(table, dtype=U64)


@lru_cache(maxsize=8)
def _table_lut(table: tuple[int, ...], D: int) -> np.ndarray:
    """Each ordered D-bit value's entry index in a value table (uint32; values not in the table,
    which an exact map never meets, index 0)."""
    lut = np.zeros(1 << D, dtype=np.uint32)
    lut[_table_values(table)] = np.arange(len(table), dtype=np.uint32)
    return lut


# --- near-lossless bounds (2.6, 5) -------------------------------------------------------------


def coded_delta(cmap: ChannelMap, D: int, bound: int) -> int:
    """5: the largest coded delta whose expansion stays within ``bound`` sample units."""
    n = cmap.bits
    if bound <= 0 or n < 2 or cmap.mode in (CONST, TABLE):
        return 0
    cap = (1 << (n - 1)) - 1
    if cmap.mode in (LSB, OFFSET):
        return min(bound, cap)
    if cmap.mode == SHIFT:
        return min(bound >> (D - n), cap)
    if cmap.mode in (REPLICATE, SCALE):  # exhaustive over the coded range
        s = np.arange(1 << n, dtype=U64)
        cc = CodedChannel(0, 0, False, False, D, "u", 0, cmap)
        e = expand(s, cc).astype(np.int64)
        best = 0
        lo, hi = 1, cap
        while lo <= hi:  # expansions are monotonic: the widest window is the test
            mid = (lo + hi) // 2
            if int((e[mid:] - e[:-mid]).max()) <= bound:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best
    return 0


def near_map(ch: Channel, cmap: ChannelMap, bound: int) -> ChannelMap:
    """5: an Offset base lowered so that value + 2^n - 1 does not pass 2^32 (clamped values
    must not wrap)."""
    if cmap.mode != OFFSET or bound <= 0:
        return cmap
    omax = ch.summarize()[0]
    value, bits = cmap.value, cmap.bits
    while value + (1 << bits) - 1 > 0xFFFFFFFF:
        value = 0xFFFFFFFF - ((1 << bits) - 1)
        bits = (omax - value).bit_length()
    return ChannelMap(OFFSET, bits, value)


# --- value tables (map 9, 5) -------------------------------------------------------------------


def table_candidate(ch: Channel, regular: ChannelMap) -> ChannelMap | None:
    """5: a value table for an exact channel of words wider than 8 bits whose distinct values
    leave gaps in its regular map's coded range (up to 2^14 entries); None otherwise."""
    if ch.D <= 8 or regular.mode == CONST:
        return None
    values = distinct_values(native_order(ch.word, ch.kind, ch.D), ch.D) if ch.D <= 16 else _distinct_wide(ch)
    if values is None or len(values) > TABLE_MAX_ENTRIES or len(values) >= (1 << regular.bits) or 4 * len(values) > ch.word.size:
        return None  # (a table with more entries than a quarter of the samples cannot pay)
    table = tuple(int(v) for v in values)
    return ChannelMap(TABLE, (len(table) - 1).bit_length(), len(table) - 1, table)


def _distinct_wide(ch: Channel) -> np.ndarray | None:
    """The distinct ordered words of a channel of words wider than 16 bits, or None once they
    pass a table's 2^14 entries: a strided sample first, then the rows a chunk at a time (no
    whole-channel copy or sort)."""
    if len(np.unique(native_order(_strided_sample(ch.word, 65536), ch.kind, ch.D))) > TABLE_MAX_ENTRIES:
        return None
    values = np.zeros(0, dtype=ch.word.dtype)
    step = max(1, (1 << 18) // max(1, ch.word.shape[1]))
    for r0 in range(0, ch.word.shape[0], step):
        values = np.union1d(values, native_order(ch.word[r0 : r0 + step], ch.kind, ch.D))
        if len(values) > TABLE_MAX_ENTRIES:
            return None
    return values


def table_bytes(cmap: ChannelMap) -> int:
    """The bytes of map 9's table in the head (2.1): one varint per entry's gap."""
    t = np.asarray(cmap.table, dtype=np.int64)
    gaps = np.diff(np.concatenate([[-1], t])) - 1
    return int(len(gaps) + (gaps >= 1 << 7).sum() + (gaps >= 1 << 14).sum() + (gaps >= 1 << 21).sum()
               + (gaps >= 1 << 28).sum())


def window_cost(ch: Channel, cmap: ChannelMap, lanes: int) -> int:
    """The predictor search's bit-length total, under map ``cmap``, on up to 16 windows of up to
    256 x 16 pixels spread over the channel (5's value-table estimate); only the windows are
    coded."""
    h, w = ch.word.shape
    wh, ww = min(16, h), min(256, w)
    ny = max(1, min(4, h // wh))
    nx = max(1, min(4, w // ww))
    total = 0
    for iy in range(ny):
        y = (h - wh) * iy // max(1, ny - 1) if ny > 1 else 0
        for ix in range(nx):
            x = (w - ww) * ix // max(1, nx - 1) if nx > 1 else 0
            win = coded(ch.word[y : y + wh, x : x + ww], ch, cmap)[None]
            cost = costs(win, [cmap.bits], min(lanes, max(1, ww // 16)), False, 0x7F, 1)
            _, _, t = choose(cost, 1)
            total += t
    return total


__all__ = ["Channel", "candidate_maps", "coded", "coded_delta", "near_map", "table_candidate", "table_bytes",
           "window_cost", "window_fraction", "word_presence"]


KINDS = {"u": 0, "i": 1, "f": 2}


def word_summary(words: np.ndarray, kind: str, D: int) -> list[tuple[int, int, int, int]]:
    """imij_kernels.h imij_enc_word_summary: per channel (the last axis) of contiguous uint8 / 16 / 32
    words of D bits, the largest and smallest ordered value (2.1), the or of the ordered values
    and the or of the raw words; one pass over interleaved channels."""
    C = words.shape[-1]
    flat = words.reshape(-1, C)
    if use_c() and flat.dtype in NARROW and flat.flags.c_contiguous and flat.shape[0] and C <= 16:
        ffi, lib = _backend.ffi, _backend.lib
        out = np.empty(4 * C, dtype=np.uint64)
        if lib.imij_enc_word_summary(ffi.from_buffer(flat), flat.itemsize, flat.shape[0], C, KINDS[kind], D,
                                     ptr(ffi, "uint64_t[]", out, True)) == 0:
            return [tuple(q) for q in out.reshape(C, 4).tolist()]
    res = []
    for c in range(C):
        w = flat[:, c]
        o = native_order(w, kind, D)
        res.append((int(o.max()), int(o.min()), int(np.bitwise_or.reduce(o)), int(np.bitwise_or.reduce(w))))
    return res


def word_presence(words: np.ndarray) -> list[tuple[int | None, int | None]]:
    """Per channel (the last axis) of uint8 words, the words present as Channel.presence's bits,
    from one count over every channel: (present, None) of every word of an image of at most
    PRESENCE_WORDS words (a histogram kernel call per channel costs more there), else
    (None, sampled) of a strided sample of about as many words, which may show that no tested
    map fits the channel before its words are counted."""
    C = words.shape[-1]
    step = -(-words.size // PRESENCE_WORDS)
    index = words.reshape(-1, C)[::step] | np.arange(0, C << 8, 1 << 8, dtype=np.uint16)  # channel c at c * 256
    seen = np.packbits(np.bincount(index.ravel(), minlength=C << 8).astype(np.bool_), bitorder="little").tobytes()
    found = [int.from_bytes(seen[i : i + 32], "little") for i in range(0, 32 * C, 32)]  # 32 bytes per channel
    return [(f, None) if step == 1 else (None, f) for f in found]


def window_fraction(word: np.ndarray) -> float:
    """The share of the image the value-table windows cover (the table's bytes are scaled by it)."""
    h, w = word.shape
    wh, ww = min(16, h), min(256, w)
    n = max(1, min(4, h // wh)) * max(1, min(4, w // ww))
    return min(1.0, n * wh * ww / (h * w))
