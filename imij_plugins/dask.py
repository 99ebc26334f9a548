"""Dask collections over IMI files and IMIJ-Set archives, for one machine or a cluster.

``imread`` stacks many files into one lazy array: one task per file, or per band of whole stripes
(2.3) of a file larger than ``block_bytes`` (a region read decodes only the units it overlaps).
``from_archive`` stacks an archive's entries (one task per entry) and ``to_bag`` gives them as a
bag of records with their keys, filenames and attributes. Shapes and dtypes come from headers
alone (``imread``: the first file's, each task checking its own); pixels decode in the tasks,
through the core API. A task carries its own path or key and a
small shared reader, never the whole list, so a graph grows by a few hundred bytes per file; tasks
run in any worker process that sees the same files. ``imread`` also takes URLs and globs on a
remote filesystem (fsspec, ``storage_options``): tasks carry the URLs and options, and each
worker opens its own connection and fetches only the units of its band (docs/REMOTE.md).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import dask.array as da
import dask.bag as db
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

import imij_plugins
from imij_plugins import imijset
from imij_plugins.errors import ImijError
from imij_plugins.remote import is_remote

__all__ = ["BLOCK_BYTES", "ImageMismatch", "from_archive", "imread", "natural_key", "to_bag"]

Paths = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]
Shape = tuple[int, ...]
#: Decoded bytes above which ``imread`` splits one image into bands of whole stripes.
BLOCK_BYTES = 128 << 20
_DIGITS = re.compile(r"(\d+)")


class ImageMismatch(ImijError):
    """A file of a stack whose image differs in shape or dtype from the first file's (which sets the array's)."""


def natural_key(path: str) -> list[object]:
    """A sort key that orders numbers in names by value (img2 before img10), as dask-image does."""
    return [int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(path))]


def _paths(files: Paths, storage_options: dict[str, Any] | None = None) -> list[str]:
    """A glob pattern's matches in natural order, one path, or a sequence of paths as given
    (a URL's pattern globbed on its filesystem)."""
    if isinstance(files, str) and is_remote(files):
        found = _remote_paths(files, storage_options)
    elif isinstance(files, (str, os.PathLike)):
        path = os.fspath(files)
        found = sorted(glob.glob(path), key=natural_key) if glob.has_magic(path) else [path]
    else:
        found = [os.fspath(p) for p in files]
    if not found:
        raise FileNotFoundError(f"no files match {files!r}")
    return found


def _remote_paths(pattern: str, storage_options: dict[str, Any] | None) -> list[str]:
    """A URL, or the URLs a glob pattern matches on its fsspec filesystem, in natural order."""
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(pattern, **(storage_options or {}))
    if not glob.has_magic(path):
        return [pattern]
    return sorted((fs.unstrip_protocol(p) for p in fs.glob(path)), key=natural_key)


def _versions(paths: list[str], storage_options: dict[str, Any] | None) -> list[object]:
    """What changes when a file does (the graph's name): local mtimes, or the filesystem's key of a URL."""
    if not paths or not is_remote(paths[0]):
        return [os.stat(p).st_mtime_ns for p in paths]
    from fsspec.core import url_to_fs

    fs, _ = url_to_fs(paths[0], **(storage_options or {}))
    return [fs.ukey(url_to_fs(p, **(storage_options or {}))[1]) for p in paths]


def _array_shape(info: imij_plugins.ImageInfo) -> Shape:
    """The (H, W[, C]) shape ``imread`` gives an image: Gray without its channel axis."""
    return info.shape[:2] if info.channels == 1 else info.shape


def _shape_dtype(
    src: imij_plugins.api.Source, index: int = 0, *, partial: bool = False, storage_options: dict[str, Any] | None = None
) -> tuple[Shape, np.dtype]:
    """The shape (``_array_shape``) and dtype image ``index`` of ``src`` reads as, from headers."""
    with imij_plugins.open(src, verify=False, partial=partial, storage_options=storage_options) as f:
        info = f.image_info(index)
    return _array_shape(info), info.dtype


def _stripe_rows(path: str, index: int, height: int, storage_options: dict[str, Any] | None) -> int:
    """The stripe height of image ``index`` (2.3); the whole height when it has no own DATA (frames)."""
    with imij_plugins.open(path, verify=False, storage_options=storage_options) as f:
        if index and f.kind == "animation":
            return height  # a frame is composed from earlier ones: read whole
        return f.page(index).payload().head.geometry.stripe_rows


def _bands(height: int, row_bytes: int, stripe_rows: int, block_bytes: int) -> tuple[int, ...]:
    """Row counts of bands of whole stripes, each at most ``block_bytes`` (one stripe at least)."""
    rows = max(1, block_bytes // max(1, row_bytes) // stripe_rows) * stripe_rows
    return tuple(min(rows, height - y) for y in range(0, height, rows))


def _squeezed(image: np.ndarray) -> np.ndarray:
    """Gray as (H, W), like the imageio plugin."""
    return image[..., 0] if image.shape[-1] == 1 else image


def _mismatch(path: str, shape: Shape, dtype: np.dtype, first: str, want: Shape, want_dtype: np.dtype) -> ImageMismatch:
    """The error for a file whose image is not the stack's."""
    return ImageMismatch(f"{path} holds a {shape} {dtype} image, but {first} (the first file) a {want} {want_dtype}: "
                         "imread stacks images of one shape and dtype")


@dataclass(frozen=True)
class _ReadBand:
    """A dask task function shared by every task: rows ``y`` to ``y + h`` of image ``index`` of one file,
    after checking its header against the stack's shape and dtype (those of ``first``)."""

    index: int
    shape: Shape
    dtype: np.dtype
    first: str
    banded: bool
    storage_options: dict[str, Any] | None = field(default=None, compare=False)  # for URLs

    def __call__(self, path: str, y: int, h: int) -> np.ndarray:
        with imij_plugins.open(path, storage_options=self.storage_options) as f:
            info = f.image_info(self.index)
            if (_array_shape(info), info.dtype) != (self.shape, self.dtype):
                raise _mismatch(path, _array_shape(info), info.dtype, self.first, self.shape, self.dtype)
            region = (0, y, self.shape[1], h) if self.banded else None
            return _squeezed(f.read(self.index, region=region))[None]


def _check_all(paths: list[str], index: int, shape: Shape, dtype: np.dtype, storage_options: dict[str, Any] | None) -> None:
    """Every file's header against the first's (``imread(check=True)``)."""
    for path in paths[1:]:
        other, other_dtype = _shape_dtype(path, index, storage_options=storage_options)
        if (other, other_dtype) != (shape, dtype):
            raise _mismatch(path, other, other_dtype, paths[0], shape, dtype)


def imread(
    files: Paths,
    *,
    index: int = 0,
    block_bytes: int = BLOCK_BYTES,
    check: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> da.Array:
    """A lazy (N, H, W[, C]) array of image ``index`` (frame or page) of each file, Gray without a channel axis.

    ``files`` is a glob pattern (natural order: 2 before 10), a path or a sequence of paths (kept
    in order). The first file's header gives the shape and dtype, as in dask-image; a file that
    differs raises ``ImageMismatch`` naming it when its task runs, or now with ``check=True``
    (which opens every header). One task reads one file, or a band of whole stripes when the
    image has more than ``block_bytes`` decoded bytes. URLs and remote globs (``s3://bucket/*.imi``)
    are read by ranges, with ``storage_options`` for their fsspec filesystem.
    """
    paths = _paths(files, storage_options)
    shape, dtype = _shape_dtype(paths[0], index, storage_options=storage_options)
    if check:
        _check_all(paths, index, shape, dtype, storage_options)
    height, width = shape[:2]
    row_bytes = width * int(np.prod(shape[2:])) * dtype.itemsize
    if height * row_bytes > block_bytes:
        heights = _bands(height, row_bytes, _stripe_rows(paths[0], index, height, storage_options), block_bytes)
    else:
        heights = (height,)
    starts = [int(y) for y in np.cumsum((0,) + heights[:-1])]
    read = _ReadBand(index, shape, dtype, paths[0], len(heights) > 1, storage_options)
    name = "imij-imread-" + tokenize(paths, _versions(paths, storage_options), index, heights, check)
    rest = (0,) * (len(shape) - 1)
    graph = {(name, i, j, *rest): (read, path, y, h)
             for i, path in enumerate(paths) for j, (y, h) in enumerate(zip(starts, heights))}
    chunks = ((1,) * len(paths), heights, *((n,) for n in shape[1:]))
    return _array(name, graph, chunks, dtype)


def _array(name: str, graph: dict, chunks: tuple[tuple[int, ...], ...], dtype: np.dtype) -> da.Array:
    """A dask array over a graph of independent read tasks."""
    meta = np.empty((0,) * len(chunks), dtype)
    return da.Array(HighLevelGraph.from_collections(name, graph, dependencies=()), name, chunks, dtype, meta=meta)


def _entry_shapes(path: str, keys: Sequence[int] | None) -> tuple[list[int], tuple[int, ...], np.dtype]:
    """The keys to read and the one shape and dtype their images share, from each image's header."""
    with imijset.open(path) as archive:
        keys = list(archive.keys()) if keys is None else list(keys)
        if not keys:
            raise ValueError(f"{path} has no entries to read")
        found = set()
        for key in keys:
            entry = archive.entry(key)  # the header (the prefix hint's bytes) is the authority, not the summary
            head = archive.read_at(key, 0, entry.prefix_hint) if entry.prefix_hint else archive.get(key)
            found.add(_shape_dtype(head, partial=True))
    if len(found) != 1:
        raise ValueError(f"the entries of {path} differ in shape or dtype: use to_bag, or pass keys= of equal images")
    (shape, dtype), = found
    return keys, shape, dtype


@dataclass(frozen=True)
class _ReadEntry:
    """A dask task function shared by every task: one entry of the archive at ``path``."""

    path: str

    def __call__(self, key: int) -> np.ndarray:
        with imijset.open(self.path) as archive:
            return _squeezed(archive.read(key))[None]


def from_archive(path: str | os.PathLike[str], keys: Sequence[int] | None = None) -> da.Array:
    """A lazy (N, H, W[, C]) array of an IMIJ-Set archive's entries (``keys``, default all, in key
    order), one task per entry; the images must share one shape and dtype (else ValueError)."""
    path = os.fspath(path)
    keys, shape, dtype = _entry_shapes(path, keys)
    name = "imij-archive-" + tokenize(path, os.stat(path).st_mtime_ns, keys)
    read = _ReadEntry(path)
    graph = {(name, i, *(0,) * len(shape)): (read, key) for i, key in enumerate(keys)}
    return _array(name, graph, ((1,) * len(keys), *((n,) for n in shape)), dtype)


def _read_records(keys: Iterable[int], path: str) -> list[dict[str, object]]:
    """One bag partition: ``{"key", "filename", "attributes", "image"}`` per key, one archive open."""
    with imijset.open(path) as archive:
        out = []
        for key in keys:
            entry = archive.entry(key)
            image = _squeezed(imij_plugins.read(archive.blob(entry)))
            out.append({"key": key, "filename": entry.filename, "attributes": entry.attributes, "image": image})
        return out


def to_bag(path: str | os.PathLike[str], keys: Sequence[int] | None = None, *, npartitions: int | None = None) -> db.Bag:
    """A dask bag of an IMIJ-Set archive's entries (``keys``, default all, in key order) as
    ``{"key", "filename", "attributes", "image"}`` records: images of any shape and dtype."""
    path = os.fspath(path)
    if keys is None:
        with imijset.open(path) as archive:
            keys = list(archive.keys())
    keys = list(keys)
    parts = npartitions or max(1, min(len(keys), 100))
    return db.from_sequence(keys, npartitions=parts).map_partitions(_read_records, path)
