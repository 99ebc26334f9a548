"""The entropy-coded lossless payload's decoder interface (2, 2.1-2.7, 3, 4).

``prepare`` validates the head's maps, slots, models and records once per payload, before any
unit decodes (once per distinct head: like payloads share the settled plan and its C tables);
``EntropyPayload.decode_unit`` decodes one unit record's body. Units are
independent (2.3): decode_unit keeps no state between calls and may run on many threads.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from imij_plugins import _backend
from imij_plugins.container.header import Header
from imij_plugins.payload.entropy.bilevel import read_bilevel_record
from imij_plugins.payload.entropy.kernel import CModels, decode_unit_c
from imij_plugins.payload.entropy.maps import TABLE, CodedChannel, Slot, build_slots, check_maps, decorrelation_allowed
from imij_plugins.payload.entropy.models import read_model_set
from imij_plugins.payload.entropy.near import read_bounds
from imij_plugins.payload.entropy.stripe import PALETTE_MAX_DEPTH, UnitPlan, decode_stripe
from imij_plugins.payload.entropy.template import read_template_record
from imij_plugins.payload.head import PRESENT_PALETTE, REC_BILEVEL, REC_NEAR, REC_TEMPLATE, ChannelMap, LosslessHead
from imij_plugins.registry.features import FeatureId

# The features this decoder implements (for admission): map modes 7, 8, 9, records 19, 25 and
# 35 (layouts 0x81-0x84), and the 32-bit / signed / wide sample coding the maps and ctx_shift
# need. Unit ordinals are the unit walker's (payload/units.py) and need nothing here.
IMPLEMENTED_FEATURES: frozenset[int] = frozenset(
    {
        FeatureId.NEAR_LOSSLESS,
        FeatureId.FLOAT_SHIFT,
        FeatureId.OFFSET_MAP,
        FeatureId.VALUE_TABLES,
        FeatureId.SAMPLES_32,
        FeatureId.SIGNED_SAMPLES,
        FeatureId.WIDE_SAMPLES,
        FeatureId.PIXEL_MODELS,
        FeatureId.BILEVEL,
        FeatureId.TEMPLATE_PALETTES,
    }
)


PLAN_CACHE = 16  # settled plans kept for reads of like payloads (a plan's C tables: up to ~0.5 MiB)
LAYOUT_CACHE = 64  # settled maps kept (Layout: a few small objects each)


class Settled:
    """A payload's settled plan and its C kernel structs, made on first use by the C backend;
    shared by every payload whose head settles the same way (read only once made)."""

    __slots__ = ("plan", "_c_models")

    def __init__(self, plan: UnitPlan):
        self.plan = plan
        self._c_models: CModels | None = None

    @property
    def c_models(self) -> CModels:
        if self._c_models is None:
            self._c_models = CModels(self.plan)
        return self._c_models


class EntropyPayload:
    """A validated entropy-coded payload head: decode its units with ``decode_unit``."""

    __slots__ = ("header", "head", "plan", "_settled")

    def __init__(self, header: Header, head: LosslessHead, settled: Settled):
        self.header, self.head, self.plan, self._settled = header, head, settled.plan, settled

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.header.sample_type.dtype)

    def decode_unit(self, body: memoryview | bytes, width: int, height: int,
                    reference: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """One unit record's payload (after any ordinal) as an (height, width, C) array.

        ``reference`` is the previous canvas under the unit in an inter frame (predictors 7-9,
        section 4), None otherwise. ``out``: the (height, width, C) array of the header's dtype
        to decode into (any strides, e.g. the unit's rectangle of the image), else a new one;
        returned either way. The C kernel writes it in row blocks (so a unit that fails may have
        written its first rows), the Python reference once the unit has decoded. Raises only
        Corrupt / Unsupported for bad bytes.
        """
        if width < 1 or height < 1:
            raise ValueError(f"unit of {width} x {height} pixels")
        if _backend.active() != "c":
            return decode_stripe(self.plan, body, width, height, reference, out)
        return decode_unit_c(self.plan, self._settled.c_models, body, width, height, reference, out)

    @property
    def c_models(self) -> CModels:
        """The plan's models as the C kernel's structs, built on first use."""
        return self._settled.c_models


_plans: dict[tuple, Settled] = {}
_plans_lock = threading.Lock()


def prepare(header: Header, head: LosslessHead) -> EntropyPayload:
    """Validate a lossless, non-quick head (2, 2.1, 2.2, 2.6, 3.3) and settle the unit plan.

    The plan depends only on the header's sample type, layout and features and on the head's
    lanes, maps, models and records 19, 25, 35, so a head that settled before (the same bytes
    in those) reuses its plan and C tables: reading many like files pays the checks once.
    """
    if head.quick:
        raise ValueError("prepare() is for entropy-coded payloads; this head has quick-pixel units")
    records = tuple(_payload_of(head, rid) for rid in (REC_NEAR, REC_BILEVEL, REC_TEMPLATE)) if head.records else ()
    key = (header.sample, header.channels, header.features, head.lanes, head.present & PRESENT_PALETTE,
           tuple(head.maps), head.models, records)
    settled = _plans.get(key)
    if settled is None:
        settled = Settled(_settle(header, head))
        with _plans_lock:
            if len(_plans) >= PLAN_CACHE:
                del _plans[next(iter(_plans))]  # the oldest
            _plans[key] = settled
    return EntropyPayload(header, head, settled)


def _payload_of(head: LosslessHead, rid: int) -> bytes | None:
    rec = head.record(rid)
    return None if rec is None else rec.payload


class Layout(NamedTuple):
    """What a payload's maps settle (2.1, 2.2), shared by the plans of every head with the same
    header fields and maps (files of one kind differ in their models, not in these)."""

    chans: tuple[CodedChannel, ...]
    slots: tuple[Slot, ...]
    specs: tuple[tuple[int, bool], ...]  # each slot's model's (depth, cross allowed) (3.3)
    decor_allowed: bool  # 2.2
    palette_depths: bool  # 2.5: every slot depth <= 16


_layouts: dict[tuple, Layout] = {}


def _layout(header: Header, maps: list[ChannelMap]) -> Layout:
    """Every check of the maps (2.1) and the slots they make (2.2), once per distinct header
    fields and maps (kept like the plans; a head whose maps fail is not kept)."""
    key = (header.sample, header.channels, header.features, tuple(maps))
    layout = _layouts.get(key)
    if layout is None:
        chans = check_maps(header, maps)  # 2.1
        slots = build_slots(header, chans)  # 2.2
        layout = Layout(tuple(chans), tuple(slots), tuple((s.depth, s.cross_allowed) for s in slots),
                        decorrelation_allowed(header, slots), all(s.depth <= PALETTE_MAX_DEPTH for s in slots))
        if all(m.mode != TABLE for m in maps):  # a value table (2.1) may hold 65536 entries: not kept
            with _plans_lock:
                if len(_layouts) >= LAYOUT_CACHE:
                    del _layouts[next(iter(_layouts))]  # the oldest
                _layouts[key] = layout
    return layout


def _settle(header: Header, head: LosslessHead) -> UnitPlan:
    """Every check of maps, slots, models and records (2.1, 2.2, 2.6, 2.10, 2.14, 3.3): the unit plan."""
    chans, slots, specs, decor_allowed, palette_depths = _layout(header, head.maps)  # 2.1, 2.2
    palette = bool(head.present & PRESENT_PALETTE)
    model_set = read_model_set(head.models, specs, palette)  # 3.3
    near_rec = head.record(REC_NEAR)
    bounds = (0,) * len(slots)
    if near_rec is not None:  # 2.6
        per_channel = read_bounds(near_rec.payload, header, chans)
        bounds = tuple(per_channel[s.coded.channel] for s in slots)
    bilevel_rec = head.record(REC_BILEVEL)  # 2.10 (gated by head.py)
    bilevel_table = read_bilevel_record(bilevel_rec.payload) if bilevel_rec is not None else None
    template_rec = head.record(REC_TEMPLATE)  # 2.14 (gated by head.py)
    template_tables = read_template_record(template_rec.payload, [s.depth for s in slots]) if template_rec is not None else None
    return UnitPlan(
        lanes=head.lanes,
        chans=chans,
        slots=slots,
        model_set=model_set,
        bounds=bounds,
        near=near_rec is not None,
        decor_allowed=decor_allowed,
        palette_allowed=palette and palette_depths,
        channel_count=header.channel_count,
        sample_bits=header.sample_type.bits,
        dtype=header.sample_type.dtype,
        features=header.features,
        bilevel_record=bilevel_table is not None,
        template_record=template_tables is not None,
        bilevel_table=bilevel_table,
        template_tables=template_tables,
    )
