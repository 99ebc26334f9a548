"""How close each effort gets to the template model of the IMI specification, version 2 (2.14),
per 32-row stripe.

Every image of a class is cut into 32-row stripes. A stripe of at most 256 distinct pixel tuples
is *eligible*: its own palette (entries ordered by count, most frequent first, as the reference
encoder orders them) gives an index plane, and ``est`` is the ideal code length of 2.14's model
on it: the ten template pixels of 2.10 with the lane-local rule of the current row (lanes as
``lanes_for`` gives the encoder), typical rows free, phase 0's 1024 contexts, the five candidate
phases' 40 contexts and the escape symbols, each at static probabilities equal to the context's
frequencies in that stripe (the empirical conditional entropy). Not counted in ``est``: record
35 (the tables), the palette entries (``entries``, apart) and the stripe's other fixed bytes
(layout and count bytes, typical-row bits, rANS initial states, record framing).

Variants of the estimate: ``est img``, one set of frequencies for all eligible stripes of the
image (what one record 35 per payload can do, still without its cost); ``est+fixed``, entries
and fixed bytes added; ``est+fixed shared``, stripes whose tuples are all among 256 shared
entries (those in the most eligible stripes) code them as record 35's shared entries (0x84),
where that is smaller, and the shared entries are paid once; ``lanes 1``, without lanes (no
lane-local rule). Stripes of more than 256 tuples are reported apart; ``groups`` tries column
groups of 256, then 128 columns (each its own palette and lanes, entries and fixed bytes counted)
where every group of the stripe then has at most 256 tuples.

The image is then written with ``imij_plugins.encode`` at efforts 1, 5 and 9, effort 9 also with
``slow_decode`` (``e9s``: no decode-cost bound), and these with ``stripe_rows=32`` (``/32``); the
file's unit records (head geometry, unit spans) attribute its bytes to rows. An effort's bpp over
some stripes counts the spans of the units inside them (framing included, payload head not);
when a unit straddles them and other rows, the bpp is over every unit of the image instead,
marked ``*`` (class medians leave those out, "(k/n)"). Per stripe (the ``/32`` files' units nest
in the stripes): how many eligible stripes ``e9s/32`` codes as template palette stripes, those
stripes' bytes over their estimate with fixed bytes (shared entries, 0x84, are in the head on
both sides), and the share of its unit bytes in stripes of more than 256 tuples. ``mix`` is a
whole-image figure: eligible stripes at ``est+fixed`` (or shared), the
others at what the ``e9s/32`` file spends on them, no head.

    python benchmarks/template_bound.py [--corpus benchmarks/.corpus] [--classes screenshot graphics]
        [--images NAME ...] [--json out.json] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import load  # noqa: E402

import imij_plugins  # noqa: E402
from imij_plugins.container.file import read_container  # noqa: E402
from imij_plugins.payload.entropy.encoder import lanes_for  # noqa: E402
from imij_plugins.payload.head import read_lossless_head  # noqa: E402
from imij_plugins.payload.units import walk_units  # noqa: E402
from imij_plugins.wire.cursor import Cursor  # noqa: E402

STRIPE_ROWS = 32
MAX_ENTRIES = 256  # 2.5 / 2.14: a palette stripe has at most 256 entries
GROUP_TRIES = (256, 128)  # column group widths tried for stripes of more than 256 tuples
# 2.10: template pixel k at (dy, dx), k = 0..=9; 2.14: W = t_9, candidates t_5, t_6, t_4, t_8, t_1
TEMPLATE = ((-2, -1), (-2, 0), (-2, 1), (-1, -2), (-1, -1), (-1, 0), (-1, 1), (-1, 2), (0, -2), (0, -1))
W_K = 9
CANDIDATES = (5, 6, 4, 8, 1)
PHASE0_CONTEXTS = 1024
CANDIDATE_CONTEXTS = 40
INDEX_SYMBOLS = 256
# label, effort, stripe_rows, slow_decode (effort 9's choice without the decode-cost bound)
VARIANTS = (("e1", 1, None, False), ("e5", 5, None, False), ("e9", 9, None, False), ("e9s", 9, None, True),
            ("e5/32", 5, STRIPE_ROWS, False), ("e9/32", 9, STRIPE_ROWS, False), ("e9s/32", 9, STRIPE_ROWS, True))
BEST = "e9s/32"  # the variant whose per-stripe bytes the tables compare with the estimate
TEMPLATE_LAYOUTS = (0x83, 0x84)


# --- the model (2.10, 2.14) ----------------------------------------------------------------------


def template_pixels(index: np.ndarray, lanes: int) -> np.ndarray:
    """2.10's ten template pixels t_k of every pixel of a stripe (or group) index plane, as a
    (10, h, w) int16 array: 0 above the stripe and outside the group; on the current row, a pixel
    left of the lane's first column reads the pixel one row up at the same column (0 on row 0)."""
    h, w = index.shape
    lw = -(-w // lanes)  # 2.3: lane l covers [l * lw, (l + 1) * lw)
    lane_col = np.arange(w) % lw
    pad = np.zeros((h + 2, w + 4), np.int16)
    pad[2:, 2 : w + 2] = index
    out = np.empty((len(TEMPLATE), h, w), np.int16)
    for k, (dy, dx) in enumerate(TEMPLATE):
        out[k] = pad[2 + dy : 2 + dy + h, 2 + dx : 2 + dx + w]
        if dy == 0:
            up = pad[1 : 1 + h, 2 + dx : 2 + dx + w]
            np.copyto(out[k], up, where=(lane_col < -dx)[None, :])
    return out


def typical_rows(index: np.ndarray) -> np.ndarray:
    """2.14: rows equal to the row above (row 0: a row of index 0); they code nothing."""
    typical = np.zeros(index.shape[0], bool)
    typical[0] = not index[0].any()
    typical[1:] = (index[1:] == index[:-1]).all(axis=1)
    return typical


def phase0_contexts(t: np.ndarray) -> np.ndarray:
    """2.14 phase 0: ctx = (W == 0) << 9 | sum over k = 0..=8 of (t_k == W) << k, per pixel."""
    w = t[W_K]
    ctx = (w == 0).astype(np.int64) << 9
    for k in range(9):
        ctx |= (t[k] == w).astype(np.int64) << k
    return ctx


@dataclass
class Counts:
    """Outcome counts of a template stripe: phase 0 (1024 x 2: equals W, differs), the candidate
    phases (40 x 2: equals the candidate, differs) and the escaped indices (256)."""

    phase0: np.ndarray = field(default_factory=lambda: np.zeros((PHASE0_CONTEXTS, 2), np.int64))
    cand: np.ndarray = field(default_factory=lambda: np.zeros((CANDIDATE_CONTEXTS, 2), np.int64))
    escape: np.ndarray = field(default_factory=lambda: np.zeros(INDEX_SYMBOLS, np.int64))

    def __iadd__(self, other: Counts) -> Counts:
        self.phase0 += other.phase0
        self.cand += other.cand
        self.escape += other.escape
        return self

    def bits(self) -> float:
        """The ideal code length: every context (and the escape alphabet) at its own frequencies."""
        return _entropy_bits(self.phase0) + _entropy_bits(self.cand) + _entropy_bits(self.escape[None, :])


def _entropy_bits(counts: np.ndarray) -> float:
    """Sum over rows of n * H(row's frequencies), in bits."""
    c = counts.astype(np.float64)
    total = c.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.where(c > 0, c * np.log2(np.where(c > 0, c, 1)), 0.0).sum(axis=1)
        whole = np.where(total > 0, total * np.log2(np.where(total > 0, total, 1)), 0.0)
    return float((whole - inner).sum())


def template_counts(index: np.ndarray, n: int, lanes: int) -> Counts:
    """2.14's outcome counts over the non-typical rows of an index plane of ``n`` entries."""
    t = template_pixels(index, lanes)
    keep = ~typical_rows(index)
    counts = Counts()
    if not keep.any():
        return counts
    t = t[:, keep].reshape(len(TEMPLATE), -1)
    value = index[keep].astype(np.int16).ravel()
    ctx = phase0_contexts(t)
    m = value != t[W_K]
    counts.phase0 += np.bincount(ctx * 2 + m, minlength=2 * PHASE0_CONTEXTS).reshape(PHASE0_CONTEXTS, 2)
    if n <= 2:  # m = 1 means i = 1 - W: no candidate phases
        return counts
    at = np.flatnonzero(m)  # the open pixels
    t, value = t[:, at], value[at]
    open_ = np.ones(len(at), bool)
    seen = [t[W_K]]
    for j, kj in enumerate(CANDIDATES):
        cj = t[kj]
        part = open_.copy()
        for s in seen:  # takes part when c_j differs from W and the earlier candidates
            part &= cj != s
        seen.append(cj)
        same = np.minimum((t == cj[None, :]).sum(axis=0), 7)
        b = value != cj
        counts.cand += np.bincount((8 * j + same[part]) * 2 + b[part],
                                   minlength=2 * CANDIDATE_CONTEXTS).reshape(CANDIDATE_CONTEXTS, 2)
        open_ &= ~(part & ~b)
    counts.escape += np.bincount(value[open_], minlength=INDEX_SYMBOLS)
    return counts


# --- palettes and stripes --------------------------------------------------------------------------


def tuple_keys(image: np.ndarray) -> np.ndarray:
    """One uint64 per pixel that is equal exactly where the pixel tuples are (up to 4 x 16 bits)."""
    a = image if image.ndim == 3 else image[:, :, None]
    if a.dtype.itemsize * a.shape[2] > 8:
        raise ValueError("pixel tuples wider than 64 bits")
    bits = 8 * a.dtype.itemsize
    keys = np.zeros(a.shape[:2], np.uint64)
    for c in range(a.shape[2]):
        keys |= a[:, :, c].astype(np.uint64) << np.uint64(bits * c)
    return keys


def palette_index(keys: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The index plane of a region of at most 256 tuples, entries by count (most frequent first,
    ties by tuple), and its entry count; None for more tuples."""
    uniq, inverse, count = np.unique(keys.ravel(), return_inverse=True, return_counts=True)
    if len(uniq) > MAX_ENTRIES:
        return None
    rank = np.empty(len(uniq), np.int64)
    rank[np.lexsort((uniq, -count))] = np.arange(len(uniq))
    return rank[inverse].reshape(keys.shape).astype(np.uint8), len(uniq)


def fixed_bytes(n: int, channels: int, sample_bytes: int, rows: int, active_lanes: int, stream: int) -> tuple[int, int]:
    """A template stripe's bytes outside its symbols (2.14, 3, 2.7): its n entries, and the rest
    (layout and count bytes, typical-row bits, the rANS initial states, the record's id and
    length varints around a stream of ``stream`` bytes)."""
    entries = n * channels * sample_bytes
    other = 2 + -(-rows // 8) + 4 * active_lanes
    body = entries + other + stream
    return entries, other + 1 + max(1, math.ceil(body.bit_length() / 7))


def active_lanes(width: int, lanes: int) -> int:
    """2.3: the non-empty prefix of ``lanes`` lanes of ceil(width / lanes) columns."""
    lw = -(-width // lanes)
    return -(-width // lw)


@dataclass
class Bound:
    """The estimate of one region coded as a template palette stripe: bits of its symbols, the
    same without lanes, its entries' bytes and its other fixed bytes (``fixed_bytes``)."""

    tuples: int
    bits: float
    bits_lanes1: float
    entries: int
    other: int
    counts: Counts = field(repr=False)


def region_bound(keys: np.ndarray, channels: int, sample_bytes: int) -> Bound | None:
    """The estimate of a stripe or column group of pixel ``keys`` (lanes as ``lanes_for`` gives
    for its width); None with more than 256 tuples."""
    got = palette_index(keys)
    if got is None:
        return None
    index, n = got
    lanes = lanes_for(keys.shape[1])
    counts = template_counts(index, n, lanes)
    bits = counts.bits()
    entries, other = fixed_bytes(n, channels, sample_bytes, keys.shape[0], active_lanes(keys.shape[1], lanes),
                                 math.ceil(bits / 8))
    return Bound(n, bits, template_counts(index, n, 1).bits(), entries, other, counts)


@dataclass
class StripeBound:
    """One 32-row stripe: its estimate (None: more than 256 tuples) and, for a stripe of more than
    256 tuples, the column group width and the groups' estimates when groups of 256, then 128
    columns bring every group to at most 256 tuples."""

    y: int
    rows: int
    bound: Bound | None
    group_cols: int | None = None
    groups: list[Bound] | None = None


def stripe_bounds(image: np.ndarray, stripe_rows: int = STRIPE_ROWS) -> list[StripeBound]:
    """The estimate of every stripe of an image (no column groups: lanes of the whole width)."""
    keys = tuple_keys(image)
    channels = 1 if image.ndim == 2 else image.shape[2]
    out = []
    for y in range(0, keys.shape[0], stripe_rows):
        sk = keys[y : y + stripe_rows]
        sb = StripeBound(y, sk.shape[0], region_bound(sk, channels, image.dtype.itemsize))
        if sb.bound is None:
            sb.group_cols, sb.groups = _group_bounds(sk, channels, image.dtype.itemsize)
        out.append(sb)
    return out


def _group_bounds(keys: np.ndarray, channels: int, sample_bytes: int) -> tuple[int | None, list[Bound] | None]:
    """2.3: the first column group width of ``GROUP_TRIES`` at which every group of the stripe
    has at most 256 tuples, and the groups' estimates."""
    w = keys.shape[1]
    for g in GROUP_TRIES:
        if g >= w:
            continue
        bounds = []
        for x in range(0, w, g):
            b = region_bound(keys[:, x : x + g], channels, sample_bytes)
            if b is None:
                break
            bounds.append(b)
        else:
            return g, bounds
    return None, None


def shared_palette(keys: np.ndarray, stripes: Sequence[StripeBound]) -> np.ndarray:
    """At most 256 tuples for record 35's shared entries (2.14) when the image has more: those in
    the most eligible stripes (then the most pixels), ordered by their pixel count, most first."""
    df: dict[int, int] = {}
    px: dict[int, int] = {}
    for s in stripes:
        uniq, count = np.unique(keys[s.y : s.y + s.rows], return_counts=True)
        for k, c in zip(uniq.tolist(), count.tolist()):
            df[k] = df.get(k, 0) + 1
            px[k] = px.get(k, 0) + c
    chosen = sorted(df, key=lambda k: (-df[k], -px[k], k))[:MAX_ENTRIES]
    return np.array(sorted(chosen, key=lambda k: (-px[k], k)), np.uint64)


def shared_stripe_bits(keys: np.ndarray, shared: np.ndarray) -> float | None:
    """The estimate of a stripe coded with the shared entries (layout 0x84), or None when one of
    its tuples is not among them."""
    order = np.argsort(shared)
    at = np.searchsorted(shared, keys.ravel(), sorter=order)
    at = np.minimum(at, len(shared) - 1)
    if not (shared[order[at]] == keys.ravel()).all():
        return None
    index = order[at].reshape(keys.shape).astype(np.uint8)
    return template_counts(index, len(shared), lanes_for(keys.shape[1])).bits()


# --- the written files ------------------------------------------------------------------------------


@dataclass
class UnitSpan:
    """One unit record: its rectangle (2.3), its span (2.7) and its stripe layout byte (2.4)."""

    x: int
    y: int
    w: int
    h: int
    span: int
    layout: int


def file_units(data: bytes) -> tuple[list[UnitSpan], int, int]:
    """The unit records of an entropy-coded file (2.7): rectangles from the head's geometry, spans
    and stripe layout bytes; the payload head's bytes and the stripe rows."""
    container = read_container(data)
    payload = container.payload(container.data)
    head = read_lossless_head(Cursor(payload, 0, len(payload), "DATA head"), container.header)
    geo = head.geometry
    units = []
    for i, u in enumerate(walk_units(payload, head, len(payload))):
        x, y, w, h = geo.unit_rect(i)
        units.append(UnitSpan(x, y, w, h, u.span, payload[u.body_start]))
    return units, head.end, geo.stripe_rows


def attribute(units: Sequence[UnitSpan], rows: np.ndarray) -> tuple[float | None, bool]:
    """Bits per pixel of the units inside ``rows`` (a mask of image rows) and True; when a unit
    straddles those and other rows, of every unit of the image and False (not the same pixels)."""
    spans = pixels = 0
    for u in units:
        inside = rows[u.y : u.y + u.h]
        if inside.all():
            spans += u.span
            pixels += u.w * u.h
        elif inside.any():
            return 8 * sum(u.span for u in units) / sum(u.w * u.h for u in units), False
    return _per(8 * spans, pixels), True


def stripe_spans(units: Sequence[UnitSpan], stripes: Sequence[StripeBound]) -> list[tuple[int, list[int]]] | None:
    """Per stripe, its units' bytes and layout bytes, when every unit lies inside one stripe."""
    per = {s.y: (0, []) for s in stripes}
    for u in units:
        y = u.y - u.y % STRIPE_ROWS
        if u.y + u.h > y + STRIPE_ROWS:
            return None
        total, layouts = per[y]
        per[y] = (total + u.span, layouts + [u.layout])
    return [per[s.y] for s in stripes]


# --- one image ----------------------------------------------------------------------------------------


def _rows(h: int, stripes: Sequence[StripeBound]) -> np.ndarray:
    """A mask of the image rows the stripes cover."""
    mask = np.zeros(h, bool)
    for s in stripes:
        mask[s.y : s.y + s.rows] = True
    return mask


def _fixed_bits(b: Bound) -> float:
    return b.bits + 8 * (b.entries + b.other)


def _coded_bits(b: Bound, layouts: Sequence[int]) -> float:
    """The estimate with fixed bytes of a stripe the file codes in ``layouts``: a unit of the
    shared entries (0x84) has neither count byte nor entries (they are in record 35, the head)."""
    return b.bits + 8 * (b.other - 1) if set(layouts) == {0x84} else _fixed_bits(b)


def _shared_costs(image: np.ndarray, stripes: Sequence[StripeBound]) -> tuple[list[float], int, int]:
    """Per eligible stripe, its smaller cost in bits with its own entries or (when every tuple is
    one of them) with ``shared_palette``'s entries (layout 0x84: no count byte, no entries); the
    shared entries' bytes (once, in record 35) and how many stripes use them."""
    keys = tuple_keys(image)
    shared = shared_palette(keys, stripes)
    channels = 1 if image.ndim == 2 else image.shape[2]
    costs, using = [], 0
    for s in stripes:
        bits = shared_stripe_bits(keys[s.y : s.y + s.rows], shared)
        own = _fixed_bits(s.bound)
        if bits is not None and bits + 8 * (s.bound.other - 1) < own:
            costs.append(bits + 8 * (s.bound.other - 1))
            using += 1
        else:
            costs.append(own)
    table = 1 + len(shared) * channels * image.dtype.itemsize if using else 0
    return costs, table, using


def estimate_report(image: np.ndarray, stripes: Sequence[StripeBound]) -> dict:
    """The estimate's fields of one image (bpp over the eligible pixels, the stripes of more
    than 256 tuples, the column group estimate, per stripe)."""
    h, w = image.shape[:2]
    elig = [s for s in stripes if s.bound is not None]
    over = [s for s in stripes if s.bound is None]
    grouped = [s for s in over if s.groups is not None]
    e_px, o_px, g_px = (sum(s.rows for s in part) * w for part in (elig, over, grouped))
    pooled = Counts()
    for s in elig:
        pooled += s.bound.counts
    shared_costs, shared_table, shared_using = _shared_costs(image, elig) if elig else ([], 0, 0)
    return {
        "shape": list(image.shape), "pixels": h * w, "lanes": lanes_for(w),
        "stripes": len(stripes), "eligible_stripes": len(elig), "eligible_share": e_px / (h * w),
        "est_bpp": _per(sum(s.bound.bits for s in elig), e_px),
        "est_image_probs_bpp": _per(pooled.bits(), e_px),
        "est_fixed_bpp": _per(sum(_fixed_bits(s.bound) for s in elig), e_px),
        "entries_bpp": _per(sum(8 * s.bound.entries for s in elig), e_px),
        "est_shared_bpp": _per(sum(shared_costs) + 8 * shared_table, e_px),
        "shared_stripes": shared_using,
        "est_lanes1_bpp": _per(sum(s.bound.bits_lanes1 for s in elig), e_px),
        "over256_stripes": len(over), "over256_share": o_px / (h * w),
        "groups_share_of_over256": g_px / o_px if o_px else None,
        "groups_est_bpp": _per(sum(b.bits for s in grouped for b in s.groups), g_px),
        "groups_est_fixed_bpp": _per(sum(_fixed_bits(b) for s in grouped for b in s.groups), g_px),
        "groups_cols": sorted({s.group_cols for s in grouped}),
        "per_stripe": [{"y": s.y, "rows": s.rows, "tuples": s.bound.tuples if s.bound else None,
                        "bits": s.bound.bits if s.bound else None,
                        "entries": s.bound.entries if s.bound else None, "other": s.bound.other if s.bound else None,
                        "group_cols": s.group_cols,
                        "group_fixed_bits": sum(map(_fixed_bits, s.groups)) if s.groups else None} for s in stripes],
    }


def variant_report(image: np.ndarray, stripes: Sequence[StripeBound], effort: int, stripe_rows: int | None,
                   slow_decode: bool = False, threads: int | None = None) -> dict:
    """One written file's bytes: whole, over the eligible stripes, the stripes of more than 256
    tuples and those column groups would make eligible; per stripe when its units nest in them."""
    h, w = image.shape[:2]
    data = imij_plugins.encode(image, effort=effort, stripe_rows=stripe_rows, slow_decode=slow_decode, threads=threads)
    units, head_bytes, rows = file_units(data)
    v = {"effort": effort, "slow_decode": slow_decode, "stripe_rows": rows, "file_bytes": len(data), "head_bytes": head_bytes,
         "file_bpp": 8 * len(data) / (h * w), "units": len(units),
         "template_units": sum(u.layout in TEMPLATE_LAYOUTS for u in units)}
    masks = {"eligible": [s for s in stripes if s.bound is not None], "over256": [s for s in stripes if s.bound is None],
             "groups": [s for s in stripes if s.groups is not None]}
    for part, chosen in masks.items():
        if chosen:
            v[f"{part}_bpp"], v[f"{part}_same_pixels"] = attribute(units, _rows(h, chosen))
    per = stripe_spans(units, stripes)
    if per is not None:  # units nest in the 32-row stripes: per-stripe bytes and layouts
        v["per_stripe_bytes"] = [b for b, _ in per]
        v["per_stripe_layouts"] = [layouts for _, layouts in per]
        tpl = [(s, b, layouts) for s, (b, layouts) in zip(stripes, per)
               if s.bound is not None and set(layouts) <= set(TEMPLATE_LAYOUTS)]
        v["eligible_coded_template"] = len(tpl)
        v["template_stripes_vs_est_fixed"] = (sum(8 * b for _, b, _ in tpl) / sum(_coded_bits(s.bound, l) for s, _, l in tpl)
                                              if tpl else None)
        v["over256_bytes_share"] = sum(b for s, (b, _) in zip(stripes, per) if s.bound is None) / sum(b for b, _ in per)
    return v


def mixed_bound(rep: dict, stripes: Sequence[StripeBound], label: str) -> dict:
    """Whole-image bpp if every eligible stripe cost its estimate with fixed bytes (own entries,
    or the shared ones) and every other stripe what the ``label`` file spends on it, head not
    counted; None without that file's per-stripe bytes."""
    per = rep["variants"][label].get("per_stripe_bytes")
    if per is None:
        return {"mix_bpp": None, "mix_shared_bpp": None}
    over = sum(8 * b for s, b in zip(stripes, per) if s.bound is None)
    e_px = rep["eligible_share"] * rep["pixels"]
    own = (rep["est_fixed_bpp"] or 0) * e_px
    shared = (rep["est_shared_bpp"] or 0) * e_px
    return {"mix_bpp": (own + over) / rep["pixels"], "mix_shared_bpp": (shared + over) / rep["pixels"]}


def image_report(name: str, cls: str, image: np.ndarray, variants=VARIANTS, threads: int | None = None,
                 best: str = BEST) -> dict:
    """The estimate and every variant's bytes of one image, as a JSON-able dict."""
    stripes = stripe_bounds(image)
    rep = {"image": name, "class": cls, **estimate_report(image, stripes)}
    rep["variants"] = {label: variant_report(image, stripes, effort, rows, slow, threads)
                       for label, effort, rows, slow in variants}
    if best in rep["variants"]:
        rep.update(mixed_bound(rep, stripes, best))
    return rep


def _per(bits: float, pixels: int) -> float | None:
    """Bits per pixel; None over no pixels."""
    return bits / pixels if pixels else None


# --- tables -------------------------------------------------------------------------------------------


COLUMNS = (
    ("eligible", lambda r: r["eligible_share"], "{:.0%}"),
    ("est", lambda r: r["est_bpp"], "{:.3f}"),
    ("est img", lambda r: r["est_image_probs_bpp"], "{:.3f}"),
    ("entries", lambda r: r["entries_bpp"], "{:.3f}"),
    ("est+fixed", lambda r: r["est_fixed_bpp"], "{:.3f}"),
    ("est+fixed shared", lambda r: r["est_shared_bpp"], "{:.3f}"),
    ("lanes 1", lambda r: r["est_lanes1_bpp"], "{:.3f}"),
)


def _fmt(value: float | None, spec: str, star: bool = False) -> str:
    """A table cell: "-" for no value, ``*`` when it is not over the same pixels."""
    if value is None:
        return "-"
    return spec.format(value) + ("*" if star else "")


def _variant_cell(r: dict, label: str, part: str) -> str:
    """A variant's bpp over some stripes (``part``: eligible, over256, groups)."""
    v = r["variants"][label]
    return _fmt(v.get(f"{part}_bpp"), "{:.3f}", not v.get(f"{part}_same_pixels", True))


def _template_cells(r: dict, label: str) -> list[str]:
    """Eligible stripes coded as template stripes, and their bytes over the estimate."""
    v = r["variants"].get(label, {})
    coded = v.get("eligible_coded_template")
    return [f"{coded}/{r['eligible_stripes']}" if coded is not None else "-",
            _fmt(v.get("template_stripes_vs_est_fixed"), "{:.2f}")]


def _over_cells(r: dict, label: str) -> list[str]:
    """The stripes of more than 256 tuples: shares, the variant's bpp, the group estimate."""
    if not r["over256_stripes"]:
        return ["0", "-", "-"]
    groups = "-"
    if r["groups_est_fixed_bpp"] is not None:
        groups = (f"{r['groups_share_of_over256']:.0%}: {r['groups_est_fixed_bpp']:.3f} vs "
                  f"{_variant_cell(r, label, 'groups')}")
    share = r["variants"].get(label, {}).get("over256_bytes_share")
    bytes_share = f" / {share:.0%}" if share is not None else ""
    return [f"{r['over256_stripes']} ({r['over256_share']:.0%}{bytes_share})", _variant_cell(r, label, "over256"), groups]


def markdown(reports: Sequence[dict], labels: Sequence[str], best: str = BEST) -> str:
    """Per class: per image and the class medians, the estimate and each variant's bpp over the
    eligible pixels, how the ``best`` variant codes the eligible stripes, and the stripes of more
    than 256 tuples (their bpp at ``best``, and the column group estimate with fixed bytes); then
    the whole images' bpp beside the mixed bounds."""
    head = (["image", "size"] + [c for c, _, _ in COLUMNS] + labels
            + [f"tpl {best}", f"{best} / est+fixed", f">256 (pixels / {best} bytes)", f">256 {best}", "groups: cover, est+fixed vs " + best])
    lines = []
    for cls in dict.fromkeys(r["class"] for r in reports):
        rows = [r for r in reports if r["class"] == cls]
        lines += [f"\n#### {cls}: over the eligible stripes ({len(rows)} images)\n", _row(head),
                  "|---|---|" + "---:|" * (len(head) - 2)]
        for r in rows:
            cells = [r["image"], "x".join(map(str, r["shape"][1::-1]))]
            cells += [_fmt(get(r), spec) for _, get, spec in COLUMNS]
            cells += [_variant_cell(r, lab, "eligible") for lab in labels]
            lines.append(_row(cells + _template_cells(r, best) + _over_cells(r, best)))
        med = ["**median**", ""] + [_fmt(_median([get(r) for r in rows]), spec) for _, get, spec in COLUMNS]
        med += [_same_median(rows, lab) for lab in labels]
        med += ["", _fmt(_median([r["variants"].get(best, {}).get("template_stripes_vs_est_fixed") for r in rows]), "{:.2f}"),
                _fmt(_median([r["over256_share"] for r in rows]), "{:.0%}"), "", ""]
        lines.append(_row(med))
        whole = ["image"] + [f"{lab} file" for lab in labels] + ["mix", "mix shared"]
        lines += [f"\n#### {cls}: whole images (bpp of the file; mix: eligible stripes at est+fixed, the others "
                  f"as {best} codes them, no head)\n", _row(whole), "|---|" + "---:|" * (len(whole) - 1)]
        fields = [lambda r, lab=lab: r["variants"][lab]["file_bpp"] for lab in labels]
        fields += [lambda r: r.get("mix_bpp"), lambda r: r.get("mix_shared_bpp")]
        for r in rows:
            lines.append(_row([r["image"]] + [_fmt(f(r), "{:.3f}") for f in fields]))
        lines.append(_row(["**median**"] + [_fmt(_median([f(r) for r in rows]), "{:.3f}") for f in fields]))
    return "\n".join(lines) + "\n"


def _same_median(rows: Sequence[dict], label: str) -> str:
    """The median of a variant's bpp over the eligible pixels, of the images where it is over
    those pixels ("(k/n)": only k of the n images with eligible stripes)."""
    with_eligible = [r["variants"][label] for r in rows if r["eligible_stripes"]]
    same = [v["eligible_bpp"] for v in with_eligible if v.get("eligible_same_pixels")]
    note = f" ({len(same)}/{len(with_eligible)})" if len(same) < len(with_eligible) else ""
    return _fmt(_median(same), "{:.3f}") + note


def _row(cells: Sequence[str]) -> str:
    """A markdown table row."""
    return "| " + " | ".join(cells) + " |"


def _median(values: Sequence[float | None]) -> float | None:
    """The median of the values that exist."""
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parent / ".corpus")
    ap.add_argument("--classes", nargs="*", default=["screenshot", "graphics"])
    ap.add_argument("--images", nargs="*", help="only these image names")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", type=Path, help="write every report (per stripe too) here")
    ap.add_argument("--markdown", type=Path, help="write the table here as well as to stdout")
    args = ap.parse_args(argv)
    reports = []
    for record, image in load(args.corpus):
        if record["class"] not in args.classes or (args.images and record["name"] not in args.images):
            continue
        if image.dtype.itemsize * (1 if image.ndim == 2 else image.shape[2]) > 8:
            print(f"skipped {record['name']}: tuples wider than 64 bits", file=sys.stderr)
            continue
        reports.append(image_report(record["name"], record["class"], image, threads=args.threads))
        print(f"done {record['name']}", file=sys.stderr)
    text = markdown(reports, [v[0] for v in VARIANTS])
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1))
    return reports


if __name__ == "__main__":
    main()
