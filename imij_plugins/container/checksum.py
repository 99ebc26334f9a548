"""The file checksum cSUM (1.4): XXH3-64 digests of 2^k-byte pieces of the file without the chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import xxhash

from imij_plugins.container.chunks import CSUM, Chunk, encode_chunk
from imij_plugins.errors import Corrupt
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

ALGO_XXH3_64 = 0
MIN_K, MAX_K = 10, 40


@dataclass(frozen=True)
class PieceTable:
    """A parsed cSUM payload."""

    algo: int
    width: int
    k: int
    covered_len: int
    digests: bytes

    def digest(self, i: int) -> int:
        return int.from_bytes(self.digests[i * self.width : (i + 1) * self.width], "little")


def read_piece_table(payload: memoryview, file_len: int, chunk_size: int) -> PieceTable:
    """Parse and check a cSUM payload (1.4 Validation) against the file it sits in."""
    cur = Cursor(payload, what="cSUM")
    algo, width, k = cur.u8("algo"), cur.u8("width"), cur.u8("piece_log2")
    if algo != ALGO_XXH3_64:
        # 1.4 Validation: "Another algo byte: the chunk is skipped (not checked); the record and
        # placement rules still apply" -- so no width/k/covered_len/digest checks, only k vs record 2
        return PieceTable(algo, width, k, 0, b"")
    covered = cur.varint("covered_len")
    if width not in (4, 8):
        raise Corrupt(f"cSUM width {width}")
    if not MIN_K <= k <= MAX_K:
        raise Corrupt(f"cSUM piece_log2 {k} outside 10 ..= 40")
    if covered == 0 or covered != file_len - chunk_size:
        raise Corrupt("cSUM covered_len is not the file length without the chunk")
    pieces = (covered + (1 << k) - 1) >> k
    if cur.remaining() != pieces * width:
        raise Corrupt("cSUM digest count")
    return PieceTable(algo, width, k, covered, bytes(cur.take(pieces * width)))


def piece_digest(buf: bytes | bytearray | memoryview, chunk: Chunk, index: int, k: int, width: int) -> int:
    """XXH3-64 (seed 0) of covered piece ``index``: the file with the cSUM chunk cut out (1.4)."""
    view = memoryview(buf)
    lo, hi = index << k, (index + 1) << k
    h = xxhash.xxh3_64()
    # covered offsets below chunk.start are file offsets; the rest shift by the chunk's size
    if lo < chunk.start:
        h.update(view[lo : min(hi, chunk.start)])
    if hi > chunk.start:
        h.update(view[max(lo, chunk.start) + chunk.size : min(hi, len(buf) - chunk.size) + chunk.size])
    value = h.intdigest()
    return value if width == 8 else value & 0xFFFFFFFF


def verify_pieces(buf: bytes | bytearray | memoryview, chunk: Chunk, table: PieceTable, upto: int | None = None) -> None:
    """Check every piece (or those under covered offsets below ``upto``); a mismatch is Corrupt."""
    if table.algo != ALGO_XXH3_64:
        return  # 1.4: another algo byte, the chunk is skipped
    count = (table.covered_len + (1 << table.k) - 1) >> table.k
    if upto is not None:
        count = min(count, (upto + (1 << table.k) - 1) >> table.k)
    for i in range(count):
        if piece_digest(buf, chunk, i, table.k, table.width) != table.digest(i):
            raise Corrupt("file checksum mismatch")


def mismatched_ranges(buf: bytes | bytearray | memoryview, chunk: Chunk, table: PieceTable) -> list[tuple[int, int]]:
    """The file offset ranges ``[start, end)`` of every piece that does not match (partial reads, 1.4)."""
    if table.algo != ALGO_XXH3_64:
        return []
    count = (table.covered_len + (1 << table.k) - 1) >> table.k
    out: list[tuple[int, int]] = []
    for i in range(count):
        if piece_digest(buf, chunk, i, table.k, table.width) != table.digest(i):
            lo, hi = i << table.k, min((i + 1) << table.k, table.covered_len)
            # covered offsets at or after the chunk's start sit chunk.size further on in the file
            if lo < chunk.start:
                out.append((lo, min(hi, chunk.start)))
            if hi > chunk.start:
                out.append((max(lo, chunk.start) + chunk.size, hi + chunk.size))
    return out


def choose_piece_log2(file_len: int) -> int:
    """1.4 Choosing k: one piece up to 64 KiB, at most 16 pieces up to 16 MiB, else 1 MiB pieces."""
    if file_len <= 1 << 16:
        return max(MIN_K, (max(file_len, 1) - 1).bit_length())
    if file_len <= 1 << 24:
        return max(16, ((file_len + 15) // 16 - 1).bit_length())
    return 20


class PieceHasher:
    """XXH3-64 digests of 2^k-byte pieces of covered bytes fed in any slices (1.4 Coverage): only
    the current piece's hash state and the digests are held."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.covered = 0
        self._digests = bytearray()
        self._piece = xxhash.xxh3_64()
        self._filled = 0  # bytes in the current piece

    def update(self, data: bytes | bytearray | memoryview) -> None:
        """Feed the next covered bytes, closing each full piece."""
        view, size = memoryview(data).cast("B"), 1 << self.k
        self.covered += len(view)
        while len(view):
            take = min(len(view), size - self._filled)
            self._piece.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == size:
                self._close_piece()

    def table(self) -> bytes:
        """The cSUM chunk (tag, length, payload) of every byte fed so far (1.4)."""
        self._close_piece()
        return encode_chunk(CSUM, bytes([ALGO_XXH3_64, 8, self.k]) + encode_varint(self.covered) + bytes(self._digests))

    def _close_piece(self) -> None:
        if self._filled:  # the last piece is short (1.4); an empty one is not a piece
            self._digests += self._piece.intdigest().to_bytes(8, "little")
            self._piece.reset()
            self._filled = 0


def make_piece_table(covered: Sequence[bytes | bytearray | memoryview], k: int) -> bytes:
    """The cSUM chunk for a file whose covered bytes are the parts ``covered`` end to end (hashed
    in place: the file is never joined for it)."""
    hasher = PieceHasher(k)
    for part in covered:
        hasher.update(part)
    return hasher.table()
