"""The physical description (1.5): cALB applied, CF attributes both ways, aXES read into dims and written back."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins import physical
from imij_plugins.container.metadata import science as sc


def test_physical_values_follow_the_missing_rule():
    entry = sc.ChannelCalibration(2.0, -1.0, valid_min=-5.0, valid_max=5.0, nan_missing=True, nodata=(0.0,))
    stored = np.array([-6.0, -5.0, -0.0, 0.0, 1.0, 5.0, 6.0, np.nan], dtype=np.float32)
    expect = [np.nan, -11.0, np.nan, np.nan, 1.0, 9.0, np.nan, np.nan]  # 0 matches -0 (binary64 equality)
    np.testing.assert_array_equal(physical.physical_values(stored, entry), expect)
    assert not physical.changes_values(sc.ChannelCalibration(unit="K"))
    assert physical.changes_values(sc.ChannelCalibration(nodata=(3.0,)))


@pytest.mark.parametrize(
    "entry",
    [
        sc.ChannelCalibration(0.5, 2.0, "K", "air_temperature", True, -1.0, 100.0, True, 3, (7.0, 9.0)),
        sc.ChannelCalibration(unit="HU", quantity="Rescale type"),
        sc.ChannelCalibration(1.0, 0.0),
    ],
)
def test_cf_attributes_map_back_to_the_same_entry(entry):
    assert physical.calibration(physical.cf_attrs(entry, (), np.dtype("i2"))) == entry


def test_categories_map_back_through_flags():
    cats = (sc.Category(-2, (1, 2, 3, 4), "a"), sc.Category(5, None, "b"))
    attrs = physical.cf_attrs(None, cats, np.dtype("i1"))
    assert physical.categories(attrs) == cats
    assert physical.calibration(attrs) is None


def test_describe_without_records_uses_default_dims(tmp_path):
    path = tmp_path / "anim.imi"
    imij_plugins.write(path, [np.zeros((4, 5, 3), np.uint8)] * 2, kind="animation")
    with imij_plugins.open(path) as f:
        p = physical.describe(f)
        assert [(d.name, d.binding, d.size, d.kind) for d in p.dims] == [
            ("frame", "frames", 2, "time"), ("y", "rows", 4, "space"), ("x", "columns", 5, "space"), ("c", "channels", 3, "channel")]
        assert [c.name for c in p.channels] == ["R", "G", "B"] and not p.has_axes
        assert [d.name for d in physical.describe(f, 1).dims] == ["y", "x", "c"]
    assert physical.science(p) == {}


def test_single_frames_and_channels_keep_their_dims_through_axes(tmp_path):
    path = tmp_path / "one.imi"
    p = physical.default((1, 3, 4, 1), frames=True, channels=True)
    physical.write(str(path), np.ones((1, 3, 4, 1), np.uint8), p)
    with imij_plugins.open(path) as f:
        assert [d.name for d in physical.describe(f).dims] == ["page", "y", "x", "c"]


def test_coordinates_take_a_non_integer_position_as_translation():
    c = physical.coordinate("z", 2.5, {"units": "m"})
    assert (c.index, c.translation, c.value, c.unit) == (0, 2.5, 2.5, "m")
    c = physical.coordinate("z", 30.0, {"scale": 10.0, "translation": 0.0})
    assert (c.index, c.value) == (3, 30.0)


def test_one_frame_of_a_frames_axis_is_a_coordinate_and_other_pages_ignore_channel_records(tmp_path):
    path = tmp_path / "pages.imi"
    axes = sc.Axes((sc.Axis("t", 1, sc.BIND_FRAMES, "s"), sc.Axis("y", 0, sc.BIND_ROWS), sc.Axis("x", 0, sc.BIND_COLUMNS)),
                   (sc.AxisLevel((30.0, 1.0, 1.0), (5.0, 0.0, 0.0)),))
    cal = sc.Calibration((sc.ChannelCalibration(quantity="dose"),))
    pages = [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.uint8)]
    imij_plugins.write(path, pages, kind="pages", science={"axes": axes, "calibration": cal})
    with imij_plugins.open(path) as f:
        first, second = physical.describe(f, 0), physical.describe(f, 1)
    assert [(c.name, c.value, c.unit) for c in second.coordinates] == [("t", 35.0, "s")]
    assert first.channels[0].name == "dose" and [c.name for c in second.channels] == ["R", "G", "B"]


def test_axes_without_a_level_stay_without_one(tmp_path):
    path = tmp_path / "unscaled.imi"
    axes = sc.Axes((sc.Axis("z", 0, sc.BIND_FRAMES, "um"), sc.Axis("y", 0, sc.BIND_ROWS), sc.Axis("x", 0, sc.BIND_COLUMNS)))
    imij_plugins.write(path, [np.zeros((3, 4), np.uint8)] * 2, kind="pages", science={"axes": axes})
    with imij_plugins.open(path) as f:
        p = physical.describe(f)
    assert not p.scaled and [d.scale for d in p.dims] == [1.0, 1.0, 1.0]
    assert physical.science(p)["axes"] == axes  # 1.5: no level, so no scale is claimed on writing back
