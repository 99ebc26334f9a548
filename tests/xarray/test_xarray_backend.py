"""The ``imi`` xarray engine: discovery, lazy unit-aligned reads, dtypes, frames, aXES coordinates, CF attributes.

No ``__init__.py`` here: a ``tests/xarray`` package would shadow the real xarray.
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
from extras import require

import imij_plugins
from imij_plugins.container.metadata import science as sc
from imij_plugins.payload.data import DataPayload

xr = require("xarray")
from imij_plugins.xarray import ImiBackendEntrypoint  # noqa: E402

DTYPES = ["u1", "u2", "f2", "u4", "i4", "f4", "i1", "i2", "u8", "i8", "f8"]


def samples(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Random samples covering the dtype's range (floats with a NaN and a -0.0)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.standard_normal(shape).astype(dt) * 1000
        a.flat[0], a.flat[1] = np.nan, -0.0
        return a
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


@pytest.fixture
def decoded_units(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The index of every unit the core decodes."""
    calls: list[int] = []
    decode = DataPayload._decode_unit

    def counting(self, index, *args, **kwargs):
        calls.append(index)
        return decode(self, index, *args, **kwargs)

    monkeypatch.setattr(DataPayload, "_decode_unit", counting)
    return calls


def test_engine_is_discovered_through_its_entry_point(tmp_path):
    assert isinstance(xr.backends.list_engines()["imi"], ImiBackendEntrypoint)
    path = tmp_path / "a.imi"
    a = samples((8, 9), "u2")
    imij_plugins.write(path, a)
    with xr.open_dataset(path) as ds:  # no engine=: guess_can_open picks imi by extension
        np.testing.assert_array_equal(ds["image"].values, a)
    engine = ImiBackendEntrypoint()
    data = path.read_bytes()
    assert engine.guess_can_open(str(path)) and engine.guess_can_open(data) and engine.guess_can_open(io.BytesIO(data))
    assert not engine.guess_can_open("a.png") and not engine.guess_can_open(b"\x89PNG\r\n\x1a\n")
    with xr.open_dataset(io.BytesIO(data), engine="imi") as ds:
        np.testing.assert_array_equal(ds["image"].values, a)


def test_selection_decodes_only_the_units_it_overlaps(tmp_path, decoded_units):
    path = tmp_path / "units.imi"
    a = samples((64, 100), "u1")
    imij_plugins.write(path, a, stripe_rows=16, group_cols=40)  # 4 stripes x 3 column groups
    with xr.open_dataarray(path, engine="imi") as da:
        assert decoded_units == []  # opening decodes nothing
        np.testing.assert_array_equal(da[20:30, 45:50].values, a[20:30, 45:50])
        assert decoded_units == [4]  # stripe 1, column group 1
        decoded_units.clear()
        np.testing.assert_array_equal(da[::7, 90].values, a[::7, 90])
        assert sorted(decoded_units) == [2, 5, 8, 11]
        decoded_units.clear()
        np.testing.assert_array_equal(da.values, a)
        assert sorted(decoded_units) == list(range(12))


def test_a_list_of_rows_decodes_only_their_units(tmp_path, decoded_units):
    path = tmp_path / "big.imi"
    y, x = np.mgrid[:2048, :2048]
    a = ((x + 3 * y) % 251).astype(np.uint8)
    imij_plugins.write(path, a, stripe_rows=64, group_cols=512, codec="quick")  # 32 stripes x 4 column groups
    with xr.open_dataarray(path, engine="imi") as da:
        np.testing.assert_array_equal(da.isel(y=[0, 2047]).values, a[[0, 2047]])
        assert sorted(decoded_units) == [0, 1, 2, 3, 124, 125, 126, 127]  # stripes 0 and 31, not the span
        decoded_units.clear()
        np.testing.assert_array_equal(da.isel(y=[100, 2000], x=[7, 1500]).values, a[np.ix_([100, 2000], [7, 1500])])
        assert sorted(decoded_units) == [4, 6, 124, 126]


def test_outer_selections_read_like_numpy(tmp_path, decoded_units):
    path = tmp_path / "outer.imi"
    a = samples((64, 100, 3), "u2")
    imij_plugins.write(path, a, stripe_rows=16, group_cols=40)
    rows, cols = [40, 3, 40, -1, 17], [99, 0, 50, 1]
    with xr.open_dataarray(path, engine="imi") as da:
        np.testing.assert_array_equal(da.isel(y=rows, x=cols).values, a[np.ix_(rows, cols)])
        np.testing.assert_array_equal(da.isel(y=rows, x=5, c=[2, 0]).values, a[np.ix_(rows, [5], [2, 0])][:, 0])
        np.testing.assert_array_equal(da.isel(y=slice(10, 50, 3), x=cols).values, a[10:50:3][:, cols])
        assert da.isel(y=[], x=cols).shape == (0, 4, 3)

        decoded_units.clear()
        points = da.isel(y=xr.DataArray([1, 60], dims="p"), x=xr.DataArray([2, 90], dims="p"))  # vectorized
        np.testing.assert_array_equal(points.values, a[[1, 60], [2, 90]])
        assert sorted(decoded_units) == [0, 11]  # each point's own unit, not 2 stripes x 2 groups


@pytest.mark.parametrize("indexers", [
    {"y": ("p", [1, 60, 1, -3]), "x": ("p", [2, 90, 3, 41])},
    {"y": (("p", "q"), [[0, 63], [20, 21]]), "x": ("q", [99, 0]), "c": slice(0, 3, 2)},
    {"y": ("p", [5, 33]), "c": ("p", [2, 0]), "x": slice(30, 50)},
    {"x": ("p", []), "y": ("p", [])},
])
def test_vectorized_selections_read_like_xarray_in_memory(tmp_path, indexers):
    path = tmp_path / "points.imi"
    a = samples((64, 100, 3), "u2")
    imij_plugins.write(path, a, stripe_rows=16, group_cols=40)
    key = {d: xr.DataArray(np.array(v[1], int), dims=v[0]) if isinstance(v, tuple) else v for d, v in indexers.items()}
    with xr.open_dataarray(path, engine="imi") as da:
        expected = da.load().isel(key)
        da.close()
    with xr.open_dataarray(path, engine="imi") as da:
        got = da.isel(key)
        assert got.dims == expected.dims
        np.testing.assert_array_equal(got.values, expected.values)


def test_outer_selections_of_frames_and_calibrated_channels(tmp_path):
    path = tmp_path / "frames.imi"
    frames = [samples((20, 24, 2), "u2", seed) for seed in range(4)]
    cal = sc.Calibration((sc.ChannelCalibration(2.0, 1.0, "K", "temperature"), sc.ChannelCalibration(unit="%", quantity="humidity")))
    imij_plugins.write(path, frames, kind="pages", stripe_rows=8, layout="GrayAlpha", science={"calibration": cal})
    stack = np.stack(frames)
    with xr.open_dataset(path, engine="imi") as ds:
        got = ds["temperature"].isel(page=[3, 0], y=[19, 2]).values
        np.testing.assert_array_equal(got, 2.0 * stack[np.ix_([3, 0], [19, 2])][..., 0] + 1.0)
        np.testing.assert_array_equal(ds["humidity"].isel(page=[1], x=[23, 0]).values, stack[[1]][:, :, [23, 0], 1])


def test_chunks_follow_the_units(tmp_path):
    require("dask")
    path = tmp_path / "chunks.imi"
    a = samples((70, 100, 3), "u2")
    imij_plugins.write(path, a, stripe_rows=16, group_cols=40)
    with xr.open_dataarray(path, engine="imi", chunks={}) as da:
        assert da.chunks == ((16, 16, 16, 16, 6), (40, 40, 20), (3,))
        np.testing.assert_array_equal(da.compute().values, a)
        again = pickle.loads(pickle.dumps(da))  # what dask workers receive
        np.testing.assert_array_equal(again[5:40, 33:90].values, a[5:40, 33:90])


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_reads_exactly(tmp_path, dtype):
    path = tmp_path / f"{dtype}.imi"
    a = samples((12, 10, 3), dtype)
    imij_plugins.write(path, a)
    with xr.open_dataarray(path, engine="imi") as da:
        assert da.dims == ("y", "x", "c") and da.dtype == a.dtype
        assert list(da["c"].values) == ["R", "G", "B"]
        assert da.values.tobytes() == a.tobytes()  # bit-exact, NaN and -0.0 included
        assert da[3:7, 2:9, 1:].values.tobytes() == a[3:7, 2:9, 1:].tobytes()


@pytest.mark.parametrize(("kind", "dim"), [("animation", "frame"), ("pages", "page")])
def test_frames_and_pages_are_a_leading_dim(tmp_path, kind, dim):
    path = tmp_path / f"{kind}.imi"
    frames = [samples((20, 24), "u1", seed) for seed in range(3)]
    imij_plugins.write(path, frames, kind=kind, stripe_rows=8)
    with xr.open_dataarray(path, engine="imi", chunks={}) as da:
        assert da.dims == (dim, "y", "x") and da.chunks[0] == (1, 1, 1)
        np.testing.assert_array_equal(da.values, np.stack(frames))
        np.testing.assert_array_equal(da[2, 3:11, 5].values, frames[2][3:11, 5])
    with xr.open_dataarray(path, engine="imi", index=1) as da:
        assert da.dims == ("y", "x")
        np.testing.assert_array_equal(da.values, frames[1])


def test_mixed_pages_open_one_at_a_time(tmp_path):
    path = tmp_path / "mixed.imi"
    pages = [samples((8, 8), "u1"), samples((5, 6), "u2")]
    imij_plugins.write(path, pages, kind="pages")
    with pytest.raises(ValueError, match="index="):
        xr.open_dataset(path, engine="imi")
    with xr.open_dataarray(path, engine="imi", index=1) as da:
        np.testing.assert_array_equal(da.values, pages[1])


def axes_record(area: bool = False) -> sc.Axes:
    """time bound to frames, lat/lon to rows/columns, depth a coordinate axis, with level-0 transforms."""
    axes = (
        sc.Axis("time", sc.KIND_TIME, sc.BIND_FRAMES, "s"),
        sc.Axis("lat", sc.KIND_SPACE, sc.BIND_ROWS, "degrees_north"),
        sc.Axis("lon", sc.KIND_SPACE, sc.BIND_COLUMNS, "degrees_east"),
        sc.Axis("depth", sc.KIND_SPACE, sc.BIND_COORDINATE, "m"),
    )
    level = sc.AxisLevel((60.0, -0.5, 0.25, 10.0), (100.0, 45.0, 5.0, 0.0))
    return sc.Axes(axes, (level,), pixel_is_area=area)


@pytest.mark.parametrize("area", [False, True])
def test_axes_give_coordinates_units_and_names(tmp_path, area):
    path = tmp_path / "axes.imi"
    frames = [samples((6, 8), "i2", seed) for seed in range(2)]
    science = {"axes": axes_record(area), "coordinates": sc.Coordinates((-3,))}
    imij_plugins.write(path, frames, kind="animation", science=science)
    with xr.open_dataarray(path, engine="imi") as da:
        assert da.dims == ("time", "lat", "lon")
        half = 0.5 if area else 0.0  # 1.5 bit 0: pixel i covers [i, i + 1), its centre is i + 0.5
        np.testing.assert_allclose(da["time"].values, [100.0, 160.0])
        np.testing.assert_allclose(da["lat"].values, 45.0 - 0.5 * (np.arange(6) + half))
        np.testing.assert_allclose(da["lon"].values, 5.0 + 0.25 * (np.arange(8) + half))
        assert da["lat"].attrs == {"axis_kind": "space", "units": "degrees_north"}
        assert da["time"].attrs["axis_kind"] == "time" and da["time"].attrs["units"] == "s"
        assert float(da["depth"]) == -30.0 and da["depth"].attrs["units"] == "m"
        assert da.attrs["pixel_is_area"] == int(area)
        np.testing.assert_array_equal(da.sel(time=160.0).values, frames[1])


def test_affine_and_method_are_attributes(tmp_path):
    path = tmp_path / "affine.imi"
    axes = (sc.Axis("y", 0, sc.BIND_ROWS, "m"), sc.Axis("x", 0, sc.BIND_COLUMNS, "m"))
    affine = (1.0, 0.5, 10.0, 0.0, 1.0, 20.0)
    imij_plugins.write(path, samples((4, 4), "u1"), science={"axes": sc.Axes(axes, (), False, "mean", affine)})
    with xr.open_dataarray(path, engine="imi") as da:
        np.testing.assert_array_equal(da.attrs["affine"], affine)
        assert da.attrs["affine_axes"] == ["y", "x"] and da.attrs["resampling_method"] == "mean"


def calibrated(tmp_path, **entry: object) -> tuple[str, np.ndarray]:
    """A 1-channel i16 image with one cALB entry."""
    path = str(tmp_path / "cal.imi")
    a = np.array([[-100, 0, 10], [20, 5000, -60]], dtype=np.int16)
    imij_plugins.write(path, a, science={"calibration": sc.Calibration((sc.ChannelCalibration(**entry),))})
    return path, a


def test_calibration_decodes_to_physical_values(tmp_path):
    path, a = calibrated(tmp_path, slope=0.5, offset=273.15, unit="K", quantity="air_temperature",
                         cf_standard_name=True, valid_min=-50.0, valid_max=4000.0, nodata=(-100.0,))
    expect = 0.5 * a.astype(np.float64) + 273.15
    expect[(a == -100) | (a < -50) | (a > 4000)] = np.nan  # 1.5: nodata and outside the valid range
    with xr.open_dataarray(path, engine="imi") as da:
        np.testing.assert_array_equal(da.values, expect)
        assert da.attrs["units"] == "K" and da.attrs["standard_name"] == "air_temperature"
        assert da.encoding["scale_factor"] == 0.5 and da.encoding["add_offset"] == 273.15
        assert da.encoding["_FillValue"] == -100 and da.encoding["dtype"] == np.int16
    with xr.open_dataset(path, engine="imi", mask_and_scale=False) as raw:
        image = raw["image"]
        assert image.dtype == np.int16 and image.attrs["scale_factor"] == 0.5
        assert image.attrs["valid_min"] == -50.0 and image.attrs["valid_max"] == 4000.0
        decoded = xr.decode_cf(raw)["image"].values  # xarray applies scale, offset and _FillValue
    fill_only = 0.5 * a.astype(np.float64) + 273.15
    fill_only[a == -100] = np.nan
    np.testing.assert_allclose(decoded, fill_only)


def test_free_text_quantity_and_several_nodata_values(tmp_path):
    path, a = calibrated(tmp_path, quantity="Hounsfield units", nodata=(-100.0, 5000.0, 0.5))
    with xr.open_dataset(path, engine="imi", mask_and_scale=False) as raw:
        attrs = raw["image"].attrs
        assert attrs["long_name"] == "Hounsfield units" and "standard_name" not in attrs
        assert attrs["_FillValue"] == -100 and list(attrs["missing_value"]) == [5000]  # 0.5 never matches an i16
    with xr.open_dataarray(path, engine="imi") as da:
        assert np.isnan(da.values[(a == -100) | (a == 5000)]).all() and da.dtype == np.float64
        np.testing.assert_array_equal(da.values[(a != -100) & (a != 5000)], a[(a != -100) & (a != 5000)])


def test_channels_with_their_own_calibration_are_variables(tmp_path):
    path = tmp_path / "bands.imi"
    a = samples((5, 6, 2), "u2")
    cal = sc.Calibration((sc.ChannelCalibration(2.0, 1.0, "K", "temperature"), sc.ChannelCalibration(unit="%", quantity="humidity")))
    imij_plugins.write(path, a, layout="GrayAlpha", science={"calibration": cal})
    with xr.open_dataset(path, engine="imi") as ds:
        assert set(ds.data_vars) == {"temperature", "humidity"}
        np.testing.assert_array_equal(ds["temperature"].values, 2.0 * a[..., 0] + 1.0)
        np.testing.assert_array_equal(ds["humidity"].values, a[..., 1])
        assert ds["humidity"].dtype == np.uint16 and ds["humidity"].attrs["units"] == "%"


def test_categories_are_cf_flags(tmp_path):
    path = tmp_path / "labels.imi"
    a = np.array([[0, 1], [2, 1]], dtype=np.uint8)
    cats = sc.Categories(((sc.Category(0, None, "water"), sc.Category(1, (0, 128, 0, 255), "deep forest"), sc.Category(2)),))
    imij_plugins.write(path, a, science={"categories": cats})
    with xr.open_dataarray(path, engine="imi") as da:
        assert da.dtype == np.uint8
        np.testing.assert_array_equal(da.attrs["flag_values"], [0, 1, 2])
        assert da.attrs["flag_values"].dtype == np.uint8
        assert da.attrs["flag_meanings"] == "water deep_forest category_2"
        assert da.attrs["flag_colors"] == ("", "#008000ff", "")


def test_a_datatree_has_a_node_per_page_and_one_for_a_single_image(tmp_path):
    pages = [samples((8, 8), "u1"), samples((5, 6, 3), "u2")]
    imij_plugins.write(tmp_path / "mixed.imi", pages, kind="pages")
    with xr.open_datatree(tmp_path / "mixed.imi", engine="imi") as tree:
        assert set(tree.children) == {"page_0", "page_1"} and tree.attrs == {"frame_kind": "mixed pages", "frames": 2}
        np.testing.assert_array_equal(tree["page_0"]["image"].values, pages[0])
        assert tree["page_1"]["image"].dims == ("y", "x", "c")
        np.testing.assert_array_equal(tree["page_1"]["image"].isel(y=[4, 0]).values, pages[1][[4, 0]])
    frames = [samples((6, 7), "i2", seed) for seed in range(3)]
    imij_plugins.write(tmp_path / "anim.imi", frames, kind="animation")
    with xr.open_datatree(tmp_path / "anim.imi") as tree:  # no engine=: guessed by extension
        assert list(tree.children) == ["frame_0", "frame_1", "frame_2"]
        np.testing.assert_array_equal(tree["frame_2"]["image"].values, frames[2])
    imij_plugins.write(tmp_path / "one.imi", frames[0])
    with xr.open_datatree(tmp_path / "one.imi", engine="imi", chunks={}) as tree:
        assert not tree.children and tree["image"].chunks is not None
        np.testing.assert_array_equal(tree["image"].values, frames[0])


def test_a_datatree_of_an_archive_has_a_node_per_entry(tmp_path):
    from imij_plugins import imijset

    path = tmp_path / "a.imijset"
    a, b = samples((4, 5), "u1"), [samples((3, 3), "f4", s) for s in range(2)]
    with imijset.open(path, "w") as archive:
        archive.append(5, a, filename="a.png")
        archive.append(9, imij_plugins.encode(b, kind="pages"))
    with xr.open_datatree(path, engine="imi") as tree:
        assert list(tree.children) == ["key_5", "key_9"]
        assert tree["key_5"].attrs["filename"] == "a.png" and tree["key_5"].attrs["imijset_key"] == 5
        np.testing.assert_array_equal(tree["key_5"]["image"].values, a)
        assert list(tree["key_9"].children) == ["page_0", "page_1"]
        assert tree["key_9/page_1"]["image"].values.tobytes() == b[1].tobytes()
    groups = xr.open_groups(path, engine="imi")
    assert set(groups) == {"/", "/key_5", "/key_9", "/key_9/page_0", "/key_9/page_1"}
    with pytest.raises(ValueError, match="open_datatree"):
        xr.open_dataset(path, engine="imi")
