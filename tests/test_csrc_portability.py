"""The C kernels (csrc/) build for the platforms the wheels target, and a build that must have
them (``IMIJ_REQUIRE_C=1``) fails when they do not compile or load; checked from this Linux host.

Cross compilers build and link every ``csrc/*.c`` into one shared object, as the wheel build
does: for Windows with mingw-w64, for aarch64 Linux and for musl (Alpine), whose loader then loads
it for real (GCC's target_clones emits IFUNC relocations musl rejects). MSVC itself cannot run
here, so one test preprocesses csrc/ as MSVC would (``_MSC_VER``, no GNU macros) and checks no
GNU extension is left in csrc's own lines. A test whose compiler is missing skips and names the
Debian package to install (.ci/run installs them all).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"
SOURCES = sorted(CSRC.glob("*.c"))

# Non-portable C as errors; other warnings (e.g. variables only the x86 SIMD paths use) stay warnings.
PORTABILITY_ERRORS = [
    "-std=c99",
    "-pedantic",
    "-Wall",
    "-Werror=pedantic",
    "-Werror=implicit-function-declaration",
    "-Werror=vla",
    "-Werror=pointer-arith",
    "-Werror=attributes",
    "-Werror=int-conversion",
    "-Werror=incompatible-pointer-types",
    "-Werror=unknown-pragmas",
]

# GNU spellings MSVC rejects; csrc's own lines may use them only where MSVC does not look.
GNU_ONLY = re.compile(r"\b(__builtin_\w+|__attribute__|typeof|__typeof__|__int128|__asm__|__extension__)\b")


def need(compiler: str, package: str) -> str:
    """The compiler's path, or skip the test naming the Debian package that brings it."""
    path = shutil.which(compiler)
    if path is None:
        pytest.skip(f"{compiler} is not installed (Debian package {package})")
    return path


def build_shared(compiler: str, out: pathlib.Path, name: str, *flags: str) -> pathlib.Path:
    """Compile every csrc/*.c with ``compiler`` (the sources at once) and link them into ``name``."""
    objects = [out / f"{src.stem}.o" for src in SOURCES]
    jobs = [
        subprocess.Popen(
            [compiler, *PORTABILITY_ERRORS, "-O2", *flags, "-I", str(CSRC), "-c", str(src), "-o", str(obj)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for src, obj in zip(SOURCES, objects)
    ]
    for src, job in zip(SOURCES, jobs):
        output = job.communicate(timeout=300)[0]
        assert job.returncode == 0, f"{compiler} {src.name}:\n{output}"
    lib = out / name
    link = subprocess.run([compiler, "-shared", *flags, "-o", str(lib), *map(str, objects)],
                          capture_output=True, text=True, timeout=120)
    assert link.returncode == 0, f"{compiler} link:\n{link.stdout}{link.stderr}"
    return lib


def test_windows_mingw_w64_compiles_and_links(tmp_path: pathlib.Path) -> None:
    cc = need("x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64")
    dll = build_shared(cc, tmp_path, "imij_kernels.dll", "-Wl,--no-undefined")
    exports = subprocess.run(["x86_64-w64-mingw32-objdump", "-p", str(dll)], capture_output=True, text=True)
    assert "imij_entropy_simd" in exports.stdout


def test_aarch64_compiles_and_links(tmp_path: pathlib.Path) -> None:
    cc = need("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
    build_shared(cc, tmp_path, "libimij_kernels.so", "-fPIC", "-Wl,-z,defs")


# dlopen's loader of a musl program: the relocations that failed in the kernels, then a call.
MUSL_LOADER = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*simd)(int) = (int (*)(int))dlsym(lib, "imij_entropy_simd");
    printf("path %d\n", simd ? simd(2) : -1);
    return simd ? 0 : 1;
}
"""


@pytest.fixture(scope="module")
def musl_kernels(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """csrc/ as one shared object built against musl."""
    cc = need("musl-gcc", "musl-tools")
    return build_shared(cc, tmp_path_factory.mktemp("musl"), "libimij_kernels.so", "-fPIC", "-Wl,-z,defs")


def test_musl_object_has_no_ifunc(musl_kernels: pathlib.Path) -> None:
    relocations = subprocess.run(["readelf", "-rW", str(musl_kernels)], capture_output=True, text=True, check=True)
    symbols = subprocess.run(["readelf", "-sW", str(musl_kernels)], capture_output=True, text=True, check=True)
    assert "IRELATIV" not in relocations.stdout and " IFUNC " not in symbols.stdout


def test_musl_loader_loads_the_kernels(musl_kernels: pathlib.Path) -> None:
    if not pathlib.Path("/lib/ld-musl-x86_64.so.1").exists() or shutil.which("readelf") is None:
        pytest.skip("no x86-64 musl dynamic loader here (Debian package musl)")
    main = musl_kernels.parent / "load.c"
    main.write_text(MUSL_LOADER)
    program = musl_kernels.parent / "load"
    subprocess.run(["musl-gcc", "-o", str(program), str(main)], check=True, timeout=120)
    result = subprocess.run([str(program), str(musl_kernels)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and re.fullmatch(r"path [012]\n", result.stdout), result.stdout + result.stderr


def msvc_view(tmp_path: pathlib.Path, source: pathlib.Path, *arch: str) -> dict[str, list[str]]:
    """``source`` preprocessed as MSVC for ``arch`` sees it: its lines, by the csrc file they come from.

    GCC's preprocessor with none of its own macros, MSVC's instead, and empty system headers (the
    checks concern csrc's lines, not the SDK's).
    """
    stubs = tmp_path / "msvc-include"
    stubs.mkdir(exist_ok=True)
    for path in [*CSRC.glob("*.[ch]"), *CSRC.glob("*.inc"), *CSRC.glob("internal/*.h")]:
        for header in re.findall(r"#\s*include\s*<([^>]+)>", path.read_text()):
            (stubs / header).touch()
    result = subprocess.run(
        ["gcc", "-E", "-undef", "-nostdinc", "-U__GNUC__", "-U__clang__", "-D_MSC_VER=1930", "-D_WIN32",
         *arch, "-I", str(stubs), "-I", str(CSRC), str(source)],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines: dict[str, list[str]] = {}
    current = ""
    for line in result.stdout.splitlines():
        marker = re.match(r'# \d+ "([^"]+)"', line)
        if marker:
            current = marker.group(1)
        elif line.strip():
            lines.setdefault(current, []).append(line)
    return {name: text for name, text in lines.items()
            if not name.startswith("<") and pathlib.Path(name).resolve().is_relative_to(CSRC)}


MSVC_TARGETS = {"x64": ("-D_WIN64", "-D_M_X64=100", "-D_M_AMD64=100"), "arm64": ("-D_WIN64", "-D_M_ARM64=1")}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
@pytest.mark.parametrize("target", sorted(MSVC_TARGETS))
def test_msvc_sees_no_gnu_extension(tmp_path: pathlib.Path, source: pathlib.Path, target: str) -> None:
    need("gcc", "gcc")
    view = msvc_view(tmp_path, source, *MSVC_TARGETS[target])
    assert view, "no line attributed to csrc/"
    left = [f"{pathlib.Path(name).name}: {line.strip()[:120]}" for name, text in view.items()
            for line in text if GNU_ONLY.search(line)]
    assert not left, "\n".join(left)


@pytest.mark.parametrize("target, simd", [("x64", True), ("arm64", False)])
def test_msvc_builds_the_simd_paths_only_on_x64(tmp_path: pathlib.Path, target: str, simd: bool) -> None:
    need("gcc", "gcc")
    text = "\n".join(line for lines in msvc_view(tmp_path, CSRC / "entropy.c", *MSVC_TARGETS[target]).values()
                     for line in lines)
    assert ("decode_rows_avx512" in text and "__cpuidex" in text and "_xgetbv" in text) == simd
    assert "_BitScanForward" in text  # MSVC's spelling of the bit scans, not the portable loops


# ---- IMIJ_REQUIRE_C=1: a build without working kernels fails instead of shipping the fallback ----

# A constructor calling a function nothing defines: compiles and links (a shared object may leave
# symbols undefined), then the loader rejects the module, as musl's did the IFUNC relocations.
UNLOADABLE = "void imij_nowhere(void);\n__attribute__((constructor)) static void imij_broken(void) { imij_nowhere(); }\n"


def source_copy(tmp_path: pathlib.Path) -> pathlib.Path:
    """The project without build products, for pip to build in (it builds in the tree)."""
    ignore = shutil.ignore_patterns(".git", "build", "dist", "*.so", "*.egg-info", "__pycache__", ".hypothesis", ".corpus")
    return pathlib.Path(shutil.copytree(ROOT, tmp_path / "src", ignore=ignore))


def pip_wheel(src: pathlib.Path, out: pathlib.Path, **env: str) -> subprocess.CompletedProcess:
    """``pip wheel`` of ``src`` into ``out`` with ``env`` added (in build isolation: the build
    requirements are pyproject.toml's, not this environment's)."""
    base = {k: v for k, v in os.environ.items() if k not in ("IMIJ_REQUIRE_C", "IMIJ_BACKEND", "PYTHONPATH", "CFLAGS")}
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(src)],
        capture_output=True, text=True, env={**base, **env}, timeout=600,
    )


@pytest.mark.slow_build
def test_require_c_fails_the_build_without_a_compiler(tmp_path: pathlib.Path) -> None:
    src = source_copy(tmp_path)
    failed = pip_wheel(src, tmp_path / "required", IMIJ_REQUIRE_C="1", CC="false")
    assert failed.returncode != 0 and not list((tmp_path / "required").glob("*.whl"))
    assert "building 'imij_plugins._kernels' extension" in failed.stdout + failed.stderr  # it failed compiling
    optional = pip_wheel(src, tmp_path / "optional", CC="false")  # the default: optional kernels
    (wheel,) = (tmp_path / "optional").glob("*.whl")
    assert optional.returncode == 0 and not any("_kernels" in n for n in zipfile.ZipFile(wheel).namelist())


@pytest.mark.slow_build
def test_require_c_fails_the_build_when_the_kernels_do_not_load(tmp_path: pathlib.Path) -> None:
    need("gcc", "gcc")
    src = source_copy(tmp_path)
    (tmp_path / "unloadable.h").write_text(UNLOADABLE)
    failed = pip_wheel(src, tmp_path / "wheels", IMIJ_REQUIRE_C="1", CFLAGS=f"-include {tmp_path / 'unloadable.h'}")
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0 and not list((tmp_path / "wheels").glob("*.whl"))
    assert "fails to load" in output and "imij_nowhere" in output
