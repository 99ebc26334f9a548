"""Pillow images and IMI arrays, both ways: what the Pillow plugin and ``imij convert`` share.

``to_pillow`` turns decoded samples into the bytes a Pillow mode unpacks (``modes.open_mode``);
``stored``/``stored_alpha`` turn a Pillow image into the array, layout and significant bits it is
written as (``modes.SAVE_MODES``), ``reduced`` and ``one_mode`` bring images to a mode that is
stored, ``metadata_options`` reads the writer's metadata options from save parameters and
``im.info``, and ``loop_count`` reads Pillow's ``loop``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import ExifTags, Image

from imij_plugins import api
from imij_plugins.errors import Unsupported
from imij_plugins.pillow import modes

__all__ = [
    "EXIF_PREFIX", "loop_count", "metadata_options", "one_mode", "reduced", "stored", "stored_alpha", "to_pillow",
]

EXIF_PREFIX = b"Exif\x00\x00"  # before the TIFF header in Pillow's info["exif"] (as PNG and WebP read it)
_DEFAULT_CICPS = frozenset(api.LAYOUT_DEFAULT_CICPS.values())


def to_pillow(samples: np.ndarray, entry: modes.OpenMode) -> np.ndarray:
    """The decoded (H, W, C) samples as the bytes ``entry.rawmode`` unpacks."""
    if entry.drop_padding:
        samples = samples[..., :-1]
    if entry.convert == modes.HIGH_BYTE:
        return np.ascontiguousarray(samples >> 8, dtype=np.uint8)
    if entry.convert == modes.NONZERO:
        return np.ascontiguousarray(samples != 0, dtype=np.uint8)
    if entry.convert == modes.SCALE:  # a stored value above the declaration shows as white
        top = (1 << entry.bits) - 1
        return np.ascontiguousarray((np.minimum(samples, top).astype(np.uint16) * 255 + top // 2) // top, dtype=np.uint8)
    if entry.convert == modes.FIT_I32 and samples.size and int(samples.max()) > 0x7FFFFFFF:
        msg = "u32 samples above 2**31 - 1 do not fit Pillow's mode I; " + modes.unsupported_message("Gray", samples.dtype)
        raise Unsupported(msg)
    return np.ascontiguousarray(samples, dtype=np.dtype(entry.dtype))


def reduced(im: Image.Image) -> Image.Image:
    """``im`` in the Pillow mode it is stored as: a colour key made alpha (``modes.KEYED_TRANSPARENCY``),
    a ``via`` mode converted to, a palette expanded to RGB(A), or to L(A) when every colour is gray."""
    if im.info.get("transparency") is not None and im.mode in modes.KEYED_TRANSPARENCY:
        return im.convert(modes.KEYED_TRANSPARENCY[im.mode])
    entry = modes.SAVE_MODES.get(im.mode)
    if entry is None or entry.via is None:
        return im
    im = im.convert("RGBA" if entry.expands_palette and _has_transparency(im) else entry.via)
    if entry.expands_palette:
        array = np.asarray(im)
        if (array[..., 0] == array[..., 1]).all() and (array[..., 1] == array[..., 2]).all():
            im = im.convert("LA" if im.mode == "RGBA" else "L")  # exact: L of equal R, G, B is that value
    return im


def stored(im: Image.Image) -> api.Frame:
    """What ``stored_alpha`` stores, for callers that write straight alpha only (the converter's
    Pillow source): a premultiplied mode is refused rather than labelled straight."""
    frame, alpha_mode = stored_alpha(im)
    if alpha_mode:
        msg = f"cannot write mode {im.mode} as straight alpha"
        raise OSError(msg)
    return frame


def stored_alpha(im: Image.Image) -> tuple[api.Frame, int]:
    """The (H, W, C) array, layout and significant bits a Pillow image is stored as, and its alpha
    mode (``modes.SAVE_MODES``)."""
    key = im.info.get("transparency")
    if isinstance(key, int) and im.mode in modes.KEYED_16_BIT:
        gray = np.asarray(im)
        if gray.size and not 0 <= int(gray.min()) <= int(gray.max()) <= 0xFFFF:  # mode I
            msg = f"cannot write mode {im.mode} with a transparency key as IMI: samples outside 0..65535"
            raise OSError(msg)
        alpha = np.where(gray == key, 0, 0xFFFF)
        return api.Frame(np.stack([gray, alpha], axis=2).astype(np.uint16), "GrayAlpha"), 0
    im = reduced(im)
    entry = modes.SAVE_MODES.get(im.mode)
    if entry is None:
        msg = f"cannot write mode {im.mode} as IMI"  # as PngImagePlugin._save
        raise OSError(msg)
    array = np.asarray(im)
    if array.ndim == 2:
        array = array[:, :, None]
    if array.dtype == np.bool_:
        array = array.astype(np.uint8)  # mode 1: 0/1, declared with 1 significant bit
    sig_bits = (entry.sig_bits,) * array.shape[2] if entry.sig_bits is not None else None
    return api.Frame(array, entry.layout, sig_bits), entry.alpha_mode


def loop_count(value: object) -> int:
    """Pillow's ``loop`` (a save parameter or ``info`` key) as IMI's loop count (1.3: 0 plays forever):
    unsaid is 0, as Pillow's APNG and WebP writers default, and GIF's ``None`` plays once."""
    return 1 if value is None else int(value)  # type: ignore[call-overload]


_COMMON_MODES = {(False, False): "L", (False, True): "LA", (True, False): "RGB", (True, True): "RGBA"}


def one_mode(images: list[Image.Image]) -> list[Image.Image]:
    """Animation frames (already ``reduced``) in one mode: mixed 1/L/LA/RGB/RGBA frames converted
    to the smallest mode that holds them all, as Pillow's APNG, GIF and WebP writers bring frames to
    one mode; other mixes are left to the core, which refuses frames that differ (pages may)."""
    found = {i.mode for i in images}
    if len(found) == 1 or not found <= {"1", "L", "LA", "RGB", "RGBA"}:
        return images
    mode = _COMMON_MODES[(bool(found & {"RGB", "RGBA"}), bool(found & {"LA", "RGBA"}))]
    return [i.convert(mode) for i in images]


def metadata_options(im: Image.Image, params: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata options of encode(): save parameters ``params`` first; what is safe to copy
    falls back to ``im.info``."""
    info = params
    out: dict[str, Any] = {}
    for key in ("icc_profile", "exif", "xmp"):
        value = info.get(key, im.info.get(key))  # PNG falls back to im.info for ICC
        if isinstance(value, Image.Exif):
            value = value.tobytes()
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not value:
            continue
        value = bytes(value)
        if key == "exif" and value.startswith(EXIF_PREFIX):
            value = value[len(EXIF_PREFIX) :]  # eXIf holds the TIFF header onward (PNG and WebP _save)
        out[key] = value
    dpi = info.get("dpi", im.info.get("dpi"))  # written as Exif resolution tags by the core
    if dpi and "dpi" not in info and not all(float(v) > 0 for v in dpi):
        dpi = None  # (0, 0) in im.info (DCX, PCX): unknown, omitted; a dpi passed to save is checked
    if dpi:
        out["dpi"] = (float(dpi[0]), float(dpi[1]))
    if "cicp" in info:
        out["cicp"] = info["cicp"]
    elif im.info.get("cicp") is not None and tuple(im.info["cicp"]) not in _DEFAULT_CICPS:
        out["cicp"] = tuple(im.info["cicp"])  # a layout default is left to the stored layout's default
    if info.get("mastering_display", im.info.get("mastering_display")) is not None:
        out["mastering_display"] = info.get("mastering_display", im.info.get("mastering_display"))
    for key in ("content_light_level", "diffuse_white", "science"):  # unsafe to copy: only when passed
        if info.get(key) is not None:
            out[key] = info[key]
    if "orientation" in info:
        orientation = info["orientation"]
    elif "exif" in info:
        orientation = _exif_orientation(lambda: _parse_exif(info["exif"]))
    else:
        orientation = _exif_orientation(im.getexif)  # an IMI source's header orientation too (getexif)
    if orientation != 1:
        out["orientation"] = int(orientation)
    return out


def _parse_exif(value: Any) -> Image.Exif:
    if isinstance(value, Image.Exif):
        return value
    exif = Image.Exif()
    if value:
        exif.load(bytes(value))
    return exif


def _exif_orientation(get_exif: Any) -> int:
    """The Exif Orientation (1 when there is none, or when Pillow cannot parse the Exif)."""
    try:
        return int(get_exif().get(ExifTags.Base.Orientation, 1))
    except (SyntaxError, ValueError, TypeError, struct.error, OSError):
        return 1


def _has_transparency(im: Image.Image) -> bool:
    """``Image.has_transparency_data`` (Pillow 10.1+), with its rule written out for older Pillow."""
    found = getattr(im, "has_transparency_data", None)
    if found is not None:
        return bool(found)
    return im.mode in ("LA", "La", "PA", "RGBA", "RGBa") or "transparency" in im.info
