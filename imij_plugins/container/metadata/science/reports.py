"""The science records of one image (1.5): each record's report and the rules across records."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from imij_plugins.container.metadata.science._common import MalformedRecord, UnknownRecord
from imij_plugins.container.metadata.science.axes import BIND_CHANNELS, BIND_FRAMES, Axes
from imij_plugins.container.metadata.science.calibration import Calibration
from imij_plugins.container.metadata.science.categories import Categories
from imij_plugins.container.metadata.science.coordinates import Coordinates
from imij_plugins.container.metadata.science.structured import StructuredMetadata
from imij_plugins.registry.chunks import AXES, CALB, CATG, CORD, SMDT, SMDT_MAX

SCIENCE_TAGS: tuple[bytes, ...] = (CALB, AXES, CORD, SMDT, CATG)
_ONCE: tuple[bytes, ...] = (CALB, AXES, CORD, CATG)  # 1.5: "occur at most once"

Record = Calibration | Axes | Coordinates | StructuredMetadata | Categories
Status = Literal["parsed", "unknown", "malformed"]
PARSED: Status = "parsed"
UNKNOWN: Status = "unknown"
MALFORMED: Status = "malformed"

PARSERS: dict[bytes, Callable[[bytes | memoryview], Record]] = {
    CALB: Calibration.from_bytes,
    AXES: Axes.from_bytes,
    CORD: Coordinates.from_bytes,
    SMDT: StructuredMetadata.from_bytes,
    CATG: Categories.from_bytes,
}


@dataclass(frozen=True)
class RecordReport:
    """What became of one science record: parsed (with its value), unknown (skipped) or malformed (with why)."""

    tag: bytes
    status: Status
    value: Record | None = None
    reason: str = ""


def parse_record(tag: bytes, payload: bytes | memoryview) -> RecordReport:
    """Parse one science record on its own, before the cross-record rules."""
    try:
        return RecordReport(tag, PARSED, PARSERS[tag](payload))
    except UnknownRecord as e:
        return RecordReport(tag, UNKNOWN, reason=str(e))
    except MalformedRecord as e:
        return RecordReport(tag, MALFORMED, reason=str(e))


@dataclass(frozen=True)
class ScienceRecords:
    """The science records of one image (or one plane-set target), each with its report."""

    reports: tuple[RecordReport, ...]

    def to_plain(self) -> dict[str, object]:
        """The parsed records and every report as plain dicts, lists and numbers (for JSON-like metadata)."""
        plain = lambda v: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v  # noqa: E731
        return {
            "calibration": plain(self.calibration),
            "axes": plain(self.axes),
            "coordinates": plain(self.coordinates),
            "categories": plain(self.categories),
            "structured": [plain(s) for s in self.structured],
            "reports": [{"tag": r.tag.decode("latin-1"), "status": r.status, "reason": r.reason} for r in self.reports],
        }

    def _one(self, tag: bytes) -> Record | None:
        """The parsed record of a once-only tag, if any."""
        return next((r.value for r in self.reports if r.tag == tag and r.status == PARSED), None)

    @property
    def calibration(self) -> Calibration | None:
        """The parsed cALB, if one was parsed."""
        return self._one(CALB)  # type: ignore[return-value]

    @property
    def axes(self) -> Axes | None:
        """The parsed aXES, if one was parsed."""
        return self._one(AXES)  # type: ignore[return-value]

    @property
    def coordinates(self) -> Coordinates | None:
        """The parsed cORD, if one was parsed."""
        return self._one(CORD)  # type: ignore[return-value]

    @property
    def categories(self) -> Categories | None:
        """The parsed cATG, if one was parsed."""
        return self._one(CATG)  # type: ignore[return-value]

    @property
    def structured(self) -> tuple[StructuredMetadata, ...]:
        """Every parsed sMDT, in file order."""
        return tuple(r.value for r in self.reports if r.tag == SMDT and r.status == PARSED)  # type: ignore[misc]


def cross_check(
    reports: Sequence[RecordReport], channels: int, *, plane_set: bool = False, from_defaults: Sequence[bool] = ()
) -> ScienceRecords:
    """Apply the 1.5 rules between records; a record that breaks one becomes malformed.

    When a rule is broken by a set of records (a repeated tag, a repeated schema id, more than 64
    sMDT), every record of the set is malformed: the spec names none of them as the valid one.
    ``from_defaults[i]`` marks a plane-set entry that came from target 0.
    """
    out = list(reports)

    def demote(i: int, reason: str) -> None:
        if out[i].status == PARSED:
            out[i] = RecordReport(out[i].tag, MALFORMED, reason=reason)

    def parsed(tag: bytes) -> list[int]:
        return [i for i, r in enumerate(out) if r.tag == tag and r.status == PARSED]

    by_tag = {tag: [i for i, r in enumerate(out) if r.tag == tag] for tag in SCIENCE_TAGS}
    for tag in _ONCE:  # 1.5: "cALB, aXES, cORD and cATG occur at most once"
        if len(by_tag[tag]) > 1:
            for i in by_tag[tag]:
                demote(i, f"{tag.decode()} occurs {len(by_tag[tag])} times (at most once)")
    if len(by_tag[SMDT]) > SMDT_MAX:  # 1.5: "sMDT occurs at most 64 times"
        for i in by_tag[SMDT]:
            demote(i, f"sMDT occurs {len(by_tag[SMDT])} times (at most {SMDT_MAX})")
    schemas = Counter(out[i].value.schema for i in parsed(SMDT))  # type: ignore[union-attr]
    for i in parsed(SMDT):  # 1.5: "with distinct schema ids"
        if schemas[out[i].value.schema] > 1:  # type: ignore[union-attr]
            demote(i, f"sMDT schema id {out[i].value.schema!r} repeated")  # type: ignore[union-attr]
    for tag in (CALB, CATG):  # 1.5: "count u8 C = the image's channel count"
        for i in parsed(tag):
            count = len(out[i].value.channels)  # type: ignore[union-attr]
            if count != channels:
                demote(i, f"{tag.decode()} count {count}, the image has {channels} channels")
    if plane_set:  # 1.5 plane sets: "no channels or frames bindings"
        for i in parsed(AXES):
            if any(a.binding in (BIND_CHANNELS, BIND_FRAMES) for a in out[i].value.axes):  # type: ignore[union-attr]
                demote(i, "aXES of a plane-set target binds channels or frames")
    for i in by_tag[CORD]:
        if from_defaults and from_defaults[i]:  # 1.5 plane sets: "no cORD for target 0"
            demote(i, "cORD for plane-set target 0")
    _check_coordinates(out, by_tag[AXES], by_tag[CORD], demote)
    cal, cat = parsed(CALB), parsed(CATG)
    if cal and cat:  # 1.5: "A categorical channel with any other slope or offset is malformed"
        cats: Categories = out[cat[0]].value  # type: ignore[assignment]
        for c, entry in enumerate(out[cal[0]].value.channels):  # type: ignore[union-attr]
            if cats.is_categorical(c) and not entry.is_identity:
                demote(cal[0], f"cALB channel {c} is categorical (cATG) but its slope/offset is not 1/0")
                break
    return ScienceRecords(tuple(out))


def _check_coordinates(
    out: list[RecordReport], axes_at: list[int], cord_at: list[int], demote: Callable[[int, str], None]
) -> None:
    """1.5: a cORD needs an aXES with K coordinate-bound axes; one whose aXES was skipped is skipped too."""
    for i in cord_at:
        if out[i].status != PARSED:
            continue
        states = [out[j].status for j in axes_at]
        if not states:  # 1.5: "A cORD without an aXES ... is malformed"
            demote(i, "cORD without an aXES")
        elif all(s == UNKNOWN for s in states):  # 1.5: "A reader skips ... a cORD whose aXES it skipped"
            out[i] = RecordReport(CORD, UNKNOWN, reason="its aXES was skipped")
        elif states == [PARSED]:
            k, want = len(out[i].value.values), out[axes_at[0]].value.coordinate_axes  # type: ignore[union-attr]
            if k != want:  # 1.5: "or whose K differs from that record's number of coordinate-bound axes"
                demote(i, f"cORD K = {k}, its aXES has {want} coordinate-bound axes")
        else:
            demote(i, "cORD whose aXES is malformed")


def science_records(chunks: Sequence[tuple[bytes, bytes | memoryview]], channels: int) -> ScienceRecords:
    """The science records among an image's ``(tag, payload)`` chunks, checked against each other (1.5).

    ``channels`` is the image's channel count (the header layout's, 1..=4). Other tags are ignored.
    """
    return cross_check([parse_record(tag, p) for tag, p in chunks if tag in PARSERS], channels)


def science_chunks(
    channels: int,
    *,
    calibration: Calibration | None = None,
    axes: Axes | None = None,
    coordinates: Coordinates | None = None,
    categories: Categories | None = None,
    structured: Sequence[StructuredMetadata] = (),
) -> list[tuple[bytes, bytes]]:
    """The ``(tag, payload)`` chunks for an image's science records; a set a reader would report is a ValueError."""
    chunks = [
        (tag, record.to_bytes())
        for tag, record in ((CALB, calibration), (AXES, axes), (CORD, coordinates), (CATG, categories))
        if record is not None
    ] + [(SMDT, s.to_bytes()) for s in structured]
    bad = [r for r in science_records(chunks, channels).reports if r.status != PARSED]
    if bad:
        raise ValueError(f"science records: {bad[0].reason}")
    return chunks
