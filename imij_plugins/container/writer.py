"""Assembling a complete file (1, 1.0 locator, 1.4 cSUM) and writing it without a half-written state."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from typing import BinaryIO, Sequence

from imij_plugins.container.checksum import choose_piece_log2, make_piece_table
from imij_plugins.container.chunks import DATA, UIDX, encode_chunk
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
    data = encode_chunk(DATA, data_payload)
    post = b"".join(encode_chunk(tag, payload) for tag, payload in after)
    data_prefix = len(data) - len(data_payload) + data_head_len  # tag, length field and head

    def build(k: int | None, csum_len: int) -> bytes:
        records = [r for r in header.records if r.id not in (RECORD_CHECKSUM, RECORD_LOCATOR)]
        if k is not None:
            records.append(Record(RECORD_CHECKSUM, bytes([k])))
        if locator:
            lengths = [len(c) for c in pre] + ([csum_len] if k is not None else [])
            body = encode_varint(data_prefix) + encode_varint(len(lengths)) + b"".join(map(encode_varint, lengths))
            records.append(Record(RECORD_LOCATOR, body))
        head = encode_header(replace(header, records=sorted(records, key=lambda r: r.id)))
        return SIGNATURE + encode_varint(len(head)) + head + b"".join(pre)

    if not checksum:
        return build(None, 0) + data + post
    k, csum_len = choose_piece_log2(len(data) + len(post)), 0
    for _ in range(8):  # the sizes settle in two or three rounds
        prefix = build(k, csum_len)
        covered = prefix + data + post
        new_k = choose_piece_log2(len(covered))
        csum = make_piece_table(covered, new_k)
        if new_k == k and len(csum) == csum_len:
            return prefix + csum + data + post
        k, csum_len = new_k, len(csum)
    raise RuntimeError("cSUM size did not settle")  # unreachable for real sizes


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


def write_atomic(dst: str | os.PathLike | BinaryIO, data: bytes) -> None:
    """Write ``data`` to a path through a temporary file and a rename, or to an open binary file."""
    if hasattr(dst, "write"):
        dst.write(data)  # type: ignore[union-attr]
        return
    path = os.fspath(dst)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".imij-", suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, _target_mode(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
