"""Unsigned LEB128 columns of IMIJ-set leaf pages: exact-count decoding and shortest-form encoding.

Leaf columns hold up to 256 varints, mostly deltas of one or two bytes, so decoding checks the
layout with C-speed bytes methods and converts with numpy before falling back to a loop.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import islice

import numpy as np

from imij_plugins.errors import Corrupt
from imij_plugins.wire.varint import MAX_VARINT, encode_varint, read_varint

U64_MAX = MAX_VARINT  # IMIJ-set keys, offsets and sentinels are u64, the varint bound
_HIGH = bytes(range(0x80, 0x100))
# every value below 2^14 (one or two bytes), encoded once: leaf columns are mostly these
_SHORT = [encode_varint(v) for v in range(0x4000)]


def uvarint(value: int) -> bytes:
    """The shortest LEB128 form of ``value`` (0 ..= 2^64 - 1)."""
    return _SHORT[value] if 0 <= value < 0x4000 else encode_varint(value)


def encode_column(values: Sequence[int]) -> bytes:
    """A column: the shortest LEB128 form of each value, concatenated."""
    if values and values.count(values[0]) == len(values):  # one value repeated (equal lengths, steps)
        return uvarint(values[0]) * len(values)
    return b"".join([_SHORT[v] if v < 0x4000 else encode_varint(v) for v in values])


def encode_deltas(values: Sequence[int]) -> bytes:
    """Leaf columns 1 and 2: the first value, then each value's difference from the one before."""
    if not values:
        return b""
    return uvarint(values[0]) + encode_column(list(map(operator.sub, islice(values, 1, None), values)))


def decode_column(buf: bytes, start: int, end: int, count: int, what: str) -> np.ndarray:
    """Exactly ``count`` LEB128 values filling ``buf[start:end]``, as uint64.

    Index pages: "Each column has exactly count values, with no trailing bytes". The first value
    (an absolute key or offset in columns 1 and 2) is read alone, so the rest can take a fast path.
    """
    out = np.empty(count, np.uint64)
    if count == 0:
        if end != start:
            raise Corrupt(f"{what}: {end - start} bytes for zero values")
        return out
    out[0], pos = read_varint(buf, start, end, what)
    rest = count - 1
    body = buf[pos:end]
    if len(body) == rest and body.isascii():  # every other value one byte
        out[1:] = np.frombuffer(body, np.uint8)
    elif rest and len(body) == 2 * rest and _two_byte(body):  # every other value two bytes
        v = np.frombuffer(body, "<u2").astype(np.uint64)
        out[1:] = (v & 0x7F) | ((v >> 1) & 0x3F80)
    else:
        for i in range(1, count):
            out[i], pos = read_varint(buf, pos, end, what)
        if pos != end:
            raise Corrupt(f"{what}: trailing bytes after {count} values")
    return out


def _two_byte(body: bytes) -> bool:
    """Whether ``body`` is a run of shortest-form two-byte varints (continuation, then nonzero last byte)."""
    low, high = body[0::2], body[1::2]
    return not low.translate(None, _HIGH) and high.isascii() and 0 not in high
