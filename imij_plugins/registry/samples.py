"""Header enumerations as data (1.0): sample types and channel layouts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SampleType:
    """A header ``sample`` value: its storage width and numeric kind."""

    code: int
    name: str
    bits: int  # storage bits of one sample
    kind: str  # "u" unsigned, "i" two's complement, "f" IEEE float

    @property
    def nbytes(self) -> int:
        return self.bits // 8

    @property
    def dtype(self) -> str:
        """The little-endian numpy dtype string holding this sample exactly."""
        return f"<{self.kind}{self.nbytes}"


@dataclass(frozen=True)
class ChannelLayout:
    """A header ``channels`` value: its name, stored slot count and whether the last slot is alpha."""

    code: int
    name: str
    channels: int
    has_alpha: bool


# 1.0: sample (open field)
SAMPLE_TYPES: dict[int, SampleType] = {
    s.code: s
    for s in (
        SampleType(0, "u8", 8, "u"),
        SampleType(1, "u16", 16, "u"),
        SampleType(2, "f16", 16, "f"),
        SampleType(3, "u32", 32, "u"),
        SampleType(4, "i32", 32, "i"),
        SampleType(5, "f32", 32, "f"),
        SampleType(6, "i8", 8, "i"),
        SampleType(7, "i16", 16, "i"),
        SampleType(8, "u64", 64, "u"),
        SampleType(9, "i64", 64, "i"),
        SampleType(10, "f64", 64, "f"),
    )
}

# 1.0: channels (closed field)
LAYOUTS: dict[int, ChannelLayout] = {
    c.code: c
    for c in (
        ChannelLayout(1, "Gray", 1, False),
        ChannelLayout(2, "GrayAlpha", 2, True),
        ChannelLayout(3, "RGB", 3, False),
        ChannelLayout(4, "RGBA", 4, True),
        ChannelLayout(5, "CMYK", 4, False),
        ChannelLayout(6, "Oklab", 3, False),
        ChannelLayout(7, "OklabAlpha", 4, True),
    )
}

SAMPLE_BY_NAME = {s.name: s for s in SAMPLE_TYPES.values()}
LAYOUT_BY_NAME = {c.name: c for c in LAYOUTS.values()}

SIGNED_SAMPLE_CODES = frozenset({6, 7})  # feature signed_samples (0.1)
WIDE_SAMPLE_CODES = frozenset({8, 9, 10})  # feature wide_samples
SAMPLES_32_CODES = frozenset({3, 4, 5, 8, 9, 10})  # imply samples_32 (0.1)
PIXEL_MODEL_LAYOUTS = frozenset({5, 6, 7})  # feature pixel_models
