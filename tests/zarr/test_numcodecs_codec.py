"""The numcodecs codec ``imi``: numcodecs' own checks on every dtype IMI holds, any memory and byte
order, found by id through its entry point, and as a zarr 2 array's compressor."""

from __future__ import annotations

import array
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from extras import require

numcodecs = require("numcodecs")
zarr = require("zarr")

from numcodecs.tests import common  # noqa: E402

import imij_plugins  # noqa: E402
from imij_plugins.codecs.numcodecs import Imi  # noqa: E402
from imij_plugins.container.metadata import ItemMetadata  # noqa: E402

DTYPES = ["?", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f2", "f4", "f8"]
FIXTURES = Path(__file__).parent / "fixtures"  # numcodecs' layout below it: fixture/imi/<dtype>/...
CODECS = [Imi(), Imi(codec="quick", effort=1)]


def ramp(shape: tuple[int, ...], dtype: str = "u2") -> np.ndarray:
    """Values that fill the dtype's low bytes and more; bool alternates."""
    values = np.arange(int(np.prod(shape))) * 7919 % 65521
    dt = np.dtype(dtype)
    return (values % 2 == 1 if dt == np.bool_ else values.astype(dt)).reshape(shape)


def arrays(dtype: str) -> list[np.ndarray]:
    """One of every layout: a row, an image in C and F order, RGB in C and F, pages, strided and,
    for multi-byte dtypes, big-endian C and F."""
    rgb = ramp((6, 7, 3), dtype)
    out = [ramp((100,), dtype), ramp((10, 12), dtype), np.asfortranarray(ramp((10, 12), dtype)), rgb,
           np.asfortranarray(rgb), ramp((2, 3, 5, 4, 1), dtype), ramp((9, 16), dtype)[::2, 1::3]]
    if np.dtype(dtype).itemsize > 1:
        out += [ramp((10, 12), dtype).astype(f">{dtype}"), np.asfortranarray(rgb.astype(f">{dtype}"))]
    return out


def exactly(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype (byte order included) and memory order, and the same bytes in memory order."""
    return (a.shape, a.dtype.str, a.flags.f_contiguous) == (b.shape, b.dtype.str, b.flags.f_contiguous) and (
        a.tobytes(order="A") == b.tobytes(order="A")
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_numcodecs_check_encode_decode_on_every_layout(dtype):
    for a in arrays(dtype):
        common.check_encode_decode(a, Imi())
        common.check_encode_decode_array(a, Imi())


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode_gives_back_the_array_in_its_own_dtype_shape_and_order(dtype):
    for a in arrays(dtype):
        back = Imi().decode(Imi().encode(a))
        expected = a if a.flags.c_contiguous or a.flags.f_contiguous else np.ascontiguousarray(a)
        assert exactly(back, expected), (a.shape, a.dtype, a.strides)


@pytest.mark.parametrize(
    "a",
    [np.zeros((0, 5), "u2"), np.zeros((3, 0, 2), ">f4"), np.zeros((0,), "?"), np.array(7, "i8"), np.array(True)],
    ids=["0x5", "3x0x2-big-endian", "empty-bool", "scalar", "bool-scalar"],
)
def test_empty_arrays_and_scalars_round_trip(a):
    assert exactly(Imi().decode(Imi().encode(a)), a)
    common.check_encode_decode_array(a, Imi())


def test_any_buffer_is_encoded_as_numpy_sees_it():
    a = ramp((5, 40), "u2")
    for buf, dtype in [(a.tobytes(), "u1"), (bytearray(a.tobytes()), "u1"), (memoryview(a.tobytes()), "u1"),
                       (array.array("h", a.astype("i2").tobytes()), "i2"), (memoryview(a), "u2")]:
        back = Imi().decode(Imi().encode(buf))
        assert back.dtype == np.dtype(dtype) and back.tobytes() == bytes(buf)


@pytest.mark.parametrize("dtype", ["c8", "U4", "M8[s]", "O", "V3"])
def test_dtypes_imi_cannot_hold_are_refused(dtype):
    with pytest.raises(TypeError, match="IMI codec"):
        Imi().encode(np.zeros((4, 4), dtype))


def test_decode_into_out_copies_values_whatever_outs_layout():
    a = ramp((13, 17, 3), "u2")
    data = Imi().encode(a)
    for out in [np.empty_like(a, order="F"), np.empty(a.shape, ">u2"), np.empty((13, 34, 3), "u2")[:, ::2]]:
        assert Imi().decode(data, out=out) is out
        assert np.array_equal(out, a)
    raw = bytearray(a.nbytes)  # not of the array's shape: its bytes, in its memory order
    Imi().decode(data, out=raw)
    assert bytes(raw) == a.tobytes()
    f = np.asfortranarray(a)
    flat = np.empty(a.size, "u2")
    Imi().decode(Imi().encode(f), out=flat)
    assert flat.tobytes() == f.tobytes(order="F")


def test_out_that_cannot_take_the_chunk_is_refused_before_it_is_written():
    data = Imi().encode(ramp((8, 8)))
    wrong_size = np.full((9, 8), 5, np.uint16)
    with pytest.raises(imij_plugins.Corrupt):
        Imi().decode(data, out=wrong_size)
    not_contiguous = np.full((4, 32), 5, np.uint16)[:, ::2]  # as many bytes, another shape, strided
    with pytest.raises(ValueError, match="not contiguous"):
        Imi().decode(data, out=not_contiguous)
    assert (wrong_size == 5).all() and (not_contiguous == 5).all()


def test_garbage_and_damaged_layout_records_are_corrupt():
    data = Imi().encode(ramp((8, 8)))
    with pytest.raises(imij_plugins.ImijError):
        Imi().decode(data[:-9])
    for attributes in [{"numpy.dtype": "<c8", "numpy.order": "C", "numpy.shape": "8,8"},
                       {"numpy.dtype": "<u2", "numpy.order": "K", "numpy.shape": "8,8"},
                       {"numpy.dtype": "<u2", "numpy.order": "C", "numpy.shape": "9,8"},
                       {"numpy.dtype": "<u2", "numpy.order": "C", "numpy.shape": "x"},
                       {"numpy.dtype": "|b1", "numpy.order": "C", "numpy.shape": "8,8"}]:
        forged = imij_plugins.encode(ramp((8, 8), "u1" if attributes["numpy.dtype"] == "|b1" else "u2") * 3,
                                     item_metadata=ItemMetadata.from_mapping(attributes))
        with pytest.raises(imij_plugins.Corrupt):
            Imi().decode(forged)


def test_a_file_without_a_layout_record_decodes_to_what_it_holds():
    """Files of the earlier Imi, or of any writer: (H, W[, C]) or pages, C 1 dropped."""
    pages = [ramp((9, 8, 1)), ramp((9, 8, 1)) + 1]
    back = Imi().decode(imij_plugins.encode(pages, kind="pages"))
    assert back.shape == (2, 9, 8) and np.array_equal(back[..., None], np.stack(pages))
    out = np.empty((2, 1, 9, 8), np.uint16)
    Imi().decode(imij_plugins.encode(pages, kind="pages"), out=out)
    assert np.array_equal(out.reshape(2, 9, 8, 1), np.stack(pages))


@pytest.mark.parametrize("codec", [Imi(), Imi(effort=2, max_error=1, channels=False), Imi(codec="quick", effort=1, channels=True)])
def test_numcodecs_check_config_and_repr(codec, monkeypatch):
    common.check_config(codec)
    monkeypatch.setattr(common, "Imi", Imi, raising=False)  # check_repr evaluates in numcodecs' own namespace
    common.check_repr(repr(codec))
    assert repr(Imi()) == "Imi(channels=None, codec='entropy', effort=5, max_error=0)"


@pytest.mark.parametrize("dtype", DTYPES)
def test_numcodecs_check_backwards_compatibility(dtype, monkeypatch):
    """Decodes the committed fixtures (tests/zarr/fixtures/fixture/imi/<dtype>); IMIJ_WRITE_FIXTURES=1
    writes missing ones, else a missing fixture fails instead of being written."""
    fixture_dir = FIXTURES / "fixture" / "imi" / dtype
    if os.environ.get("IMIJ_WRITE_FIXTURES") != "1":
        assert len(list(fixture_dir.glob("array.*.npy"))) == len(arrays(dtype)), f"missing fixtures in {fixture_dir}"
        assert all((fixture_dir / f"codec.{j:02d}" / "config.json").exists() for j in range(len(CODECS)))
    FIXTURES.mkdir(exist_ok=True)
    monkeypatch.chdir(FIXTURES)
    contiguous = [np.ascontiguousarray(a) if not (a.flags.c_contiguous or a.flags.f_contiguous) else a for a in arrays(dtype)]
    common.check_backwards_compatibility("imi", contiguous, CODECS, prefix=dtype)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="effort"):
        Imi(effort=11)
    with pytest.raises(ValueError, match="channels"):
        Imi(channels="yes")  # type: ignore[arg-type]


def test_options_are_keywords_and_the_default_effort_is_the_writers():
    """Keyword-only, as numcodecs rebuilds a codec from its stored config; no default of its own."""
    with pytest.raises(TypeError):
        Imi(3)  # type: ignore[misc]
    back = numcodecs.get_codec(Imi(effort=3, codec="quick", channels=False).get_config())
    assert (back.effort, back.codec, back.channels) == (3, "quick", False)
    assert Imi().effort == imij_plugins.EncodeOptions().effort


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


ZARR2_CASES = [
    ("u2", (33, 41), (16, 16)),
    (">u2", (33, 41), (16, 16)),
    (">f4", (33, 41), (16, 16)),
    ("?", (33, 41), (16, 16)),
    ("u1", (20, 21, 3), (8, 8, 3)),  # RGB chunks
    (">i8", (5, 20, 21), (2, 8, 8)),  # pages
]


@pytest.mark.parametrize(("dtype", "shape", "chunks"), ZARR2_CASES)
@pytest.mark.parametrize("store_order", ["C", "F"])
@pytest.mark.parametrize("input_order", ["C", "F"])
def test_zarr_2_arrays_of_every_order_and_byte_order_round_trip(tmp_path, dtype, shape, chunks, store_order, input_order):
    """zarr's order test, adapted: data in either order into a zarr 2 array stored in either order."""
    data = ramp(shape, dtype).copy(order=input_order)
    z = zarr.create_array(store=tmp_path / "v2.zarr", shape=shape, dtype=data.dtype, chunks=chunks, zarr_format=2,
                          compressors=Imi(), filters=None, fill_value=0, order=store_order)
    z[...] = data
    back = zarr.open_array(tmp_path / "v2.zarr", mode="r")
    assert back.metadata.compressor.get_config()["id"] == "imi"
    assert back.metadata.order == store_order
    assert back.dtype == data.dtype
    assert np.array_equal(back[...], data)
    assert np.array_equal(back[3:17, 5:9], data[3:17, 5:9])
