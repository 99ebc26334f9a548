"""A unit's distinct slot tuples, commonest first (2.5's palettes and the level chooser of section
5's notes: bilevel and template palette stripes order their entries by count)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imij_plugins.payload.counts import histogram
from imij_plugins.payload.entropy.palettes import lookup8, palette


def slot_planes(vals: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """The slots' planes as one (S, h, w) array in their own type (no copy when they already
    are one, or for one slot)."""
    if isinstance(vals, np.ndarray):
        return vals
    return vals[0][None] if len(vals) == 1 else np.stack(vals)


def distinct_tuples(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """An (S, h, w) array's distinct slot tuples (by count descending, then value), each pixel's
    rank among them (one byte) and the counts; None for more than 256. The palette kernel needs
    no sort; one slot of 0s and 1s needs no kernel at all (its values are their own ranks, or
    their flips when 1 is the commoner)."""
    if planes.shape[0] == 1 and int(planes.max(initial=0)) <= 1:
        values = planes[0].ravel().astype(np.uint8)
        ones = int(np.count_nonzero(values))
        by_value = (values.size - ones, ones)
        order = sorted((v for v in (0, 1) if by_value[v]), key=lambda v: (-by_value[v], v))
        if order[0] == 1:
            values ^= 1
        return np.array(order, dtype=np.int64).reshape(-1, 1), values, np.array([by_value[v] for v in order], np.int64)
    found = palette(planes)
    if found is None:
        return None
    entries, index = found
    tuples = np.array(entries, dtype=np.int64).reshape(len(entries), planes.shape[0])
    counts = histogram(index, 8)[: len(entries)]  # (bincount would widen the plane to int64 first)
    order = commonest_first(tuples, counts)
    rank = np.empty(len(order), dtype=np.uint8)  # at most 256 tuples: one byte per pixel
    rank[order] = np.arange(len(order))
    return tuples[order], lookup8(rank, index.ravel()), counts[order]


def unit_tuples(vals: Sequence[np.ndarray], beyond: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``distinct_tuples`` of a unit's slot planes; for more than 256 tuples, None unless ``beyond``
    (then sorted, for a forced layout's checks)."""
    found = distinct_tuples(slot_planes(vals))
    if found is not None:
        return found
    if not beyond:
        return None
    cols = [v.reshape(-1).astype(np.int64) for v in vals]
    widths = [int(c.max()).bit_length() if c.size else 0 for c in cols]
    if sum(widths) <= 62:  # one integer key per pixel: a 1-D unique (or a histogram) is fast
        key = np.zeros(cols[0].shape, dtype=np.int64)
        shift = 0
        for c, wd in zip(cols, widths):
            key |= c << shift
            shift += wd
        if shift <= 16:
            hist = np.bincount(key)
            keys = np.flatnonzero(hist)
            lut = np.zeros(len(hist), dtype=np.int64)
            lut[keys] = np.arange(len(keys))
            inverse, counts = lut[key], hist[keys]
        else:
            keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        tuples = np.empty((len(keys), len(cols)), dtype=np.int64)
        shift = 0
        for j, wd in enumerate(widths):
            tuples[:, j] = (keys >> shift) & ((1 << wd) - 1)
            shift += wd
    else:
        flat = np.stack(cols, axis=1)
        tuples, inverse, counts = np.unique(flat, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    order = commonest_first(tuples, counts)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return tuples[order], rank[inverse], counts[order]


def commonest_first(tuples: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The order of ``tuples`` by count descending, then by value."""
    return np.lexsort(tuple(tuples[:, j] for j in range(tuples.shape[1] - 1, -1, -1)) + (-counts,))


def as_tuples(tuples: np.ndarray) -> list[tuple[int, ...]]:
    """Rows of a (k, nslots) array as tuples of Python ints (entries, set members)."""
    return [tuple(t) for t in tuples.tolist()]
