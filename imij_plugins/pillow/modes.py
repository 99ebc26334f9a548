"""The Pillow mode table for IMI, as data: what an opened file becomes, and what a saved mode stores.

Both directions are tested against each other in ``tests/pillow/test_modes.py``. Keys name IMI
samples by channel layout and sample type (``"u8"``, ``"u16"``, ``"f16"``, ``"i32"``... the numpy
kind and bit width of ``ImijFile.dtype``). Pillow has no multi-channel image above 8 bits per
channel (python-pillow/Pillow#1888), so u16 GrayAlpha/RGB/RGBA/CMYK open as 8-bit keeping the high
byte, as ``PngImagePlugin._MODES`` does with ``"RGB;16B"``; ``info["imij_bit_depth"]`` keeps the
stored depth, and ``im.imij.read()`` / ``imij_plugins.read`` return the exact samples.

The header's alpha mode (1.0) changes what an alpha layout opens as (``ALPHA_MODES``):
premultiplied alpha opens in Pillow's premultiplied modes RGBa and La, and those modes save as
premultiplied alpha; undefined padding opens without it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

# conversions applied to the decoded (H, W, C) array before Pillow unpacks it
EXACT = "exact"  # the samples as stored (a widening cast at most: i8/i16 -> int32, f16 -> float32)
HIGH_BYTE = "high_byte"  # 16 -> 8 bits by the high byte (PNG's "RGB;16B" unpacking)
FIT_I32 = "fit_i32"  # u32 -> int32, refused at load when a sample is above 2**31 - 1
NONZERO = "nonzero"  # a 1-bit image: a nonzero sample is white ("1;8" unpacking)
SCALE = "scale"  # n < 8 significant bits (right-aligned, 1.0) to 0..255, as Pillow unpacks 2- and 4-bit gray ("L;2", "L;4")

ANY_BITS = None  # an OPEN_MODES key that matches any significant-bit declaration


@dataclass(frozen=True)
class OpenMode:
    """How an IMI image of one (layout, sample) opens in Pillow."""

    mode: str  # the Pillow mode of the opened image
    rawmode: str  # the raw mode Pillow unpacks the converted samples with
    dtype: str  # numpy dtype of the converted samples (native byte order where Pillow wants it)
    convert: str = EXACT
    bits: int = 8  # the significant bits SCALE expands to 8
    drop_padding: bool = False  # the last stored slot is undefined padding (alpha mode 3): Pillow gets the others

    @property
    def lossless(self) -> bool:
        """Whether every stored sample value survives in the Pillow image."""
        return self.convert in (EXACT, FIT_I32)


# (layout, sample, significant bits or ANY_BITS) -> OpenMode. A key with a bit count wins over ANY_BITS.
OPEN_MODES: dict[tuple[str, str, int | None], OpenMode] = {
    # 8-bit
    ("Gray", "u8", 1): OpenMode("1", "1;8", "u1", NONZERO),  # 1 significant bit (a Shift or Lsb map)
    ("Gray", "u8", ANY_BITS): OpenMode("L", "L", "u1"),
    **{("Gray", "u8", n): OpenMode("L", "L", "u1", SCALE, bits=n) for n in range(2, 8)},  # 2- and 4-bit TIFF, PNG
    ("GrayAlpha", "u8", ANY_BITS): OpenMode("LA", "LA", "u1"),
    ("RGB", "u8", ANY_BITS): OpenMode("RGB", "RGB", "u1"),
    ("RGBA", "u8", ANY_BITS): OpenMode("RGBA", "RGBA", "u1"),
    ("CMYK", "u8", ANY_BITS): OpenMode("CMYK", "CMYK", "u1"),
    # 16-bit: gray stays 16-bit, multi-channel opens as 8-bit like PNG
    ("Gray", "u16", ANY_BITS): OpenMode("I;16", "I;16", "<u2"),
    ("GrayAlpha", "u16", ANY_BITS): OpenMode("LA", "LA", "u1", HIGH_BYTE),
    ("RGB", "u16", ANY_BITS): OpenMode("RGB", "RGB", "u1", HIGH_BYTE),
    ("RGBA", "u16", ANY_BITS): OpenMode("RGBA", "RGBA", "u1", HIGH_BYTE),
    ("CMYK", "u16", ANY_BITS): OpenMode("CMYK", "CMYK", "u1", HIGH_BYTE),
    # integers and floats: one channel only (Pillow's I is int32, F float32)
    ("Gray", "i8", ANY_BITS): OpenMode("I", "I", "=i4"),
    ("Gray", "i16", ANY_BITS): OpenMode("I", "I", "=i4"),
    ("Gray", "i32", ANY_BITS): OpenMode("I", "I", "=i4"),
    ("Gray", "u32", ANY_BITS): OpenMode("I", "I", "=i4", FIT_I32),
    ("Gray", "f16", ANY_BITS): OpenMode("F", "F", "=f4"),
    ("Gray", "f32", ANY_BITS): OpenMode("F", "F", "=f4"),
}

# (alpha mode, the Pillow mode of the straight entry) -> (mode, raw mode, whether the last slot is
# dropped) it opens as instead (1.0).
# Premultiplied (1) opens in Pillow's premultiplied modes, every sample as stored (the high byte of
# 16-bit samples, which stays premultiplied); convert("RGBA") / convert("LA") unpremultiplies as
# Pillow's TIFF reader does with associated alpha (its "RGBa" raw mode; it keeps gray as La).
# Undefined padding (3) is not opacity: the slot is dropped, as Pillow's TIFF reader drops an
# unspecified extra sample ("RGBX" unpacking; sliced here, since Pillow before 12 has no "LX");
# im.imij.read() keeps it. Opaque (2) opens as alpha: the stored
# slot, which the file declares fully opaque.
ALPHA_MODES: dict[tuple[int, str], tuple[str, str, bool]] = {
    (1, "RGBA"): ("RGBa", "RGBa", False),
    (1, "LA"): ("La", "La", False),
    (3, "RGBA"): ("RGB", "RGB", True),
    (3, "LA"): ("L", "L", True),
}

# The mode an image that Pillow cannot hold (Oklab, 64-bit samples, multi-channel float or
# integer above 16 bits...) reports between open and load(); load() raises Unsupported.
NOMINAL_MODES: dict[str, str] = {
    "Gray": "I",  # "F" for float samples, see nominal_mode()
    "GrayAlpha": "LA",
    "RGB": "RGB",
    "RGBA": "RGBA",
    "CMYK": "CMYK",
    "Oklab": "RGB",
    "OklabAlpha": "RGBA",
}


@dataclass(frozen=True)
class SaveMode:
    """How a Pillow mode is stored: converted to ``via`` first (when set), then as (layout, sample)."""

    layout: str
    sample: str
    via: str | None = None  # a Pillow mode to convert to before storing
    expands_palette: bool = False  # P/PA: stored as the RGB(A) expansion, or L(A) when every entry used is gray
    sig_bits: int | None = None  # a significant-bit declaration for every channel (header field, 1.0)
    alpha_mode: int = 0  # the header's alpha mode (1.0): 1 for Pillow's premultiplied modes


# Pillow mode -> SaveMode. Modes not listed (YCbCr, LAB, HSV, I;16S...) are refused, as PNG does.
SAVE_MODES: dict[str, SaveMode] = {
    "1": SaveMode("Gray", "u8", sig_bits=1),  # 0/1 with 1 significant bit; 0/255 L where a page cannot declare it
    "L": SaveMode("Gray", "u8"),
    "LA": SaveMode("GrayAlpha", "u8"),
    "RGB": SaveMode("RGB", "u8"),
    "RGBA": SaveMode("RGBA", "u8"),
    "La": SaveMode("GrayAlpha", "u8", alpha_mode=1),  # premultiplied, stored as it is (not unpremultiplied)
    "RGBa": SaveMode("RGBA", "u8", alpha_mode=1),
    "RGBX": SaveMode("RGB", "u8", via="RGB"),  # the pad byte carries nothing
    "CMYK": SaveMode("CMYK", "u8"),
    "I;16": SaveMode("Gray", "u16"),
    "I;16L": SaveMode("Gray", "u16"),
    "I;16B": SaveMode("Gray", "u16"),
    "I;16N": SaveMode("Gray", "u16"),
    "I": SaveMode("Gray", "i32"),
    "F": SaveMode("Gray", "f32"),
    "P": SaveMode("RGB", "u8", via="RGB", expands_palette=True),  # RGBA with transparency; L/LA when gray
    "PA": SaveMode("RGBA", "u8", via="RGBA", expands_palette=True),  # LA when gray
}


# A mode without alpha whose info["transparency"] is a colour key (PNG tRNS, a GIF frame without a
# palette): stored with the key made alpha, as Pillow's convert() makes it, so that nothing is
# dropped and the reopened image's convert("RGBA") is the source's. 16-bit gray has no Pillow mode
# with alpha: it is stored as 16-bit GrayAlpha (KEYED_16_BIT), which opens as 8-bit LA like a
# 16-bit gray+alpha PNG, every bit kept for im.imij.read().
KEYED_TRANSPARENCY: dict[str, str] = {"1": "LA", "L": "LA", "RGB": "RGBA"}
KEYED_16_BIT = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})  # I: older Pillow's 16-bit PNG


def sample_name(dtype: np.dtype) -> str:
    """The IMI sample type name of a numpy dtype: ``u8``, ``u16``, ``f16``, ``i32``..."""
    dt = np.dtype(dtype)
    return f"{dt.kind}{dt.itemsize * 8}"


def open_mode(layout: str, dtype: np.dtype, sig_bits: tuple[int, ...] = (), alpha_mode: int = 0) -> OpenMode | None:
    """The table entry for an IMI image of that header alpha mode, or None when Pillow cannot hold it."""
    entry = _straight_mode(layout, sample_name(dtype), sig_bits)
    if entry is None or (alpha_mode, entry.mode) not in ALPHA_MODES:
        return entry
    mode, rawmode, drop_padding = ALPHA_MODES[(alpha_mode, entry.mode)]
    return replace(entry, mode=mode, rawmode=rawmode, drop_padding=drop_padding)


def _straight_mode(layout: str, sample: str, sig_bits: tuple[int, ...]) -> OpenMode | None:
    """The ``OPEN_MODES`` entry: one for the significant bits, else the one for any."""
    if len(set(sig_bits)) == 1:
        found = OPEN_MODES.get((layout, sample, sig_bits[0]))
        if found is not None:
            return found
    return OPEN_MODES.get((layout, sample, ANY_BITS))


def nominal_mode(layout: str, dtype: np.dtype) -> str:
    """The mode reported for an image that load() refuses."""
    if layout == "Gray" and np.dtype(dtype).kind == "f":
        return "F"
    return NOMINAL_MODES[layout]


def unsupported_message(layout: str, dtype: np.dtype) -> str:
    """Why ``load()`` refuses an image, and where the exact data is."""
    return (
        f"Pillow has no mode for IMI {layout} {sample_name(dtype)} samples; read the exact data with "
        "im.imij.read(im.tell()), imij_plugins.read(path, index) or imageio (the imij_plugins imageio plugin)"
    )
