"""A whole IMI file's container (section 1): signature, header, admission, chunks, cSUM, aNIM."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from imij_plugins.container.admission import admit
from imij_plugins.container.animation import Animation, read_animation
from imij_plugins.container.checksum import PieceTable, mismatched_ranges, read_piece_table, verify_pieces
from imij_plugins.container.chunks import ANIM, CSUM, DATA, FRAM, UIDX, Chunk, MeasureOpen, iter_chunks
from imij_plugins.container.header import Header, checksum_piece_log2, read_header
from imij_plugins.errors import Corrupt, ImijError
from imij_plugins.signature import SIGNATURE, is_imi
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import read_varint

INDEX_FOOTER = 20  # 2.7: data_len u64, chunk_len u64, tag


@dataclass
class Container:
    """The parsed container of one IMI file held in ``buf``.

    A partial read (``read_container(..., partial=True)``) fills ``damage`` with what broke the
    rules after the header, ``bad_ranges`` with the file ranges of mismatching cSUM pieces, and
    sets ``checksum_failed`` when cSUM could not vouch for the file.
    """

    buf: bytes | bytearray | memoryview
    header: Header
    header_end: int
    chunks: list[Chunk]
    animation: Animation | None
    piece_table: PieceTable | None
    damage: list[ImijError] = field(default_factory=list)
    bad_ranges: list[tuple[int, int]] = field(default_factory=list)
    checksum_failed: bool = False

    @property
    def data(self) -> Chunk | None:
        """The DATA chunk; None only in a partial read of a file cut before it."""
        for chunk in self.chunks:
            if chunk.tag == DATA:
                return chunk
        return None

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


def read_container(
    buf: bytes | bytearray | memoryview,
    *,
    verify: bool = True,
    measure_open: Callable[[Header], MeasureOpen] | None = None,
    partial: bool = False,
) -> Container:
    """Parse and check a complete file; Unsupported features fail right after the header (0.1).

    With ``partial``, only the signature and header must be whole: a chunk walk that breaks the
    rules stops there, a cut DATA or fRAM is kept as far as it goes, and a checksum that fails
    is recorded in the container, not raised (Corrupt damage only; Unsupported still raises).
    """
    if not is_imi(buf):
        raise Corrupt("not an IMI file (bad signature)")
    header_len, pos = read_varint(buf, len(SIGNATURE), len(buf), "header_len")
    if header_len > len(buf) - pos:
        raise Corrupt("header runs past the end of the file")
    header_end = pos + header_len
    header = read_header(Cursor(buf, pos, header_end, "header"))
    k = checksum_piece_log2(header) if verify and header.records else None  # 1.4: checked with the header
    admit(header.features)
    chunks: list[Chunk] = []
    table: PieceTable | None = None
    csum: Chunk | None = None
    damage: list[ImijError] = []
    measure = measure_open(header) if measure_open else None
    try:
        for chunk in iter_chunks(buf, header_end, len(buf), measure, partial):
            chunks.append(chunk)
            if chunk.cut:
                damage.append(Corrupt(f"chunk {chunk.tag.decode()} overruns the file"))
            if chunk.tag == CSUM and verify:
                csum = chunk
                table = _read_table(buf, chunk, damage if partial else None)
    except ImijError as exc:
        if not (partial and isinstance(exc, Corrupt)):
            # 1.4: a table before the failing bytes explains the error when a piece under them mismatches
            if csum is not None and table is not None:
                verify_pieces(buf, csum, table)
            raise
        damage.append(exc)
    container = Container(buf, header, header_end, chunks, None, table, damage)
    if verify and (k is not None or csum is not None):  # 1.4: neither record 2 nor cSUM: nothing to check
        _check_checksums(container, k, csum, partial)
    container.animation = _read_animation(buf, chunks, header, damage if partial else None)
    return container


def _read_table(buf: bytes | bytearray | memoryview, chunk: Chunk, damage: list[ImijError] | None) -> PieceTable | None:
    """The cSUM table; in a partial read (``damage`` given) one that does not parse is damage."""
    try:
        return read_piece_table(memoryview(buf)[chunk.payload_start : chunk.end], len(buf), chunk.size)
    except Corrupt as exc:
        if damage is None:
            raise
        damage.append(exc)
        return None


def _check_checksums(container: Container, k: int | None, csum: Chunk | None, partial: bool) -> None:
    """1.4: the header record, the table and every piece; a partial read records what fails."""
    table, buf = container.piece_table, container.buf
    if not partial:
        check_checksum_record(k, table)
        if table is not None and csum is not None:
            verify_pieces(buf, csum, table)
        return
    try:
        check_checksum_record(k, table)
    except Corrupt as exc:
        container.damage.append(exc)
        container.piece_table = None
        container.checksum_failed = True
        return
    if csum is not None and table is None:  # a table that did not parse
        container.checksum_failed = True
    if table is not None and csum is not None:
        container.bad_ranges = mismatched_ranges(buf, csum, table)
        if container.bad_ranges:
            container.damage.append(Corrupt("file checksum mismatch"))
            container.checksum_failed = True


def check_checksum_record(k: int | None, table: PieceTable | None) -> None:
    """1.4: header record 2 and the table come together, with the same k."""
    if k is not None and table is None:
        raise Corrupt("header announces a file checksum but the file has no cSUM chunk")
    if table is not None and k is None:
        raise Corrupt("cSUM chunk without header record 2")
    if table is not None and table.k != k:
        raise Corrupt("cSUM piece size differs from header record 2")


def _read_animation(
    buf: bytes | bytearray | memoryview, chunks: list[Chunk], header: Header, damage: list[ImijError] | None
) -> Animation | None:
    """aNIM, checked against the fRAM chunks that follow DATA (1.3); a partial read (``damage``
    given) records a count that does not match instead of raising."""
    tags = [c.tag for c in chunks]
    if ANIM not in tags and FRAM not in tags:  # a still image: the common case, one pass
        return None
    anim_chunks = [c for c in chunks if c.tag == ANIM]
    frames = tags.count(FRAM)
    if not anim_chunks:
        if frames:
            raise Corrupt("fRAM chunks without aNIM")
        return None
    chunk = anim_chunks[0]
    anim = read_animation(memoryview(buf)[chunk.payload_start : chunk.end], header.features)
    if anim.frame_count != frames + 1:
        error = Corrupt(f"aNIM frame_count {anim.frame_count} but {frames} fRAM chunks")
        if damage is None:
            raise error
        damage.append(error)
    return anim
