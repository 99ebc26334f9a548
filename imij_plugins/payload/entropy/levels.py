"""Stripe layouts 0x81-0x84 (2.10 bilevel, 2.14 template palette) behind ``stripe.decode_coded``'s
contract: ``decode_level`` is the Python reference of one unit, ``decode_level_c`` the C kernel
(csrc/bilevel.c) with the payload's records prepared once as ``LevelStructs``. Both return each
slot's coded values at its coded channel's index and must agree bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.bilevel import BilevelTable, decode_bilevel
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.template import MAX_ENTRY_DEPTH, TemplateTables, decode_template
from imij_plugins.payload.kernel_codes import EXPLAIN_PIXELS, KERNEL_CODES
from imij_plugins.registry.features import FeatureId
from imij_plugins.wire.cursor import Cursor

if TYPE_CHECKING:
    from imij_plugins.payload.entropy.stripe import UnitPlan

U64 = np.uint64
LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE = 0x81, 0x82
LAYOUT_TEMPLATE_OWN, LAYOUT_TEMPLATE_SHARED = 0x83, 0x84
LEVEL_LAYOUTS = (LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE, LAYOUT_TEMPLATE_OWN, LAYOUT_TEMPLATE_SHARED)


def _gate(plan: UnitPlan, decor: int) -> None:
    """0.1 / 2.10 / 2.14: without its feature a layout is gated syntax (Corrupt); without its
    head record it is Corrupt."""
    bilevel = decor in (LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE)
    feature = FeatureId.BILEVEL if bilevel else FeatureId.TEMPLATE_PALETTES
    if feature not in plan.features:
        raise Corrupt(f"stripe layout 0x{decor:02x} without feature {feature.name.lower()}")
    if (plan.bilevel_table if bilevel else plan.template_tables) is None:
        raise Corrupt(f"stripe layout 0x{decor:02x} without head record {25 if bilevel else 35}")


def _read_entries(cur: Cursor, plan: UnitPlan, n: int) -> list[tuple[int, ...]]:
    """2.5: n entries, per slot in slot order u8 (depth <= 8) or u16 LE, each < 2^n_s."""
    entries = []
    for i in range(n):
        entry = []
        for j, slot in enumerate(plan.slots):
            value = cur.u8("palette entry") if slot.depth <= 8 else cur.uint_le(2, "palette entry")
            if value >> slot.depth:
                raise Corrupt(f"palette entry {i} slot {j} value {value} not below 2^{slot.depth}")
            entry.append(value)
        entries.append(tuple(entry))
    return entries


def _typical(cur: Cursor, rows: int) -> list[bool]:
    """2.14: ceil(rows / 8) bytes, LSB-first; bit r set when stripe row r repeats the row above;
    bits past the last row are 0 (our reading: a set one is Corrupt)."""
    raw = cur.take((rows + 7) // 8, "typical-row bits")
    if rows & 7 and raw[-1] >> (rows & 7):
        raise Corrupt("stripe: typical-row bit set past the last row")
    return [bool(raw[r >> 3] >> (r & 7) & 1) for r in range(rows)]


def decode_level(plan: UnitPlan, cur: Cursor, lanes: Lanes, width: int, height: int, decor: int) -> list[np.ndarray | None]:
    """The Python reference of one unit whose layout byte (already read) is 0x81-0x84."""
    _gate(plan, decor)
    slots = plan.slots
    coded: list[np.ndarray | None] = [None] * len(plan.chans)
    if decor == LAYOUT_BILEVEL:  # 2.10: the payload's only slot has depth 1
        if len(slots) != 1 or slots[0].depth != 1:
            raise Corrupt("stripe: bilevel stripe (0x81) where the payload's only slot is not 1 bit deep")
        table: BilevelTable = plan.bilevel_table  # type: ignore[assignment]
        v = decode_bilevel(table, bytes(cur.take(cur.remaining())), width, height, lanes)
        coded[slots[0].coded.index] = v.astype(U64)
        return coded
    deep = [s.depth for s in slots if s.depth > MAX_ENTRY_DEPTH]
    if deep:  # 2.5 (our reading for 0x82-0x84): entries need slots at most 16 bits deep
        raise Corrupt(f"stripe: palette entries of a slot {deep[0]} bits deep (at most 16)")
    if decor == LAYOUT_BILEVEL_PALETTE:
        n = cur.u8("palette count") + 1
        if n > 2:  # 2.10: one or two entries, more is corrupt
            raise Corrupt(f"stripe: bilevel palette stripe (0x82) with {n} entries")
        entries = _read_entries(cur, plan, n)
        table = plan.bilevel_table  # type: ignore[assignment]
        index = decode_bilevel(table, bytes(cur.take(cur.remaining())), width, height, lanes).astype(np.int64)
    else:
        tables: TemplateTables = plan.template_tables  # type: ignore[assignment]
        if decor == LAYOUT_TEMPLATE_OWN:
            n = cur.u8("palette count") + 1
            entries = _read_entries(cur, plan, n)
        else:
            if tables.shared is None:  # 2.14: 0x84 needs shared entries
                raise Corrupt("stripe: layout 0x84 while head record 35 has no shared entries")
            entries = list(tables.shared)
            n = len(entries)
        typical = _typical(cur, height)
        index = decode_template(tables, n, typical, bytes(cur.take(cur.remaining())), width, height, lanes)
    index = np.where(index < n, index, 0)  # entry 0 for an index past the last entry
    for j, slot in enumerate(slots):
        coded[slot.coded.index] = np.array([e[j] for e in entries], dtype=U64)[index]
    return coded


# --- the C kernel ----------------------------------------------------------------------------


class LevelStructs:
    """A plan's records 25 / 35 as csrc/imij_kernels.h's structs, built once per payload."""

    def __init__(self, plan: UnitPlan):
        ffi = _backend.ffi
        self.unit = ffi.new("imij_level_unit *")
        u = self.unit
        u.lanes = plan.lanes
        u.nslots = len(plan.slots)
        for i, slot in enumerate(plan.slots[:8]):
            u.depth[i] = slot.depth
        u.features = (1 if FeatureId.BILEVEL in plan.features else 0) | (2 if FeatureId.TEMPLATE_PALETTES in plan.features else 0)
        self.bilevel = ffi.NULL
        self.tmpl = ffi.NULL
        bt: BilevelTable | None = plan.bilevel_table
        if bt is not None:
            self.bilevel = ffi.new("imij_bilevel_table *")
            self.bilevel.inv = bt.inv
            _field(ffi, self.bilevel, "prob")[:] = bt.probs
        tt: TemplateTables | None = plan.template_tables
        if tt is not None:
            t = self.tmpl = ffi.new("imij_template_tables *")  # zeroed: nothing past a table's last symbol
            _field(ffi, t, "p")[:] = tt.p
            _field(ffi, t, "q")[:] = tt.q
            if tt.escape is not None:
                t.escape = 1
                _field(ffi, t, "freq")[: len(tt.escape.freq)] = tt.escape.freq
                _field(ffi, t, "cum")[: len(tt.escape.cum)] = tt.escape.cum
                ffi.memmove(ffi.addressof(t, "lookup"), tt.escape.lut, len(tt.escape.lut))
            if tt.shared is not None:
                t.nshared = len(tt.shared)
                cols = min(8, tt.shared.shape[1])
                _field(ffi, t, "shared").reshape(256, 8)[: len(tt.shared), :cols] = tt.shared[:, :cols]
        u.bilevel = self.bilevel
        u.tmpl = self.tmpl

    def unit_of(self, width: int, height: int, out_bytes: int):
        """The kernel's ``imij_level_unit`` for one unit of ``width`` x ``height`` decoding into planes of
        ``out_bytes`` per value (0: through a sample store); per call, as units decode on many threads."""
        unit = _backend.ffi.new("imij_level_unit *", self.unit[0])
        unit.width, unit.height, unit.out_bytes = width, height, out_bytes
        return unit


def _field(ffi, struct, name: str) -> np.ndarray:
    """A uint16 array field of a kernel struct as a numpy view of its memory (filled without copies)."""
    return np.frombuffer(ffi.buffer(ffi.addressof(struct, name)), np.uint16)


def ring_bytes(width: int) -> int:
    """The level kernel's index scratch: room for its lane-major ring (48 bytes a lane column, the
    row and alignment), so units of any width take the SIMD path (imij_kernels.h)."""
    return 51 * (width + 4) + 16


def decode_level_c(plan: UnitPlan, structs: LevelStructs, body: bytes | memoryview, width: int, height: int,
                   store=None) -> list[np.ndarray | None] | None:
    """``decode_level`` on the C kernel (GIL released by cffi): the coded planes, or with ``store``
    (csrc's imij_sample_store for the unit's rectangle) the samples go straight there (None)."""
    ffi, lib = _backend.ffi, _backend.lib
    nslots = len(plan.slots)
    out = None if store is not None else np.empty((max(nslots, 1), height, width), dtype=_plane_dtype(plan))
    index = np.empty(ring_bytes(width), dtype=np.uint8)
    unit = structs.unit_of(width, height, 0 if out is None else out.itemsize)
    code = _level_call(ffi, lib, body, unit, out, store, index)
    if code:
        if width * height <= EXPLAIN_PIXELS:  # small units: the reference names the exact rule
            cur = Cursor(body, what="stripe")
            decor = cur.u8("stripe layout")
            decode_level(plan, cur, Lanes.of(width, plan.lanes), width, height, decor)
        raise KERNEL_CODES.error(code, kernel="stripe")
    if out is None:
        return None
    coded: list[np.ndarray | None] = [None] * len(plan.chans)
    for i, slot in enumerate(plan.slots):
        coded[slot.coded.index] = out[i]  # assemble widens only what a map needs
    return coded


def _level_call(ffi, lib, body: bytes | memoryview, unit, out: np.ndarray | None, store, index: np.ndarray) -> int:
    """The kernel call, its buffers made inline: no cffi buffer of ``body`` outlives the call (an
    error's traceback keeps the caller's frame, and a memoryview with an export cannot be released)."""
    if out is None:
        return lib.imij_level_unit_store(ffi.from_buffer("uint8_t[]", body), len(body), unit, store,
                                         ffi.from_buffer("uint8_t[]", index, require_writable=True), index.size)
    return lib.imij_level_unit_decode(ffi.from_buffer("uint8_t[]", body), len(body), unit,
                                      ffi.from_buffer("uint8_t[]", out, require_writable=True), out.nbytes,
                                      ffi.from_buffer("uint8_t[]", index, require_writable=True), index.size)


def _plane_dtype(plan: UnitPlan) -> np.dtype:
    """The narrowest planes that hold every coded value and the samples' words the maps make of
    them in place (stripe.assemble): a gray 8-bit page decodes into one byte per pixel."""
    bits = max([plan.sample_bits, *(slot.depth for slot in plan.slots)])
    return np.dtype(np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32)
