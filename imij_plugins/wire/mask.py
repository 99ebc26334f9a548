"""The feature mask (1.0): a little-endian LEB128 bit string of any length."""

from __future__ import annotations

from imij_plugins.errors import Corrupt
from imij_plugins.wire.varint import encode_leb128


def decode_mask(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[frozenset[int], int]:
    """Read a feature mask bounded by ``end``; return the set bit ids and the position after it.

    1.0: byte k holds ids 7k..7k+6; the varint rules hold except the 10-byte limit (the last
    byte is nonzero unless it is the only byte), and running past ``end`` is Corrupt.
    """
    ids: set[int] = set()
    start = pos
    k = 0
    while True:
        if pos >= end:
            raise Corrupt("feature mask runs past the header")
        byte = buf[pos]
        pos += 1
        bits = byte & 0x7F
        while bits:
            low = bits & -bits
            ids.add(7 * k + low.bit_length() - 1)
            bits ^= low
        if not byte & 0x80:
            break
        k += 1
    if byte == 0 and pos - start > 1:
        raise Corrupt("feature mask: non-minimal encoding")
    return frozenset(ids), pos


def encode_mask(ids: frozenset[int] | set[int]) -> bytes:
    """The minimal LEB128 bit string with exactly the bits ``ids`` set (one zero byte when empty)."""
    value = 0
    for i in ids:
        if i < 0:
            raise ValueError(f"negative feature id {i}")
        value |= 1 << i
    return encode_leb128(value)
