"""cffi out-of-line API-mode build of the C kernels in ``csrc/`` (ECOSYSTEM.md section 4).

The cdef is every header in ``csrc/`` with its preprocessor lines removed, so the declarations
live in one place (each kernel family may keep its own header). ``optional=True`` lets ``pip install`` succeed without a compiler;
the package then runs on its pure-Python reference kernels.
"""

import os
import pathlib
import sysconfig

from cffi import FFI

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_CSRC = _ROOT / "csrc"


_HEADERS = sorted(_CSRC.glob("*.h"))

# IMIJ_SANITIZE=1: kernels under AddressSanitizer and UndefinedBehaviorSanitizer, built with clang
# (fuzz/run-tests-sanitized.sh; run with the sanitizer runtime preloaded, fuzz/README.md)
_SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g"]
SANITIZE = os.environ.get("IMIJ_SANITIZE") == "1"
if SANITIZE:
    os.environ.setdefault("CC", "clang")


def _cdef() -> str:
    text = "\n".join(h.read_text() for h in _HEADERS)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


ffibuilder = FFI()
ffibuilder.cdef(_cdef())
ffibuilder.set_source(
    "imij_plugins._kernels",
    "\n".join(f'#include "{h.name}"' for h in _HEADERS),
    sources=sorted(str(p.relative_to(_ROOT)) for p in _CSRC.glob("*.c")),
    include_dirs=[str(_CSRC.relative_to(_ROOT))],
    depends=sorted(str(p.relative_to(_ROOT)) for p in [*_HEADERS, *_CSRC.glob("*.inc")]),  # rebuild when they change
    extra_compile_args=["-O1" if SANITIZE else "-O3", "-std=c99", *(_SANITIZE if SANITIZE else [])],
    extra_link_args=_SANITIZE if SANITIZE else [],
    optional=True,
    py_limited_api=not sysconfig.get_config_var("Py_GIL_DISABLED"),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
