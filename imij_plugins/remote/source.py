"""A sparse copy of a remote file: the byte ranges a read needs, fetched once, merged and in parallel."""

from __future__ import annotations

import mmap
import threading
from collections.abc import Iterable

from imij_plugins.remote.fetch import RangeFetcher
from imij_plugins.remote.pieces import Pieces

MERGE_GAP = 64 << 10  # wanted ranges this close are fetched as one (a request costs more than 64 KiB)
PART = 4 << 20  # longer ranges are split into parts fetched concurrently


class RangeSource:
    """The file's bytes at their offsets in an anonymous map of the file's size; only fetched
    ranges hold data, and callers ``ensure`` every byte before they read it.

    With ``pieces`` set (cSUM, 1.4) every fetch is rounded out to whole pieces and each piece is
    checked before ``ensure`` returns, so no byte is used before its piece matched.
    """

    def __init__(self, fetcher: RangeFetcher) -> None:
        self.fetcher = fetcher
        self.size = fetcher.size
        self.buf: mmap.mmap | bytearray = mmap.mmap(-1, self.size) if self.size else bytearray()
        self.pieces: Pieces | None = None
        self._have: list[tuple[int, int]] = []  # sorted, disjoint, not touching
        self._lock = threading.RLock()

    @property
    def complete(self) -> bool:
        return self.missing(0, self.size) == []

    def missing(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` not fetched yet."""
        out, pos = [], start
        for a, b in self._have:
            if b <= pos:
                continue
            if a >= end:
                break
            if a > pos:
                out.append((pos, a))
            pos = max(pos, b)
        if pos < end:
            out.append((pos, end))
        return out

    def held_end(self, pos: int) -> int:
        """Where the fetched bytes that run on from ``pos`` end (``pos`` when it is not fetched)."""
        for a, b in self._have:
            if a <= pos < b:
                return b
        return pos

    def ensure(self, ranges: Iterable[tuple[int, int]], *, at_least: int = 0) -> None:
        """Fetch what ``ranges`` lack: close ranges merged, long ones split, all in one batch; each
        missing part at least ``at_least`` bytes long (read-ahead while walking chunk framing)."""
        with self._lock:
            wanted = sorted((max(0, a), min(self.size, b)) for a, b in ranges if min(self.size, b) > max(0, a))
            if self.pieces is not None:  # whole pieces (bytes of the cSUM chunk itself are in none)
                wanted = sorted([*wanted, *(r for a, b in wanted for i in self.pieces.under(a, b) for r in self.pieces.file_ranges(i))])
            gaps = sorted((lo, min(self.size, max(hi, lo + at_least)))
                          for a, b in _merge(wanted, MERGE_GAP) for lo, hi in self.missing(a, b))
            gaps = [r for a, b in _merge(gaps, 0) for r in self.missing(a, b)]  # read-ahead may reach held bytes
            todo = [(p, min(hi, p + PART)) for lo, hi in gaps for p in range(lo, hi, PART)]
            for (a, b), data in zip(todo, self.fetcher.fetch(todo)):
                self.buf[a:b] = data
                self._add(a, b)
            if self.pieces is not None:
                self.pieces.check(self.buf, sorted({i for a, b in wanted for i in self.pieces.under(a, b)}))

    def ensure_all(self) -> None:
        self.ensure([(0, self.size)])

    def arm_pieces(self, pieces: Pieces) -> None:
        """Check pieces from now on, starting with those under every byte already fetched."""
        with self._lock:
            self.pieces = pieces
            self.ensure(list(self._have))

    def _add(self, start: int, end: int) -> None:
        self._have = _merge(sorted([*self._have, (start, end)]), 0)


def _merge(ranges: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """Sorted ranges joined where they overlap, touch or lie at most ``gap`` apart."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
