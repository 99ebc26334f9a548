"""The xarray backend: an IMI file as a Dataset of lazily decoded variables with CF attributes."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

import imij_plugins
from imij_plugins import physical
from imij_plugins.lazy import LazyImage, source_of
from imij_plugins.xarray import selection

if TYPE_CHECKING:
    from imij_plugins.container.metadata import ChannelCalibration

EXTENSIONS = (".imi", ".imijset")
# CF attributes that describe the stored values: a decoded variable keeps them in its encoding
PACKING = ("scale_factor", "add_offset", "_FillValue", "missing_value")


class ImiBackendArray(BackendArray):
    """One variable of an IMI file: all its channels, or one (``channel``), as stored or as physical values."""

    def __init__(self, image: LazyImage, channel: int | None = None, entry: ChannelCalibration | None = None):
        self.image = image
        self.channel = channel
        self.entry = entry
        self.shape = image.shape[:-1] if channel is not None else image.shape
        self.dtype = np.dtype(np.float64) if entry is not None else image.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        """Basic, outer and vectorized keys, each reading only the units it touches."""
        if isinstance(key, indexing.VectorizedIndexer):
            return self._decoded(selection.vectorized(self.image, self._full(key.tuple)))
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._raw)

    def _full(self, key: tuple[selection.Key, ...]) -> tuple[selection.Key, ...]:
        """The key on the LazyImage: this variable's channel appended."""
        return key + ((self.channel,) if self.channel is not None else ())

    def _raw(self, key: tuple[selection.Key, ...]) -> np.ndarray:
        """Outer indexing on the stored samples, decoded."""
        return self._decoded(selection.outer(self.image, self._full(key)))

    def _decoded(self, stored: np.ndarray) -> np.ndarray:
        """Physical values by cALB (1.5) when this variable decodes, else the stored samples."""
        return stored if self.entry is None else physical.physical_values(stored, self.entry)


def _coordinate_attrs(unit: str, kind: str, axis_type: str) -> dict[str, object]:
    """A dim's or scalar coordinate's attributes from its aXES axis."""
    attrs: dict[str, object] = {"axis_kind": kind}
    if unit:
        attrs["units"] = unit
    if axis_type:
        attrs["axis_type"] = axis_type
    return attrs


def coordinates(p: physical.Physical) -> dict[str, xr.Variable]:
    """Dim coordinates from aXES (channel names without one) and the cORD scalar coordinates."""
    out: dict[str, xr.Variable] = {}
    for d in p.dims:
        if p.has_axes:
            out[d.name] = xr.Variable(d.name, d.positions(), _coordinate_attrs(d.unit, d.kind, d.type))
        elif d.binding == "channels" and len({c.name for c in p.channels}) == len(p.channels):
            out[d.name] = xr.Variable(d.name, [c.name for c in p.channels])
    for c in p.coordinates:
        attrs = _coordinate_attrs(c.unit, c.kind, c.type)
        if (c.scale, c.translation) != (1.0, 0.0):
            attrs |= {"scale": c.scale, "translation": c.translation}
        out[c.name] = xr.Variable((), c.value, attrs)
    return out


def geometry_attrs(p: physical.Physical) -> dict[str, object]:
    """The aXES fields a variable carries in its attributes: pixel convention, affine, method."""
    attrs: dict[str, object] = {}
    if p.has_axes:
        attrs["pixel_is_area"] = int(p.pixel_is_area)
    if p.affine is not None:
        attrs["affine"] = np.array(p.affine)
        attrs["affine_axes"] = list(p.axis_order)
    if p.method is not None:
        attrs["resampling_method"] = p.method
    return attrs


def _variable(dims: tuple[str, ...], data: ImiBackendArray, attrs: dict[str, object], chunks: dict[str, int],
              decoded: bool) -> xr.Variable:
    """A lazy variable; decoded, the packing attributes move to its encoding (xarray's convention)."""
    encoding: dict[str, object] = {"preferred_chunks": chunks, "dtype": data.image.dtype}
    if decoded:
        encoding |= {k: attrs.pop(k) for k in PACKING if k in attrs}
    return xr.Variable(dims, indexing.LazilyIndexedArray(data), attrs, encoding)


def open_imi(filename_or_obj: object, *, mask_and_scale: bool = True, index: int | None = None,
             drop_variables: Iterable[str] | None = None, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """The Dataset of an IMI file: see ``ImiBackendEntrypoint.open_dataset``."""
    src = source_of(filename_or_obj)
    with imij_plugins.open(src, storage_options=storage_options) as f:
        p = physical.describe(f, index)
    image = LazyImage(src, index=index, frame_dim=p.dim("frames") is not None, channel_dim=p.dim("channels") is not None,
                      storage_options=storage_options)
    dims = tuple(d.name for d in p.dims)
    chunks = dict(zip(dims, image.chunks))
    geometry = geometry_attrs(p)
    entries = [physical.calibration(c.attrs) for c in p.channels]
    decode = [e if mask_and_scale and e is not None and physical.changes_values(e) else None for e in entries]
    variables: dict[str, xr.Variable] = {}
    if all(c.attrs == p.channels[0].attrs for c in p.channels):
        data = ImiBackendArray(image, None, decode[0])
        variables["image"] = _variable(dims, data, {**p.channels[0].attrs, **geometry}, chunks, decode[0] is not None)
    else:  # channels with their own calibration: one variable each, so CF attributes apply
        plane_dims = tuple(d for d in dims if d != p.dim("channels").name)  # type: ignore[union-attr]
        plane_chunks = {d: chunks[d] for d in plane_dims}
        for i, c in enumerate(p.channels):
            name = c.name if c.name not in variables else f"{c.name}_{i}"
            data = ImiBackendArray(image, i, decode[i])
            variables[name] = _variable(plane_dims, data, {**c.attrs, **geometry}, plane_chunks, decode[i] is not None)
    for name in drop_variables or ():
        variables.pop(name, None)
    ds = xr.Dataset(variables, coordinates(p), dict(p.attrs))
    ds.set_close(image.close)
    return ds


def _names(drop_variables: str | Iterable[str] | None) -> Iterable[str] | None:
    """``drop_variables`` as names (xarray allows one name as a string)."""
    return [drop_variables] if isinstance(drop_variables, str) else drop_variables


class ImiBackendEntrypoint(BackendEntrypoint):
    """``engine="imi"``: IMI files (``.imi``) as lazy Datasets with aXES coordinates and cALB/cATG CF attributes."""

    description = "Open IMI (.imi) images (IMIJ-Set archives as trees): lazy region reads, aXES coordinates, cALB/cATG as CF attributes"
    url = ""  # the project has no published address yet
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale", "index", "storage_options")
    supports_groups = True

    def open_dataset(
        self,
        filename_or_obj: object,
        *,
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool = True,
        index: int | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> xr.Dataset:
        """Frames or pages stacked (``index`` picks one); ``mask_and_scale`` gives physical values, NaN where missing.
        A URL is read lazily by ranges, ``storage_options`` going to its fsspec filesystem."""
        from imij_plugins.xarray import tree

        if tree.is_archive(filename_or_obj):
            raise ValueError("an IMIJ-Set archive holds many images: open it with xr.open_datatree(path, engine=\"imi\")")
        return open_imi(filename_or_obj, mask_and_scale=mask_and_scale, index=index, drop_variables=_names(drop_variables),
                        storage_options=storage_options)

    def open_datatree(
        self,
        filename_or_obj: object,
        *,
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool = True,
        storage_options: dict[str, Any] | None = None,
    ) -> xr.DataTree:
        """A node per frame or page of a file with several (one node otherwise), or per entry of an IMIJ-Set archive."""
        from imij_plugins.xarray import tree

        return tree.open_tree(filename_or_obj, mask_and_scale=mask_and_scale, drop_variables=_names(drop_variables),
                              storage_options=storage_options)

    def open_groups_as_dict(
        self,
        filename_or_obj: object,
        *,
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool = True,
        storage_options: dict[str, Any] | None = None,
    ) -> dict[str, xr.Dataset]:
        """``open_datatree``'s nodes by path."""
        from imij_plugins.xarray import tree

        return tree.open_groups(filename_or_obj, mask_and_scale=mask_and_scale, drop_variables=_names(drop_variables),
                                storage_options=storage_options)

    def guess_can_open(self, filename_or_obj: object) -> bool:
        """A path ending in ``.imi`` or ``.imijset``, or bytes or a file that start with the IMI signature."""
        if isinstance(filename_or_obj, (str, os.PathLike)):
            path = os.fspath(filename_or_obj)
            return str(path).lower().endswith(EXTENSIONS)
        if isinstance(filename_or_obj, (bytes, bytearray, memoryview)):
            return imij_plugins.is_imi(bytes(filename_or_obj[:8]))
        if hasattr(filename_or_obj, "read") and hasattr(filename_or_obj, "seek"):
            start = filename_or_obj.tell()  # type: ignore[union-attr]
            prefix = filename_or_obj.read(8)  # type: ignore[union-attr]
            filename_or_obj.seek(start)  # type: ignore[union-attr]
            return isinstance(prefix, bytes) and imij_plugins.is_imi(prefix)
        return False
