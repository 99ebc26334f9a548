"""aXES (1.5): the named axes, their bindings to columns, rows, channels or frames, and their transforms."""

from __future__ import annotations

from collections import Counter
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
    VERSION,
    MalformedRecord,
    check_count,
    check_flags,
    start_record,
)
from imij_plugins.registry.chunks import AXES
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

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
        check_count(n, 2, MAX_AXES, w, "N")  # 1.5: "2..=32 axes"
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
        check_count(len(self.levels), 0, MAX_LEVELS, w, "L")  # 1.5: "0..=64 levels"
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
            cur = start_record(payload, AXES)
            flags = cur.varint("flags")
            check_flags(flags, _PIXEL_IS_AREA | _AFFINE | _METHOD, "aXES")  # 1.5: "bits 3 and up: reserved, 0"
            n = cur.u8("N")
            axes = tuple(Axis.read(cur) for _ in range(n))
            count = cur.varint("L")
            # 1.5: L "0..=64", checked here as well: with N = 0 a level has no bytes, so L must not drive the loop
            check_count(count, 0, MAX_LEVELS, "aXES", "L")
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
