"""The quick-pixel payload writer (2, 2.7, 2.13): head, unit records and the unit table hint."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imij_plugins.payload.geometry import WIDE_GROUP, WIDE_IMAGE, Geometry, even_stripe_rows
from imij_plugins.payload.head import PRESENT_BIT_SMART, PRESENT_QUICK, REC_ORDINALS, write_lossless_head
from imij_plugins.payload.parallel import default_threads, parallel_map
from imij_plugins.payload.quick.unit import MODE_BIT_SMART, encode_quick_unit
from imij_plugins.payload.units import check_unit_table, join_units, record_prefix, unit_table_records
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint

# Quick units (2.13): a quarter of the image, kept within these bounds, so that an image of a
# quarter megapixel (most photos) gets four units that two or more threads share (2.13: units
# decode in any order); each unit's fresh packet state costs a few bytes.
QUICK_UNIT_PIXELS = (1 << 15, 1 << 17)
MIN_STRIPE_ROWS = 16


@dataclass(frozen=True)
class EncodedPayload:
    """A DATA payload and what its header must say about it."""

    payload: bytes
    head_len: int  # bytes of the head, where the first unit record starts
    uses_bit_smart: bool
    uses_ordinals: bool = False
    trailing_index: bytes | None = None  # a uIDX payload, for the file's last chunk (2.7)


def quick_geometry(width: int, height: int, stripe_rows: int | None, group_cols: int | None) -> Geometry:
    """Quick units (2.13): section 5's group default; stripes of a quarter of the image within
    QUICK_UNIT_PIXELS, of even heights, at least MIN_STRIPE_ROWS; explicit options win."""
    if group_cols is None:
        group_cols = WIDE_GROUP if width >= WIDE_IMAGE else 0
    if stripe_rows is None:
        stripe_rows = even_stripe_rows(width, height, group_cols or width, QUICK_UNIT_PIXELS, MIN_STRIPE_ROWS)
    return Geometry(width, height, min(stripe_rows, height), group_cols)


def encode_quick_payload(
    image: np.ndarray,
    geometry: Geometry,
    *,
    bit_smart: bool = True,
    threads: int | None = None,
    unit_table: str = "hint",
    ordinals: bool = False,
) -> EncodedPayload:
    """Code ``image`` (H, W, C), little-endian samples, as quick-pixel units, each its smallest form.

    ``unit_table`` says where the spans go (2.7): "hint" (head record 10, for two or more
    units), "none", a reservation "filled" in place, left "empty", or "tail" (check tail, with
    a trailing uIDX index). ``ordinals`` adds head record 37 and each record's ordinal.
    """
    check_unit_table(unit_table)
    channels, word_bytes = image.shape[2], image.dtype.itemsize

    def unit_record(index: int) -> bytes:
        x, y, w, h = geometry.unit_rect(index)
        pixels = memoryview(np.ascontiguousarray(image[y : y + h, x : x + w])).cast("B")  # a view for full rows
        return encode_quick_unit(pixels, w * h, channels, word_bytes, bit_smart=bit_smart)

    count = geometry.unit_count
    bodies = parallel_map(unit_record, count, threads if threads is not None else default_threads())
    uses_bit_smart = any(b[0] == MODE_BIT_SMART for b in bodies)
    prefixes = [record_prefix(i, len(b), ordinals) for i, b in enumerate(bodies)]  # 2.7: ordinals first
    spans = [len(p) + len(b) for p, b in zip(prefixes, bodies)]
    present = PRESENT_QUICK | (PRESENT_BIT_SMART if uses_bit_smart else 0)
    head_list = [Record(REC_ORDINALS, b"")] if ordinals else []
    head_list += unit_table_records(spans, unit_table)
    head = write_lossless_head(present, 1, geometry, sorted(head_list, key=lambda r: r.id))  # 2.13: lanes 1
    payload = join_units(head, prefixes, bodies)
    trailing = None
    if unit_table == "tail":  # 2.7: spans, then data_len; the container adds chunk_len and the tag
        trailing = b"".join(map(encode_varint, spans)) + len(payload).to_bytes(8, "little")
    return EncodedPayload(payload, len(head), uses_bit_smart, ordinals, trailing)
