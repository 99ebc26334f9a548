"""``Imi``: the numcodecs codec ``imi`` for zarr 2 arrays and numcodecs users (each buffer one IMI file).

numcodecs finds it by id through the ``numcodecs.codecs`` entry point ``imi``. ``encode`` takes any
buffer: an array as it is (zarr 2 passes the chunk so, in the array's memory order and byte order),
other buffers (bytes, bytearray, array.array, memoryview) as numpy sees them (bytes as a row of u1).
Every dtype IMI holds is exact in any memory order (C, F, strided) and byte order: the file
stores the values native and row-major and records the array's layout (``layout.Layout``), so
``decode`` returns an array of the same dtype, shape and memory order (C for a strided one), whose
bytes in memory order equal the original's (numcodecs' convention, as zstd's). Other dtypes are a
TypeError before anything is encoded. Files without a layout record (earlier ``Imi`` versions, other writers) decode to what
they hold: (H, W[, C]), or pages (N, H, W[, C]), with C 1 dropped.
"""

from __future__ import annotations

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ensure_ndarray, ndarray_copy

import imij_plugins
from imij_plugins.codecs.chunk import DEFAULTS, encode_chunk, read_pages
from imij_plugins.codecs.layout import Layout
from imij_plugins.errors import Corrupt


class Imi(Codec):
    """Each buffer as one IMI file: ``effort``, ``max_error``, ``codec`` are the writer's options;
    ``channels`` None decides from the shape (3 or more axes, the last of 1-4). Keyword-only, as
    numcodecs builds a codec from its stored configuration (``Imi(**config)``)."""

    codec_id = "imi"

    def __init__(
        self, *, effort: int = DEFAULTS.effort, max_error: float = DEFAULTS.max_error, codec: str = DEFAULTS.codec, channels: bool | None = None
    ) -> None:
        self._encode_options = imij_plugins.EncodeOptions(effort=effort, max_error=max_error, codec=codec)  # type: ignore[arg-type]
        if channels is not None and not isinstance(channels, bool):
            raise ValueError(f"channels must be True, False or None, not {channels!r}")
        self.effort = effort
        self.max_error = max_error
        self.codec = codec
        self.channels = channels

    def encode(self, buf: object) -> bytes:
        """One IMI file of ``buf``'s values and its layout (dtype, memory order, shape)."""
        a = ensure_ndarray(buf)
        layout = Layout.of(a)
        values = layout.values(a)
        channels = self.channels if values.shape == a.shape else None  # an empty array's or a scalar's stand-in row
        return encode_chunk(values, self._encode_options, channels, layout.item_metadata())

    def decode(self, buf: object, out: object = None) -> np.ndarray:
        """The array ``buf`` was encoded from. With ``out`` of its shape and dtype (byte order
        aside) the values are copied, whatever ``out``'s memory order or strides; any other
        contiguous ``out`` of as many bytes gets its bytes in memory order (numcodecs' convention)."""
        data = memoryview(ensure_contiguous_ndarray(buf)).cast("B")
        with imij_plugins.open(data) as f:
            layout = Layout.from_file(f)
            stored = read_pages(f)
        if layout is not None:
            array = layout.restore(stored)
        else:
            array = stored[..., 0] if stored.shape[-1] == 1 else stored
        return array if out is None else _copy_into(array, out)


def _copy_into(array: np.ndarray, out: object) -> object:
    """``array`` into ``out`` by value (same shape and dtype) or by bytes in memory order; a
    mismatch is refused before ``out`` is written."""
    dst = ensure_ndarray(out)
    if dst.shape == array.shape and dst.dtype.newbyteorder("=") == array.dtype.newbyteorder("="):
        np.copyto(dst, array)
        return out
    if dst.nbytes != array.nbytes:
        raise Corrupt(f"the buffer holds {array.nbytes} bytes of samples, out has room for {dst.nbytes}")
    if not (dst.flags.c_contiguous or dst.flags.f_contiguous):
        raise ValueError(f"out of shape {dst.shape} and {dst.dtype} is not contiguous, so it cannot take the {array.shape} {array.dtype} chunk's bytes")
    return ndarray_copy(array, out)
