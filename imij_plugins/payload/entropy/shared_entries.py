"""Record 35's shared entries for an image of more than 256 slot tuples (2.14, section 5's notes).

A template palette stripe of layout 0x84 codes indices into record 35's shared entries instead
of carrying its own (0x83); nothing in 2.14 asks it to use every entry. So when the image has
more than 256 tuples, up to 256 of them may still be shared: those of the units (stripes) that
then drop their own count byte and entries. The choice is made from the units' tuples alone,
before any unit is counted or coded; the level chooser then keeps the shared entries only when
the written bytes say they pay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imij_plugins.payload.entropy.palettes import entry_len
from imij_plugins.payload.entropy.unit_tuples import as_tuples, commonest_first

MAX_SHARED = 256  # 2.14: count is n - 1 in 8 bits


def common_entries(units: Sequence[tuple[np.ndarray, np.ndarray]], depths: Sequence[int]) -> list[tuple[int, ...]] | None:
    """Up to 256 shared entries for units given as (tuples (k, slots), pixel counts (k,)), or None
    when no set is estimated to pay. A unit whose tuples are all shared saves its own entries
    (one count byte and k entries of 2.5's form); record 35 pays ``sum(depths)`` bits per entry
    and 8 for the count. Units of at most two tuples keep their own entries (phase 0's two-entry
    rule), so they are left out. Tuples are ranked by how many units hold them (then pixels,
    then value), the best prefix is taken and cut to the tuples of the units it covers, then
    each other unit is added, fewest missing tuples first, where its entries outweigh them.
    The entries come out commonest first over the covered units (index 0 the commonest, 5)."""
    usable = [(t, c) for t, c in units if len(t) > 2]
    if not usable:
        return None
    entry_bytes = entry_len(depths)  # 2.5
    bits = sum(depths)  # 2.14: each slot's coded value in its depth's bits
    keys, ids = np.unique(np.concatenate([t for t, _ in usable]), axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    pixels = np.concatenate([c for _, c in usable]).astype(np.int64)
    holders = np.bincount(ids, minlength=len(keys))
    by_pixels = np.bincount(ids, weights=pixels, minlength=len(keys))
    order = np.lexsort(tuple(keys[:, j] for j in range(keys.shape[1] - 1, -1, -1)) + (-by_pixels, -holders))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    bounds = np.cumsum([len(t) for t, _ in usable])[:-1]
    members = np.split(ids, bounds)
    save = np.array([8 * (1 + len(m) * entry_bytes) for m in members], dtype=np.int64)  # bits
    last = np.array([int(rank[m].max()) for m in members])  # a unit is covered by the first last + 1
    top = min(MAX_SHARED, len(keys))
    gained = np.cumsum(np.bincount(last, weights=save, minlength=len(keys))[:top])
    gain = gained - (8 + bits * np.arange(1, top + 1))
    n = int(np.argmax(gain)) + 1
    covered = last < n
    chosen = set(np.concatenate([m for m, c in zip(members, covered) if c]).tolist()) if covered.any() else set()
    for u in sorted(np.flatnonzero(~covered).tolist(), key=lambda u: (len(members[u]), u)):
        missing = set(members[u].tolist()) - chosen
        if len(chosen) + len(missing) <= MAX_SHARED and save[u] > bits * len(missing):
            chosen |= missing
            covered[u] = True
    if not covered.any() or int(save[covered].sum()) <= 8 + bits * len(chosen):
        return None
    ids_in = np.concatenate([m for m, c in zip(members, covered) if c])
    px_in = np.concatenate([c for (_, c), k in zip(usable, covered) if k]).astype(np.int64)
    weight = np.bincount(ids_in, weights=px_in, minlength=len(keys))
    picked = np.array(sorted(chosen), dtype=np.int64)
    picked = picked[commonest_first(keys[picked], weight[picked])]
    return as_tuples(keys[picked])


def renumbered_counts(counts: tuple[np.ndarray, ...], shared_of: list[int]) -> tuple[np.ndarray, ...] | None:
    """A unit's template_counts with its own entries, from those with the shared entries
    (``shared_of[i]``: the shared index of own entry i), where they follow without coding: when
    the unit's own entry 0 is shared entry 0, renumbering is a bijection that keeps index 0 (the
    value outside the stripe and of row 0's typical test, and phase 0's W == 0 bit), so every
    equality of 2.14's contexts holds alike and only the escaped indices change; else None."""
    if shared_of[0] != 0:
        return None
    p0, q, esc, typical = counts
    own = np.zeros_like(esc)
    own[: len(shared_of)] = esc[shared_of]
    return p0, q, own, typical
