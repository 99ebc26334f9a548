"""``to_imi``: DataArrays back to IMI files, coordinates, units and CF attributes kept through a round trip."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

import imij_plugins
from imij_plugins.container.metadata import science as sc

xr = require("xarray")
from imij_plugins.xarray import to_imi  # noqa: E402


def test_a_file_with_every_record_round_trips(tmp_path):
    src, dst = tmp_path / "src.imi", tmp_path / "dst.imi"
    axes = sc.Axes(
        (sc.Axis("time", 1, sc.BIND_FRAMES, "s"), sc.Axis("lat", 0, sc.BIND_ROWS, "degrees_north"),
         sc.Axis("lon", 0, sc.BIND_COLUMNS, "degrees_east"), sc.Axis("band", 3, sc.BIND_CHANNELS, "", "spectral"),
         sc.Axis("depth", 0, sc.BIND_COORDINATE, "m")),  # the order to_imi writes: array dims, then coordinates
        (sc.AxisLevel((60.0, -0.5, 0.25, 1.0, 10.0), (100.0, 45.0, 5.0, 0.0, 0.0)),),
        pixel_is_area=True,
    )
    cal = sc.ChannelCalibration(0.01, -5.0, "K", "sea_surface_temperature", True, 10.0, 60000.0, nodata=(0.0,))
    science = {"axes": axes, "coordinates": sc.Coordinates((7,)), "calibration": sc.Calibration((cal,) * 3)}
    frames = [np.random.default_rng(i).integers(0, 65535, (6, 8, 3), dtype=np.uint16) for i in range(2)]
    imij_plugins.write(src, frames, kind="animation", science=science)
    with xr.open_dataarray(src, engine="imi") as da:
        to_imi(da, dst)
        with xr.open_dataarray(dst, engine="imi") as back:
            xr.testing.assert_identical(back, da)  # values, coordinates and every attribute
    with imij_plugins.open(dst) as f:
        records = f.metadata["science"]
        assert records.axes == axes and records.coordinates.values == (7,)
        assert records.calibration.channels == (cal,) * 3
        assert f.kind == "animation"
        for i, frame in enumerate(frames):
            kept = (frame >= 10) & (frame <= 60000)  # missing samples come back as the first nodata value
            np.testing.assert_array_equal(f.read(i)[kept], frame[kept])


def test_stored_values_round_trip_exactly_without_mask_and_scale(tmp_path):
    src, dst = tmp_path / "src.imi", tmp_path / "dst.imi"
    a = np.arange(-50, 50, dtype=np.int16).reshape(10, 10)
    cal = sc.ChannelCalibration(2.0, 1.0, valid_min=-10.0, nodata=(7.0,))
    imij_plugins.write(src, a, science={"calibration": sc.Calibration((cal,))})
    with xr.open_dataarray(src, engine="imi", mask_and_scale=False) as da:
        to_imi(da, dst)
    np.testing.assert_array_equal(imij_plugins.read(dst)[..., 0], a)
    with imij_plugins.open(dst) as f:
        assert f.metadata["science"].calibration.channels == (cal,)


def test_a_new_dataarray_gets_axes_calibration_and_categories(tmp_path):
    path = tmp_path / "new.imi"
    labels = np.array([[1, 2, 2], [3, 1, 2]], dtype=np.uint8)
    da = xr.DataArray(
        labels,
        dims=("lat", "lon"),
        coords={"lat": [10.0, 10.5], "lon": [3.0, 2.0, 1.0], "z": xr.Variable((), 2.5, {"units": "m"})},
        attrs={"flag_values": np.array([1, 2, 3], np.uint8), "flag_meanings": "land sea ice", "units": "1"},
        name="cover",
    )
    to_imi(da, path)
    with imij_plugins.open(path) as f:
        records = f.metadata["science"]
        assert [a.name for a in records.axes.axes] == ["lat", "lon", "z"]
        assert records.axes.levels[0] == sc.AxisLevel((0.5, -1.0, 1.0), (10.0, 3.0, 2.5))
        assert records.coordinates.values == (0,)
        assert [c.name for c in records.categories.channels[0]] == ["land", "sea", "ice"]
        assert records.calibration.channels[0].unit == "1"
    with xr.open_dataarray(path, engine="imi") as back:
        np.testing.assert_array_equal(back.values, labels)
        np.testing.assert_array_equal(back["lon"].values, [3.0, 2.0, 1.0])
        assert float(back["z"]) == 2.5 and back["z"].attrs["units"] == "m"


def test_plain_arrays_write_no_science_records(tmp_path):
    path = tmp_path / "plain.imi"
    rgb = np.zeros((4, 5, 3), np.uint8)
    to_imi(xr.DataArray(rgb, dims=("y", "x", "c")), path)
    with imij_plugins.open(path) as f:
        assert "science" not in f.metadata and f.layout == "RGB"
    pages = np.zeros((2, 4, 5), np.uint8)
    to_imi(xr.DataArray(pages, dims=("page", "y", "x")), path)
    with imij_plugins.open(path) as f:
        assert "science" not in f.metadata and f.kind == "pages" and f.n_frames == 2


def test_uneven_coordinates_are_refused(tmp_path):
    da = xr.DataArray(np.zeros((3, 2), np.uint8), dims=("y", "x"), coords={"y": [0.0, 1.0, 3.0]})
    with pytest.raises(ValueError, match="evenly spaced"):
        to_imi(da, tmp_path / "bad.imi")
    assert not (tmp_path / "bad.imi").exists()
