"""The plane-set science attachment (1.5): per-plane record sets over the defaults."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from imij_plugins.container.metadata._fields import errors_as
from imij_plugins.container.metadata.science._common import MalformedRecord
from imij_plugins.container.metadata.science.reports import (
    PARSED,
    PARSERS,
    RecordReport,
    ScienceRecords,
    cross_check,
    parse_record,
)
from imij_plugins.registry.chunks import is_valid_tag
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint


@dataclass(frozen=True)
class AttachmentEntry:
    """One entry of the plane-set science attachment: target 0 is the defaults, k + 1 plane k."""

    target: int
    tag: bytes
    payload: bytes

    def __post_init__(self) -> None:
        if self.target < 0 or not is_valid_tag(self.tag):  # 1.5: tag "4 bytes ASCII letters"
            raise ValueError(f"science attachment: bad entry (target {self.target}, tag {self.tag!r})")


def read_attachment(data: bytes | memoryview) -> tuple[AttachmentEntry, ...]:
    """The entries of an attachment; broken framing makes the whole attachment malformed."""
    entries = []
    with errors_as(MalformedRecord):
        cur = Cursor(data, what="science attachment")
        while not cur.at_end():  # 1.5: entries "to the end of the attachment"
            target = cur.varint("target")
            tag = bytes(cur.take(4, "tag"))
            length = cur.varint("length")
            if length == 0:  # 1.5: "payload bytes + 1 (>= 1)"
                raise MalformedRecord("science attachment: entry length 0")
            entries.append(AttachmentEntry(target, tag, bytes(cur.take(length - 1, "payload"))))
    return tuple(entries)


def encode_attachment(entries: Sequence[AttachmentEntry], plane_count: int) -> bytes:
    """The attachment bytes; entries a reader would report for their target are a ValueError."""
    data = b"".join(encode_varint(e.target) + e.tag + encode_varint(len(e.payload) + 1) + e.payload for e in entries)
    try:
        records = plane_set_records(data, plane_count)
    except MalformedRecord as e:
        raise ValueError(str(e)) from None
    for target in sorted({0} | {e.target for e in entries}):
        checked = records.defaults if target == 0 else records.plane(target - 1)
        bad = [r for r in checked.reports if r.status != PARSED]
        if bad:
            raise ValueError(f"science attachment target {target}: {bad[0].reason}")
    return data


@dataclass(frozen=True)
class PlaneSetRecords:
    """The science records of a plane set's attachment (1.5 "Plane sets"), per target, with C = 1."""

    plane_count: int
    entries: tuple[AttachmentEntry, ...]
    parsed: tuple[RecordReport | None, ...]  # each entry parsed alone; None for a tag the attachment skips

    def _records(self, target: int) -> list[int]:
        """Indices of ``target``'s science entries."""
        return [i for i, e in enumerate(self.entries) if e.target == target and self.parsed[i] is not None]

    @property
    def defaults(self) -> ScienceRecords:
        """Target 0's entries under the single-image rules with C = 1 (a cORD there is malformed)."""
        own = self._records(0)
        reports = [self.parsed[i] for i in own]
        return cross_check(reports, 1, plane_set=True, from_defaults=[True] * len(own))  # type: ignore[arg-type]

    def plane(self, k: int) -> ScienceRecords:
        """Plane k's effective records: per tag its own entries if it has any, else the defaults' (1.5)."""
        if not 0 <= k < self.plane_count:
            raise IndexError(f"plane {k} of {self.plane_count}")
        own = self._records(k + 1)
        own_tags = {self.entries[i].tag for i in own}
        inherited = [i for i in self._records(0) if self.entries[i].tag not in own_tags]
        reports = [self.parsed[i] for i in own + inherited]
        from_defaults = [False] * len(own) + [True] * len(inherited)
        return cross_check(reports, 1, plane_set=True, from_defaults=from_defaults)  # type: ignore[arg-type]


def plane_set_records(data: bytes | memoryview, plane_count: int) -> PlaneSetRecords:
    """Parse a plane set's science attachment; framing errors and out-of-range targets are MalformedRecord."""
    entries = read_attachment(data)
    for e in entries:
        if e.target > plane_count:  # 1.5: "k + 1: plane k (< plane count)"
            raise MalformedRecord(f"science attachment: target {e.target}, the plane set has {plane_count} planes")
    # 1.5: "skip other tags"
    parsed = tuple(parse_record(e.tag, e.payload) if e.tag in PARSERS else None for e in entries)
    return PlaneSetRecords(plane_count, entries, parsed)
