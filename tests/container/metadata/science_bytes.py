"""Hand-made science record bytes (1.5 "Encoding"), written from the grammar, not with the package's writers."""

from __future__ import annotations

import struct

from imij_plugins.wire import encode_varint as varint


def f64(*values: float) -> bytes:
    """1.5: IEEE binary64, little-endian."""
    return b"".join(struct.pack("<d", v) for v in values)


def text(s: str | bytes) -> bytes:
    """1.5 str: a varint byte length and the bytes."""
    raw = s.encode() if isinstance(s, str) else s
    return varint(len(raw)) + raw


def zz(v: int) -> bytes:
    """1.5 zigzag: (v << 1) ^ (v >> 63) as a varint."""
    return varint((v << 1) ^ (v >> 63))


def calb(*entries: bytes, count: int | None = None) -> bytes:
    """cALB version 1: count, entries."""
    return bytes([1, len(entries) if count is None else count]) + b"".join(entries)


def calb_entry(flags: int = 0, *fields: bytes, nodata: tuple[float, ...] = ()) -> bytes:
    """One cALB entry: flags varint, the flagged fields (already encoded), nodata_n and nodata."""
    return varint(flags) + b"".join(fields) + varint(len(nodata)) + f64(*nodata)


def axis(name: str | bytes, kind: int, binding: int, unit: str | bytes = "", axis_type: str | bytes = "") -> bytes:
    """One aXES axis: name, kind, type (kind 3), binding, unit."""
    t = text(axis_type) if kind == 3 else b""
    return text(name) + bytes([kind]) + t + bytes([binding]) + text(unit)


XY = (axis("x", 0, 1, "m"), axis("y", 0, 2, "m"))  # the columns and rows axes


def axes(*axis_bytes: bytes, flags: int = 0, levels: bytes = b"\x00", tail: bytes = b"") -> bytes:
    """aXES version 1: flags, N, axes, L + levels (default L = 0), then method/affine bytes."""
    return bytes([1]) + varint(flags) + bytes([len(axis_bytes)]) + b"".join(axis_bytes) + levels + tail


def cord(*values: int, k: int | None = None) -> bytes:
    """cORD version 1: K, zigzag values."""
    return bytes([1]) + varint(len(values) if k is None else k) + b"".join(zz(v) for v in values)


def smdt(schema: str | bytes = "cf-1.12", body: bytes = b"\x00pack", fmt: int = 1) -> bytes:
    """sMDT version 1: format, schema, body."""
    return bytes([1, fmt]) + text(schema) + body


def catg(*channels: list[bytes], flags: int = 0) -> bytes:
    """cATG version 1: flags, count, then per channel n and its entries."""
    out = bytes([1]) + varint(flags) + bytes([len(channels)])
    for entries in channels:
        out += varint(len(entries)) + b"".join(entries)
    return out


def category(
    value: int, color: bytes | None = None, name: str | bytes | None = None, description: str | bytes | None = None
) -> bytes:
    """One cATG entry: value, eflags, color bytes (already sized), name, description."""
    eflags = (color is not None) | (name is not None) << 1 | (description is not None) << 2
    out = zz(value) + varint(eflags) + (color or b"")
    return out + (text(name) if name is not None else b"") + (text(description) if description is not None else b"")


def entry(target: int, tag: bytes, payload: bytes) -> bytes:
    """A plane-set attachment entry: target, tag, length + 1, payload."""
    return varint(target) + tag + varint(len(payload) + 1) + payload
