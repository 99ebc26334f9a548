"""Writing a ``Decoded`` description as IMI, PNG, TIFF or ``.npy`` bytes.

Each sink returns the whole output file, so the pipeline can prove it by decoding it again
before anything reaches the disk. A sink that cannot hold the images exactly (PNG and 32-bit
or float samples, ``.npy`` and several pages...) raises ``ValueError`` saying what to use instead.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

import imij_plugins
from imij_plugins import EncodeOptions, Frame
from imij_plugins.convert.compression import DEFAULT_COMPRESSION, tiff_arguments
from imij_plugins.convert.ome import default_stack, write_ome
from imij_plugins.convert.sources import Decoded
from imij_plugins.convert.stack import science
from imij_plugins.pixels.dtypes import as_image_array, layout_code
from imij_plugins.registry.samples import LAYOUTS

if TYPE_CHECKING:
    from PIL import Image as PILImage

EXTENSIONS = {"imi": ".imi", "png": ".png", "tiff": ".tif", "ome.tiff": ".ome.tif", "npy": ".npy"}
FORMATS = tuple(EXTENSIONS)
_BY_SUFFIX = {**{ext: fmt for fmt, ext in EXTENSIONS.items()}, ".tiff": "tiff", ".ome.tiff": "ome.tiff"}
# Pillow modes PNG stores sample for sample (Pillow writes mode I as 16 bits, clipping)
_PNG_MODES = frozenset({"L", "LA", "RGB", "RGBA", "I;16"})
# IMI layout -> TIFF (photometric, extrasamples); unassociated alpha, as Pillow and PNG keep it
_TIFF_LAYOUTS = {
    "Gray": ("minisblack", ()),
    "GrayAlpha": ("minisblack", ("unassalpha",)),
    "RGB": ("rgb", ()),
    "RGBA": ("rgb", ("unassalpha",)),
    "CMYK": ("separated", ()),
}
# IMI alpha_mode (1.0) -> TIFF ExtraSamples of the last channel: premultiplied is associated
# alpha, undefined padding an unspecified extra sample
_TIFF_EXTRASAMPLES = {1: ("assocalpha",), 3: ("unspecified",)}
_METRE_IN_INCHES, _PHYS_MAX = 0.0254, 0xFFFFFFFF  # PNG pHYs: u32 pixels per metre
_CLASSIC_TIFF_BYTES = 1 << 31  # above this many sample bytes, write BigTIFF (32-bit offsets run out)


def _extension(path: str | os.PathLike[str]) -> str | None:
    """The known extension ``path`` ends with (the longest: ``.ome.tif`` before ``.tif``), any case."""
    name = os.fspath(path).lower()
    return next((ext for ext in sorted(_BY_SUFFIX, key=len, reverse=True) if name.endswith(ext)), None)


def format_of(path: str | os.PathLike[str]) -> str | None:
    """The output format a file name's extension names, or None."""
    ext = _extension(path)
    return _BY_SUFFIX[ext] if ext else None


def strip_extension(path: str) -> str:
    """``path`` without its known extension (``a.ome.tif`` -> ``a``), else without its last suffix."""
    ext = _extension(path)
    return path[: -len(ext)] if ext else os.path.splitext(path)[0]


def encode_output(decoded: Decoded, fmt: str, options: EncodeOptions, compression: str = DEFAULT_COMPRESSION) -> bytes:
    """The output file in format ``fmt`` ("imi", "png", "tiff", "ome.tiff" or "npy"); ``options``
    code IMI, ``compression`` TIFF and OME-TIFF (``compression.TIFF_COMPRESSIONS``)."""
    if fmt in _TIFF_SINKS:
        return _TIFF_SINKS[fmt](decoded, compression)
    return _SINKS[fmt](decoded, options)


def _imi(decoded: Decoded, options: EncodeOptions) -> bytes:
    """IMI through the core: a still image, an animation (durations, loop) or pages, with the
    metadata and a hyperstack's science records (1.5)."""
    opts = options.replace(**decoded.metadata.options())  # type: ignore[arg-type]
    if decoded.stack is not None:
        opts = opts.replace(science=science(decoded.stack))
    if decoded.kind == "still":
        return imij_plugins.encode(decoded.frames[0], opts)
    if decoded.kind == "animation":
        return imij_plugins.encode(list(decoded.frames), opts, kind="animation", durations=list(decoded.durations), loop=decoded.loop)
    return imij_plugins.encode(list(decoded.frames), opts, kind="pages")


def _samples(frame: Frame) -> tuple[np.ndarray, str]:
    """A frame's (H, W, C) little-endian samples and its layout name."""
    array = as_image_array(frame.array)
    return array, LAYOUTS[layout_code(array.shape[2], frame.layout)].name


def _plane(array: np.ndarray) -> np.ndarray:
    """An (H, W, C) array as other formats store it: (H, W) for one channel."""
    return array[..., 0] if array.shape[2] == 1 else array


def _pillow_image(frame: Frame) -> PILImage.Image:
    """A frame as the Pillow image the IMI plugin opens it as, when PNG can store that mode exactly."""
    from PIL import Image

    from imij_plugins.pillow import modes
    from imij_plugins.pillow.images import to_pillow

    array, layout = _samples(frame)
    entry = modes.open_mode(layout, array.dtype)
    if entry is None or not entry.lossless or entry.mode not in _PNG_MODES:
        raise ValueError(f"PNG cannot hold {layout} {modes.sample_name(array.dtype)} samples exactly: convert to tiff or npy")
    data = to_pillow(array, entry)
    return Image.frombytes(entry.mode, (array.shape[1], array.shape[0]), data.tobytes(), "raw", entry.rawmode)


def _png(decoded: Decoded, options: EncodeOptions) -> bytes:
    """PNG (APNG for an animation) through Pillow, with ICC, Exif, XMP (iTXt) and dpi (pHYs)."""
    from PIL import PngImagePlugin

    if decoded.kind == "pages":
        raise ValueError(f"PNG holds one image or an animation, not {len(decoded.frames)} pages: convert to tiff")
    if decoded.kind == "animation":
        _check_no_repeated_frame(decoded.frames)
    if decoded.metadata.alpha_mode in _TIFF_EXTRASAMPLES:
        what = "premultiplied alpha" if decoded.metadata.alpha_mode == 1 else "a last channel that is no alpha"
        raise ValueError(f"PNG cannot hold {what} (its alpha is straight): convert to tiff")
    images = [_pillow_image(f) for f in decoded.frames]
    if decoded.kind == "animation" and images[0].mode == "I;16":
        raise ValueError("APNG cannot hold 16-bit gray frames (Pillow's APNG writer does not write them): convert to tiff or imi")
    meta = decoded.metadata
    params: dict[str, object] = {k: v for k, v in (("icc_profile", meta.icc_profile), ("exif", meta.exif)) if v}
    if meta.dpi and all(0 < round(d / _METRE_IN_INCHES) <= _PHYS_MAX for d in meta.dpi):
        params["dpi"] = meta.dpi  # a dpi pHYs cannot hold stays in the Exif resolution tags only
    if meta.xmp:
        info = PngImagePlugin.PngInfo()
        info.add_itxt("XML:com.adobe.xmp", meta.xmp.decode("utf-8"))
        params["pnginfo"] = info
    if decoded.kind == "animation":
        params.update(save_all=True, append_images=images[1:], loop=decoded.loop,
                      duration=[float(d * 1000) for d in decoded.durations], default_image=False)
    out = io.BytesIO()
    images[0].save(out, "PNG", **params)
    return out.getvalue()


def _check_no_repeated_frame(frames: tuple[Frame, ...]) -> None:
    """ValueError for an animation with two equal consecutive frames: Pillow's APNG writer merges
    them into one (adding their durations), so the APNG would not hold every frame."""
    for index in range(1, len(frames)):
        if np.array_equal(frames[index - 1].array, frames[index].array):
            raise ValueError(f"APNG cannot hold equal consecutive frames {index - 1} and {index} (Pillow's writer merges them): convert to tiff or imi")


def _tiff(decoded: Decoded, compression: str) -> bytes:
    """TIFF through tifffile: every frame or page a page of its own dtype, compressed; ICC, XMP
    and dpi on the first."""
    import tifffile

    meta = decoded.metadata
    out = io.BytesIO()
    bigtiff = sum(f.array.nbytes for f in decoded.frames) > _CLASSIC_TIFF_BYTES
    with tifffile.TiffWriter(out, bigtiff=bigtiff) as tif:
        for index, frame in enumerate(decoded.frames):
            array, layout = _samples(frame)
            if layout not in _TIFF_LAYOUTS:
                raise ValueError(f"TIFF has no photometric interpretation for {layout}: convert to imi or npy")
            photometric, extrasamples = _TIFF_LAYOUTS[layout]
            if extrasamples:
                extrasamples = _TIFF_EXTRASAMPLES.get(meta.alpha_mode, extrasamples)
            first = index == 0
            tif.write(
                _plane(array),
                photometric=photometric,
                planarconfig="contig" if array.shape[2] > 1 else None,
                extrasamples=extrasamples or None,
                metadata=None,
                iccprofile=meta.icc_profile if first else None,
                resolution=meta.dpi if first else None,
                resolutionunit="INCH" if first and meta.dpi else None,
                extratags=[(700, "B", len(meta.xmp), meta.xmp, True)] if first and meta.xmp else (),
                **tiff_arguments(compression, array.dtype),
            )
    return out.getvalue()


def _ome_tiff(decoded: Decoded, compression: str) -> bytes:
    """OME-TIFF through tifffile: the stack's dimensions, physical sizes, units and channel names
    (pages along ``q`` or, for an animation, ``t`` when the input had none), ICC and XMP."""
    stack = decoded.stack or default_stack(decoded.frames, decoded.kind)
    return write_ome(decoded.frames, stack, decoded.metadata.icc_profile, decoded.metadata.xmp, compression)


def _npy(decoded: Decoded, options: EncodeOptions) -> bytes:
    """One image as ``.npy``: (H, W) for one channel, else (H, W, C)."""
    if len(decoded.frames) != 1:
        raise ValueError(f"a .npy file holds one image, not {len(decoded.frames)} frames or pages: convert to tiff")
    out = io.BytesIO()
    np.save(out, _plane(_samples(decoded.frames[0])[0]))
    return out.getvalue()


_SINKS: dict[str, Callable[[Decoded, EncodeOptions], bytes]] = {"imi": _imi, "png": _png, "npy": _npy}
_TIFF_SINKS: dict[str, Callable[[Decoded, str], bytes]] = {"tiff": _tiff, "ome.tiff": _ome_tiff}
