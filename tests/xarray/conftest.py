"""``from conftest import require`` for the xarray tests: pytest imports each test directory's conftest.py as
``conftest``, so this one hands on the suite's ``require`` (tests/conftest.py), loaded by its path."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("_suite_conftest", pathlib.Path(__file__).parents[1] / "conftest.py")
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)
require = _suite.require
