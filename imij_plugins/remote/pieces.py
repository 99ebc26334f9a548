"""cSUM pieces (1.4) for ranged reads: which file bytes a piece covers and checking them as they arrive."""

from __future__ import annotations

from dataclasses import dataclass, field

from imij_plugins.container.checksum import ALGO_XXH3_64, PieceTable, piece_digest
from imij_plugins.container.chunks import Chunk
from imij_plugins.errors import Corrupt


@dataclass
class Pieces:
    """The piece table of a file and the pieces already checked.

    Covered offsets are file offsets with the cSUM chunk cut out (1.4 Coverage), so a piece
    that spans the chunk is two file ranges.
    """

    chunk: Chunk
    table: PieceTable
    checked: set[int] = field(default_factory=set)

    @property
    def count(self) -> int:
        return (self.table.covered_len + (1 << self.table.k) - 1) >> self.table.k

    def under(self, start: int, end: int) -> range:
        """The pieces under file bytes ``[start, end)`` (the cSUM chunk's own bytes are in none)."""
        lo, hi = self._covered(start), self._covered(end)
        if hi <= lo:
            return range(0)
        return range(lo >> self.table.k, min(self.count, ((hi - 1) >> self.table.k) + 1))

    def file_ranges(self, index: int) -> list[tuple[int, int]]:
        """Piece ``index``'s bytes as file ranges (two when it spans the cSUM chunk)."""
        k, chunk = self.table.k, self.chunk
        lo, hi = index << k, min((index + 1) << k, self.table.covered_len)
        out = []
        if lo < chunk.start:
            out.append((lo, min(hi, chunk.start)))
        if hi > chunk.start:
            out.append((max(lo, chunk.start) + chunk.size, hi + chunk.size))
        return out

    def check(self, buf: bytes | bytearray | memoryview, indices: range | list[int]) -> None:
        """Check pieces ``indices`` (their bytes all present in ``buf``); a mismatch is Corrupt."""
        if self.table.algo != ALGO_XXH3_64:
            return  # 1.4: another algo byte, the chunk is skipped
        for i in indices:
            if i in self.checked:
                continue
            if piece_digest(buf, self.chunk, i, self.table.k, self.table.width) != self.table.digest(i):
                raise Corrupt("file checksum mismatch")
            self.checked.add(i)

    def _covered(self, offset: int) -> int:
        """A file offset as a covered offset (one inside the chunk: the chunk's place)."""
        chunk = self.chunk
        if offset <= chunk.start:
            return offset
        if offset >= chunk.end:
            return offset - chunk.size
        return chunk.start
