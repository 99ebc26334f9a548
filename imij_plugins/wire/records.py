"""Record lists (section 1): ``id varint, len varint, payload`` with strictly increasing ids."""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.errors import Corrupt
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint


@dataclass(frozen=True)
class Record:
    """One record: its id and its payload bytes."""

    id: int
    payload: bytes

    @property
    def critical(self) -> bool:
        """Odd ids are critical, even ids ignorable (section 1)."""
        return bool(self.id & 1)


def read_records(cur: Cursor) -> list[Record]:
    """Read a whole record list closed by the cursor's end (section 1).

    Repeated or decreasing ids and a record that overruns the list are Corrupt. Which ids are
    known, and so whether an odd id is Unsupported, is the caller's decision.
    """
    records: list[Record] = []
    last = -1
    while not cur.at_end():
        rid = cur.varint("record id")
        if rid <= last:
            raise Corrupt(f"{cur.what}: record ids not strictly increasing ({rid} after {last})")
        last = rid
        length = cur.varint(f"record {rid} length")
        if length > cur.remaining():
            raise Corrupt(f"{cur.what}: record {rid} overruns its list")
        records.append(Record(rid, bytes(cur.take(length))))
    return records


def encode_records(records: list[Record]) -> bytes:
    """Serialize records, which must already be in strictly increasing id order."""
    out = bytearray()
    last = -1
    for rec in records:
        if rec.id <= last:
            raise ValueError("record ids must strictly increase")
        last = rec.id
        out += encode_varint(rec.id) + encode_varint(len(rec.payload)) + rec.payload
    return bytes(out)
