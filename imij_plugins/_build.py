"""cffi out-of-line API-mode build of the C kernels in ``csrc/`` (ECOSYSTEM.md section 4).

The cdef is the public header ``csrc/imij_kernels.h`` with its preprocessor lines removed, so the
declarations live in one place. ``optional=True`` lets ``pip install`` succeed without a compiler;
the package then runs on its pure-Python reference kernels.
"""

import pathlib
import sysconfig

from cffi import FFI

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_CSRC = _ROOT / "csrc"


def _cdef() -> str:
    header = (_CSRC / "imij_kernels.h").read_text()
    return "\n".join(line for line in header.splitlines() if not line.lstrip().startswith("#"))


ffibuilder = FFI()
ffibuilder.cdef(_cdef())
ffibuilder.set_source(
    "imij_plugins._kernels",
    '#include "imij_kernels.h"',
    sources=sorted(str(p.relative_to(_ROOT)) for p in _CSRC.glob("*.c")),
    include_dirs=[str(_CSRC.relative_to(_ROOT))],
    extra_compile_args=["-O3", "-std=c99"],
    optional=True,
    py_limited_api=not sysconfig.get_config_var("Py_GIL_DISABLED"),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
