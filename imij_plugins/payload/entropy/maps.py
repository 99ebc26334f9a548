"""Channel maps (2.1), slots (2.2), the order maps, expansion (section 4 step 4) and reduce (4).

All array functions work on numpy uint64 arrays of words (a sample of at most 32 bits, or one
32-bit word of a 64-bit sample) and never raise for any bit pattern.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from imij_plugins.container.header import Header
from imij_plugins.errors import Corrupt
from imij_plugins.payload.head import ChannelMap
from imij_plugins.registry.features import FeatureId

# 2.1: map modes
LSB, SHIFT, REPLICATE, SCALE, CONST, F16_IN_F32, UNORM_F32, OFFSET, FLOAT_SHIFT, TABLE = range(10)
MODE_NAMES = ("Lsb", "Shift", "Replicate", "Scale", "Const", "F16InF32", "UnormF32", "Offset", "FloatShift", "Table")
MAX_TABLE_ENTRIES = 65536  # 2.1

# 2.2: slot order of each channel layout (header channels code -> container channel indices)
SLOT_ORDER = {1: (0,), 2: (0, 1), 3: (1, 0, 2), 4: (1, 0, 2, 3), 5: (0, 1, 2, 3), 6: (0, 1, 2), 7: (0, 1, 2, 3)}
RGB_LAYOUTS = frozenset({3, 4})  # 2.2: RGB decorrelation only for RGB / RGBA
U64 = np.uint64


def word_depth(header: Header) -> int:
    """2.1: the container depth D of each coded word: 8, 16 or 32 (64-bit samples code 32-bit words)."""
    return min(header.sample_type.bits, 32)


@dataclass(frozen=True)
class CodedChannel:
    """One coded channel (2.1): a container channel, or the hi / lo word of a 64-bit channel."""

    index: int  # coded channel order: channels, then (64-bit) the lo words
    channel: int  # container channel
    lo: bool  # the lo word of a 64-bit channel
    alpha: bool
    depth: int  # D
    kind: str  # the order map of this word: "u", "i" or "f" (lo words: "u")
    sample: int  # the header's sample type code
    map: ChannelMap


@dataclass(frozen=True)
class Slot:
    """A coded slot (2.2): a coded channel whose map is not Const, with its depth n_s = bits."""

    index: int
    coded: CodedChannel
    color: bool
    cross_allowed: bool

    @property
    def depth(self) -> int:
        return self.coded.map.bits


def coded_channels(header: Header, maps: list[ChannelMap]) -> list[CodedChannel]:
    st = header.sample_type
    C = header.channel_count
    D = word_depth(header)
    alpha_ch = C - 1 if header.layout.has_alpha else -1
    out = []
    for i, cmap in enumerate(maps):
        lo = st.bits == 64 and i >= C  # 2.1: coded channel C + c is channel c's lo word
        ch = i - C if lo else i
        kind = "u" if lo else st.kind  # 2.1: the lo word is coded as is
        out.append(CodedChannel(i, ch, lo, ch == alpha_ch, D, kind, header.sample, cmap))
    return out


# --- validity (2.1) --------------------------------------------------------------------------


def check_maps(header: Header, maps: list[ChannelMap]) -> list[CodedChannel]:
    """Every map rule of 2.1 (anything else is Corrupt), including the feature gates of 7, 8, 9."""
    features = header.features
    st = header.sample_type
    chans = coded_channels(header, maps)
    for cc in chans:
        cmap, D, bits, mode = cc.map, cc.depth, cc.map.bits, cc.map.mode
        what = f"channel map {cc.index} ({MODE_NAMES[mode] if mode < 10 else mode})"
        if mode > TABLE:  # 2.1: closed (0.3)
            raise Corrupt(f"{what}: unknown map mode")
        if bits > D:  # 2.1: bits <= D for every map
            raise Corrupt(f"{what}: bits {bits} above the container depth {D}")
        if mode == SHIFT and bits < 1:  # 2.1: Shift bits >= 1
            raise Corrupt(f"{what}: bits 0")
        if mode in (REPLICATE, SCALE) and not (1 <= bits and (D < 32 or bits <= 16)):
            raise Corrupt(f"{what}: bits {bits} outside 1..={16 if D == 32 else D}")  # 2.1
        if mode == CONST:
            if not (cc.alpha or cc.lo):  # 2.1: only alpha and the lo word of a 64-bit channel
                raise Corrupt(f"{what}: Const for a channel that is neither alpha nor a lo word")
            if cmap.value >> D:  # 2.1: x = value must be a container word (our reading)
                raise Corrupt(f"{what}: Const value {cmap.value} does not fit {D} bits")
        if mode == F16_IN_F32 and not (st.name == "f32" and bits == 16):  # 2.1
            raise Corrupt(f"{what}: F16InF32 needs f32 samples and bits 16")
        if mode == UNORM_F32 and not (st.name == "f32" and 1 <= bits <= 16):  # 2.1
            raise Corrupt(f"{what}: UnormF32 needs f32 samples and bits 1..=16")
        if mode == OFFSET:
            if FeatureId.OFFSET_MAP not in features:  # 2.1 / 0.1: gated syntax
                raise Corrupt(f"{what}: map mode 7 without feature offset_map")
            if st.bits < 32:  # 2.1: 32- and 64-bit samples only
                raise Corrupt(f"{what}: Offset on {st.name} samples")
        if mode == FLOAT_SHIFT:
            if FeatureId.FLOAT_SHIFT not in features:  # 2.1 / 0.1: gated syntax
                raise Corrupt(f"{what}: map mode 8 without feature float_shift")
            if st.name not in ("f16", "f32") or not 1 <= bits <= D - 1:  # 2.1
                raise Corrupt(f"{what}: FloatShift needs f16 or f32 samples and bits 1..={D - 1}")
        if mode == TABLE:
            if FeatureId.VALUE_TABLES not in features:  # 2.1 / 0.1: gated syntax
                raise Corrupt(f"{what}: map mode 9 without feature value_tables")
            entries = cmap.value + 1
            if entries > MAX_TABLE_ENTRIES or entries > (1 << D) or len(cmap.table) != entries:  # 2.1
                raise Corrupt(f"{what}: value table of {entries} entries (at most 65536 and 2^{D})")
            if cmap.table[-1] >> D:  # 2.1: each entry below 2^D (entries strictly increase)
                raise Corrupt(f"{what}: value table entry {cmap.table[-1]} not below 2^{D}")
            if bits != cmap.value.bit_length():  # 2.1: bits = ceil(log2(value + 1))
                raise Corrupt(f"{what}: bits {bits} for a table of {entries} entries (needs {cmap.value.bit_length()})")
    return chans


_MAP_GATES = {OFFSET: FeatureId.OFFSET_MAP, FLOAT_SHIFT: FeatureId.FLOAT_SHIFT, TABLE: FeatureId.VALUE_TABLES}


def entropy_features(header: Header, maps: Sequence[ChannelMap]) -> set[int]:
    """0.1: the features an entropy-coded payload of ``header`` with these maps needs (gated map
    modes, signed and 64-bit samples, pixel models), so writers declare exactly those used."""
    features = {_MAP_GATES[m.mode] for m in maps if m.mode in _MAP_GATES}
    st = header.sample_type
    if st.name in ("i8", "i16"):
        features.add(FeatureId.SIGNED_SAMPLES)
    if st.bits == 64:
        features.add(FeatureId.WIDE_SAMPLES)
    if header.channels in (5, 6, 7):
        features.add(FeatureId.PIXEL_MODELS)
    return features


def build_slots(header: Header, chans: list[CodedChannel]) -> list[Slot]:
    """2.2: slots in layout order (hi words, then lo words), Const maps skipped."""
    C = header.channel_count
    order = SLOT_ORDER[header.channels]
    ncolor = C - (1 if header.layout.has_alpha else 0)
    coded_order = list(order)
    if header.sample_type.bits == 64:
        coded_order += [C + ch for ch in order]  # 2.2: then the lo words, in the same order
    slots: list[Slot] = []
    for ci in coded_order:
        cc = chans[ci]
        if cc.map.mode == CONST:
            continue
        color = not cc.lo and not cc.alpha  # 2.2: the color slots are the (hi) color words
        index = len(slots)
        # 3.3 with ruling R1: cross in any color slot after the first of a multi-color layout
        cross_ok = color and index >= 1 and ncolor > 1
        slots.append(Slot(index, cc, color, cross_ok))
    return slots


def decorrelation_allowed(header: Header, slots: list[Slot]) -> bool:
    """2.2: RGB / RGBA whose three color slots (the hi words' first three) have equal depth."""
    return header.channels in RGB_LAYOUTS and slots[0].depth == slots[1].depth == slots[2].depth


# --- order maps (2.1) ------------------------------------------------------------------------


def native_order(w: np.ndarray, kind: str, D: int) -> np.ndarray:
    """2.1's order map on words of their own unsigned dtype (no widening)."""
    if kind == "i":
        return w ^ w.dtype.type(1 << (D - 1))
    if kind == "f":
        return w ^ ((w >> w.dtype.type(D - 1)) * w.dtype.type((1 << (D - 1)) - 1))
    return w


def order_map(w: np.ndarray, kind: str, D: int) -> np.ndarray:
    """2.1: the order-preserving map of a D-bit word of kind u / i / f; an involution."""
    w = w.astype(U64, copy=False)
    if kind == "i":
        return w ^ U64(1 << (D - 1))
    if kind == "f":
        return w ^ ((w >> U64(D - 1)) * U64((1 << (D - 1)) - 1))
    return w


def order_n(t: np.ndarray, n: int) -> np.ndarray:
    """2.1: order_n(t) = t ^ ((t >> (n - 1)) * (2^(n-1) - 1)) on an n-bit pattern, n >= 1."""
    return t ^ ((t >> U64(n - 1)) * U64((1 << (n - 1)) - 1))


# the position of the leading one of a 10-bit half mantissa (0 for 0)
_LEAD1024 = np.array([max(int(i).bit_length() - 1, 0) for i in range(1024)], dtype=U64)


def widen_half(h: np.ndarray) -> np.ndarray:
    """The f32 bits of the half h widened exactly (2.1 F16InF32; NaN payload shifted up 13 bits)."""
    h = h.astype(U64, copy=False) & U64(0xFFFF)
    sign = (h >> U64(15)) << U64(31)
    exp = (h >> U64(10)) & U64(0x1F)
    man = h & U64(0x3FF)
    normal = sign | ((exp + U64(112)) << U64(23)) | (man << U64(13))
    special = sign | U64(0x7F800000) | (man << U64(13))
    p = _LEAD1024[man.astype(np.intp)]  # the leading one of a subnormal mantissa (0..9)
    sub = sign | ((p + U64(103)) << U64(23)) | ((man << (U64(23) - p)) & U64(0x7FFFFF))
    out = np.where(exp == 31, special, normal)
    out = np.where(exp == 0, np.where(man == 0, sign, sub), out)
    return out


_WIDEN_SORTED: tuple[np.ndarray, np.ndarray] | None = None


def _widen_index() -> tuple[np.ndarray, np.ndarray]:
    global _WIDEN_SORTED
    if _WIDEN_SORTED is None:
        all_h = np.arange(65536, dtype=U64)
        wide = widen_half(all_h)
        order = np.argsort(wide, kind="stable")
        _WIDEN_SORTED = (wide[order], all_h[order])
    return _WIDEN_SORTED


# --- expansion (2.1, section 4 step 4) -------------------------------------------------------


def replicate(s: np.ndarray, n: int, D: int) -> np.ndarray:
    """2.1 Replicate: s bit-replicated to D bits: s << (D-n) | s >> (2n-D) | ... (in s's own
    unsigned dtype, which holds D bits)."""
    t = s.dtype.type
    if n == 1:  # every bit a copy of s: s * (2^D - 1)
        return s * t((1 << D) - 1)
    x = np.zeros_like(s)
    shift = D - n
    while shift > -n:
        x |= (s << t(shift)) if shift >= 0 else (s >> t(-shift))
        shift -= n
    return x & t((1 << D) - 1)


def expand(s: np.ndarray, cc: CodedChannel) -> np.ndarray:
    """2.1 / 4 step 4: coded values s of a slot to the order-mapped word o (before the inverse)."""
    cmap, D, n = cc.map, cc.depth, cc.map.bits
    mode = cmap.mode
    s = s.astype(U64, copy=False)
    if mode == LSB:
        return s.copy()
    if mode == SHIFT:
        return s << U64(D - n)
    if mode == REPLICATE:
        return replicate(s, n, D)
    if mode == SCALE:  # (s * (2^D - 1) + (2^bits - 1) / 2) / (2^bits - 1)
        c = (1 << n) - 1
        return (s * U64((1 << D) - 1) + U64(c // 2)) // U64(c)
    if mode == CONST:
        return np.full_like(s, cmap.value)
    if mode == F16_IN_F32:  # s is an ordered f16; widen the half, then the f32 order map
        return order_map(widen_half(order_map(s, "f", 16)), "f", 32)
    if mode == UNORM_F32:  # f32(s) / f32(2^bits - 1), one IEEE single division
        with np.errstate(all="ignore"):
            f = s.astype(np.float32) / np.float32((1 << n) - 1)
        return order_map(f.view(np.uint32).astype(U64), "f", 32)
    if mode == OFFSET:
        return (s + U64(cmap.value)) & U64(0xFFFFFFFF)
    if mode == FLOAT_SHIFT:  # order_D(order_n(s) << (D - n))
        return order_map(order_n(s, n) << U64(D - n), "f", D)
    if mode == TABLE:  # T[min(s, value)]
        table = np.array(cmap.table, dtype=U64)
        return table[np.minimum(s, U64(cmap.value)).astype(np.intp)]
    raise AssertionError(mode)


def to_word(o: np.ndarray, cc: CodedChannel) -> np.ndarray:
    """4 step 4: the order map inverse (f16, f32, i8, i16, i32, and the hi word of 64-bit samples)."""
    return order_map(o, cc.kind, cc.depth)


def const_word(cc: CodedChannel) -> int:
    """A Const channel's raw word: its value is order-domain (2.1)."""
    return int(order_map(np.array([cc.map.value], dtype=U64), cc.kind, cc.depth)[0])


# --- reduce (section 4) ----------------------------------------------------------------------


def reduce(v: np.ndarray, cc: CodedChannel) -> np.ndarray:
    """4: a reference word v (raw bits) as a coded value of this slot: reduce(o) mod 2^n."""
    cmap, D, n = cc.map, cc.depth, cc.map.bits
    mode = cmap.mode
    v = v.astype(U64, copy=False)
    o = order_map(v, cc.kind, D)
    if mode == LSB:
        r = o
    elif mode in (SHIFT, REPLICATE):  # the top n bits (Replicate does not round)
        r = o >> U64(D - n)
    elif mode == SCALE:  # floor((o * (2^n - 1) + floor((2^D - 1) / 2)) / (2^D - 1))
        full = (1 << D) - 1
        r = (o * U64((1 << n) - 1) + U64(full // 2)) // U64(full)
    elif mode == F16_IN_F32:  # order16(h) if v is the widening of a half h, else 0
        wide, halves = _widen_index()
        pos = np.searchsorted(wide, v)
        pos = np.minimum(pos, len(wide) - 1)
        hit = wide[pos] == v
        r = np.where(hit, order_map(halves[pos], "f", 16), U64(0))
    elif mode == UNORM_F32:  # t = f * c + 0.5 in f32; 0 unless t >= 0; trunc, saturating
        with np.errstate(all="ignore"):
            f = (v & U64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
            t = f * np.float32((1 << n) - 1)
            t = t + np.float32(0.5)
            ok = t >= np.float32(0)
            big = t >= np.float32(4294967296.0)
            tt = np.where(ok & ~big, t, np.float32(0)).astype(np.float64)
            r = np.where(big, U64(0xFFFFFFFF), np.trunc(tt).astype(U64))
            r = np.where(ok, r, U64(0))
    elif mode == OFFSET:
        r = (o - U64(cmap.value)) & U64(0xFFFFFFFF)
    elif mode == FLOAT_SHIFT:  # order_n(v >> (D - n)): the raw top n bits as an n-bit float
        r = order_n(v >> U64(D - n), n)
    elif mode == TABLE:  # the index of the greatest entry <= o, or 0 when o < T[0]
        table = np.array(cmap.table, dtype=U64)
        r = np.searchsorted(table, o, side="right").astype(np.int64) - 1
        r = np.maximum(r, 0).astype(U64)
    else:  # Const: not a slot
        raise AssertionError(mode)
    return r & U64((1 << n) - 1)


def forward(v: np.ndarray, cc: CodedChannel) -> np.ndarray:
    """Writers: the coded values s of raw words v under this map; ValueError if not exact."""
    if cc.map.mode == CONST:
        o = order_map(v, cc.kind, cc.depth)
        if np.any(o != U64(cc.map.value)):
            raise ValueError(f"coded channel {cc.index}: Const map value {cc.map.value} does not match the samples")
        return np.zeros_like(o)
    if cc.map.mode == LSB:
        s = order_map(v, cc.kind, cc.depth)
    else:
        s = reduce(v, cc)
    back = to_word(expand(s, cc), cc)
    if s.size and (np.any(s >> U64(cc.map.bits)) or np.any(back != v.astype(U64))):
        raise ValueError(f"coded channel {cc.index}: map {MODE_NAMES[cc.map.mode]} with {cc.map.bits} bits does not represent every sample")
    return s
