"""kVMD (1.3): typed item metadata, the IMIJ-Set entry-metadata representation after a version byte."""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from imij_plugins.container.metadata._fields import I64_MAX, I64_MIN, check_text, encode_text, errors_as, read_text
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

VERSION = 1
MAX_BYTES = 16_384  # 1.3: "at most 16384 bytes after the version"
MAX_ATTRIBUTES = 64  # 1.3: "at most 64 attributes"
MAX_KEY = 128  # 1.3: "Keys are at most 128 bytes"
MAX_FILENAME = 4096  # 1.3: "filename at most 4096 bytes"

Value = str | bytes | int | float | bool


class AttrType(IntEnum):
    """1.3 value type byte."""

    TEXT = 0
    BYTES = 1
    U64 = 2
    I64 = 3
    F64 = 4
    BOOL = 5


def _is_int(value: object) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Attribute:
    """One typed attribute: a key, its type and a value of that type."""

    key: str
    type: AttrType
    value: Value

    def __post_init__(self) -> None:
        check_text(self.key, "kVMD", "key", 1, MAX_KEY)  # 1.3: "nonempty", "at most 128 bytes", no NUL
        object.__setattr__(self, "type", AttrType(self.type))  # 1.3: types 0-5 (ValueError otherwise)
        t, v = self.type, self.value
        ok = {
            AttrType.TEXT: isinstance(v, str),
            AttrType.BYTES: isinstance(v, bytes),
            AttrType.U64: _is_int(v) and 0 <= v < 1 << 64,  # type: ignore[operator]
            AttrType.I64: _is_int(v) and I64_MIN <= v <= I64_MAX,  # type: ignore[operator]
            AttrType.F64: isinstance(v, float) and math.isfinite(v),  # 1.3: "finite IEEE f64"
            AttrType.BOOL: isinstance(v, bool),
        }[t]
        if not ok:
            raise ValueError(f"kVMD: attribute {self.key!r}: {v!r} is not a valid {t.name}")

    @classmethod
    def of(cls, key: str, value: Value) -> Attribute:
        """An attribute typed from its Python value: str, bytes, bool, float, or int (U64 when >= 0, else I64)."""
        if isinstance(value, bool):
            return cls(key, AttrType.BOOL, value)
        if isinstance(value, int):
            return cls(key, AttrType.U64 if value >= 0 else AttrType.I64, value)
        if isinstance(value, float):
            return cls(key, AttrType.F64, value)
        return cls(key, AttrType.BYTES if isinstance(value, bytes) else AttrType.TEXT, value)


def _read_value(cur: Cursor, t: int) -> Value:
    """One value of type ``t`` (1.3)."""
    if t == AttrType.TEXT:
        return read_text(cur, "text value")
    if t == AttrType.BYTES:
        return bytes(cur.take(cur.varint("bytes length"), "bytes value"))
    if t == AttrType.U64:
        return int.from_bytes(cur.take(8, "u64 value"), "little")
    if t == AttrType.I64:
        return int.from_bytes(cur.take(8, "i64 value"), "little", signed=True)
    if t == AttrType.F64:
        return struct.unpack("<d", cur.take(8, "f64 value"))[0]
    if t == AttrType.BOOL:
        b = cur.u8("boolean")
        if b > 1:  # 1.3: "boolean byte 0/1"
            raise Corrupt(f"kVMD: boolean byte {b}")
        return bool(b)
    raise Corrupt(f"kVMD: value type {t}")  # 1.3 lists types 0-5; an unknown type is malformed


def _encode_value(a: Attribute) -> bytes:
    """The bytes of one value."""
    v = a.value
    if a.type == AttrType.TEXT:
        return encode_text(v)  # type: ignore[arg-type]
    if a.type == AttrType.BYTES:
        return encode_varint(len(v)) + v  # type: ignore[arg-type, operator]
    if a.type == AttrType.F64:
        return struct.pack("<d", v)
    if a.type == AttrType.BOOL:
        return bytes([int(v)])  # type: ignore[arg-type]
    return v.to_bytes(8, "little", signed=a.type == AttrType.I64)  # type: ignore[union-attr]


@dataclass(frozen=True)
class ItemMetadata:
    """Typed item metadata (1.3): an optional filename and attributes in strictly increasing key-byte order."""

    filename: str | None = None
    attributes: tuple[Attribute, ...] = ()

    def __post_init__(self) -> None:
        if self.filename is not None:
            check_text(self.filename, "kVMD", "filename", 1, MAX_FILENAME)  # 1.3: at most 4096 bytes, no NUL
        if len(self.attributes) > MAX_ATTRIBUTES:  # 1.3: "at most 64 attributes"
            raise ValueError(f"kVMD: {len(self.attributes)} attributes, at most {MAX_ATTRIBUTES}")
        keys = [a.key.encode("utf-8") for a in self.attributes]
        if any(a >= b for a, b in zip(keys, keys[1:])):  # 1.3: "ordered unique" keys
            raise ValueError("kVMD: keys not unique and in increasing byte order")

    @classmethod
    def from_mapping(cls, attributes: Mapping[str, Value], filename: str | None = None) -> ItemMetadata:
        """Item metadata from a dict, keys sorted by their UTF-8 bytes, types as ``Attribute.of`` picks them."""
        ordered = sorted(attributes.items(), key=lambda kv: kv[0].encode("utf-8"))
        return cls(filename, tuple(Attribute.of(k, v) for k, v in ordered))

    def as_dict(self) -> dict[str, Value]:
        """The attributes as a plain dict."""
        return {a.key: a.value for a in self.attributes}

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> ItemMetadata:
        """Parse a kVMD payload: malformed is Corrupt, an unknown version Unsupported (1.3)."""
        with errors_as(Corrupt):
            cur = Cursor(payload, what="kVMD")
            version = cur.u8("version")
            if version != VERSION:  # 1.3: "report unknown versions as Unsupported"
                raise Unsupported(f"kVMD version {version}")
            if cur.remaining() > MAX_BYTES:  # 1.3: "at most 16384 bytes after the version"
                raise Corrupt(f"kVMD: {cur.remaining()} bytes after the version, at most {MAX_BYTES}")
            if cur.at_end():  # 1.3: "Empty metadata may have an empty representation"
                return cls()
            flag = cur.u8("filename flag")
            if flag > 1:  # 1.3: "filename flag 0/1"
                raise Corrupt(f"kVMD: filename flag {flag}")
            filename = read_text(cur, "filename") if flag else None
            attributes = []
            for _ in range(cur.varint("attribute count")):  # each attribute reads bytes: the payload bounds the loop
                key = read_text(cur, "key")
                t = cur.u8("type")
                value = _read_value(cur, t)  # an unknown type is Corrupt here
                attributes.append(Attribute(key, AttrType(t), value))
            cur.expect_end("trailing bytes")
            return cls(filename, tuple(attributes))

    def to_bytes(self) -> bytes:
        """The version 1 payload; empty metadata uses the empty representation."""
        if self.filename is None and not self.attributes:
            return bytes([VERSION])
        body = bytearray()
        if self.filename is None:
            body.append(0)
        else:
            body += b"\x01" + encode_text(self.filename)
        body += encode_varint(len(self.attributes))
        for a in self.attributes:
            body += encode_text(a.key) + bytes([a.type]) + _encode_value(a)
        if len(body) > MAX_BYTES:  # 1.3: "at most 16384 bytes after the version"
            raise ValueError(f"kVMD: {len(body)} bytes after the version, at most {MAX_BYTES}")
        return bytes([VERSION]) + body


def read_item_metadata(payloads: Sequence[bytes | memoryview]) -> ItemMetadata | None:
    """The item's kVMD from all its kVMD payloads: none gives None, more than one is Corrupt (1.3)."""
    if len(payloads) > 1:  # 1.3: "attribute readers reject ... duplicate chunks"
        raise Corrupt(f"kVMD occurs {len(payloads)} times")
    return ItemMetadata.from_bytes(payloads[0]) if payloads else None
