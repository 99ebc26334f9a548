"""The zarr 3 codec ``imij.imi``: every dtype and chunk kind through real arrays on disk, by name."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from extras import require

zarr = require("zarr")

import imij_plugins  # noqa: E402
from imij_plugins.codecs.zarr3 import ImiCodec  # noqa: E402

DTYPES = ["?", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f2", "f4", "f8"]
BY_NAME = {"name": "imij.imi"}


def sample(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Values spanning the dtype, with NaN, infinities and -0.0 for floats."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "f":
        a = rng.normal(0, 1000, shape).astype(dt)
        a.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        return a
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def make(path: Path, data: np.ndarray, chunks: tuple[int, ...], serializer: object = BY_NAME) -> zarr.Array:
    z = zarr.create_array(store=path, shape=data.shape, dtype=data.dtype, chunks=chunks, serializer=serializer,
                          compressors=None, fill_value=0)
    z[...] = data
    return z


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit (NaN payloads and -0.0 included)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_with_odd_chunk_edges(tmp_path, dtype):
    data = sample((37, 53), dtype)
    make(tmp_path / "a.zarr", data, (16, 24))
    back = zarr.open_array(tmp_path / "a.zarr", mode="r")
    assert same(back[...], data)
    assert same(back[5:30, 17:40], data[5:30, 17:40])


def coded_as(path: Path) -> tuple[int, int]:
    """(pages, channels) of the IMI file that stores a chunk."""
    with imij_plugins.open(path) as f:
        return f.n_frames, f.channels


@pytest.mark.parametrize(
    ("shape", "chunks", "coding"),
    [
        ((37, 29, 3), (16, 16, 3), (1, 3)),  # RGB chunks
        ((23, 19, 4), (10, 10, 2), (1, 2)),  # two channels a chunk
        ((5, 37, 29), (2, 16, 16), (2, 1)),  # a stack: pages
        ((4, 20, 21, 2), (3, 8, 8, 2), (3, 2)),  # pages of GrayAlpha
        ((2, 3, 11, 13), (1, 2, 5, 6), (2, 1)),  # two leading axes: pages
        ((101,), (33,), (1, 1)),  # one row a chunk
    ],
)
def test_chunk_kinds_round_trip_coded_by_their_shape(tmp_path, shape, chunks, coding):
    data = sample(shape, "u2", seed=len(shape))
    make(tmp_path / "k.zarr", data, chunks)
    back = zarr.open_array(tmp_path / "k.zarr", mode="r")
    assert same(back[...], data)
    assert coded_as(tmp_path / "k.zarr" / "c" / Path(*["0"] * len(shape))) == coding
    assert "channels" not in back.metadata.codecs[0].to_dict()["configuration"]  # unset: decided per chunk


def test_channels_can_be_chosen_against_the_default(tmp_path):
    data = sample((6, 20, 3), "f4")  # a stack of 6 images 20 x 3, not one RGB image
    make(tmp_path / "s.zarr", data, (4, 20, 3), ImiCodec(channels=False))
    back = zarr.open_array(tmp_path / "s.zarr", mode="r")
    assert same(back[...], data)
    assert back.metadata.codecs[0].channels is False
    assert coded_as(tmp_path / "s.zarr" / "c" / "0" / "0" / "0") == (4, 1)


def test_configuration_round_trips_through_to_dict_and_from_dict():
    codec = ImiCodec(effort=7, max_error=2, codec="entropy", channels=True)
    d = codec.to_dict()
    assert d == {"name": "imij.imi", "configuration": {"effort": 7, "max_error": 2, "codec": "entropy", "channels": True}}
    assert ImiCodec.from_dict(json.loads(json.dumps(d))) == codec
    assert ImiCodec.from_dict({"name": "imij.imi"}) == ImiCodec()


@pytest.mark.parametrize("bad", [{"effort": 0}, {"max_error": -1}, {"codec": "lossy"}, {"channels": "yes"}])
def test_bad_configuration_is_refused_naming_the_option(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        ImiCodec(**bad)


def test_max_error_bound_holds_and_is_stored(tmp_path):
    data = sample((40, 45), "u2", seed=3) // 16
    make(tmp_path / "n.zarr", data, (20, 20), ImiCodec(max_error=3))
    back = zarr.open_array(tmp_path / "n.zarr", mode="r")
    diff = np.abs(back[...].astype(np.int64) - data.astype(np.int64))
    assert diff.max() <= 3
    assert back.metadata.codecs[0].max_error == 3


def test_quick_codec_round_trips(tmp_path):
    data = sample((30, 31, 3), "u1")
    make(tmp_path / "q.zarr", data, (16, 16, 3), ImiCodec(codec="quick", effort=1))
    assert same(zarr.open_array(tmp_path / "q.zarr", mode="r")[...], data)


def test_big_endian_arrays_round_trip(tmp_path):
    data = sample((17, 19), "i4").astype(">i4")
    make(tmp_path / "b.zarr", data, (8, 8))
    assert np.array_equal(zarr.open_array(tmp_path / "b.zarr", mode="r")[...], data)


@pytest.mark.parametrize("dtype", ["c8", "M8[s]", "U4"])
def test_dtypes_imi_cannot_store_are_refused_at_creation(tmp_path, dtype):
    with pytest.raises(TypeError, match="IMI codec"):
        zarr.create_array(store=tmp_path / "x.zarr", shape=(8, 8), dtype=dtype, chunks=(4, 4), serializer=BY_NAME,
                          compressors=None)


def test_channel_chunks_of_more_than_four_are_refused_at_creation(tmp_path):
    with pytest.raises(ValueError, match="channels=True"):
        zarr.create_array(store=tmp_path / "x.zarr", shape=(8, 8, 6), dtype="u1", chunks=(4, 4, 6),
                          serializer=ImiCodec(channels=True), compressors=None)


def test_corrupt_chunk_bytes_raise_corrupt(tmp_path):
    data = sample((32, 32), "u2")
    make(tmp_path / "c.zarr", data, (16, 16))
    chunk = tmp_path / "c.zarr" / "c" / "0" / "1"
    good = chunk.read_bytes()
    chunk.write_bytes(good[: len(good) // 2])
    back = zarr.open_array(tmp_path / "c.zarr", mode="r")
    with pytest.raises(imij_plugins.Corrupt):
        back[...]
    assert same(back[16:, :], data[16:, :])  # the other chunks still read


def test_a_chunk_of_another_shape_is_corrupt(tmp_path):
    data = sample((32, 32), "u2")
    make(tmp_path / "w.zarr", data, (16, 16))
    (tmp_path / "w.zarr" / "c" / "0" / "0").write_bytes(imij_plugins.encode(np.zeros((8, 8), np.uint16)))
    with pytest.raises(imij_plugins.Corrupt, match="expects"):
        zarr.open_array(tmp_path / "w.zarr", mode="r")[...]


def test_a_fresh_process_finds_the_codec_by_name_through_its_entry_point(tmp_path):
    data = sample((21, 34, 3), "f2")
    make(tmp_path / "e.zarr", data, (8, 16, 3))
    np.save(tmp_path / "e.npy", data)
    script = textwrap.dedent(
        f"""
        import sys
        from importlib.metadata import entry_points
        import numpy as np
        import zarr
        (ep,) = [e for e in entry_points(group="zarr.codecs") if e.name == "imij.imi"]
        z = zarr.open_array({str(tmp_path / "e.zarr")!r}, mode="r")
        assert "imij_plugins" in sys.modules  # loaded by zarr through the entry point, not by this script
        codec = z.metadata.codecs[0]
        assert type(codec).__module__ + ":" + type(codec).__name__ == ep.value, ep.value
        assert z[...].tobytes() == np.load({str(tmp_path / "e.npy")!r}).tobytes()
        print("ok", ep.value)
        """
    )
    before = "import sys; import zarr; assert 'imij_plugins' not in sys.modules\n"
    for code in (before, script):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert "imij_plugins.codecs.zarr3:ImiCodec" in proc.stdout
