"""Section 0 and 1 primitives: varints, LEB128 feature masks, record lists, bounded cursors, bit I/O."""

from imij_plugins.wire.bits import BitReader, BitWriter
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.mask import decode_mask, encode_mask
from imij_plugins.wire.records import Record, encode_records, read_records
from imij_plugins.wire.varint import MAX_VARINT, encode_varint, read_varint

__all__ = [
    "MAX_VARINT",
    "BitReader",
    "BitWriter",
    "Cursor",
    "Record",
    "decode_mask",
    "encode_mask",
    "encode_records",
    "encode_varint",
    "read_records",
    "read_varint",
]
