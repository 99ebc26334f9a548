"""The neutral description every reader produces and every sink writes: images, how they relate, metadata."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Literal, Union

from imij_plugins import Frame
from imij_plugins.convert.stack import Stack

Input = Union[str, "os.PathLike[str]", bytes]  # a path, or a whole file's bytes (a sink's output)
Kind = Literal["still", "animation", "pages"]


@dataclass(frozen=True)
class Metadata:
    """The file-level metadata a conversion carries: ICC, Exif (TIFF header onward), XMP, dpi,
    orientation, and how the last channel of GrayAlpha/RGBA is meant (1.0 alpha_mode: 0 straight,
    1 premultiplied, 3 undefined padding, as a TIFF's ExtraSamples says)."""

    icc_profile: bytes | None = None
    exif: bytes | None = None
    xmp: bytes | None = None
    dpi: tuple[float, float] | None = None
    orientation: int = 1
    alpha_mode: int = 0

    def options(self) -> dict[str, object]:
        """The fields that are set, as ``EncodeOptions`` keywords."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        for name, default in (("orientation", 1), ("alpha_mode", 0)):
            if out[name] == default:
                del out[name]
        return out


@dataclass(frozen=True)
class Decoded:
    """One input file: its images as Frames, how they relate, durations (seconds), loop, metadata,
    for a hyperstack its dimensions, and notes on what the file holds that the images do not carry."""

    frames: tuple[Frame, ...]
    kind: Kind
    reader: str
    durations: tuple[Fraction, ...] = ()
    loop: int = 0
    metadata: Metadata = field(default_factory=Metadata)
    stack: Stack | None = None
    notes: tuple[str, ...] = ()

