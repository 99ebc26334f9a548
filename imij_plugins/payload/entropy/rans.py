"""Interleaved rANS (3, 3.1): one slot's stream decoded into zigzag residuals, and its mirror.

Stream (3): an initial u32 state per active lane (each >= 2^16), then u16 words. Per step
(row, lane column) the token phase runs over the lanes in ascending order, then the extra-bits
phase, then the high extra-bits phase; a state below 2^16 after any of them takes the next word,
so words are consumed in order (step, phase, lane). The encoder replays that order in reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.models import M_BITS, M, Model
from imij_plugins.payload.entropy.tokens import RUN_CAP

STATE_LOW = 1 << 16  # 3: states live in [2^16, 2^32)
T_CAP = 1 << 16  # 3.1: T(v) = min(v >> ctx_shift, 2^16)
MAX_CLASS = 15


@dataclass(frozen=True)
class Lanes:
    """2.3: a group of width gw split into L lanes of width lw = ceil(gw / L); the active prefix."""

    gw: int
    lw: int
    starts: tuple[int, ...]
    widths: tuple[int, ...]  # active lanes only (the non-empty prefix)

    @classmethod
    def of(cls, gw: int, lanes: int) -> Lanes:
        lw = -(-gw // lanes)
        active = -(-gw // lw)
        starts = tuple(l * lw for l in range(active))
        widths = tuple(min(lw, gw - s) for s in starts)
        return cls(gw, lw, starts, widths)

    @property
    def active(self) -> int:
        return len(self.starts)


def t_values(row: list[int], shift: int) -> list[int]:
    """3.1: T(v) = min(v >> ctx_shift, 2^16) over a row."""
    return [min(v >> shift, T_CAP) for v in row]


def context_class(x: int, r: int, tw: int, tn: int, cross: bool, t0: int) -> int:
    """3.1: the class min(bit_length(sum), 15) of a position from T'd neighbor residuals."""
    if x > 0 and r > 0:
        s = tw + tn
    elif x > 0:
        s = 2 * tw
    elif r > 0:
        s = 2 * tn
    else:
        s = 0
    if cross:
        s += t0
    return min(s.bit_length(), MAX_CLASS)


# --- decoding --------------------------------------------------------------------------------


def decode_residuals(stream: bytes, model: Model, rows: int, lanes: Lanes, u0: list[list[int]] | None) -> list[list[int]]:
    """3 / 3.1 / 3.2: decode one slot's stream into u[r][c] (zigzag residuals, group columns c).

    ``u0`` is slot 0's residuals when the model uses the cross context. Reading a word past the
    stream is Corrupt ("too few words"); words the decode never reads are ignored (2.7).
    """
    A = lanes.active
    blen = len(stream)
    if blen < 4 * A:  # 3: an initial state per active lane
        raise Corrupt(f"stream of {blen} bytes is shorter than its {A} initial states")
    if (blen - 4 * A) & 1:  # 3: the words are a u16 sequence (our reading: whole words)
        raise Corrupt("stream does not end on a whole 16-bit word")
    states = [int.from_bytes(stream[4 * l : 4 * l + 4], "little") for l in range(A)]
    for l, st in enumerate(states):
        if st < STATE_LOW:  # 3: each initial state >= 2^16
            raise Corrupt(f"initial rANS state 0x{st:x} of lane {l} below 2^16")
    pos = 4 * A

    scheme = model.scheme
    shift = model.ctx_shift
    deep = scheme.n > 16  # 3.1: T(v) = v when n <= 16 (ctx_shift is 0, v < 2^16)
    cross = model.cross
    # 3.1: per class, the table of ctx_map[class]
    by_class = [model.tables[model.ctx_map[c]] for c in range(MAX_CLASS + 1)]
    luts = [t.lut for t in by_class]
    freqs = [t.freq for t in by_class]
    cums = [t.cum for t in by_class]
    # 3.2: each symbol's (is_run, base, nb); symbols past a table's last have no weight
    info = [scheme.token(t) for t in range(scheme.alphabet)]

    gw, lw, starts, widths = lanes.gw, lanes.lw, lanes.starts, lanes.widths
    t0 = [t_values(row, shift) for row in u0] if cross and u0 is not None else None
    u: list[list[int]] = []
    tu: list[list[int]] = []
    run = [0] * A  # 3.1: per-lane zero run counters
    pend_l = [0] * A
    pend_c = [0] * A
    pend_nb = [0] * A
    pend_base = [0] * A
    pend_run = [False] * A
    pend_e = [0] * A
    tprev: list[int] = []
    for r in range(rows):
        urow = [0] * gw
        trow = [0] * gw if deep else urow
        c0row = t0[r] if t0 is not None else None
        for x in range(lw):
            # token phase, lanes ascending (3.1)
            npend = 0
            for l in range(A):
                if x >= widths[l]:  # 3: positions past a lane's width decode nothing
                    continue
                c = starts[l] + x
                if run[l]:  # 3.1: inside a zero run: skip the step, output 0
                    run[l] -= 1
                    continue
                # 3.1: the context from lane-local neighbors (and slot 0 with cross)
                if x > 0:
                    s = trow[c - 1] + tprev[c] if r > 0 else 2 * trow[c - 1]
                else:
                    s = 2 * tprev[c] if r > 0 else 0
                if c0row is not None:
                    s += c0row[c]
                cls = s.bit_length()
                if cls > MAX_CLASS:
                    cls = MAX_CLASS
                st = states[l]
                slot = st & (M - 1)
                sym = luts[cls][slot]  # 3.1: cum[sym] <= slot < cum[sym] + freq
                st = freqs[cls][sym] * (st >> M_BITS) + slot - cums[cls][sym]
                if st < STATE_LOW:  # 3.1: renormalize
                    if pos + 2 > blen:
                        raise Corrupt("rANS stream has too few words")
                    st = (st << 16) | stream[pos] | (stream[pos + 1] << 8)
                    pos += 2
                states[l] = st
                is_run, base, nb = info[sym]
                pend_l[npend] = l
                pend_c[npend] = c
                pend_run[npend] = is_run
                pend_base[npend] = base
                pend_nb[npend] = nb
                pend_e[npend] = 0
                npend += 1
            if not npend:
                continue
            # extra-bits phase (3.1): n1 = min(nb, 16) bits from the state
            for i in range(npend):
                nb = pend_nb[i]
                if nb:
                    n1 = nb if nb < 16 else 16
                    l = pend_l[i]
                    st = states[l]
                    pend_e[i] = st & ((1 << n1) - 1)
                    st >>= n1
                    if st < STATE_LOW:
                        if pos + 2 > blen:
                            raise Corrupt("rANS stream has too few words")
                        st = (st << 16) | stream[pos] | (stream[pos + 1] << 8)
                        pos += 2
                    states[l] = st
            # high extra-bits phase (3.1, extended tier): n2 = nb - 16 bits
            for i in range(npend):
                nb = pend_nb[i]
                if nb > 16:
                    n2 = nb - 16
                    l = pend_l[i]
                    st = states[l]
                    pend_e[i] |= (st & ((1 << n2) - 1)) << 16
                    st >>= n2
                    if st < STATE_LOW:
                        if pos + 2 > blen:
                            raise Corrupt("rANS stream has too few words")
                        st = (st << 16) | stream[pos] | (stream[pos + 1] << 8)
                        pos += 2
                    states[l] = st
            for i in range(npend):
                value = pend_base[i] + pend_e[i]
                if pend_run[i]:  # 3.1: len - 1 = base + e; this position and len - 1 more are 0
                    run[pend_l[i]] = value
                else:  # 3.1: u = base + e
                    c = pend_c[i]
                    urow[c] = value
                    if deep:
                        trow[c] = min(value >> shift, T_CAP)
        u.append(urow)
        tu.append(trow)
        tprev = trow
    return u


# --- encoding --------------------------------------------------------------------------------


@dataclass
class Event:
    """One token of a stream as the writer codes it: its lane, context, symbol and extra bits."""

    lane: int
    ctx: int
    sym: int
    nb: int
    e: int


def tokenize(u: list[list[int]], model_scheme, cross: bool, shift: int, ctx_map: tuple[int, ...], lanes: Lanes,
             u0: list[list[int]] | None, run_min: int | None) -> list[list[Event]]:
    """The writer's tokens of one slot, grouped by step in decode order (3.1, 3.2).

    Zero runs of at least ``run_min`` positions of a lane (lane order, across rows) become run
    tokens of at most 2^15 positions; ``run_min`` None codes no runs.
    """
    scheme = model_scheme
    rows = len(u)
    A = lanes.active
    # per lane, the positions in lane order and the zero-run length starting at each
    remaining: list[dict[tuple[int, int], int]] = []
    if run_min is not None:
        for l in range(A):
            seq = [(r, x) for r in range(rows) for x in range(lanes.widths[l])]
            runlen: dict[tuple[int, int], int] = {}
            acc = 0
            for r, x in reversed(seq):
                acc = acc + 1 if u[r][lanes.starts[l] + x] == 0 else 0
                runlen[(r, x)] = acc
            remaining.append(runlen)
    t = [t_values(row, shift) for row in u]
    t0 = [t_values(row, shift) for row in u0] if cross and u0 is not None else None
    skip = [0] * A
    steps: list[list[Event]] = []
    for r in range(rows):
        for x in range(lanes.lw):
            events = []
            for l in range(A):
                if x >= lanes.widths[l]:
                    continue
                if skip[l]:
                    skip[l] -= 1
                    continue
                c = lanes.starts[l] + x
                cls = context_class(x, r, t[r][c - 1] if x else 0, t[r - 1][c] if r else 0,
                                    t0 is not None, t0[r][c] if t0 is not None else 0)
                ctx = ctx_map[cls]
                zeros = remaining[l][(r, x)] if run_min is not None else 0
                if run_min is not None and zeros >= run_min:
                    length = min(zeros, RUN_CAP)
                    sym, nb, e = scheme.run_symbol(length)
                    skip[l] = length - 1
                else:
                    sym, nb, e = scheme.value_symbol(u[r][c])
                events.append(Event(l, ctx, sym, nb, e))
            if events:
                steps.append(events)
    return steps


def encode_stream(steps: list[list[Event]], freqs: list[tuple[int, ...]], cums: list[tuple[int, ...]],
                  active: int, slack_words: int = 0) -> bytes:
    """Reverse rANS: emit the stream whose decode (3.1) yields ``steps`` exactly.

    ``freqs[ctx][sym]`` / ``cums[ctx][sym]`` are the decoder's normalized tables. The decoder's
    operations (symbol, extra bits, high extra bits per (step, phase, lane)) are listed in decode
    order and encoded backwards; words come out reversed, so the decoder reads them in order.
    """
    ops: list[tuple[int, int, int, int]] = []  # (lane, kind 0 symbol / 1 bits, a, b)
    for events in steps:
        for ev in events:
            f = freqs[ev.ctx][ev.sym]
            if not f:
                raise ValueError("symbol without frequency in its table")
            ops.append((ev.lane, 0, f, cums[ev.ctx][ev.sym]))
        for ev in events:
            if ev.nb:
                n1 = min(ev.nb, 16)
                ops.append((ev.lane, 1, n1, ev.e & ((1 << n1) - 1)))
        for ev in events:
            if ev.nb > 16:
                ops.append((ev.lane, 1, ev.nb - 16, ev.e >> 16))
    states = [STATE_LOW] * active
    words: list[int] = []
    for lane, kind, a, b in reversed(ops):
        x = states[lane]
        if kind == 0:
            f, cum = a, b
            if x >= (f << (32 - M_BITS)):  # x_max = ((2^16 >> 10) << 16) * f
                words.append(x & 0xFFFF)
                x >>= 16
            x = ((x // f) << M_BITS) + (x % f) + cum
        else:
            n, v = a, b
            if x >= 1 << (32 - n):
                words.append(x & 0xFFFF)
                x >>= 16
            x = (x << n) | v
        states[lane] = x
    out = bytearray()
    for st in states:
        out += st.to_bytes(4, "little")
    for w in reversed(words):
        out += w.to_bytes(2, "little")
    out += bytes(2 * slack_words)
    return bytes(out)
