"""Field codecs the metadata payloads share (1.5 "Encoding"), and the mapping of field errors to one outcome class."""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from contextlib import contextmanager

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

_F64 = struct.Struct("<d")
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


@contextmanager
def errors_as(cls: type[Corrupt]) -> Iterator[None]:
    """Report every ValueError of a parse as ``cls``, except Unsupported, so a parser has one Corrupt class."""
    try:
        yield
    except (Unsupported, cls):
        raise
    except ValueError as e:  # Corrupt from a Cursor, ValueError from a value's own checks
        raise cls(str(e)) from None


def read_f64(cur: Cursor, field: str) -> float:
    """1.5: f64 is IEEE binary64, little-endian."""
    return _F64.unpack(cur.take(8, field))[0]


def encode_f64(value: float) -> bytes:
    """The 8 little-endian bytes of ``value`` as binary64."""
    return _F64.pack(value)


def read_text(cur: Cursor, field: str) -> str:
    """A varint byte length and that many bytes of UTF-8; its limits are the value's checks."""
    raw = bytes(cur.take(cur.varint(f"{field} length"), field))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{cur.what}: {field} is not valid UTF-8") from None


def encode_text(value: str) -> bytes:
    """A varint byte length and the UTF-8 bytes of ``value``."""
    raw = value.encode("utf-8")
    return encode_varint(len(raw)) + raw


def check_text(value: str, what: str, field: str, lo: int, hi: int) -> None:
    """1.5 ``str``: UTF-8 with no NUL, of ``lo ..= hi`` bytes."""
    if "\0" in value:
        raise ValueError(f"{what}: {field} contains NUL")
    size = len(value.encode("utf-8"))
    if not lo <= size <= hi:
        raise ValueError(f"{what}: {field} is {size} bytes, outside {lo}..={hi}")


def read_zigzag(cur: Cursor, field: str) -> int:
    """1.5: a varint z holding the signed value (z >> 1) ^ -(z & 1)."""
    z = cur.varint(field)
    return (z >> 1) ^ -(z & 1)


def encode_zigzag(value: int) -> bytes:
    """The zigzag varint of a signed 64-bit ``value``."""
    if not I64_MIN <= value <= I64_MAX:
        raise ValueError(f"{value} is not a signed 64-bit value")
    return encode_varint((value << 1) ^ (value >> 63))


def check_finite(value: float, what: str, field: str) -> None:
    """Finite: neither infinite nor NaN."""
    if not math.isfinite(value):
        raise ValueError(f"{what}: {field} {value} is not finite")


def check_u8s(values: tuple[int, ...], count: int, what: str, field: str) -> None:
    """Exactly ``count`` byte values."""
    if len(values) != count or not all(0 <= v <= 0xFF for v in values):
        raise ValueError(f"{what}: {field} must be {count} byte values")


def check_cicp(cicp: tuple[int, int, int, int], what: str) -> None:
    """Four CICP bytes (primaries, transfer, matrix, full range) with full range 0 or 1."""
    check_u8s(cicp, 4, what, "CICP")
    if cicp[3] > 1:
        raise ValueError(f"{what}: CICP full range {cicp[3]} is not 0 or 1")
