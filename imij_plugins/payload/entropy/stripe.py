"""One unit (a stripe x column group) end to end: 2.4 / 2.5 / 2.6 / 3 / section 4.

``decode_stripe`` takes the payload's settled ``UnitPlan`` (decoder.prepare) and one unit
record's body and returns the unit's pixels as an (h, w, C) array of the header's dtype, exact
stored bits. It is three steps: ``reference_planes`` (inter frames: reduce, vectorized),
``decode_coded`` (layout, rANS, tokens, contexts, reconstruction: the part a C kernel replaces,
one call per unit, coded values out) and ``assemble`` (channel maps and order maps, vectorized).
Units share nothing but the plan (2.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.bilevel import BilevelTable
from imij_plugins.payload.entropy.levels import decode_level
from imij_plugins.payload.entropy.maps import (
    CONST,
    LSB,
    OFFSET,
    REPLICATE,
    SHIFT,
    TABLE,
    CodedChannel,
    Slot,
    const_word,
    expand,
    reduce,
    replicate,
    to_word,
)
from imij_plugins.payload.entropy.models import PALETTE_DEPTH, Model, ModelSet
from imij_plugins.payload.entropy.rans import Lanes, decode_residuals
from imij_plugins.payload.entropy.template import TemplateTables
from imij_plugins.wire.cursor import Cursor

U64 = np.uint64

# 2.4: stripe layout bytes
DECOR_MAX = 3
LAYOUT_PALETTE = 0x80
LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE = 0x81, 0x82
LAYOUT_TEMPLATE_OWN, LAYOUT_TEMPLATE_SHARED = 0x83, 0x84
MAX_PREDICTOR = 6  # 2.4: 0..=6, 0..=9 in inter frames (section 4)
PALETTE_MAX_DEPTH = 16  # 2.5


@dataclass(frozen=True)
class UnitPlan:
    """What every unit of a payload shares (2.3: only the models), settled by prepare."""

    lanes: int
    chans: tuple[CodedChannel, ...]  # coded channel order (2.1)
    slots: tuple[Slot, ...]  # slot order (2.2)
    model_set: ModelSet  # one model per slot, then the palette model when head present bit 0 (2.5, 3.3)
    bounds: tuple[int, ...]  # near-lossless delta per slot (2.6), 0 = exact
    near: bool  # head record 19 present (2.6)
    decor_allowed: bool  # 2.2
    palette_allowed: bool  # 2.5: present bit 0 and every slot depth <= 16
    channel_count: int
    sample_bits: int  # 8, 16, 32 or 64
    dtype: str  # the header's numpy dtype
    features: frozenset[int]
    bilevel_record: bool  # head record 25 (2.10)
    template_record: bool  # head record 35 (2.14)
    bilevel_table: BilevelTable | None = None  # record 25, parsed (2.10)
    template_tables: TemplateTables | None = None  # record 35, parsed (2.14)

    @property
    def models(self) -> tuple[Model, ...]:
        """One model per slot (3.3)."""
        return self.model_set.slot_models

    @property
    def palette_model(self) -> Model | None:
        """The palette index model (2.5, 3.3), None without head present bit 0."""
        return self.model_set.palette_model


def predictor_bytes(preds: list[int]) -> bytes:
    """2.4: a stripe's row predictors as the writers code them, two 4-bit fields a byte, low
    nibble first (what ``_read_predictors`` reads)."""
    out = bytearray((len(preds) + 1) // 2)
    for r, p in enumerate(preds):
        out[r >> 1] |= p << (4 * (r & 1))
    return bytes(out)


def _read_predictors(cur: Cursor, rows: int, plan: UnitPlan, inter: bool, palette: bool) -> list[int]:
    """2.4: ceil(rows / 2) bytes, 4 bits per row, low nibble first; the rules of 2.4 and 4."""
    raw = cur.take((rows + 1) // 2, "row predictors")
    preds = [(raw[r >> 1] >> (4 * (r & 1))) & 15 for r in range(rows)]
    for r, p in enumerate(preds):
        if p > 9:  # 2.4: 0..=9 at most
            raise Corrupt(f"row {r} predictor {p}")
        if p > MAX_PREDICTOR:
            if not inter:  # 4: outside inter frames 7..=9 are invalid
                raise Corrupt(f"row {r} predictor {p} outside an inter frame")
            if plan.sample_bits == 64:  # 4: invalid in every image of 64-bit samples
                raise Corrupt(f"row {r} predictor {p} in an image of 64-bit samples")
            if plan.near:  # 2.6: payloads with bounds never use predictors 7..=9
                raise Corrupt(f"row {r} predictor {p} in a near-lossless payload")
            if palette:  # our reading: an index plane has no channel to reduce a reference to
                raise Corrupt(f"row {r} predictor {p} in a palette stripe")
        if r == 0 and p not in (0, 7):  # 2.4 / 4: row 0 is W, or 7 in inter frames
            raise Corrupt(f"stripe row 0 predictor {p} (must be 0, or 7 in inter frames)")
    return preds


def _take_streams(cur: Cursor, count: int) -> list[bytes]:
    """2.4: a varint length per stream, then the streams; they end where the record ends."""
    lens = [cur.varint("stream length") for _ in range(count)]
    total = 0
    for n in lens:
        total += n
        if total > cur.remaining():  # 2.4 / 2.7: a stream past its record
            raise Corrupt("stream lengths run past the unit record")
    if total != cur.remaining():  # our reading: the stripe ends with its last stream
        raise Corrupt(f"{cur.remaining() - total} bytes after the last stream of the unit record")
    return [bytes(cur.take(n, "stream")) for n in lens]


# --- section 4: reconstruction ---------------------------------------------------------------


def unzigzag(u: np.ndarray, n: int) -> np.ndarray:
    """4 step 1: d = unzigzag(u) mod 2^n, unzigzag(u) = (u >> 1) ^ -(u & 1)."""
    u = u.astype(U64, copy=False)
    return ((u >> U64(1)) ^ (U64(0) - (u & U64(1)))) & U64((1 << n) - 1)


def sext(d: np.ndarray, n: int) -> np.ndarray:
    """The signed n-bit value of d (two's complement), as int64."""
    if n == 0:
        return np.zeros(d.shape, dtype=np.int64)
    d = d.astype(np.int64)
    return d - ((d >> (n - 1)) & 1) * (1 << n)


def undo_decorrelation(g: np.ndarray, r: np.ndarray, b: np.ndarray, mode: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """4 step 2: undo decorrelation on the (G, R, B) residuals, all modulo 2^n; returns (R, B)."""
    mask = U64((1 << n) - 1)
    if mode == 0:
        return r, b
    r = (r + g) & mask  # modes 1-3: R += G
    if mode == 1:
        b = (b + g) & mask  # B += G
    elif mode == 2:
        b = (b + r) & mask  # B += R (new R)
    else:  # B += floor((sext(R) + sext(G)) / 2) (new R)
        half = (sext(r, n) + sext(g, n)) >> 1
        b = ((b.astype(np.int64) + half) & np.int64((1 << n) - 1)).astype(U64)
    return r, b


def predict(p: int, W: int, N: int, NW: int, NE: int, R: int, RW: int, RN: int, mask: int) -> int:
    """Section 4's predictors 0-9 on lane-local neighbors (edge rules applied by the caller)."""
    if p == 0:  # W
        return W
    if p == 1:  # N
        return N
    if p == 2:  # floor((W + N) / 2)
        return (W + N) >> 1
    if p == 3:  # MED (LOCO-I)
        if NW >= max(W, N):
            return min(W, N)
        if NW <= min(W, N):
            return max(W, N)
        return W + N - NW
    if p == 4:  # (W + N - NW) mod 2^n
        return (W + N - NW) & mask
    if p == 5:  # Paeth (PNG), ties prefer W, then N
        base = W + N - NW
        pa, pb, pc = abs(base - W), abs(base - N), abs(base - NW)
        if pa <= pb and pa <= pc:
            return W
        if pb <= pc:
            return N
        return NW
    if p == 6:  # floor((W + NE) / 2)
        return (W + NE) >> 1
    if p == 7:  # R
        return R
    if p == 8:  # (W + R - RW) mod 2^n
        return (W + R - RW) & mask
    return (N + R - RN) & mask  # 9: (N + R - RN) mod 2^n


def reconstruct(d: list[list[int]], preds: list[int], lanes: Lanes, n: int, delta: int,
                ref: list[list[int]] | None) -> list[list[int]]:
    """4 step 3 for one slot: v = (pred + d) mod 2^n, or the near-lossless rule of 2.6.

    Neighbors are lane-local (2.3). On stripe row 0 the predictor is W with W = 0 at x = 0 (or
    7, R); otherwise at x = 0 W = NW = N and at the lane's last column NE = N. RW and RN follow
    W's and N's rules: RW = RN at a lane's first column, RN = R on stripe row 0.
    """
    mask = (1 << n) - 1
    step = 2 * delta + 1
    half = 1 << (n - 1) if n else 0
    rows = len(d)
    v: list[list[int]] = []
    prev: list[int] = []
    for r in range(rows):
        p = preds[r]
        drow = d[r]
        row = [0] * lanes.gw
        rrow = ref[r] if ref is not None else None
        rprev = ref[r - 1] if ref is not None and r else rrow
        for start, width in zip(lanes.starts, lanes.widths):
            last = width - 1
            for x in range(width):
                c = start + x
                if r == 0:
                    if p == 7:
                        pred = rrow[c]
                    else:
                        pred = row[c - 1] if x else 0  # row 0: W, W = 0 at x = 0
                else:
                    N = prev[c]
                    if x:
                        W, NW = row[c - 1], prev[c - 1]
                    else:
                        W = NW = N
                    NE = prev[c + 1] if x < last else N
                    if p >= 7:
                        R = rrow[c]
                        RN = rprev[c]
                        RW = rrow[c - 1] if x else RN
                        pred = predict(p, W, N, NW, NE, R, RW, RN, mask)
                    else:
                        pred = predict(p, W, N, NW, NE, 0, 0, 0, mask)
                dv = drow[c]
                if delta:  # 2.6: v = clamp(pred + sext_n(d) (2 delta + 1), 0, 2^n - 1)
                    q = dv - (dv & half) * 2
                    val = pred + q * step
                    row[c] = 0 if val < 0 else (mask if val > mask else val)
                else:
                    row[c] = (pred + dv) & mask
        v.append(row)
        prev = row
    return v


# --- the unit --------------------------------------------------------------------------------


def _uint_dtype(bits: int) -> np.dtype:
    return np.dtype(f"<u{bits // 8}")


def reference_planes(plan: UnitPlan, reference: np.ndarray, height: int, width: int) -> list[np.ndarray]:
    """4: the previous canvas under the unit as coded values of each slot: reduce(o) mod 2^n
    through this frame's map (maps.reduce), one (height, width) plane per slot."""
    if reference.shape != (height, width, plan.channel_count):
        raise ValueError(f"reference of shape {reference.shape}, expected {(height, width, plan.channel_count)}")
    raw = np.ascontiguousarray(reference, dtype=np.dtype(plan.dtype)).view(_uint_dtype(plan.sample_bits))
    if plan.sample_bits == 64:  # 4: predictors 7-9 are invalid for 64-bit samples; R is never read
        return [np.zeros((height, width), dtype=U64) for _ in plan.slots]
    return [reduce(raw[:, :, slot.coded.channel].astype(U64), slot.coded) for slot in plan.slots]


_np_dtype = lru_cache(maxsize=16)(np.dtype)  # a plan's dtype string, looked up once per unit


def output_for(plan: UnitPlan, height: int, width: int, out: np.ndarray | None) -> np.ndarray:
    """``out`` after checking it is a (height, width, C) array of the header's dtype, or a new
    uninitialized one for a unit's samples."""
    shape, dtype = (height, width, plan.channel_count), _np_dtype(plan.dtype)
    if out is None:
        return np.empty(shape, dtype=dtype)
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(f"out of shape {out.shape} {out.dtype}, expected {shape} {dtype}")
    return out


def assemble(plan: UnitPlan, coded: list[np.ndarray | None], height: int, width: int,
             out: np.ndarray | None = None) -> np.ndarray:
    """4 step 4: expand each coded value through its map, order map inverse, 64-bit words joined.

    ``coded`` holds each slot's coded values at its coded channel's index (None for Const); its
    planes are consumed (an Lsb map's order map is applied to them in place). ``out``: the
    (height, width, C) array of the header's dtype to fill, at any strides (e.g. the unit's
    rectangle of the image); a new array when None. Returns ``out``."""
    C = plan.channel_count
    out = output_for(plan, height, width, out)
    raw = out.view(_uint_dtype(plan.sample_bits))  # the stored bits; same itemsize, so any strides
    words = [_word(plan.sample_bits, cc, coded[cc.index]) for cc in plan.chans]
    if plan.sample_bits == 64:  # a 64-bit sample is (hi << 32) | lo: coded channels ch and C + ch
        for ch in range(C):
            # both words as uint64: under numpy 1.x a uint64 scalar | Python int is float64 and raises
            hi, lo = np.asarray(words[ch], dtype=U64), np.asarray(words[C + ch], dtype=U64)
            raw[:, :, ch] = (hi << U64(32)) | lo
    else:
        for cc, word in zip(plan.chans, words):
            raw[:, :, cc.channel] = word
    return out


LUT_BITS = 12  # slots of at most this many coded bits may store through a table of their words


@dataclass(frozen=True)
class SlotWord:
    """How 4 step 4 makes one slot's words in a kernel (csrc/imij_kernels.h imij_sample_store):
    t = lut[v] when ``lut`` is set, else (v << shift) + add mod 2^32; the word is t ^ flip, with
    neg_flip also xored when bit ``top`` of t is set (the order map inverse, 2.1)."""

    channel: int
    shift: int = 0
    add: int = 0
    flip: int = 0
    top: int = 0
    neg_flip: int = 0
    lut: np.ndarray | None = None  # uint32, one word per coded value 0 .. 2^n - 1


@dataclass(frozen=True)
class SampleStore:
    """4 step 4 of a unit whose words have at most 32 bits, as data a kernel applies itself:
    ``slots`` in slot order, ``consts`` the Const channels' (channel, word)."""

    slots: tuple[SlotWord, ...]
    consts: tuple[tuple[int, int], ...]


def sample_store(sample_bits: int, plan_slots: Sequence[Slot], chans: Sequence[CodedChannel]) -> SampleStore | None:
    """A plan's maps (its sample bits, slots and coded channels) as a SampleStore, or None when
    one needs ``assemble`` (64-bit samples, or a map other than Lsb, Shift and Offset on a slot
    wider than LUT_BITS)."""
    if sample_bits not in (8, 16, 32):
        return None
    slotted = {slot.coded.index for slot in plan_slots}
    slots, consts = [], []
    for slot in plan_slots:
        cc, mode = slot.coded, slot.coded.map.mode
        top = cc.depth - 1
        if mode in (LSB, SHIFT) or (mode == OFFSET and cc.depth == 32):  # 2.1, Offset mod 2^32
            slots.append(SlotWord(
                cc.channel,
                shift=cc.depth - cc.map.bits if mode == SHIFT else 0,  # s << (D - bits)
                add=cc.map.value if mode == OFFSET else 0,
                flip=1 << top if cc.kind == "i" else 0,  # the order map inverse flips the sign bit
                top=top,
                neg_flip=(1 << top) - 1 if cc.kind == "f" else 0,  # or a negative float's other bits
            ))
        elif slot.depth <= LUT_BITS:
            words = _word(sample_bits, cc, np.arange(1 << slot.depth, dtype=np.uint32))
            slots.append(SlotWord(cc.channel, top=top, lut=np.ascontiguousarray(words, dtype=np.uint32)))
        else:
            return None
    for cc in chans:
        if cc.index not in slotted:
            consts.append((cc.channel, const_word(cc)))
    return SampleStore(tuple(slots), tuple(consts))


def _word(sample_bits: int, cc: CodedChannel, s: np.ndarray | None) -> np.ndarray | int:
    """One coded channel's words (2.1, 4 step 4): an int for a Const channel (broadcast on store).
    Below 64-bit samples, Lsb, Shift, Replicate and Table maps and the order map inverse work on
    ``s`` in its own dtype (uint32 from the kernel: a word of at most 32 bits fits, so no
    widening); any other map goes through maps.expand / to_word (uint64)."""
    mode = cc.map.mode
    if mode == CONST or s is None:
        return const_word(cc)
    if sample_bits == 64 or mode not in (LSB, SHIFT, REPLICATE, TABLE):
        return to_word(expand(s, cc), cc)
    if mode == REPLICATE:
        s = replicate(s, cc.map.bits, cc.depth)
    elif mode == SHIFT:  # s << (D - bits) < 2^D
        np.left_shift(s, s.dtype.type(cc.depth - cc.map.bits), out=s)
    elif mode == TABLE:  # T[min(s, value)], entries < 2^D
        np.minimum(s, s.dtype.type(cc.map.value), out=s)
        s = np.array(cc.map.table, dtype=np.uint32)[s]
    top = 1 << (cc.depth - 1)  # the order map inverse of a D-bit word (2.1)
    if cc.kind == "i":  # flip the sign bit
        np.bitwise_xor(s, s.dtype.type(top), out=s)
    elif cc.kind == "f":  # negative (top bit set): flip the other bits
        np.bitwise_xor(s, s.dtype.type(top - 1), out=s, where=s >= top)
    return s


def decode_stripe(plan: UnitPlan, body: bytes | memoryview, width: int, height: int,
                  reference: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Decode one unit record's body (2.4 or 2.5) into an (height, width, C) array (``out``, or new)."""
    refs = reference_planes(plan, reference, height, width) if reference is not None else None
    coded = decode_coded(plan, body, width, height, refs)
    return assemble(plan, coded, height, width, out)


def decode_coded(plan: UnitPlan, body: bytes | memoryview, width: int, height: int,
                 refs: list[np.ndarray] | None) -> list[np.ndarray | None]:
    """The kernel-replaceable core of one unit: stripe layout, streams, rANS, tokens, contexts and
    reconstruction (2.4-2.6, 3, 4 steps 1-3). Returns each slot's coded values s, (height, width)
    uint64, at its coded channel's index (None for Const channels). ``refs``: the reference
    reduced per slot (reference_planes) in an inter frame, else None."""
    cur = Cursor(body, what="stripe")
    lanes = Lanes.of(width, plan.lanes)  # 2.3
    decor = cur.u8("stripe layout")
    inter = refs is not None
    if decor == LAYOUT_PALETTE:
        return _decode_palette(plan, cur, lanes, width, height, inter)
    if LAYOUT_BILEVEL <= decor <= LAYOUT_TEMPLATE_SHARED:  # 2.10 / 2.14
        return decode_level(plan, cur, lanes, width, height, decor)
    if decor > DECOR_MAX:  # 2.4: closed field (0.3)
        raise Corrupt(f"stripe layout byte 0x{decor:02x}")
    if decor and not plan.decor_allowed:  # 2.4 / 2.2
        raise Corrupt(f"decorrelation mode {decor} where decorrelation is not allowed")
    preds = _read_predictors(cur, height, plan, inter, palette=False)
    streams = _take_streams(cur, len(plan.slots))  # 2.4: stream lens, streams

    # 3: decode every slot's residuals (slot 0 first: the cross context reads it)
    us: list[list[list[int]]] = []
    for model, stream in zip(plan.models, streams):
        us.append(decode_residuals(stream, model, height, lanes, us[0] if model.cross else None))

    # 4 step 1: unzigzag; step 2: decorrelation on (G, R, B)
    ds = [unzigzag(np.array(u, dtype=U64).reshape(height, width), s.depth) for u, s in zip(us, plan.slots)]
    if decor:
        ds[1], ds[2] = undo_decorrelation(ds[0], ds[1], ds[2], decor, plan.slots[0].depth)

    # 4 step 3: prediction per slot (inter frames: the reference reduced through this slot's map)
    uses_ref = inter and any(p >= 7 for p in preds)
    coded: list[np.ndarray | None] = [None] * len(plan.chans)
    for i, (slot, d, delta) in enumerate(zip(plan.slots, ds, plan.bounds)):
        ref = refs[i].tolist() if uses_ref and refs is not None else None
        v = reconstruct(d.tolist(), preds, lanes, slot.depth, delta, ref)
        coded[slot.coded.index] = np.array(v, dtype=U64).reshape(height, width)
    return coded


def _decode_palette(plan: UnitPlan, cur: Cursor, lanes: Lanes, width: int, height: int, inter: bool) -> list[np.ndarray | None]:
    """2.5: a palette stripe: entries, then an index plane coded as one 8-bit Lsb slot."""
    if plan.palette_model is None:  # 2.5: only when head present bit 0 is set
        raise Corrupt("palette stripe without head present bit 0")
    if not plan.palette_allowed:  # 2.5: every slot depth <= 16
        raise Corrupt("palette stripe with a slot deeper than 16 bits")
    n = cur.u8("palette count") + 1  # 2.5: n - 1, n = 1..=256
    slots = plan.slots
    entries = [[0] * n for _ in slots]
    for i in range(n):
        for j, slot in enumerate(slots):
            value = cur.u8("palette entry") if slot.depth <= 8 else cur.uint_le(2, "palette entry")
            if value >> slot.depth:  # 2.5: < 2^n_s
                raise Corrupt(f"palette entry {i} slot {j} value {value} not below 2^{slot.depth}")
            entries[j][i] = value
    preds = _read_predictors(cur, height, plan, inter, palette=True)
    (stream,) = _take_streams(cur, 1)
    u = decode_residuals(stream, plan.palette_model, height, lanes, None)
    d = unzigzag(np.array(u, dtype=U64).reshape(height, width), PALETTE_DEPTH).tolist()
    index = np.array(reconstruct(d, preds, lanes, PALETTE_DEPTH, 0, None), dtype=np.intp).reshape(height, width)
    index = np.where(index < n, index, 0)  # 2.5: entry 0 when i >= n
    coded: list[np.ndarray | None] = [None] * len(plan.chans)
    for j, slot in enumerate(slots):
        coded[slot.coded.index] = np.array(entries[j], dtype=U64)[index]
    return coded
