"""The npe2 reader: ``.imi`` files and ``.imijset`` archives as ``(data, kwargs, "image")`` layer tuples."""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from imij_plugins import imijset, physical
from imij_plugins.lazy import LazyImage, uniform
from imij_plugins.reader import ImijFile
from imij_plugins.remote import is_remote

PathOrPaths = str | Sequence[str]
LayerData = tuple[Any, dict[str, Any], str]
EXTENSIONS = (".imi", ".imijset")
LAZY_BYTES = 1 << 27  # larger images (128 MiB of samples) and every stack come as dask arrays
RGB_LAYOUTS = ("RGB", "RGBA")


def get_reader(path: PathOrPaths) -> Callable[[PathOrPaths], list[LayerData]] | None:
    """``read`` when every path is an IMI file or IMIJ-Set archive, else None (another plugin's turn).

    napari passes URLs through unchanged; ``https://`` and ``s3://`` ones (fsspec's credentials
    from the environment) are read by ranges (docs/REMOTE.md)."""
    paths = [path] if isinstance(path, str) else list(path)
    return read if paths and all(_file_part(str(p)).lower().endswith(EXTENSIONS) for p in paths) else None


def _file_part(path: str) -> str:
    """The path whose extension and name name the file: a URL's path, without its query (signed URLs)."""
    return urllib.parse.urlsplit(path).path if is_remote(path) else path


def _stem(path: str) -> str:
    """The layer name: the file name without its extension."""
    return os.path.splitext(os.path.basename(_file_part(path)))[0]


def read(path: PathOrPaths) -> list[LayerData]:
    """Every layer of every path; several paths (npe2's ``stack=True``) of one shape and dtype are one stacked layer."""
    paths = [path] if isinstance(path, str) else list(path)
    stacked = read_stack(paths) if len(paths) > 1 else None
    return stacked or [layer for p in paths for layer in (read_archive(p) if _file_part(p).lower().endswith(".imijset") else read_file(p))]


def read_stack(paths: Sequence[str]) -> list[LayerData] | None:
    """IMI files as one layer with a leading "file" dim (the first file's description), as napari's
    builtin reader stacks files; None when one is an archive, or differs in shape, dtype or frames."""
    if not all(_file_part(p).lower().endswith(".imi") for p in paths):
        return None
    with ImijFile(paths[0]) as f:
        if not uniform(f):
            return None
        p = physical.describe(f, None)
    images = []
    for path in paths:
        try:
            image = LazyImage(path, frame_dim=p.dim("frames") is not None, channel_dim=p.dim("channels") is not None)
        except ValueError:  # its pages differ: not one image stack
            return None
        image.close()  # reopened by the first read: thousands of files need not stay mapped
        if images and _kind(image) != _kind(images[0]):
            return None
        images.append(image)
    return [_stack(images, p, "file", _stem(paths[0]))]


def _kind(image: LazyImage) -> tuple[object, ...]:
    """What images must share to stack: shape, dtype and frame count (a dim may hide a single frame)."""
    return image.shape, image.dtype, len(image.frames)


def read_file(path: str) -> list[LayerData]:
    """One layer for an image or a stack of frames or pages; one per page when pages differ."""
    name = _stem(path)
    with ImijFile(path) as f:
        if uniform(f):
            return [_layer(path, f, None, name)]
        return [_layer(path, f, i, f"{name} page {i}") for i in range(f.n_frames)]


def _layer(src: str | bytes, f: ImijFile, index: int | None, name: str) -> LayerData:
    """The layer of frame or page ``index`` (None: every one, stacked)."""
    p = physical.describe(f, index)
    image = LazyImage(src, index=index, frame_dim=p.dim("frames") is not None, channel_dim=p.dim("channels") is not None)
    return _data(image, image.frame_dim), layer_kwargs(p, name), "image"


def _data(image: LazyImage, lazy: bool) -> Any:
    """A dask array over the units for stacks and large images, else the samples themselves."""
    nbytes = int(np.prod(image.shape)) * image.dtype.itemsize
    if not lazy and nbytes <= LAZY_BYTES:
        return image[(slice(None),) * image.ndim]
    import dask.array as da

    return da.from_array(image, chunks=image.chunks, asarray=True, name=False)


def layer_kwargs(p: physical.Physical, name: str) -> dict[str, Any]:
    """``add_image`` keywords: rgb or channel_axis, scale, translate, units, axis_labels, contrast limits, names."""
    channels = p.dim("channels")
    layout = str(p.attrs.get("layout", ""))
    rgb = channels is not None and layout in RGB_LAYOUTS
    spatial = [d for d in p.dims if d.binding != "channels"]
    kwargs: dict[str, Any] = {
        "scale": [d.scale for d in spatial],
        "translate": [d.origin for d in spatial],
        "axis_labels": [d.name for d in spatial],
        "metadata": {"imij": {**p.attrs, "channels": [dict(c.attrs) for c in p.channels],
                              "units": [d.unit for d in spatial]}},
    }
    if any(d.unit for d in spatial):
        kwargs["units"] = [napari_unit(d.unit) for d in spatial]
    limits = [_limits(c.attrs) for c in p.channels]
    if rgb:
        kwargs |= {"rgb": True, "name": name}
    elif channels is not None:
        kwargs |= {"channel_axis": p.dims.index(channels), "name": [c.name for c in p.channels]}
        if all(lim is not None for lim in limits):
            kwargs["contrast_limits"] = limits
    else:
        quantity = any(k in p.channels[0].attrs for k in ("long_name", "standard_name"))  # the name is cALB's
        kwargs["name"] = p.channels[0].name if quantity else name
        if limits[0] is not None:
            kwargs["contrast_limits"] = limits[0]
    return kwargs


def _limits(attrs: Any) -> list[float] | None:
    """Contrast limits from the cALB valid range (stored values, as napari shows them), if both bounds exist."""
    if "valid_min" in attrs and "valid_max" in attrs:
        return [float(attrs["valid_min"]), float(attrs["valid_max"])]
    return None


def napari_unit(unit: str) -> str:
    """The unit as napari takes it: napari parses units with pint, so a unit pint does not know becomes "pixel"."""
    if not unit:
        return "pixel"
    try:
        import pint
    except ImportError:  # no pint, no napari: the npe2 reader alone
        return unit
    try:
        pint.get_application_registry().parse_units(unit)
    except Exception:  # pint raises several error types for unknown or malformed units
        return "pixel"
    return unit


def read_archive(path: str) -> list[LayerData]:
    """One stacked layer when every entry shares shape and dtype, else one layer per entry."""
    stem = _stem(path)
    with imijset.open(path) as archive:
        entries = [(key, archive.entry(key).filename, archive.get(key)) for key in archive.keys()]
    opened = [ImijFile(blob) for _, _, blob in entries]
    try:
        shapes = {(f.image_info(0).shape, f.image_info(0).dtype, f.n_frames) for f in opened}
        if len(shapes) == 1 and entries and opened[0].n_frames == 1:
            p = physical.describe(opened[0], 0)
            channel_dim = p.dim("channels") is not None
            images = [LazyImage(blob, index=0, frame_dim=False, channel_dim=channel_dim) for _, _, blob in entries]
            return [_stack(images, p, "entry", stem)]
        return [_layer(blob, f, None, filename or f"{stem} key {key}") for (key, filename, blob), f in zip(entries, opened)]
    finally:
        for f in opened:
            f.close()


def _stack(images: list[LazyImage], p: physical.Physical, dim: str, name: str) -> LayerData:
    """Images of one shape and dtype as one dask-backed layer with a leading ``dim`` (``p`` describes the first)."""
    import dask.array as da

    data = da.stack([da.from_array(im, chunks=im.chunks, asarray=True, name=False) for im in images])
    leading = physical.new_dim(dim, "frames", len(images), kind="other")
    return data, layer_kwargs(dataclasses.replace(p, dims=(leading, *p.dims)), name), "image"
