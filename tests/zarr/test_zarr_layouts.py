"""zarr-python's order, transpose and sharding cases adapted to the zarr 3 codec ``imij.imi``: every
memory order and byte order round-trips exactly, and what IMI cannot store is refused at creation,
inside a shard too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from extras import require

zarr = require("zarr")

from zarr.codecs import ShardingCodec, TransposeCodec  # noqa: E402

import imij_plugins  # noqa: E402
from imij_plugins.codecs.zarr3 import ImiCodec  # noqa: E402

IMI = {"name": "imij.imi"}


def ramp(shape: tuple[int, ...], dtype: str, order: str = "C") -> np.ndarray:
    """Distinct values (bool alternates) in the requested memory order."""
    values = np.arange(int(np.prod(shape))) * 7919 % 65521
    dt = np.dtype(dtype)
    return (values % 2 == 1 if dt == np.bool_ else values.astype(dt)).reshape(shape).copy(order=order)


def reversed_axes(ndim: int) -> tuple[int, ...]:
    """The transpose that stores chunks in Fortran order (zarr's ``order_from_dim("F", ndim)``)."""
    return tuple(range(ndim))[::-1]


def coded_as(path: Path) -> tuple[int, int]:
    """(pages, channels) of the IMI file that stores a chunk."""
    with imij_plugins.open(path) as f:
        return f.n_frames, f.channels


@pytest.mark.parametrize("dtype", ["u2", ">f4", "?"])
@pytest.mark.parametrize("with_sharding", [False, True])
@pytest.mark.parametrize("runtime_read_order", ["C", "F"])
@pytest.mark.parametrize("runtime_write_order", ["C", "F"])
@pytest.mark.parametrize("store_order", ["C", "F"])
@pytest.mark.parametrize("input_order", ["C", "F"])
def test_order(tmp_path, input_order, store_order, runtime_write_order, runtime_read_order, with_sharding, dtype):
    """zarr's test_order: input, stored (a transpose in front), write and read orders, sharded or not."""
    data = ramp((32, 8), dtype, input_order)
    filters = [TransposeCodec(order=reversed_axes(2))] if store_order == "F" else None
    a = zarr.create_array(tmp_path / "o.zarr", shape=data.shape, chunks=(16, 8) if with_sharding else (32, 8),
                          shards=(32, 8) if with_sharding else None, dtype=data.dtype, fill_value=0, filters=filters,
                          serializer=IMI, compressors=None, config={"order": runtime_write_order})
    a[:, :] = data
    assert np.array_equal(a[:, :], data)
    with zarr.config.set({"array.order": runtime_read_order}):
        back = zarr.open_array(tmp_path / "o.zarr", mode="r")
    read = back[:, :]
    assert read.dtype == data.dtype.newbyteorder("=")  # zarr 3 arrays have no byte order: reopened native, as with BytesCodec
    assert np.array_equal(read, data)
    assert read.flags.f_contiguous == (runtime_read_order == "F")


@pytest.mark.parametrize("dtype", ["u2", ">i4", "?"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_order_implicit_and_strided_writes(tmp_path, order, dtype):
    """zarr's test_order_implicit, with strided and big-endian sources written into parts of chunks."""
    data = ramp((16, 16), dtype)
    with zarr.config.set({"array.order": order}):
        a = zarr.create_array(tmp_path / "i.zarr", shape=data.shape, chunks=(8, 8), dtype=data.dtype, fill_value=0,
                              serializer=IMI, compressors=None)
    a[:, :] = ramp((16, 32), dtype, "F")[:, ::2]  # a strided, Fortran-ordered source
    assert np.array_equal(a[:, :], ramp((16, 32), dtype)[:, ::2])
    a[3:11, 5:13] = data[:8, :8].astype(data.dtype.newbyteorder())  # the other byte order, across four chunks
    expected = ramp((16, 32), dtype)[:, ::2]
    expected[3:11, 5:13] = data[:8, :8]
    assert np.array_equal(zarr.open_array(tmp_path / "i.zarr", mode="r")[:, :], expected)


@pytest.mark.parametrize(
    ("order", "shape", "chunks", "coding"),
    [
        ((2, 0, 1), (20, 21, 3), (8, 8, 3), (3, 1)),  # channels moved first: three gray pages
        ((1, 2, 0), (3, 20, 21), (3, 8, 8), (1, 3)),  # channels moved last: one RGB image
        ((1, 0), (20, 21), (8, 8), (1, 1)),  # Fortran-ordered gray chunks
    ],
)
@pytest.mark.parametrize("channels", [None, True])
def test_a_transpose_in_front_codes_the_transposed_chunk(tmp_path, order, shape, chunks, coding, channels):
    """The codec sees the chunk as the transpose left it and picks channels on that shape."""
    if channels and shape[-1] > 4:
        with pytest.raises(ValueError, match="channels=True"):  # checked on the array's chunks, before any transpose
            zarr.create_array(tmp_path / "t.zarr", shape=shape, dtype="u2", chunks=chunks,
                              filters=[TransposeCodec(order=order)], serializer=ImiCodec(channels=True), compressors=None)
        return
    data = ramp(shape, "u2")
    z = zarr.create_array(tmp_path / "t.zarr", shape=shape, dtype="u2", chunks=chunks, fill_value=0,
                          filters=[TransposeCodec(order=order)], serializer=ImiCodec(channels=channels), compressors=None)
    z[...] = data
    assert np.array_equal(zarr.open_array(tmp_path / "t.zarr", mode="r")[...], data)
    assert coded_as(tmp_path / "t.zarr" / "c" / Path(*["0"] * len(shape))) == coding  # True codes as unset does


@pytest.mark.parametrize("index_location", ["start", "end"])
@pytest.mark.parametrize(
    ("shape", "dtype", "order"),
    [((96,), "u1", "C"), ((96, 96), "u1", "C"), ((20, 20, 20), "u2", "F"), ((40, 40, 3), ">f2", "C")],
)
@pytest.mark.parametrize("offset", [0, 10])
def test_sharding(tmp_path, shape, dtype, order, index_location, offset):
    """zarr's test_sharding: a Fortran-order transpose in front, fill outside the written region."""
    data = ramp(shape, dtype, order)
    inner = tuple(min(s, 16) if s > 4 else s for s in shape)
    a = zarr.create_array(tmp_path / "s.zarr", shape=tuple(s + offset for s in shape), chunks=inner,
                          shards={"shape": tuple(2 * c for c in inner), "index_location": index_location},
                          dtype=data.dtype, fill_value=6, filters=[TransposeCodec(order=reversed_axes(len(shape)))],
                          serializer=IMI, compressors=None)
    region = tuple(slice(offset, None) for _ in shape)
    a[region] = data
    if offset:
        assert np.all(a[tuple(slice(0, offset) for _ in shape)] == 6)
    assert np.array_equal(a[region], data)
    data = data + 1
    a[region] = data  # a partial overwrite: shards are read, merged and rewritten
    assert np.array_equal(zarr.open_array(tmp_path / "s.zarr", mode="r")[region], data)


def test_sharding_with_empty_inner_chunks_and_partial_reads(tmp_path):
    """zarr's empty-inner-chunk and partial-read cases: inner chunks of the fill value are not stored."""
    data = ramp((16, 16), "u4")
    data[:4, :4] = 1
    a = zarr.create_array(tmp_path / "e.zarr", shape=(16, 16), chunks=(4, 4), shards=(8, 8), dtype="u4",
                          fill_value=1, serializer=IMI, compressors=None)
    a[...] = data
    back = zarr.open_array(tmp_path / "e.zarr", mode="r")
    assert np.array_equal(back[...], data)
    for row in range(16):
        assert np.array_equal(back[row, :], data[row])


def test_nested_sharding(tmp_path):
    """zarr's test_nested_sharding: imij.imi two shards deep, checked at creation there too."""
    data = ramp((40, 36, 3), "u2", "F")
    inner = ShardingCodec(chunk_shape=(10, 9, 3), codecs=[ImiCodec()])
    a = zarr.create_array(tmp_path / "n.zarr", shape=data.shape, chunks=(40, 36, 3), fill_value=0,
                          dtype=data.dtype, serializer=ShardingCodec(chunk_shape=(20, 18, 3), codecs=[inner]),
                          compressors=None)
    a[...] = data
    assert np.array_equal(zarr.open_array(tmp_path / "n.zarr", mode="r")[...], data)
    deep = ShardingCodec(chunk_shape=(20, 18, 3), codecs=[ShardingCodec(chunk_shape=(4, 6, 3), codecs=[ImiCodec()])])
    with pytest.raises(TypeError, match="IMI codec"):
        zarr.create_array(tmp_path / "x.zarr", shape=data.shape, chunks=(40, 36, 3), dtype="c8", serializer=deep,
                          compressors=None)


@pytest.mark.parametrize("dtype", ["c8", "U4", "M8[s]"])
def test_dtypes_imi_cannot_store_are_refused_at_creation_inside_a_shard(tmp_path, dtype):
    with pytest.raises(TypeError, match="IMI codec"):
        zarr.create_array(tmp_path / "x.zarr", shape=(8, 8), dtype=dtype, chunks=(4, 4), shards=(8, 8),
                          serializer=IMI, compressors=None)
    assert not (tmp_path / "x.zarr" / "zarr.json").exists()


@pytest.mark.parametrize(("chunks", "shards"), [((4, 4, 6), (8, 8, 6)), ((4, 4, 2), None)])
def test_a_channel_axis_longer_than_four_is_refused_at_creation_inside_a_shard(tmp_path, chunks, shards):
    """channels=True wants the array's last axis and its (inner) chunks' to be 1-4 long."""
    with pytest.raises(ValueError, match="channels=True"):
        zarr.create_array(tmp_path / "x.zarr", shape=(8, 8, 6), dtype="u1", chunks=chunks, shards=shards,
                          serializer=ImiCodec(channels=True), compressors=None)
    assert not (tmp_path / "x.zarr" / "zarr.json").exists()
