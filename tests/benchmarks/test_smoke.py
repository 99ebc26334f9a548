"""Smoke run of benchmarks/run.py: three tiny generated images, two codecs; no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from bench_scripts import BENCH, load_script


def _corpus_module():
    return load_script("corpus")


def _tiny_corpus(folder: Path) -> None:
    corpus = _corpus_module()
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:24, 0:32]
    rgb = (np.stack([x * 8, y * 10, (x + y) * 4], axis=2) + rng.integers(0, 8, (24, 32, 3))) % 256
    entries = [
        corpus.Entry("tiny-rgb", "photo", "generated", "none", "gradient plus noise", rgb.astype(np.uint8)),
        corpus.Entry("tiny-u16", "16-bit", "generated", "none", "ramp", (x * 2000 + y * 37).astype(np.uint16)),
        corpus.Entry("tiny-bilevel", "bilevel", "generated", "none", "checkerboard",
                     np.where((x // 4 + y // 4) % 2, 255, 0).astype(np.uint8)),
    ]
    corpus.write_corpus(folder, entries)


def _run(tmp_path: Path, results: Path) -> dict:
    out = tmp_path / "results.json"
    cmd = [
        sys.executable, str(BENCH / "run.py"), "--corpus", str(tmp_path / "corpus"), "--corpus-no-build",
        "--results", str(results), "--json", str(out), "--codecs", "imi,png", "--efforts", "default",
        "--repeats", "1", "--min-repeats", "1", "--min-time", "0", "--quiet",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_smoke_run_writes_its_section_and_keeps_the_others(tmp_path: Path) -> None:
    _tiny_corpus(tmp_path / "corpus")
    results = tmp_path / "RESULTS.md"
    other = "## IMIJ-Set vs SQLite\n\nNumbers that must stay as they are.\n"
    results.write_text("# Benchmark results\n\n" + other)

    data = _run(tmp_path, results)
    measured = [r for r in data["rows"] if "bpp" in r]
    assert {r["family"] for r in measured} == {"imi", "png"}
    assert {r["image"] for r in measured} == {"tiny-rgb", "tiny-u16", "tiny-bilevel"}
    assert all(r["lossless"] for r in measured), [r for r in measured if not r["lossless"]]
    assert not [r for r in data["rows"] if "error" in r]
    assert {r["threads"] for r in measured if r["family"] == "imi"} >= {1}
    assert data["imij"]["default_codec"] in data["imij"]["codecs"]

    text = results.read_text()
    assert other in text
    assert text.count("## Codec comparison") == 1
    assert "### Targets of the first performance round" in text and "#### photo" in text
    assert "### Targets\n" in text

    _run(tmp_path, results)  # a second run replaces the section instead of adding one
    again = results.read_text()
    assert other in again and again.count("## Codec comparison") == 1
