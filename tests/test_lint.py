"""The whole tree passes ``ruff check`` with the configuration in pyproject.toml ([tool.ruff])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from extras import require

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    """``python -m ruff check .`` from the repository root: every finding fails CI, listed."""
    require("ruff")
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
