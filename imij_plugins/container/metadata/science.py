"""Science records (1.5): cALB, aXES, cORD, sMDT and cATG, their cross-record rules, and the plane-set attachment.

Each record type parses from and writes to its chunk payload. A parse raises ``UnknownRecord`` for a
record the reader skips (an unknown version, an sMDT of unknown format) and ``MalformedRecord`` for any
other violation; ``science_records`` turns both into per-record reports, because a malformed record
never fails an image decode (1.5).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from imij_plugins.container.metadata._fields import (
    I64_MAX,
    I64_MIN,
    check_finite,
    check_text,
    encode_f64,
    encode_text,
    encode_zigzag,
    errors_as,
    read_f64,
    read_text,
    read_zigzag,
)
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.registry.chunks import AXES, CALB, CATG, CORD, SMDT, SMDT_MAX, is_valid_tag
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

VERSION = 1  # 1.5: "this section defines version 1"
SCIENCE_TAGS: tuple[bytes, ...] = (CALB, AXES, CORD, SMDT, CATG)
_ONCE: tuple[bytes, ...] = (CALB, AXES, CORD, CATG)  # 1.5: "occur at most once"
MAX_CHANNELS = 4  # 1.5 cALB / cATG count: 1..=4


class MalformedRecord(Corrupt):
    """A science record that breaks the 1.5 grammar or rules: reported as malformed, never fatal to a decode."""


class UnknownRecord(Unsupported):
    """A science record the reader skips (1.5): an unknown version, or an sMDT of unknown format."""


def _start(payload: bytes | memoryview, tag: bytes) -> Cursor:
    """A cursor past the version byte; an unknown version is skipped (1.5)."""
    cur = Cursor(payload, what=tag.decode())
    version = cur.u8("version")
    if version != VERSION:  # 1.5: "A reader skips a record whose version it does not know"
        raise UnknownRecord(f"{tag.decode()} version {version}")
    return cur


def _check_flags(flags: int, known: int, what: str) -> None:
    """1.5: a reserved flag bit set makes the record malformed."""
    if flags & ~known:
        raise ValueError(f"{what}: reserved flag bits 0x{flags & ~known:x} set")


def _check_count(n: int, lo: int, hi: int, what: str, field_name: str) -> None:
    """A count within ``lo ..= hi``."""
    if not lo <= n <= hi:
        raise ValueError(f"{what}: {field_name} {n} outside {lo}..={hi}")


# --- cALB --------------------------------------------------------------------------------------

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
        _check_count(len(self.nodata), 0, MAX_NODATA, w, "nodata_n")  # 1.5: "0..=16"
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
        _check_flags(flags, _CALB_FLAGS, "cALB")
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
        _check_count(len(self.channels), 1, MAX_CHANNELS, "cALB", "count")  # 1.5: "C ... (1..=4)"

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> Calibration:
        """Parse a cALB payload (UnknownRecord or MalformedRecord on failure)."""
        with errors_as(MalformedRecord):
            cur = _start(payload, CALB)
            channels = tuple(ChannelCalibration.read(cur) for _ in range(cur.u8("count")))
            cur.expect_end("trailing bytes")  # 1.5: trailing bytes make the record malformed
            return cls(channels)

    def to_bytes(self) -> bytes:
        """The version 1 payload."""
        return bytes([VERSION, len(self.channels)]) + b"".join(c.to_bytes() for c in self.channels)


# --- aXES --------------------------------------------------------------------------------------

_PIXEL_IS_AREA, _AFFINE, _METHOD = 1, 2, 4  # 1.5 aXES flags; "bits 3 and up: reserved, 0"
KIND_SPACE, KIND_TIME, KIND_CHANNEL, KIND_OTHER = 0, 1, 2, 3
BIND_COORDINATE, BIND_COLUMNS, BIND_ROWS, BIND_CHANNELS, BIND_FRAMES = 0, 1, 2, 3, 4
MAX_AXES = 32
MAX_LEVELS = 64


@dataclass(frozen=True)
class Axis:
    """One aXES axis; ``type`` is a custom type, written for kind 3 (other) only."""

    name: str
    kind: int
    binding: int
    unit: str = ""  # UDUNITS-2; empty: none
    type: str = ""  # kind 3 only; empty: unspecified

    def __post_init__(self) -> None:
        w = "aXES"
        check_text(self.name, w, "axis name", 1, 256)  # 1.5: name "1..=256 bytes"
        if self.kind not in (KIND_SPACE, KIND_TIME, KIND_CHANNEL, KIND_OTHER):  # 1.5: kind 0..3
            raise ValueError(f"{w}: axis {self.name!r} kind {self.kind}")
        check_text(self.type, w, "axis type", 0, 256)  # 1.5: type "0..=256 bytes"
        if self.type and self.kind != KIND_OTHER:  # 1.5: type "(kind 3 only)"
            raise ValueError(f"{w}: axis {self.name!r} has a type but kind {self.kind}")
        if not BIND_COORDINATE <= self.binding <= BIND_FRAMES:  # 1.5: binding 0..4
            raise ValueError(f"{w}: axis {self.name!r} binding {self.binding}")
        check_text(self.unit, w, "axis unit", 0, 256)  # 1.5: unit "0..=256 bytes"

    @classmethod
    def read(cls, cur: Cursor) -> Axis:
        """One axis, in the 1.5 field order."""
        name = read_text(cur, "axis name")
        kind = cur.u8("axis kind")
        axis_type = read_text(cur, "axis type") if kind == KIND_OTHER else ""
        binding = cur.u8("axis binding")
        return cls(name, kind, binding, read_text(cur, "axis unit"), axis_type)

    def to_bytes(self) -> bytes:
        """The axis's bytes."""
        axis_type = encode_text(self.type) if self.kind == KIND_OTHER else b""
        return encode_text(self.name) + bytes([self.kind]) + axis_type + bytes([self.binding]) + encode_text(self.unit)


@dataclass(frozen=True)
class AxisLevel:
    """One level's transform: u = scale * i + translation, element by element (1.5)."""

    scale: tuple[float, ...]
    translation: tuple[float, ...]


@dataclass(frozen=True)
class Axes:
    """aXES (1.5): the axes, per-level transforms, optional affine and the pixel convention."""

    axes: tuple[Axis, ...]
    levels: tuple[AxisLevel, ...] = ()
    pixel_is_area: bool = False
    method: str | None = None  # how lower levels were made
    affine: tuple[float, ...] | None = None  # N x (N + 1), row-major

    def __post_init__(self) -> None:
        w = "aXES"
        n = len(self.axes)
        _check_count(n, 2, MAX_AXES, w, "N")  # 1.5: "2..=32 axes"
        names = [a.name for a in self.axes]
        if len(set(names)) != n:  # 1.5: "unique within the record"
            raise ValueError(f"{w}: axis names are not unique")
        bound = Counter(a.binding for a in self.axes)
        # 1.5: "Exactly one axis is bound to columns and one to rows"
        if bound[BIND_COLUMNS] != 1 or bound[BIND_ROWS] != 1:
            raise ValueError(f"{w}: {bound[BIND_COLUMNS]} column axes and {bound[BIND_ROWS]} row axes, need one each")
        # 1.5: "at most one to channels and at most one to frames"
        if bound[BIND_CHANNELS] > 1 or bound[BIND_FRAMES] > 1:
            raise ValueError(f"{w}: more than one axis bound to channels or to frames")
        _check_count(len(self.levels), 0, MAX_LEVELS, w, "L")  # 1.5: "0..=64 levels"
        for k, level in enumerate(self.levels):
            if len(level.scale) != n or len(level.translation) != n:
                raise ValueError(f"{w}: level {k} needs {n} scales and {n} translations")
            for s in level.scale:
                check_finite(s, w, f"level {k} scale")  # 1.5: scale "finite, nonzero"
                if s == 0:
                    raise ValueError(f"{w}: level {k} scale is zero")
            for t in level.translation:
                check_finite(t, w, f"level {k} translation")  # 1.5: translation "finite"
        if self.method is not None:
            check_text(self.method, w, "method", 1, 256)  # 1.5: method "1..=256 bytes"
        if self.affine is not None:
            if len(self.affine) != n * (n + 1):  # 1.5: "f64 x N(N+1)"
                raise ValueError(f"{w}: affine has {len(self.affine)} values, expected {n * (n + 1)}")
            for v in self.affine:
                check_finite(v, w, "affine value")  # 1.5: affine "finite"

    @property
    def coordinate_axes(self) -> int:
        """How many axes are coordinate-bound: the K a cORD must have (1.5)."""
        return sum(a.binding == BIND_COORDINATE for a in self.axes)

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> Axes:
        """Parse an aXES payload (UnknownRecord or MalformedRecord on failure)."""
        with errors_as(MalformedRecord):
            cur = _start(payload, AXES)
            flags = cur.varint("flags")
            _check_flags(flags, _PIXEL_IS_AREA | _AFFINE | _METHOD, "aXES")  # 1.5: "bits 3 and up: reserved, 0"
            n = cur.u8("N")
            axes = tuple(Axis.read(cur) for _ in range(n))
            count = cur.varint("L")
            # 1.5: L "0..=64", checked here as well: with N = 0 a level has no bytes, so L must not drive the loop
            _check_count(count, 0, MAX_LEVELS, "aXES", "L")
            levels = tuple(
                AxisLevel(
                    tuple(read_f64(cur, "scale") for _ in range(n)),
                    tuple(read_f64(cur, "translation") for _ in range(n)),
                )
                for _ in range(count)
            )
            method = read_text(cur, "method") if flags & _METHOD else None  # 1.5: method before affine
            affine = tuple(read_f64(cur, "affine") for _ in range(n * (n + 1))) if flags & _AFFINE else None
            cur.expect_end("trailing bytes")
            return cls(axes, levels, bool(flags & _PIXEL_IS_AREA), method, affine)

    def to_bytes(self) -> bytes:
        """The version 1 payload; levels must follow the writer rule for non-raster axes (1.5)."""
        for i, axis in enumerate(self.axes):
            transforms = {(lv.scale[i], lv.translation[i]) for lv in self.levels}
            if axis.binding not in (BIND_COLUMNS, BIND_ROWS) and len(transforms) > 1:
                # 1.5: "Writers keep the scale and translation of every non-raster axis equal across levels"
                raise ValueError(f"aXES: axis {axis.name!r} is not raster-bound but its levels differ")
        flags = (
            (_PIXEL_IS_AREA if self.pixel_is_area else 0)
            | (_AFFINE if self.affine is not None else 0)
            | (_METHOD if self.method is not None else 0)
        )
        out = bytearray([VERSION]) + encode_varint(flags) + bytes([len(self.axes)])
        for axis in self.axes:
            out += axis.to_bytes()
        out += encode_varint(len(self.levels))
        for level in self.levels:
            out += b"".join(encode_f64(v) for v in level.scale + level.translation)
        if self.method is not None:
            out += encode_text(self.method)
        if self.affine is not None:
            out += b"".join(encode_f64(v) for v in self.affine)
        return bytes(out)


# --- cORD --------------------------------------------------------------------------------------

MAX_COORDINATES = 32


@dataclass(frozen=True)
class Coordinates:
    """cORD (1.5): one signed index per coordinate-bound axis of the aXES, in axis order."""

    values: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_count(len(self.values), 1, MAX_COORDINATES, "cORD", "K")  # 1.5: K "1..=32"
        if not all(I64_MIN <= v <= I64_MAX for v in self.values):  # zigzag holds a signed 64-bit value
            raise ValueError("cORD: a value is not a signed 64-bit integer")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> Coordinates:
        """Parse a cORD payload (UnknownRecord or MalformedRecord on failure)."""
        with errors_as(MalformedRecord):
            cur = _start(payload, CORD)
            values = tuple(read_zigzag(cur, "value") for _ in range(cur.varint("K")))  # the payload bounds the loop
            cur.expect_end("trailing bytes")
            return cls(values)

    def to_bytes(self) -> bytes:
        """The version 1 payload."""
        return bytes([VERSION]) + encode_varint(len(self.values)) + b"".join(encode_zigzag(v) for v in self.values)


# --- sMDT --------------------------------------------------------------------------------------

FORMAT_TEXT, FORMAT_JSON, FORMAT_CBOR = 0, 1, 2  # 1.5 sMDT format
MAX_SCHEMA = 64
_NEW_BODY = (
    "sMDT: writing a new body is not supported: the body is a pack record whose format is defined in "
    "docs/METADATA_COMPRESSION.md, which this package does not have; only a body read from a file is carried through"
)


@dataclass(frozen=True)
class StructuredMetadata:
    """sMDT (1.5): a schema id, a format and the body, an opaque pack record carried through as read."""

    format: int
    schema: str
    body: bytes
    _read_body: bytes | None = field(default=None, repr=False, compare=False)  # the body this record was read with

    def __post_init__(self) -> None:
        if self.format not in (FORMAT_TEXT, FORMAT_JSON, FORMAT_CBOR):  # 1.5: format 0, 1, 2
            raise ValueError(f"sMDT: format {self.format}")
        # 1.5: schema "1..=64 bytes of printable ASCII without space (0x21..=0x7E)"
        if not 1 <= len(self.schema) <= MAX_SCHEMA or not all("\x21" <= c <= "\x7e" for c in self.schema):
            raise ValueError(f"sMDT: schema id {self.schema!r} is not 1..=64 printable ASCII bytes without space")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> StructuredMetadata:
        """Parse an sMDT payload; an unknown format is skipped like an unknown version (1.5)."""
        with errors_as(MalformedRecord):
            cur = _start(payload, SMDT)
            fmt = cur.u8("format")
            if fmt > FORMAT_CBOR:  # 1.5: "A reader skips ... an sMDT whose format it does not know"
                raise UnknownRecord(f"sMDT format {fmt}")
            schema = read_text(cur, "schema")
            body = bytes(cur.take(cur.remaining()))  # 1.5: "a pack record ... to the end of the payload"
            return cls(fmt, schema, body, body)

    def to_bytes(self) -> bytes:
        """The version 1 payload: only a body read from a file can be written (Unsupported otherwise)."""
        if self.body != self._read_body:
            raise Unsupported(_NEW_BODY)
        return bytes([VERSION, self.format]) + encode_text(self.schema) + self.body


# --- cATG --------------------------------------------------------------------------------------

_WIDE = 1  # 1.5 cATG flags bit 0: 16-bit color components; "bits 1 and up: reserved, 0"
_COLOR, _NAME, _DESCRIPTION = 1, 2, 4  # 1.5 eflags; "bits 3 and up: reserved, 0"
MAX_CATEGORIES = 65_536


@dataclass(frozen=True)
class Category:
    """One category: its stored value and optional RGBA color, name and description."""

    value: int
    color: tuple[int, int, int, int] | None = None  # straight alpha, components of the record's width
    name: str | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if not I64_MIN <= self.value <= I64_MAX:  # zigzag holds a signed 64-bit value
            raise ValueError(f"cATG: value {self.value} is not a signed 64-bit integer")
        if self.color is not None and (len(self.color) != 4 or min(self.color) < 0):
            raise ValueError(f"cATG: color {self.color} is not 4 components")
        if self.name is not None:
            check_text(self.name, "cATG", "name", 1, 256)  # 1.5: name "1..=256 bytes"
        if self.description is not None:
            check_text(self.description, "cATG", "description", 1, 1024)  # 1.5: description "1..=1024 bytes"

    @classmethod
    def read(cls, cur: Cursor, wide: bool) -> Category:
        """One entry, in the 1.5 field order."""
        value = read_zigzag(cur, "value")
        eflags = cur.varint("eflags")
        _check_flags(eflags, _COLOR | _NAME | _DESCRIPTION, "cATG")
        size = 2 if wide else 1
        color = tuple(cur.uint_le(size, "color") for _ in range(4)) if eflags & _COLOR else None
        name = read_text(cur, "name") if eflags & _NAME else None
        description = read_text(cur, "description") if eflags & _DESCRIPTION else None
        return cls(value, color, name, description)  # type: ignore[arg-type]

    def to_bytes(self, wide: bool) -> bytes:
        """The entry's bytes, colors in 8- or 16-bit components."""
        eflags = (
            (_COLOR if self.color is not None else 0)
            | (_NAME if self.name is not None else 0)
            | (_DESCRIPTION if self.description is not None else 0)
        )
        out = bytearray(encode_zigzag(self.value) + encode_varint(eflags))
        if self.color is not None:
            out += b"".join(c.to_bytes(2 if wide else 1, "little") for c in self.color)
        for text in (self.name, self.description):
            if text is not None:
                out += encode_text(text)
        return bytes(out)


@dataclass(frozen=True)
class Categories:
    """cATG (1.5): per channel, the categories of its stored values (empty: not categorical)."""

    channels: tuple[tuple[Category, ...], ...]
    wide: bool = False  # 16-bit color components

    def __post_init__(self) -> None:
        _check_count(len(self.channels), 1, MAX_CHANNELS, "cATG", "count")  # 1.5: "C ... (1..=4)"
        limit = 0xFFFF if self.wide else 0xFF
        for c, cats in enumerate(self.channels):
            _check_count(len(cats), 0, MAX_CATEGORIES, "cATG", f"channel {c} n")  # 1.5: n "0..=65536"
            values = [cat.value for cat in cats]
            if any(a >= b for a, b in zip(values, values[1:])):  # 1.5: "in strictly increasing value order"
                raise ValueError(f"cATG: channel {c} values not strictly increasing")
            if any(cat.color is not None and max(cat.color) > limit for cat in cats):
                raise ValueError(f"cATG: channel {c} has a color component above {limit}")
        if not any(self.channels):  # 1.5: "At least one channel has a category"
            raise ValueError("cATG: no channel has a category")

    def is_categorical(self, channel: int) -> bool:
        """Whether ``channel`` has categories (1.5: n = 0 means the channel is not categorical)."""
        return bool(self.channels[channel])

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> Categories:
        """Parse a cATG payload (UnknownRecord or MalformedRecord on failure)."""
        with errors_as(MalformedRecord):
            cur = _start(payload, CATG)
            flags = cur.varint("flags")
            _check_flags(flags, _WIDE, "cATG")
            wide = bool(flags & _WIDE)
            channels = tuple(
                tuple(Category.read(cur, wide) for _ in range(cur.varint("n")))  # the payload bounds the loop
                for _ in range(cur.u8("count"))
            )
            cur.expect_end("trailing bytes")
            return cls(channels, wide)

    def to_bytes(self) -> bytes:
        """The version 1 payload; 16-bit components only when some component is not v8 * 257 (1.5)."""
        components = [v for cats in self.channels for cat in cats if cat.color is not None for v in cat.color]
        if self.wide and all(v % 257 == 0 for v in components):
            # 1.5: "writers use 8-bit components when every component of the record is such a multiple"
            raise ValueError("cATG: every 16-bit component is a multiple of 257; write 8-bit components")
        out = bytearray([VERSION]) + encode_varint(_WIDE if self.wide else 0) + bytes([len(self.channels)])
        for cats in self.channels:
            out += encode_varint(len(cats)) + b"".join(cat.to_bytes(self.wide) for cat in cats)
        return bytes(out)


# --- reports and the cross-record rules --------------------------------------------------------

Record = Calibration | Axes | Coordinates | StructuredMetadata | Categories
Status = Literal["parsed", "unknown", "malformed"]
PARSED: Status = "parsed"
UNKNOWN: Status = "unknown"
MALFORMED: Status = "malformed"

_PARSERS: dict[bytes, Callable[[bytes | memoryview], Record]] = {
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
        return RecordReport(tag, PARSED, _PARSERS[tag](payload))
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


def _cross_check(
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
    return _cross_check([parse_record(tag, p) for tag, p in chunks if tag in _PARSERS], channels)


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


# --- plane sets --------------------------------------------------------------------------------


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
        return _cross_check(reports, 1, plane_set=True, from_defaults=[True] * len(own))  # type: ignore[arg-type]

    def plane(self, k: int) -> ScienceRecords:
        """Plane k's effective records: per tag its own entries if it has any, else the defaults' (1.5)."""
        if not 0 <= k < self.plane_count:
            raise IndexError(f"plane {k} of {self.plane_count}")
        own = self._records(k + 1)
        own_tags = {self.entries[i].tag for i in own}
        inherited = [i for i in self._records(0) if self.entries[i].tag not in own_tags]
        reports = [self.parsed[i] for i in own + inherited]
        from_defaults = [False] * len(own) + [True] * len(inherited)
        return _cross_check(reports, 1, plane_set=True, from_defaults=from_defaults)  # type: ignore[arg-type]


def plane_set_records(data: bytes | memoryview, plane_count: int) -> PlaneSetRecords:
    """Parse a plane set's science attachment; framing errors and out-of-range targets are MalformedRecord."""
    entries = read_attachment(data)
    for e in entries:
        if e.target > plane_count:  # 1.5: "k + 1: plane k (< plane count)"
            raise MalformedRecord(f"science attachment: target {e.target}, the plane set has {plane_count} planes")
    # 1.5: "skip other tags"
    parsed = tuple(parse_record(e.tag, e.payload) if e.tag in _PARSERS else None for e in entries)
    return PlaneSetRecords(plane_count, entries, parsed)


__all__ = [
    "Axes",
    "Axis",
    "AxisLevel",
    "AttachmentEntry",
    "Calibration",
    "Categories",
    "Category",
    "ChannelCalibration",
    "Coordinates",
    "MalformedRecord",
    "PlaneSetRecords",
    "RecordReport",
    "ScienceRecords",
    "StructuredMetadata",
    "UnknownRecord",
    "encode_attachment",
    "parse_record",
    "plane_set_records",
    "read_attachment",
    "science_chunks",
    "science_records",
]
