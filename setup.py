"""setuptools needs this file for ``cffi_modules``; pyproject.toml holds everything else.

The wheel is tagged ``cp310-abi3`` (one wheel for CPython 3.10 and later), matching
``py_limited_api`` in ``_build.py``; free-threaded builds have no limited API and get a
version-specific tag.
"""

import sysconfig

from setuptools import setup

_ABI3 = {"bdist_wheel": {"py_limited_api": "cp310"}}

setup(
    cffi_modules=["imij_plugins/_build.py:ffibuilder"],
    options={} if sysconfig.get_config_var("Py_GIL_DISABLED") else _ABI3,
)
