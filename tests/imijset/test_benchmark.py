"""Smoke tests of the IMIJ-Set benchmark scripts at a small N (full runs are not part of CI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_scripts import load_script


def test_benchmark_script_runs(tmp_path: Path) -> None:
    bench = load_script("imijset_vs_sqlite")
    result = bench.run(n=3000, size=200, batch=1000, lookups=500, directory=str(tmp_path), cache_bytes=1 << 20, rounds=2)
    for side in ("imijset", "sqlite"):
        assert result[side]["appends_per_s"] > 0 and result[side]["lookup_us"] > 0
    assert result["imijset"]["checked_appends_per_s"] > 0
    assert all(len(rates) == 2 for rates in result["append_rates"].values())
    assert result["imijset"]["segments"] == 3
    assert "| appends/s, durable=True |" in bench.report(result)


def test_scale_script_runs(tmp_path: Path) -> None:
    pytest.importorskip("lmdb")
    bench = load_script("imijset_scale")
    rows = bench.run(n=2000, commits=20, size=64, count=300, directory=str(tmp_path), rounds=2)
    assert [(r["store"], r["interleaved"]) for r in rows] == [(s, i) for i in (False, True) for s in bench.STORES]
    for r in rows:
        assert r["appends_per_s"] > 0 and r["lookup_us"] > 0 and r["file_bytes"] > 2000 * 64
        assert len(r["append_rates"]) == 2
    assert "| interleaved | LMDB |" in bench.report(rows, 2000, 20, 64, 300)
