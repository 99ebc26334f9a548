"""cORD (1.5): the values of the axes bound to no array dimension."""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.container.metadata._fields import (
    I64_MAX,
    I64_MIN,
    encode_zigzag,
    errors_as,
    read_zigzag,
)
from imij_plugins.container.metadata.science._common import VERSION, MalformedRecord, check_count, start_record
from imij_plugins.registry.chunks import CORD
from imij_plugins.wire.varint import encode_varint

MAX_COORDINATES = 32


@dataclass(frozen=True)
class Coordinates:
    """cORD (1.5): one signed index per coordinate-bound axis of the aXES, in axis order."""

    values: tuple[int, ...]

    def __post_init__(self) -> None:
        check_count(len(self.values), 1, MAX_COORDINATES, "cORD", "K")  # 1.5: K "1..=32"
        if not all(I64_MIN <= v <= I64_MAX for v in self.values):  # zigzag holds a signed 64-bit value
            raise ValueError("cORD: a value is not a signed 64-bit integer")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> Coordinates:
        """Parse a cORD payload (UnknownRecord or MalformedRecord on failure)."""
        with errors_as(MalformedRecord):
            cur = start_record(payload, CORD)
            values = tuple(read_zigzag(cur, "value") for _ in range(cur.varint("K")))  # the payload bounds the loop
            cur.expect_end("trailing bytes")
            return cls(values)

    def to_bytes(self) -> bytes:
        """The version 1 payload."""
        return bytes([VERSION]) + encode_varint(len(self.values)) + b"".join(encode_zigzag(v) for v in self.values)
