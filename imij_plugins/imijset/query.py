"""Queries by declared dimensions, exact CICP (or its absence) and exact filename.

Appending and scale: "Dimension queries walk kind 4/5/6 bounds and scan legacy kind 1 branches.
Exact CICP queries walk kind 5/6 bounds ... Exact filename queries walk kind 6 prefix bounds ...;
every candidate checks its full UTF-8 filename." Bounds filter cached declarations only.
"""

from __future__ import annotations

from imij_plugins.imijset.branches import Bounds, Range
from imij_plugins.imijset.entries import CICP, Entry, cicp_key, filename_key
from imij_plugins.imijset.leaves import Leaf
from imij_plugins.imijset.reader import Snapshot


class _Any:
    """The default of every query field: no condition."""

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()
DimensionFilter = int | tuple[int, int] | _Any


class Query:
    """The conditions of one query as ranges over the four declared bounds, plus the full filename."""

    def __init__(
        self,
        width: DimensionFilter = ANY,
        height: DimensionFilter = ANY,
        cicp: CICP | None | _Any = ANY,
        filename: str | None | _Any = ANY,
    ):
        self.ranges: list[Range | None] = [_dimension(width, "width"), _dimension(height, "height"), None, None]
        self.cicp = cicp
        self.filename = filename
        if cicp is not ANY:
            if cicp is not None and (len(cicp) != 4 or not all(0 <= v <= 255 for v in cicp)):  # type: ignore[arg-type]
                raise ValueError(f"cicp must be four bytes or None (absent), not {cicp!r}")
            key = cicp_key(tuple(cicp) if cicp is not None else None)  # type: ignore[arg-type]
            self.ranges[2] = (key, key)  # "A query for absent CICP uses key zero."
        if filename is not ANY:
            if filename is not None and not isinstance(filename, str):
                raise TypeError(f"filename must be str or None (absent), not {type(filename).__name__}")
            key = filename_key(filename)  # type: ignore[arg-type]
            self.ranges[3] = (key, key)

    def disjoint(self, bounds: Bounds) -> bool:
        """Whether a child's declared bounds rule it out (undeclared bounds never do)."""
        for want, have in zip(self.ranges, bounds):
            if want is not None and have is not None and (want[1] < have[0] or want[0] > have[1]):
                return True
        return False

    def matches(self, leaf: Leaf, i: int) -> bool:
        """Whether entry ``i`` of a fully checked leaf meets every condition."""
        summary = leaf.summaries[i]  # type: ignore[index]
        for want, value in zip(self.ranges, summary[:2]):
            if want is not None and not want[0] <= value <= want[1]:
                return False
        if self.cicp is not ANY and leaf.cicps[i] != (tuple(self.cicp) if self.cicp is not None else None):  # type: ignore[arg-type]
            return False
        if self.filename is not ANY and leaf.metas[i].filename != self.filename:
            return False
        return True


def _dimension(value: DimensionFilter, name: str) -> Range | None:
    if value is ANY:
        return None
    if isinstance(value, int):
        return (value, value)
    low, high = value  # type: ignore[misc]
    if not isinstance(low, int) or not isinstance(high, int):
        raise TypeError(f"{name} must be an int or an inclusive (low, high) pair")
    return (low, high)


def run(snapshot: Snapshot, query: Query) -> list[Entry]:
    """Matching entries: "newest-segment first and ascending by key within each segment".

    "For older candidate entries, point lookup checks the latest generation before returning them;
    a newer nonmatching replacement hides an old match."
    """
    out: list[Entry] = []
    segments = snapshot.segments
    for seg in reversed(segments):
        newest = seg is segments[-1]
        for leaf, i in seg.walk(query):
            key = int(leaf.keys[i])
            if not newest:
                latest = snapshot.locate(key)
                if latest is None or latest[0] is not seg:
                    continue
            out.append(leaf.entry(i, seg.generation))
    return out
