"""Template palette stripes (2.14, feature template_palettes): head record 35, layouts 0x83 /
0x84, typical rows, phase 0, the five candidate phases and the escape phase.

``decode_template`` is the Python reference of a stripe's index plane; csrc/bilevel.c is the
kernel and must agree bit for bit. The encoder's side (``template_counts``,
``template_stream``) runs the kernel too; its reference lists a unit's coding operations
(``template_ops_py``), vectorized, in the decoder's (step, phase, lane) order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.bilevel import (
    CONTEXTS,
    HALF,
    TEMPLATE,
    RansIn,
    encode_ops_py,
    level_counts,
    level_stream,
    read_used_values,
    step_positions,
    template_planes,
    template_value,
    within,
    write_used_values,
)
from imij_plugins.payload.entropy.models import M, Table, TableCode, read_table, table_bits, write_table
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.wire.bits import BitReader, BitWriter

CANDIDATE_CONTEXTS = 40  # 2.14: contexts 0..=39 of the candidate phases
CANDIDATES = (5, 6, 4, 8, 1)  # 2.14: c_j = t_5, t_6, t_4, t_8, t_1 (N, NE, NW, WW, NN)
W_K = 9  # 2.14: W = t_9
PHASES = 7  # phase 0, candidate phases 0..=4, the escape phase
ESCAPE_SYMBOLS = 256
MAX_ENTRY_DEPTH = 16  # 2.14 / 2.5: entries of slots at most 16 bits deep


class _IndexScheme:
    """The direct-index table's alphabet (2.14: a table as in 3.3 over symbols 0..=255, no run
    tokens), in the shape models.read_table checks."""

    alphabet = ESCAPE_SYMBOLS
    first_capped_run = ESCAPE_SYMBOLS  # no run tokens, so none past the cap


@dataclass(frozen=True, eq=False)
class TemplateTables:
    """Head record 35 (2.14); the probabilities as read-only arrays (tuples of Python ints would
    outweigh a small image)."""

    prec: int  # b - 4
    p: np.ndarray  # uint16, 1024 phase-0 probabilities of "equals W" (read-only)
    q: np.ndarray  # uint16, 40 candidate probabilities of "equals the candidate" (read-only)
    escape: Table | None  # the direct-index table
    shared: np.ndarray | None  # uint16 (entries, slots): the shared entries (read-only)

    @property
    def bits(self) -> int:
        return 4 + self.prec


def _probabilities(br: BitReader, count: int, b: int, what: str) -> np.ndarray:
    """2.14: ``count`` used-bit values of b bits as probabilities: v itself when b = 11 (corrupt
    above M), else v * 2^(10 - b); M / 2 where unused."""
    values, used = read_used_values(br, count, b)
    if b == 11:
        above = np.flatnonzero(values > M)
        if len(above):
            c = int(above[0])
            raise Corrupt(f"template record 35: {what} {c} probability {int(values[c])} above M = {M}")
    else:
        values <<= 10 - b
    probs = np.where(used, values, HALF).astype(np.uint16)
    probs.flags.writeable = False
    return probs


def read_template_record(payload: bytes | memoryview, depths: Sequence[int]) -> TemplateTables:
    """2.14: record 35, exactly ceil(bits / 8) bytes; ``depths`` are the slot depths in slot
    order (for the shared entries)."""
    br = BitReader(payload, "template record 35")
    prec = br.read(3)
    b = 4 + prec
    p = _probabilities(br, CONTEXTS, b, "phase 0 context")
    q = _probabilities(br, CANDIDATE_CONTEXTS, b, "candidate context")
    escape = read_table(br, _IndexScheme) if br.read(1) else None  # type: ignore[arg-type]
    shared = None
    if br.read(1):
        deep = [d for d in depths if d > MAX_ENTRY_DEPTH]
        if deep:  # 2.14: every slot at most 16 bits deep
            raise Corrupt(f"template record 35: shared entries with a slot {deep[0]} bits deep (at most 16)")
        n = br.read(8) + 1
        shared = br.read_fields(depths, n).astype(np.uint16)
        shared.flags.writeable = False
    expect = (br.bitpos + 7) // 8
    if len(payload) != expect:  # 2.14: exactly ceil(bits / 8) bytes
        raise Corrupt(f"template record 35: {len(payload)} bytes, its bits fill exactly {expect}")
    return TemplateTables(prec, p, q, escape, shared)


def template_record(prec: int, p_values: Sequence[int | None], q_values: Sequence[int | None],
                    escape: TableCode | None, shared: Sequence[Sequence[int]] | None, depths: Sequence[int]) -> bytes:
    """Record 35's payload from coded values v (None: the context is unused, M / 2)."""
    if not 0 <= prec <= 7 or len(p_values) != CONTEXTS or len(q_values) != CANDIDATE_CONTEXTS:
        raise ValueError("prec 0..=7, 1024 phase-0 and 40 candidate values")
    b = 4 + prec
    vmax = M if b == 11 else (1 << b) - 1
    bw = BitWriter()
    bw.write(prec, 3)
    write_used_values(bw, list(p_values) + list(q_values), b, vmax)
    bw.write(0 if escape is None else 1, 1)
    if escape is not None:
        write_table(bw, escape)
    bw.write(0 if shared is None else 1, 1)
    if shared is not None:
        if not 1 <= len(shared) <= 256 or any(d > MAX_ENTRY_DEPTH for d in depths):
            raise ValueError("1..=256 shared entries of slots at most 16 bits deep")
        bw.write(len(shared) - 1, 8)
        bw.write_fields(shared, depths)
    return bw.getvalue()


def template_record_len(prec: int, values: Sequence[int | None], escape: TableCode | None, shared: int,
                        depths: Sequence[int]) -> int:
    """The bytes of template_record's payload with these coded values (1024 + 40, None unused),
    table and ``shared`` entries (0: none), counted without writing it (2.14)."""
    used = sum(v is not None for v in values)
    bits = 3 + len(values) + (4 + prec) * used + 1 + (table_bits(escape) if escape is not None else 0) + 1
    if shared:
        bits += 8 + shared * sum(depths)
    return (bits + 7) // 8


# --- decoding (Python reference) -------------------------------------------------------------


def decode_template(tables: TemplateTables, n: int, typical: Sequence[bool], stream: bytes, width: int, height: int,
                    lanes: Lanes) -> np.ndarray:
    """2.14: the index plane i(r, c) of a template palette stripe of ``n`` entries."""
    rin = RansIn(stream, lanes.active)
    P, Q, esc = tables.p.tolist(), tables.q.tolist(), tables.escape
    plane = [[0] * width for _ in range(height)]
    starts, widths = lanes.starts, lanes.widths
    for r in range(height):
        if typical[r]:  # a typical row copies the row above (row 0: index 0), no symbol
            plane[r] = list(plane[r - 1]) if r else [0] * width
            continue
        row = plane[r]
        for x in range(lanes.lw):
            open_lanes: dict[int, list[int]] = {}
            taking = [l for l in range(lanes.active) if x < widths[l]]
            # 1. phase 0, every active lane
            for l in taking:
                c = starts[l] + x
                t = [template_value(plane, r, c, dy, dx, starts[l], width) for dy, dx in TEMPLATE]
                W = t[W_K]
                ctx = (1 << 9 if W == 0 else 0) | sum(1 << k for k in range(9) if t[k] == W)
                m = rin.binary(l, P[ctx])
                if m == 0:
                    row[c] = W
                elif n <= 2:
                    row[c] = 1 - W  # W is 0 or 1
                else:
                    open_lanes[l] = t
            # 2. candidate phases j = 0..=4
            for j in range(5):
                for l in sorted(open_lanes):
                    t = open_lanes[l]
                    cj = t[CANDIDATES[j]]
                    if cj == t[W_K] or any(cj == t[CANDIDATES[i]] for i in range(j)):
                        continue
                    count = min(sum(1 for tk in t if tk == cj), 7)
                    if rin.binary(l, Q[8 * j + count]) == 0:
                        row[starts[l] + x] = cj
                        del open_lanes[l]
            # 3. the escape phase, every lane still open
            for l in sorted(open_lanes):
                row[starts[l] + x] = rin.symbol(l, esc) if esc is not None else 0
    return np.array(plane, dtype=np.int64).reshape(height, width)


# --- encoding --------------------------------------------------------------------------------


def typical_rows(index: np.ndarray) -> np.ndarray:
    """Rows equal to the row above (row 0: all index 0)."""
    h = index.shape[0]
    out = np.zeros(h, dtype=bool)
    out[0] = not index[0].any()
    if h > 1:
        out[1:] = (index[1:] == index[:-1]).all(axis=1)
    return out


def rows_bytes(typical: Sequence[bool]) -> bytes:
    """2.14: ceil(rows / 8) bytes, LSB-first, bit r set for a typical row."""
    out = bytearray((len(typical) + 7) // 8)
    for r, flag in enumerate(typical):
        if flag:
            out[r >> 3] |= 1 << (r & 7)
    return bytes(out)


@dataclass
class TemplateOps:
    """A unit's operations in decode order: kind 0 = phase 0 (context, outcome m), 1 = a
    candidate phase (context 0..=39, outcome b), 2 = escape (symbol)."""

    kind: np.ndarray
    ctx: np.ndarray  # context, or the escape symbol
    bit: np.ndarray  # the binary outcome (0 for escapes)
    lane: np.ndarray

    def counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per phase-0 context (1024 x 2), candidate context (40 x 2) outcome counts, escape symbols."""
        p0 = np.zeros((CONTEXTS, 2), dtype=np.int64)
        k0 = self.kind == 0
        np.add.at(p0, (self.ctx[k0], self.bit[k0]), 1)
        q = np.zeros((CANDIDATE_CONTEXTS, 2), dtype=np.int64)
        k1 = self.kind == 1
        np.add.at(q, (self.ctx[k1], self.bit[k1]), 1)
        esc = np.bincount(self.ctx[self.kind == 2], minlength=ESCAPE_SYMBOLS)
        return p0, q, esc


def template_counts(index: np.ndarray, n: int, typical: np.ndarray, lanes: Lanes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2.14: the outcome counts of a template stripe whose index plane is ``index`` (``TemplateOps.counts``):
    the C kernel on the C backend, else the operations of ``template_ops_py``."""
    if _backend.active() == "c":
        return level_counts(index, n, typical, lanes)
    return template_ops_py(index, n, typical, lanes).counts()


def template_stream(index: np.ndarray, n: int, typical: np.ndarray, lanes: Lanes, p: np.ndarray, q: np.ndarray,
                    escape: Table | None, limit: int | None = None) -> bytes | None:
    """2.14: the rANS stream of a template stripe with record 35's probabilities (1/M units)
    and direct-index table; None when the tables cannot code it (an outcome without
    probability, or an escape other than 0 without the table) or the stream would pass
    ``limit`` bytes."""
    if _backend.active() == "c":
        return level_stream(index, n, typical, lanes, p, q, escape, limit)
    ops = template_ops_py(index, n, typical, lanes)
    binary = ops.kind != 2
    prob = np.where(ops.kind == 0, p[np.minimum(ops.ctx, CONTEXTS - 1)], q[np.minimum(ops.ctx, CANDIDATE_CONTEXTS - 1)])
    freq = np.where(ops.bit == 1, M - prob, prob)
    cum = np.where(ops.bit == 1, prob, 0)
    if escape is not None:
        efreq = np.array(escape.freq + (0,) * (256 - len(escape.freq)), dtype=np.int64)
        ecum = np.array(escape.cum + (0,) * (256 - len(escape.cum)), dtype=np.int64)
        freq = np.where(binary, freq, efreq[np.minimum(ops.ctx, 255)])
        cum = np.where(binary, cum, ecum[np.minimum(ops.ctx, 255)])
    else:  # without the table an escape decodes 0 and leaves the state unchanged
        if (ops.ctx[~binary] != 0).any():
            return None
        freq = np.where(binary, freq, M)
        cum = np.where(binary, cum, 0)
    if not freq.all():
        return None
    return within(encode_ops_py(ops.lane.tolist(), freq.tolist(), cum.tolist(), lanes.active), limit)


def template_bits(p0: np.ndarray, q: np.ndarray, escapes: np.ndarray, probs: np.ndarray, escape: Table | None) -> float:
    """The ideal code length in bits of a stripe's outcome counts (``template_counts``) under
    record 35's probabilities ``probs`` (1024 phase-0 then 40 candidate ones, 1/M units, each the
    probability of outcome 0) and direct-index table; infinite where they cannot code it."""
    zeros = np.concatenate([p0[:, 0], q[:, 0]])
    ones = np.concatenate([p0[:, 1], q[:, 1]])
    if escape is None:  # an escape decodes 0 at no cost (2.14)
        freq = np.zeros(ESCAPE_SYMBOLS)
        freq[0] = M
    else:
        freq = np.array(escape.freq + (0,) * (ESCAPE_SYMBOLS - len(escape.freq)), dtype=np.float64)
    p = probs.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 * inf where an outcome never occurs
        cost = [np.log2(M / p), np.log2(M / (M - p)), np.log2(M / freq)]
        return float(sum(np.where(n > 0, n * c, 0.0).sum() for n, c in zip((zeros, ones, escapes), cost)))


def template_ops_py(index: np.ndarray, n: int, typical: np.ndarray, lanes: Lanes) -> TemplateOps:
    """The references' list of a template stripe's operations: which phases each pixel of a
    non-typical row takes part in (2.14), every phase vectorized, then sorted into (step, phase,
    lane) order."""
    h, w = index.shape
    I = index.astype(np.int64)
    t = template_planes(I, lanes)
    pos, lane, step = step_positions(h, lanes)
    keep = ~typical[pos // w]
    pos, lane, step = pos[keep], lane[keep], step[keep]
    flat_t = [tk.ravel()[pos] for tk in t]
    Wf = flat_t[W_K]
    value = I.ravel()[pos]
    kinds, ctxs, bits, lanes_, keys = [], [], [], [], []

    def emit(mask: np.ndarray, phase: int, kind: int, ctx: np.ndarray, bit: np.ndarray) -> None:
        kinds.append(np.full(int(mask.sum()), kind, dtype=np.int64))
        ctxs.append(ctx[mask])
        bits.append(bit[mask])
        lanes_.append(lane[mask])
        keys.append((step[mask] * PHASES + phase) * 16 + lane[mask])

    ctx0 = (Wf == 0).astype(np.int64) << 9
    for k in range(9):
        ctx0 |= (flat_t[k] == Wf).astype(np.int64) << k
    m = (value != Wf).astype(np.int64)
    everyone = np.ones(len(pos), dtype=bool)
    emit(everyone, 0, 0, ctx0, m)
    if n >= 3:
        open_ = m == 1
        for j, kj in enumerate(CANDIDATES):
            cj = flat_t[kj]
            eligible = cj != Wf
            for i in range(j):
                eligible &= cj != flat_t[CANDIDATES[i]]
            part = open_ & eligible
            count = np.zeros(len(pos), dtype=np.int64)
            for tk in flat_t:
                count += tk == cj
            b = (value != cj).astype(np.int64)
            emit(part, 1 + j, 1, 8 * j + np.minimum(count, 7), b)
            open_ &= ~(part & (b == 0))
        emit(open_, 6, 2, value, np.zeros(len(pos), dtype=np.int64))
    else:
        bad = (m == 1) & (value != 1 - Wf)
        if bad.any():
            raise ValueError("an index plane of at most two entries holds an index above 1")
    key = np.concatenate(keys)
    order = np.argsort(key, kind="stable")
    return TemplateOps(np.concatenate(kinds)[order], np.concatenate(ctxs)[order], np.concatenate(bits)[order],
                       np.concatenate(lanes_)[order])
