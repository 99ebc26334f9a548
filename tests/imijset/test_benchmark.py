"""A smoke test of benchmarks/imijset_vs_sqlite.py at a small N (the full run is not part of CI)."""

from __future__ import annotations

from pathlib import Path

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
