"""Smoke runs of benchmarks/call_floor.py, benchmarks/cores.py and benchmarks/unit_steps.py: every
call each measures runs and gives what it names; no timing or count is asserted."""

from __future__ import annotations

import io

import numpy as np
from bench_scripts import load_script
from PIL import Image

import imij_plugins


def test_call_floor_calls_encode_and_read_what_they_name():
    floor = load_script("call_floor")
    fns = floor.calls()
    assert set(fns) == {"imi encode 1x1", "imi encode 16x16", "imi encode 16x16 quick", "png encode 16x16",
                        "imi read 1x1", "imi read 16x16", "png read 16x16"}
    icon = floor.icon()
    assert icon.shape == (16, 16, 4)
    assert np.array_equal(imij_plugins.read(fns["imi encode 16x16"]()), icon)
    assert np.array_equal(imij_plugins.read(fns["imi encode 16x16 quick"]()), icon)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(fns["png encode 16x16"]()))), icon)
    assert np.array_equal(fns["imi read 16x16"](), icon) and np.array_equal(fns["png read 16x16"](), icon)
    assert fns["imi read 1x1"]().shape == (1, 1, 4)
    assert floor.main(["--child", "1"]) == {}  # the loop callgrind runs


def test_cores_measures_every_workload(capsys):
    cores = load_script("cores")
    out = cores.main(["--image", "no-such-image", "--calls", "1", "--rounds", "1"])
    assert set(out) == {"zlib level 6", "imi read, threads=1", "imi encode, threads=1",
                        "imi read, threads=2 vs 1", "imi encode, threads=2 vs 1"}
    assert all(x > 0 for x in out.values())
    assert "| zlib level 6 |" in capsys.readouterr().out


def test_unit_steps_reads_one_unit_images(capsys):
    steps = load_script("unit_steps")
    for kind in ("noise", "smooth"):
        image = steps.image(kind, 8, 20)
        assert image.shape == (8, 20, 3) and len(np.unique(image.reshape(-1, 3), axis=0)) > 1
    rows = steps.main(["--rows", "8", "--widths", "16,40", "--reads", "1"])
    assert [(r["content"], r["width"]) for r in rows] == [("noise", 16), ("noise", 40), ("smooth", 16), ("smooth", 40)]
    assert all(r["us"] > 0 and r["ns_per_step"] > 0 for r in rows)
    assert "| noise | 40 | 2 | 20 |" in capsys.readouterr().out
