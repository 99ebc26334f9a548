"""Exif payloads (eXIf, 1.1: the TIFF header onward) edited without moving a byte: the changed
IFD0 is appended and the header pointed at it, so every offset inside stays valid (the Exif and
GPS IFDs, IFD1 and its thumbnail, maker notes). Pillow's ``Exif.tobytes`` rewrites the whole
structure and drops IFD1; this keeps everything it does not change."""

from __future__ import annotations

import struct

from imij_plugins.errors import Corrupt

SHORT, RATIONAL = 3, 5  # TIFF field types
_ORDERS = {b"II": "<", b"MM": ">"}


def ifd0(exif: bytes) -> tuple[str, dict[int, bytes], int]:
    """Byte order, IFD0's 12-byte entries by tag (as stored) and the next-IFD offset (IFD1, or 0)."""
    order = _ORDERS.get(exif[:2])
    if order is None or len(exif) < 4 or struct.unpack(order + "H", exif[2:4])[0] != 42:
        raise Corrupt(f"Exif does not start with a TIFF header: {exif[:8].hex()}")
    if len(exif) < 8:
        raise Corrupt(f"Exif of {len(exif)} bytes ends inside its TIFF header")
    (offset,) = struct.unpack(order + "I", exif[4:8])
    if offset + 2 > len(exif):
        raise Corrupt(f"Exif IFD0 at {offset} is past its {len(exif)} bytes")
    (count,) = struct.unpack(order + "H", exif[offset : offset + 2])
    end = offset + 2 + 12 * count
    if end + 4 > len(exif):
        raise Corrupt(f"Exif IFD0 of {count} entries at {offset} is past its {len(exif)} bytes")
    entries = {struct.unpack(order + "H", exif[p : p + 2])[0]: exif[p : p + 12] for p in range(offset + 2, end, 12)}
    (next_ifd,) = struct.unpack(order + "I", exif[end : end + 4])
    return order, entries, next_ifd


def with_ifd0_tags(exif: bytes | None, tags: dict[int, tuple[int, tuple[int, ...]]]) -> bytes:
    """``exif`` (or a new little-endian Exif when None) with IFD0's ``tags`` set, each
    ``tag: (type, values)`` for SHORT (values) or RATIONAL (numerator, denominator pairs flat).
    Raises Corrupt when ``exif``'s header or IFD0 does not parse."""
    if exif:
        base = bytes(exif)
        order, entries, next_ifd = ifd0(base)
    else:
        base, order, entries, next_ifd = b"II*\x00\x00\x00\x00\x00", "<", {}, 0
    base += b"\x00" * (len(base) % 2)  # an IFD starts on a word boundary (TIFF 6.0, section 2)
    start = len(base)
    entries = dict(entries)
    values_at = start + 2 + 12 * len(entries.keys() | tags.keys()) + 4
    values = b""
    for tag, (kind, numbers) in tags.items():
        fmt = {SHORT: "H", RATIONAL: "I"}[kind]
        count = len(numbers) // 2 if kind == RATIONAL else len(numbers)
        payload = struct.pack(order + fmt * len(numbers), *numbers)
        if len(payload) <= 4:
            field = payload.ljust(4, b"\x00")
        else:
            field = struct.pack(order + "I", values_at + len(values))
            values += payload
        entries[tag] = struct.pack(order + "HHI", tag, kind, count) + field
    ifd = struct.pack(order + "H", len(entries)) + b"".join(entries[t] for t in sorted(entries))
    ifd += struct.pack(order + "I", next_ifd)
    return base[:4] + struct.pack(order + "I", start) + base[8:] + ifd + values

