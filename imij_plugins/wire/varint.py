"""LEB128 varints exactly as section 0 defines them: minimal, at most 10 bytes, values below 2^64."""

from __future__ import annotations

import numpy as np

from imij_plugins.errors import Corrupt

MAX_VARINT = (1 << 64) - 1


def read_varint(buf: bytes | bytearray | memoryview, pos: int, end: int, what: str = "varint") -> tuple[int, int]:
    """Read one varint from ``buf[pos:end]``; return ``(value, position after it)``."""
    if pos < end:
        byte = buf[pos]
        if byte < 0x80:  # one byte: always minimal and in range (most fields)
            return byte, pos + 1
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise Corrupt(f"{what}: truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if pos - start == 10:  # 0: at most 10 bytes
            raise Corrupt(f"{what}: varint longer than 10 bytes")
    if byte == 0 and pos - start > 1:  # 0: minimal encoding, no trailing zero byte
        raise Corrupt(f"{what}: non-minimal varint")
    if value > MAX_VARINT:  # 0: values are unsigned 64-bit
        raise Corrupt(f"{what}: varint overflows 64 bits")
    return value, pos


def read_varints(buf: bytes | bytearray | memoryview, pos: int, end: int, count: int,
                 what: str = "varint") -> tuple[list[int], int]:
    """Read ``count`` consecutive varints (read_varint's rules); return ``(values, position after)``.

    Vectorized for runs of short varints (at most 5 bytes each, the common case of tables); any
    other run, or a fault, is read one by one, so errors name the same rule as read_varint."""
    n = min(end, pos + 10 * count) - pos
    if count > 0 and n > 0:
        window = np.frombuffer(buf, np.uint8, count=n, offset=pos)
        stops = np.flatnonzero(window < 0x80)[:count]
        if len(stops) == count:
            starts = np.concatenate(([0], stops[:-1] + 1))
            lengths = stops - starts + 1
            if lengths.max() <= 5 and not np.any((window[stops] == 0) & (lengths > 1)):  # 0: minimal
                digits = (window[: stops[-1] + 1] & 0x7F).astype(np.int64)
                place = np.arange(len(digits)) - np.repeat(starts, lengths)
                return np.add.reduceat(digits << (7 * place), starts).tolist(), pos + int(stops[-1]) + 1
    values = []
    for _ in range(count):
        value, pos = read_varint(buf, pos, end, what)
        values.append(value)
    return values, pos


def encode_varint(value: int) -> bytes:
    """The minimal LEB128 encoding of ``value`` (0 ..= 2^64 - 1)."""
    if not 0 <= value <= MAX_VARINT:
        raise ValueError(f"varint value out of range: {value}")
    return encode_leb128(value)


def encode_leb128(value: int) -> bytes:
    """Minimal LEB128 of a non-negative integer of any size (the feature mask uses it past 2^64)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
