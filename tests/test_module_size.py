"""No module of the package is over 800 lines (issue: one job per module): a longer one holds
several jobs and is split along them, as costs.py and the science records were."""

from __future__ import annotations

from pathlib import Path

import imij_plugins

PACKAGE = Path(imij_plugins.__file__).parent
MAX_LINES = 800


def test_no_module_is_over_800_lines() -> None:
    sizes = {path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in PACKAGE.rglob("*.py")}
    assert len(sizes) > 50  # the walk sees the package
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
