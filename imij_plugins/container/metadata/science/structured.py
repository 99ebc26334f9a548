"""sMDT (1.5): structured metadata by schema id and format, its body carried through as read."""

from __future__ import annotations

from dataclasses import dataclass, field

from imij_plugins.container.metadata._fields import (
    encode_text,
    errors_as,
    read_text,
)
from imij_plugins.container.metadata.science._common import VERSION, MalformedRecord, UnknownRecord, start_record
from imij_plugins.errors import Unsupported
from imij_plugins.registry.chunks import SMDT

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
            cur = start_record(payload, SMDT)
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
