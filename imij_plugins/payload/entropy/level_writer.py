"""Writing bilevel (2.10) and template palette (2.14) stripes: the syntax-complete options and the
chooser of section 5's notes.

The syntax-complete test writer hands every unit to a ``LevelCoder``: units whose
``UnitChoice.layout`` forces 0x81-0x84 are coded that way; with ``LevelOptions.choose`` (the
default) every other unit the chooser may touch (no forced decorrelation, predictors, palette
or layout) is a candidate. ``finish`` then builds record 25 from the context counts of every
bilevel unit and record 35 from the outcome counts of every template unit, codes each
candidate each allowed way, and keeps, over the table sets none / bilevel / template / both, the
one giving the fewest bytes (each unit taking its smallest coding, each record counted with its
framing; ties keep fewer tables). Features are declared exactly for the records written.

In an image of more than 256 tuples, record 35 may still carry shared entries (2.14 lets a 0x84
stripe use some of them): ``shared_entries.common_entries`` picks them from the units' tuples,
the units they cover are counted with shared and with own entries, and the shared entries are
kept only when the estimated bytes (the counts' ideal code lengths, the decode-cost budget
applied) and then the written bytes are smaller with them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import TypeVar

import numpy as np

from imij_plugins.payload.entropy.bilevel import (
    CONTEXTS,
    HALF,
    bilevel_counts,
    bilevel_record,
    bilevel_stream,
    fit_probabilities,
)
from imij_plugins.payload.entropy.decode_cost import LevelBudget
from imij_plugins.payload.entropy.levels import (
    LAYOUT_BILEVEL,
    LAYOUT_BILEVEL_PALETTE,
    LAYOUT_TEMPLATE_OWN,
    LAYOUT_TEMPLATE_SHARED,
    LEVEL_LAYOUTS,
)
from imij_plugins.payload.entropy.maps import Slot
from imij_plugins.payload.entropy.models import M
from imij_plugins.payload.entropy.palettes import entry_len, lookup8
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.shared_entries import common_entries, renumbered_counts
from imij_plugins.payload.entropy.template import (
    CANDIDATE_CONTEXTS,
    MAX_ENTRY_DEPTH,
    rows_bytes,
    template_bits,
    template_counts,
    template_record,
    template_record_len,
    template_stream,
    typical_rows,
)
from imij_plugins.payload.entropy.template_tables import TemplateFit, fit_template_tables
from imij_plugins.payload.entropy.unit_tuples import (
    as_tuples,
    commonest_first,
    distinct_tuples,
    slot_planes,
    unit_tuples,
)
from imij_plugins.payload.head import REC_BILEVEL, REC_TEMPLATE
from imij_plugins.payload.parallel import parallel_map
from imij_plugins.registry.features import FeatureId
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint

MAX_ENTRIES = 256

S = TypeVar("S")
T = TypeVar("T")


@dataclass
class UnitChoice:
    """One unit's syntax (2.4, 2.5). ``predictors``: one per row, or one for rows 1.. (row 0
    takes 0, or 7 when this is given as 7 and a reference exists). ``palette``: None = use a
    palette stripe when the payload allows it and it looks smaller. ``palette_seed``: nonzero
    shuffles the entries. ``palette_alias``: code entry 0 with indices >= n (2.5). ``slack_words``:
    words after each stream that the decode never reads (2.7). ``layout``: force a bilevel
    (0x81), bilevel palette (0x82) or template palette stripe with own (0x83) or shared (0x84)
    entries; ``typical``: whether such a template stripe marks typical rows (level_writer)."""

    decor: int | None = None
    predictors: int | Sequence[int] | None = None
    palette: bool | None = None
    palette_seed: int = 0
    palette_alias: bool = False
    slack_words: int = 0
    layout: int | None = None  # 0x81-0x84: a bilevel / template palette stripe (2.10, 2.14)
    typical: bool = True  # template stripes: mark rows equal to the row above as typical (2.14)


@dataclass
class LevelOptions:
    """Bilevel / template palette syntax choices of a payload (2.10, 2.14). None fields take
    section 5's defaults.

    ``choose``: the chooser codes every free unit (no forced decor, predictors, palette or
    layout) both ways and keeps the smaller, writing records 25 / 35 only when they pay.
    ``inv``: record 25's inv. ``prec``: record 35's prec (b = 4 + prec). ``escape``: write the
    direct-index table (None: when an escape needs it; False: never). ``escape_prec``: its
    mantissa precision 1..=8. ``shared``: record 35's shared entries (None: the image's tuples
    when there are at most 256, else shared_entries.common_entries of the free units, kept only
    where they pay). ``record25`` / ``record35``: True writes the record even when no
    unit uses it, False never writes it. ``unused``: leave a context unused where its explicit
    probability does not pay for its bits. ``seed``: nonzero writes random probabilities in the
    contexts no unit uses (tests). ``both_layouts``: a free template unit is coded with shared and
    with own entries, the smaller kept; False codes only the layout its outcomes were counted in,
    at half the coding (the smaller in all 37 units of both benchmark corpora coded both ways;
    counting the other layout's outcomes to estimate it costs as much as coding it).
    """

    choose: bool = True
    inv: int | None = None
    prec: int | None = None
    escape: bool | None = None
    escape_prec: int | None = None
    shared: bool | None = None
    record25: bool | None = None
    record35: bool | None = None
    unused: bool = True
    seed: int = 0
    both_layouts: bool = True


@dataclass
class _Unit:
    index: int
    shape: tuple[int, int]  # (h, w); the coded values themselves are not kept (tuples, inverse)
    lanes: Lanes
    forced: int | None  # a forced layout, or None for a chooser candidate
    typical: bool
    alias: bool  # code entry 0 with indices >= n where possible (2.5, 2.10, 2.14)
    seed: int  # nonzero shuffles own entries
    slack: int
    tuples: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # (k, nslots), by count
    inverse: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # pixel -> row of tuples
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # pixels of each tuple
    # filled by finish
    bilevel_layout: int | None = None
    bilevel_entries: list[tuple[int, ...]] | None = None
    template_layout: int | None = None
    typical_rows: np.ndarray | None = None  # of the index plane
    own_entries: list[tuple[int, ...]] | None = None
    only: int | None = None  # the one layout worth coding where the estimate says so (shared entries above 256 tuples)


def _entry_bytes(entries: Sequence[Sequence[int]], depths: Sequence[int]) -> bytes:
    """2.5: per entry, per slot in slot order, u8 (depth <= 8) or u16 LE."""
    out = bytearray()
    for entry in entries:
        for value, d in zip(entry, depths):
            out += bytes([value]) if d <= 8 else int(value).to_bytes(2, "little")
    return bytes(out)


def _framed(body: bytes) -> int:
    """A unit record's bytes besides its id and any ordinal: the length varint and the body."""
    return _framed_len(len(body))


def _framed_len(n: int) -> int:
    """_framed of a body of ``n`` bytes."""
    return len(encode_varint(n)) + n


def _whole_bytes(bits: int) -> int:
    """Records 25 and 35 take ceil(bits / 8) bytes (2.10, 2.14)."""
    return (bits + 7) // 8


def _record_cost(payload: bytes) -> int:
    return _record_len(len(payload))


def _record_len(n: int) -> int:
    """A head record's bytes with a payload of ``n`` bytes: its id, length varint and payload."""
    return 1 + len(encode_varint(n)) + n


def _index_plane(unit: _Unit, entries: Sequence[tuple[int, ...]], alias: bool) -> np.ndarray:
    """Each pixel's entry index among ``entries`` (every tuple of the unit is one of them); for
    reading only (it may be a view of the unit's ranks)."""
    pos = {tuple(e): i for i, e in enumerate(np.asarray(entries).tolist())}
    lut = np.array([pos[tuple(tup)] for tup in np.asarray(unit.tuples).tolist()], dtype=np.uint8)  # <= 256 entries
    h, w = unit.shape
    same = np.array_equal(lut, np.arange(len(lut)))  # the entries in the unit's own order: its ranks
    index = (unit.inverse.astype(np.uint8, copy=False) if same else lookup8(lut, unit.inverse)).reshape(h, w)
    n = len(entries)
    if alias and n < 256:
        rng = np.random.default_rng(unit.index + 17)
        limit = 2 if n <= 2 else 256
        if n < limit:
            alt = rng.integers(n, limit, size=index.shape)
            index = np.where((index == 0) & (rng.random(index.shape) < 0.5), alt, index).astype(np.uint8)
    return index


class LevelCoder:
    """The bilevel / template palette part of one payload's writing (see the module docstring)."""

    def __init__(self, options: LevelOptions, slots: Sequence[Slot],
                 image: Sequence[np.ndarray] | np.ndarray | tuple[int, Callable[[int], np.ndarray]], near: bool,
                 threads: int = 1):
        self.opts = options
        self.threads = threads  # units are planned and coded on the shared unit pool
        self.depths = [s.depth for s in slots]
        # per slot, the whole image's coded values (a list, or one (S, h, w) array); or the unit
        # count and a function giving a unit's (S, h, w) values, so that no whole-image copy is made
        self.image = image
        self.near = near
        self.single = len(slots) == 1 and self.depths[0] == 1  # 2.10: 0x81
        self.entry_ok = bool(slots) and all(d <= MAX_ENTRY_DEPTH for d in self.depths)  # 2.5
        self.units: list[_Unit] = []
        # after finish: the units written as bilevel / template stripes, each True when it codes two values
        self.coded: dict[int, bool] = {}
        self._image_tuples: tuple[np.ndarray, np.ndarray] | bool | None = None  # False: more than 256
        self._common: list[tuple[int, ...]] | None | bool = False  # common_entries once found

    # --- collecting units ----------------------------------------------------------------

    def image_tuples(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The whole image's slot tuples, commonest first, and their counts; None when there are
        more than 256 (section 5 wants them only for two tuples or shared entries). The palette
        kernel finds that out without sorting the image."""
        if self._image_tuples is None:
            if isinstance(self.image, tuple):  # the units' tuples, found again only for non-candidates
                self._image_tuples = self._units_tuples(*self.image)
            else:
                found = distinct_tuples(slot_planes(self.image))
                self._image_tuples = False if found is None else (found[0], found[2])
        return self._image_tuples or None

    def common(self) -> list[tuple[int, ...]] | None:
        """2.14: the shared entries an image of more than 256 tuples may carry (common_entries of
        the free units; section 5's notes give such images own entries only, and 2.14 allows
        record 35 these: docs/SPEC_NOTES.md), or None; asked only when image_tuples is None."""
        if self._common is False:
            free = [(u.tuples, u.counts) for u in self.units if u.forced is None]
            self._common = common_entries(free, self.depths) if self.entry_ok else None
        return self._common  # type: ignore[return-value]

    def _units_tuples(self, count: int, planes: Callable[[int], np.ndarray]) -> tuple[np.ndarray, np.ndarray] | bool:
        """image_tuples as the sum of every unit's tuples (a unit of more than 256 ends it)."""
        known = {u.index: (u.tuples, u.counts) for u in self.units}
        if count == 1 and 0 in known:  # one unit: its tuples, in distinct_tuples's order already
            return known[0]
        total: dict[tuple[int, ...], int] = {}
        for index in range(count):
            found = known.get(index) or distinct_tuples(slot_planes(planes(index)))
            if found is None:
                return False
            for tup, n in zip(found[0].tolist(), found[-1].tolist()):
                total[tuple(tup)] = total.get(tuple(tup), 0) + n
            if len(total) > MAX_ENTRIES:
                return False
        tuples = np.array(list(total), dtype=np.int64).reshape(len(total), -1)
        counts = np.array(list(total.values()), dtype=np.int64)
        order = commonest_first(tuples, counts)  # as distinct_tuples orders them
        return tuples[order], counts[order]

    def force(self, index: int, uc, vals: list[np.ndarray], lanes: Lanes) -> bool:
        """A unit whose UnitChoice forces layout 0x81-0x84: validate and keep it (True)."""
        layout = getattr(uc, "layout", None)
        if layout is None:
            return False
        if layout not in LEVEL_LAYOUTS:
            raise ValueError(f"UnitChoice.layout 0x{layout:02x}: 0x81-0x84 (other layouts come from decor / palette)")
        if layout == LAYOUT_BILEVEL and not self.single:
            raise ValueError("a bilevel stripe (0x81) needs the payload's only slot to be 1 bit deep (2.10)")
        if layout != LAYOUT_BILEVEL and not self.entry_ok:
            raise ValueError(f"layout 0x{layout:02x} needs every slot at most 16 bits deep (2.5)")
        unit = self._unit(index, uc, vals, lanes, layout)
        assert unit is not None
        k = len(unit.tuples)
        if layout == LAYOUT_BILEVEL_PALETTE and k > 2:
            raise ValueError(f"a bilevel palette stripe (0x82) with {k} slot tuples (at most 2)")
        if layout == LAYOUT_TEMPLATE_OWN and k > MAX_ENTRIES:
            raise ValueError(f"a template palette stripe with {k} slot tuples (at most 256)")
        self.units.append(unit)
        return True

    def consider(self, index: int, uc, vals: list[np.ndarray], lanes: Lanes) -> None:
        """A unit the chooser may code as a bilevel or template stripe."""
        if self._chooses(uc):
            unit = self._unit(index, uc, vals, lanes, None)
            if unit is not None:  # 1-bit slots have at most two tuples
                self.units.append(unit)

    def consider_all(self, indices: Sequence[int], uc, vals_of: Callable[[int], list[np.ndarray]],
                     lanes_of: Callable[[int], Lanes]) -> None:
        """``consider`` of several units (ascending), their tuples found on the coder's threads;
        ``vals_of(i)`` makes unit i's coded planes when its turn comes."""
        if self._chooses(uc):
            found = self._each(indices, lambda i: self._unit(i, uc, vals_of(i), lanes_of(i), None))
            self.units.extend(u for u in found if u is not None)

    def _chooses(self, uc) -> bool:
        """5: the chooser looks at units without forced syntax, never with near-lossless bounds."""
        if not self.opts.choose or self.near:
            return False
        if uc.palette is not None or uc.decor is not None or uc.predictors is not None:
            return False  # forced syntax stays as asked
        return self.single or self.entry_ok

    def _unit(self, index: int, uc, vals: list[np.ndarray], lanes: Lanes, forced: int | None) -> _Unit | None:
        """The unit with its tuples; None for a chooser candidate of more than 256 tuples."""
        found = unit_tuples(vals, beyond=forced is not None)
        if found is None:
            return None
        unit = _Unit(index, vals[0].shape, lanes, forced, bool(getattr(uc, "typical", True)),
                     bool(uc.palette_alias) and forced is not None, uc.palette_seed if forced is not None else 0, uc.slack_words)
        unit.tuples, unit.inverse, unit.counts = found
        return unit

    # --- record 25 -------------------------------------------------------------------------

    def _plan_bilevel(self) -> tuple[list[_Unit], np.ndarray, int, bytes] | None:
        """The units that may be bilevel stripes, their table and record 25."""
        two: list[tuple[int, ...]] | None = None
        if not self.single and self.entry_ok:
            found = self.image_tuples()
            if found is not None and len(found[0]) == 2:  # 5: the same two entries in every unit, the commoner first
                two = as_tuples(found[0])
        inv = self.opts.inv
        if inv is None:
            if self.single:  # 5: the majority value reads as 0
                values, counts = self.image_tuples()  # type: ignore[misc]  # one 1-bit slot: at most two
                ones = int(counts[values[:, 0] == 1].sum())
                inv = 1 if 2 * ones > int(counts.sum()) else 0
            else:
                inv = 0
        units = []
        for u in self.units:
            layout = u.forced if u.forced in (LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE) else None
            if u.forced is None:
                layout = LAYOUT_BILEVEL if self.single else (LAYOUT_BILEVEL_PALETTE if two is not None else None)
            if layout is None:
                continue
            if layout == LAYOUT_BILEVEL_PALETTE:
                if two is not None and all(tup in two for tup in as_tuples(u.tuples)):
                    entries = list(two)
                else:  # a forced unit: its own tuples, commoner first
                    entries = as_tuples(u.tuples)
                    if u.seed:
                        random.Random(u.seed).shuffle(entries)
                u.bilevel_entries = entries
            u.bilevel_layout = layout
            units.append(u)
        forced_record = self.opts.record25
        if forced_record is False:
            if any(u.forced in (LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE) for u in units):
                raise ValueError("bilevel stripes forced while record25=False")
            return None
        if not units and not forced_record:
            return None
        zeros = np.zeros(CONTEXTS, dtype=np.int64)
        ones = np.zeros(CONTEXTS, dtype=np.int64)
        for z, o in self._each(units, lambda u: bilevel_counts(self._t_plane(u, inv), u.lanes)):
            zeros += z
            ones += o
        v, probs, used, _ = fit_probabilities(zeros, ones, 11)
        if not self.opts.unused:
            used = (zeros + ones) > 0
            probs = np.where(used, v, HALF)
        values: list[int | None] = [int(p) if k else None for p, k in zip(v, used)]
        if self.opts.seed:  # random probabilities where no unit has an outcome
            rng = random.Random(self.opts.seed)
            for c in range(CONTEXTS):
                if zeros[c] + ones[c] == 0 and rng.random() < 0.5:
                    values[c] = rng.randint(0, M)
                    probs[c] = values[c]
        return units, probs.astype(np.int64), inv, bilevel_record(inv, values)

    def _bilevel_body(self, u: _Unit, probs: np.ndarray, inv: int, limit: int | None) -> bytes | None:
        """A unit as a bilevel (palette) stripe with record 25's table; None if the table gives
        one of its outcomes no probability or its stream passes ``limit`` bytes."""
        stream = bilevel_stream(self._t_plane(u, inv), u.lanes, probs, limit)
        if stream is None:
            return None
        prefix = bytes([u.bilevel_layout])  # type: ignore[list-item]
        if u.bilevel_layout == LAYOUT_BILEVEL_PALETTE:
            assert u.bilevel_entries is not None
            prefix += bytes([len(u.bilevel_entries) - 1]) + _entry_bytes(u.bilevel_entries, self.depths)
        return prefix + stream + bytes(2 * u.slack)

    # --- record 35 -------------------------------------------------------------------------

    def _plan_template(self, regular: dict[int, int], budget: LevelBudget | None
                       ) -> tuple[list[_Unit], dict, bytes, tuple[int, Callable[[], bytes]] | None] | None:
        """The units that may be template palette stripes, their tables, record 35 and, where
        its shared entries are optional (an image of more than 256 tuples), record 35 without
        them: its bytes (framing included) and a function writing it. ``regular``: each free unit's regular record bytes (what a level stripe must beat);
        ``budget``: finish's decode-cost bound."""
        units = [u for u in self.units if u.forced in (LAYOUT_TEMPLATE_OWN, LAYOUT_TEMPLATE_SHARED)
                 or (u.forced is None and self.entry_ok and len(u.tuples) <= MAX_ENTRIES)]
        forced_record = self.opts.record35
        if forced_record is False:
            if any(u.forced is not None for u in units):
                raise ValueError("template palette stripes forced while record35=False")
            return None
        if not units and not forced_record:
            return None
        shared: list[tuple[int, ...]] | None = None
        want = self.opts.shared
        if want is None:
            want = bool(units) and self.entry_ok
        if want:
            if not self.entry_ok:
                raise ValueError("shared entries need every slot at most 16 bits deep (2.14)")
            found = self.image_tuples()
            if found is not None:  # 5: the image's tuples (at most 256), most frequent first
                shared = as_tuples(found[0])
            elif self.opts.shared:
                raise ValueError("shared entries for an image of more than 256 slot tuples")
            else:  # 2.14: up to 256 of them, kept only where they pay (beyond section 5's notes)
                shared = self.common()
        pool = set(shared or ())
        forced_shared = [u for u in units if u.forced == LAYOUT_TEMPLATE_SHARED]
        if forced_shared and shared is None:
            raise ValueError("layout 0x84 without shared entries (2.14)")
        if any(not set(as_tuples(u.tuples)) <= pool for u in forced_shared):
            raise ValueError("layout 0x84 for a unit with tuples outside the shared entries (2.14)")
        optional = shared is not None and self.image_tuples() is None and not forced_shared
        for u in units:
            own = as_tuples(u.tuples)  # by count in the unit
            if u.seed:
                random.Random(u.seed).shuffle(own)
            u.own_entries = own
            layout = u.forced
            if layout is None:  # 5: shared entries unless a unit has at most two tuples of more (or others)
                fits = shared is not None and (len(shared) <= 2 or len(own) > 2) and (not optional or set(own) <= pool)
                layout = LAYOUT_TEMPLATE_SHARED if fits else LAYOUT_TEMPLATE_OWN
            u.template_layout = layout

        def counts(u: _Unit, layout: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            entries = shared if layout == LAYOUT_TEMPLATE_SHARED else u.own_entries
            assert entries is not None
            index = _index_plane(u, entries, u.alias)  # made again for coding: planes are not kept
            typical = self._typical(u, index)
            return (*template_counts(index, len(entries), typical, u.lanes), typical)

        found_counts = self._each(units, lambda u: counts(u, u.template_layout))  # type: ignore[arg-type]
        fit = self._fit_template(found_counts)
        plain: tuple[int, Callable[[], bytes]] | None = None
        if optional:  # 2.14: the shared entries' units counted with their own entries too, then the smaller estimate
            assert shared is not None
            at = {t: i for i, t in enumerate(shared)}
            moved = [j for j, u in enumerate(units) if u.template_layout == LAYOUT_TEMPLATE_SHARED]
            own_counts = list(found_counts)
            for j in moved:
                own_counts[j] = renumbered_counts(found_counts[j], [at[t] for t in units[j].own_entries])  # type: ignore[union-attr]
            recount = [j for j in moved if own_counts[j] is None]
            for j, c in zip(recount, self._each([units[j] for j in recount], lambda u: counts(u, LAYOUT_TEMPLATE_OWN))):
                own_counts[j] = c
            own_fit = self._fit_template(own_counts)  # type: ignore[arg-type]
            with_shared = self._estimate(units, found_counts, fit, shared, regular, budget)
            if self._estimate(units, own_counts, own_fit, None, regular, budget) <= with_shared:  # type: ignore[arg-type]
                shared, fit, found_counts = None, own_fit, own_counts  # type: ignore[assignment]
                for j in moved:
                    units[j].template_layout = LAYOUT_TEMPLATE_OWN
            else:
                plain = (self._record35_len(fit, None), partial(self._record, fit, None))
                for j in moved if self.opts.both_layouts else ():  # below effort 6 one layout is coded anyway
                    units[j].only = self._clearer(units[j], found_counts[j], own_counts[j], fit)  # type: ignore[arg-type]
        for u, c in zip(units, found_counts):
            u.typical_rows = c[3]
        probs, table = fit.probs, fit.table
        tables = {"p": probs[:CONTEXTS].astype(np.int64), "q": probs[CONTEXTS:].astype(np.int64), "escape": table, "shared": shared}
        return units, tables, self._record(fit, shared), plain

    def _record(self, fit: TemplateFit, shared: list[tuple[int, ...]] | None) -> bytes:
        """Record 35's payload from _fit_template's tables and ``shared``."""
        values = fit.values
        return template_record(fit.bits - 4, values[:CONTEXTS], values[CONTEXTS:], fit.code, shared, self.depths)

    def _record35_len(self, fit: TemplateFit, shared: list[tuple[int, ...]] | None) -> int:
        """_record's head record bytes (id and length included), counted without writing it."""
        return _record_len(template_record_len(fit.bits - 4, fit.values, fit.code, len(shared or ()), self.depths))

    def _fit_template(self, counts: Sequence[tuple[np.ndarray, ...]]) -> TemplateFit:
        """template_tables.fit_template_tables with this payload's options."""
        o = self.opts
        return fit_template_tables(counts, o.prec, o.unused, o.seed, o.escape, o.escape_prec)

    def _estimate(self, units: Sequence[_Unit], counts: Sequence[tuple[np.ndarray, ...]], fit: TemplateFit,
                  shared: list[tuple[int, ...]] | None, regular: dict[int, int], budget: LevelBudget | None) -> float:
        """The bytes of record 35 (``fit``, ``shared``) and of the units as finish
        would pick them: each the smaller of its regular record and its template stripe (the
        stream at the ideal code length of its counts), then regular where ``budget`` says so."""
        probs, table = fit.probs, fit.table
        total = float(self._record35_len(fit, shared))
        saved = []
        for u, (p0, q, e, _) in zip(units, counts):
            own = u.template_layout == LAYOUT_TEMPLATE_OWN or shared is None
            fixed = 1 + (1 + len(u.tuples) * entry_len(self.depths) if own else 0) + (u.shape[0] + 7) // 8 + 5 * u.lanes.active
            size = fixed + template_bits(p0, q, e, probs, table) / 8
            reg = regular.get(u.index, size)
            total += reg
            if size < reg or u.forced is not None:
                saved.append((u.index, reg - size, len(u.own_entries if own else shared) <= 2))  # type: ignore[arg-type]
        dropped = set(budget.over([t for t in saved if t[0] in regular])) if budget is not None else set()
        return total - sum(s for i, s, _ in saved if i not in dropped)

    def _clearer(self, u: _Unit, shared: tuple[np.ndarray, ...], own: tuple[np.ndarray, ...], fit: TemplateFit) -> int | None:
        """The layout of a unit counted both ways that its estimate (the counts' ideal code length
        under ``fit``, own entries' bytes besides) puts more than 2% and 16 bytes ahead, or None
        (both are coded)."""
        probs, table = fit.probs, fit.table
        with_shared = template_bits(*shared[:3], probs, table) / 8
        with_own = template_bits(*own[:3], probs, table) / 8 + 1 + len(u.tuples) * entry_len(self.depths)
        if with_own > 1.02 * with_shared + 16:
            return LAYOUT_TEMPLATE_SHARED
        return LAYOUT_TEMPLATE_OWN if with_shared > 1.02 * with_own + 16 else None

    def _template_body(self, u: _Unit, tables: dict, layout: int, limit: int | None) -> bytes | None:
        """A unit as a template palette stripe; None if the tables cannot code it or its stream
        passes ``limit`` bytes."""
        shared = tables["shared"]
        if layout == LAYOUT_TEMPLATE_SHARED and shared is None:
            return None
        entries = shared if layout == LAYOUT_TEMPLATE_SHARED else u.own_entries
        assert entries is not None and u.own_entries is not None
        if layout == u.template_layout:
            index, typical = _index_plane(u, entries, u.alias), u.typical_rows
        else:
            if layout == LAYOUT_TEMPLATE_SHARED and not set(as_tuples(u.tuples)) <= set(shared):
                return None
            index = _index_plane(u, entries, False)
            typical = self._typical(u, index)
        assert index is not None and typical is not None
        stream = template_stream(index, len(entries), typical, u.lanes, tables["p"], tables["q"], tables["escape"], limit)
        if stream is None:
            return None
        prefix = bytes([layout])
        if layout == LAYOUT_TEMPLATE_OWN:
            prefix += bytes([len(entries) - 1]) + _entry_bytes(entries, self.depths)
        prefix += rows_bytes(typical.tolist())
        return prefix + stream + bytes(2 * u.slack)

    def _cannot_pay(self, bodies: list[bytes]) -> bool:
        """Whether no table set can win before any unit is planned or coded: no unit or record is
        forced and cannot_pay of the candidates' regular records."""
        if self.opts.record25 or self.opts.record35 or any(u.forced is not None for u in self.units):
            return False
        return cannot_pay([bodies[u.index] for u in self.units])

    def _cannot_win(self, bodies: list[bytes]) -> bool:
        """Whether no table set can win by lower bounds alone, before any table is fitted or unit
        coded (small images, where fitting costs many times the regular coding): each record at
        its fewest bits (every context unused, no direct-index table, but the shared entries
        record 35 would carry), each unit at the smaller of its regular record and a level
        stripe's fixed bytes (layout, entries, typical rows, an initial state per lane: 2.10,
        2.14, 3). The choice keeps no records unless a set is strictly smaller."""
        opts = self.opts
        if opts.record25 is not None or opts.record35 is not None or opts.shared:
            return False
        if any(u.forced is not None for u in self.units):
            return False
        found = self.image_tuples() if self.entry_ok else None  # _plan_template's shared entries
        kinds = []  # per table kind: its record's fewest bytes, each unit's fewest stripe bytes
        if self.single or (found is not None and len(found[0]) == 2):  # _plan_bilevel's units: all
            entries = 0 if self.single else 1 + 2 * entry_len(self.depths)
            kinds.append((_record_len(_whole_bytes(1 + CONTEXTS)),  # 2.10: inv, used bits
                          [1 + entries + 4 * u.lanes.active for u in self.units]))
        if self.entry_ok:  # _plan_template's units: all (at most 256 tuples each)
            bits = 3 + CONTEXTS + CANDIDATE_CONTEXTS + 2  # 2.14: prec, used bits, escape and shared flags
            shared = opts.shared is None and found is not None
            if shared:
                bits += 8 + len(found[0]) * sum(self.depths)  # type: ignore[index]
            base = [1 + (u.shape[0] + 7) // 8 + 4 * u.lanes.active for u in self.units]
            own = [1 + len(u.tuples) * entry_len(self.depths) for u in self.units]
            kinds.append((_record_len(_whole_bytes(bits)), [f + (0 if shared else e) for f, e in zip(base, own)]))
            common = self.common() if opts.shared is None and found is None else None
            if common is not None:  # the same with the shared entries of an image of more than 256 tuples
                pool = set(common)
                kinds.append((_record_len(_whole_bytes(bits + 8 + len(common) * sum(self.depths))),
                              [f + (0 if len(u.tuples) > 2 and set(as_tuples(u.tuples)) <= pool else e)
                               for u, f, e in zip(self.units, base, own)]))
        if not kinds:
            return True
        regular = [_framed(bodies[u.index]) for u in self.units]
        for chosen in ([kinds[0]], [kinds[-1]], kinds):  # (with two template kinds, "both" is only a weaker bound)
            least = sum(record for record, _ in chosen)
            least += sum(min(reg, *(_framed_len(fixed[j]) for _, fixed in chosen)) for j, reg in enumerate(regular))
            if least < sum(regular):
                return False
        return True

    def _each(self, units: Sequence[S], fn: Callable[[S], T]) -> list[T]:
        """``fn`` of every unit (or unit index), in order, on up to ``threads`` threads (units share
        nothing, 2.3)."""
        return parallel_map(lambda i: fn(units[i]), len(units), self.threads)

    @staticmethod
    def _t_plane(u: _Unit, inv: int) -> np.ndarray:
        """2.10: the unit's t plane (uint8): its 1-bit values, or its index among the two
        entries, xor inv; made when needed, not kept."""
        if u.bilevel_layout == LAYOUT_BILEVEL:  # the 1-bit values: the tuples are 0 and 1 (commoner first),
            return (u.inverse ^ (int(u.tuples[0, 0]) ^ inv)).reshape(u.shape)  # so a pixel's is its rank or the rank flipped
        assert u.bilevel_entries is not None
        return _index_plane(u, u.bilevel_entries, u.alias) ^ inv

    @staticmethod
    def _typical(u: _Unit, index: np.ndarray) -> np.ndarray:
        """2.14: the unit's typical rows, or none when its choice turns them off."""
        return typical_rows(index) if u.typical else np.zeros(index.shape[0], bool)

    # --- the choice --------------------------------------------------------------------------

    def _pick(self, options: dict[int, list[tuple[str, bytes]]], bodies: list[bytes], forced: set[int],
              chosen: tuple[str, ...], need: dict[str, bool], budget: LevelBudget | None,
              shared: list[tuple[int, ...]] | None) -> tuple[dict[int, str], list[bytes], dict[int, bool], tuple[str, ...]]:
        """Each unit's smallest coding under the table set ``chosen`` (ties keep the regular
        stripe), those over ``budget`` back to regular: the kinds, the bodies, whether each codes
        two values (decode_cost) and the tables still needed."""
        out = list(bodies)
        kinds: dict[int, str] = {}
        for u in self.units:
            cands = [(k, b) for k, b in options[u.index] if _allowed(k, chosen)]
            if u.index not in forced:
                cands.insert(0, ("", bodies[u.index]))  # ties keep the regular stripe
            kinds[u.index], out[u.index] = min(cands, key=lambda c: _framed(c[1]))
        # a binary decision per pixel (decode_cost): bilevel stripes, and template stripes of two entries
        two = {u.index: kinds[u.index] == "B" or len(shared if kinds[u.index] == "S" else u.tuples) <= 2  # type: ignore[arg-type]
               for u in self.units}
        if budget is not None:
            saved = [(u.index, _framed(bodies[u.index]) - _framed(out[u.index]), two[u.index]) for u in self.units
                     if kinds[u.index] and u.index not in forced]
            for i in budget.over(saved):
                kinds[i], out[i] = "", bodies[i]
            used = set(kinds.values())
            keep = {"B": "B" in used, "T": bool(used & {"T", "S"}), "t": "T" in used}
            chosen = tuple(k for k in chosen if keep[k] or need[k.upper()])
        return kinds, out, two, chosen

    def finish(self, bodies: list[bytes], budget: LevelBudget | None = None) -> tuple[list[bytes], list[Record], set[int]]:
        """Every level unit's body, the head records 25 / 35 to write and their features;
        ``budget`` bounds the decode cost the level stripes may add (the rest stay regular)."""
        if not self.units and not self.opts.record25 and not self.opts.record35:
            return bodies, [], set()
        if self._cannot_pay(bodies) or self._cannot_win(bodies):
            return bodies, [], set()
        bil = self._plan_bilevel()
        tpl = self._plan_template({u.index: _framed(bodies[u.index]) for u in self.units if u.forced is None}, budget)

        def limit(u: _Unit) -> int | None:
            """A candidate's stream longer than its regular stripe cannot be kept (ties keep the
            regular stripe), so its coding stops there; forced units are coded whole."""
            return None if u.forced is not None else len(bodies[u.index])

        # every allowed coding of every unit: (table it needs, body)
        options: dict[int, list[tuple[str, bytes]]] = {u.index: [] for u in self.units}
        if bil is not None:
            units, probs, inv, _ = bil
            for u, body in zip(units, self._each(units, lambda u: self._bilevel_body(u, probs, inv, limit(u)))):
                if body is not None:
                    options[u.index].append(("B", body))
                elif u.forced is not None:
                    raise AssertionError("a forced bilevel unit its own table cannot code")
        if tpl is not None:
            units, tables = tpl[0], tpl[1]

            def template_bodies(u: _Unit) -> list[tuple[int, bytes | None]]:
                layouts = [u.forced] if u.forced is not None else [LAYOUT_TEMPLATE_SHARED, LAYOUT_TEMPLATE_OWN]
                if u.forced is None and not self.opts.both_layouts:
                    layouts = [u.template_layout]
                elif u.forced is None and u.only is not None:
                    layouts = [u.only]
                elif u.forced is None and u.own_entries == tables["shared"] and not u.alias:
                    # own entries equal to the shared ones in order: the same index plane and
                    # stream, with the entries written besides; the shared layout is smaller
                    layouts = [LAYOUT_TEMPLATE_SHARED]
                return [(layout, self._template_body(u, tables, layout, limit(u))) for layout in layouts]  # type: ignore[misc]

            for u, bodies_of in zip(units, self._each(units, template_bodies)):
                for layout, body in bodies_of:
                    if body is not None:  # "S": needs record 35's shared entries
                        options[u.index].append(("S" if layout == LAYOUT_TEMPLATE_SHARED else "T", body))
                    elif u.forced is not None:
                        raise AssertionError("a forced template unit its own tables cannot code")
        forced = {u.index for u in self.units if u.forced is not None}
        need = {"B": self.opts.record25 is True, "T": self.opts.record35 is True}
        for u in self.units:
            if u.forced is not None:
                need["B" if u.forced in (LAYOUT_BILEVEL, LAYOUT_BILEVEL_PALETTE) else "T"] = True
        # "T": record 35 as planned; "t": without its shared entries, where they are optional
        plain = tpl[3] if tpl is not None else None
        record_cost = {"B": _record_cost(bil[3]) if bil else 0, "T": _record_cost(tpl[2]) if tpl else 0,
                       "t": plain[0] if plain is not None else 0}
        sets: tuple[tuple[str, ...], ...] = ((), ("B",), ("T",), ("B", "T"))
        if plain is not None:
            sets = ((), ("B",), ("t",), ("T",), ("B", "t"), ("B", "T"))
        best: tuple[int, tuple[str, ...]] | None = None
        for tables_set in sets:  # ties keep fewer tables (and no shared entries)
            if need["B"] and "B" not in tables_set or need["T"] and not {"T", "t"} & set(tables_set):
                continue
            if ("B" in tables_set and bil is None) or ("T" in tables_set and tpl is None):
                continue
            total = sum(record_cost[k] for k in tables_set)
            for u in self.units:
                sizes = [_framed(b) for k, b in options[u.index] if _allowed(k, tables_set)]
                if u.index not in forced:
                    sizes.append(_framed(bodies[u.index]))
                total += min(sizes)
            if best is None or total < best[0]:
                best = (total, tables_set)
        assert best is not None
        shared = tpl[1]["shared"] if tpl is not None else None
        chosen = best[1]
        kinds, out, two, chosen = self._pick(options, bodies, forced, chosen, need, budget, shared)
        if plain is not None and "T" in chosen:  # 2.14: optional shared entries only where they still pay (after budget)
            alt = self._pick(options, bodies, forced, tuple("t" if k == "T" else k for k in chosen), need, budget, shared)
            sizes = [sum(map(_framed, o)) + sum(record_cost[k] for k in c) for o, c in ((out, chosen), (alt[1], alt[3]))]
            if sizes[1] <= sizes[0]:
                kinds, out, two, chosen = alt
        self.coded.update((i, two[i]) for i in kinds if kinds[i] or i in forced)
        records: list[Record] = []
        features: set[int] = set()
        if "B" in chosen and bil is not None:
            records.append(Record(REC_BILEVEL, bil[3]))
            features.add(FeatureId.BILEVEL)
        if {"T", "t"} & set(chosen) and tpl is not None:
            records.append(Record(REC_TEMPLATE, tpl[2] if "T" in chosen else plain[1]()))  # type: ignore[index]
            features.add(FeatureId.TEMPLATE_PALETTES)
        return out, records, features


def _allowed(kind: str, tables: Sequence[str]) -> bool:
    """Whether a unit coding of ``kind`` ("B" bilevel, "T" own entries, "S" shared entries) can be
    written with the table set ``tables`` ("B" record 25, "T" record 35, "t" record 35 without
    its shared entries)."""
    return ("T" if kind == "S" else kind) in tables or (kind == "T" and "t" in tables)


def cannot_pay(bodies: Sequence[bytes]) -> bool:
    """Whether records 25 / 35 cannot pay for themselves over units whose regular records are
    ``bodies``: those take no more bytes than the smaller record at its smallest (every context
    unused, no direct-index table, no shared entries, framing included), which ties keep out."""
    return sum(_framed(b) for b in bodies) <= _smallest_record()


@cache
def _smallest_record() -> int:
    bilevel = bilevel_record(0, [None] * CONTEXTS)
    template = template_record(0, [None] * CONTEXTS, [None] * CANDIDATE_CONTEXTS, None, None, ())
    return min(_record_cost(bilevel), _record_cost(template))
