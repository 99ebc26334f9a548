"""``imij thumbnail``: the PNG a file manager shows for an .imi file, from its pRVW preview when it has one.

The image is opened through the Pillow plugin, whose ``draft()`` swaps in the smallest pRVW preview
(spec section 1.1) that is still at least twice the thumbnail's size, as ``Image.thumbnail`` asks of
JPEG's DCT scaling; without one the primary image (the first page, or the first frame of an
animation) is decoded and reduced. The header orientation is applied, and samples Pillow holds above
8 bits are brought to 8 bits for display.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageOps

from imij_plugins.pillow.ImiImagePlugin import ImiImageFile

REDUCING_GAP = 2.0  # Image.thumbnail's default: decode at least twice the final size, then resample
_DISPLAY_MODES = {"1": "L", "CMYK": "RGB", "P": "RGBA"}  # modes a thumbnail shows converted


def fit(size: tuple[int, int], longest: int) -> tuple[int, int]:
    """``size`` scaled to at most ``longest`` pixels on its longer side, aspect kept, never enlarged."""
    width, height = size
    scale = min(1.0, longest / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def thumbnail(source: str, longest: int) -> Image.Image:
    """The thumbnail of the .imi file ``source``: at most ``longest`` px on its longer side, 8-bit L, LA, RGB or RGBA.

    Raises SyntaxError for a file that is not a readable IMI file, OSError when its pixels do not decode.
    """
    if longest < 1:
        raise ValueError(f"thumbnail size must be at least 1 pixel, not {longest}")
    with ImiImageFile(source) as im:
        target = fit(im.size, longest)
        im.draft(None, (int(target[0] * REDUCING_GAP), int(target[1] * REDUCING_GAP)))
        im.load()
        shown = _displayable(ImageOps.exif_transpose(im))
    shown.thumbnail((longest, longest), Image.Resampling.LANCZOS)
    return shown


def _displayable(im: Image.Image) -> Image.Image:
    """``im`` in an 8-bit mode a PNG thumbnail shows: 16-bit gray by its high byte, integer and float
    gray stretched from their minimum to their maximum."""
    if im.mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        samples = np.asarray(im, dtype=np.float64)
        if im.mode.startswith("I;16"):
            low, high = 0.0, 65535.0
        else:
            finite = samples[np.isfinite(samples)]
            low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        scaled = np.nan_to_num((samples - low) * (255.0 / max(high - low, 1e-300)), nan=0.0, posinf=255.0, neginf=0.0)
        return Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8))
    return im.convert(_DISPLAY_MODES.get(im.mode, im.mode))


def png_bytes(source: str, longest: int) -> bytes:
    """The thumbnail of ``source`` as PNG bytes (written whole, so that a failure leaves no partial file)."""
    buf = io.BytesIO()
    thumbnail(source, longest).save(buf, format="PNG")
    return buf.getvalue()
