"""Assembling a complete file (1, 1.0 locator, 1.4 cSUM), buffered or streamed, and writing it
without a half-written state."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import BinaryIO

from imij_plugins._platform import fsync_file
from imij_plugins._platform import replace as replace_file
from imij_plugins.container.checksum import PieceHasher, choose_piece_log2, make_piece_table
from imij_plugins.container.chunks import DATA, UIDX, chunk_start, encode_chunk
from imij_plugins.container.file import SIGNATURE
from imij_plugins.container.header import RECORD_CHECKSUM, RECORD_LOCATOR, Header, encode_header
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint


def assemble(
    header: Header,
    data_payload: bytes,
    data_head_len: int,
    *,
    before: Sequence[tuple[bytes, bytes]] = (),
    after: Sequence[tuple[bytes, bytes]] = (),
    locator: bool = False,
    checksum: bool = False,
) -> bytes:
    """The file's bytes: signature, header, chunks ``before`` DATA, [cSUM], DATA, chunks ``after``.

    ``locator`` adds header record 4 (1.0); ``checksum`` adds header record 2 and a cSUM chunk
    just before DATA (1.4), settling the locator first as 1.0 requires.
    """
    pre = [encode_chunk(tag, payload) for tag, payload in before]
    data_tag = chunk_start(DATA, len(data_payload))  # DATA's payload is joined once, into the file
    post = b"".join(encode_chunk(tag, payload) for tag, payload in after)
    data_prefix = len(data_tag) + data_head_len  # tag, length field and head

    def build(k: int | None, csum_len: int) -> bytes:
        records = [r for r in header.records if r.id not in (RECORD_CHECKSUM, RECORD_LOCATOR)]
        if k is not None:
            records.append(Record(RECORD_CHECKSUM, bytes([k])))
        if locator:
            records.append(locator_record(data_prefix, [len(c) for c in pre] + ([csum_len] if k is not None else [])))
        head = encode_header(header, records=sorted(records, key=lambda r: r.id))
        return b"".join((SIGNATURE, encode_varint(len(head)), head, *pre))

    if not checksum:
        return b"".join((build(None, 0), data_tag, data_payload, post))
    data_len = len(data_tag) + len(data_payload)
    k, csum_len = choose_piece_log2(data_len + len(post)), 0
    for _ in range(8):  # the sizes settle in two or three rounds
        prefix = build(k, csum_len)
        new_k = choose_piece_log2(len(prefix) + data_len + len(post))
        csum = make_piece_table((prefix, data_tag, data_payload, post), new_k)
        if new_k == k and len(csum) == csum_len:
            return b"".join((prefix, csum, data_tag, data_payload, post))
        k, csum_len = new_k, len(csum)
    raise RuntimeError("cSUM size did not settle")  # unreachable for real sizes


def locator_record(data_prefix: int, lengths: Sequence[int]) -> Record:
    """1.0 header record 4: DATA's prefix (tag to the end of its head) and the chunks before it."""
    body = encode_varint(data_prefix) + encode_varint(len(lengths)) + b"".join(map(encode_varint, lengths))
    return Record(RECORD_LOCATOR, body)


def stream_file(
    out: BinaryIO,
    header: Header,
    data_payload: bytes,
    data_head_len: int,
    *,
    before: Sequence[tuple[bytes, bytes]] = (),
    after: Sequence[tuple[bytes, bytes]] = (),
    trailer: Sequence[tuple[bytes, bytes]] = (),
    locator: bool = False,
    checksum: bool = False,
) -> int:
    """The file ``assemble`` builds, written chunk by chunk through a StreamWriter, never joined:
    with ``checksum`` the cSUM table follows the chunks ``after`` DATA and precedes ``trailer``
    (a trailing uIDX, 2.7), with k chosen for the file's exact covered length (1.4). Returns
    the bytes written."""
    if locator:  # 1.0: the chunks before DATA; the cSUM chunk is not among them here
        data_prefix = _chunk_len(data_payload) - len(data_payload) + data_head_len
        lengths = [_chunk_len(payload) for _, payload in before]
        records = [r for r in header.records if r.id != RECORD_LOCATOR] + [locator_record(data_prefix, lengths)]
        header = replace(header, records=records)
    chunks = [*before, (DATA, data_payload), *after]
    size = StreamWriter.prefix_len(header) + sum(_chunk_len(payload) for _, payload in [*chunks, *trailer])
    writer = StreamWriter(out, header, checksum=checksum, size_hint=size)
    for tag, payload in chunks:
        writer.chunk(tag, payload)
    return writer.finish(trailer)


def _chunk_len(payload: bytes) -> int:
    """A bounded chunk's whole length: tag, length varint, payload (1.1)."""
    return 4 + len(encode_varint(len(payload) + 1)) + len(payload)


STREAM_PIECE_LOG2 = 20  # 1.4 Choosing k for a stream of unknown length: 1 MiB pieces (our reading)


class StreamWriter:
    """Writes a file front to back to a binary stream that need not seek or tell: signature and
    header, then each chunk as it is given, hashing the bytes as they go out, and with
    ``checksum`` the cSUM table last (1.4: "A writer that streams puts it last, or just before a
    trailing unit index"). Only the current piece's hash state and the digests are held.

    The header gets record 2 (k) when ``checksum`` is set: ``piece_log2``, else 1.4's choice for
    ``size_hint`` covered bytes, else 1 MiB pieces. Records the caller put in ``header`` (the
    locator, 1.0) are kept; a locator must not list the cSUM chunk, which follows DATA here.
    """

    def __init__(self, out: BinaryIO, header: Header, *, checksum: bool = False, piece_log2: int | None = None,
                 size_hint: int | None = None) -> None:
        self._out = out
        self.k: int | None = None
        if checksum:
            self.k = piece_log2 if piece_log2 is not None else (
                choose_piece_log2(size_hint) if size_hint else STREAM_PIECE_LOG2)
        self._hasher = PieceHasher(self.k) if self.k is not None else None
        self.written = 0  # covered bytes written so far (everything but the cSUM chunk)
        self._done = False
        records = [r for r in header.records if r.id != RECORD_CHECKSUM]
        if self.k is not None:  # 1.4 header record 2: id 2, length 1, k
            records.append(Record(RECORD_CHECKSUM, bytes([self.k])))
        head = encode_header(header, records=sorted(records, key=lambda r: r.id))
        self._emit(SIGNATURE + encode_varint(len(head)) + head)

    @staticmethod
    def prefix_len(header: Header) -> int:
        """Bytes of signature, header_len and header as written with a checksum record (1.0, 1.4)."""
        records = [r for r in header.records if r.id != RECORD_CHECKSUM] + [Record(RECORD_CHECKSUM, b"\x00")]
        head = encode_header(header, records=sorted(records, key=lambda r: r.id))
        return len(SIGNATURE) + len(encode_varint(len(head))) + len(head)

    def chunk(self, tag: bytes, payload: bytes | bytearray | memoryview) -> None:
        """Write one bounded chunk (1.1): tag, varint(length + 1), payload."""
        if self._done:
            raise ValueError("the file is finished")
        self._emit(chunk_start(tag, len(payload)))
        self._emit(payload)

    def finish(self, trailer: Sequence[tuple[bytes, bytes]] = ()) -> int:
        """Write the cSUM table (1.4) and then ``trailer`` (a trailing uIDX, 2.7, stays last);
        returns the file's length. The trailer's bytes are covered, so they are hashed first."""
        if self._done:
            raise ValueError("the file is finished")
        tail = [encode_chunk(tag, payload) for tag, payload in trailer]
        table = b""
        if self._hasher is not None:
            for c in tail:
                self._hasher.update(c)
            table = self._hasher.table()
            self._out.write(table)
        for c in tail:
            self._out.write(c)
            self.written += len(c)
        self._done = True
        return self.written + len(table)

    def _emit(self, data: bytes | bytearray | memoryview) -> None:
        self._out.write(data)
        self.written += len(data)
        if self._hasher is not None:
            self._hasher.update(data)


def trailing_index_payload(spans_and_data_len: bytes) -> bytes:
    """Complete a uIDX payload with chunk_len (the whole chunk's length) and the tag (2.7)."""
    payload_len = len(spans_and_data_len) + 12
    chunk_len = 4 + len(encode_varint(payload_len + 1)) + payload_len
    return spans_and_data_len + chunk_len.to_bytes(8, "little") + UIDX


def _target_mode(path: str) -> int:
    """The replaced file's mode, or what ``open(path, "w")`` would give (mkstemp makes 0600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it where the platform says it (Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)  # elsewhere: the classic read-and-restore
    os.umask(umask)
    return umask


def write_atomic(dst: str | os.PathLike | BinaryIO, data: bytes | Callable[[BinaryIO], object]) -> None:
    """Write ``data`` (bytes, or a function that writes to a binary stream) to a path through a
    temporary file and a rename, or to an open binary file.

    The path then holds the old file or the complete new one. On Windows, where a file another
    program has open or mapped cannot be replaced, this waits briefly and then raises
    PermissionError with the old file in place.
    """
    produce = data if callable(data) else (lambda f: f.write(data))  # type: ignore[misc, arg-type]
    if hasattr(dst, "write"):
        produce(dst)  # type: ignore[arg-type]
        return
    path = os.fspath(dst)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".imij-", suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, _target_mode(path))
        with os.fdopen(fd, "wb") as f:
            produce(f)
            f.flush()
            fsync_file(f.fileno())
        replace_file(tmp, path)
    except BaseException:
        try:
            os.chmod(tmp, stat.S_IREAD | stat.S_IWRITE)  # Windows deletes no read-only file
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
