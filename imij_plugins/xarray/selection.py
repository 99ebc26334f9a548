"""Outer and vectorized selections on a ``LazyImage`` that read only the units (2.3) they touch.

``LazyImage`` reads basic keys (ints and slices) as a region read of their bounding box. An index
array's bounding box may span many units it does not touch (rows 0 and 2047 span every stripe),
so these split a selection into one basic read per group of units its indices fall in.
"""

from __future__ import annotations

import itertools

import numpy as np

from imij_plugins.lazy import LazyImage

Key = int | slice | np.ndarray
# one unit run of an outer-index entry: (basic key to read, offsets into what it reads, output positions)
Piece = tuple[int | slice, np.ndarray | None, np.ndarray | None]


def _pieces(k: Key, size: int, unit: int) -> list[Piece]:
    """An outer-index entry as basic reads: an int or slice as itself, an index array as one
    slice per unit run (stripe, column group, frame) it touches."""
    if not isinstance(k, np.ndarray):
        return [(k, None, None)]
    k = np.where(k < 0, k + size, k)
    runs = k // unit
    out: list[Piece] = []
    for run in np.unique(runs):
        positions = np.flatnonzero(runs == run)
        lo, hi = int(k[positions].min()), int(k[positions].max())
        out.append((slice(lo, hi + 1), k[positions] - lo, positions))
    return out


def outer(image: LazyImage, key: tuple[Key, ...]) -> np.ndarray:
    """Outer indexing (each index array selects along its own dim): one basic read per combination of unit runs."""
    if not any(isinstance(k, np.ndarray) for k in key):
        return image[key]
    pieces = [_pieces(k, n, unit) for k, n, unit in zip(key, image.shape, image.chunks)]
    kept = [i for i, k in enumerate(key) if not isinstance(k, (int, np.integer))]
    shape = [len(key[i]) if isinstance(key[i], np.ndarray) else len(range(*key[i].indices(image.shape[i])))  # type: ignore[union-attr]
             for i in kept]
    out = np.empty(shape, image.dtype)
    for combo in itertools.product(*pieces):
        block = image[tuple(basic for basic, _, _ in combo)]
        local = [combo[i][1] for i in kept]
        where = [combo[i][2] for i in kept]
        take = np.ix_(*(np.arange(n) if o is None else o for o, n in zip(local, block.shape)))
        put = np.ix_(*(np.arange(n) if p is None else p for p, n in zip(where, out.shape)))
        out[put] = block[take]
    return out


def _coordinates(key: tuple[Key, ...], shape: tuple[int, ...]) -> list[np.ndarray]:
    """A vectorized key as one broadcast index array per dim, shaped (index dims..., sliced dims...) as NEP 21's vindex."""
    arrays = [np.asarray(k) for k in key if not isinstance(k, slice)]
    common = np.broadcast_shapes(*(a.shape for a in arrays))
    ranges = [np.arange(*k.indices(n)) for k, n in zip(key, shape) if isinstance(k, slice)]
    coords, j = [], 0
    for k, n in zip(key, shape):
        if isinstance(k, slice):
            coords.append(ranges[j].reshape((1,) * (len(common) + j) + (-1,) + (1,) * (len(ranges) - j - 1)))
            j += 1
        else:
            a = np.asarray(k)
            coords.append(np.broadcast_to(np.where(a < 0, a + n, a), common).reshape(common + (1,) * len(ranges)))
    return np.broadcast_arrays(*coords)


def vectorized(image: LazyImage, key: tuple[Key, ...]) -> np.ndarray:
    """Vectorized indexing (index arrays broadcast together, pointwise): one basic read of the
    bounding box of the points in each set of units, so scattered points decode only their units."""
    coords = _coordinates(key, image.shape)
    out = np.empty(coords[0].shape, image.dtype)
    if not out.size:
        return out
    flat = [c.ravel() for c in coords]
    units = np.stack([f // unit for f, unit in zip(flat, image.chunks)], axis=1)
    _, group = np.unique(units, axis=0, return_inverse=True)
    order = np.argsort(group.ravel(), kind="stable")
    starts = np.flatnonzero(np.diff(group.ravel()[order], prepend=-1))
    values = out.reshape(-1)
    for points in np.split(order, starts[1:]):
        at = [f[points] for f in flat]
        low = [int(a.min()) for a in at]
        block = image[tuple(slice(lo, int(a.max()) + 1) for a, lo in zip(at, low))]
        values[points] = block[tuple(a - lo for a, lo in zip(at, low))]
    return out
