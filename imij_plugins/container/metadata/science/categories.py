"""cATG (1.5): per-channel category tables for label images."""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.container.metadata._fields import (
    I64_MAX,
    I64_MIN,
    check_text,
    encode_text,
    encode_zigzag,
    errors_as,
    read_text,
    read_zigzag,
)
from imij_plugins.container.metadata.science._common import (
    MAX_CHANNELS,
    VERSION,
    MalformedRecord,
    check_count,
    check_flags,
    start_record,
)
from imij_plugins.registry.chunks import CATG
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

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
        check_flags(eflags, _COLOR | _NAME | _DESCRIPTION, "cATG")
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
        check_count(len(self.channels), 1, MAX_CHANNELS, "cATG", "count")  # 1.5: "C ... (1..=4)"
        limit = 0xFFFF if self.wide else 0xFF
        for c, cats in enumerate(self.channels):
            check_count(len(cats), 0, MAX_CATEGORIES, "cATG", f"channel {c} n")  # 1.5: n "0..=65536"
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
            cur = start_record(payload, CATG)
            flags = cur.varint("flags")
            check_flags(flags, _WIDE, "cATG")
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
