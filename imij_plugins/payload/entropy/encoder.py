"""The tuned entropy encoder (2.1-2.7, 3, 5): small files, fast.

``encode_tuned(image, effort=..., max_error=..., threads=...)`` codes an (H, W, C) array as an
entropy-coded lossless (or near-lossless) DATA payload:

1. Maps (2.1, mapchoice.py): per coded channel the exact map with the fewest bits (Const, Lsb,
   Shift, Replicate, Scale, Offset, F16InF32, UnormF32, FloatShift; value tables by section 5's
   estimate at higher efforts); with ``max_error`` each channel's coded bound (2.6).
2. Geometry (2.3, 5): column groups of 2048 for images at least 8192 wide, stripes of a quarter
   of the image within 2^16 .. 2^17 pixels per unit so units decode (and encode) in parallel,
   16 lanes (fewer only for groups narrower than 256 columns).
3. Analysis per unit, in parallel (C kernels, GIL released): the decorrelation mode and per-row
   predictors minimizing the bit-length proxy (or the near-lossless closed loop), the
   residuals' context statistics, and a palette stripe where its estimate is smaller (2.5).
   A unit keeps only its choices; its statistics go straight into the payload's sums.
4. Models (3.2, 3.3, modeling.py): per slot runs, cross context, k and m, greedy context
   merging, table precision, from every unit's statistics. At effort 9 each unit's row
   predictors are then chosen again by what these models make each row cost (search.model_preds)
   and the models again from the new statistics, where that lowers their estimate (_refine).
5. Coding per unit, in parallel: the residuals kept from the analysis (or made again from the
   unit's choices, EncodePlan.keep), then tokens and reverse rANS (C); then section 5's bilevel /
   template palette chooser (level_writer) over units of at most 256 tuples, where their
   records could pay at all, and the head and unit records (2, 2.7).

Planes and residuals are made one unit at a time in their narrowest type (scratch.value_dtype);
the residuals kept between analysis and coding take at most the input's bytes, so encoding
needs about twice the input besides the output.

Everything is deterministic: the bytes do not depend on ``threads`` or on the backend.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from imij_plugins.container.header import Header
from imij_plugins.payload.counts import histogram
from imij_plugins.payload.effort import DEFAULT_EFFORT
from imij_plugins.payload.entropy.context_stats import CLASSES, Counts, add_stats, new_counts, stat_buckets
from imij_plugins.payload.entropy.decode_cost import BOUND, LevelBudget, UnitCosts
from imij_plugins.payload.entropy.mapchoice import (
    Channel,
    candidate_maps,
    coded,
    coded_delta,
    near_map,
    table_bytes,
    table_candidate,
    window_cost,
    window_fraction,
    word_presence,
    word_summary,
)
from imij_plugins.payload.entropy.maps import (
    CONST,
    LSB,
    build_slots,
    check_maps,
    decorrelation_allowed,
    entropy_features,
    reduce,
)
from imij_plugins.payload.entropy.modeling import (
    ModelPlan,
    SlotStats,
    bucket_costs,
    choose_model,
    effort_of,
    estimate_bits,
    estimate_bits_each,
    model_bits,
    small_slot,
)
from imij_plugins.payload.entropy.models import PALETTE_DEPTH, TableCode, table_code
from imij_plugins.payload.entropy.near import NEAR_SAMPLES, encode_bounds
from imij_plugins.payload.entropy.palettes import dense, entry_len, palette
from imij_plugins.payload.entropy.residuals import closed_loop, put_unit, residuals
from imij_plugins.payload.entropy.scratch import release_scratch, use_c, value_dtype
from imij_plugins.payload.entropy.search import INTER_PREDICTORS, choose, costs, model_preds
from imij_plugins.payload.entropy.streams import stream
from imij_plugins.payload.entropy.stripe import LAYOUT_PALETTE, PALETTE_MAX_DEPTH, predictor_bytes
from imij_plugins.payload.entropy.tokens import Scheme
from imij_plugins.payload.geometry import WIDE_GROUP, WIDE_IMAGE, Geometry, even_stripe_rows
from imij_plugins.payload.head import (
    PRESENT_PALETTE,
    REC_NEAR,
    REC_ORDINALS,
    ChannelMap,
    map_value_bytes,
    write_lossless_head,
)
from imij_plugins.payload.parallel import default_threads, parallel_map
from imij_plugins.payload.units import check_unit_table, join_units, record_prefix, unit_table_records
from imij_plugins.pixels.dtypes import as_image_array, layout_code, sample_code
from imij_plugins.registry.features import FeatureId
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint

UNIT_PIXELS = 1 << 17  # about this many pixels per unit: parallel decode at a small size cost ...
MIN_UNIT_PIXELS = 1 << 16  # ... down to this, so that images of a quarter megapixel get 4 units
MAX_LANES = 16
RUN_MIN = 4  # 5: zero runs of at least 4 positions as run tokens
LEVEL_TUPLES = 16  # units of at most this many slot tuples always go to the bilevel / template chooser
LEVEL_RATIO = 0.8  # others when the predictive estimate is at least this share of the tuples' entropy
OWN_SUMS_POSITIONS = 1 << 20  # _Totals: threads keep their own statistics sums from 1 megapixel
ALL_PREDICTORS = 0x7F
# 5: geometries (stripe rows, column group width or None) also tried at these efforts, the smallest
# file kept: shorter stripes (fewer tuples per unit), and at 9 tall stripes and narrow column
# groups (each region its own predictors and palettes; benchmarks/RESULTS.md, effort 9 sizes)
GEOMETRY_TRIES = {8: ((16, None),), 9: ((32, None), (16, None), (8, None), (256, None), (256, 64), (64, 64))}
PARALLEL_SAMPLES = 100_000  # images of fewer samples are coded on one thread
_EVERY_FEATURE = frozenset(FeatureId)  # the plan's header allows every feature (the file declares those used)


class EncodedEntropy(NamedTuple):
    """An entropy-coded DATA payload and what the file must declare for it."""

    payload: bytes
    head_len: int  # where the first unit record starts
    features_used: frozenset[int]  # features the file must declare in its mask for this payload
    units: int = 0  # main unit records (2.7)
    decode_cost: float = 0.0  # decode_cost's model of what the payload costs to decode
    recon: np.ndarray | None = None  # near-lossless, when asked: the (H, W, C) samples a decoder outputs


@dataclass(frozen=True)
class Effort:
    """What an effort level searches (1 fast .. 9 smallest)."""

    mode_rows: int  # mode search: every mode_rows-th row ...
    mode_cols: int  # ... every mode_cols-th column ...
    mode_preds: int  # ... with these predictors (bit mask)
    preds: int  # predictor search: these predictors ...
    pred_cols: int  # ... on every pred_cols-th column (every row)
    cross: bool  # try the cross context in slots 1 and 2
    tables: bool  # try value tables (map 9)
    palette: bool  # try palette stripes
    levels: bool = True  # try bilevel / template palette stripes (level_writer's chooser)
    every_level: bool = False  # ... for every unit of at most 256 tuples, not only the likely ones
    refine: bool = False  # choose the row predictors again by the first models' costs (_refine)


EFFORTS = {
    1: Effort(8, 4, 0b0001000, 0b0001011, 4, False, False, True, False),
    2: Effort(8, 4, 0b0001000, 0b0101011, 3, False, False, True),
    3: Effort(4, 2, 0b0001000, ALL_PREDICTORS, 3, True, True, True),
    4: Effort(4, 2, 0b0001000, ALL_PREDICTORS, 2, True, True, True),
    5: Effort(8, 2, 0b0101010, ALL_PREDICTORS, 2, True, True, True),  # modes on every 8th row: as good as every 4th
    6: Effort(2, 2, ALL_PREDICTORS, ALL_PREDICTORS, 1, True, True, True, every_level=True),
    7: Effort(2, 1, ALL_PREDICTORS, ALL_PREDICTORS, 1, True, True, True, every_level=True),
    8: Effort(1, 1, ALL_PREDICTORS, ALL_PREDICTORS, 1, True, True, True, every_level=True),
    9: Effort(1, 1, ALL_PREDICTORS, ALL_PREDICTORS, 1, True, True, True, every_level=True, refine=True),
}


def entropy_geometry(width: int, height: int, stripe_rows: int | None, group_cols: int | None) -> Geometry:
    """5: G = 2048 for images at least 8192 wide; stripes of a quarter of the image, kept within
    2^16 .. 2^17 pixels per unit (at least 8 rows), then evened out so the last stripe is not a
    sliver: units decode in parallel (2.3), and the slowest sets the pace."""
    if group_cols is None:
        group_cols = WIDE_GROUP if width >= WIDE_IMAGE else 0
    if group_cols and not 1 <= group_cols <= width - 1:
        raise ValueError(f"group_cols {group_cols} outside 1 ..= width - 1")
    if stripe_rows is None:
        stripe_rows = even_stripe_rows(width, height, group_cols or width, (MIN_UNIT_PIXELS, UNIT_PIXELS), 8)
    if stripe_rows < 1:
        raise ValueError("stripe_rows must be at least 1")
    return Geometry(width, height, min(stripe_rows, height), group_cols)


def lanes_for(group_width: int) -> int:
    """16 lanes (2.3) unless groups are narrow: lanes of at least 16 columns."""
    return max(1, min(MAX_LANES, group_width // 16))


# --- the payload plan --------------------------------------------------------------------------


@dataclass
class EncodePlan:
    header: Header
    slots: list  # maps.Slot, slot order (2.2)
    channels: list[Channel]
    maps: list[ChannelMap]
    slot_channels: list[int]  # coded channel of each slot
    depths: list[int]
    deltas: list[int]  # per slot
    bounds: list[int] | None  # record 19, per container channel
    decor: bool
    cross_slots: tuple[int, ...]
    shifts: list[int]
    palette_ok: bool
    lanes: int
    geo: Geometry
    eff: Effort
    effort: int
    refs: np.ndarray | None = None  # inter frames: the reference R of every slot, (S, H, W) uint32 (4)
    recon: np.ndarray | None = None  # near-lossless, when asked: the output samples, (H, W, C), filled per unit

    @property
    def near(self) -> bool:
        return any(self.deltas)

    @property
    def keep(self) -> bool:
        """Whether each unit's residuals are kept from its analysis until it is coded, rather than
        computed again: when all of them take no more bytes than the input (the encode then peaks
        within about twice it), and not where _refine chooses the predictors again."""
        held = len(self.depths) * self.geo.width * self.geo.height * value_dtype(self.depths).itemsize
        image = self.geo.width * self.geo.height * self.header.channels * self.header.sample_type.bits // 8
        return held <= image and not _refinable(self)

    def buckets(self, depth: int) -> int:
        """context_stats.stat_buckets of a depth-bit slot of this plan (a run stays in its unit)."""
        return stat_buckets(depth, self.geo.stripe_rows * (self.geo.group_cols or self.geo.width))

    def ref_planes(self, index: int) -> np.ndarray | None:
        """The reference under unit ``index`` (None outside inter frames)."""
        if self.refs is None:
            return None
        x, y, w, h = self.geo.unit_rect(index)
        return self.refs[:, y : y + h, x : x + w]

    def planes(self, index: int, buffers: UnitBuffers | None = None) -> np.ndarray:
        """The coded values of unit ``index``, (S, h, w) in the narrowest type of the depths (in
        this thread's buffer of ``buffers``, when given)."""
        x, y, w, h = self.geo.unit_rect(index)
        out = None if buffers is None else buffers.get((len(self.slot_channels), h, w), value_dtype(self.depths))
        return self.coded_planes(y, y + h, x, x + w, out)

    def coded_planes(self, y0: int, y1: int, x0: int, x1: int, out: np.ndarray | None = None) -> np.ndarray:
        """2.1: every slot's coded values s of a window, (S, h, w) in scratch.value_dtype (into ``out``)."""
        if out is None:
            out = np.empty((len(self.slot_channels), y1 - y0, x1 - x0), dtype=value_dtype(self.depths))
        for s, ci in enumerate(self.slot_channels):
            ch = self.channels[ci]
            cmap = self.maps[ci]
            if cmap.mode == LSB and ch.kind == "u":  # the words themselves, one casting copy
                np.copyto(out[s], ch.word[y0:y1, x0:x1], casting="unsafe")
            else:
                out[s] = coded(ch.word[y0:y1, x0:x1], ch, cmap)
        return out


class UnitBuffers:
    """A phase's buffer per thread for a unit's coded planes, which its residuals then replace in
    place: a thread's next unit reuses it rather than fresh pages (a page fault each, where the
    allocator maps large blocks anew); the buffers go with the phase (analysis, coding)."""

    def __init__(self) -> None:
        self._by_thread: dict[int, np.ndarray] = {}

    def get(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """This thread's buffer as a contiguous array of ``shape`` (its first elements)."""
        size = math.prod(shape)
        key = threading.get_ident()
        buf = self._by_thread.get(key)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._by_thread[key] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)


@dataclass
class _Analysis:
    """A unit's choices (5); its residuals are recomputed from them when the unit is coded."""

    palette: list[tuple[int, ...]] | None
    mode: int
    preds: list[int]
    few: bool = False  # at most 256 slot tuples (or one 1-bit slot): a bilevel / template candidate
    residuals: np.ndarray | None = None  # the coded residuals, held from analysis to coding (EncodePlan.keep)


def _search(plan: EncodePlan, planes: np.ndarray, depths: list[int], decor: bool,
            refs: np.ndarray | None = None) -> tuple[int, list[int]]:
    """5: the stripe's decorrelation mode and per-row predictors minimizing the proxy; with an
    inter frame's reference ``refs`` also 7 (R), 8 and 9 (4; row 0: 0 or 7)."""
    e = plan.eff
    lanes = plan.lanes
    inter = INTER_PREDICTORS if refs is not None else 0
    mode = 0
    if decor:
        cost = costs(planes, depths, lanes, True, e.mode_preds | (inter & 0x80), 0xF, e.mode_rows, e.mode_cols, refs)
        mode, _, _ = choose(cost, 0xF)
    if planes.shape[1] == 1 and refs is None:
        return mode, [0]
    cost = costs(planes, depths, lanes, decor, e.preds | inter, 1 << mode, 1, e.pred_cols, refs)
    _, preds, _ = choose(cost, 1 << mode)
    return mode, preds


def _slot_stats(plan: EncodePlan, u: np.ndarray, depth: int, shift: int) -> SlotStats:
    """3.1 / 3.2: the counts (uint32, the kernel's) of the one depth-bit slot of u, plain."""
    stats = SlotStats(*new_counts(buckets=plan.buckets(depth)))
    _count(plan, u, 0, {False: stats}, shift)
    return stats


def _count(plan: EncodePlan, u: np.ndarray, s: int, variants: dict[bool, SlotStats], shift: int) -> None:
    """Add slot s's counts of residuals u to ``variants`` (the cross variant with slot 0's)."""
    cross = variants.get(True)
    add_stats((variants[False].vh, variants[False].zr, variants[False].rh),
                (cross.vh, cross.zr, cross.rh) if cross is not None else None,
                u[s], u[0] if cross is not None else None, plan.lanes, shift, RUN_MIN)


def _analyze(plan: EncodePlan, index: int, totals: _Totals, buffers: UnitBuffers) -> _Analysis:
    """5: unit ``index``'s mode, predictors and layout; its statistics are added to ``totals``.
    With ``plan.keep`` the residuals it codes are kept (the unit's own planes, not a buffer)."""
    planes = plan.planes(index, None if plan.keep else buffers)
    # one 1-bit slot: a palette stripe cannot be smaller, and the unit is a bilevel candidate anyway
    pal = palette(planes) if plan.palette_ok and plan.depths != [1] else None
    if plan.near:
        preds, mode, u, _ = closed_loop(plan, planes, index=index if plan.keep else None)
    else:
        refs = plan.ref_planes(index)
        mode, preds = _search(plan, planes, plan.depths, plan.decor, refs)
        u = residuals(planes, plan.depths, plan.lanes, preds, mode, refs, in_place=True)
    del planes  # the residuals are all the counts need: one copy of the unit per thread at a time
    if pal is None:  # no palette stripe to weigh: the counts go straight into the sums
        totals.count(plan, u, index)
        return _Analysis(None, mode, preds, plan.depths == [1], u if plan.keep else None)
    entries, index_plane = pal
    # one slot's plain counts at a time: u stays in this thread's buffer, and the sums take its
    # counts below only if the palette stripe loses (no unit-sized set of 16 x 640 arrays held)
    plain = [_slot_stats(plan, u[s:s + 1], plan.depths[s], plan.shifts[s]) for s in range(u.shape[0])]
    slot_bits = sum(estimate_bits_each(plain))
    # bilevel / template candidates (their chooser is costly): few tuples, or content
    # the predictors barely help (text, drawings), not photos of few levels
    few = len(entries) <= LEVEL_TUPLES or plan.eff.every_level or (
        plan.eff.levels and slot_bits >= LEVEL_RATIO * _order0(index_plane))
    entry_bits = 8 * len(entries) * entry_len(plan.depths) + 8
    # the index plane's estimate is >= 0 (less float error far below 1 bit): where the entries
    # alone are not smaller than the slots (tiny images), the stripe cannot win
    if not dense(entries) and entry_bits < slot_bits + 1:
        ip = index_plane[None]
        _, ppreds = _search(plan, ip, [PALETTE_DEPTH], False)
        pu = residuals(ip, [PALETTE_DEPTH], plan.lanes, ppreds, 0)
        pstats = _slot_stats(plan, pu, PALETTE_DEPTH, 0)
        if estimate_bits(pstats) + entry_bits < slot_bits:
            totals.take_palette(pstats)
            put_unit(plan, index, None)  # a palette stripe is exact
            return _Analysis(entries, 0, ppreds, few, pu if plan.keep else None)
    totals.count(plan, u, index, plain)
    return _Analysis(None, mode, preds, plan.depths == [1] or few, u if plan.keep else None)


def _order0(index_plane: np.ndarray) -> float:
    """The index plane's order-0 entropy in bits (what its tuples cost without prediction), for
    _Analysis.few, which only _levels reads: not asked at efforts without level stripes."""
    counts = histogram(index_plane, 8).astype(np.float64)  # (bincount would widen the plane first)
    counts = counts[counts > 0]
    return float((counts * np.log2(counts.sum() / counts)).sum())


def _unit_residuals(plan: EncodePlan, index: int, a: _Analysis, buffers: UnitBuffers) -> np.ndarray:
    """The zigzag residuals of unit ``index`` under its analysis' choices (the same kernels, so
    the same values the statistics counted)."""
    planes = plan.planes(index, buffers)
    if a.palette is not None:
        index_plane = palette(planes)[1]  # type: ignore[index]  # the analysis found at most 256 tuples
        return residuals(index_plane[None], [PALETTE_DEPTH], plan.lanes, a.preds, 0)
    if plan.near:
        return closed_loop(plan, planes, a.preds, a.mode, index)[2]
    return residuals(planes, plan.depths, plan.lanes, a.preds, a.mode, plan.ref_planes(index), in_place=True)


def _code_unit(plan: EncodePlan, index: int, a: _Analysis, models: list[ModelPlan], pmodel: ModelPlan | None, cms,
               buffers: UnitBuffers) -> bytes:
    u = a.residuals if a.residuals is not None else _unit_residuals(plan, index, a, buffers)
    a.residuals = None  # each unit's memory goes as it is coded
    if a.palette is not None:
        assert pmodel is not None
        prefix = bytearray([LAYOUT_PALETTE, len(a.palette) - 1])
        for entry in a.palette:
            for d, v in zip(plan.depths, entry):
                prefix += bytes([v]) if d <= 8 else v.to_bytes(2, "little")
        data = [stream(u[0], None, plan.lanes, pmodel.enc, cms[-1])]
        return bytes(prefix) + predictor_bytes(a.preds) + encode_varint(len(data[0])) + data[0]
    data = [stream(u[s], u[0], plan.lanes, models[s].enc, cms[s]) for s in range(u.shape[0])]
    return bytes([a.mode]) + predictor_bytes(a.preds) + b"".join(encode_varint(len(d)) for d in data) + b"".join(data)


# --- maps --------------------------------------------------------------------------------------


def _channels(img: np.ndarray, header: Header) -> list[Channel]:
    st = header.sample_type
    H, W, C = img.shape
    alpha_ch = C - 1 if header.layout.has_alpha else -1
    if st.bits == 64:
        raw = img.view(np.uint64)
        his = [(raw[:, :, c] >> np.uint64(32)).astype(np.uint32) for c in range(C)]
        los = [(raw[:, :, c] & np.uint64(0xFFFFFFFF)).astype(np.uint32) for c in range(C)]
        words = his + los
    else:
        raw = img.view(np.dtype(f"<u{st.bits // 8}"))
        words = [raw[:, :, c] for c in range(C)]
    D = min(st.bits, 32)
    # what the map choice reads of every channel, in one pass over the interleaved words
    summaries = word_summary(raw, st.kind, D) if st.bits < 64 else [None] * len(words)
    presences = word_presence(raw) if D <= 8 else [(None, None)] * len(words)
    lo = [i >= C for i in range(len(words))]  # 2.1: coded channel C + c is 64-bit channel c's lo word
    return [Channel(i, wd, "u" if lo[i] else st.kind, D, header.sample, st.name, i == alpha_ch, lo[i], summaries[i],
                    *presences[i]) for i, wd in enumerate(words)]


def _choose_maps(channels: list[Channel], st_name: str, bound: int, eff: Effort, lanes: int) -> tuple[list[ChannelMap], list[int]]:
    """Per coded channel its map and coded near-lossless delta (0 = exact)."""
    maps, deltas = [], []
    near_ok = bound > 0 and st_name in NEAR_SAMPLES
    for ch in channels:
        cmap = candidate_maps(ch)[0]
        delta = 0
        if near_ok and cmap.mode != CONST:
            cmap = near_map(ch, cmap, bound)
            delta = coded_delta(cmap, ch.D, bound)
        elif eff.tables and cmap.mode != CONST:
            cand = table_candidate(ch, cmap)
            if cand is not None:
                reg_cost = window_cost(ch, cmap, lanes)
                tab_cost = window_cost(ch, cand, lanes) + 8 * table_bytes(cand) * window_fraction(ch.word)
                if tab_cost < 0.99 * reg_cost:
                    cmap = cand
        maps.append(cmap)
        deltas.append(delta)
    return maps, deltas


# --- the payload -------------------------------------------------------------------------------


def _reference_planes(reference: np.ndarray, img: np.ndarray, header: Header, slots: list) -> np.ndarray:
    """4: the previous canvas under the frame as coded values of each slot, reduce(o) mod 2^n
    through this frame's maps (maps.reduce, the decoder's), (S, H, W) uint32."""
    ref = as_image_array(reference)
    if ref.shape != img.shape or ref.dtype != img.dtype:
        raise ValueError(f"reference of shape {ref.shape} {ref.dtype}, expected {img.shape} {img.dtype}")
    words = np.ascontiguousarray(ref).view(np.dtype(f"<u{header.sample_type.bits // 8}"))
    return np.stack([reduce(words[:, :, s.coded.channel], s.coded) for s in slots]).astype(np.uint32)


def _plan(img: np.ndarray, layout, effort: int, max_error: float, stripe_rows, group_cols,
          reference: np.ndarray | None = None) -> EncodePlan:
    H, W, C = img.shape
    sample = sample_code(img.dtype)
    channels_code = layout_code(C, layout)
    header = Header(W, H, sample=sample, channels=channels_code, mask=_EVERY_FEATURE)
    st = header.sample_type
    eff = EFFORTS[effort]
    geo = entropy_geometry(W, H, stripe_rows, group_cols)
    lanes = lanes_for(geo.group_cols or W)
    channels = _channels(img, header)
    bound = int(max_error) if max_error and max_error > 0 else 0
    maps, cdeltas = _choose_maps(channels, st.name, bound, eff, lanes)
    chans = check_maps(header, maps)
    slots = build_slots(header, chans)
    depths = [s.depth for s in slots]
    deltas = [cdeltas[s.coded.index] for s in slots]
    bounds = None
    if any(deltas):
        bounds = [cdeltas[c] for c in range(C)]  # 2.6: per container channel (<= 32-bit samples)
    decor = decorrelation_allowed(header, slots)
    rgb = header.channels in (3, 4)
    # choose_model never weighs the cross context of a small slot: such images do not count it
    # (its sums would be 80 KiB per slot, held for nothing)
    weighs = eff.cross and not small_slot(W * H, effort_of(effort))
    cross_slots = tuple(s.index for s in slots if rgb and s.index in (1, 2) and s.cross_allowed) if weighs else ()
    shifts = [max(0, d - 16) for d in depths]
    palette_ok = eff.palette and all(d <= PALETTE_MAX_DEPTH for d in depths)
    refs = None
    # 4: 7-9 never in images of 64-bit samples; 2.6: never in payloads with near-lossless bounds
    if reference is not None and st.bits <= 32 and not any(deltas):
        refs = _reference_planes(reference, img, header, slots)
    return EncodePlan(header, slots, channels, maps, [s.coded.index for s in slots], depths, deltas, bounds, decor, cross_slots,
                 shifts, palette_ok, lanes, geo, eff, effort, refs)


def encode_tuned(image: np.ndarray, *, effort: int = DEFAULT_EFFORT, max_error: float = 0, threads: int | None = None,
                 layout=None, stripe_rows: int | None = None, group_cols: int | None = None,
                 unit_table: str | None = "hint", ordinals: bool = False,
                 reference: np.ndarray | None = None, slow_decode: bool = False, recon: bool = False) -> EncodedEntropy:
    """Code ``image`` ((H, W) or (H, W, C)) as a small entropy-coded DATA payload.

    ``effort`` 1 (fast) .. 9 (smallest), default 5. ``max_error`` B > 0: near-lossless, every
    sample within B sample units of the source (u8, u16, u32, i32 samples; other sample types
    and channels whose map cannot carry a bound stay exact, 2.6). ``threads``: worker threads
    for the units (None: every core); the bytes do not depend on it. ``unit_table``: "hint"
    (head record 10 for two or more units), "none", "filled", "empty" or "tail" (a check-tail
    reservation; the caller appends the uIDX chunk), as in ``imij_plugins.encode``.
    ``reference``: for an inter frame (1.3 presence bit 0), the previous canvas under it (the
    image's shape and dtype); rows may then predict from it (4: predictors 7-9, row 0 only 7)
    where the search finds them smaller. Never with 64-bit samples or near-lossless bounds, and
    never in palette stripes; it needs no feature. Efforts above the default keep the modeled
    decode cost (decode_cost) within BOUND times the default effort's file, which they never
    exceed in size, unless ``slow_decode``. ``recon``: with the samples a decoder outputs of a
    near-lossless payload (for pSUM, 1.4.1), kept as its units are coded; exact ones have none.
    """
    if effort not in EFFORTS:
        raise ValueError(f"effort must be 1 ..= 9, not {effort!r}")
    if unit_table is None:
        unit_table = "none"
    check_unit_table(unit_table)
    img = as_image_array(image)
    workers = threads if threads is not None else default_threads()  # (os.cpu_count asked once)
    if img.size < PARALLEL_SAMPLES:  # a pool's hand-offs cost more than such units gain (the bytes are the same)
        workers = 1
    code = functools.partial(_encode, workers=workers, unit_table=unit_table, ordinals=ordinals, recon=recon)
    base, limit = None, None
    if effort > DEFAULT_EFFORT and not slow_decode:  # decode no slower than the default's, within BOUND
        base = code(_plan(img, layout, DEFAULT_EFFORT, max_error, stripe_rows, group_cols, reference))
        limit = BOUND * base.decode_cost
    plan = _plan(img, layout, effort, max_error, stripe_rows, group_cols, reference)
    best = code(plan, limit=limit)
    base = base if base is not None and len(base.payload) <= len(best.payload) else None  # best only shrinks
    if stripe_rows is None:  # 5: the highest efforts try other geometries too (column groups unless given)
        tried = {plan.geo}
        for rows, cols in GEOMETRY_TRIES.get(effort, ()):
            cols = group_cols if group_cols is not None or cols is None or cols >= img.shape[1] else cols
            geo = entropy_geometry(img.shape[1], img.shape[0], rows, cols)
            lanes = lanes_for(geo.group_cols or geo.width)
            if geo in tried or (limit is not None and UnitCosts(geo, lanes, len(plan.depths)).all_regular() > limit):
                continue
            tried.add(geo)
            other = code(_plan(img, layout, effort, max_error, rows, cols, reference), limit=limit)
            best = other if len(other.payload) < len(best.payload) else best
    return base if base is not None and len(base.payload) <= len(best.payload) else best


def _encode(plan: EncodePlan, workers: int, unit_table: str, ordinals: bool, limit: float | None = None,
            recon: bool = False) -> EncodedEntropy:
    """The payload of one plan: analysis, models, units, level stripes, head (2, 3, 5); ``limit``
    bounds its modeled decode cost, which the level stripes may not push past it (``recon``: 2.6)."""
    if recon and plan.near:  # one copy of the source's words; each near-lossless unit's put as it is coded
        plan = replace(plan, recon=np.stack([c.word for c in plan.channels], axis=2).view(plan.header.sample_type.dtype))
    count = plan.geo.unit_count
    totals = _Totals(len(plan.depths), plan.geo.width * plan.geo.height)
    buffers = UnitBuffers()
    analyses = parallel_map(lambda i: _analyze(plan, i, totals, buffers), count, workers)  # noqa: F821  # run before the del
    del buffers  # not held while the models are chosen
    totals.merge()

    models, pmodel = _choose_models(plan, totals)
    del totals
    if _refinable(plan):
        models, pmodel = _refine(plan, analyses, models, pmodel, workers)

    if use_c():
        cms = [m.enc.cdata() for m in models] + [pmodel.enc.cdata() if pmodel else None]
    else:
        cms = [None] * (len(models) + 1)
    buffers = UnitBuffers()
    bodies = parallel_map(lambda i: _code_unit(plan, i, analyses[i], models, pmodel, cms, buffers), count, workers)  # noqa: F821  # run before the del
    del buffers

    release_scratch()
    costs = UnitCosts(plan.geo, plan.lanes, len(plan.depths))
    palettes = [a.palette is not None for a in analyses]
    budget = None if limit is None else LevelBudget(costs, palettes, limit - costs.total(palettes, {}))
    # 2.10 / 2.14 / 5: units of few tuples may be smaller as bilevel or template palette stripes
    bodies, level_records, level_features, level_units = _levels(plan, analyses, bodies, workers, budget)
    coded_models = models + ([pmodel] if pmodel else [])
    if len(level_units) == count:  # no unit reads the models: the smallest valid ones (3.3)
        coded_models = [_MinimalModel(Scheme(m.scheme.n, 0, 0)) for m in coded_models]
    model_stream = model_bits(coded_models)
    # 2.6 / 5: record 19 only when a unit that is not a palette stripe carries a nonzero delta
    near_used = plan.bounds is not None and any(a.palette is None for a in analyses)
    encoded = _assemble(plan, model_stream, bodies, pmodel is not None, plan.bounds if near_used else None,
                        unit_table, ordinals, level_records, level_features)
    return encoded._replace(decode_cost=costs.total(palettes, level_units), recon=plan.recon)


def _choose_models(plan: EncodePlan, totals: _Totals) -> tuple[list[ModelPlan], ModelPlan | None]:
    """3.3: every slot's model and the palette index plane's (None without palette stripes) from
    the units' summed statistics, one sum widened at a time."""
    eff = effort_of(plan.effort)
    models = []
    for s, n in enumerate(plan.depths):
        # every unit a palette stripe: the slot models code nothing
        variants = _Totals.stats(totals.slots[s]) or {False: _empty_stats()}
        totals.slots[s] = {}  # one slot's sums alive at a time, widened or not
        models.append(choose_model(variants, n, plan.shifts[s], eff, RUN_MIN))
        del variants
    pal = totals.palette
    return models, choose_model(_Totals.stats(pal), PALETTE_DEPTH, 0, eff, RUN_MIN) if pal else None


def _refinable(plan: EncodePlan) -> bool:
    """_refine's reach: exact slots of depths 1 to 16 (ctx_shift 0), no inter-frame reference."""
    return plan.eff.refine and not plan.near and plan.refs is None and all(1 <= n <= 16 for n in plan.depths)


def _refine(plan: EncodePlan, analyses: list[_Analysis], models: list[ModelPlan], pmodel: ModelPlan | None,
            workers: int) -> tuple[list[ModelPlan], ModelPlan | None]:
    """5: every unit's row predictors chosen again, one row after the other, by what the first
    models make each row cost in its contexts (search.model_preds, not the bit-length proxy), and
    the models chosen again from the new residuals. Updates ``analyses``; the units' layouts
    (palette or slots) and decorrelation modes stay. The cost leaves zero runs out, so where the
    new models' estimate is not below the first ones' (tiled content of long runs), the first
    choice stays."""
    before = [a.preds for a in analyses]
    slot_costs = np.stack([bucket_costs(m) for m in models])
    slot_maps = np.array([m.ctx_map for m in models], dtype=np.uint8)
    cross = [m.cross for m in models]
    totals = _Totals(len(plan.depths), plan.geo.width * plan.geo.height)
    buffers = UnitBuffers()

    def again(i: int) -> None:
        a = analyses[i]
        planes = plan.planes(i, buffers)  # noqa: F821  # run before the del
        if a.palette is None:
            a.preds = model_preds(planes, plan.depths, plan.lanes, a.mode, plan.eff.preds, slot_costs, slot_maps,
                                    cross)
            totals.count(plan, residuals(planes, plan.depths, plan.lanes, a.preds, a.mode, in_place=True), i)
            return
        assert pmodel is not None
        index_plane = palette(planes)[1][None]  # type: ignore[index]  # the analysis found at most 256 tuples
        a.preds = model_preds(index_plane, [PALETTE_DEPTH], plan.lanes, 0, plan.eff.preds,
                                bucket_costs(pmodel)[None], np.array([pmodel.ctx_map], dtype=np.uint8), [False])
        pu = residuals(index_plane, [PALETTE_DEPTH], plan.lanes, a.preds, 0)
        totals.take_palette(_slot_stats(plan, pu, PALETTE_DEPTH, 0))

    parallel_map(again, len(analyses), workers)
    del buffers
    totals.merge()
    refined = _choose_models(plan, totals)
    if _estimate(*refined) < _estimate(models, pmodel):
        return refined
    for a, preds in zip(analyses, before):
        a.preds = preds
    return models, pmodel


def _estimate(models: list[ModelPlan], pmodel: ModelPlan | None) -> int:
    """The models' summed estimate of the payload's coded bits (* 2^16)."""
    return sum(m.estimate for m in models) + (pmodel.estimate if pmodel else 0)


@dataclass(frozen=True)
class _MinimalModel:
    """One symbol-0 table, k = m = 0, no cross: what model_bits writes for an unread model."""

    scheme: Scheme
    cross: bool = False
    ctx_shift: int = 0
    ctx_map: tuple[int, ...] = (0,) * CLASSES
    codes: tuple[TableCode, ...] = (table_code([1], 1),)


def _levels(plan: EncodePlan, analyses: list[_Analysis], bodies: list[bytes], threads: int,
            budget: LevelBudget | None) -> tuple[list[bytes], list[Record], set[int], set[int]]:
    """Section 5's bilevel / template palette chooser (level_writer.LevelCoder) over the units
    with at most 256 slot tuples (or a single 1-bit slot): each such unit is coded every allowed
    way and records 25 / 35 are written only where they pay (and ``budget`` allows). Not with
    near-lossless bounds. Returns the bodies, the records, their features and the level units."""
    candidates = [i for i, a in enumerate(analyses) if a.few]
    if not candidates or plan.near or not plan.eff.levels:
        return bodies, [], set(), set()
    from imij_plugins.payload.entropy.level_writer import LevelCoder, LevelOptions, UnitChoice, cannot_pay
    from imij_plugins.payload.entropy.rans import Lanes

    if cannot_pay([bodies[i] for i in candidates]):  # tiny images: not worth finding their tuples
        return bodies, [], set(), set()

    # no whole-image copy: each unit's coded values are made for it and dropped once its tuples
    # are found (section 5's image tuples are the units' summed)
    options = LevelOptions(both_layouts=plan.eff.every_level)  # 5: the counted layout only, below effort 6
    levels = LevelCoder(options, plan.slots, (plan.geo.unit_count, plan.planes), False, threads)
    levels.consider_all(candidates, UnitChoice(), plan.planes, lambda i: Lanes.of(plan.geo.unit_rect(i)[2], plan.lanes))
    out, records, features = levels.finish(list(bodies), budget)
    return out, records, features, levels.coded


class _Totals:
    """The units' statistics summed in place as each analysis finishes (3.3: the models see only
    sums), in uint32 below 2^32 positions; integer sums do not depend on the order threads
    finish in. The models read the sums as they are (uint32).

    Each thread counts into its own sums on images of OWN_SUMS_POSITIONS or more (a shared sum's
    cache lines move between cores: encodes of 0.3-1 megapixel took 3-12% longer at 2 threads with
    one); on smaller images, where a thread's copy (about 80 KiB per slot and cross variant) would
    be a large part of the input, every thread adds to the shared sums, each slot's under its own
    lock: threads counting different slots (a unit starts at the slot of its index) do not wait."""

    def __init__(self, slots: int, positions: int):
        self.dtype = np.uint32 if positions < 1 << 32 else np.int64
        self.own = positions >= OWN_SUMS_POSITIONS
        self.slots: list[dict[bool, Counts]] = [{} for _ in range(slots)]  # per slot and cross variant
        self.palette: dict[bool, Counts] = {}  # the palette index plane's
        self._lock = threading.Lock()  # the palette's sums and the thread list
        self._slot_locks = [threading.Lock() for _ in range(slots)]
        self._mine = threading.local()  # each thread's own sums of counted units, added in by merge
        self._threads: list[list[dict[bool, Counts]]] = []

    def count(self, plan: EncodePlan, u: np.ndarray, index: int, plain: list[SlotStats] | None = None) -> None:
        """Add every slot's counts of unit ``index``'s residuals u to this thread's sums in place
        (the kernel adds to uint32 arrays no other thread touches: no lock around it), or, on
        small images, to the shared sums, a slot at a time under its lock. ``plain``: the slots'
        counts where made already (_slot_stats), added to slots without a cross variant as is."""
        if not self.own or plain is not None:
            for k in range(len(self.slots)):
                s = (index + k) % len(self.slots)
                with self._slot_locks[s]:
                    if plain is not None and s not in plan.cross_slots:
                        self._add(self.slots[s], {False: plain[s]})
                    else:
                        self._count(plan, u, s, self.slots[s])
            return
        own = getattr(self._mine, "slots", None)
        if own is None:
            own = self._mine.slots = [{} for _ in self.slots]
            with self._lock:
                self._threads.append(own)
        for s, total in enumerate(own):
            self._count(plan, u, s, total)

    def _count(self, plan: EncodePlan, u: np.ndarray, s: int, total: dict[bool, Counts]) -> None:
        for cross in (False, True) if s in plan.cross_slots else (False,):
            if cross not in total:
                total[cross] = new_counts(self.dtype, plan.buckets(plan.depths[s]))
        _count(plan, u, s, {c: SlotStats(*counts) for c, counts in total.items()}, plan.shifts[s])

    def merge(self) -> None:
        """Add every thread's own sums to the shared ones (once every analysis has finished). A sum
        the shared ones lack is moved, not copied, and each thread's are emptied: the worker
        threads' locals would otherwise keep them alive until the models are chosen."""
        for own in self._threads:
            for total, variants in zip(self.slots, own):
                for cross, counts in variants.items():
                    if cross in total:
                        self._add(total, {cross: SlotStats(*counts)})
                    else:
                        total[cross] = counts
                variants.clear()
        self._threads.clear()

    def take_palette(self, st: SlotStats) -> None:
        """Add a palette stripe's index plane counts to the palette's sums."""
        with self._lock:
            self._add(self.palette, {False: st})

    def _add(self, total: dict[bool, Counts], variants: dict[bool, SlotStats]) -> None:
        for cross, st in variants.items():
            if cross not in total and st.vh.dtype == self.dtype:  # the first: taken over
                total[cross] = (st.vh, st.zr, st.rh)
                continue
            if cross not in total:
                total[cross] = new_counts(self.dtype, st.vh.shape[1])
            for acc, add in zip(total[cross], (st.vh, st.zr, st.rh)):
                np.add(acc, add, out=acc, casting="unsafe")

    @staticmethod
    def stats(total: dict[bool, Counts]) -> dict[bool, SlotStats]:
        """One sum's variants as the models read them: the uint32 sums themselves (no copy);
        int64 sums (2^32 positions or more) halved until they fit, a nonzero count kept >= 1."""
        return {cross: SlotStats(*(counts if counts[0].dtype == np.uint32 else _fit32(counts)))
                for cross, counts in total.items()}


def _fit32(counts: Counts) -> Counts:
    """int64 sums as uint32 with one right shift for all three arrays (their ratios kept)."""
    shift = max(0, max(int(a.max()) for a in counts).bit_length() - 32)
    return tuple(np.where(a > 0, np.maximum(a >> shift, 1), 0).astype(np.uint32) for a in counts)  # type: ignore[return-value]


def _empty_stats() -> SlotStats:
    vh, zr, rh = new_counts(buckets=1)
    vh[0, 0] = 1
    return SlotStats(vh, zr, rh)


def _assemble(plan: EncodePlan, models: bytes, bodies: list[bytes], palette: bool, bounds: list[int] | None,
              unit_table: str, ordinals: bool, level_records=(), level_features=frozenset()) -> EncodedEntropy:
    """2 / 2.7: the head, the unit records and the unit table; the features used (0.1). The
    payload is built in one buffer, each body dropped from ``bodies`` once copied."""
    features: set[int] = set(level_features)
    prefixes = [record_prefix(index, len(body), ordinals) for index, body in enumerate(bodies)]
    spans = [len(p) + len(body) for p, body in zip(prefixes, bodies)]
    head_records = unit_table_records(spans, unit_table)
    if bounds is not None:
        head_records.append(Record(REC_NEAR, encode_bounds(bounds)))
        features.add(FeatureId.NEAR_LOSSLESS)
    head_records.extend(level_records)  # 25 / 35 (2.10, 2.14)
    if ordinals:
        head_records.append(Record(REC_ORDINALS, b""))
        features.add(FeatureId.UNIT_ORDINALS)
    features |= entropy_features(plan.header, plan.maps)
    head = write_lossless_head(PRESENT_PALETTE if palette else 0, plan.lanes, plan.geo, head_records, plan.maps,
                               models, map_value_bytes(plan.header))
    return EncodedEntropy(join_units(head, prefixes, bodies), len(head), frozenset(features), len(spans))


__all__ = ["DEFAULT_EFFORT", "EFFORTS", "Effort", "EncodedEntropy", "encode_tuned", "entropy_geometry", "lanes_for"]
