"""The numcodecs codec ``imi``: found by id through its entry point, and as a zarr 2 array's compressor."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from extras import require

numcodecs = require("numcodecs")
zarr = require("zarr")

import imij_plugins  # noqa: E402
from imij_plugins.codecs.numcodecs import Imi  # noqa: E402


def ramp(shape: tuple[int, ...], dtype: str = "u2") -> np.ndarray:
    return (np.arange(int(np.prod(shape))) * 7919 % 65521).astype(dtype).reshape(shape)


def test_a_fresh_process_gets_the_codec_by_id_through_its_entry_point():
    code = (
        "import sys, numcodecs\n"
        "assert 'imij_plugins' not in sys.modules\n"
        "c = numcodecs.get_codec({'id': 'imi', 'effort': 3})\n"
        "print(type(c).__module__, c.effort, 'imij_plugins' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["imij_plugins.codecs.numcodecs", "3", "True"]


@pytest.mark.parametrize(
    ("shape", "dtype", "decoded_shape"),
    [
        ((13, 17), "u2", (13, 17)),
        ((13, 17, 3), "f4", (13, 17, 3)),  # channels by default: 3 or more axes, the last of 1-4
        ((5, 13, 17), "i8", (5, 13, 17)),  # pages
        ((2, 3, 9, 8, 1), "?", (6, 9, 8)),  # pages of Gray: zarr reshapes to the chunk
    ],
)
def test_encode_decode_round_trip(shape, dtype, decoded_shape):
    data = ramp(shape, dtype)
    codec = Imi()
    back = codec.decode(codec.encode(data))
    assert back.shape == decoded_shape
    assert back.tobytes() == data.astype(back.dtype).tobytes()
    out = np.empty_like(data)
    codec.decode(codec.encode(data), out=out)
    assert np.array_equal(out, data)


def test_config_round_trips():
    codec = Imi(effort=2, max_error=1, channels=False)
    config = codec.get_config()
    assert config == {"id": "imi", "effort": 2, "max_error": 1, "codec": "entropy", "channels": False}
    assert numcodecs.get_codec(config) == codec


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="effort"):
        Imi(effort=11)


def test_out_of_the_wrong_size_and_garbage_are_corrupt():
    codec = Imi()
    data = codec.encode(ramp((8, 8)))
    with pytest.raises(imij_plugins.Corrupt):
        codec.decode(data, out=np.empty((9, 8), np.uint16))
    with pytest.raises(imij_plugins.ImijError):
        codec.decode(data[:-9])


@pytest.mark.parametrize("dtype", ["u1", "u2", "i4", "f8", "?"])
def test_zarr_2_array_with_imi_compressor_round_trips(tmp_path, dtype):
    data = ramp((33, 41, 2), dtype)
    z = zarr.create_array(store=tmp_path / "v2.zarr", shape=data.shape, dtype=data.dtype, chunks=(16, 16, 2),
                          zarr_format=2, compressors=Imi(), filters=None, fill_value=0)
    z[...] = data
    back = zarr.open_array(tmp_path / "v2.zarr", mode="r")
    assert back.metadata.compressor.get_config()["id"] == "imi"
    assert np.array_equal(back[...], data)
