"""The aNIM control chunk (1.3): kind, loop count, frame count and frame 0's duration."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.registry.features import FeatureId
from imij_plugins.wire.cursor import Cursor

KIND_ANIMATION, KIND_PAGES, KIND_MIXED_PAGES, KIND_SEQUENCE = 1, 2, 3, 4
_GATED_KIND = {KIND_MIXED_PAGES: FeatureId.MIXED_PAGES, KIND_SEQUENCE: FeatureId.SEQUENCE_ITEMS}


@dataclass(frozen=True)
class Animation:
    """A parsed aNIM payload."""

    kind: int
    loop_count: int
    frame_count: int
    duration: Fraction  # frame 0's, in seconds
    presentation: int | None = None  # kind 4 only


def read_duration(cur: Cursor) -> Fraction:
    """1.3: varint num, varint den (> 0), seconds."""
    num = cur.varint("duration numerator")
    den = cur.varint("duration denominator")
    if den == 0:
        raise Corrupt("duration denominator 0")
    return Fraction(num, den)


def read_animation(payload: memoryview, features: frozenset[int]) -> Animation:
    """Parse aNIM (1.3); kinds 3 and 4 are gated by their features, unknown kinds Unsupported."""
    cur = Cursor(payload, what="aNIM")
    kind = cur.u8("kind")
    if kind in _GATED_KIND and _GATED_KIND[kind] not in features:
        raise Corrupt(f"aNIM kind {kind} without feature {_GATED_KIND[kind].name.lower()}")
    if kind not in (KIND_ANIMATION, KIND_PAGES, KIND_MIXED_PAGES, KIND_SEQUENCE):
        raise Unsupported(f"aNIM kind {kind}")  # 1.3 / 0.3: open field
    loop_count = cur.varint("loop_count")
    frame_count = cur.varint("frame_count")
    if frame_count == 0:
        raise Corrupt("aNIM frame_count 0 (frame 0 is DATA)")
    duration = read_duration(cur)
    presentation = None
    if kind == KIND_SEQUENCE:
        presentation = cur.u8("presentation")
        if presentation not in (0, 1):
            raise Unsupported(f"aNIM presentation {presentation}")
    cur.expect_end("trailing bytes after the aNIM fields")
    return Animation(kind, loop_count, frame_count, duration, presentation)
