"""A whole IMI file's container (section 1): signature, header, admission, chunks, cSUM, aNIM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from imij_plugins.container.admission import admit
from imij_plugins.container.animation import Animation, read_animation
from imij_plugins.container.checksum import PieceTable, read_piece_table, verify_pieces
from imij_plugins.container.chunks import ANIM, CSUM, DATA, FRAM, UIDX, Chunk, MeasureOpen, iter_chunks
from imij_plugins.container.header import Header, checksum_piece_log2, read_header
from imij_plugins.errors import Corrupt, ImijError
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import read_varint

SIGNATURE = b"IMIJ\r\n\x87\n"  # 1: "IMIJ\r\n\x87\n"
INDEX_FOOTER = 20  # 2.7: data_len u64, chunk_len u64, tag


@dataclass
class Container:
    """The parsed container of one complete IMI file held in ``buf``."""

    buf: bytes | bytearray | memoryview
    header: Header
    header_end: int
    chunks: list[Chunk]
    animation: Animation | None
    piece_table: PieceTable | None

    @property
    def data(self) -> Chunk:
        return next(c for c in self.chunks if c.tag == DATA)

    def find(self, tag: bytes) -> list[Chunk]:
        return [c for c in self.chunks if c.tag == tag]

    def payload(self, chunk: Chunk) -> memoryview:
        return memoryview(self.buf)[chunk.payload_start : chunk.end]

    def trailing_index(self) -> memoryview | None:
        """A *found* uIDX payload (2.7): the last chunk, >= 20 bytes, its chunk_len and tag checking out."""
        last = self.chunks[-1]
        if last.tag != UIDX:
            return None
        payload = self.payload(last)
        if len(payload) < INDEX_FOOTER or bytes(payload[-4:]) != UIDX:
            return None
        if int.from_bytes(payload[-12:-4], "little") != last.size:
            return None
        return payload


def is_imi(prefix: bytes) -> bool:
    """Whether ``prefix`` starts with the 8-byte IMI signature."""
    return bytes(prefix[:8]) == SIGNATURE


def read_container(
    buf: bytes | bytearray | memoryview,
    *,
    verify: bool = True,
    measure_open: Callable[[Header], MeasureOpen] | None = None,
) -> Container:
    """Parse and check a complete file; Unsupported features fail right after the header (0.1)."""
    if not is_imi(buf):
        raise Corrupt("not an IMI file (bad signature)")
    header_len, pos = read_varint(buf, len(SIGNATURE), len(buf), "header_len")
    if header_len > len(buf) - pos:
        raise Corrupt("header runs past the end of the file")
    header_end = pos + header_len
    header = read_header(Cursor(buf, pos, header_end, "header"))
    k = checksum_piece_log2(header) if verify else None  # 1.4: checked with the header
    admit(header.features)
    chunks: list[Chunk] = []
    table: PieceTable | None = None
    csum: Chunk | None = None
    try:
        for chunk in iter_chunks(buf, header_end, len(buf), measure_open(header) if measure_open else None):
            chunks.append(chunk)
            if chunk.tag == CSUM and verify:
                csum = chunk
                table = read_piece_table(memoryview(buf)[chunk.payload_start : chunk.end], len(buf), chunk.size)
    except ImijError:
        # 1.4: a table before the failing bytes explains the error when a piece under them mismatches
        if csum is not None and table is not None:
            verify_pieces(buf, csum, table)
        raise
    if verify:
        _check_checksum_record(k, table)
        if table is not None and csum is not None:
            verify_pieces(buf, csum, table)
    animation = _read_animation(buf, chunks, header)
    return Container(buf, header, header_end, chunks, animation, table)


def _check_checksum_record(k: int | None, table: PieceTable | None) -> None:
    """1.4: header record 2 and the table come together, with the same k."""
    if k is not None and table is None:
        raise Corrupt("header announces a file checksum but the file has no cSUM chunk")
    if table is not None and k is None:
        raise Corrupt("cSUM chunk without header record 2")
    if table is not None and table.k != k:
        raise Corrupt("cSUM piece size differs from header record 2")


def _read_animation(buf: bytes | bytearray | memoryview, chunks: list[Chunk], header: Header) -> Animation | None:
    """aNIM, checked against the fRAM chunks that follow DATA (1.3)."""
    anim_chunks = [c for c in chunks if c.tag == ANIM]
    frames = sum(1 for c in chunks if c.tag == FRAM)
    if not anim_chunks:
        if frames:
            raise Corrupt("fRAM chunks without aNIM")
        return None
    chunk = anim_chunks[0]
    anim = read_animation(memoryview(buf)[chunk.payload_start : chunk.end], header.features)
    if anim.frame_count != frames + 1:
        raise Corrupt(f"aNIM frame_count {anim.frame_count} but {frames} fRAM chunks")
    return anim
