"""Smoke run of benchmarks/zarr_codecs.py on two tiny generated images; no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from extras import require
from test_smoke import BENCH, _corpus_module

require("zarr")  # the script imports zarr; the test extra installs it


def test_zarr_codecs_benchmark_runs_and_checks_every_read(tmp_path: Path) -> None:
    corpus = _corpus_module()
    y, x = np.mgrid[0:300, 0:270]
    corpus.write_corpus(tmp_path / "corpus", [
        corpus.Entry("tiny-u16", "16-bit", "generated", "none", "ramp", (x * 200 + y * 37).astype(np.uint16)),
        corpus.Entry("tiny-f32", "float", "generated", "none", "ramp", (x / 7 - y / 3).astype(np.float32)),
    ])
    cmd = [sys.executable, str(BENCH / "zarr_codecs.py"), "--corpus", str(tmp_path / "corpus"), "--repeats", "1",
           "--min-repeats", "1", "--min-time", "0", "--json", str(tmp_path / "z.json"),
           "--markdown", str(tmp_path / "z.md"), "--codecs", "IMI (imij.imi),zarr default (zstd)"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "z.json").read_text())["rows"]
    assert {(r["image"], r["codec"]) for r in rows} == {
        (i, c) for i in ("tiny-u16", "tiny-f32") for c in ("IMI (imij.imi)", "zarr default (zstd)")}
    assert all(r["exact"] and r["bytes"] > 0 for r in rows)
    text = (tmp_path / "z.md").read_text()
    assert text.startswith("## zarr codecs") and "**16-bit**" in text and "**float**" in text
