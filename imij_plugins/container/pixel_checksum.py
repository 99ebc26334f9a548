"""The decoded bitmap checksum pSUM (1.4.1): an XXH3-64 digest per image, frame or page."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import xxhash

from imij_plugins.errors import Corrupt
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

VERSION, ALGO_XXH3_64, WIDTH = 1, 0, 8
MAX_COUNT = 1_000_000
MAX_PAYLOAD = 8_000_014  # 1.4.1: the payload cap that applies to every version
DOMAIN = b"IMIJ/pSUM/v1" + bytes(4)


@dataclass(frozen=True)
class BitmapDigests:
    """A pSUM table; ``known`` is False for a version or algorithm this reader skips."""

    known: bool
    digests: tuple[int, ...] = ()


def read_bitmap_digests(payload: memoryview, frame_count: int) -> BitmapDigests:
    """Parse a pSUM payload; ``frame_count`` is aNIM's count (or 1) and must equal fRAM count + 1."""
    if len(payload) > MAX_PAYLOAD:
        raise Corrupt("pSUM payload over 8,000,014 bytes")
    cur = Cursor(payload, what="pSUM")
    version, algo = cur.u8("version"), cur.u8("algorithm")
    if version != VERSION or algo != ALGO_XXH3_64:
        return BitmapDigests(False)  # 1.4.1: skipped, never reported as verified
    width, reserved = cur.u8("width"), cur.u8("reserved")
    if width != WIDTH or reserved != 0:
        raise Corrupt(f"pSUM width {width} / reserved {reserved}")
    count = cur.varint("count")
    if not 1 <= count <= MAX_COUNT:
        raise Corrupt(f"pSUM count {count} outside 1 ..= 1,000,000")
    if cur.remaining() != 8 * count:  # checked before anything is allocated
        raise Corrupt("pSUM payload length is not the table header plus 8 x count")
    if count != frame_count:
        raise Corrupt(f"pSUM count {count} but the file has {frame_count} images")
    raw = bytes(cur.take(8 * count))
    return BitmapDigests(True, struct.unpack(f"<{count}Q", raw))


def bitmap_digest(width: int, height: int, channels: int, sample: int, ordinal: int, raster: bytes | memoryview) -> int:
    """XXH3-64 of the 34-byte descriptor and the raster: rows, pixels, stored slots, samples LE (1.4.1)."""
    h = xxhash.xxh3_64()
    h.update(DOMAIN + struct.pack("<IIBBQ", width, height, channels, sample, ordinal))
    h.update(raster)
    return h.intdigest()


def encode_bitmap_digests(digests: list[int]) -> bytes:
    """A version-1 pSUM payload for ``digests`` in ordinal order."""
    return bytes([VERSION, ALGO_XXH3_64, WIDTH, 0]) + encode_varint(len(digests)) + struct.pack(f"<{len(digests)}Q", *digests)
