"""``ImiCodec``: the zarr 3 array-to-bytes codec ``imij.imi`` (each chunk one IMI file, ``chunk``).

zarr finds it by name through the ``zarr.codecs`` entry point ``imij.imi``. Its configuration is
``effort``, ``max_error`` and ``codec`` (the writer's options of the same names) and ``channels``:
unset, a chunk whose last axis is 1-4 long (3 or more axes) is coded as an image of that many
channels, decided per chunk on the chunk as this codec receives it, so after a ``TransposeCodec``
on its transposed shape; ``False`` never; ``True`` codes as unset, and refuses at creation an array
whose last axis, or its chunks' (a sharded array's inner chunks'), is not 1-4 long (checked before
any transpose). The choice changes only the compression: every chunk decodes to its values.

Chunks reach the codec as logical arrays and leave it as arrays of the chunk's shape and the
array's dtype, so the array's memory order (``config={"order": "F"}``) and byte order (``>u2``)
round-trip exactly (zarr 3 keeps no byte order in the array's dtype: reopened, a ``>u2`` array
reads as native u2 of the same values, as with zarr's own bytes codec). Dtypes IMI cannot hold and impossible channel axes are refused when the
array is made, in a shard too: zarr calls ``validate`` only for the array's own codecs, but
``evolve_from_array_spec`` also for a ``ShardingCodec``'s inner codecs, with the inner chunk's spec.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from zarr.abc.codec import ArrayBytesCodec
from zarr.core.buffer import Buffer, NDBuffer
from zarr.core.common import JSON, parse_named_configuration

import imij_plugins
from imij_plugins.codecs.chunk import DEFAULTS, auto_channels, check_chunk, decode_chunk, encode_chunk

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.chunk_grids import ChunkGrid
    from zarr.core.dtype.wrapper import TBaseDType, TBaseScalar, ZDType

NAME = "imij.imi"


@dataclass(frozen=True)
class ImiCodec(ArrayBytesCodec):
    """Each chunk as one IMI file: lossless for every IMI sample type, or within ``max_error``."""

    is_fixed_size = False

    effort: int
    max_error: float
    codec: str
    channels: bool | None

    def __init__(self, *, effort: int = DEFAULTS.effort, max_error: float = DEFAULTS.max_error, codec: str = DEFAULTS.codec, channels: bool | None = None) -> None:
        options = imij_plugins.EncodeOptions(effort=effort, max_error=max_error, codec=codec)  # type: ignore[arg-type]  # ValueError naming a bad one
        if channels is not None and not isinstance(channels, bool):
            raise ValueError(f"channels must be True, False or None, not {channels!r}")
        object.__setattr__(self, "effort", effort)
        object.__setattr__(self, "max_error", max_error)
        object.__setattr__(self, "codec", codec)
        object.__setattr__(self, "channels", channels)
        object.__setattr__(self, "_encode_options", options)  # not a field: checked once, not stored

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, configuration = parse_named_configuration(data, NAME, require_configuration=False)
        return cls(**(configuration or {}))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        configuration: dict[str, JSON] = {"effort": self.effort, "max_error": self.max_error, "codec": self.codec}
        if self.channels is not None:
            configuration["channels"] = self.channels
        return {"name": NAME, "configuration": configuration}

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Self:
        """Refuse the dtype, or ``channels=True`` without a 1-4 long last axis, when the array is made:
        the spec is the array's, or a shard's inner chunk's (zarr validates no inner codec)."""
        check_chunk(array_spec.shape, array_spec.dtype.to_native_dtype(), self.channels is True)
        return self

    def validate(self, *, shape: tuple[int, ...], dtype: ZDType[TBaseDType, TBaseScalar], chunk_grid: ChunkGrid) -> None:
        """Refuse, when the array is made, dtypes and chunk shapes IMI cannot store."""
        chunk_shape = getattr(chunk_grid, "chunk_shape", shape)
        check_chunk(chunk_shape, dtype.to_native_dtype(), self.channels is True)

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        data = memoryview(np.ascontiguousarray(chunk_bytes.as_numpy_array()))
        array = decode_chunk(data, chunk_spec.shape, chunk_spec.dtype.to_native_dtype())
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(array)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        chunk = chunk_array.as_numpy_array()
        channels = self.channels is not False and auto_channels(chunk.shape)  # the shape as received: after any transpose
        data = encode_chunk(chunk, self._encode_options, channels)
        return chunk_spec.prototype.buffer.from_bytes(data)

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise NotImplementedError("an IMI chunk's size depends on its pixels")
