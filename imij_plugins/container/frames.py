"""Further frames and pages: the fRAM chunk (1.3) and its checks against the outer file."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from imij_plugins.container.animation import (
    KIND_ANIMATION,
    KIND_PAGES,
    KIND_SEQUENCE,
    Animation,
    read_duration,
)
from imij_plugins.container.header import Header
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.records import Record, read_records

USES_PREVIOUS = 1 << 0  # 1.3: fRAM presence bit 0
EMPTY = 1 << 1  # bit 1: repeats the previous frame, no image
HAS_RECORDS = 1 << 2  # bit 2: a frame record list follows
FRAME_REFERENCE = 33  # critical frame record, kind 4 only (feature sequence_items)


@dataclass
class FrameControl:
    """One fRAM's fields; ``image`` is the offset range of its nested file in the outer buffer."""

    x0: int
    y0: int
    duration: Fraction
    present: int
    records: list[Record] = field(default_factory=list)
    image: tuple[int, int] | None = None  # [start, end) of the nested IMI file; None when empty
    reference: tuple[int, int] | None = None  # kind 4 record 33: (earlier item ordinal, its digest)

    @property
    def uses_previous(self) -> bool:
        return bool(self.present & USES_PREVIOUS)

    @property
    def empty(self) -> bool:
        return bool(self.present & EMPTY)


def read_frame_control(buf: bytes | bytearray | memoryview, start: int, end: int, kind: int) -> FrameControl:
    """Parse an fRAM payload at ``[start, end)`` (1.3) of an aNIM of ``kind``."""
    cur = Cursor(buf, start, end, "fRAM")
    x0, y0 = cur.varint("x0"), cur.varint("y0")
    duration = read_duration(cur)
    present = cur.varint("present")
    if present >> 3:  # 1.3: bits 3 and up Unsupported
        raise Unsupported(f"fRAM presence bits 0x{present & ~7:x}")
    frame = FrameControl(x0, y0, duration, present)
    if present & HAS_RECORDS:
        frame.records = read_records(cur.sub(cur.varint("records_len"), "frame records"))
        for rec in frame.records:
            if rec.id == FRAME_REFERENCE:  # 1.3: selects a reference in kind 4 only
                if kind != KIND_SEQUENCE:
                    raise Corrupt("frame record 33 outside a kind-4 sequence")
                frame.reference = _read_reference(rec.payload)
            elif rec.critical:
                raise Unsupported(f"unknown critical frame record {rec.id}")
    if frame.empty:
        if not frame.uses_previous:
            raise Corrupt("empty fRAM without presence bit 0")  # 1.3: bit 1 requires bit 0
        if not cur.at_end():
            raise Corrupt("empty fRAM with an image")
    else:
        if cur.at_end():
            raise Corrupt("fRAM without an image")
        frame.image = (cur.pos, cur.end)
    return frame


def _read_reference(payload: bytes) -> tuple[int, int]:
    """1.3 record 33: a minimal varint earlier-item ordinal, then exactly eight bytes LE digest."""
    cur = Cursor(payload, what="frame record 33")
    ordinal = cur.varint("ordinal")
    digest = cur.uint_le(8, "digest")
    cur.expect_end("trailing bytes")
    return ordinal, digest


def image_info(h: Header) -> tuple:
    """1.3: what animation items and references must share: geometry, format, bits, CICP, alpha mode."""
    return (h.width, h.height, h.sample, h.channels, h.effective_sig_bits, h.effective_cicp, h.alpha_mode)


def check_reference(earlier: Header, current: Header) -> None:
    """1.3 kind 4: a referenced item has the current item's ImageInfo."""
    if image_info(earlier) != image_info(current):
        raise Corrupt("a sequence item references an item with another ImageInfo")


def check_frame(anim: Animation, ordinal: int, frame: FrameControl, nested: Header | None, outer: Header) -> None:
    """1.3 and 0.1: a frame's or page's place, geometry, format and features against the outer file."""
    kind = anim.kind
    if nested is not None and not nested.features <= outer.features:
        extra = sorted(nested.features - outer.features)
        raise Corrupt(f"a frame needs features {extra} the outer header does not declare")  # 0.1
    if kind == KIND_SEQUENCE:  # 1.3: full items at 0, 0, no previous or empty bits
        if frame.x0 or frame.y0 or frame.present & (USES_PREVIOUS | EMPTY) or nested is None:
            raise Corrupt("sequence item with an origin, a previous-frame or empty bit, or no image")
        if frame.reference is not None and frame.reference[0] >= ordinal:
            raise Corrupt(f"sequence item {ordinal} references item {frame.reference[0]} (not earlier)")
        if anim.presentation == 1 and image_info(nested) != image_info(outer):
            raise Corrupt("animation sequence items with differing ImageInfo")
        return
    if kind == KIND_ANIMATION:
        if nested is None:
            return
        if (nested.channels, nested.sample) != (outer.channels, outer.sample):
            raise Corrupt("animation frame with another channel layout or sample type than the canvas")
        if frame.x0 + nested.width > outer.width or frame.y0 + nested.height > outer.height:
            raise Corrupt("animation frame rectangle outside the canvas")
        if not frame.uses_previous and (frame.x0, frame.y0, nested.width, nested.height) != (0, 0, outer.width, outer.height):
            raise Corrupt("intra animation frame does not cover the canvas")  # 1.3
        return
    # pages (kinds 2 and 3): x0 = y0 = 0, neither bit 0 nor bit 1, and an image
    if frame.x0 or frame.y0 or frame.present & (USES_PREVIOUS | EMPTY) or nested is None:
        raise Corrupt("page with an origin, a previous-frame or empty bit, or no image")
    if kind == KIND_PAGES and (nested.channels, nested.sample) != (outer.channels, outer.sample):
        raise Corrupt("uniform page with another channel layout or sample type (mixed pages need kind 3)")
