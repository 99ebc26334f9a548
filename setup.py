"""setuptools needs this file for ``cffi_modules``; pyproject.toml holds everything else.

The wheel is tagged ``cp310-abi3`` (one wheel for CPython 3.10 and later), matching
``py_limited_api`` in ``_build.py``; free-threaded builds have no limited API and get a
version-specific tag.

``build_ext`` links without the build host's RUNPATH (a wheel must not point at the machine that
built it) and, with ``IMIJ_REQUIRE_C=1``, fails unless the built kernels load in a fresh
interpreter: a module that compiles but cannot load (e.g. a relocation the loader rejects) must
not ship as a wheel that silently runs the slow pure-Python backend.
"""

import os
import platform
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import ExecError

_ABI3 = {"bdist_wheel": {"py_limited_api": "cp310"}}

# Imports the extension module at argv[2] as argv[1], alone: no package, no fallback.
_LOAD = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location(sys.argv[1], sys.argv[2])\n"
    "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
)


def _without_rpath(command: list[str]) -> list[str]:
    """A link command without ``-Wl,-rpath,...`` (Python builds such as pyenv's add their own)."""
    return [arg for arg in command if not arg.startswith(("-Wl,-rpath", "-Wl,-R", "-Wl,--enable-new-dtags"))]


def _cross_compiling() -> bool:
    """Whether the modules are built for another machine (cibuildwheel's macOS arm64 on x86-64)."""
    host = os.environ.get("_PYTHON_HOST_PLATFORM")
    return host is not None and not host.endswith(platform.machine())


class BuildExt(build_ext):
    """``build_ext`` with RUNPATH-free links and, under ``IMIJ_REQUIRE_C=1``, a load check."""

    def build_extensions(self) -> None:
        if hasattr(self.compiler, "linker_so"):
            self.compiler.linker_so = _without_rpath(self.compiler.linker_so)
        super().build_extensions()

    def run(self) -> None:
        super().run()
        if os.environ.get("IMIJ_REQUIRE_C") == "1" and not _cross_compiling():
            for ext in self.extensions:
                self._check_loads(ext.name, self.get_ext_fullpath(ext.name))

    def _check_loads(self, name: str, path: str) -> None:
        """Import the built module in a subprocess; raise when it is missing or fails to load."""
        if not os.path.exists(path):
            raise ExecError(f"IMIJ_REQUIRE_C=1: {name} was not built ({path} is missing)")
        result = subprocess.run([sys.executable, "-c", _LOAD, name, path], capture_output=True, text=True)
        if result.returncode != 0:
            raise ExecError(f"IMIJ_REQUIRE_C=1: {name} was built but fails to load:\n{result.stderr.strip()}")


setup(
    cffi_modules=["imij_plugins/_build.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt},
    options={} if sysconfig.get_config_var("Py_GIL_DISABLED") else _ABI3,
)
