"""HDR metadata chunks (1.1): mDCv mastering display, cLLI content light level, dWHI diffuse white."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from imij_plugins.container.metadata._fields import errors_as
from imij_plugins.errors import Corrupt

# PNG third edition mDCV: red, green, blue, white (x, y) as u16 BE, then max and min luminance u32 BE.
_MDCV = struct.Struct(">8H2I")
_CLLI = struct.Struct(">2I")
_CLLI_LEGACY = struct.Struct(">2H")
_F32 = struct.Struct(">f")
_F32_INF = 0x7F800000  # binary32 exponent all ones, mantissa 0
LEGACY_NITS_SCALE = 10_000  # 1.1: legacy whole nits times 10,000 = 0.0001 cd/m² units


def _check_uint(value: int, bits: int, what: str) -> None:
    """An unsigned integer field of ``bits`` bits."""
    if not 0 <= value < 1 << bits:
        raise ValueError(f"{what} {value} does not fit u{bits}")


@dataclass(frozen=True)
class MasteringDisplay:
    """mDCv (1.1): the SMPTE ST 2086 mastering display, with PNG mDCV's fields and units."""

    red: tuple[int, int]  # CIE 1931 (x, y) in 0.00002 units
    green: tuple[int, int]
    blue: tuple[int, int]
    white: tuple[int, int]
    max_luminance: int  # 0.0001 cd/m²
    min_luminance: int  # 0.0001 cd/m²

    def __post_init__(self) -> None:
        for name in ("red", "green", "blue", "white"):
            xy = getattr(self, name)
            if len(xy) != 2:
                raise ValueError(f"mDCv: {name} must be an (x, y) pair")
            for v in xy:
                _check_uint(v, 16, f"mDCv: {name} chromaticity")
        _check_uint(self.max_luminance, 32, "mDCv: max_luminance")
        _check_uint(self.min_luminance, 32, "mDCv: min_luminance")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> MasteringDisplay:
        """Parse the 24-byte payload; any other length is Corrupt."""
        if len(payload) != _MDCV.size:  # 1.1: "24 bytes"
            raise Corrupt(f"mDCv: {len(payload)} bytes, expected {_MDCV.size}")
        v = _MDCV.unpack(payload)
        return cls((v[0], v[1]), (v[2], v[3]), (v[4], v[5]), (v[6], v[7]), v[8], v[9])

    def to_bytes(self) -> bytes:
        """The 24-byte payload."""
        return _MDCV.pack(*self.red, *self.green, *self.blue, *self.white, self.max_luminance, self.min_luminance)


@dataclass(frozen=True)
class ContentLightLevel:
    """cLLI (1.1): MaxCLL and MaxFALL in 0.0001 cd/m², 0 meaning unknown."""

    max_cll: int
    max_fall: int

    def __post_init__(self) -> None:
        _check_uint(self.max_cll, 32, "cLLI: MaxCLL")
        _check_uint(self.max_fall, 32, "cLLI: MaxFALL")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> ContentLightLevel:
        """Parse the 8-byte form or the legacy 4-byte form (whole nits, scaled by 10,000)."""
        if len(payload) == _CLLI.size:  # 1.1: two u32 BE in 0.0001 cd/m²
            return cls(*_CLLI.unpack(payload))
        if len(payload) == _CLLI_LEGACY.size:  # 1.1: "two u16 big-endian whole-nit values ... multiply each by 10,000"
            cll, fall = _CLLI_LEGACY.unpack(payload)
            return cls(cll * LEGACY_NITS_SCALE, fall * LEGACY_NITS_SCALE)
        raise Corrupt(f"cLLI: {len(payload)} bytes, expected 8 (or legacy 4)")  # 1.1: "other lengths are Corrupt"

    def to_bytes(self) -> bytes:
        """The 8-byte form: writers emit only it (1.1)."""
        return _CLLI.pack(self.max_cll, self.max_fall)


@dataclass(frozen=True)
class DiffuseWhite:
    """dWHI (1.1): diffuse white luminance in cd/m², kept as its exact binary32 bits."""

    bits: int

    def __post_init__(self) -> None:
        _check_uint(self.bits, 32, "dWHI: bits")
        if self.bits & 0x7FFF_FFFF == 0:  # 1.1: "zero (either sign) ... Corrupt"
            raise ValueError("dWHI: zero")
        if self.bits & _F32_INF == _F32_INF:  # 1.1: "infinities and NaNs are Corrupt"
            raise ValueError("dWHI: NaN" if self.bits & 0x007F_FFFF else "dWHI: infinite")
        if self.bits >> 31:  # 1.1: "negative values ... Corrupt"
            raise ValueError("dWHI: negative")

    @classmethod
    def from_bytes(cls, payload: bytes | memoryview) -> DiffuseWhite:
        """Parse the 4-byte big-endian binary32; subnormals stay bit for bit."""
        if len(payload) != 4:  # 1.1: "Other lengths ... are Corrupt"
            raise Corrupt(f"dWHI: {len(payload)} bytes, expected 4")
        with errors_as(Corrupt):
            return cls(int.from_bytes(payload, "big"))

    @classmethod
    def from_nits(cls, nits: float) -> DiffuseWhite:
        """The binary32 nearest to ``nits`` (must be finite and round to a positive value)."""
        try:
            raw = _F32.pack(nits)
        except OverflowError:
            raise ValueError(f"dWHI: {nits} overflows binary32") from None
        return cls(int.from_bytes(raw, "big"))

    @property
    def nits(self) -> float:
        """The luminance in cd/m² (binary32 widened exactly)."""
        return _F32.unpack(self.bits.to_bytes(4, "big"))[0]

    def to_bytes(self) -> bytes:
        """The 4 bytes, big-endian, exactly as read."""
        return self.bits.to_bytes(4, "big")
