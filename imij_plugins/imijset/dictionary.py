"""Per-leaf string dictionaries (kind 3): tokenized metadata, its expansion and the dictionary column."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.imijset.columns import uvarint
from imij_plugins.imijset.metadata import (
    BOOL,
    BYTES,
    F64,
    I64_TYPE,
    MAX_ATTRIBUTES,
    MAX_PAYLOAD,
    TEXT,
    U64,
    Metadata,
    serialize,
)
from imij_plugins.wire.cursor import Cursor

MAX_STRING = 16384  # Per-leaf string dictionaries: "strings are nonempty and at most 16 KiB"
_FIXED_SIZE = {U64: 8, I64_TYPE: 8, F64: 8, BOOL: 1}


def repeated_strings(metas: Sequence[Metadata]) -> list[bytes]:
    """The dictionary a writer builds: "Repeated strings are candidates; unique strings stay literal"."""
    counts: Counter[bytes] = Counter()
    for meta in metas:
        if meta.filename is not None:
            counts[meta.filename.encode("utf-8")] += 1
        for key, kind, value in meta.attributes:
            counts[key.encode("utf-8")] += 1
            if kind == TEXT:
                counts[value.encode("utf-8")] += 1  # type: ignore[union-attr]
    # Per-leaf string dictionaries: "length-prefixed UTF-8 strings in strictly increasing byte order"
    return sorted(s for s, n in counts.items() if n > 1 and 0 < len(s) <= MAX_STRING)


def tokenize(meta: Metadata, index: dict[bytes, int]) -> bytes:
    """The kind 3 payload of ``meta``: "even 2*n means n following literal UTF-8 bytes; odd 2*i+1
    references dictionary index i"."""

    def token(data: bytes) -> bytes:
        i = index.get(data)
        return uvarint(2 * i + 1) if i is not None else uvarint(2 * len(data)) + data

    return serialize(meta, token)


def encode_dictionary(strings: Sequence[bytes]) -> bytes:
    """Column 9: the count, then each string length-prefixed."""
    return uvarint(len(strings)) + b"".join(uvarint(len(s)) + s for s in strings)


def parse_dictionary(buf: bytes, start: int, end: int) -> list[bytes]:
    """Column 9, checked: a positive count of nonempty UTF-8 strings <= 16 KiB in strictly increasing order."""
    cur = Cursor(buf, start, end, "dictionary column")
    count = cur.varint("dictionary count")
    # Per-leaf string dictionaries: "The count is positive"; each string takes at least two bytes,
    # so a count the column cannot hold fails before the loop
    if count == 0 or count > cur.remaining() // 2:
        raise Corrupt(f"dictionary column: count {count} for {cur.remaining()} bytes")
    strings: list[bytes] = []
    for _ in range(count):
        size = cur.varint("string length")
        if not 1 <= size <= MAX_STRING:
            raise Corrupt(f"dictionary column: string of {size} bytes (1 ..= {MAX_STRING})")
        data = bytes(cur.take(size, "string"))
        if strings and data <= strings[-1]:
            raise Corrupt("dictionary column: strings not in strictly increasing byte order")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise Corrupt("dictionary column: string is not valid UTF-8") from None
        strings.append(data)
    cur.expect_end("trailing bytes after the dictionary")
    return strings


def expand(payload: bytes, strings: Sequence[bytes], what: str) -> bytes:
    """The kind 2 form of a tokenized payload; the shared metadata parser checks it next.

    Output is capped at 16,384 bytes as it grows ("a small encoded page cannot expand into an
    unbounded leaf"), so no allocation exceeds the per-entry limit.
    """
    cur = Cursor(payload, 0, len(payload), what)
    out = bytearray()

    def string(field: str) -> None:
        token = cur.varint(f"{field} token")
        if token & 1:
            i = token >> 1
            if i >= len(strings):  # Per-leaf string dictionaries: "references must be in range"
                raise Corrupt(f"{what}: {field} references dictionary entry {i} of {len(strings)}")
            data = strings[i]
        else:
            data = bytes(cur.take(token >> 1, field))
        out.extend(uvarint(len(data)) + data)
        if len(out) > MAX_PAYLOAD:
            raise Corrupt(f"{what}: expands past {MAX_PAYLOAD} bytes")

    presence = cur.u8("filename presence")
    if presence > 1:
        raise Corrupt(f"{what}: filename presence byte {presence}")
    out.append(presence)
    if presence:
        string("filename")
    count = cur.varint("attribute count")
    if count > MAX_ATTRIBUTES:
        raise Corrupt(f"{what}: {count} attributes (at most {MAX_ATTRIBUTES})")
    out += uvarint(count)
    for _ in range(count):
        string("key")
        kind = cur.u8("value type")
        out.append(kind)
        if kind == TEXT:
            string("text")
        elif kind == BYTES:
            # Per-leaf string dictionaries: "Byte values remain length-prefixed raw bytes"
            size = cur.varint("bytes length")
            out += uvarint(size) + cur.take(size, "bytes value")
        elif kind in _FIXED_SIZE:
            out += cur.take(_FIXED_SIZE[kind], "fixed value")
        else:
            raise Unsupported(f"{what}: attribute value type {kind}")
        if len(out) > MAX_PAYLOAD:
            raise Corrupt(f"{what}: expands past {MAX_PAYLOAD} bytes")
    cur.expect_end("trailing bytes after the attributes")
    return bytes(out)
