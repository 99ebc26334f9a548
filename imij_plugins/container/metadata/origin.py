"""cORg (1.1.1): the historical color origin, never an active rendering profile."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from imij_plugins.container.metadata._fields import check_cicp, errors_as
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire.cursor import Cursor

VERSION = 1
# 1.1.1 provenance byte
PROVENANCE_ASSUMED, PROVENANCE_ICC, PROVENANCE_CICP, PROVENANCE_LEGACY = 0, 1, 2, 3
# 1.1.1 historical authority byte
AUTHORITY_ICC, AUTHORITY_CICP = 0, 1
# 1.1.1 presence flags
_HAS_ICC, _HAS_CICP = 1, 2


@dataclass(frozen=True)
class ColorOrigin:
    """The source color an image had before any conversion (1.1.1); ``icc=b""`` is an empty present profile."""

    provenance: int
    authority: int
    cicp: tuple[int, int, int, int] | None = None
    icc: bytes | None = None

    def __post_init__(self) -> None:
        if self.provenance not in (PROVENANCE_ASSUMED, PROVENANCE_ICC, PROVENANCE_CICP, PROVENANCE_LEGACY):
            raise ValueError(f"cORg: provenance {self.provenance}")
        if self.authority not in (AUTHORITY_ICC, AUTHORITY_CICP):
            raise ValueError(f"cORg: authority {self.authority}")
        if self.cicp is not None:
            check_cicp(self.cicp, "cORg")  # 1.1.1: "nonboolean range ... Corrupt"

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> ColorOrigin:
        """Parse one payload: malformed bytes are Corrupt, unknown values Unsupported (1.1.1)."""
        with errors_as(Corrupt):  # 1.1.1: truncation is Corrupt
            cur = Cursor(payload, what="cORg")
            version = cur.u8("version")
            if version != VERSION:  # 1.1.1: "unknown versions ... return Unsupported"
                raise Unsupported(f"cORg version {version}")
            provenance = cur.u8("provenance")
            if provenance > PROVENANCE_LEGACY:  # 1.1.1: unknown provenance -> Unsupported
                raise Unsupported(f"cORg provenance {provenance}")
            authority = cur.u8("authority")
            if authority > AUTHORITY_CICP:  # 1.1.1: unknown authority -> Unsupported
                raise Unsupported(f"cORg authority {authority}")
            flags = cur.u8("presence flags")
            if flags & ~(_HAS_ICC | _HAS_CICP):  # 1.1.1: unknown flag bits -> Unsupported
                raise Unsupported(f"cORg presence flags 0x{flags:02x}")
            cicp = tuple(cur.take(4, "CICP")) if flags & _HAS_CICP else None
            icc = bytes(cur.take(cur.remaining())) if flags & _HAS_ICC else None  # 1.1.1: all remaining bytes
            cur.expect_end("trailing bytes")  # 1.1.1: "No other trailing bytes are permitted"
            return cls(provenance, authority, cicp, icc)  # type: ignore[arg-type]

    def to_bytes(self) -> bytes:
        """The version 1 payload."""
        flags = (_HAS_ICC if self.icc is not None else 0) | (_HAS_CICP if self.cicp is not None else 0)
        out = bytes([VERSION, self.provenance, self.authority, flags])
        return out + bytes(self.cicp or ()) + (self.icc or b"")


def read_color_origin(payloads: Sequence[bytes | memoryview]) -> ColorOrigin | None:
    """The file's cORg from all its cORg payloads: none gives None, more than one is Corrupt (1.1.1)."""
    if len(payloads) > 1:  # 1.1.1: "Typed origin readers reject duplicates ... as Corrupt"
        raise Corrupt(f"cORg occurs {len(payloads)} times")
    return ColorOrigin.from_bytes(payloads[0]) if payloads else None
