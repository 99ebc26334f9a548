"""``require``: import an optional extra's module for a test, or skip; under CI it fails instead.

A module of its own (not conftest.py): pytest imports each test folder's conftest.py under the one
name ``conftest``, so ``from conftest import ...`` would find whichever was imported last."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str) -> ModuleType:
    """``module`` imported, or the test skipped; CI (IMIJ_REQUIRE_EXTRAS=1) fails instead of skipping."""
    if os.environ.get("IMIJ_REQUIRE_EXTRAS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)
