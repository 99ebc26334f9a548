"""CI's fuzz smoke: fuzz/run.sh runs every libFuzzer harness for a 60-second budget in all
(plus the build), failing on any finding. Needs clang with the sanitizer runtime: skipped without
it, except under IMIJ_REQUIRE_EXTRAS=1 (CI), where a missing clang fails. Marked ``slow``: CI
runs it, ``pytest -m "not slow"`` skips it for a quick local run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
HARNESSES = 4
BUDGET = 60  # seconds of fuzzing, all harnesses together


@pytest.mark.slow  # about 2 minutes with the sanitizer build; `pytest -m "not slow"` leaves it out
def test_every_harness_runs_without_a_finding(tmp_path: Path) -> None:
    if shutil.which("clang") is None:
        if os.environ.get("IMIJ_REQUIRE_EXTRAS") == "1":
            pytest.fail("clang is missing (.ci/run installs it)")
        pytest.skip("clang is missing")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the harnesses link their own runtime
    env.update(PYTHON=sys.executable, FUZZ_OUT=str(tmp_path))
    run = subprocess.run([str(ROOT / "fuzz" / "run.sh"), str(BUDGET // HARNESSES)], env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.count(": ok (") == HARNESSES, run.stdout
