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
from dataclasses import fields
from fractions import Fraction
from typing import Any

import numpy as np

import imij_plugins
from imij_plugins import Frame
from imij_plugins.convert.decoded import Decoded, Input, Kind, Metadata
from imij_plugins.convert.stack import from_science
from imij_plugins.convert.tiff import read_tiff_file, stream

__all__ = ["Decoded", "Input", "Kind", "Metadata", "read_source", "sniff"]

TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF
NPY_SIGNATURE = b"\x93NUMPY"
_MAX_DELAY_DENOMINATOR = 65535  # APNG's delay_den is a u16: its num/den comes back exactly
# the raw modes Pillow unpacks 16-bit unsigned gray with: into mode I;16 on newer Pillows, into
# mode I (int32) on Pillow 9 (16-bit PNG) and on every Pillow for 16-bit PGM
_U16_RAWMODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N"})
_JPEG_XMP = b"http://ns.adobe.com/xap/1.0/\x00"  # how a JPEG APP1 segment holding XMP starts


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
    tifffile cannot decode is read by Pillow only when that keeps its depth (``tiff``)."""
    head = bytes(src[:16]) if isinstance(src, bytes) else _head(src)
    reader = sniff(head)
    if reader == "imi":
        return read_imi(src, threads)
    return {"tiff": read_tiff_file, "npy": read_npy, "pillow": read_pillow}[reader](src)


def _head(path: str | os.PathLike[str]) -> bytes:
    with open(path, "rb") as f:
        return f.read(16)


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
            alpha_mode=f.image_info(0).alpha_mode,
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


def read_pillow(src: Input) -> Decoded:
    """Every frame of a file Pillow opens, each stored as the IMI plugin stores its mode. Frames
    that carry a duration once loaded (GIF, APNG, WebP, AVIF, FLI) are an animation, brought to
    one mode; other multi-frame files are pages. An APNG's default image that is not a frame of
    its animation is left out, with a note when it differs from the first frame. 16-bit gray is
    u16 and XMP is kept on every Pillow (Pillow 9 opens a 16-bit PNG as mode I and leaves PNG and
    JPEG XMP out of ``info["xmp"]``)."""
    from PIL import Image

    from imij_plugins.pillow.images import loop_count, one_mode, reduced, stored

    # every plugin in Pillow's order: opening a .tga first would register TGA, which takes almost
    # any header, ahead of ICO, and later .ico files would read as TGA
    Image.init()
    with Image.open(stream(src)) as im:
        n = getattr(im, "n_frames", 1)
        images, durations, timed, unsigned = [], [], False, []
        for index in range(n):
            im.seek(index)
            unsigned.append(im.mode == "I" and _unpacks_u16(im.tile))  # load() empties the tile list
            im.load()  # WebP and AVIF set a frame's info["duration"] when they load it
            if index == 0:
                first_keys = set(im.info)
            timed = timed or "duration" in im.info
            images.append(im.copy())
            durations.append((Fraction(im.info.get("duration", 0)) / 1000).limit_denominator(_MAX_DELAY_DENOMINATOR))
        loop = loop_count(im.info.get("loop", 0))
        im.seek(0)
        for key in set(im.info) - first_keys:  # a later frame's, left in info (an MPO frame's XMP)
            del im.info[key]
        found = _file_metadata(im)
        metadata = Metadata(**{k: v for k, v in found.items() if k in _METADATA_FIELDS})
        reader = f"pillow:{im.format}"
        apng_default = im.format == "PNG" and n > 1 and bool(im.info.get("default_image"))
    notes: tuple[str, ...] = ()
    if apng_default:
        default, images, durations, unsigned = images[0], images[1:], durations[1:], unsigned[1:]
        if default.size != images[0].size or default.convert("RGBA").tobytes() != images[0].convert("RGBA").tobytes():
            notes = ("the APNG default image, shown by viewers without APNG support, is not an animation frame and is not kept",)
    animated = timed and len(images) > 1
    kind: Kind = "animation" if animated else "pages" if len(images) > 1 else "still"
    if animated:
        images = one_mode([reduced(i) for i in images])  # GIF frames after the first load as RGB(A)
    frames = tuple(_as_u16(stored(i)) if u16 else stored(i) for i, u16 in zip(images, unsigned))
    if animated and len({(f.array.shape, f.array.dtype, f.layout, f.sig_bits) for f in frames}) > 1:
        kind, animated = "pages", False
        notes += (_as_pages_note(frames, durations),)
    return Decoded(frames, kind, reader, tuple(durations) if animated else (), loop, metadata, notes=notes)


def _as_pages_note(frames: tuple[Frame, ...], durations: list[Fraction]) -> str:
    """Why an animation whose frames differ (a GIF frame past the logical screen grows it in
    Pillow) is written as pages, and what of it is not kept."""
    sizes = sorted({f"{f.array.shape[1]}x{f.array.shape[0]}" for f in frames})
    timing = "their durations are all 0" if not any(durations) else f"their durations ({', '.join(str(float(d)) for d in durations)} s) and loop are not kept"
    return f"animation frames differ ({', '.join(sizes)}) and IMI animation frames share one size and layout (1.3): written as pages; {timing}"


_METADATA_FIELDS = frozenset(f.name for f in fields(Metadata))


def _file_metadata(im: Any) -> dict[str, Any]:
    """The metadata of the first frame as the IMI plugin saves it, XMP on every Pillow."""
    from imij_plugins.pillow.images import metadata_options

    found = metadata_options(im, {})  # no save parameters: what im.info holds
    if "xmp" not in found:
        found["xmp"] = _legacy_xmp(im)
    return found


def _unpacks_u16(tile: list[Any]) -> bool:
    """Whether every tile of a frame not yet loaded unpacks 16-bit unsigned samples (the file's own
    depth, whatever Pillow mode holds them): a decoder's arguments start with its raw mode."""
    rawmodes = {args if isinstance(args, str) else args[0] if isinstance(args, tuple) and args else None for *_, args in tile}
    return bool(rawmodes) and rawmodes <= _U16_RAWMODES


def _as_u16(frame: Frame) -> Frame:
    """A Gray i32 frame of 16-bit unsigned samples as the u16 frame a Pillow with mode I;16 stores."""
    if frame.layout != "Gray" or frame.array.dtype != np.int32:
        return frame  # a keyed transparency is already 16-bit GrayAlpha
    return Frame(frame.array.astype(np.uint16), "Gray", frame.sig_bits)  # exact: the decoder unpacked 16 bits


def _legacy_xmp(im: Any) -> bytes | None:
    """XMP where Pillow 9 leaves it out of ``info["xmp"]``: a PNG's ``XML:com.adobe.xmp`` iTXt, a
    JPEG's APP1 XMP segment (newer Pillows put both in ``info["xmp"]``)."""
    value = im.info.get("XML:com.adobe.xmp")
    if value:
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    for marker, segment in getattr(im, "applist", ()):
        if marker == "APP1" and segment.startswith(_JPEG_XMP):
            return bytes(segment[len(_JPEG_XMP) :])
    return None
