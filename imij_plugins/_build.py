"""cffi out-of-line API-mode build of the C kernels in ``csrc/`` (ECOSYSTEM.md section 4).

The cdef is ``csrc/imij_kernels.h``, the one public header, with its preprocessor lines removed,
so the declarations live in one place; what the kernels share privately (``csrc/internal/*.h``:
SIMD targets, predictors, zero runs, portability) stays outside it. ``optional=True`` lets
``pip install`` succeed without a compiler (the package then runs on its pure-Python reference kernels), unless
``IMIJ_REQUIRE_C=1``, which release builds set so a failed compile fails the build (setup.py then
also checks the built module loads).
"""

import os
import pathlib
import sys
import sysconfig

from cffi import FFI

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_CSRC = _ROOT / "csrc"


_HEADERS = [_CSRC / "imij_kernels.h"]  # the public declarations: the cdef
_PRIVATE = sorted(_CSRC.glob("internal/*.h"))

REQUIRE_C = os.environ.get("IMIJ_REQUIRE_C") == "1"

# IMIJ_SANITIZE=1: kernels under AddressSanitizer and UndefinedBehaviorSanitizer, built with clang
# (fuzz/run-tests-sanitized.sh; run with the sanitizer runtime preloaded, fuzz/README.md)
_SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g"]
SANITIZE = os.environ.get("IMIJ_SANITIZE") == "1"
if SANITIZE:
    os.environ.setdefault("CC", "clang")


def _cdef() -> str:
    text = "\n".join(h.read_text() for h in _HEADERS)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _compile_args() -> list[str]:
    """Optimized, C99, and without debug info unless sanitizing (MSVC spells its flags apart)."""
    if sys.platform == "win32" and "CC" not in os.environ:
        return ["/O2", "/std:c11"]
    return ["-O1", "-std=c99", *_SANITIZE] if SANITIZE else ["-O3", "-std=c99", "-g0"]


def _link_args() -> list[str]:
    """Release links on Linux drop every symbol table but the dynamic one (the wheel ships stripped)."""
    if SANITIZE:
        return _SANITIZE
    return ["-s"] if sys.platform.startswith("linux") else []


ffibuilder = FFI()
ffibuilder.cdef(_cdef())
ffibuilder.set_source(
    "imij_plugins._kernels",
    "\n".join(f'#include "{h.name}"' for h in _HEADERS),
    sources=sorted(str(p.relative_to(_ROOT)) for p in _CSRC.glob("*.c")),
    include_dirs=[str(_CSRC.relative_to(_ROOT))],
    depends=sorted(str(p.relative_to(_ROOT)) for p in [*_HEADERS, *_PRIVATE]),  # rebuild when they change
    extra_compile_args=_compile_args(),
    extra_link_args=_link_args(),
    optional=not REQUIRE_C,
    py_limited_api=not sysconfig.get_config_var("Py_GIL_DISABLED"),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
