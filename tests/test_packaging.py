"""Packaging: what the sdist ships, the abi3 wheel built from it, and installs without a compiler.

The ``slow_build`` tests build the sdist and then a wheel from that sdist with ``python -m build``
(as a release does), and install them into fresh virtual environments with ``CC=false``, so
nothing there can compile: the wheel must bring working C kernels, and a source install must
still succeed and fall back to the pure-Python backend.
"""

from __future__ import annotations

import dataclasses
import email
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# A tiny lossless round trip through the installed package, then the backend that ran it.
ROUND_TRIP = (
    "import numpy as np, imij_plugins as m\n"
    "a = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)\n"
    "assert (m.read(m.encode(a)) == a).all()\n"
    "print(m.backend)\n"
)

# No compiler, and none of the outer run's choices of backend, import path or warning filters.
NO_COMPILER = {k: v for k, v in os.environ.items() if k not in ("IMIJ_BACKEND", "PYTHONPATH", "PYTHONWARNINGS")}
NO_COMPILER["CC"] = "false"


@dataclasses.dataclass(frozen=True)
class Dist:
    """The release files ``python -m build`` made."""

    sdist: pathlib.Path
    wheel: pathlib.Path


def run(args: list[str], cwd: pathlib.Path, timeout: float,
        env: dict[str, str] = NO_COMPILER) -> subprocess.CompletedProcess:
    """Run ``args`` (by default without a compiler); fail the test with its output when it fails."""
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def fresh_venv(path: pathlib.Path) -> pathlib.Path:
    """A new virtual environment (with its own pip, as a user's has) and its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def pip_install(python: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    """``pip install`` into the environment of ``python``, with no compiler."""
    return run([str(python), "-m", "pip", "install", "-q", *args], python.parent, 300)


def runtime_requirements(sdist: pathlib.Path) -> list[str]:
    """The sdist's ``Requires-Dist`` entries outside any extra (its PKG-INFO is the source of truth)."""
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if re.fullmatch(r"[^/]+/PKG-INFO", m.name))
        metadata = email.message_from_binary_file(tar.extractfile(member))  # type: ignore[arg-type]
    return [r for r in metadata.get_all("Requires-Dist", []) if "extra ==" not in r]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and the wheel built from it, as ``python -m build`` makes them by default."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], ROOT, 900, dict(os.environ))
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return Dist(sdist, wheel)


def test_sdist_contains_every_c_file(tmp_path):
    # An isolated build, so the setuptools of pyproject's build-system builds it, not this venv's.
    run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)], ROOT, 300, dict(os.environ))
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        shipped = {pathlib.PurePosixPath(n).name for n in tar.getnames() if "/csrc/" in n}
    expected = {p.name for p in (ROOT / "csrc").iterdir() if p.suffix in (".c", ".h", ".inc")}
    assert expected <= shipped, expected - shipped
    assert os.path.exists(ROOT / "MANIFEST.in")


@pytest.mark.slow_build
def test_wheel_is_abi3_and_holds_the_kernels(dist):
    assert re.fullmatch(r"imij_plugins-[^-]+-cp310-abi3-[^-]+\.whl", dist.wheel.name), dist.wheel.name
    with zipfile.ZipFile(dist.wheel) as wheel:
        assert "imij_plugins/_kernels.abi3.so" in wheel.namelist()


@pytest.mark.slow_build
def test_wheel_runs_the_c_kernels_without_a_compiler(dist, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "--only-binary", ":all:", str(dist.wheel))  # dependencies as wheels too: nothing builds
    result = run([str(python), "-c", ROUND_TRIP], tmp_path, 120)
    assert result.stdout.strip() == "c"
    assert "Warning" not in result.stderr, result.stderr


@pytest.mark.slow_build
def test_source_install_without_a_compiler_falls_back_with_one_warning(dist, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "--only-binary", ":all:", *runtime_requirements(dist.sdist))
    # pip's own build isolation, as for a user; no cache, so no wheel built earlier can stand in.
    pip_install(python, "--no-cache-dir", "--no-deps", str(dist.sdist))
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"], tmp_path, 60)
    assert not list(pathlib.Path(site.stdout.strip(), "imij_plugins").glob("_kernels*"))
    result = run([str(python), "-c", ROUND_TRIP], tmp_path, 300)
    assert result.stdout.strip() == "python"
    warnings = re.findall(r":\d+: (\w*Warning): (.*)", result.stderr)
    assert len(warnings) == 1, result.stderr
    assert warnings[0][0] == "RuntimeWarning" and "C kernels not built" in warnings[0][1], result.stderr
