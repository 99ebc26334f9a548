"""Typed entry metadata (leaf column 8): a filename and ordered typed attributes, parsed and encoded.

One grammar serves metadata leaves (kind 2), expanded dictionary leaves (kind 3) and the
writer, so every limit lives here once.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.imijset.columns import U64_MAX, uvarint
from imij_plugins.wire.cursor import Cursor

# Index pages: "Nonzero lengths are at most 16,384"; "attribute count unsigned LEB128 (0..64)";
# "filenames are 1..4096 UTF-8 bytes, keys 1..128"
MAX_PAYLOAD = 16384
MAX_ATTRIBUTES = 64
MAX_FILENAME = 4096
MAX_KEY = 128

# Index pages, value types: "0 UTF-8 text and 1 arbitrary bytes ... 2 unsigned u64, 3 two's-complement
# i64 and 4 finite IEEE binary64 ... 5 boolean"
TEXT, BYTES, U64, I64_TYPE, F64, BOOL = range(6)
_FIXED = struct.Struct("<Q")
_SIGNED = struct.Struct("<q")
_DOUBLE = struct.Struct("<d")


class I64(int):
    """An attribute value stored as a signed i64 (type 3), also when it is not negative."""


AttributeValue = str | bytes | int | float | bool


@dataclass(frozen=True)
class Metadata:
    """One entry's parsed metadata: the filename and (key, type, value) attributes in key-byte order."""

    filename: str | None = None
    attributes: tuple[tuple[str, int, AttributeValue], ...] = ()

    def as_dict(self) -> dict[str, AttributeValue]:
        """The attributes by key, values as Python objects (i64 values as ``I64``)."""
        return {key: value for key, _, value in self.attributes}


NO_METADATA = Metadata()


def _literal(data: bytes) -> bytes:
    """A kind 2 string: its length, then its bytes."""
    return uvarint(len(data)) + data


def serialize(meta: Metadata, string: Callable[[bytes], bytes] = _literal) -> bytes:
    """The payload bytes of ``meta``; ``string`` writes each filename, key and text value."""
    out = bytearray()
    if meta.filename is None:
        out.append(0)
    else:
        out.append(1)
        out += string(meta.filename.encode("utf-8"))
    out += uvarint(len(meta.attributes))
    for key, kind, value in meta.attributes:
        out += string(key.encode("utf-8"))
        out.append(kind)
        if kind == TEXT:
            out += string(value.encode("utf-8"))  # type: ignore[union-attr]
        elif kind == BYTES:
            out += _literal(bytes(value))  # type: ignore[arg-type]
        elif kind == U64:
            out += _FIXED.pack(value)
        elif kind == I64_TYPE:
            out += _SIGNED.pack(value)
        elif kind == F64:
            out += _DOUBLE.pack(value)
        else:
            out.append(1 if value else 0)
    return bytes(out)


def parse_metadata(payload: bytes, what: str = "entry metadata") -> Metadata:
    """Parse and check one nonzero-length payload (kind 2 form) against every rule of the grammar."""
    # Index pages: "Nonzero lengths are at most 16,384"
    if not 0 < len(payload) <= MAX_PAYLOAD:
        raise Corrupt(f"{what}: payload length {len(payload)} outside 1 ..= {MAX_PAYLOAD}")
    cur = Cursor(payload, 0, len(payload), what)
    presence = cur.u8("filename presence")
    if presence > 1:  # Index pages: "filename presence 0/1"
        raise Corrupt(f"{what}: filename presence byte {presence}")
    filename = _name(cur, MAX_FILENAME, "filename") if presence else None
    count = cur.varint("attribute count")
    if count > MAX_ATTRIBUTES:  # Index pages: "attribute count unsigned LEB128 (0..64)"
        raise Corrupt(f"{what}: {count} attributes (at most {MAX_ATTRIBUTES})")
    attributes = []
    previous = b""
    for _ in range(count):
        key_bytes = bytes(cur.take(cur.varint("key length"), "key"))
        # Index pages: "attributes in strictly increasing UTF-8 key-byte order"
        if attributes and key_bytes <= previous:
            raise Corrupt(f"{what}: attribute keys duplicate or out of order")
        previous = key_bytes
        key = _check_name(key_bytes, MAX_KEY, "attribute key", what)
        kind = cur.u8("value type")
        attributes.append((key, kind, _value(cur, kind, what)))
    # Index pages: "trailing payload bytes ... are errors"
    cur.expect_end("trailing bytes after the attributes")
    return Metadata(filename, tuple(attributes))


def _name(cur: Cursor, limit: int, field: str) -> str:
    """A length-prefixed filename or key."""
    data = bytes(cur.take(cur.varint(f"{field} length"), field))
    return _check_name(data, limit, field, cur.what)


def _check_name(data: bytes, limit: int, field: str, what: str) -> str:
    """Index pages: "Names contain no NUL: filenames are 1..4096 UTF-8 bytes, keys 1..128"."""
    if not 1 <= len(data) <= limit:
        raise Corrupt(f"{what}: {field} of {len(data)} bytes (1 ..= {limit})")
    if b"\x00" in data:
        raise Corrupt(f"{what}: {field} contains NUL")
    return _utf8(data, field, what)


def _utf8(data: bytes, field: str, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # Index pages: "invalid UTF-8 ... are errors"
        raise Corrupt(f"{what}: {field} is not valid UTF-8") from None


def _value(cur: Cursor, kind: int, what: str) -> AttributeValue:
    """One typed value; an unknown type rejects the leaf."""
    if kind == TEXT:
        return _utf8(bytes(cur.take(cur.varint("text length"), "text")), "text value", what)
    if kind == BYTES:
        return bytes(cur.take(cur.varint("bytes length"), "bytes value"))
    if kind == U64:
        return cur.uint_le(8, "u64 value")
    if kind == I64_TYPE:
        return I64(_SIGNED.unpack(cur.take(8, "i64 value"))[0])
    if kind == F64:
        value = _DOUBLE.unpack(cur.take(8, "f64 value"))[0]
        if not math.isfinite(value):  # Index pages: "nonfinite floats ... are errors"
            raise Corrupt(f"{what}: nonfinite f64 attribute")
        return value
    if kind == BOOL:
        flag = cur.u8("boolean")
        if flag > 1:  # Index pages: "5 boolean (one byte, exactly 0 or 1)"
            raise Corrupt(f"{what}: boolean byte {flag}")
        return bool(flag)
    # Index pages: "Unknown types reject this leaf" (a type a later writer may define: Unsupported)
    raise Unsupported(f"{what}: attribute value type {kind}")


def build_metadata(filename: str | None, attributes: Mapping[str, object] | None) -> tuple[Metadata, bytes]:
    """Check caller metadata (ValueError/TypeError) and return it with its payload (empty when none)."""
    if filename is None and not attributes:
        return NO_METADATA, b""
    if filename is not None:
        if not isinstance(filename, str):
            raise TypeError(f"filename must be str, not {type(filename).__name__}")
        _check_user_name(filename, MAX_FILENAME, "filename")
    items = sorted((attributes or {}).items(), key=lambda kv: _key_bytes(kv[0]))
    if len(items) > MAX_ATTRIBUTES:
        raise ValueError(f"{len(items)} attributes (at most {MAX_ATTRIBUTES})")
    typed = []
    for key, value in items:
        _check_user_name(key, MAX_KEY, "attribute key")
        typed.append((key, *_typed(key, value)))
    meta = Metadata(filename, tuple(typed))
    payload = serialize(meta)
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"metadata takes {len(payload)} bytes (at most {MAX_PAYLOAD})")
    return meta, payload


def _key_bytes(key: object) -> bytes:
    if not isinstance(key, str):
        raise TypeError(f"attribute keys must be str, not {type(key).__name__}")
    return key.encode("utf-8")


def _check_user_name(name: str, limit: int, field: str) -> None:
    data = name.encode("utf-8")
    if not 1 <= len(data) <= limit or "\x00" in name:
        raise ValueError(f"{field} {name!r}: 1 ..= {limit} UTF-8 bytes without NUL")


def _typed(key: str, value: object) -> tuple[int, AttributeValue]:
    """The value type a Python value is stored as (an int is u64, or i64 when negative or ``I64``)."""
    if isinstance(value, bool):
        return BOOL, value
    if isinstance(value, I64) or (isinstance(value, int) and value < 0):
        if not -(1 << 63) <= value < 1 << 63:
            raise ValueError(f"attribute {key!r}: {value} does not fit i64")
        return I64_TYPE, I64(value)
    if isinstance(value, int):
        if value > U64_MAX:
            raise ValueError(f"attribute {key!r}: {value} does not fit u64")
        return U64, int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"attribute {key!r}: floats must be finite")
        return F64, value
    if isinstance(value, str):
        value.encode("utf-8")  # lone surrogates raise UnicodeEncodeError, a ValueError
        return TEXT, value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return BYTES, bytes(value)
    raise TypeError(f"attribute {key!r}: unsupported value type {type(value).__name__}")
