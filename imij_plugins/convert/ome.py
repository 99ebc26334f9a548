"""OME-TIFF and ImageJ hyperstacks through tifffile: their series as pages and a ``Stack``, and back to OME-TIFF.

Reading takes the physical sizes and units (OME ``PhysicalSizeX/Y/Z``, ``TimeIncrement`` and
their units; ImageJ ``unit``, ``spacing``, ``finterval`` and the X/YResolution tags) and the OME
channel names. Up to 4 channels (or the RGB samples) stay each image's channels, so their names
fit one cALB (1.5); more channels become a page dimension.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from imij_plugins import Frame
from imij_plugins.convert.compression import DEFAULT_COMPRESSION, tiff_arguments
from imij_plugins.convert.stack import Dim, Stack, ome_unit, udunits
from imij_plugins.pixels.dtypes import as_image_array

MAX_CHANNELS = 4  # 1.5 cALB count: 1..=4, the image's channel count
_OME_SIZES = {"x": "PhysicalSizeX", "y": "PhysicalSizeY", "z": "PhysicalSizeZ", "t": "TimeIncrement"}
_OME_DEFAULT_UNITS = {"x": "µm", "y": "µm", "z": "µm", "t": "s"}  # the OME schema's defaults
_RESOLUTION_TAGS = {"x": 282, "y": 283}  # X/YResolution: pixels per ``unit`` in ImageJ files


def is_hyperstack(tif: Any) -> bool:
    """Whether a TiffFile is one OME or ImageJ series, read as a hyperstack."""
    return bool(tif.is_ome or tif.is_imagej) and len(tif.series) == 1


def read_hyperstack(tif: Any) -> tuple[tuple[Frame, ...], Stack]:
    """The series' images in C order over its page dimensions, and its ``Stack`` (OME's T, Z, C,
    Y, X, even those of length 1, and RGB samples S)."""
    series = tif.series[0]
    # every dimension of the OME (or ImageJ) 5-D model, length 1 included, but single samples
    kept = [(a.lower(), n) for a, n in zip(series.get_axes(False), series.get_shape(False)) if a != "S" or n > 1]
    names = [name for name, _ in kept]
    array = series.asarray().reshape([n for _, n in kept])
    shape = dict(zip(names, array.shape))
    channels = "s" if "s" in names else "c" if shape.get("c", MAX_CHANNELS + 1) <= MAX_CHANNELS else None
    physical = _ome_sizes(tif) if tif.is_ome else _imagej_sizes(tif)
    dims = tuple(Dim(n, size, *physical.get(n, (None, ""))) for n, size in zip(names, array.shape))
    labels = _ome_channel_names(tif) if tif.is_ome and channels == "c" else ()
    if channels is not None:
        array = np.moveaxis(array, names.index(channels), -1)
    height, width = shape["y"], shape["x"]
    pages = array.reshape((-1, height, width) + ((array.shape[-1],) if channels else ()))
    stack = Stack(dims, channels, labels if len(labels) == shape.get("c") else ())
    return tuple(Frame(page) for page in pages), stack


def _ome_pixels(tif: Any) -> dict[str, Any]:
    import tifffile

    image = tifffile.xml2dict(tif.ome_metadata)["OME"]["Image"]
    return (image[0] if isinstance(image, list) else image)["Pixels"]


def _ome_sizes(tif: Any) -> dict[str, tuple[float, str]]:
    """name -> (step, UDUNITS-2 unit) from the OME Pixels element."""
    pixels = _ome_pixels(tif)
    return {
        name: (float(pixels[key]), udunits(pixels.get(key + "Unit", _OME_DEFAULT_UNITS[name])))
        for name, key in _OME_SIZES.items()
        if key in pixels
    }


def _ome_channel_names(tif: Any) -> tuple[str, ...]:
    channel = _ome_pixels(tif).get("Channel", [])
    return tuple(str(c.get("Name", "")) for c in (channel if isinstance(channel, list) else [channel]))


def _imagej_sizes(tif: Any) -> dict[str, tuple[float, str]]:
    """name -> (step, UDUNITS-2 unit) from ImageJ's description and resolution tags."""
    meta = tif.imagej_metadata or {}
    out: dict[str, tuple[float, str]] = {}
    unit = meta.get("unit")
    if unit is not None:
        tags = tif.pages.first.tags
        for name, code in _RESOLUTION_TAGS.items():
            tag = tags.get(code)
            if tag is not None and tag.value[0]:
                out[name] = (tag.value[1] / tag.value[0], udunits(meta.get(f"{name}unit", unit)))
    if "spacing" in meta:
        out["z"] = (float(meta["spacing"]), udunits(meta.get("zunit", unit)))
    if "finterval" in meta:
        out["t"] = (float(meta["finterval"]), udunits(meta.get("tunit", "s")))
    return out


def default_stack(frames: tuple[Frame, ...], kind: str) -> Stack:
    """The stack of images that came without one: pages along ``t`` for an animation, else ``q``
    (tifffile's "other"), RGB(A) samples as ``s``, other channel counts as ``c``."""
    first = as_image_array(frames[0].array)
    height, width, count = first.shape
    channel = "s" if count >= 3 and (frames[0].layout or "RGB").startswith("RGB") else "c"
    dims = [Dim("t" if kind == "animation" else "q", len(frames))] if len(frames) > 1 else []
    dims += [Dim(channel, count)] if channel == "c" and count > 1 else []
    dims += [Dim("y", height), Dim("x", width)] + ([Dim("s", count)] if channel == "s" else [])
    return Stack(tuple(dims), channel if count > 1 else None)


def write_ome(frames: tuple[Frame, ...], stack: Stack, icc: bytes | None, xmp: bytes | None, compression: str = DEFAULT_COMPRESSION) -> bytes:
    """An OME-TIFF of one series: the stack's dimensions, physical sizes, units and channel names,
    compressed as ``compression`` names (``compression.TIFF_COMPRESSIONS``)."""
    import tifffile

    arrays = [as_image_array(f.array) for f in frames]
    if any(a.shape != arrays[0].shape or a.dtype != arrays[0].dtype for a in arrays):
        raise ValueError("OME-TIFF holds one series of equal images, not mixed pages: convert to tiff")
    if len(arrays) != stack.pages:
        raise ValueError(f"{len(arrays)} images for a stack of {stack.pages} pages")
    data = np.stack(arrays).reshape([d.size for d in stack.page_dims] + list(arrays[0].shape))
    order = [d.name for d in stack.page_dims] + ["y", "x", stack.channels or "_"]
    if stack.channels is None:
        data = data[..., 0]
        order.pop()
    axes = [d.name for d in stack.dims]
    if stack.channels == "s":  # tifffile keeps RGB samples last
        axes = [a for a in axes if a != "s"] + ["s"]
    data = np.transpose(data, [order.index(a) for a in axes])
    metadata: dict[str, object] = {"axes": "".join(axes).upper()}
    for name, key in _OME_SIZES.items():
        dim = stack.dim(name)
        if dim is not None and dim.step is not None:
            metadata[key] = dim.step
            if dim.unit:
                metadata[key + "Unit"] = ome_unit(dim.unit)
    if stack.names:
        metadata["Channel"] = {"Name": list(stack.names)}
    out = io.BytesIO()
    tifffile.imwrite(
        out, data, ome=True, metadata=metadata, iccprofile=icc,
        photometric="rgb" if stack.channels == "s" else "minisblack",
        extratags=[(700, "B", len(xmp), xmp, True)] if xmp else (), **tiff_arguments(compression, data.dtype),
    )
    return out.getvalue()
