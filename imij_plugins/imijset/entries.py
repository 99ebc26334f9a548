"""Archive entries: the cached summary of an image, index keys for CICP and filenames, and ``Entry``.

Summaries are caller-supplied cached descriptions, never an image's authority: ``describe`` reads
only an IMI file's header and reports every other blob as opaque (zeros).
"""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.container.file import SIGNATURE
from imij_plugins.container.header import read_header
from imij_plugins.errors import ImijError
from imij_plugins.imijset.columns import uvarint
from imij_plugins.imijset.metadata import AttributeValue, Metadata
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import read_varint

CICP = tuple[int, int, int, int]


@dataclass(frozen=True)
class Summary:
    """Leaf column 6: declared width, height, channel layout, sample type, coding, feature-mask low 64 bits."""

    width: int = 0
    height: int = 0
    channels: int = 0
    sample: int = 0
    coding: int = 0
    features: int = 0

    def encode(self) -> bytes:
        """Index pages: "width and height unsigned LEB128 (u32), channels/sample/coding each u8, known
        feature-mask low 64 bits unsigned LEB128"."""
        return (
            uvarint(self.width)
            + uvarint(self.height)
            + bytes((self.channels, self.sample, self.coding))
            + uvarint(self.features)
        )


OPAQUE = Summary()  # Index pages: "Zero dimensions represent opaque/unknown content."
OPAQUE_BYTES = OPAQUE.encode()


@dataclass(frozen=True)
class Description:
    """What a writer records about one blob besides its bytes and metadata."""

    summary: Summary = OPAQUE
    cicp: CICP | None = None
    image_count: int = 0
    prefix_hint: int = 0


OPAQUE_DESCRIPTION = Description()


def describe(blob: bytes, image_count: int = 0) -> Description:
    """The summary an IMI file's header declares; any other blob (or a header that fails) is opaque.

    The prefix hint is the length of signature, header_len and header: the bytes a reader fetches
    to re-check the summary against the image's own header.
    """
    if blob[:8] != SIGNATURE:
        return OPAQUE_DESCRIPTION
    try:
        header_len, pos = read_varint(blob, len(SIGNATURE), len(blob), "header_len")
        if header_len > len(blob) - pos:
            return OPAQUE_DESCRIPTION
        header = read_header(Cursor(blob, pos, pos + header_len, "header"))
    except ImijError:
        return OPAQUE_DESCRIPTION
    features = sum(1 << f for f in header.mask if f < 64)
    summary = Summary(header.width, header.height, header.channels, header.sample, header.coding, features)
    return Description(summary, header.effective_cicp, image_count, pos + header_len)


def cicp_key(cicp: CICP | None) -> int:
    """Index pages: "Key zero means absent CICP; a present value is one plus the little-endian u32 formed
    from primaries, transfer, matrix and full-range 0/1 bytes"."""
    return 0 if cicp is None else 1 + int.from_bytes(bytes(cicp), "little")


def filename_key(filename: str | bytes | None) -> int:
    """Index pages: "A key is the first 16 bytes of the UTF-8 filename, zero-padded on the right; absent
    filename has key zero" (a big-endian u128)."""
    if filename is None:
        return 0
    data = filename.encode("utf-8") if isinstance(filename, str) else filename
    return int.from_bytes(data[:16].ljust(16, b"\x00"), "big")


@dataclass(frozen=True)
class Entry:
    """One indexed entry as its leaf records it; ``generation`` is the commit that wrote it."""

    key: int
    offset: int
    length: int
    digest: int
    prefix_hint: int
    summary: Summary
    cicp: CICP | None
    image_count: int
    metadata: Metadata
    raw_metadata: bytes
    generation: int

    @property
    def filename(self) -> str | None:
        return self.metadata.filename

    @property
    def attributes(self) -> dict[str, AttributeValue]:
        return self.metadata.as_dict()

    @property
    def description(self) -> Description:
        return Description(self.summary, self.cicp, self.image_count, self.prefix_hint)
