"""Smoke run of benchmarks/effort_speed.py on a two-image corpus: every variant reads back, the
bounded file is never larger than the default effort's, the report has a row per class and
image; no timing is asserted."""

from __future__ import annotations

import json

import numpy as np
from bench_scripts import load_script

import imij_plugins


def _corpus(tmp_path):
    rng = np.random.default_rng(2)
    images = {"noise": ("photo", rng.integers(0, 256, (24, 40, 3), dtype=np.uint8)),
              "flat": ("graphics", np.tile(np.array([[0, 0, 0], [255, 255, 255]], np.uint8)[rng.integers(0, 2, (32, 48))], 1))}
    items = []
    for name, (cls, image) in images.items():
        np.save(tmp_path / f"{name}.npy", image)
        items.append({"name": name, "class": cls, "file": f"{name}.npy"})
    (tmp_path / "manifest.json").write_text(json.dumps({"images": items}))
    return images


def test_rows_read_back_and_report(tmp_path, capsys):
    bench = load_script("effort_speed")
    images = _corpus(tmp_path)
    out = tmp_path / "rows.json"
    assert bench.main(["--corpus", str(tmp_path), "--effort", "9", "--rounds", "1", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["image"] for r in rows] == ["noise", "flat"]
    for r in rows:
        assert r["bytes"]["bounded"] <= r["bytes"]["default"]
        assert set(r["seconds_1"]) == set(r["seconds_all"]) == set(bench.VARIANTS)
    for _, image in images.values():
        for data, _ in bench.encodings(image, 9).values():
            assert np.array_equal(imij_plugins.read(data).reshape(image.shape), image)
    text = capsys.readouterr().out
    assert "| photo | 1 |" in text and "| graphics | 1 |" in text
    assert "| noise | photo |" in text and "| flat | graphics |" in text
