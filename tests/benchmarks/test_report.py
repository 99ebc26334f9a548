"""benchmarks/report.py's target table: the graphics targets are also given per size band (the
band the targets were set on, 0.02-0.3 megapixels, and the icons below it)."""

from __future__ import annotations

from bench_scripts import load_script


def _run(images: list[tuple[str, int, float]]) -> dict:
    """A run's data: graphics images (name, side, imi/png decode speed ratio), imi e5 and png."""
    rows = []
    for name, _, ratio in images:
        rows.append({"image": name, "codec": "imi entropy e5 t2", "bpp": 1.0, "dec_mbps": ratio, "enc_mbps": 1.0})
        rows.append({"image": name, "codec": "png", "bpp": 2.0, "dec_mbps": 1.0, "enc_mbps": 1.0})
    return {
        "rows": rows,
        "corpus": {"images": [{"name": n, "class": "graphics", "shape": [s, s, 4]} for n, s, _ in images]},
        "codecs": [{"variant": "imi entropy e5", "family": "imi", "imi_codec": "entropy", "effort": 5},
                   {"variant": "png", "family": "png"}],
        "imij": {"threads": [1, 2], "default_codec": "entropy", "default_effort": 5},
    }


def test_graphics_targets_per_size_band():
    report = load_script("report")
    data = _run([("icon16", 16, 0.5), ("icon256", 256, 3.0), ("logo400", 400, 3.0), ("big", 1000, 8.0)])
    lines = report._current_targets(report.Results(data, ["graphics"]))
    text = "\n".join(lines)
    assert "| graphics decode >= 2.5x PNG | 2.45x (n=4) | missed |" in text
    assert "| graphics decode >= 2.5x PNG, 0.02-0.3 MP | 3.00x (n=2) | met |" in text
    assert "| graphics decode >= 2.5x PNG, below 0.02 MP | 0.50x (n=1) | missed |" in text
