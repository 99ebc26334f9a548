"""Backend selection: IMIJ_BACKEND, the fallback without C kernels, and its warning."""

import os
import subprocess
import sys

import pytest

from imij_plugins import _backend

# Not built: no module imij_plugins._kernels on the path (an install without a compiler).
BLOCK_KERNELS = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name == 'imij_plugins._kernels':\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
)

# Built but rejected on load: the module is found, and loading it raises as the dynamic loader
# does on musl for an IFUNC relocation.
BROKEN_KERNELS = (
    "import sys, importlib.abc, importlib.machinery\n"
    "class Broken(importlib.abc.Loader):\n"
    "    def create_module(self, spec):\n"
    "        raise ImportError('Error relocating _kernels.abi3.so: unsupported relocation type 37',\n"
    "                          name=spec.name, path='_kernels.abi3.so')\n"
    "    def exec_module(self, module):\n"
    "        pass\n"
    "class Find(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name == 'imij_plugins._kernels':\n"
    "            return importlib.machinery.ModuleSpec(name, Broken(), origin='_kernels.abi3.so')\n"
    "sys.meta_path.insert(0, Find())\n"
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
    result = run("import imij_plugins; imij_plugins.backend", "fast")
    assert result.returncode != 0 and "IMIJ_BACKEND='fast'" in result.stderr


def test_without_kernels_auto_falls_back_with_a_warning():
    result = run(BLOCK_KERNELS + "import imij_plugins; print(imij_plugins.backend)", None)
    assert result.stdout.strip() == "python"
    assert "C kernels were not built" in result.stderr and "pip install" in result.stderr
    assert "failed to load" not in result.stderr


def test_without_kernels_c_policy_fails():
    result = run(BLOCK_KERNELS + "import imij_plugins; imij_plugins.backend", "c")
    assert result.returncode != 0 and "were not built" in result.stderr


def test_use_switches_and_restores():
    before = _backend.active()
    with _backend.use("python"):
        assert _backend.active() == "python"
    assert _backend.active() == before
    with pytest.raises(ValueError):
        _backend.set_backend("fortran")


def test_kernels_that_fail_to_load_say_so_and_fall_back():
    result = run(BROKEN_KERNELS + "import imij_plugins; print(imij_plugins.backend)", None)
    assert result.stdout.strip() == "python"
    assert "C kernels were built but failed to load" in result.stderr
    assert "unsupported relocation type 37" in result.stderr and "not built" not in result.stderr


def test_kernels_that_fail_to_load_fail_the_c_policy_with_the_error():
    result = run(BROKEN_KERNELS + "import imij_plugins; imij_plugins.backend", "c")
    assert result.returncode != 0 and "failed to load" in result.stderr
    assert "unsupported relocation type 37" in result.stderr
