"""``to_imi``: a DataArray back to an IMI file, its coordinates, units and CF attributes as science records (1.5)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import xarray as xr

from imij_plugins import physical

CHANNEL_NAMES = ("c", "channel", "channels", "band", "bands")


def _has_channels(da: xr.DataArray) -> bool:
    """Whether the last dim holds channels: a 4-d array, or a last dim named or marked (axis_kind) as one."""
    last = da.dims[-1]
    kind = da[last].attrs.get("axis_kind") if last in da.coords else None
    return da.ndim == 4 or (da.ndim == 3 and (kind == "channel" or str(last).lower() in CHANNEL_NAMES))


def _dim(da: xr.DataArray, name: str, binding: str) -> physical.Dim:
    """One dim: its transform from evenly spaced numeric coordinates, its unit and kind from their attributes."""
    coord = da.coords.get(name)
    if coord is None or coord.dtype.kind not in "iuf":
        return physical.new_dim(str(name), binding, da.sizes[name])
    attrs = coord.attrs
    scale, origin = physical.linear(coord.values, str(name))
    if da.sizes[name] == 1:
        scale = float(attrs.get("scale", 1.0))
    kind = attrs.get("axis_kind")
    return physical.new_dim(str(name), binding, da.sizes[name], scale, origin, str(attrs.get("units", "")),
                            None if kind is None else str(kind), str(attrs.get("axis_type", "")))


def describe(da: xr.DataArray, attrs: Mapping[str, object]) -> physical.Physical:
    """The neutral description of a DataArray whose stored-value CF attributes are ``attrs``."""
    dims = tuple(_dim(da, name, b) for name, b in zip(da.dims, physical.bindings(da.ndim, _has_channels(da))))
    count = dims[-1].size if dims[-1].binding == "channels" else 1
    cf = {k: v for k, v in attrs.items() if k not in ("pixel_is_area", "affine", "affine_axes", "resampling_method")}
    channels = tuple(physical.Channel(str(da.name or "image"), cf) for _ in range(count))
    scalars = tuple(
        physical.coordinate(str(name), float(c.values), c.attrs)
        for name, c in da.coords.items()
        if c.ndim == 0 and c.dtype.kind in "iuf"
    )
    affine = attrs.get("affine")
    return physical.Physical(
        dims, channels, scalars, bool(attrs.get("pixel_is_area", 0)),
        tuple(float(v) for v in np.ravel(affine)) if affine is not None else None,  # type: ignore[arg-type]
        tuple(str(n) for n in attrs.get("affine_axes", ())),  # type: ignore[union-attr]
        attrs.get("resampling_method"),  # type: ignore[arg-type]
        "pixel_is_area" in attrs,
    )


def to_imi(dataarray: xr.DataArray, path: str | os.PathLike[str], **options: object) -> None:
    """Write a DataArray as an IMI file: dims (frames,) rows, columns (, channels) in that order.

    Physical values with CF packing in their encoding (as ``open_dataarray`` gives them) are packed
    back to stored values first; coordinates become aXES (and cORD for scalar ones), CF
    attributes cALB and cATG. ``options`` are ``imij_plugins.write``'s.
    """
    variable = xr.conventions.encode_cf_variable(dataarray.variable, name=dataarray.name)
    p = describe(dataarray, variable.attrs)
    physical.write(os.fspath(path), np.asarray(variable.data), p, **options)
