"""A remote IMI file read by ranges: its container at open, then the units each read overlaps."""

from __future__ import annotations

from collections.abc import Sequence

from imij_plugins.container.checksum import read_piece_table
from imij_plugins.container.chunks import CSUM, DATA, Chunk, MeasureOpen, read_chunk
from imij_plugins.container.file import INDEX_FOOTER, Container, check_checksum_record, read_container
from imij_plugins.container.header import Header, checksum_piece_log2, read_header
from imij_plugins.errors import Corrupt, ImijError, Unsupported
from imij_plugins.payload.data import DataPayload, unit_decoder
from imij_plugins.payload.head import LosslessHead, read_lossless_head
from imij_plugins.payload.units import KNOWN_MAIN, RESERVE_CHECK_TAIL, UNIT_STRIPE, Unit, head_spans, trailing_spans
from imij_plugins.remote.fetch import FetchStats, RangeFetcher
from imij_plugins.remote.pieces import Pieces
from imij_plugins.remote.source import RangeSource
from imij_plugins.signature import SIGNATURE, is_imi
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import read_varint

FIRST_REQUEST = 64 << 10  # the signature, header, chunks before DATA and DATA's head, usually
TRAILER_WHOLE = 1 << 20  # the chunks after DATA are fetched in one range up to this size
FRAMING = 14  # a chunk's tag and the longest length varint


class RemoteFile:
    """The bytes of a remote file as a ``RangeSource``, fetched in this order: at open the header
    and every chunk but DATA's unit records (metadata, frames, the cSUM table), then per read the
    records of the units it overlaps, found through the unit table (2.7).

    A file the table cannot index (no table, an open DATA, a broken container, a partial read)
    is fetched whole and read as a local one.
    """

    def __init__(self, fetcher: RangeFetcher) -> None:
        self.source = RangeSource(fetcher)
        self.buf = self.source.buf

    @property
    def stats(self) -> FetchStats:
        """Requests and bytes so far (the size request included)."""
        return self.source.fetcher.stats

    def container(self, *, verify: bool, measure_open: MeasureOpen | None, partial: bool) -> Container:
        """The container, read as locally once its bytes are here; cSUM (``verify``) is checked by
        pieces: those under the bytes fetched so far now, every later one as it arrives."""
        if partial or not self._fetch_skeleton():
            self.source.ensure_all()
        if self.source.complete:
            return read_container(self.buf, verify=verify, measure_open=measure_open, partial=partial)
        container = read_container(self.buf, verify=False, measure_open=measure_open)
        if verify:
            self._arm_checksum(container)
        return container

    def _fetch_skeleton(self) -> bool:
        """Fetch the header and every chunk but DATA's records; False when the file must be read
        whole (an open chunk, or framing that breaks the rules: the local walk says why)."""
        src, size = self.source, self.source.size
        src.ensure([(0, FIRST_REQUEST)])
        try:
            if not is_imi(self.buf):
                return False
            header_len, pos = read_varint(self.buf, len(SIGNATURE), src.held_end(0), "header_len")
            if header_len > size - pos:
                return False
            src.ensure([(pos, pos + header_len)])
            header = read_header(Cursor(self.buf, pos, pos + header_len, "header"))
            pos += header_len
            while pos < size:
                src.ensure([(pos, pos + FRAMING)], at_least=FIRST_REQUEST)
                if read_varint(self.buf, pos + 4, size)[0] == 0:
                    return False  # an open chunk ends where its payload's rules say: read it all
                chunk = read_chunk(self.buf, pos, size, None)
                if chunk.tag == DATA:
                    self._fetch_head(header, chunk)
                    if size - chunk.end <= TRAILER_WHOLE:
                        src.ensure([(chunk.end, size)])
                else:
                    src.ensure([(chunk.start, chunk.end)], at_least=FIRST_REQUEST)
                pos = chunk.end
        except ImijError:
            return False
        return True

    def _fetch_head(self, header: Header, data: Chunk) -> None:
        """DATA's head (and so its unit table), fetched in growing steps until it parses."""
        if header.coding != 0:
            return  # lossy: not read here (Unsupported)
        start = data.payload_start
        while True:
            held = min(data.end, self.source.held_end(start))
            try:
                read_lossless_head(Cursor(self.buf, start, held, "DATA head"), header)
                return
            except Corrupt:  # a field running past the bytes held so far, or a real break
                if held >= data.end:
                    raise
                self.source.ensure([(held, min(data.end, held + max(FIRST_REQUEST, held - start)))])

    def _arm_checksum(self, container: Container) -> None:
        """1.4: header record 2 and the table agree; then every piece is checked as it arrives."""
        k = checksum_piece_log2(container.header)
        found = container.find(CSUM)
        table = read_piece_table(container.payload(found[0]), len(self.buf), found[0].size) if found else None
        check_checksum_record(k, table)
        if table is not None:
            container.piece_table = table
            self.source.arm_pieces(Pieces(found[0], table))

    @property
    def verified(self) -> bool:
        """Every cSUM piece was fetched and matched (or the file was read whole and verified)."""
        pieces = self.source.pieces
        return pieces is None or len(pieces.checked) == pieces.count

    def payload(self, header: Header, data: Chunk, trailing_index: memoryview | None) -> DataPayload | None:
        """DATA's payload with units placed by the unit table, their records fetched and checked
        by ``fetch_units``; None when it is read as locally (DATA fetched whole, or lossy)."""
        if self.source.complete or header.coding != 0:
            return None
        start, end = data.payload_start, data.end
        head = read_lossless_head(Cursor(self.buf, start, end, "DATA head"), header)
        spans = _table(head, trailing_index, end - start)
        if spans is None:  # 2.7: no table to find the records by: walk them
            self.source.ensure([(start, end)])
            return None
        total = sum(spans)
        if total != end - head.end:
            raise Corrupt("unit table exceeds DATA" if total > end - head.end else "unit table does not match the records")
        units, pos = [], head.end
        for span in spans:
            units.append(Unit(pos, -1, pos + span))  # body_start -1: record not fetched yet
            pos += span
        return DataPayload(self.buf, header, head, units, end, unit_decoder(header, head))

    def fetch_units(self, payload: DataPayload, indices: Sequence[int] | None) -> None:
        """Fetch the records of units ``indices`` (all: None) in one batch and check each against
        its span (2.7); checking them all is the walk, so a full read checks the whole table."""
        units = payload.units
        need = [i for i in (range(len(units)) if indices is None else indices) if units[i].body_start < 0]
        if not need:
            return
        self.source.ensure([(units[i].span_start, units[i].end) for i in need])
        for i in need:
            units[i] = _unit_record(self.buf, payload.head, i, units[i])


def _table(head: LosslessHead, trailing_index: memoryview | None, data_len: int) -> list[int] | None:
    """The spans of the unit table in use (2.7 Where readers find the spans), or None."""
    spans, state = head_spans(head)
    if spans is not None or state != RESERVE_CHECK_TAIL or trailing_index is None:
        return spans
    if int.from_bytes(trailing_index[-INDEX_FOOTER:-12], "little") != data_len:
        raise Corrupt("unit index for another DATA")
    return trailing_spans(trailing_index[:-INDEX_FOOTER], head.geometry.unit_count)


def _unit_record(buf: bytes | bytearray | memoryview, head: LosslessHead, index: int, span: Unit) -> Unit:
    """Unit ``index``'s record, which must fill its table span exactly (2.7: side record, main
    record, ordinal)."""
    cur = Cursor(buf, span.span_start, span.end, f"unit record {index}")
    try:  # a span that does not frame one record is the table's fault, whatever its bytes say
        rid = cur.varint("unit record id")
        if rid == UNIT_STRIPE - 1:  # at most one side record, skipped
            cur.take(cur.varint("side record length"), "side record")
            rid = cur.varint("unit record id")
        body = cur.sub(cur.varint("unit record length"), f"unit record {index}")
    except Corrupt:
        body = None
    if body is None or body.end != span.end:
        raise Corrupt("unit table does not match the records")
    if rid != UNIT_STRIPE:
        if rid & 1 and rid not in KNOWN_MAIN:
            raise Unsupported(f"unknown unit record {rid}")
        raise Corrupt(f"unit record {rid} where record {UNIT_STRIPE} is expected")
    if head.ordinals:
        ordinal = body.varint("unit record ordinal")
        if ordinal != index:
            raise Corrupt(f"unit record ordinal {ordinal} on record {index}")
    return Unit(span.span_start, body.pos, body.end)
