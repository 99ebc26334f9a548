"""Gives the dask tests ``from conftest import require``: each test folder's conftest.py is imported as
``conftest``, so the suite's (tests/conftest.py) is loaded here by its path and its ``require`` handed on."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("_imij_suite_conftest", pathlib.Path(__file__).parents[1] / "conftest.py")
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)
require = _suite.require
