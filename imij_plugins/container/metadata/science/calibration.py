"""cALB (1.5): per-channel calibration, the stored-to-physical value transform and its attributes."""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.container.metadata._fields import (
    check_finite,
    check_text,
    encode_f64,
    encode_text,
    errors_as,
    read_f64,
    read_text,
)
from imij_plugins.container.metadata.science._common import (
    MAX_CHANNELS,
    VERSION,
    MalformedRecord,
    check_count,
    check_flags,
    start_record,
)
from imij_plugins.registry.chunks import CALB
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

# 1.5 cALB entry flags
_LINEAR, _UNIT, _QUANTITY, _CF_NAME, _VALID_MIN, _VALID_MAX, _NAN_MISSING, _MASK = (1 << i for i in range(8))
_CALB_FLAGS = 0xFF  # 1.5: "bits 8 and up: reserved, 0"
MAX_NODATA = 16


@dataclass(frozen=True)
class ChannelCalibration:
    """One channel's cALB entry: a field is None (or False, or empty) when its flag bit is clear."""

    slope: float | None = None  # with offset: flag bit 0 (else 1 and 0)
    offset: float | None = None
    unit: str | None = None  # UDUNITS-2
    quantity: str | None = None
    cf_standard_name: bool = False  # the quantity is a CF standard_name
    valid_min: float | None = None
    valid_max: float | None = None
    nan_missing: bool = False
    mask_plane: int | None = None
    nodata: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        w = "cALB"
        if (self.slope is None) != (self.offset is None):
            raise ValueError(f"{w}: slope and offset come together (flag bit 0)")
        if self.slope is not None and self.offset is not None:
            check_finite(self.slope, w, "slope")  # 1.5: slope "finite, nonzero"
            if self.slope == 0:
                raise ValueError(f"{w}: slope is zero")
            check_finite(self.offset, w, "offset")  # 1.5: offset "finite"
        if self.unit is not None:
            check_text(self.unit, w, "unit", 1, 256)  # 1.5: unit "1..=256 bytes"
        if self.quantity is not None:
            check_text(self.quantity, w, "quantity", 1, 256)  # 1.5: quantity "1..=256 bytes"
        elif self.cf_standard_name:  # 1.5: bit 3 "needs bit 2"
            raise ValueError(f"{w}: CF standard_name flag without a quantity")
        for name in ("valid_min", "valid_max"):
            v = getattr(self, name)
            if v is not None and v != v:  # 1.5: valid_min / valid_max "not NaN"
                raise ValueError(f"{w}: {name} is NaN")
        if self.valid_min is not None and self.valid_max is not None and self.valid_max < self.valid_min:
            raise ValueError(f"{w}: valid_max {self.valid_max} < valid_min {self.valid_min}")  # 1.5: ">= valid_min"
        if self.mask_plane is not None and not 0 <= self.mask_plane < 1 << 32:
            raise ValueError(f"{w}: mask plane id {self.mask_plane} not below 2^32")  # 1.5: "plane id, < 2^32"
        check_count(len(self.nodata), 0, MAX_NODATA, w, "nodata_n")  # 1.5: "0..=16"
        if any(v != v for v in self.nodata):
            raise ValueError(f"{w}: a nodata value is NaN")  # 1.5: nodata "not NaN"

    @property
    def flags(self) -> int:
        """The entry's flags varint, from which fields are present."""
        present = (
            (_LINEAR, self.slope is not None),
            (_UNIT, self.unit is not None),
            (_QUANTITY, self.quantity is not None),
            (_CF_NAME, self.cf_standard_name),
            (_VALID_MIN, self.valid_min is not None),
            (_VALID_MAX, self.valid_max is not None),
            (_NAN_MISSING, self.nan_missing),
            (_MASK, self.mask_plane is not None),
        )
        return sum(bit for bit, on in present if on)

    @property
    def is_identity(self) -> bool:
        """Slope 1 and offset 0, stated or by default: what a categorical channel must keep (1.5)."""
        return self.slope is None or (self.slope == 1 and self.offset == 0)

    @classmethod
    def read(cls, cur: Cursor) -> ChannelCalibration:
        """One entry, in the 1.5 field order."""
        flags = cur.varint("flags")
        check_flags(flags, _CALB_FLAGS, "cALB")
        slope = read_f64(cur, "slope") if flags & _LINEAR else None
        offset = read_f64(cur, "offset") if flags & _LINEAR else None
        unit = read_text(cur, "unit") if flags & _UNIT else None
        quantity = read_text(cur, "quantity") if flags & _QUANTITY else None
        valid_min = read_f64(cur, "valid_min") if flags & _VALID_MIN else None
        valid_max = read_f64(cur, "valid_max") if flags & _VALID_MAX else None
        mask = cur.varint("mask") if flags & _MASK else None
        nodata = tuple(read_f64(cur, "nodata") for _ in range(cur.varint("nodata_n")))  # the payload bounds the loop
        return cls(slope, offset, unit, quantity, bool(flags & _CF_NAME), valid_min, valid_max,
                   bool(flags & _NAN_MISSING), mask, nodata)

    def to_bytes(self) -> bytes:
        """The entry's bytes."""
        out = bytearray(encode_varint(self.flags))
        if self.slope is not None and self.offset is not None:
            out += encode_f64(self.slope) + encode_f64(self.offset)
        for text in (self.unit, self.quantity):
            if text is not None:
                out += encode_text(text)
        for bound in (self.valid_min, self.valid_max):
            if bound is not None:
                out += encode_f64(bound)
        if self.mask_plane is not None:
            out += encode_varint(self.mask_plane)
        out += encode_varint(len(self.nodata))
        for v in self.nodata:
            out += encode_f64(v)
        return bytes(out)


@dataclass(frozen=True)
class Calibration:
    """cALB (1.5): calibration, units and missing data of each channel, in channel order."""

    channels: tuple[ChannelCalibration, ...]

    def __post_init__(self) -> None:
        check_count(len(self.channels), 1, MAX_CHANNELS, "cALB", "count")  # 1.5: "C ... (1..=4)"

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> Calibration:
        """Parse a cALB payload (UnknownRecord or MalformedRecord on failure)."""
        with errors_as(MalformedRecord):
            cur = start_record(payload, CALB)
            channels = tuple(ChannelCalibration.read(cur) for _ in range(cur.u8("count")))
            cur.expect_end("trailing bytes")  # 1.5: trailing bytes make the record malformed
            return cls(channels)

    def to_bytes(self) -> bytes:
        """The version 1 payload."""
        return bytes([VERSION, len(self.channels)]) + b"".join(c.to_bytes() for c in self.channels)
