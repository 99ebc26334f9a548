"""gMAP (1.2): the container fields of an ISO 21496-1 gain map; its metadata stays bytes."""

from __future__ import annotations

from dataclasses import dataclass

from imij_plugins.container.metadata._fields import check_cicp, errors_as
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import encode_varint

VERSION = 0
_ALT_CICP, _ALT_ICC = 1, 2  # 1.2 flags: bit 0 alternate CICP, bit 1 alternate ICC


@dataclass(frozen=True)
class GainMap:
    """A gMAP payload: ISO 21496-1 metadata (opaque), the alternate color, and the nested gain map file."""

    metadata: bytes  # ISO 21496-1 binary form, the bare payload
    image: bytes  # a complete nested IMI file
    alt_cicp: tuple[int, int, int, int] | None = None
    alt_icc: bytes | None = None

    def __post_init__(self) -> None:
        if self.alt_cicp is not None:
            check_cicp(self.alt_cicp, "gMAP alternate")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> GainMap:
        """Parse the fields; Unsupported means skip the chunk (1.2), Corrupt a broken field."""
        with errors_as(Corrupt):
            cur = Cursor(payload, what="gMAP")
            version = cur.u8("version")
            if version != VERSION:  # 1.2: "other versions ... skip the chunk"
                raise Unsupported(f"gMAP version {version}: the chunk is skipped")
            metadata = bytes(cur.take(cur.varint("meta_len"), "metadata"))
            flags = cur.u8("flags")
            if flags & ~(_ALT_CICP | _ALT_ICC):  # 1.2 defines bits 0 and 1 only; see SPEC_NOTES
                raise Unsupported(f"gMAP flags 0x{flags:02x}: the chunk is skipped")
            alt_cicp = tuple(cur.take(4, "alt_cicp")) if flags & _ALT_CICP else None
            alt_icc = bytes(cur.take(cur.varint("alt_icc_len"), "alt_icc")) if flags & _ALT_ICC else None
            image = bytes(cur.take(cur.remaining()))  # 1.2: "image rest"
            return cls(metadata, image, alt_cicp, alt_icc)  # type: ignore[arg-type]

    def _head(self) -> bytes:
        """Everything before the nested image."""
        flags = (_ALT_CICP if self.alt_cicp is not None else 0) | (_ALT_ICC if self.alt_icc is not None else 0)
        out = bytes([VERSION]) + encode_varint(len(self.metadata)) + self.metadata + bytes([flags])
        if self.alt_cicp is not None:
            out += bytes(self.alt_cicp)
        if self.alt_icc is not None:
            out += encode_varint(len(self.alt_icc)) + self.alt_icc
        return out

    @property
    def image_range(self) -> tuple[int, int]:
        """The nested file's (start, end) in the payload; encodings are unique, so a read one's is where it was."""
        start = len(self._head())
        return start, start + len(self.image)

    def to_bytes(self) -> bytes:
        """The version 0 payload."""
        return self._head() + self.image
