"""Chunks (1.1): tag letter rules, lengths, open chunks, criticality, occurrence and placement."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.registry.chunks import (
    AFTER_DATA,
    AXES,
    BEFORE_DATA,
    CALB,
    CATG,
    CORD,
    DATA,
    FRAM,
    KNOWN_TAGS,
    is_critical,
    is_valid_tag,
)

# re-exported: container.file, container.checksum and remote.file take these tags from here
from imij_plugins.registry.chunks import ANIM as ANIM
from imij_plugins.registry.chunks import CSUM as CSUM
from imij_plugins.registry.chunks import ONCE as REGISTRY_ONCE
from imij_plugins.registry.chunks import UIDX as UIDX
from imij_plugins.wire.varint import encode_varint, read_varint

# 1.5: science records that repeat are malformed records, which never fail an image decode
SCIENCE_ONCE = frozenset({CALB, AXES, CORD, CATG})
# occurrence rules that fail a decode: 1.1's "occur at most once" and 1.4.1's pSUM
ONCE = REGISTRY_ONCE - SCIENCE_ONCE
KNOWN_CRITICAL = frozenset(t for t in KNOWN_TAGS if is_critical(t))  # 1.1: only DATA
# chunks that hold pixels: a partial read keeps the bytes of one cut short by the file's end
CUTTABLE = frozenset({DATA, FRAM})

# Finds where an open chunk's payload ends by the payload's own rules: (tag, buf, start, end) -> end.
MeasureOpen = Callable[[bytes, "bytes | bytearray | memoryview", int, int], int]


class Chunk(NamedTuple):
    """A chunk's place in the file: ``start`` is its tag, the payload is ``[payload_start, end)``
    (a named tuple: made for every chunk of every file opened, at a fraction of a frozen
    dataclass's cost)."""

    tag: bytes
    start: int
    payload_start: int
    end: int
    open: bool = False
    cut: bool = False  # partial reads only: a bounded chunk that ran past the file's end, ``end`` clamped

    @property
    def size(self) -> int:
        """The chunk's whole length: tag, length field and payload."""
        return self.end - self.start

    @property
    def critical(self) -> bool:
        return is_critical(self.tag)


def check_tag(tag: bytes) -> None:
    """1.1: a tag is four ASCII letters."""
    if len(tag) != 4 or not is_valid_tag(tag):
        raise Corrupt(f"chunk tag {bytes(tag)!r} is not four ASCII letters")


def read_chunk(
    buf: bytes | bytearray | memoryview, pos: int, end: int, measure_open: MeasureOpen | None, partial: bool = False
) -> Chunk:
    """Read one chunk's framing at ``pos``; an open (length 0) chunk is measured by ``measure_open``.

    With ``partial``, a DATA or fRAM chunk whose length runs past ``end`` is returned cut at ``end``.
    """
    if end - pos < 4:
        raise Corrupt("chunk tag runs past the end of the file")
    tag = bytes(buf[pos : pos + 4])
    if tag not in KNOWN_TAGS:  # a known tag is four letters and no unknown critical chunk
        check_tag(tag)
        if is_critical(tag):  # 1.1: unknown critical chunk
            raise Unsupported(f"unknown critical chunk {tag.decode()}")
    try:  # the field's name is built only for the error
        length, payload_start = read_varint(buf, pos + 4, end)
    except Corrupt:
        read_varint(buf, pos + 4, end, f"chunk {tag.decode()} length")
        raise
    if length == 0:  # 1.1: open chunk, only critical chunks may be open
        if not is_critical(tag):
            raise Corrupt(f"ancillary chunk {tag.decode()} is open (length 0)")
        if measure_open is None:
            raise Unsupported(f"open chunk {tag.decode()} cannot be measured here")
        return Chunk(tag, pos, payload_start, measure_open(tag, buf, payload_start, end), open=True)
    if length - 1 > end - payload_start:
        if partial and tag in CUTTABLE:
            return Chunk(tag, pos, payload_start, end, cut=True)
        raise Corrupt(f"chunk {tag.decode()} overruns the file")
    return Chunk(tag, pos, payload_start, payload_start + length - 1)


def iter_chunks(
    buf: bytes | bytearray | memoryview,
    pos: int,
    end: int,
    measure_open: MeasureOpen | None = None,
    partial: bool = False,
) -> Iterator[Chunk]:
    """Yield every chunk from ``pos`` to ``end``, applying the 1.1 occurrence and placement rules."""
    seen: set[bytes] = set()
    data_seen = False
    while pos < end:
        chunk = read_chunk(buf, pos, end, measure_open, partial)
        tag = chunk.tag
        if tag in ONCE and tag in seen:
            raise Corrupt(f"chunk {tag.decode()} occurs more than once")
        if tag in BEFORE_DATA and data_seen:
            raise Corrupt(f"chunk {tag.decode()} after DATA")
        if tag in AFTER_DATA and not data_seen:
            raise Corrupt(f"chunk {tag.decode()} before DATA")
        seen.add(tag)
        data_seen = data_seen or tag == DATA
        yield chunk
        pos = chunk.end
    if not data_seen:
        raise Corrupt("file has no DATA chunk")


def encode_chunk(tag: bytes, payload: bytes) -> bytes:
    """A bounded chunk: tag, varint(payload length + 1), payload (1.1)."""
    return chunk_start(tag, len(payload)) + payload


def chunk_start(tag: bytes, payload_len: int) -> bytes:
    """A bounded chunk's bytes before its payload: tag, varint(payload length + 1) (1.1)."""
    check_tag(tag)
    return tag + encode_varint(payload_len + 1)
