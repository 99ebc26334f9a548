"""Print resolution (dots per inch) as Exif resolution tags: IMI has no resolution field of its
own, so it travels in eXIf (1.1) as TIFF and PNG-with-Exif files carry it."""

from __future__ import annotations

import struct
import warnings

X_RESOLUTION, Y_RESOLUTION, RESOLUTION_UNIT = 282, 283, 296  # TIFF/Exif IFD0 tags
INCH, CENTIMETER = 2, 3  # ResolutionUnit values


def exif_with_dpi(exif: bytes | None, dpi: tuple[float, float]) -> bytes:
    """``exif`` (TIFF header onward, or None) with its resolution tags set to ``dpi``."""
    from PIL import Image, TiffImagePlugin  # the Exif IFD writer; Pillow is a dependency

    tags = Image.Exif()
    if exif:
        tags.load(bytes(exif))
    tags[X_RESOLUTION] = TiffImagePlugin.IFDRational(float(dpi[0]))
    tags[Y_RESOLUTION] = TiffImagePlugin.IFDRational(float(dpi[1]))
    tags[RESOLUTION_UNIT] = INCH
    return tags.tobytes()


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
