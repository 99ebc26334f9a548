"""``open_datatree``'s nodes: one Dataset per frame or page of an IMI file, per entry of an IMIJ-Set archive."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import xarray as xr

import imij_plugins
from imij_plugins import imijset, physical
from imij_plugins.lazy import Source, source_of
from imij_plugins.xarray.backend import open_imi

ARCHIVE_EXTENSIONS = (".imijset",)


def is_archive(filename_or_obj: object) -> bool:
    """Whether ``filename_or_obj`` is a path to an IMIJ-Set archive (by its extension)."""
    return isinstance(filename_or_obj, (str, os.PathLike)) and os.fspath(filename_or_obj).lower().endswith(ARCHIVE_EXTENSIONS)


def _image_groups(src: Source, path: str, **options: object) -> dict[str, xr.Dataset]:
    """One image's nodes: itself at ``path`` when it has one frame, else an empty node with a child per frame or page."""
    with imij_plugins.open(src, storage_options=options.get("storage_options")) as f:  # type: ignore[arg-type]
        count, kind = f.n_frames, f.kind
    if count == 1:
        return {path: open_imi(src, **options)}  # type: ignore[arg-type]
    name = physical.FRAME_NAMES.get(kind or "", "frame")
    groups = {path: xr.Dataset(attrs={"frame_kind": kind, "frames": count})}
    for i in range(count):
        groups[f"{path.rstrip('/')}/{name}_{i}"] = open_imi(src, index=i, **options)  # type: ignore[arg-type]
    return groups


def _archive_groups(path: str, storage_options: dict[str, Any] | None, **options: object) -> dict[str, xr.Dataset]:
    """An archive's nodes: ``key_<key>`` per IMI entry (read into memory now), its filename an attribute."""
    groups: dict[str, xr.Dataset] = {"/": xr.Dataset()}
    with imijset.open(path, storage_options=storage_options) as archive:
        for key in archive.keys():
            blob = archive.get(key)
            if not imij_plugins.is_imi(blob[:8]):
                continue  # the pyramid catalog and other non-image entries
            node = f"/key_{key}"
            groups |= _image_groups(blob, node, **options)
            filename = archive.entry(key).filename
            groups[node].attrs |= {"imijset_key": key, **({"filename": filename} if filename else {})}
    return groups


def open_groups(filename_or_obj: object, *, mask_and_scale: bool = True, drop_variables: Iterable[str] | None = None,
                storage_options: dict[str, Any] | None = None) -> dict[str, xr.Dataset]:
    """The nodes of a file (a node per frame or page when it has several) or of an archive (a node per entry);
    a URL's file is read by ranges, ``storage_options`` going to its fsspec filesystem."""
    options = {"mask_and_scale": mask_and_scale, "drop_variables": drop_variables}
    if is_archive(filename_or_obj):
        return _archive_groups(os.fspath(filename_or_obj), storage_options, **options)  # type: ignore[arg-type]
    return _image_groups(source_of(filename_or_obj), "/", **options, storage_options=storage_options)


def open_tree(filename_or_obj: object, *, mask_and_scale: bool = True, drop_variables: Iterable[str] | None = None,
              storage_options: dict[str, Any] | None = None) -> xr.DataTree:
    """``open_groups`` as a DataTree; closing a node closes its file."""
    groups = open_groups(filename_or_obj, mask_and_scale=mask_and_scale, drop_variables=drop_variables,
                         storage_options=storage_options)
    try:
        tree = xr.DataTree.from_dict(groups)
    except Exception:
        for ds in groups.values():
            ds.close()
        raise
    for path, ds in groups.items():
        tree[path].set_close(ds.close)
    return tree
