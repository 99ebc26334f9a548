"""Backend selection: IMIJ_BACKEND, the fallback without C kernels, and its warning."""

import os
import subprocess
import sys

import pytest

from imij_plugins import _backend

BLOCK_KERNELS = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name == 'imij_plugins._kernels':\n"
    "            raise ImportError('no compiler here')\n"
    "sys.meta_path.insert(0, Block())\n"
)


def run(code: str, backend: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "IMIJ_BACKEND"}
    if backend is not None:
        env["IMIJ_BACKEND"] = backend
    return subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env, timeout=60)


def test_python_policy():
    result = run("import imij_plugins; print(imij_plugins.backend)", "python")
    assert result.stdout.strip() == "python" and "RuntimeWarning" not in result.stderr


def test_unknown_policy_is_an_import_error():
    result = run("import imij_plugins", "fast")
    assert result.returncode != 0 and "IMIJ_BACKEND='fast'" in result.stderr


def test_without_kernels_auto_falls_back_with_a_warning():
    result = run(BLOCK_KERNELS + "import imij_plugins; print(imij_plugins.backend)", None)
    assert result.stdout.strip() == "python"
    assert "C kernels not built" in result.stderr and "pip install" in result.stderr


def test_without_kernels_c_policy_fails():
    result = run(BLOCK_KERNELS + "import imij_plugins", "c")
    assert result.returncode != 0 and "were not built" in result.stderr


def test_use_switches_and_restores():
    before = _backend.active()
    with _backend.use("python"):
        assert _backend.active() == "python"
    assert _backend.active() == before
    with pytest.raises(ValueError):
        _backend.set_backend("fortran")
