"""Bilevel stripes (2.10, feature bilevel): head record 25, layouts 0x81 / 0x82, the ten-pixel
template shared with template palette stripes (2.14), and the binary rANS step (3.1's state
handling with a two-symbol table).

Decoding here is the Python reference (``decode_bilevel``); csrc/bilevel.c is the kernel and
must agree bit for bit. The encoder's side (``bilevel_counts``, ``bilevel_stream``) runs the
kernel's ``imij_level_counts`` / ``imij_level_encode``, which rebuild each step's operations from
the plane instead of listing them; the numpy references (``template_planes``,
``step_positions``, ``encode_ops_py``) give the same counts and bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.models import M_BITS, M, Table
from imij_plugins.payload.entropy.rans import STATE_LOW, Lanes
from imij_plugins.payload.kernel_codes import KERNEL_CODES
from imij_plugins.wire.bits import BitReader, BitWriter

CONTEXTS = 1 << 10  # 2.10: contexts c = 0..=1023
PROB_BITS = 11  # 2.10: p_c, 11 bits, <= M
HALF = M // 2  # 2.10 / 2.14: an unused context has probability M / 2

# 2.10: template pixel k at (dy, dx) relative to the pixel being decoded, k = 0..=9
TEMPLATE: tuple[tuple[int, int], ...] = (
    (-2, -1), (-2, 0), (-2, 1),
    (-1, -2), (-1, -1), (-1, 0), (-1, 1), (-1, 2),
    (0, -2), (0, -1),
)


# --- head record 25 --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BilevelTable:
    """Head record 25 (2.10): inv and one probability of t = 0 per context (1/M units), as
    read-only arrays (a tuple of 1024 Python ints would outweigh a small image)."""

    inv: int
    probs: np.ndarray  # uint16, 1024 entries; M / 2 for unused contexts
    used: np.ndarray  # bool: which contexts the record codes explicitly


def read_bilevel_record(payload: bytes | memoryview) -> BilevelTable:
    """2.10: inv 1 bit, then per context a used bit and, when used, p_c in 11 bits (<= M); the
    record is exactly ceil(bits / 8) bytes."""
    br = BitReader(payload, "bilevel record 25")
    inv = br.read(1)
    values, used = read_used_values(br, CONTEXTS, PROB_BITS)
    above = np.flatnonzero(values > M)
    if len(above):  # 2.10: p_c <= M
        c = int(above[0])
        raise Corrupt(f"bilevel record 25: context {c} probability {int(values[c])} above M = {M}")
    probs = np.where(used, values, HALF).astype(np.uint16)
    probs.flags.writeable = used.flags.writeable = False
    expect = (br.bitpos + 7) // 8
    if len(payload) != expect:  # 2.10: exactly ceil(bits / 8) bytes
        raise Corrupt(f"bilevel record 25: {len(payload)} bytes, its bits fill exactly {expect}")
    return BilevelTable(inv, probs, used)


def bilevel_record(inv: int, probs: Sequence[int | None]) -> bytes:
    """Record 25's payload: ``probs[c]`` None writes context c unused (M / 2)."""
    if inv not in (0, 1) or len(probs) != CONTEXTS:
        raise ValueError("inv 0 or 1 and one probability (or None) per context")
    bw = BitWriter()
    bw.write(inv, 1)
    write_used_values(bw, probs, PROB_BITS, M)
    return bw.getvalue()


def read_used_values(br: BitReader, count: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """2.10 / 2.14: per context a used bit and, when set, a value of ``bits`` bits: the values
    (0 when unused) and the used flags (csrc/models.c, or the reference loop)."""
    values, used = np.zeros(count, np.int64), np.zeros(count, bool)
    if _backend.active() != "c":
        for c in range(count):
            if br.read(1):
                values[c], used[c] = br.read(bits), True
        return values, used
    ffi, lib = _backend.ffi, _backend.lib
    pos, v16, u8 = ffi.new("uint64_t *", br.bitpos), np.empty(count, np.uint16), np.empty(count, np.uint8)
    code = lib.imij_read_used_values(ffi.from_buffer("uint8_t[]", br.buf), len(br.buf), pos, count, bits,
                                     ffi.from_buffer("uint16_t[]", v16, require_writable=True),
                                     ffi.from_buffer("uint8_t[]", u8, require_writable=True))
    if code:
        raise KERNEL_CODES.error(code, kernel=br.what)
    br.bitpos = pos[0]
    return v16.astype(np.int64), u8.astype(bool)


def write_used_values(bw: BitWriter, values: Sequence[int | None], bits: int, vmax: int) -> None:
    """2.10 / 2.14: per context a used bit and, when used, its value in ``bits`` bits (<= vmax),
    the fields of all contexts packed at once (a record has 1,024 or 1,064 of them)."""
    used = np.fromiter((x is not None for x in values), bool, len(values))
    v = np.fromiter((0 if x is None else x for x in values), np.int64, len(values))
    bad = np.flatnonzero((v < 0) | (v > vmax))
    if bad.size:
        raise ValueError(f"probability value {values[bad[0]]} outside 0..={vmax} at {bits} bits")
    fields = np.empty((len(v), 1 + bits), bool)  # a context's used bit, then its value LSB first
    fields[:, 0] = used
    fields[:, 1:] = (v[:, None] >> np.arange(bits)) & 1
    keep = np.ones_like(fields)
    keep[:, 1:] = used[:, None]  # an unused context writes its used bit only
    stream = fields[keep]
    bw.write(int.from_bytes(np.packbits(stream, bitorder="little").tobytes(), "little"), stream.size)


# --- the shared decoding machinery (Python reference) ----------------------------------------


class RansIn:
    """One stream of section 3 for a bilevel or template stripe: a u32 state per active lane
    (each >= 2^16), then u16 words read in (step, phase, lane) order (3.1)."""

    __slots__ = ("data", "pos", "states")

    def __init__(self, data: bytes, active: int):
        if len(data) < 4 * active:  # 3: an initial state per active lane
            raise Corrupt(f"stream of {len(data)} bytes is shorter than its {active} initial states")
        if (len(data) - 4 * active) & 1:  # 3: then a u16 sequence (our reading: whole words)
            raise Corrupt("stream does not end on a whole 16-bit word")
        self.states = [int.from_bytes(data[4 * l : 4 * l + 4], "little") for l in range(active)]
        for l, st in enumerate(self.states):
            if st < STATE_LOW:  # 3: each initial state >= 2^16
                raise Corrupt(f"initial rANS state 0x{st:x} of lane {l} below 2^16")
        self.data = data
        self.pos = 4 * active

    def _renorm(self, st: int) -> int:
        """3.1: a state below 2^16 takes the next word: x = (x << 16) | word."""
        if st < STATE_LOW:
            if self.pos + 2 > len(self.data):
                raise Corrupt("rANS stream has too few words")
            st = (st << 16) | self.data[self.pos] | (self.data[self.pos + 1] << 8)
            self.pos += 2
        return st

    def binary(self, lane: int, p: int) -> int:
        """2.10: slot = x mod M; t = 1 if slot >= p else 0; x = (t ? M - p : p) * (x >> 10) +
        slot - (t ? p : 0); renormalize."""
        st = self.states[lane]
        slot = st & (M - 1)
        if slot >= p:
            st = (M - p) * (st >> M_BITS) + slot - p
            t = 1
        else:
            st = p * (st >> M_BITS) + slot
            t = 0
        self.states[lane] = self._renorm(st)
        return t

    def symbol(self, lane: int, table: Table) -> int:
        """3.1's token step without extra bits: slot lookup, state update, renormalize."""
        st = self.states[lane]
        slot = st & (M - 1)
        sym = table.lut[slot]
        st = table.freq[sym] * (st >> M_BITS) + slot - table.cum[sym]
        self.states[lane] = self._renorm(st)
        return sym


def template_value(plane: list[list[int]], r: int, c: int, dy: int, dx: int, lane_start: int, gw: int) -> int:
    """2.10: t(r + dy, c + dx): 0 above the stripe and outside the group; a pixel of the current
    row left of the lane's first column reads the pixel one row up at the same column (0 on
    stripe row 0). Rows above cross lane boundaries like any other pixel."""
    y, x = r + dy, c + dx
    if x < 0 or x >= gw:
        return 0
    if dy == 0 and x < lane_start:
        y = r - 1
    if y < 0:
        return 0
    return plane[y][x]


def decode_binary_plane(stream: bytes, probs: Sequence[int], width: int, height: int, lanes: Lanes) -> list[list[int]]:
    """2.10: decode every pixel's t, step by step (row, lane column), lanes ascending."""
    rin = RansIn(stream, lanes.active)
    plane = [[0] * width for _ in range(height)]
    starts, widths = lanes.starts, lanes.widths
    for r in range(height):
        row = plane[r]
        for x in range(lanes.lw):
            for l in range(lanes.active):
                if x >= widths[l]:  # 3: positions past a lane's width decode nothing
                    continue
                c = starts[l] + x
                ctx = 0
                for k, (dy, dx) in enumerate(TEMPLATE):
                    ctx |= template_value(plane, r, c, dy, dx, starts[l], width) << k
                row[c] = rin.binary(l, probs[ctx])
    return plane


def decode_bilevel(table: BilevelTable, stream: bytes, width: int, height: int, lanes: Lanes) -> np.ndarray:
    """v = t xor inv for every pixel of a bilevel (palette) stripe, as an (height, width) array."""
    t = np.array(decode_binary_plane(stream, table.probs.tolist(), width, height, lanes), dtype=np.uint8).reshape(height, width)
    return t ^ np.uint8(table.inv)


# --- encoder helpers (vectorized) ------------------------------------------------------------


def lane_columns(lanes: Lanes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group column c: its lane, lane column x, and the columns in step order within a row
    (x ascending, then lane ascending: 2.3's steps)."""
    gw = lanes.gw
    lane_of = np.empty(gw, dtype=np.int64)
    x_of = np.empty(gw, dtype=np.int64)
    for l, (s, w) in enumerate(zip(lanes.starts, lanes.widths)):
        lane_of[s : s + w] = l
        x_of[s : s + w] = np.arange(w)
    order = np.lexsort((lane_of, x_of))
    return lane_of, x_of, order


def template_planes(plane: np.ndarray, lanes: Lanes) -> list[np.ndarray]:
    """The ten template pixels t_k of every pixel of a unit (2.10's rules), as (h, w) arrays of
    the plane's dtype (bilevel values and palette indices: uint8 suffices)."""
    h, w = plane.shape
    pad = np.zeros((h + 2, w + 4), dtype=plane.dtype)  # 2 rows above, 2 columns each side
    pad[2:, 2:-2] = plane
    _, x_of, _ = lane_columns(lanes)
    out = []
    for dy, dx in TEMPLATE:
        shifted = pad[2 + dy : 2 + dy + h, 2 + dx : 2 + dx + w]
        if dy == 0:  # left of the lane's first column: one row up, same column
            up = pad[1 : 1 + h, 2 + dx : 2 + dx + w]
            shifted = np.where((x_of < -dx)[None, :], up, shifted)
        out.append(shifted)
    return out


def bilevel_contexts(t: np.ndarray, lanes: Lanes) -> np.ndarray:
    """2.10: every pixel's context, sum of t_k << k."""
    if (t > 1).any():
        raise ValueError("a bilevel plane holds a value above 1")
    ctx = np.zeros(t.shape, dtype=np.int64)
    for k, plane in enumerate(template_planes(t.astype(np.uint8), lanes)):
        ctx |= plane.astype(np.int64) << k
    return ctx


def step_positions(h: int, lanes: Lanes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat positions r * w + c of a unit in decode order (row, lane column, lane), with each
    position's lane and step index r * lw + x."""
    lane_of, x_of, order = lane_columns(lanes)
    w = lanes.gw
    rows = np.arange(h, dtype=np.int64)[:, None]
    pos = (rows * w + order[None, :]).ravel()
    lane = np.broadcast_to(lane_of[order][None, :], (h, w)).ravel()
    step = (rows * lanes.lw + x_of[order][None, :]).ravel()
    return pos, lane, step


def level_counts(plane: np.ndarray, n: int, typical: np.ndarray | None, lanes: Lanes) -> tuple[np.ndarray, ...]:
    """C kernel: outcome counts of a bilevel t plane (``typical`` None) or a template index plane
    of n entries: phase 0 (1024 x 2), candidate phases (40 x 2), escaped indices (256)."""
    ffi, lib = _backend.ffi, _backend.lib
    h, w = plane.shape
    phase0, cand, escape = np.zeros((CONTEXTS, 2), np.uint32), np.zeros((40, 2), np.uint32), np.zeros(256, np.uint32)
    buf = lambda a, t="uint32_t[]": ffi.from_buffer(t, a, require_writable=True)  # noqa: E731
    scratch = np.empty((h + 2) * (w + 4), np.uint8)
    got = lib.imij_level_counts(
        ffi.from_buffer("uint8_t[]", np.ascontiguousarray(plane, np.uint8)), w, h, len(lanes.starts), n,
        ffi.NULL if typical is None else ffi.from_buffer("uint8_t[]", np.ascontiguousarray(typical, np.uint8)),
        buf(scratch, "uint8_t[]"), scratch.size, buf(phase0), buf(cand), buf(escape),
    )
    if got < 0:
        raise KERNEL_CODES.error(got, kernel="level counts")
    return phase0.astype(np.int64), cand.astype(np.int64), escape.astype(np.int64)


def level_stream(plane: np.ndarray, n: int, typical: np.ndarray | None, lanes: Lanes, phase0: np.ndarray,
                 cand: np.ndarray | None = None, escape: Table | None = None, limit: int | None = None) -> bytes | None:
    """C kernel: the rANS stream of a bilevel t plane or template index plane (``level_counts``'s
    planes) with its probabilities (1/M units of t = 0, "equals W", "equals the candidate") and
    the direct-index table; None when an outcome has no probability, or when the stream would
    pass ``limit`` bytes (the kernel stops there: a chooser's candidate that cannot win). Without
    a limit, most streams are far below 2 bytes per operation, so a small buffer is tried first."""
    ffi, lib = _backend.ffi, _backend.lib
    h, w = plane.shape
    src = ffi.from_buffer("uint8_t[]", np.ascontiguousarray(plane, np.uint8))
    rows = ffi.NULL if typical is None else ffi.from_buffer("uint8_t[]", np.ascontiguousarray(typical, np.uint8))
    scratch = np.empty((h + 2) * (w + 4), np.uint8)
    u16 = lambda a: ffi.from_buffer("uint16_t[]", np.ascontiguousarray(a, np.uint16))  # noqa: E731
    p0, q = u16(phase0), u16(np.zeros(40) if cand is None else cand)
    if escape is None:
        efreq = ecum = ffi.NULL
    else:
        efreq, ecum = u16(escape.freq + (0,) * (256 - len(escape.freq))), u16(escape.cum + (0,) * (256 - len(escape.cum)))
    most = 64 + 2 * (7 if typical is not None else 1) * h * w
    caps = (min(most, 4096 + h * w // 4), most) if limit is None else (min(most, limit),)
    space, freq = lib.IMIJ_E_SPACE, lib.IMIJ_E_FREQ
    for cap in caps:
        dst = np.empty(cap, np.uint8)
        got = lib.imij_level_encode(src, w, h, len(lanes.starts), n, rows,
                                    ffi.from_buffer("uint8_t[]", scratch, require_writable=True), scratch.size,
                                    p0, q, efreq, ecum, ffi.from_buffer("uint8_t[]", dst, require_writable=True), cap)
        if got != space:  # else the larger buffer
            break
    if got == freq or (got == space and limit is not None):  # no probability, or past the limit
        return None
    if got < 0:
        raise KERNEL_CODES.error(got, kernel="level stream")
    return dst[:got].tobytes()


def within(stream: bytes | None, limit: int | None) -> bytes | None:
    """The reference's ``limit`` of level_stream: None for a stream longer than it."""
    return None if stream is None or (limit is not None and len(stream) > limit) else stream


def bilevel_counts(t: np.ndarray, lanes: Lanes) -> tuple[np.ndarray, np.ndarray]:
    """2.10: per context, how many pixels of the t plane are 0 and how many 1."""
    if _backend.active() == "c":
        phase0, _, _ = level_counts(t, 2, None, lanes)
        return phase0[:, 0], phase0[:, 1]
    ctx = bilevel_contexts(t, lanes)
    return np.bincount(ctx[t == 0], minlength=CONTEXTS), np.bincount(ctx[t == 1], minlength=CONTEXTS)


def bilevel_stream(t: np.ndarray, lanes: Lanes, probs: np.ndarray, limit: int | None = None) -> bytes | None:
    """2.10: the rANS stream of a t plane with record 25's probabilities of t = 0; None when the
    table gives a pixel's outcome no probability, or the stream would pass ``limit`` bytes."""
    if _backend.active() == "c":
        return level_stream(t, 2, None, lanes, probs, limit=limit)
    pos, lane, _ = step_positions(t.shape[0], lanes)
    flat = t.ravel()[pos]
    p = probs[bilevel_contexts(t, lanes).ravel()[pos]]
    freq = np.where(flat == 1, M - p, p)
    if not freq.all():
        return None
    return within(encode_ops_py(lane.tolist(), freq.tolist(), np.where(flat == 1, p, 0).tolist(), lanes.active), limit)


def encode_ops_py(lane: list[int], freq: list[int], cum: list[int], active: int) -> bytes:
    """Reverse rANS over operations listed in decode order (the references' encoder): operation i
    codes a symbol of frequency freq[i] at cum[i] in lane lane[i]'s state (3.1). Returns the
    stream: the initial states, then the words in the order the decoder reads them. Operations
    with freq M leave the state unchanged."""
    states = [STATE_LOW] * active
    words: list[int] = []
    limit = 32 - M_BITS
    for i in range(len(lane) - 1, -1, -1):
        f = freq[i]
        if f == M:
            continue
        if not f:
            raise ValueError("a symbol without frequency")
        l = lane[i]
        x = states[l]
        if x >= f << limit:  # x_max = ((2^16 >> 10) << 16) * f
            words.append(x & 0xFFFF)
            x >>= 16
        states[l] = ((x // f) << M_BITS) + (x % f) + cum[i]
    out = bytearray()
    for st in states:
        out += st.to_bytes(4, "little")
    for wd in reversed(words):
        out += wd.to_bytes(2, "little")
    return bytes(out)


def binary_cost(zeros: np.ndarray, ones: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Bits to code ``zeros`` t = 0 and ``ones`` t = 1 at probability p of t = 0 (inf if
    impossible)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c0 = np.where(zeros > 0, zeros * -np.log2(np.maximum(p, 0) / M), 0.0)
        c1 = np.where(ones > 0, ones * -np.log2(np.maximum(M - p, 0) / M), 0.0)
    return c0 + c1  # no NaN: an outcome of probability 0 costs count * inf = inf, an absent one 0


def prob_scale(bits: np.ndarray) -> np.ndarray:
    """2.10 / 2.14: a coded value's step in probability at ``bits`` bits (2^(10 - b) below 11)."""
    return np.where(bits == 11, 1, 1 << np.maximum(10 - bits, 0))


def fit_probabilities(zeros: np.ndarray, ones: np.ndarray,
                      bits: int | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per context: the coded value v, its probability, whether writing it (``bits`` bits)
    beats leaving the context unused (M / 2), and the bits of the context written (its value
    and its outcomes at v's probability), from observed counts (5's notes: p_c =
    round(M * zeros / (zeros + ones)), limited to 1..=M-1 when both occur, M or 0 when only one
    does; probabilities of fewer than 11 bits are multiples of 2^(10 - b)). ``bits`` may be a
    column (k, 1) of precisions: every result then has a row per precision."""
    zeros = zeros.astype(np.float64)
    ones = ones.astype(np.float64)
    total = zeros + ones
    bits = np.asarray(bits)
    scale = prob_scale(bits)
    vmax = np.where(bits == 11, M, (1 << bits) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.rint(np.where(total > 0, zeros / np.maximum(total, 1) * M / scale, vmax / 2))
    both = (zeros > 0) & (ones > 0)
    hi_both = np.where(bits == 11, (M - 1) // scale, vmax)  # v * scale <= M - 1
    v = np.where(both, np.clip(v, 1, hi_both), v)
    v = np.where((zeros > 0) & (ones == 0), vmax, v)
    v = np.where((ones > 0) & (zeros == 0), 0, v)
    v = np.clip(v, 0, vmax).astype(np.int64)
    p = v * scale
    cost_used = bits + binary_cost(zeros, ones, p)
    cost_unused = total  # M / 2: one bit per outcome
    used = (total > 0) & (cost_used + 1e-9 < cost_unused)
    return v, np.where(used, p, HALF), used, cost_used
