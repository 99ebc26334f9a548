"""``Imi``: the numcodecs codec ``imi`` for zarr 2 arrays and numcodecs users (each buffer one IMI file).

numcodecs finds it by id through the ``numcodecs.codecs`` entry point ``imi``. ``encode`` takes the
chunk as an array of its shape (zarr 2 passes it so to a compressor); ``decode`` returns what the
file holds, (H, W[, C]) or pages (N, H, W[, C]), which zarr reshapes to the chunk, or fills ``out``.
"""

from __future__ import annotations

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy

import imij_plugins
from imij_plugins.errors import Corrupt
from imij_plugins.codecs.chunk import decode_chunk, encode_chunk


class Imi(Codec):
    """Each buffer as one IMI file: ``effort``, ``max_error``, ``codec`` are the writer's options;
    ``channels`` None decides from the shape (3 or more axes, the last of 1-4)."""

    codec_id = "imi"

    def __init__(self, effort: int = 5, max_error: float = 0, codec: str = "entropy", channels: bool | None = None) -> None:
        self._encode_options = imij_plugins.EncodeOptions(effort=effort, max_error=max_error, codec=codec)  # type: ignore[arg-type]
        if channels is not None and not isinstance(channels, bool):
            raise ValueError(f"channels must be True, False or None, not {channels!r}")
        self.effort = effort
        self.max_error = max_error
        self.codec = codec
        self.channels = channels

    def encode(self, buf: object) -> bytes:
        return encode_chunk(np.asarray(buf), self._encode_options, self.channels)

    def decode(self, buf: object, out: object = None) -> np.ndarray:
        image = decode_chunk(memoryview(ensure_contiguous_ndarray(buf)).cast("B"))
        if out is not None and image.nbytes != ensure_contiguous_ndarray(out).nbytes:
            raise Corrupt(f"the buffer holds {image.nbytes} bytes of samples, out has room for {ensure_contiguous_ndarray(out).nbytes}")
        return ndarray_copy(image, out)
