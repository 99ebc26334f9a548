"""Smoke run of benchmarks/convert.py on three tiny images (no timing is asserted)."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "convert.py"


def test_convert_benchmark_measures_and_writes_its_section(tmp_path):
    bench = runpy.run_path(str(BENCH))  # the script's functions, by name
    rng = np.random.default_rng(7)
    arrays = {
        "rgb": rng.integers(0, 256, (12, 10, 3), dtype=np.uint8),
        "gray16": rng.integers(0, 65536, (9, 8), dtype=np.uint16),
        "rgba": rng.integers(0, 256, (6, 5, 4), dtype=np.uint8),
    }
    record = bench["measure"](arrays, tmp_path / "work", jobs=(1, 2))
    assert record["files"] == 3 and record["eight_bit_files"] == 2
    assert [r["jobs"] for r in record["runs"]] == [1, 2]
    assert sorted(p.name for p in (tmp_path / "work" / "imi-j2").iterdir()) == ["gray16.imi", "rgb.imi", "rgba.imi"]
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n## Other\n\nkept\n")
    bench["write_section"](results, bench["section"](record))
    bench["write_section"](results, bench["section"](record))
    text = results.read_text()
    assert text.count(bench["SECTION"]) == 1 and "## Other\n\nkept\n\n" in text and "IMI / WebP = " in text
    assert text.index("## Other") < text.index(bench["SECTION"])
