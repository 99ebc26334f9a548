"""Hand-built IMI bytes for the container and unit-record tests.

Each helper writes one piece of the wire format straight from the spec's grammar, so the
tests do not depend on this package's writer. Only varints and feature masks come from
imij_plugins.wire (tested on their own in tests/wire).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xxhash

from imij_plugins.wire import encode_mask
from imij_plugins.wire import encode_varint as varint

SIGNATURE = b"IMIJ\r\n\x87\n"  # 1

QUICK = 22  # feature quick_pixels (0.1)
BIT_SMARTS = 23  # feature quick_bit_smarts
ORDINALS = 26  # feature unit_ordinals

# 2: lossless head presence bits
H_PALETTE, H_RECORDS, H_QUICK, H_BIT_SMART = 1, 2, 8, 16


# --- section 1: records, chunks, the container -------------------------------------------


def record(rid: int, payload: bytes = b"") -> bytes:
    """One record: id varint, len varint, payload (section 1)."""
    return varint(rid) + varint(len(payload)) + payload


def chunk(tag: bytes, payload: bytes = b"") -> bytes:
    """A bounded chunk: tag, varint(payload length + 1), payload (1.1)."""
    return tag + varint(len(payload) + 1) + payload


def open_chunk(tag: bytes, payload: bytes) -> bytes:
    """An open chunk: length field 0, the payload delimits itself (1.1)."""
    return tag + b"\x00" + payload


def header(
    width: int = 1,
    height: int = 1,
    *,
    features: Iterable[int] = (QUICK,),
    coding: int | None = None,
    sample: int | None = None,
    channels: int | None = 1,
    records: bytes = b"",
) -> bytes:
    """Header bytes (1.0, masked form): version 2, present, [mask], [coding], [sample], [channels],
    width, height, record list. Defaults: a Gray u8 image declaring quick_pixels."""
    present, body = 0, b""
    features = set(features)
    if features:
        present |= 1 << 2
        body += encode_mask(features)
    if coding is not None:
        present |= 1 << 0
        body += bytes([coding])
    if sample is not None:
        present |= 1 << 1
        body += bytes([sample])
    if channels is not None:
        present |= 1 << 3
        body += bytes([channels])
    return bytes([2]) + varint(present) + body + varint(width) + varint(height) + records


def imi(head: bytes, *chunks: bytes) -> bytes:
    """signature, header_len, header, chunks (section 1)."""
    return SIGNATURE + varint(len(head)) + head + b"".join(chunks)


# --- section 2: the quick-pixel DATA payload ----------------------------------------------


def quick_head(
    stripe_rows: int,
    group_cols: int = 0,
    *,
    records: bytes | None = None,
    present: int = H_QUICK,
    lanes: int = 1,
) -> bytes:
    """A quick-pixel lossless head (2, 2.13): present, lanes, stripe_rows, group_cols, then
    (present bit 1, set when ``records`` is given) records_len and the head record list."""
    if records is not None:
        present |= H_RECORDS
    out = varint(present) + bytes([lanes]) + varint(stripe_rows) + varint(group_cols)
    if records is not None:
        out += varint(len(records)) + records
    return out


def unit(body: bytes, *, rid: int = 9, ordinal: int | None = None) -> bytes:
    """A main unit record (2.7), with the leading ordinal of head record 37 when given."""
    prefix = varint(ordinal) if ordinal is not None else b""
    return record(rid, prefix + body)


def raw(pixels: bytes | np.ndarray) -> bytes:
    """A quick unit body in mode 0, raw (2.13): the mode byte, then the samples as is."""
    return b"\x00" + (pixels.tobytes() if isinstance(pixels, np.ndarray) else bytes(pixels))


def raw_units(image: np.ndarray, stripe_rows: int, group_cols: int = 0) -> list[bytes]:
    """The raw unit records of ``image`` (H, W, C), stripe-major then column group (2, 2.3)."""
    height, width = image.shape[:2]
    gw = group_cols or width
    out = []
    for y in range(0, height, stripe_rows):
        for x in range(0, width, gw):
            tile = np.ascontiguousarray(image[y : y + stripe_rows, x : x + gw])
            out.append(unit(raw(tile.astype(tile.dtype.newbyteorder("<")))))
    return out


def hint(spans: Sequence[int]) -> bytes:
    """Head record 10, the unit table hint: one varint per main record's span (2.7)."""
    return record(10, b"".join(varint(s) for s in spans))


def reservation(state: int, *, width: int | None = None, spans: Sequence[int] = (), padding: int = 0) -> bytes:
    """Head record 12 (2.7): state, then (state 2) width and the spans, else zero padding."""
    body = bytes([state])
    if width is not None:
        body += bytes([width]) + b"".join(s.to_bytes(width, "little") for s in spans)
    return record(12, body + bytes(padding))


def uidx(spans: Sequence[int], data_len: int, *, chunk_len: int | None = None) -> bytes:
    """A uIDX chunk (2.7): spans varints, data_len u64, chunk_len u64, "uIDX"."""
    body = b"".join(varint(s) for s in spans) + data_len.to_bytes(8, "little")
    payload_len = len(body) + 8 + 4
    size = 4 + len(varint(payload_len + 1)) + payload_len
    return chunk(b"uIDX", body + (size if chunk_len is None else chunk_len).to_bytes(8, "little") + b"uIDX")


def gray_file(image: np.ndarray, stripe_rows: int, group_cols: int = 0, *, head_records: bytes | None = None,
              before: bytes = b"", after: bytes = b"", features: Iterable[int] = (QUICK,)) -> bytes:
    """A complete Gray u8 file of raw units (``image`` is (H, W) uint8)."""
    height, width = image.shape
    units = raw_units(image[:, :, None], stripe_rows, group_cols)
    payload = quick_head(stripe_rows, group_cols, records=head_records) + b"".join(units)
    return imi(header(width, height, features=features), before, chunk(b"DATA", payload), after)


def ramp(height: int, width: int) -> np.ndarray:
    """A (H, W) uint8 image whose every pixel differs from its neighbors."""
    return (np.arange(height * width, dtype=np.uint32).reshape(height, width) * 7 + 3).astype(np.uint8)


# --- 1.4: cSUM ----------------------------------------------------------------------------


def csum_payload(covered: bytes, k: int, *, width: int = 8, algo: int = 0) -> bytes:
    """A cSUM payload (1.4): algo, width, k, covered_len, XXH3-64 digests of 2^k-byte pieces."""
    digests = b""
    for i in range(0, len(covered), 1 << k):
        d = xxhash.xxh3_64_intdigest(covered[i : i + (1 << k)])
        digests += (d & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    return bytes([algo, width, k]) + varint(len(covered)) + digests


def with_csum(parts: Sequence[bytes], at: int, k: int, **options) -> bytes:
    """Join ``parts`` (signature+header first, then chunks) with a cSUM chunk inserted before
    ``parts[at]``; the digests cover every other byte (1.4 Coverage)."""
    covered = b"".join(parts)
    table = chunk(b"cSUM", csum_payload(covered, k, **options))
    return b"".join(parts[:at]) + table + b"".join(parts[at:])


def checksum_record(k: int) -> bytes:
    """Header record 2 (1.4): id 2, length 1, k."""
    return record(2, bytes([k]))
