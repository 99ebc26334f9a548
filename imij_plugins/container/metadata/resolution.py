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
    (or when the Exif does not parse: metadata never fails the image)."""
    from PIL import Image

    tags = Image.Exif()
    try:
        with warnings.catch_warnings():  # Pillow warns about damaged Exif; the image is not at fault
            warnings.simplefilter("ignore")
            tags.load(bytes(exif))
        x, y = tags.get(X_RESOLUTION), tags.get(Y_RESOLUTION)
        unit = tags.get(RESOLUTION_UNIT, INCH)
        if x is None or y is None or unit not in (INCH, CENTIMETER) or not float(x) > 0 or not float(y) > 0:
            return None
        scale = 2.54 if unit == CENTIMETER else 1.0
        return float(x) * scale, float(y) * scale
    except (ValueError, TypeError, ZeroDivisionError, SyntaxError, OSError, KeyError, IndexError, struct.error):
        return None
