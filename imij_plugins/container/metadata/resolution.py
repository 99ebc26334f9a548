"""Print resolution (dots per inch) as Exif resolution tags: IMI has no resolution field of its
own, so it travels in eXIf (1.1) as TIFF and PNG-with-Exif files carry it."""
# 1.1: eXIf holds Exif from the TIFF header onward; the tags are TIFF 6.0's XResolution,
# YResolution (RATIONAL) and ResolutionUnit (SHORT) in IFD0.

from __future__ import annotations

import struct
import warnings
from fractions import Fraction

from imij_plugins.container.metadata import exif as exif_ifd
from imij_plugins.errors import Corrupt

X_RESOLUTION, Y_RESOLUTION, RESOLUTION_UNIT = 282, 283, 296  # TIFF/Exif IFD0 tags
INCH, CENTIMETER = 2, 3  # ResolutionUnit values
EXIF_PREFIX = b"Exif\x00\x00"  # before the TIFF header in JPEG APP1 (and Pillow's info["exif"])
# TIFF 6.0 field types that hold one number: BYTE, SHORT, LONG, RATIONAL, SRATIONAL, FLOAT, DOUBLE
_NUMBERS = {1: "B", 3: "H", 4: "I", 5: "II", 10: "ii", 11: "f", 12: "d"}


def exif_with_dpi(exif: bytes | None, dpi: tuple[float, float]) -> bytes:
    """``exif`` (TIFF header onward, or None) with its resolution tags set to ``dpi``; every other
    byte kept (IFD1 and its thumbnail too). Exif whose header or IFD0 does not parse is returned
    as it is, with a warning that the resolution was not written: Pillow's writers carry such
    Exif through, and there is no other place for a resolution in IMI."""
    tags = {
        X_RESOLUTION: (exif_ifd.RATIONAL, _rational(dpi[0])),
        Y_RESOLUTION: (exif_ifd.RATIONAL, _rational(dpi[1])),
        RESOLUTION_UNIT: (exif_ifd.SHORT, (INCH,)),
    }
    try:
        return exif_ifd.with_ifd0_tags(exif, tags)
    except Corrupt as e:
        warnings.warn(f"dpi {tuple(dpi)} not written: the Exif it travels in does not parse ({e}); the Exif is kept as it is", stacklevel=3)
        return bytes(exif)  # type: ignore[arg-type]  (with_ifd0_tags parses only a given exif)


def _rational(value: float) -> tuple[int, int]:
    """``value`` as a TIFF RATIONAL (two u32): the closest fraction whose terms fit."""
    limit = (1 << 32) - 1
    found = Fraction(value).limit_denominator(max(1, min(1 << 16, int(limit // max(1.0, float(value))))))
    if not 0 < found.numerator <= limit:
        raise ValueError(f"dpi {value} does not fit an Exif resolution (a u32 fraction)")
    return found.numerator, found.denominator


def dpi_from_exif(exif: bytes) -> tuple[float, float] | None:
    """The (x, y) dots per inch that ``exif``'s resolution tags give, or None without them
    (or when the Exif does not parse: metadata never fails the image). Read as Pillow's
    ``Image.Exif`` reads them: one value each, a ResolutionUnit of inch (or absent) or cm."""
    exif = bytes(exif)
    if exif.startswith(EXIF_PREFIX):
        exif = exif[len(EXIF_PREFIX) :]
    try:
        order, entries, _ = exif_ifd.ifd0(exif)
    except (Corrupt, struct.error):
        return None
    x, y = (_number(exif, order, entries.get(tag)) for tag in (X_RESOLUTION, Y_RESOLUTION))
    unit = _number(exif, order, entries.get(RESOLUTION_UNIT)) if RESOLUTION_UNIT in entries else INCH
    if x is None or y is None or unit not in (INCH, CENTIMETER) or not x > 0 or not y > 0:
        return None
    scale = 2.54 if unit == CENTIMETER else 1.0
    return x * scale, y * scale


def _number(exif: bytes, order: str, entry: bytes | None) -> float | None:
    """The one number an IFD entry holds (its value in the entry, or at the offset it gives), or
    None: no entry, a count other than 1, a type that is no number, a zero denominator, past the end."""
    if entry is None:
        return None
    _, kind, count = struct.unpack(order + "HHI", entry[:8])
    if kind not in _NUMBERS or count != 1:
        return None
    fmt = order + _NUMBERS[kind]
    size = struct.calcsize(fmt)
    if size <= 4:
        raw = entry[8 : 8 + size]
    else:
        (offset,) = struct.unpack(order + "I", entry[8:12])
        raw = exif[offset : offset + size]
        if len(raw) < size:
            return None
    values = struct.unpack(fmt, raw)
    if len(values) == 2:  # a fraction
        return values[0] / values[1] if values[1] else None
    return float(values[0])
