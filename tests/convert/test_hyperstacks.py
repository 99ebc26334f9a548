"""OME-TIFF and ImageJ hyperstacks to IMI (aXES, cORD, cALB) and back out to OME-TIFF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tifffile

import imij_plugins
from imij_plugins.cli import main
from imij_plugins.container.metadata import science as sci
from imij_plugins.convert import ConvertOptions, convert_file
from imij_plugins.convert.stack import udunits

from .conftest import noise

OME_SIZES = {
    "PhysicalSizeX": 0.325, "PhysicalSizeXUnit": "µm", "PhysicalSizeY": 0.5, "PhysicalSizeYUnit": "µm",
    "PhysicalSizeZ": 1.5, "PhysicalSizeZUnit": "nm", "TimeIncrement": 2.5, "TimeIncrementUnit": "ms",
}


def convert(src: Path, dst: Path) -> list[Path]:
    """Convert and return the files written."""
    record = convert_file(src, dst, ConvertOptions())
    assert record.status == "converted", record.reason
    return [Path(p) for p in record.parts] or [dst]


def science(path: Path):
    with imij_plugins.open(path) as f:
        return f.metadata["science"]


def ome_pixels(path: Path) -> dict:
    with tifffile.TiffFile(path) as tif:
        assert tif.is_ome
        return tifffile.xml2dict(tif.ome_metadata)["OME"]["Image"]["Pixels"]


def test_ome_z_stack_with_two_channels(tmp_path):
    src = tmp_path / "cells.ome.tif"
    stack = noise((3, 2, 10, 12), np.uint16)  # Z, C, Y, X
    tifffile.imwrite(src, stack, metadata={"axes": "ZCYX", **OME_SIZES, "Channel": {"Name": ["DAPI", "GFP"]}})
    (imi,) = convert(src, tmp_path / "cells.imi")
    with imij_plugins.open(imi) as f:
        assert (f.kind, f.n_frames, f.channels) == ("pages", 3, 2)
        for z in range(3):
            assert np.array_equal(f.read(z), np.moveaxis(stack[z], 0, -1))
    records = science(imi)
    assert [(r.tag, r.status) for r in records.reports] == [(b"cALB", "parsed"), (b"aXES", "parsed"), (b"cORD", "parsed")]
    assert records.axes.axes == (  # OME's five dimensions; T of length 1 is a coordinate
        sci.Axis("t", sci.KIND_TIME, sci.BIND_COORDINATE, "ms"),
        sci.Axis("z", sci.KIND_SPACE, sci.BIND_FRAMES, "nm"),
        sci.Axis("c", sci.KIND_CHANNEL, sci.BIND_CHANNELS, ""),
        sci.Axis("y", sci.KIND_SPACE, sci.BIND_ROWS, "um"),
        sci.Axis("x", sci.KIND_SPACE, sci.BIND_COLUMNS, "um"),
    )
    (level,) = records.axes.levels
    assert level.scale == (2.5, 1.5, 1.0, 0.5, 0.325) and level.translation == (0, 0, 0, 0, 0)
    assert [c.quantity for c in records.calibration.channels] == ["DAPI", "GFP"]
    assert not any(c.cf_standard_name for c in records.calibration.channels)
    assert records.coordinates.values == (0,)

    back = tmp_path / "back.ome.tif"
    convert(imi, back)
    assert np.array_equal(tifffile.imread(back), stack)
    pixels = ome_pixels(back)
    assert [c["Name"] for c in pixels["Channel"]] == ["DAPI", "GFP"]
    for key in ("PhysicalSizeX", "PhysicalSizeY", "PhysicalSizeZ"):
        assert (pixels[key], pixels[key + "Unit"]) == (OME_SIZES[key], OME_SIZES[key + "Unit"])
    with tifffile.TiffFile(back) as tif:
        assert tif.series[0].axes == "ZCYX"  # tifffile leaves out T of length 1


def test_ome_time_and_z_split_into_one_file_per_time_point(tmp_path):
    src = tmp_path / "movie.ome.tif"
    stack = noise((2, 3, 1, 6, 5), np.uint8)  # T, Z, C, Y, X
    tifffile.imwrite(src, stack, metadata={"axes": "TZCYX", **OME_SIZES, "Channel": {"Name": ["phase"]}})
    parts = convert(src, tmp_path / "movie.imi")
    assert [p.name for p in parts] == ["movie_t0000.imi", "movie_t0001.imi"]
    assert not (tmp_path / "movie.imi").exists()
    for t, part in enumerate(parts):
        with imij_plugins.open(part) as f:
            assert (f.n_frames, f.channels) == (3, 1)
            assert all(np.array_equal(f.read(z)[..., 0], stack[t, z, 0]) for z in range(3))
        records = science(part)
        assert [(a.name, a.kind, a.binding, a.unit) for a in records.axes.axes] == [
            ("t", sci.KIND_TIME, sci.BIND_COORDINATE, "ms"), ("z", sci.KIND_SPACE, sci.BIND_FRAMES, "nm"),
            ("c", sci.KIND_CHANNEL, sci.BIND_CHANNELS, ""), ("y", sci.KIND_SPACE, sci.BIND_ROWS, "um"), ("x", sci.KIND_SPACE, sci.BIND_COLUMNS, "um"),
        ]
        assert records.axes.levels[0].scale == (2.5, 1.5, 1.0, 0.5, 0.325)
        assert records.coordinates.values == (t,)
        assert records.calibration.channels[0].quantity == "phase"
    back = tmp_path / "t1.ome.tif"
    convert(parts[1], back)
    assert np.array_equal(tifffile.imread(back), stack[1:2].squeeze())  # tifffile squeezes T and C of length 1
    pixels = ome_pixels(back)
    assert (pixels["TimeIncrement"], pixels["TimeIncrementUnit"]) == (2.5, "ms")
    assert pixels["SizeT"] == 1 and pixels["Channel"]["Name"] == "phase"


def test_ome_rgb_samples_stay_rgb(tmp_path):
    src = tmp_path / "rgb.ome.tif"
    stack = noise((2, 7, 9, 3))
    tifffile.imwrite(src, stack, photometric="rgb", metadata={"axes": "TYXS", "PhysicalSizeX": 4.0})
    (imi,) = convert(src, tmp_path / "rgb.imi")
    with imij_plugins.open(imi) as f:
        assert (f.layout, f.n_frames) == ("RGB", 2)
    records = science(imi)
    assert [(a.name, a.binding, a.unit) for a in records.axes.axes] == [
        ("t", sci.BIND_FRAMES, ""), ("z", sci.BIND_COORDINATE, ""), ("c", sci.BIND_COORDINATE, ""),
        ("y", sci.BIND_ROWS, ""), ("x", sci.BIND_COLUMNS, "um"), ("s", sci.BIND_CHANNELS, ""),
    ]
    assert records.axes.levels[0].scale == (1.0, 1.0, 1.0, 1.0, 4.0, 1.0) and records.coordinates.values == (0, 0)
    back = tmp_path / "back.ome.tif"
    convert(imi, back)
    assert np.array_equal(tifffile.imread(back), stack)
    assert (ome_pixels(back)["PhysicalSizeX"], ome_pixels(back)["PhysicalSizeXUnit"]) == (4.0, "µm")


def test_more_than_four_channels_become_pages(tmp_path):
    src = tmp_path / "spectral.ome.tif"
    stack = noise((6, 5, 4), np.float32)
    tifffile.imwrite(src, stack, photometric="minisblack", metadata={"axes": "CYX", "Channel": {"Name": [f"ch{i}" for i in range(6)]}})
    (imi,) = convert(src, tmp_path / "spectral.imi")
    records = science(imi)
    assert [(a.name, a.binding) for a in records.axes.axes] == [
        ("t", sci.BIND_COORDINATE), ("z", sci.BIND_COORDINATE), ("c", sci.BIND_FRAMES), ("y", sci.BIND_ROWS), ("x", sci.BIND_COLUMNS),
    ]
    assert records.calibration is None and records.axes.levels == ()
    back = tmp_path / "back.ome.tif"
    convert(imi, back)
    assert np.array_equal(tifffile.imread(back), stack)


def test_imagej_hyperstack(tmp_path):
    src = tmp_path / "ij.tif"
    stack = noise((2, 4, 3, 8, 6), np.uint16)  # T, Z, C, Y, X
    tifffile.imwrite(src, stack, imagej=True, resolution=(1 / 0.2, 1 / 0.4),
                     metadata={"axes": "TZCYX", "spacing": 0.75, "unit": "micron", "finterval": 0.5})
    parts = convert(src, tmp_path / "ij.imi")
    assert [p.name for p in parts] == ["ij_t0000.imi", "ij_t0001.imi"]
    records = science(parts[1])
    assert [(a.name, a.binding, a.unit) for a in records.axes.axes] == [
        ("t", sci.BIND_COORDINATE, "s"), ("z", sci.BIND_FRAMES, "um"), ("c", sci.BIND_CHANNELS, ""), ("y", sci.BIND_ROWS, "um"), ("x", sci.BIND_COLUMNS, "um"),
    ]
    assert records.axes.levels[0].scale == pytest.approx((0.5, 0.75, 1.0, 0.4, 0.2))
    assert records.coordinates.values == (1,) and records.calibration is None
    with imij_plugins.open(parts[1]) as f:
        assert all(np.array_equal(f.read(z), np.moveaxis(stack[1, z], 0, -1)) for z in range(4))
    back = tmp_path / "back.ome.tif"
    convert(parts[1], back)
    assert np.array_equal(tifffile.imread(back), stack[1:2].squeeze())  # tifffile squeezes T and C of length 1
    pixels = ome_pixels(back)
    assert (pixels["PhysicalSizeZ"], pixels["PhysicalSizeZUnit"]) == (0.75, "µm")
    assert (pixels["TimeIncrement"], pixels["TimeIncrementUnit"]) == (0.5, "s")
    assert pixels["PhysicalSizeX"] == pytest.approx(0.2) and pixels["PhysicalSizeY"] == pytest.approx(0.4)


def test_plain_images_to_ome_tiff_from_the_command_line(mixed, tmp_path):
    assert main(["convert", str(mixed / "rgb.png"), str(mixed / "sub" / "anim.gif"), "-o", str(tmp_path), "--to", "ome.tiff", "-q"]) == 0
    with tifffile.TiffFile(tmp_path / "rgb.ome.tif") as tif:
        assert tif.is_ome and tif.series[0].axes == "YXS"
    with tifffile.TiffFile(tmp_path / "anim.ome.tif") as tif:
        assert tif.is_ome and tif.series[0].axes == "TYXS" and tif.series[0].shape == (3, 12, 10, 3)
    assert main(["convert", str(tmp_path / "rgb.ome.tif"), "-o", str(tmp_path / "out"), "-q"]) == 0
    assert (tmp_path / "out" / "rgb.imi").exists()  # the whole ".ome.tif" extension is replaced


@pytest.mark.parametrize("written, udunit", [("µm", "um"), ("\u03bcm", "um"), ("micron", "um"), ("\\u00B5m", "um"), ("nm", "nm"), ("ms", "ms"), ("s", "s")])
def test_unit_names_become_udunits(written, udunit):
    assert udunits(written) == udunit
