"""CI tests the lowest versions the package declares: the floors step of .ci/compat-venvs pins
each runtime dependency to its floor in pyproject.toml, on the lowest Python it supports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent


def _floors() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    floors = {}
    for requirement in project["dependencies"]:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", requirement.split(";")[0].strip())
        assert found, f"not a plain floor: {requirement!r}"
        floors[found[1].lower()] = found[2]
    return floors


def _floors_step() -> tuple[str, dict[str, str]]:
    """The floors step's Python and its name==version pins."""
    text = (ROOT / ".ci" / "compat-venvs").read_text(encoding="utf-8").replace("\\\n", " ")
    line = next(line for line in text.splitlines() if ".ci/pinned floors " in line)
    python = line.split(".ci/pinned floors ")[1].split()[0]
    return python, {name.lower(): version for name, version in re.findall(r"([A-Za-z0-9_.-]+)==([0-9.]+)", line)}


def _padded(version: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (3 - len(parts))


def test_the_floors_step_pins_every_declared_floor():
    python, pins = _floors_step()
    assert set(pins) == set(_floors())
    for name, floor in _floors().items():
        assert _padded(pins[name]) == _padded(floor), name


def test_the_floors_step_runs_the_lowest_python():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == ">=" + _floors_step()[0]
