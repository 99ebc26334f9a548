"""The npe2 plugin, headless (no napari, no Qt): discovery, reader keywords, IMIJ-Set layers, the writer.

No ``__init__.py`` here: a ``tests/napari`` package would be imported as ``napari``.
"""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

import imij_plugins
from imij_plugins import imijset
from imij_plugins.container.metadata import science as sc

npe2 = require("npe2")
da = require("dask.array")


@pytest.fixture(scope="module")
def plugins():
    """npe2's plugin manager after discovering installed plugins through their entry points."""
    pm = npe2.PluginManager.instance()
    pm.discover()
    return pm


def read_one(path) -> tuple[object, dict, str]:
    """The single layer npe2 reads from ``path``."""
    (layer,) = npe2.read([str(path)], stack=False)
    return layer


def test_the_manifest_is_discovered_through_the_entry_point(plugins):
    manifest = plugins.get_manifest("imij-plugins")
    (reader,) = manifest.contributions.readers
    (writer,) = manifest.contributions.writers
    assert reader.filename_patterns == ["*.imi", "*.imijset"]
    assert writer.layer_types == ["image"] and writer.filename_extensions == [".imi"]
    assert any(r.plugin_name == "imij-plugins" for r in plugins.iter_compatible_readers(["x.imi"]))
    assert not any(r.plugin_name == "imij-plugins" for r in plugins.iter_compatible_readers(["x.png"]))


def test_gray_image(plugins, tmp_path):
    path = tmp_path / "gray.imi"
    a = np.arange(30, dtype=np.uint16).reshape(5, 6)
    imij_plugins.write(path, a)
    data, kwargs, kind = read_one(path)
    assert kind == "image" and isinstance(data, np.ndarray)
    np.testing.assert_array_equal(data, a)
    assert kwargs["name"] == "gray" and kwargs["scale"] == [1.0, 1.0] and kwargs["translate"] == [0.0, 0.0]
    assert kwargs["axis_labels"] == ["y", "x"] and "rgb" not in kwargs and "channel_axis" not in kwargs


@pytest.mark.parametrize("layout", ["RGB", "RGBA"])
def test_rgb_images(plugins, tmp_path, layout):
    path = tmp_path / "rgb.imi"
    a = np.random.default_rng(0).integers(0, 255, (4, 7, len(layout)), dtype=np.uint8)
    imij_plugins.write(path, a)
    data, kwargs, _ = read_one(path)
    np.testing.assert_array_equal(data, a)
    assert kwargs["rgb"] is True and "channel_axis" not in kwargs and len(kwargs["scale"]) == 2


def test_other_channels_are_a_channel_axis_named_by_quantity(plugins, tmp_path):
    path = tmp_path / "bands.imi"
    a = np.random.default_rng(1).integers(0, 4000, (6, 5, 4), dtype=np.uint16)
    cal = sc.Calibration(tuple(sc.ChannelCalibration(quantity=q, valid_min=10.0, valid_max=3000.0 + i)
                               for i, q in enumerate(["cyan", "magenta", "yellow", "key"])))
    imij_plugins.write(path, a, layout="CMYK", science={"calibration": cal})
    data, kwargs, _ = read_one(path)
    np.testing.assert_array_equal(data, a)
    assert kwargs["channel_axis"] == 2 and kwargs["name"] == ["cyan", "magenta", "yellow", "key"]
    assert kwargs["contrast_limits"] == [[10.0, 3000.0], [10.0, 3001.0], [10.0, 3002.0], [10.0, 3003.0]]


def test_axes_give_scale_translate_units_and_labels(plugins, tmp_path):
    path = tmp_path / "stack.imi"
    axes = sc.Axes(
        (sc.Axis("z", 0, sc.BIND_FRAMES, "micrometer"), sc.Axis("y", 0, sc.BIND_ROWS, "micrometer"),
         sc.Axis("x", 0, sc.BIND_COLUMNS, "micrometer")),
        (sc.AxisLevel((2.0, 0.5, 0.25), (10.0, 1.0, -3.0)),),
    )
    cal = sc.Calibration((sc.ChannelCalibration(quantity="intensity", valid_min=0.0, valid_max=1000.0),))
    pages = [np.full((8, 9), i, np.uint16) for i in range(3)]
    imij_plugins.write(path, pages, kind="pages", science={"axes": axes, "calibration": cal})
    data, kwargs, _ = read_one(path)
    assert isinstance(data, da.Array) and data.shape == (3, 8, 9)  # a stack is lazy
    np.testing.assert_array_equal(data.compute(), np.stack(pages))
    assert kwargs["scale"] == [2.0, 0.5, 0.25] and kwargs["translate"] == [10.0, 1.0, -3.0]
    assert kwargs["axis_labels"] == ["z", "y", "x"] and kwargs["units"] == ["micrometer"] * 3
    assert kwargs["name"] == "intensity" and kwargs["contrast_limits"] == [0.0, 1000.0]


def test_large_images_are_lazy(plugins, tmp_path, monkeypatch):
    from imij_plugins.napari import reader

    monkeypatch.setattr(reader, "LAZY_BYTES", 100)
    path = tmp_path / "large.imi"
    a = np.random.default_rng(2).integers(0, 255, (40, 30), dtype=np.uint8)
    imij_plugins.write(path, a, stripe_rows=16)
    data, _, _ = read_one(path)
    assert isinstance(data, da.Array) and data.chunks == ((16, 16, 8), (30,))
    np.testing.assert_array_equal(data.compute(), a)


def test_an_archive_of_equal_entries_is_one_stacked_layer(plugins, tmp_path):
    path = tmp_path / "same.imijset"
    images = [np.full((6, 7, 3), i, np.uint8) for i in range(4)]
    with imijset.open(path, "w") as archive:
        for key, image in enumerate(images):
            archive.append(key, image)
    data, kwargs, kind = read_one(path)
    assert kind == "image" and data.shape == (4, 6, 7, 3) and kwargs["rgb"] is True
    np.testing.assert_array_equal(np.asarray(data), np.stack(images))
    assert kwargs["axis_labels"] == ["entry", "y", "x"] and kwargs["name"] == "same"


def test_an_archive_of_different_entries_is_one_layer_each(plugins, tmp_path):
    path = tmp_path / "mixed.imijset"
    images = [np.zeros((6, 7), np.uint8), np.ones((3, 4), np.uint16)]
    with imijset.open(path, "w") as archive:
        archive.append(0, images[0], filename="a.png")
        archive.append(1, images[1])
    layers = npe2.read([str(path)], stack=False)
    assert [kwargs["name"] for _, kwargs, _ in layers] == ["a.png", "mixed key 1"]
    for (data, _, _), image in zip(layers, images):
        np.testing.assert_array_equal(np.asarray(data), image)


@pytest.mark.parametrize("rgb", [False, True])
def test_the_writer_round_trips_data_and_scale(plugins, tmp_path, rgb):
    path = tmp_path / "out.imi"
    shape = (3, 10, 12, 3) if rgb else (3, 10, 12)
    data = np.random.default_rng(3).integers(0, 255, shape, dtype=np.uint8)
    meta = {"scale": [5.0, 0.5, 0.5], "translate": [0.0, 2.0, 4.0], "axis_labels": ["t", "y", "x"],
            "units": ["second", "micrometer", "micrometer"], "rgb": rgb, "name": "cells"}
    assert npe2.write(str(path), [(data, meta, "image")]) == [str(path)]
    with imij_plugins.open(path) as f:
        assert f.kind == "animation" and f.n_frames == 3  # a time axis is an animation
    back, kwargs, _ = read_one(path)
    np.testing.assert_array_equal(np.asarray(back), data)
    assert kwargs["scale"] == meta["scale"] and kwargs["translate"] == meta["translate"]
    assert kwargs["axis_labels"] == ["t", "y", "x"] and kwargs["units"] == meta["units"]
    assert kwargs.get("rgb", False) is rgb


def test_the_writer_keeps_the_calibration_the_reader_gave(plugins, tmp_path):
    src, dst = tmp_path / "src.imi", tmp_path / "dst.imi"
    cal = sc.Calibration((sc.ChannelCalibration(0.5, 1.0, "K", "air_temperature", True, 0.0, 200.0, nodata=(255.0,)),))
    imij_plugins.write(src, np.arange(20, dtype=np.uint8).reshape(4, 5), science={"calibration": cal})
    data, kwargs, _ = read_one(src)
    npe2.write(str(dst), [(data, kwargs, "image")])
    with imij_plugins.open(dst) as f:
        assert f.metadata["science"].calibration == cal
    default = tmp_path / "plain.imi"
    npe2.write(str(default), [(np.zeros((4, 5), np.uint8), {"axis_labels": ["axis -2", "axis -1"]}, "image")])
    with imij_plugins.open(default) as f:
        assert "science" not in f.metadata  # napari's default labels and scale need no aXES


def test_mixed_pages_are_one_layer_each(plugins, tmp_path):
    path = tmp_path / "doc.imi"
    pages = [np.zeros((6, 7), np.uint8), np.full((3, 4, 3), 9, np.uint16)]
    imij_plugins.write(path, pages, kind="pages")
    layers = npe2.read([str(path)], stack=False)
    assert [kwargs["name"] for _, kwargs, _ in layers] == ["doc page 0", "doc page 1"]
    assert layers[1][1]["rgb"] is True
    for (data, _, _), page in zip(layers, pages):
        np.testing.assert_array_equal(np.asarray(data), page)


def test_stacked_files_of_one_shape_are_one_lazy_layer(plugins, tmp_path):
    images = [np.random.default_rng(i).integers(0, 4000, (6, 7), dtype=np.uint16) for i in range(3)]
    paths = [str(tmp_path / f"t{i}.imi") for i in range(3)]
    for path, image in zip(paths, images):
        imij_plugins.write(path, image, stripe_rows=4)
    (layer,) = npe2.read(paths, stack=True)  # napari's builtin reader gives one layer too
    data, kwargs, kind = layer
    assert kind == "image" and isinstance(data, da.Array) and data.shape == (3, 6, 7) and data.dtype == np.uint16
    assert data.chunks == ((1, 1, 1), (4, 2), (7,))  # a file, then its stripes
    np.testing.assert_array_equal(data.compute(), np.stack(images))
    assert kwargs["name"] == "t0" and kwargs["axis_labels"] == ["file", "y", "x"] and len(kwargs["scale"]) == 3
    rgb = [str(tmp_path / f"c{i}.imi") for i in range(2)]
    for i, path in enumerate(rgb):
        imij_plugins.write(path, np.full((4, 5, 3), i, np.uint8))
    (layer,) = npe2.read(rgb, stack=True)
    assert layer[0].shape == (2, 4, 5, 3) and layer[1]["rgb"] is True


def test_stacking_files_that_differ_gives_a_layer_each(plugins, tmp_path):
    paths = [str(tmp_path / name) for name in ("a.imi", "b.imi", "c.imi")]
    imij_plugins.write(paths[0], np.zeros((6, 7), np.uint8))
    imij_plugins.write(paths[1], np.zeros((6, 7), np.uint16))  # another dtype
    imij_plugins.write(paths[2], [np.zeros((6, 7), np.uint8)] * 2, kind="pages")  # two pages
    layers = npe2.read(paths, stack=True)
    assert [kwargs["name"] for _, kwargs, _ in layers] == ["a", "b", "c"]
    assert npe2.read(paths[::2], stack=True)[1][0].shape == (2, 6, 7)  # one page against two: not stacked


def test_napari_placeholder_axis_labels_are_not_dim_names(plugins, tmp_path):
    path = tmp_path / "plain.imi"
    npe2.write(str(path), [(np.zeros((3, 4, 5), np.uint8), {"axis_labels": ("-3", "-2", "-1")}, "image")])
    with imij_plugins.open(path) as f:
        assert "science" not in f.metadata  # no aXES: the names would be the placeholders
    _, kwargs, _ = read_one(path)
    assert kwargs["axis_labels"] == ["frame", "y", "x"]
