"""``ImiCodec``: the zarr 3 array-to-bytes codec ``imij.imi`` (each chunk one IMI file, ``chunk``).

zarr finds it by name through the ``zarr.codecs`` entry point ``imij.imi``. Its configuration is
``effort``, ``max_error`` and ``codec`` (the writer's options of the same names) and ``channels``
(whether the last axis holds 1-4 channels; fixed from the array's shape when the array is made).
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
from imij_plugins.codecs.chunk import auto_channels, check_chunk, decode_chunk, encode_chunk

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

    def __init__(self, *, effort: int = 5, max_error: float = 0, codec: str = "entropy", channels: bool | None = None) -> None:
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
        """``channels`` fixed from the array's shape, so the stored metadata says how chunks are coded."""
        if self.channels is not None:
            return self
        return type(self)(effort=self.effort, max_error=self.max_error, codec=self.codec, channels=auto_channels(array_spec.shape))

    def validate(self, *, shape: tuple[int, ...], dtype: ZDType[TBaseDType, TBaseScalar], chunk_grid: ChunkGrid) -> None:
        """Refuse, when the array is made, dtypes and chunk shapes IMI cannot store."""
        chunk_shape = getattr(chunk_grid, "chunk_shape", shape)
        channels = auto_channels(shape) if self.channels is None else self.channels
        check_chunk(chunk_shape, dtype.to_native_dtype(), channels)

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        data = memoryview(np.ascontiguousarray(chunk_bytes.as_numpy_array()))
        array = decode_chunk(data, chunk_spec.shape, chunk_spec.dtype.to_native_dtype())
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(array)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        data = encode_chunk(chunk_array.as_numpy_array(), self._encode_options, self.channels)
        return chunk_spec.prototype.buffer.from_bytes(data)

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise NotImplementedError("an IMI chunk's size depends on its pixels")
