"""The C kernel of one entropy-coded unit (csrc/entropy.c): ``stripe.decode_stripe``'s contract.

``CModels`` converts a payload's settled plan into the kernel's structs once (``imij_slot_model``
on first use by a regular stripe);
``decode_unit_c`` then decodes one unit in row blocks: the kernel (GIL released) keeps every
stream's place between calls and turns a block of rows into coded values in a small scratch,
which ``stripe.assemble`` maps into the output before the next block. So a unit's decode holds
its output and a scratch of a few rows, never a plane per slot. Both backends must agree bit
for bit (tests/payload/entropy run every test on both).
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.levels import LAYOUT_BILEVEL, LAYOUT_TEMPLATE_SHARED, LevelStructs, decode_level_c
from imij_plugins.payload.entropy.maps import CodedChannel, Slot
from imij_plugins.payload.entropy.models import M
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.stripe import (
    SampleStore,
    UnitPlan,
    assemble,
    decode_coded,
    output_for,
    reference_planes,
    sample_store,
)
from imij_plugins.payload.kernel_codes import EXPLAIN_PIXELS, KERNEL_CODES

# A row block's scratch (csrc/imij_kernels.h imij_entropy_rows) for narrow units: 64 KiB, so a
# 256-pixel-wide RGBA unit takes 14 rows a block, not 4. A block's first and last rows decode
# fewer streams side by side (csrc/entropy.c decode_group's skew): 4-row blocks cost a 256x256
# read ~11% (thread CPU time).
SCRATCH_BYTES = 1 << 16
MIN_BLOCK_ROWS = 8  # wide units: rows per block that keep the per-block Python work small ...
MIN_STORED_ROWS = 4  # ... where the kernel loops over the blocks itself (imij_entropy_store), fewer
CARRIED_ROWS = 2  # scratch rows 0 and 1: the residuals and coded values of the row above the block
UNIT_SIZES = 64  # imij_unit structs kept per plan, one per unit size (a plan serves many files)


class CModels:
    """A payload's kernel structs, each made on first use: the slot and palette index models of
    regular stripes (``regular``), the level tables of layouts 0x81-0x84 (``levels``), and the
    sample store of its maps. A payload of bilevel or template stripes alone never builds the
    slot models' tables (32 KiB per slot)."""

    def __init__(self, plan: UnitPlan):
        self.plan = plan
        # 4 step 4 in the kernel, for words of at most 32 bits; each unit sets its out
        self.store, self.store_struct = _stores(plan.sample_bits, plan.slots, plan.chans)

    @cached_property
    def regular(self) -> SlotModels:
        """3.2 / 3.3: the models of regular stripes (layouts 0-3)."""
        return SlotModels(self.plan)

    @cached_property
    def levels(self) -> LevelStructs:
        """2.10 / 2.14: layouts 0x81-0x84 (csrc/bilevel.c), built when a unit has one."""
        return LevelStructs(self.plan)


class SlotModels:
    """A plan's models as the kernel's structs: slots, then the palette index model, made in one
    kernel call (csrc/entropy.c imij_models_fill: tokens of 3.2, table entries of 3.3)."""

    def __init__(self, plan: UnitPlan):
        ffi = _backend.ffi
        heads, freq = plan.model_set.packed  # the models as read (3.3), the palette model last
        count = len(plan.slots) + (plan.palette_allowed and plan.model_set.palette)  # 2.5: palette stripes may occur
        self.structs = ffi.new("imij_slot_model[]", max(count, 1))
        params = np.empty((count, 7), np.uint32)  # depth, k, m, cross, ctx_shift, delta, ntables
        params[:, 0] = [depth for depth, _ in plan.model_set.specs[:count]]  # slot depths, the palette model's 8
        params[:, 1:5] = heads[:count, :4]
        params[:, 5] = (*plan.bounds, 0)[:count]  # 2.6: index planes are exact
        params[:, 6] = heads[:count, 4]
        ctx_maps = np.ascontiguousarray(heads[:count, 5:])  # 16 bytes a model
        tables = int(params[:, 6].sum())  # csrc: one model's after another (3.3: at most 4 each)
        self.entries = np.empty(max(tables, 1) * M, np.uint64)  # the structs point into it
        code = _backend.lib.imij_models_fill(self.structs, count, ffi.from_buffer("uint32_t[]", params),
                                             ffi.from_buffer("uint8_t[]", ctx_maps), ffi.from_buffer("uint32_t[]", freq),
                                             ffi.from_buffer("uint64_t[]", self.entries, require_writable=True),
                                             self.entries.size)
        if code:
            raise KERNEL_CODES.error(code, kernel="stripe")
        self.palette = self.structs + len(plan.slots) if count > len(plan.slots) else ffi.NULL
        self.unit = ffi.new("imij_unit *")
        self.unit.lanes = plan.lanes
        self.unit.nslots = len(plan.slots)
        self.unit.decor_allowed = plan.decor_allowed
        self.unit.inter_allowed = plan.sample_bits <= 32 and not plan.near  # section 4, 2.6
        self.unit.slots = self.structs
        self.unit.palette = self.palette
        self._units: dict[tuple[int, int], Any] = {}

    def unit_of(self, width: int, height: int):
        """The kernel's ``imij_unit`` for units of ``width`` x ``height``, made once per size: the
        kernel copies it into each unit's state (imij_entropy_begin), so threads share it read
        only. It points into this object, which the caller keeps alive while it is used."""
        unit = self._units.get((width, height))
        if unit is None:
            unit = _backend.ffi.new("imij_unit *", self.unit[0])
            unit.width, unit.height = width, height
            if len(self._units) >= UNIT_SIZES:
                self._units.clear()  # a caller holds the struct it was given
            self._units[width, height] = unit
        return unit


def block_rows(planes: int, row: int, height: int, least: int = MIN_BLOCK_ROWS) -> int:
    """Rows per block: as many as keep the scratch within SCRATCH_BYTES, at least ``least``, at most the unit."""
    fit = SCRATCH_BYTES // (4 * planes * row) - CARRIED_ROWS
    return min(height, max(least, fit))


class Interleaved:
    """The kernel's scratch rows (csrc/entropy.c lane_geo): lane l's column x at x * active + l, so
    one step's lanes (2.3) are adjacent; the last lane's columns past its width are padding."""

    def __init__(self, width: int, lanes: int):
        geo = Lanes.of(width, lanes)  # 2.3
        self.width, self.lane_w, self.active = width, geo.lw, geo.active
        self.row = self.lane_w * self.active

    def unlace(self, rows: np.ndarray) -> np.ndarray:
        """(n, row) interleaved -> (n, width) in column order."""
        n = rows.shape[0]
        return rows.reshape(n, self.lane_w, self.active).transpose(0, 2, 1).reshape(n, self.row)[:, : self.width]

    def lace(self, rows: np.ndarray, into: np.ndarray) -> None:
        """(n, width) in column order -> ``into``, (n, row) interleaved."""
        n = rows.shape[0]
        padded = np.zeros((n, self.row), dtype=into.dtype)
        padded[:, : self.width] = rows
        into.reshape(n, self.lane_w, self.active).transpose(0, 2, 1)[...] = padded.reshape(n, self.active, self.lane_w)


@lru_cache(maxsize=256)
def interleaved(width: int, lanes: int) -> Interleaved:
    """``Interleaved(width, lanes)``, made once per unit geometry (read only): a unit's fixed cost."""
    return Interleaved(width, lanes)


def decode_unit_c(plan: UnitPlan, models: CModels, body: bytes | memoryview, width: int, height: int,
                  reference: np.ndarray | None, out: np.ndarray | None) -> np.ndarray:
    """``stripe.decode_stripe`` on the C kernel, in row blocks; returns ``out`` (or a new array).

    Rows reach ``out`` block by block, so after an error ``out`` holds the rows decoded before it."""
    out = output_for(plan, height, width, out)
    stored = (models.store is not None and reference is None and out.strides[2] == out.itemsize
              and min(out.strides) >= 0)
    if len(body) and LAYOUT_BILEVEL <= body[0] <= LAYOUT_TEMPLATE_SHARED:  # 2.10 / 2.14: their own kernel
        if stored:  # rows go straight into out
            decode_level_c(plan, models.levels, body, width, height, _store_into(models, out))
            return out
        return assemble(plan, decode_level_c(plan, models.levels, body, width, height), height, width, out)  # type: ignore[arg-type]
    ffi, lib = _backend.ffi, _backend.lib
    pred_ids = ffi.new("uint8_t[]", height)  # 2.4: read by every block (the kernel's alone: no array)
    regular = models.regular  # held here: the state's unit points into it until the decode ends
    state = _begin(plan, regular, body, width, height, reference, pred_ids)
    nplanes = max(len(plan.slots), 1)  # a palette stripe's index plane needs one
    if stored:  # the scratch is the kernel's alone: zeroed cffi memory, no array
        rows, size = _stored_blocks(nplanes, width, plan.lanes, height)
        code = lib.imij_entropy_store(state, rows, ffi.new("uint32_t[]", size), size, _store_into(models, out))  # no GIL per block
        if code:
            _fail(code, plan, body, width, height, reference)
        return out
    lanes = interleaved(width, plan.lanes)
    rows = block_rows(nplanes, lanes.row, height)
    size = nplanes * (rows + CARRIED_ROWS) * lanes.row
    planes = np.zeros((nplanes, rows + CARRIED_ROWS, lanes.row), dtype=np.uint32)
    planes_c = ffi.from_buffer("uint32_t[]", planes, require_writable=True)
    refs = None if reference is None else np.zeros((len(plan.slots), rows + CARRIED_ROWS, lanes.row), np.uint32)
    refs_c, refs_len = (ffi.NULL, 0) if refs is None else (ffi.from_buffer("uint32_t[]", refs), refs.size)
    coded_at = [slot.coded.index for slot in plan.slots]
    for r0 in range(0, height, rows):
        n = min(rows, height - r0)
        if refs is not None:
            _load_reference(plan, reference, refs, lanes, r0, n)  # type: ignore[arg-type]
        code = lib.imij_entropy_rows(state, n, rows, planes_c, planes.size, refs_c, refs_len)
        if code:
            _fail(code, plan, body, width, height, reference)
        coded: list[np.ndarray | None] = [None] * len(plan.chans)
        for i, at in enumerate(coded_at):
            coded[at] = lanes.unlace(planes[i, CARRIED_ROWS : CARRIED_ROWS + n])  # uint32: assemble widens only what a map needs
        assemble(plan, coded, n, width, out[r0 : r0 + n])
    return out


@lru_cache(maxsize=256)
def _stored_blocks(nplanes: int, width: int, lanes: int, height: int) -> tuple[int, int]:
    """A stored decode's rows per block and scratch size in words, once per unit geometry."""
    row = interleaved(width, lanes).row
    rows = block_rows(nplanes, row, height, MIN_STORED_ROWS)
    return rows, nplanes * (rows + CARRIED_ROWS) * row


def _store_into(models: CModels, out: np.ndarray):
    """The payload's imij_sample_store aimed at ``out`` (a (h, w, C) array whose channels are
    contiguous, at non-negative strides): a copy per unit, as units decode on many threads. Its
    out_len is ``out``'s own extent, from its first byte to the end of its last sample."""
    ffi = _backend.ffi
    st = ffi.new("imij_sample_store *", models.store_struct[0])
    # a contiguous out (a full-width unit) by the buffer protocol; a view's pointer by ctypes (slower)
    st.out = ffi.from_buffer("uint8_t[]", out, require_writable=True) if out.flags.c_contiguous else \
        ffi.cast("uint8_t *", out.ctypes.data)
    (h, w, c), (rs, ps, cs), esize = out.shape, out.strides, out.itemsize
    st.out_len = esize + (h - 1) * rs + (w - 1) * ps + (c - 1) * cs if out.size else 0
    st.row_stride, st.pixel_stride, st.esize = rs, ps, esize
    return st


@lru_cache(maxsize=64)
def _stores(sample_bits: int, slots: tuple[Slot, ...], chans: tuple[CodedChannel, ...]):
    """stripe.sample_store of a plan's maps and its struct (``_store_struct``), made once per
    distinct maps: reads of like files share them (read only: each unit copies the struct)."""
    store = sample_store(sample_bits, slots, chans)
    return store, None if store is None else _store_struct(store)


def _store_struct(store: SampleStore):
    """csrc's imij_sample_store of a payload's maps, without its output (``_store_into``); the
    tables it points at are ``store``'s, which outlives it."""
    ffi = _backend.ffi
    st = ffi.new("imij_sample_store *")
    st.nslots, st.nconst = len(store.slots), len(store.consts)
    for i, w in enumerate(store.slots):
        st.channel[i], st.shift[i], st.add[i], st.flip[i] = w.channel, w.shift, w.add, w.flip
        st.top[i], st.neg_flip[i] = w.top, w.neg_flip
        st.lut[i] = ffi.NULL if w.lut is None else ffi.cast("uint32_t *", w.lut.ctypes.data)
    for i, (channel, word) in enumerate(store.consts):
        st.const_channel[i], st.const_word[i] = channel, word
    return st


@lru_cache(maxsize=2)
def _uncleared(ffi):
    """``ffi.new`` without zeroing, for structs the kernel fills whole (the 5 KiB entropy state)."""
    return ffi.new_allocator(should_clear_after_alloc=False)


def _begin(plan: UnitPlan, models: SlotModels, body: bytes | memoryview, width: int, height: int,
           reference: np.ndarray | None, pred_ids):
    """The kernel's ``imij_entropy_state`` after the unit's layout (2.4, 2.5) and stream openings (3);
    ``pred_ids`` (cffi ``uint8_t[height]``) receives the rows' predictors, which the state points at."""
    ffi = _backend.ffi
    state = _uncleared(ffi)("imij_entropy_state *")  # imij_entropy_begin zeroes it first
    code = _backend.lib.imij_entropy_begin(
        ffi.from_buffer("uint8_t[]", body),  # the record in place, not a copy; `body` outlives the decode
        len(body),
        models.unit_of(width, height),
        reference is not None,
        state,
        pred_ids,
        len(pred_ids),
    )
    if code:
        _fail(code, plan, body, width, height, reference)
    return state


def _load_reference(plan: UnitPlan, reference: np.ndarray, refs: np.ndarray, lanes: Interleaved, r0: int,
                    n: int) -> None:
    """4: reference rows [r0, r0 + n) reduced per slot into the block's rows of ``refs`` (interleaved);
    row 1 takes the reduced row above, the previous (full) block's last row, before the canvas may
    have changed."""
    if r0:
        refs[:, CARRIED_ROWS - 1] = refs[:, -1]
    for i, plane in enumerate(reference_planes(plan, reference[r0 : r0 + n], n, reference.shape[1])):
        lanes.lace(plane, refs[i, CARRIED_ROWS : CARRIED_ROWS + n])  # reduced values are below 2^n <= 2^32


def _fail(code: int, plan: UnitPlan, body: bytes | memoryview, width: int, height: int,
          reference: np.ndarray | None) -> None:
    """Raise the kernel's error (KERNEL_CODES); a small unit is re-read by the reference, which names the exact rule."""
    if width * height <= EXPLAIN_PIXELS:
        refs = None if reference is None else reference_planes(plan, reference, height, width)
        decode_coded(plan, body, width, height, refs)
    raise KERNEL_CODES.error(code, kernel="stripe")
