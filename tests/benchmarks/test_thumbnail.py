"""Smoke run of benchmarks/thumbnail.py on a small image: the thumbnail comes from a preview
(no timing is asserted), and the RESULTS section is written beside the others."""

from __future__ import annotations

from bench_scripts import load_script


def _module():
    return load_script("thumbnail")


def test_thumbnail_is_served_from_a_preview_and_the_section_is_written(tmp_path):
    bench = _module()
    record = bench.measure(tmp_path, 1200, 800, rounds=1, size=(48, 48))
    assert record["preview_used"] == [172, 115]  # the 1/7 preview covers draft's 96 x 96
    assert record["bytes_with_previews"] > record["bytes_without_previews"]
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n## Other\n\nkept\n")
    bench.write_section(results, bench.section(record))
    bench.write_section(results, bench.section(record))  # replaced, not appended twice
    text = results.read_text()
    assert text.count(bench.SECTION) == 1 and "## Other\n\nkept" in text
