"""The quick-pixel payload writer (2, 2.7, 2.13): head, unit records and the unit table hint."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from imij_plugins.payload.geometry import Geometry
from imij_plugins.payload.head import PRESENT_BIT_SMART, PRESENT_QUICK, PRESENT_RECORDS, REC_UNIT_TABLE
from imij_plugins.payload.quick.unit import MODE_BIT_SMART, encode_quick_unit
from imij_plugins.payload.units import UNIT_STRIPE
from imij_plugins.wire.records import Record, encode_records
from imij_plugins.wire.varint import encode_varint

WIDE_IMAGE = 8192  # 5: images at least 8192 pixels wide use column groups of 2048
WIDE_GROUP = 2048
UNIT_PIXELS = 1 << 18  # about this many pixels per unit, so stripes decode in parallel


@dataclass(frozen=True)
class EncodedPayload:
    """A DATA payload and what its header must say about it."""

    payload: bytes
    head_len: int  # bytes of the head, where the first unit record starts
    uses_bit_smart: bool


def choose_geometry(width: int, height: int, stripe_rows: int | None = None, group_cols: int | None = None) -> Geometry:
    """Stripe height and column groups: section 5's group default, stripes of about UNIT_PIXELS."""
    if group_cols is None:
        group_cols = WIDE_GROUP if width >= WIDE_IMAGE else 0
    if stripe_rows is None:
        unit_width = group_cols or width
        stripe_rows = max(16, UNIT_PIXELS // unit_width)
    return Geometry(width, height, min(stripe_rows, height), group_cols)


def encode_quick_payload(
    image: np.ndarray, geometry: Geometry, *, bit_smart: bool = True, threads: int | None = None
) -> EncodedPayload:
    """Code ``image`` (H, W, C), little-endian samples, as quick-pixel units, each its smallest form."""
    channels, word_bytes = image.shape[2], image.dtype.itemsize

    def unit_record(index: int) -> bytes:
        x, y, w, h = geometry.unit_rect(index)
        pixels = np.ascontiguousarray(image[y : y + h, x : x + w]).tobytes()
        return encode_quick_unit(pixels, w * h, channels, word_bytes, bit_smart=bit_smart)

    count = geometry.unit_count
    workers = min(count, threads if threads is not None else (os.cpu_count() or 1))
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            bodies = list(pool.map(unit_record, range(count)))
    else:
        bodies = [unit_record(i) for i in range(count)]
    uses_bit_smart = any(b[0] == MODE_BIT_SMART for b in bodies)
    records = [encode_varint(UNIT_STRIPE) + encode_varint(len(b)) + b for b in bodies]
    present = PRESENT_QUICK | (PRESENT_BIT_SMART if uses_bit_smart else 0)
    head_records = b""
    if count >= 2:  # 2.7: writers holding the payload whole write the hint for two or more units
        present |= PRESENT_RECORDS
        hint = b"".join(encode_varint(len(r)) for r in records)
        head_records = encode_records([Record(REC_UNIT_TABLE, hint)])
    head = (
        encode_varint(present)
        + bytes([1])  # 2.13: lanes must be 1
        + encode_varint(geometry.stripe_rows)
        + encode_varint(geometry.group_cols)
        + (encode_varint(len(head_records)) + head_records if present & PRESENT_RECORDS else b"")
    )
    return EncodedPayload(head + b"".join(records), len(head), uses_bit_smart)
