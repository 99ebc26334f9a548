"""The merged key index: every live key of many segments and the segment holding its newest entry.

Appending and scale: "Lookup cost grows with segment count". When batches' keys interleave, the
segments' key ranges overlap and a point lookup would descend into many of them; this in-memory
reading aid, built from index pages that passed their checks, sends it to one. It resolves
replacements the way listing does ("Newer entries replace older entries with the same numeric
key"): for a key held by several segments it keeps the newest. The file is never changed.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# bytes held per indexed key: a u64 key and a u16 or u32 segment ordinal
KEY_BYTES = 8


@dataclass(frozen=True)
class KeyIndexStats:
    """What an archive's key index holds and cost: ``build_seconds`` is its latest build or extension."""

    entries: int
    segments: int
    nbytes: int
    build_seconds: float


class KeyIndex:
    """Sorted live keys of the oldest ``segments`` segments, each with the ordinal of its newest segment.

    Immutable once built: threads share it without locks, and ``merge`` extends it into a new one.
    """

    __slots__ = ("keys", "owners", "segments", "build_seconds")

    def __init__(self, keys: np.ndarray, owners: np.ndarray, segments: int, build_seconds: float):
        # array('Q') rather than numpy: bisect on it compares Python ints at C speed
        self.keys = array("Q", keys.astype(np.uint64, copy=False).tobytes())
        self.owners = array("H" if owners.dtype == np.uint16 else "I", owners.tobytes())
        self.segments = segments
        self.build_seconds = build_seconds

    def owner(self, key: int) -> int | None:
        """The ordinal of the newest indexed segment holding ``key``, or None."""
        keys = self.keys
        j = bisect_left(keys, key)
        if j < len(keys) and keys[j] == key:
            return self.owners[j]
        return None

    @property
    def nbytes(self) -> int:
        return len(self.keys) * self.keys.itemsize + len(self.owners) * self.owners.itemsize

    def stats(self) -> KeyIndexStats:
        return KeyIndexStats(len(self.keys), self.segments, self.nbytes, self.build_seconds)


def owner_dtype(segments: int) -> type:
    return np.uint16 if segments <= 0xFFFF else np.uint32


def bytes_per_key(segments: int) -> int:
    """Memory one indexed key takes in an index over ``segments`` segments."""
    return KEY_BYTES + np.dtype(owner_dtype(segments)).itemsize


def merge(key_arrays: Sequence[np.ndarray], base: KeyIndex | None, started: float) -> KeyIndex:
    """``base`` (or nothing) extended by the next segments, one sorted key array each, newest last.

    A stable sort keeps equal keys in segment order, so the last of each run is the newest; the
    inputs are sorted runs, which the stable sort (timsort) joins in O(n log runs). ``started``
    is when the caller began reading the key arrays: the build cost includes that.
    """
    first = base.segments if base is not None else 0
    end = first + len(key_arrays)
    dtype = owner_dtype(end)
    keys_parts: list[np.ndarray] = []
    owner_parts: list[np.ndarray] = []
    if base is not None:
        keys_parts.append(np.frombuffer(base.keys, dtype=np.uint64))
        owner_parts.append(np.frombuffer(base.owners, dtype=np.uint16 if base.owners.typecode == "H" else np.uint32).astype(dtype))
    for ordinal, ks in enumerate(key_arrays, first):
        keys_parts.append(ks)
        owner_parts.append(np.full(len(ks), ordinal, dtype=dtype))
    keys = np.concatenate(keys_parts) if keys_parts else np.empty(0, np.uint64)
    owners = np.concatenate(owner_parts) if owner_parts else np.empty(0, dtype)
    order = np.argsort(keys, kind="stable")
    keys, owners = keys[order], owners[order]
    newest = np.ones(len(keys), dtype=bool)
    newest[:-1] = keys[1:] != keys[:-1]
    return KeyIndex(keys[newest], owners[newest], end, time.perf_counter() - started)
