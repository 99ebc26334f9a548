"""One array chunk as one IMI file: which shapes and dtypes map to an image or to pages, both ways.

A chunk of shape (W,) is one row, (H, W) one Gray image, (..., H, W, C) with ``channels`` and C in
1-4 one image (or pages, one per leading index) of C channels (Gray, GrayAlpha, RGB, RGBA), and
(..., H, W) without ``channels`` pages of Gray images. Every IMI sample type is stored exactly (bool
as u8 0/1); the chunk's shape and dtype come back from the array's description, so a file that
does not match them is ``Corrupt``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import imij_plugins
from imij_plugins.container.metadata import ItemMetadata
from imij_plugins.errors import Corrupt

#: The writer's defaults: the codecs' ``effort``, ``max_error`` and ``codec`` default to them.
DEFAULTS = imij_plugins.EncodeOptions()
#: dtypes a chunk may have: every IMI sample type (1.0) and bool.
DTYPES = frozenset(np.dtype(t) for t in ("?", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f2", "f4", "f8"))


def auto_channels(shape: Sequence[int]) -> bool:
    """The default for ``channels``: an array of 3 or more axes whose last axis has 1-4 elements."""
    return len(shape) >= 3 and 1 <= shape[-1] <= 4


def check_chunk(shape: Sequence[int], dtype: np.dtype, channels: bool) -> None:
    """ValueError or TypeError, naming the problem, for a chunk shape or dtype IMI cannot store."""
    dt = np.dtype(dtype)
    if dt.newbyteorder("=") not in DTYPES:
        raise TypeError(f"the IMI codec stores bool and u8-u64, i8-i64, f16-f64 samples, not {dt}")
    if not shape:
        raise ValueError("the IMI codec needs chunks of at least one axis, not a scalar")
    if channels and (len(shape) < 3 or not 1 <= shape[-1] <= 4):
        raise ValueError(f"channels=True needs arrays and chunks (..., H, W, C) with C in 1..4, not {tuple(shape)}")


def encode_chunk(
    chunk: np.ndarray, options: imij_plugins.EncodeOptions, channels: bool | None = None, item_metadata: ItemMetadata | None = None
) -> bytes:
    """The chunk's values as one IMI file (pages for leading axes), in any memory or byte order;
    ``channels`` None decides by ``auto_channels``; ``item_metadata`` goes into the file (kVMD, 1.3)."""
    a = np.asarray(chunk)
    channels = auto_channels(a.shape) if channels is None else channels
    check_chunk(a.shape, a.dtype, channels)
    if a.ndim == 1:
        a = a[None, :]
    image_axes = 3 if channels else 2
    extra = {"item_metadata": item_metadata} if item_metadata is not None else {}
    if a.ndim <= image_axes:
        return imij_plugins.encode(a, options, **extra)
    pages = a.reshape(-1, *a.shape[-image_axes:])
    if len(pages) == 1:
        return imij_plugins.encode(pages[0], options, **extra)
    return imij_plugins.encode(list(pages), options, kind="pages", **extra)  # 1.3: a stack of pages


def read_pages(f: imij_plugins.ImijFile) -> np.ndarray:
    """The file's one image as (H, W, C), or its pages as (N, H, W, C), row-major and native."""
    images = [f.read(i) for i in range(f.n_frames)]
    if len({(a.shape, a.dtype) for a in images}) != 1:
        raise Corrupt("the chunk's pages differ in shape or sample type")
    return images[0] if len(images) == 1 else np.stack(images)


def conform(stored: np.ndarray, shape: Sequence[int], dtype: np.dtype | None = None) -> np.ndarray:
    """The file's samples as a row-major array of ``shape`` and ``dtype`` (byte order and bool
    included), or ``Corrupt`` when the file holds another number or type of samples."""
    want = np.dtype(dtype) if dtype is not None else stored.dtype
    expected = np.dtype(np.uint8) if want == np.bool_ else want.newbyteorder("<")  # bool as u8 0/1
    if stored.size != math.prod(shape) or stored.dtype != expected:
        raise Corrupt(f"the chunk holds {stored.shape} {stored.dtype} samples, the array expects {tuple(shape)} {want}")
    return stored.reshape(shape).astype(want, copy=False)


def decode_chunk(data: bytes | memoryview, shape: Sequence[int] | None = None, dtype: np.dtype | None = None) -> np.ndarray:
    """The chunk in an IMI file: ``shape`` and ``dtype`` when given (``Corrupt`` when the file
    holds something else), else pages as (N, H, W[, C]) and one image as (H, W[, C]), C 1 dropped."""
    with imij_plugins.open(data) as f:  # units on the shared pool, even when the store runs chunks in threads too
        out = read_pages(f)
    if shape is None:
        return out[..., 0] if out.shape[-1] == 1 else out
    return conform(out, shape, dtype)
