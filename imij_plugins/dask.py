"""Dask collections over IMI files and IMIJ-Set archives, for one machine or a cluster.

``imread`` stacks many files into one lazy array: one task per file, or per band of whole stripes
(2.3) of a file larger than ``block_bytes`` (a region read decodes only the units it overlaps).
``from_archive`` stacks an archive's entries (one task per entry) and ``to_bag`` gives them as a
bag of records with their keys, filenames and attributes. Shapes and dtypes come from headers
alone; pixels decode in the tasks, through the core API. Tasks carry paths, not open files, so
they run in any worker process that sees the same files.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import dask.array as da
import dask.bag as db
import numpy as np
from dask.base import tokenize

import imij_plugins
from imij_plugins import imijset

__all__ = ["BLOCK_BYTES", "from_archive", "imread", "to_bag"]

Paths = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]
#: Decoded bytes above which ``imread`` splits one image into bands of whole stripes.
BLOCK_BYTES = 128 << 20


def _paths(files: Paths) -> list[str]:
    """A glob pattern's matches in sorted order, one path, or a sequence of paths."""
    if isinstance(files, (str, os.PathLike)):
        path = os.fspath(files)
        found = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
    else:
        found = [os.fspath(p) for p in files]
    if not found:
        raise FileNotFoundError(f"no files match {files!r}")
    return found


def _shape_dtype(src: imij_plugins.api.Source, index: int = 0, *, partial: bool = False) -> tuple[tuple[int, ...], np.dtype]:
    """The (H, W[, C]) shape (Gray without its channel axis) and dtype ``read(index)`` returns, from headers."""
    with imij_plugins.open(src, verify=False, partial=partial) as f:
        info = f.image_info(index)
    return (info.shape[:2] if info.channels == 1 else info.shape), info.dtype


def _stripe_rows(path: str, index: int, height: int) -> int:
    """The stripe height of image ``index`` (2.3); the whole height when it has no own DATA (frames)."""
    with imij_plugins.open(path, verify=False) as f:
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


@dataclass(frozen=True)
class _ReadBand:
    """A dask block function: file ``block_id[0]``, rows of band ``block_id[1]``."""

    paths: tuple[str, ...]
    index: int
    starts: tuple[int, ...]
    heights: tuple[int, ...]
    width: int

    def __call__(self, block_id: tuple[int, ...]) -> np.ndarray:
        i, j = block_id[0], block_id[1]
        region = None if len(self.heights) == 1 else (0, self.starts[j], self.width, self.heights[j])
        return _squeezed(imij_plugins.read(self.paths[i], self.index, region=region))[None]


def imread(files: Paths, *, index: int = 0, block_bytes: int = BLOCK_BYTES) -> da.Array:
    """A lazy (N, H, W[, C]) array of image ``index`` (frame or page) of each file, Gray without a channel axis.

    ``files`` is a glob pattern (sorted), a path or a sequence of paths; every file must hold the
    same shape and dtype (ValueError naming the first that does not). One task reads one file, or
    a band of whole stripes when the image has more than ``block_bytes`` decoded bytes.
    """
    paths = _paths(files)
    shape, dtype = _shape_dtype(paths[0], index)
    for path in paths[1:]:
        other = _shape_dtype(path, index)
        if other != (shape, dtype):
            raise ValueError(f"{path} holds {other[0]} {other[1]}, {paths[0]} {shape} {dtype}: imread stacks equal images")
    height, width = shape[:2]
    row_bytes = width * int(np.prod(shape[2:])) * dtype.itemsize
    if height * row_bytes > block_bytes:
        heights = _bands(height, row_bytes, _stripe_rows(paths[0], index, height), block_bytes)
    else:
        heights = (height,)
    starts = tuple(int(y) for y in np.cumsum((0,) + heights[:-1]))
    read = _ReadBand(tuple(paths), index, starts, heights, width)
    chunks = ((1,) * len(paths), heights, *((n,) for n in shape[1:]))
    name = "imij-imread-" + tokenize(paths, [os.stat(p).st_mtime_ns for p in paths], index, heights)
    return da.map_blocks(read, chunks=chunks, dtype=dtype, meta=np.empty((0,) * (len(shape) + 1), dtype), name=name)


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
    """A dask block function: entry ``keys[block_id[0]]`` of the archive at ``path``."""

    path: str
    keys: tuple[int, ...]

    def __call__(self, block_id: tuple[int, ...]) -> np.ndarray:
        with imijset.open(self.path) as archive:
            return _squeezed(archive.read(self.keys[block_id[0]]))[None]


def from_archive(path: str | os.PathLike[str], keys: Sequence[int] | None = None) -> da.Array:
    """A lazy (N, H, W[, C]) array of an IMIJ-Set archive's entries (``keys``, default all, in key
    order), one task per entry; the images must share one shape and dtype (else ValueError)."""
    path = os.fspath(path)
    keys, shape, dtype = _entry_shapes(path, keys)
    chunks = ((1,) * len(keys), *((n,) for n in shape))
    name = "imij-archive-" + tokenize(path, os.stat(path).st_mtime_ns, keys)
    read = _ReadEntry(path, tuple(keys))
    return da.map_blocks(read, chunks=chunks, dtype=dtype, meta=np.empty((0,) * (len(shape) + 1), dtype), name=name)


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
