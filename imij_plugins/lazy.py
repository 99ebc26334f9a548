"""``LazyImage``: an IMI file's frames or pages as one array whose reads decode only the units they overlap.

The adapters (xarray, napari) index it from dask threads and pickle it to dask workers: the file
opens on first use in each process and reads of one file share it (``ImijFile`` reads are
thread-safe).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from imij_plugins.reader import ImijFile

Index = int | slice
Source = str | bytes


def source_of(src: object) -> Source:
    """A path as a string, or the bytes of a bytes-like or binary file object (what pickles to a worker)."""
    if isinstance(src, (str, os.PathLike)):
        return os.fspath(src)  # type: ignore[return-value]
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src)
    if hasattr(src, "read"):
        if hasattr(src, "seek"):
            src.seek(0)  # type: ignore[union-attr]
        return src.read()  # type: ignore[union-attr]
    raise TypeError(f"cannot read an IMI file from {type(src).__name__}")


def uniform(f: ImijFile) -> bool:
    """Whether every frame or page has page 0's size, layout and sample type (so they stack)."""
    first = f.image_info(0)
    return all(f.image_info(i).shape == first.shape and f.image_info(i).dtype == first.dtype for i in range(f.n_frames))


class LazyImage:
    """Stored samples, shaped (frames?, H, W, C?): ``frames`` None stacks every frame, an int picks one.

    ``frame_dim`` and ``channel_dim`` say whether the frame and channel dims are present (a single
    frame or channel may still keep its dim, as aXES bindings ask). A URL is read by ranges, with
    ``storage_options`` for its fsspec filesystem.
    """

    def __init__(self, src: object, *, index: int | None = None, frame_dim: bool = True, channel_dim: bool = True,
                 storage_options: dict[str, Any] | None = None):
        self.src = source_of(src)
        self.storage_options = storage_options  # for a URL's fsspec filesystem, carried to workers
        self._lock = threading.Lock()
        self._file: ImijFile | None = None
        f = self.file()
        if index is None and not uniform(f):
            raise ValueError("the pages differ in size, layout or sample type: open one page at a time (index=)")
        if index is not None and not 0 <= index < f.n_frames:
            raise IndexError(f"frame {index} out of range (file has {f.n_frames})")
        self.frames = list(range(f.n_frames)) if index is None else [index]
        info = f.image_info(self.frames[0])
        self.frame_dim = frame_dim and index is None
        self.channel_dim = channel_dim
        self.dtype = info.dtype
        self.shape = (len(self.frames),) * self.frame_dim + (info.height, info.width) + (info.channels,) * channel_dim
        self.animated = f.kind == "animation"
        # an animation's canvas is read whole: its chunks follow DATA's units; a page's its own
        geometry = f.page(0 if self.animated else self.frames[0]).payload().head.geometry
        self.unit = (geometry.stripe_rows, geometry.group_cols or info.width)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def chunks(self) -> tuple[int, ...]:
        """Chunk sizes aligned with the units (2.3): one frame, a stripe, a column group, every channel."""
        rows, cols = self.unit
        h, w = self.shape[self.frame_dim : self.frame_dim + 2]
        return (1,) * self.frame_dim + (min(rows, h), min(cols, w)) + self.shape[-1:] * self.channel_dim

    def file(self) -> ImijFile:
        """The opened file (opened once per process, on first use)."""
        with self._lock:
            if self._file is None or self._file.closed:
                self._file = ImijFile(self.src, storage_options=self.storage_options)
            return self._file

    def __getitem__(self, key: tuple[Index, ...]) -> np.ndarray:
        """Basic indexing: one int or slice per dim; only the units under the selection decode."""
        key = tuple(key) + (slice(None),) * (self.ndim - len(tuple(key)))
        picks = [self._pick(k, n) for k, n in zip(key, self.shape)]
        frames = [self.frames[i] for i in picks[0]] if self.frame_dim else self.frames
        rows, cols = picks[self.frame_dim], picks[self.frame_dim + 1]
        h, w = len(rows), len(cols)
        channels = self.shape[-1] if self.channel_dim else self.file().image_info(self.frames[0]).channels
        if not (frames and h and w):
            out = np.empty((len(frames), h, w, channels), dtype=self.dtype)
        else:
            out = np.stack([self._read(i, rows, cols) for i in frames])
        if self.channel_dim:
            out = out[..., picks[-1]]
        else:
            out = out[..., 0]
        if not self.frame_dim:
            out = out[0]
        drop = tuple(i for i, k in enumerate(key) if isinstance(k, (int, np.integer)))
        return out.reshape([n for i, n in enumerate(out.shape) if i not in drop]) if drop else out

    @staticmethod
    def _pick(k: Index, n: int) -> np.ndarray:
        """The indices one key entry selects along a dim of length ``n``."""
        if isinstance(k, slice):
            return np.arange(n)[k]
        i = int(k)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for a dim of {n}")
        return np.array([i % n])

    def _read(self, index: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Frame ``index``'s samples at ``rows`` x ``cols``: a region read of their bounding box."""
        y0, x0 = int(rows.min()), int(cols.min())
        region = (x0, y0, int(cols.max()) + 1 - x0, int(rows.max()) + 1 - y0)
        box = self.file().read(index, region=region)
        if len(rows) == box.shape[0] and len(cols) == box.shape[1] and (np.diff(rows) == 1).all() and (np.diff(cols) == 1).all():
            return box
        return box[np.ix_(rows - y0, cols - x0)]

    def close(self) -> None:
        """Unmap the file; a later read opens it again."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_file"], state["_lock"] = None, None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
