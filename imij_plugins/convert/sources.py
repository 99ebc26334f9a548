"""Reading any input file into a neutral ``Decoded`` description, the reader chosen by content.

The signature bytes pick the reader (IMI, TIFF, ``.npy``; anything else goes to Pillow), so a
PNG named ``.tif`` still reads. Readers only describe what they find: pixels as
``imij_plugins.Frame`` (array, layout, significant bits), how the images relate (one image, an
animation, pages), the metadata IMI keeps (ICC, Exif, XMP, dpi, orientation) and, for
hyperstacks (OME-TIFF, ImageJ, IMI files with an aXES), their dimensions as a ``Stack``.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Callable, Literal, Union

import numpy as np

import imij_plugins
from imij_plugins import Frame
from imij_plugins.convert.stack import Stack, from_science

Input = Union[str, "os.PathLike[str]", bytes]  # a path, or a whole file's bytes (a sink's output)
Kind = Literal["still", "animation", "pages"]

TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF
NPY_SIGNATURE = b"\x93NUMPY"
_INCH_PER_UNIT = {2: 1.0, 3: 2.54}  # TIFF ResolutionUnit: 2 inch, 3 centimetre (1 none: no dpi)
_TIFF_ICC, _TIFF_XMP = 34675, 700
# IFD0 tags Exif shares with TIFF: ImageDescription is left out (OME-XML and ImageJ use it)
_TIFF_EXIF_TAGS = (271, 272, 305, 306, 315, 33432)  # Make, Model, Software, DateTime, Artist, Copyright
_TIFF_ORIENTATION = 274
_TIFF_SUB_IFDS = (0x8769, 0x8825)  # the Exif and GPS IFD pointers: their IFDs go into the Exif block whole
_EXIF_PREFIX = b"Exif\x00\x00"
_TIFF_CMYK = 5  # PhotometricInterpretation SEPARATED
_TIFF_PHOTOMETRICS = (1, 2, _TIFF_CMYK)  # MinIsBlack, RGB, Separated: the ones IMI layouts mean


@dataclass(frozen=True)
class Metadata:
    """The file-level metadata a conversion carries: ICC, Exif (TIFF header onward), XMP, dpi, orientation."""

    icc_profile: bytes | None = None
    exif: bytes | None = None
    xmp: bytes | None = None
    dpi: tuple[float, float] | None = None
    orientation: int = 1

    def options(self) -> dict[str, object]:
        """The fields that are set, as ``EncodeOptions`` keywords."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        if self.orientation == 1:
            del out["orientation"]
        return out


@dataclass(frozen=True)
class Decoded:
    """One input file: its images as Frames, how they relate, durations (seconds), loop, metadata
    and, for a hyperstack, its dimensions."""

    frames: tuple[Frame, ...]
    kind: Kind
    reader: str
    durations: tuple[Fraction, ...] = ()
    loop: int = 0
    metadata: Metadata = field(default_factory=Metadata)
    stack: Stack | None = None


def sniff(head: bytes) -> str:
    """The reader for a file starting with ``head``: "imi", "tiff", "npy" or "pillow"."""
    if imij_plugins.is_imi(head):
        return "imi"
    if head.startswith(TIFF_SIGNATURES):
        return "tiff"
    if head.startswith(NPY_SIGNATURE):
        return "npy"
    return "pillow"


def read_source(src: Input, threads: int | None = None) -> Decoded:
    """Decode ``src`` with the reader its signature names (IMI on ``threads`` threads); a TIFF that
    tifffile cannot decode (a compression it lacks a codec for) is tried with Pillow before the
    first error is raised."""
    head = bytes(src[:16]) if isinstance(src, bytes) else _head(src)
    if sniff(head) == "imi":
        return read_imi(src, threads)
    first, *fallbacks = _READERS[sniff(head)]
    try:
        return first(src)
    except (ValueError, OSError, NotImplementedError) as exc:
        for reader in fallbacks:
            try:
                return reader(src)
            except Exception:
                continue
        raise exc


def _head(path: str | os.PathLike[str]) -> bytes:
    with open(path, "rb") as f:
        return f.read(16)


def _stream(src: Input) -> str | os.PathLike[str] | io.BytesIO:
    """What third-party readers open: the path, or a stream over the bytes."""
    return io.BytesIO(src) if isinstance(src, bytes) else src


def read_imi(src: Input, threads: int | None = None) -> Decoded:
    """Every frame or page of an IMI file with its own layout and significant bits (``image_info``),
    and the stack its science records describe (1.5)."""
    with imij_plugins.open(src, threads=threads) as f:
        frames = []
        for index in range(f.n_frames):
            info = f.image_info(index)
            full = all(bits == info.dtype.itemsize * 8 for bits in info.sig_bits)
            frames.append(Frame(f.read(index), info.layout, None if full else info.sig_bits))
        kind: Kind = "still" if f.kind is None else "animation" if f.kind == "animation" else "pages"
        meta = f.metadata
        durations = tuple(f.frame_info(i).duration for i in range(f.n_frames)) if kind == "animation" else ()
        metadata = Metadata(
            icc_profile=meta.get("icc_profile"),  # type: ignore[arg-type]
            exif=meta.get("exif"),  # type: ignore[arg-type]
            xmp=meta.get("xmp"),  # type: ignore[arg-type]
            dpi=meta.get("dpi"),  # type: ignore[arg-type]
            orientation=int(meta["orientation"]),  # type: ignore[call-overload]
        )
        records = meta.get("science")
        channels = frames[0].array.shape[2]
        stack = from_science(records, f.n_frames, f.height, f.width, channels) if records is not None else None  # type: ignore[arg-type]
        return Decoded(tuple(frames), kind, "imi", durations, f.loop_count, metadata, stack)


def read_npy(src: Input) -> Decoded:
    """A 2-D (H, W) or 3-D (H, W, C) ``.npy`` array, memory-mapped from a path."""
    array = np.load(src, mmap_mode="r") if not isinstance(src, bytes) else np.load(io.BytesIO(src))
    if array.ndim not in (2, 3):
        raise ValueError(f".npy array of shape {array.shape}: an image is (H, W) or (H, W, C)")
    return Decoded((Frame(array),), "still", "npy")


def read_tiff(src: Input) -> Decoded:
    """Every page of a TIFF through tifffile (any dtype; strips, tiles or planes), metadata from
    page 0; an OME-TIFF or ImageJ hyperstack as its series' images and dimensions."""
    import tifffile

    from imij_plugins.convert.ome import is_hyperstack, read_hyperstack

    with tifffile.TiffFile(_stream(src)) as tif:
        stack = None
        if is_hyperstack(tif):
            frames, stack = read_hyperstack(tif)
        else:
            frames = tuple(_tiff_frame(page) for page in tif.pages)
        tags = tif.pages.first.tags
        metadata = Metadata(
            icc_profile=_tag_bytes(tags, _TIFF_ICC),
            xmp=_tag_bytes(tags, _TIFF_XMP),
            dpi=_tiff_dpi(tags),
            exif=_tiff_exif(tags, src),
            orientation=int(tags[_TIFF_ORIENTATION].value) if _TIFF_ORIENTATION in tags else 1,
        )
    reader = "tiff:ome" if stack is not None and tif.is_ome else "tiff:imagej" if stack is not None else "tiff"
    return Decoded(frames, "still" if len(frames) == 1 else "pages", reader, metadata=metadata, stack=stack)


def _tiff_frame(page: object) -> Frame:
    """One TIFF page as an (H, W, C) Frame: planar samples moved last, 1-bit pages as 0/1 with 1 significant bit."""
    photometric = int(page.photometric)  # type: ignore[attr-defined]
    if photometric not in _TIFF_PHOTOMETRICS:
        raise ValueError(f"TIFF photometric interpretation {page.photometric.name} has no IMI layout")  # type: ignore[attr-defined]
    array = page.asarray()  # type: ignore[attr-defined]
    axes: str = page.axes  # type: ignore[attr-defined]
    if "S" in axes:
        array = np.moveaxis(array, axes.index("S"), -1)
        axes = axes.replace("S", "") + "S"
    array = array.reshape([n for n, axis in zip(array.shape, axes) if axis in "YXS" or n != 1])
    if array.ndim not in (2, 3):
        raise ValueError(f"TIFF page with axes {page.axes} and shape {page.shape} is not one 2-D image")  # type: ignore[attr-defined]
    channels = 1 if array.ndim == 2 else array.shape[2]
    layout = "CMYK" if photometric == _TIFF_CMYK and channels == 4 else None
    if array.dtype == np.bool_:
        return Frame(array.astype(np.uint8), layout, (1,) * channels)
    return Frame(array, layout)


def _tag_bytes(tags: object, code: int) -> bytes | None:
    tag = tags.get(code)  # type: ignore[attr-defined]
    return bytes(tag.value) if tag is not None else None


def _tiff_exif(tags: object, src: Input) -> bytes | None:
    """The TIFF's descriptive IFD0 tags, Orientation, and its Exif and GPS IFDs (read by Pillow,
    which keeps each value's type) as an Exif block (TIFF header onward), or None."""
    from PIL import Image

    found = {code: tags[code].value for code in (*_TIFF_EXIF_TAGS, _TIFF_ORIENTATION) if code in tags}  # type: ignore[index, operator]
    sub_ifds = [code for code in _TIFF_SUB_IFDS if code in tags]  # type: ignore[operator]
    if not sub_ifds and not any(code in found for code in _TIFF_EXIF_TAGS):
        return None
    exif = Image.Exif()
    for code, value in found.items():
        exif[code] = int(value) if code == _TIFF_ORIENTATION else value
    if sub_ifds:
        with Image.open(_stream(src)) as im:
            source = im.getexif()
            for code in sub_ifds:
                exif.get_ifd(code).update(source.get_ifd(code))
    return exif.tobytes().removeprefix(_EXIF_PREFIX)


def _tiff_dpi(tags: object) -> tuple[float, float] | None:
    """XResolution and YResolution as dots per inch, when ResolutionUnit is inch or centimetre."""
    x, y, unit = (tags.get(code) for code in (282, 283, 296))  # type: ignore[attr-defined]
    per_inch = _INCH_PER_UNIT.get(int(unit.value) if unit is not None else 2)
    if x is None or y is None or per_inch is None:
        return None
    return tuple(float(Fraction(*t.value)) * per_inch for t in (x, y))  # type: ignore[return-value]


def read_pillow(src: Input) -> Decoded:
    """Every frame of a file Pillow opens, each stored as the IMI plugin stores its mode; frames
    with durations are an animation (GIF, APNG, WebP), other multi-frame files pages."""
    from PIL import Image

    from imij_plugins.pillow.ImiImagePlugin import _metadata, _one_mode, _stored

    with Image.open(_stream(src)) as im:
        n = getattr(im, "n_frames", 1)
        animated = n > 1 and "duration" in im.info
        images, durations = [], []
        for index in range(n):
            im.seek(index)
            images.append(im.copy())
            durations.append(Fraction(im.info.get("duration", 0)) / 1000)
        loop = im.info.get("loop")
        im.seek(0)
        im.encoderinfo = {}  # _metadata reads save parameters first; there are none
        metadata = Metadata(**{k: v for k, v in _metadata(im).items() if k in _METADATA_FIELDS})
        reader = f"pillow:{im.format}"
    kind: Kind = "animation" if animated else "pages" if n > 1 else "still"
    if animated:
        images = _one_mode(images)  # GIF frames after the first load as RGB(A)
    frames = tuple(_stored(i) for i in images)
    loop = 1 if loop is None else int(loop)  # GIF without a loop extension plays once
    return Decoded(frames, kind, reader, tuple(durations) if animated else (), loop, metadata)


_METADATA_FIELDS = frozenset(f.name for f in fields(Metadata))
_READERS: dict[str, tuple[Callable[[Input], Decoded], ...]] = {  # IMI: read_imi, with threads
    "tiff": (read_tiff, read_pillow),
    "npy": (read_npy,),
    "pillow": (read_pillow,),
}
