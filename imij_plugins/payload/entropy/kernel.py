"""The C kernel of one entropy-coded unit (csrc/entropy.c) behind ``stripe.decode_coded``'s contract.

``CModels`` converts a payload's settled plan into the kernel's ``imij_slot_model`` structs once;
``decode_coded_c`` then decodes one unit with the GIL released. Both backends must agree bit
for bit (tests/payload/entropy run every test on both).
"""

from __future__ import annotations

import numpy as np

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.levels import LAYOUT_BILEVEL, LAYOUT_TEMPLATE_SHARED, LevelStructs, decode_level_c
from imij_plugins.payload.entropy.models import M, PALETTE_DEPTH, Model
from imij_plugins.payload.entropy.stripe import UnitPlan, decode_coded

EXPLAIN_PIXELS = 1 << 14  # a failing unit this small is re-read by the reference for its message

# csrc/imij_kernels.h IMIJ_ENT_E_* -> the Corrupt message
_MESSAGES = {
    -2: "stripe: record ends inside its layout, entries or a stream's states",
    -3: "stripe: stream length is not a minimal varint",
    -4: "stripe: decorrelation mode not allowed here",
    -5: "stripe: row predictor out of range (or row 0 not W)",
    -6: "stripe: stream lengths do not fill the record",
    -7: "stripe: initial rANS state below 2^16",
    -8: "stripe: stream needs more words than it holds (or an odd byte count)",
    -10: "stripe: value token past 32 bits",
    -11: "stripe: palette stripe not allowed here, or an entry out of range",
    -12: "stripe: bilevel or template stripe layout without its feature",
}


class CModels:
    """A plan's models as the kernel's structs: slots, then the palette index model."""

    def __init__(self, plan: UnitPlan):
        ffi = _backend.ffi
        count = len(plan.slots) + (plan.palette_allowed and plan.palette_model is not None)
        self.structs = ffi.new("imij_slot_model[]", max(count, 1))
        for i, (slot, model) in enumerate(zip(plan.slots, plan.models)):
            self._fill(self.structs[i], model, slot.depth, plan.bounds[i])
        self.palette = ffi.NULL
        if count > len(plan.slots):  # 2.5: palette stripes may occur
            self._fill(self.structs[len(plan.slots)], plan.palette_model, PALETTE_DEPTH, 0)  # type: ignore[arg-type]
            self.palette = self.structs + len(plan.slots)
        self.unit = ffi.new("imij_unit *")
        self.unit.lanes = plan.lanes
        self.unit.nslots = len(plan.slots)
        self.unit.decor_allowed = plan.decor_allowed
        self.unit.inter_allowed = plan.sample_bits <= 32 and not plan.near  # section 4, 2.6
        self.unit.slots = self.structs
        self.unit.palette = self.palette
        self.levels = LevelStructs(plan)  # 2.10 / 2.14: layouts 0x81-0x84 (csrc/bilevel.c)

    @staticmethod
    def _fill(s, model: Model, depth: int, delta: int) -> None:
        scheme = model.scheme
        s.depth, s.nvalue, s.cross, s.ctx_shift, s.delta = depth, scheme.value_tokens, model.cross, model.ctx_shift, delta
        s.ctx_map = list(model.ctx_map)
        dec = np.zeros((4, M), np.uint32)
        slots = np.arange(M, dtype=np.uint32)
        for c, table in enumerate(model.tables):  # 3.1: sym | freq << 8 | (slot - cum) << 19
            sym = np.frombuffer(bytes(table.lut), np.uint8).astype(np.uint32)
            freq = np.asarray(table.freq, np.uint32)[sym]
            cum = np.asarray(table.cum[: len(table.freq)], np.uint32)[sym]
            dec[c] = sym | freq << 8 | (slots - cum) << 19
        _backend.ffi.memmove(_backend.ffi.addressof(s, "dec"), dec.tobytes(), dec.nbytes)
        for t in range(min(scheme.alphabet, 256)):
            _, base, nb = scheme.token(t)
            s.base[t], s.nb[t] = base, nb
            s.high |= nb > 16


def decode_coded_c(
    plan: UnitPlan, models: CModels, body: bytes | memoryview, width: int, height: int, refs: list[np.ndarray] | None
) -> list[np.ndarray | None]:
    """``stripe.decode_coded`` on the C kernel: each slot's coded values at its coded channel's index."""
    if len(body) and LAYOUT_BILEVEL <= body[0] <= LAYOUT_TEMPLATE_SHARED:  # 2.10 / 2.14: their own kernel
        return decode_level_c(plan, models.levels, body, width, height)
    ffi, lib = _backend.ffi, _backend.lib
    # one uint32 plane per slot (at least one: a palette stripe's index plane), residuals and then
    # the coded values, reconstructed in place (section 4 step 3)
    planes = np.empty((max(len(plan.slots), 1), height, width), dtype=np.uint32)
    pred_ids = np.empty(height, dtype=np.uint8)
    reference = ffi.NULL
    if refs is not None:
        ref = np.zeros((max(len(refs), 1), height, width), np.uint32)
        for i, r in enumerate(refs):  # reduced values are below 2^n <= 2^32: narrowed in place
            ref[i] = r
        reference = ffi.from_buffer("uint32_t[]", ref)
    unit = ffi.new("imij_unit *")
    unit.width, unit.height = width, height
    for name in ("lanes", "nslots", "decor_allowed", "inter_allowed", "slots", "palette"):
        setattr(unit, name, getattr(models.unit, name))
    code = lib.imij_entropy_unit(
        ffi.from_buffer("uint8_t[]", body),  # the record in place, not a copy
        len(body),
        unit,
        reference,
        ffi.from_buffer("uint32_t[]", planes, require_writable=True),
        ffi.from_buffer("uint8_t[]", pred_ids, require_writable=True),
    )
    if code:
        if width * height <= EXPLAIN_PIXELS:  # small units: the reference names the exact rule
            decode_coded(plan, body, width, height, refs)
        raise Corrupt(_MESSAGES.get(code, f"stripe: kernel error {code}"))
    coded: list[np.ndarray | None] = [None] * len(plan.chans)
    for i, slot in enumerate(plan.slots):
        coded[slot.coded.index] = planes[i]  # uint32: assemble widens only what a map needs
    return coded
