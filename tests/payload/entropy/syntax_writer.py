"""The syntax-complete test writer of entropy-coded lossless payloads (2, 2.1-2.7, 3, 4; 5 for
defaults), and ``decode_entropy_payload``, a whole payload decoded on one thread.

It emits any syntax choice on request: lanes, stripe rows, column groups, each channel's map,
per-unit decorrelation mode and per-row predictors, per-slot model parameters (k, m, cross,
ctx_shift, ctx_map, table precision, run tokens), palette stripes, near-lossless bounds, inter
predictors against a reference, and the unit table hint / reservation states / ordinals. Tables
are built from the actual symbol counts; the frequencies the stream is coded with are the
decoder's own normalization (3.3) of the written weights, and rANS is encoded in reverse so
that the decoder's (step, phase, lane) word order comes out (3.1).

It aims at coverage and exactness, not compression (that is ``encode_tuned``'s job); the tests
use it to reach syntax the tuned encoder never writes. It shares the head, predictor and unit
record writers with the package's encoders.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from imij_plugins.container.header import Header
from imij_plugins.errors import ImijError
from imij_plugins.payload.data import read_data
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.encoder import EncodedEntropy
from imij_plugins.payload.entropy.level_writer import LevelCoder, LevelOptions, UnitChoice
from imij_plugins.payload.entropy.maps import (
    CONST,
    LSB,
    TABLE,
    Slot,
    build_slots,
    check_maps,
    decorrelation_allowed,
    entropy_features,
    forward,
    order_map,
    reduce,
)
from imij_plugins.payload.entropy.models import (
    CLASSES,
    PALETTE_DEPTH,
    Table,
    TableCode,
    smallest_table,
    table_code,
    write_model,
)
from imij_plugins.payload.entropy.near import encode_bounds, read_bounds
from imij_plugins.payload.entropy.rans import Event, Lanes, encode_stream, tokenize
from imij_plugins.payload.entropy.residuals import decor_forward, lane_edges, near_row, plane_residuals, zigzag
from imij_plugins.payload.entropy.stripe import LAYOUT_PALETTE, PALETTE_MAX_DEPTH, predictor_bytes
from imij_plugins.payload.entropy.tokens import Scheme, clamped_k, valid_parameters
from imij_plugins.payload.geometry import WIDE_GROUP, WIDE_IMAGE, Geometry
from imij_plugins.payload.head import (
    PRESENT_PALETTE,
    REC_NEAR,
    REC_ORDINALS,
    ChannelMap,
    map_value_bytes,
    write_lossless_head,
)
from imij_plugins.payload.units import UNIT_STRIPE, record_prefix, unit_table_records
from imij_plugins.pixels.dtypes import layout_code, sample_code
from imij_plugins.registry.features import FeatureId
from imij_plugins.wire.bits import BitWriter
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint

U64 = np.uint64
DEFAULT_CTX_MAP = tuple(min(3, (c + 1) // 3) for c in range(CLASSES))
UNIT_TABLE_MODES = ("auto", "hint", "filled", "empty", "tail", None)
UNIT_PIXELS = 1 << 18  # the default stripe: about this many pixels per unit, at least 16 rows


# --- options ---------------------------------------------------------------------------------


@dataclass
class MapChoice:
    """One coded channel's map (2.1). ``bits`` None: Lsb takes the fewest bits holding every
    value, Table its index width, F16InF32 16. ``table`` (mode 9): the ordered values o, strictly
    increasing; None takes the channel's distinct values. ``alias`` (mode 9): code samples equal
    to the last entry with indices past it (2.1: they expand to the last entry)."""

    mode: int = LSB
    bits: int | None = None
    value: int = 0
    table: Sequence[int] | None = None
    alias: bool = False


@dataclass
class ModelChoice:
    """One slot's model (3.3). None fields take a default: k, m from the residuals' mean, cross
    in slots 1 and 2 of RGB / RGBA (ruling R1), ctx_shift n - 16 for slots deeper than 16 bits,
    a fixed class grouping, and per table the precision with the fewest estimated bits.
    ``runs``: the shortest zero run coded as a run token (None: no run tokens).
    ``extra_weights``: a seed; nonzero puts random weight on symbols the data does not use."""

    k: int | None = None
    m: int | None = None
    cross: bool | None = None
    ctx_shift: int | None = None
    ctx_map: Sequence[int] | None = None
    prec: int | Sequence[int] | None = None
    runs: int | None = 4
    extra_weights: int = 0


@dataclass
class EntropyOptions:
    """Every syntax choice of an entropy-coded payload; None fields take sensible defaults."""

    layout: int | str | None = None
    lanes: int | None = None
    stripe_rows: int | None = None
    group_cols: int | None = None
    maps: Sequence[MapChoice | None] | None = None  # per coded channel (2.1)
    models: Sequence[ModelChoice | None] | None = None  # per slot (2.2)
    palette: bool = False  # head present bit 0: palette stripes may occur
    palette_model: ModelChoice | None = None
    unit: UnitChoice = field(default_factory=UnitChoice)
    units: Sequence[UnitChoice | None] | None = None  # per unit, overriding ``unit``
    near: Sequence[int] | None = None  # per channel coded bound delta (2.6)
    unit_table: str | None = "auto"  # auto, hint (10), filled / empty / tail (12), None
    table_width: int = 4  # filled reservation: bytes per entry
    reservation_padding: int = 0  # empty / tail reservation: zero bytes after the state
    ordinals: bool = False  # head record 37 (2.7)
    side_records: bool = False  # a side record (id 8) before every main record (2.7)
    models_padding: int = 0  # bytes after the models' last byte (3.3: ignored)
    levels: LevelOptions = field(default_factory=LevelOptions)  # records 25 / 35 and the chooser (2.10, 2.14)


# --- helpers ---------------------------------------------------------------------------------


def residuals_near(V: np.ndarray, preds: list[int], lanes: Lanes, n: int, delta: int) -> np.ndarray:
    """2.6 closed loop: one plane's quantized residuals (mod 2^n), int64."""
    src, recon, ds = [V.astype(np.int64).tolist()], [[]], []
    for r, p in enumerate(preds[: V.shape[0]]):
        rec, d = near_row(src, recon, r, p, [n], [delta], lanes)
        recon[0].append(rec[0])
        ds.append(d[0])
    return np.array(ds, dtype=np.int64).reshape(V.shape)


def _choose_km(us: list[np.ndarray], n: int, choice: ModelChoice) -> tuple[int, int]:
    if choice.k is not None or choice.m is not None:
        m = choice.m if choice.m is not None else 0
        k = clamped_k(choice.k if choice.k is not None else m, m, n)
        if (k, m) not in valid_parameters(n):
            raise ValueError(f"model parameters k {choice.k} m {m} are invalid at depth {n} (3.3)")
        return k, m
    total = sum(int(u.sum()) for u in us)
    count = sum(u.size for u in us)
    mean = total // count if count else 0
    k0 = min(n, mean.bit_length() + 1)
    m0 = min(2, k0)
    cands = valid_parameters(n)
    return min(cands, key=lambda km: (abs(km[0] - k0), abs(km[1] - m0), -km[0]))


def _best_table(counts: list[int], prec: int | None, extra: random.Random | None, scheme: Scheme) -> TableCode:
    """A table for a context from its symbol counts (none: symbol 0 only)."""
    counts = list(counts)
    while len(counts) > 1 and counts[-1] == 0:
        counts.pop()
    if not any(counts):
        counts = [1]
    if extra is not None:  # random weight on symbols the data does not use (tests)
        limit = min(scheme.alphabet, 256)
        counts += [0] * (limit - len(counts))
        for s in range(limit):
            if counts[s] == 0 and not scheme.run_token_past_cap(s) and extra.random() < 0.3:
                counts[s] = extra.randint(1, 5000)
    return smallest_table(counts, prec)



@dataclass
class _Stream:
    u: list[list[int]]
    model: int  # slot index, or -1 for the palette index model
    steps: list[list[Event]] | None = None


@dataclass
class _Unit:
    prefix: bytes  # layout byte, palette count and entries, predictors
    streams: list[_Stream]
    slack: int


# --- the writer ------------------------------------------------------------------------------


def encode_entropy_payload(image: np.ndarray, *, options: EntropyOptions | None = None,
                           reference: np.ndarray | None = None) -> EncodedEntropy:
    """Code ``image`` (H, W, C) as an entropy-coded lossless DATA payload with the syntax
    ``options`` choose. ``reference``: the previous canvas (H, W, C) of an inter frame, which
    allows predictors 7-9. Raises ValueError for a choice the spec does not allow."""
    opts = options or EntropyOptions()
    img = np.ascontiguousarray(image)
    if img.ndim == 2:
        img = img[:, :, None]
    H, W, C = img.shape
    sample = sample_code(img.dtype)
    layout = layout_code(C, opts.layout)
    every = frozenset(FeatureId)
    header = Header(W, H, sample=sample, channels=layout, mask=every)
    st = header.sample_type
    D = min(st.bits, 32)
    raw = img.view(np.dtype(f"<u{st.bits // 8}")).astype(U64)
    if st.bits == 64:
        words = [raw[:, :, c] >> U64(32) for c in range(C)] + [raw[:, :, c] & U64(0xFFFFFFFF) for c in range(C)]
    else:
        words = [raw[:, :, c] for c in range(C)]
    kinds = [st.kind if i < C or st.bits < 64 else "u" for i in range(len(words))]

    # 2.1: maps and coded values
    choices = list(opts.maps) if opts.maps is not None else [None] * len(words)
    if len(choices) != len(words):
        raise ValueError(f"{len(choices)} map choices for {len(words)} coded channels")
    alpha_ch = C - 1 if header.layout.has_alpha else -1
    maps: list[ChannelMap] = []
    for i, (wd, mc) in enumerate(zip(words, choices)):
        o = order_map(wd, kinds[i], D)
        if mc is None:
            lo_word = st.bits == 64 and i >= C
            if (lo_word or i % C == alpha_ch) and o.size and np.all(o == o.flat[0]):
                mc = MapChoice(CONST, 0, int(o.flat[0]))
            else:
                mc = MapChoice(LSB)
        if mc.mode == TABLE:
            table = tuple(int(t) for t in (mc.table if mc.table is not None else np.unique(o)))
            maps.append(ChannelMap(TABLE, max(len(table) - 1, 0).bit_length() if mc.bits is None else mc.bits, len(table) - 1, table))
            continue
        bits = mc.bits
        if bits is None:
            bits = 16 if mc.mode == 5 else (int(o.max()).bit_length() if o.size else 0)
        maps.append(ChannelMap(mc.mode, bits, mc.value))
    try:
        chans = check_maps(header, maps)
    except ImijError as exc:
        raise ValueError(f"invalid map choice: {exc}") from exc
    coded = [forward(wd, cc) for wd, cc in zip(words, chans)]
    for i, mc in enumerate(choices):  # 2.1: indices past the last entry expand to the last entry
        if mc is not None and mc.mode == TABLE and mc.alias:
            value, bits = maps[i].value, maps[i].bits
            if (1 << bits) - 1 > value:
                rng = np.random.default_rng(1234 + i)
                hit = coded[i] == U64(value)
                alias = rng.integers(value, (1 << bits), size=coded[i].shape, dtype=np.uint64)
                coded[i] = np.where(hit, alias, coded[i])
    slots = build_slots(header, chans)
    decor_ok = decorrelation_allowed(header, slots)

    # 2.6: bounds per channel
    bounds_rec: bytes | None = None
    bounds = [0] * len(slots)
    if opts.near is not None and any(opts.near):
        bounds_rec = encode_bounds(list(opts.near))
        try:
            per_channel = read_bounds(bounds_rec, header, chans)
        except ImijError as exc:
            raise ValueError(f"invalid near-lossless bounds: {exc}") from exc
        bounds = [per_channel[s.coded.channel] for s in slots]

    # 2.3: geometry
    group_cols = opts.group_cols if opts.group_cols is not None else WIDE_GROUP if W >= WIDE_IMAGE else 0
    stripe_rows = opts.stripe_rows or min(max(16, UNIT_PIXELS // (group_cols or W)), H)
    geo = Geometry(W, H, stripe_rows, group_cols)
    if geo.group_cols and not 1 <= geo.group_cols <= W - 1:
        raise ValueError(f"group_cols {geo.group_cols} outside 1 ..= width - 1")
    n_lanes = opts.lanes if opts.lanes is not None else max(1, min(16, (geo.group_cols or W) // 16))
    if not 1 <= n_lanes <= 16:
        raise ValueError(f"lanes {n_lanes} outside 1 ..= 16")
    palette_ok = opts.palette and all(s.depth <= PALETTE_MAX_DEPTH for s in slots)
    inter_ok = reference is not None and st.bits <= 32 and bounds_rec is None
    ref_words = None
    if reference is not None:
        ref = np.ascontiguousarray(reference, dtype=img.dtype)
        if ref.shape != img.shape:
            raise ValueError("reference must have the image's shape")
        ref_words = ref.view(np.dtype(f"<u{st.bits // 8}")).astype(U64)

    # 2.4 / 2.5 / 4: every unit's layout and residuals (2.10 / 2.14: bilevel and template units
    # go to the LevelCoder, forced ones only there, chooser candidates there as well)
    levels = LevelCoder(opts.levels, slots, [coded[s.coded.index] for s in slots], bounds_rec is not None)
    units: list[_Unit] = []
    for index in range(geo.unit_count):
        x0, y0, w, h = geo.unit_rect(index)
        uc = opts.unit
        if opts.units is not None and index < len(opts.units) and opts.units[index] is not None:
            uc = opts.units[index]  # type: ignore[assignment]
        lanes = Lanes.of(w, n_lanes)
        vals = [coded[s.coded.index][y0 : y0 + h, x0 : x0 + w] for s in slots]
        if levels.force(index, uc, vals, lanes):
            units.append(_Unit(b"", [], 0))
            continue
        levels.consider(index, uc, vals, lanes)
        preds = _row_predictors(uc.predictors, h)
        edges = lane_edges(lanes)
        uses_ref = any(p >= 7 for p in preds)
        if uses_ref and not inter_ok:
            raise ValueError("predictors 7-9 need a reference of at most 32-bit samples and no bounds (4, 2.6)")
        palette = _palette(uc, vals, palette_ok, h * w)
        if palette is not None:
            if uses_ref:
                raise ValueError("predictors 7-9 in a palette stripe")
            entries, index_plane = palette
            prefix = bytearray([LAYOUT_PALETTE, len(entries) - 1])
            for entry in entries:
                for s, value in zip(slots, entry):
                    prefix += bytes([value]) if s.depth <= 8 else value.to_bytes(2, "little")
            prefix += predictor_bytes(preds)
            d = plane_residuals(index_plane.astype(np.int64), None, preds, edges, (1 << PALETTE_DEPTH) - 1)
            u = zigzag(d, PALETTE_DEPTH)
            units.append(_Unit(bytes(prefix), [_Stream(u.tolist(), -1)], uc.slack_words))
            continue
        decor = uc.decor if uc.decor is not None else (1 if decor_ok else 0)
        if decor and not decor_ok:
            raise ValueError(f"decorrelation mode {decor} where decorrelation is not allowed (2.2)")
        if not 0 <= decor <= 3:
            raise ValueError(f"decorrelation mode {decor}")
        ds = []
        for s, v, delta in zip(slots, vals, bounds):
            if delta:
                ds.append(residuals_near(v, preds, lanes, s.depth, delta))
            else:
                R = None
                if uses_ref:
                    R = reduce(ref_words[y0 : y0 + h, x0 : x0 + w, s.coded.channel], s.coded)  # type: ignore[index]
                R64 = None if R is None else R.astype(np.int64)
                ds.append(plane_residuals(v.astype(np.int64), R64, preds, edges, (1 << s.depth) - 1))
        if decor:
            ds[1], ds[2] = decor_forward(ds[0], ds[1], ds[2], decor, slots[0].depth)
        streams = [_Stream(zigzag(d, s.depth).tolist(), s.index) for s, d in zip(slots, ds)]
        units.append(_Unit(bytes([decor]) + predictor_bytes(preds), streams, uc.slack_words))

    # 3.3: model parameters from all units' residuals
    model_choices = list(opts.models) if opts.models is not None else [None] * len(slots)
    if len(model_choices) != len(slots):
        raise ValueError(f"{len(model_choices)} model choices for {len(slots)} slots")
    specs: dict[int, tuple[Scheme, bool, int, tuple[int, ...], ModelChoice]] = {}
    for s, mc in zip(slots, model_choices):
        mc = mc or ModelChoice()
        us = [np.array(st_.u, dtype=U64) for un in units for st_ in un.streams if st_.model == s.index]
        specs[s.index] = _model_spec(s.depth, mc, us, s, header.channels)
    if opts.palette:
        mc = opts.palette_model or ModelChoice()
        us = [np.array(st_.u, dtype=U64) for un in units for st_ in un.streams if st_.model == -1]
        if mc.cross:
            raise ValueError("the palette index model has no cross context (3.3)")
        specs[-1] = _model_spec(PALETTE_DEPTH, mc, us, None, header.channels)

    # 3.1 / 3.2: tokens, counted per model and context
    counts: dict[int, list[list[int]]] = {key: [[0] * 256 for _ in range(4)] for key in specs}
    for un in units:
        if not un.streams:  # a bilevel / template unit
            continue
        lanes = Lanes.of(len(un.streams[0].u[0]), n_lanes)
        u0 = un.streams[0].u
        for stream in un.streams:
            scheme, cross, shift, ctx_map, mc = specs[stream.model]
            stream.steps = tokenize(stream.u, scheme, cross, shift, ctx_map, lanes, u0 if cross else None, mc.runs)
            table = counts[stream.model]
            for events in stream.steps:
                for ev in events:
                    table[ev.ctx][ev.sym] += 1

    # 3.3: tables, the decoder's normalization
    codes: dict[int, list[TableCode]] = {}
    tables: dict[int, list[Table]] = {}
    for key, (scheme, _cross, _shift, ctx_map, mc) in specs.items():
        ntab = max(ctx_map) + 1
        precs = mc.prec if isinstance(mc.prec, (list, tuple)) else [mc.prec] * ntab
        extra = random.Random(mc.extra_weights) if mc.extra_weights else None
        codes[key] = [_best_table(counts[key][c][: scheme.alphabet], precs[c], extra, scheme) for c in range(ntab)]
        tables[key] = [Table.from_weights(code.weights) for code in codes[key]]

    # 3 / 3.1: streams, unit bodies
    bodies: list[bytes] = []
    for un in units:
        if not un.streams:  # a bilevel / template unit: levels.finish codes it
            bodies.append(b"")
            continue
        lanes = Lanes.of(len(un.streams[0].u[0]), n_lanes)
        data = []
        for stream in un.streams:
            tabs = tables[stream.model]
            assert stream.steps is not None
            data.append(encode_stream(stream.steps, [t.freq for t in tabs], [t.cum for t in tabs], lanes.active, un.slack))
        bodies.append(un.prefix + b"".join(encode_varint(len(d)) for d in data) + b"".join(data))

    # 3.3: the models bit stream
    bw = BitWriter()
    for key in [s.index for s in slots] + ([-1] if opts.palette else []):
        scheme, cross, shift, ctx_map, _ = specs[key]
        write_model(bw, scheme, cross, shift, ctx_map, codes[key])
    models = bw.getvalue() + bytes(opts.models_padding)

    # 2.10 / 2.14: records 25 / 35 and the bilevel and template units (section 5's choice)
    bodies, level_records, level_features = levels.finish(bodies)
    if len(levels.coded) == len(bodies) and opts.models is None and opts.palette_model is None:
        # no unit reads the models: the smallest valid ones (3.3), one symbol-0 table each
        bw = BitWriter()
        for key in [s.index for s in slots] + ([-1] if opts.palette else []):
            write_model(bw, Scheme(specs[key][0].n, 0, 0), False, 0, (0,) * CLASSES, [table_code([1], 1)])
        models = bw.getvalue() + bytes(opts.models_padding)
    return _assemble(opts, header, geo, n_lanes, maps, models, bounds_rec, bodies, D, level_records, level_features)


def _row_predictors(choice: int | Sequence[int] | None, h: int) -> list[int]:
    if choice is None:
        return [0] + [3] * (h - 1)
    if isinstance(choice, int):
        return [7 if choice == 7 else 0] + [choice] * (h - 1)
    preds = list(choice)
    if len(preds) != h:
        raise ValueError(f"{len(preds)} predictors for {h} rows")
    if preds[0] not in (0, 7) or any(not 0 <= p <= 9 for p in preds):
        raise ValueError(f"invalid row predictors {preds} (2.4)")
    return preds


def _palette(uc: UnitChoice, vals: list[np.ndarray], allowed: bool, pixels: int) -> tuple[list[tuple[int, ...]], np.ndarray] | None:
    """2.5 / 5: the unit's slot tuples as entries (by sum of slot values) and its index plane."""
    if uc.palette is False or (uc.palette is None and not allowed):
        return None
    if not allowed:
        raise ValueError("palette stripe without head present bit 0 or with a slot deeper than 16 bits (2.5)")
    h, w = vals[0].shape
    stack = np.stack([v.reshape(-1) for v in vals], axis=1).astype(np.int64)
    tuples, inverse = np.unique(stack, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = len(tuples)
    if n > 256:
        if uc.palette:
            raise ValueError(f"palette stripe with {n} slot tuples (at most 256)")
        return None
    if uc.palette is None and n * len(vals) * 2 >= pixels:
        return None
    order = sorted(range(n), key=lambda i: (int(tuples[i].sum()), tuple(int(t) for t in tuples[i])))
    if uc.palette_seed:
        random.Random(uc.palette_seed).shuffle(order)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    index = rank[inverse].reshape(h, w)
    if uc.palette_alias and n < 256:  # 2.5: an index >= n selects entry 0
        rng = np.random.default_rng(99)
        alias = rng.integers(n, 256, size=index.shape)
        index = np.where((index == 0) & (rng.random(index.shape) < 0.5), alias, index)
    entries = [tuple(int(t) for t in tuples[i]) for i in order]
    return entries, index


def _model_spec(n: int, mc: ModelChoice, us: list[np.ndarray], slot: Slot | None, layout: int) -> tuple[Scheme, bool, int, tuple[int, ...], ModelChoice]:
    k, m = _choose_km(us, n, mc)
    scheme = Scheme(n, k, m)
    if slot is None:
        cross = False
    elif mc.cross is None:
        cross = layout in (3, 4) and slot.index in (1, 2) and slot.cross_allowed  # ruling R1
    else:
        cross = mc.cross
        if cross and not slot.cross_allowed:
            raise ValueError(f"cross context in slot {slot.index} (3.3, ruling R1)")
    shift = 0
    if n > 16:
        shift = mc.ctx_shift if mc.ctx_shift is not None else n - 16
        if not 0 <= shift <= 31:
            raise ValueError(f"ctx_shift {shift}")
    elif mc.ctx_shift:
        raise ValueError("ctx_shift exists only for slots deeper than 16 bits (3.3)")
    ctx_map = tuple(mc.ctx_map) if mc.ctx_map is not None else DEFAULT_CTX_MAP
    if len(ctx_map) != CLASSES or any(not 0 <= c <= 3 for c in ctx_map):
        raise ValueError(f"ctx_map {ctx_map}: 16 contexts of 0..=3")
    if mc.runs is not None and mc.runs < 1:
        raise ValueError("runs: the shortest coded run is at least 1")
    return scheme, cross, shift, ctx_map, mc


def _assemble(opts: EntropyOptions, header: Header, geo: Geometry, n_lanes: int, maps: list[ChannelMap],
              models: bytes, bounds_rec: bytes | None, bodies: list[bytes], D: int,
              level_records: Sequence[Record] = (), level_features: set[int] | frozenset[int] = frozenset()) -> EncodedEntropy:
    """2 / 2.7: the head, the unit records and the unit table."""
    features: set[int] = set(level_features)
    records = []
    for index, body in enumerate(bodies):
        rec = record_prefix(index, len(body), opts.ordinals) + body
        if opts.side_records:  # 2.7: a side record, id kind - 1, skipped by readers
            side = bytes([index & 0xFF])
            rec = encode_varint(UNIT_STRIPE - 1) + encode_varint(len(side)) + side + rec
        records.append(rec)
    mode = opts.unit_table
    if mode not in UNIT_TABLE_MODES:
        raise ValueError(f"unit_table {mode!r}")
    if mode == "auto":  # 2.7: writers write the hint for 2+ units
        mode = "hint"
    head_records = unit_table_records([len(r) for r in records], mode or "none", width=opts.table_width,
                                      padding=opts.reservation_padding)
    if bounds_rec is not None:
        head_records.append(Record(REC_NEAR, bounds_rec))
        features.add(FeatureId.NEAR_LOSSLESS)
    head_records.extend(level_records)  # 25 / 35 (2.10, 2.14)
    if opts.ordinals:
        head_records.append(Record(REC_ORDINALS, b""))
        features.add(FeatureId.UNIT_ORDINALS)
    features |= entropy_features(header, maps)
    head = write_lossless_head(PRESENT_PALETTE if opts.palette else 0, n_lanes, geo, head_records, maps, models,
                               map_value_bytes(header))
    return EncodedEntropy(head + b"".join(records), len(head), frozenset(features), len(records))


def header_for(image: np.ndarray, encoded: EncodedEntropy, layout: int | str | None = None) -> Header:
    """The Header a file holding ``encoded`` needs."""
    img = np.asarray(image)
    if img.ndim == 2:
        img = img[:, :, None]
    H, W, C = img.shape
    return Header(W, H, sample=sample_code(img.dtype), channels=layout_code(C, layout), mask=encoded.features_used)


def decode_entropy_payload(buf: bytes | bytearray | memoryview, header: Header,
                           reference: np.ndarray | None = None) -> np.ndarray:
    """Decode a whole entropy-coded DATA payload ``buf`` unit after unit (``payload.data`` does
    this on a thread pool). ``reference``: the previous canvas (H, W, C) of an inter frame."""
    data = read_data(buf, header, 0, len(buf))
    if data.head.quick:
        raise ValueError("a quick-pixel payload")
    payload = prepare(header, data.head)
    out = np.empty((header.height, header.width, header.channel_count), dtype=payload.dtype)
    view = memoryview(buf)
    for i, unit in enumerate(data.units):
        x, y, w, h = data.head.geometry.unit_rect(i)
        ref = None if reference is None else reference[y : y + h, x : x + w]
        payload.decode_unit(view[unit.body_start : unit.end], w, h, ref, out=out[y : y + h, x : x + w])
    return out
