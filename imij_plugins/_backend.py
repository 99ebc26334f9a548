"""Chooses the kernel backend: the cffi C kernels or their pure-Python references.

``IMIJ_BACKEND=auto|c|python`` selects at import time (python-zstandard's import policy);
``use()`` switches for a block, which the tests use to run every kernel on both backends.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator

_KERNELS = "imij_plugins._kernels"


def _unavailable(error: ImportError) -> str:
    """Why the C kernels cannot serve: never built (no compiler at install), or rejected on load."""
    if isinstance(error, ModuleNotFoundError) and error.name == _KERNELS:
        return "the C kernels were not built"
    return f"the C kernels were built but failed to load ({type(error).__name__}: {error})"


try:
    from imij_plugins._kernels import ffi, lib

    # the SIMD path is settled once, here, before any thread of a decode or encode asks for it
    # (the kernels read it on hot paths; the first ask writes it)
    lib.imij_entropy_simd(-1)
    _UNAVAILABLE: str | None = None
except ImportError as import_error:  # the pure-Python references serve
    ffi = lib = None
    _UNAVAILABLE = _unavailable(import_error)

POLICIES = ("auto", "c", "python")

_HOW_TO_BUILD = (
    "install a C compiler and reinstall with "
    "'pip install --force-reinstall --no-cache-dir --no-binary imij-plugins imij-plugins' "
    "(from a clone: 'pip install --force-reinstall --no-cache-dir .')"
)


def _initial() -> str:
    policy = os.environ.get("IMIJ_BACKEND", "auto").strip().lower() or "auto"
    if policy not in POLICIES:
        raise ImportError(f"IMIJ_BACKEND={policy!r}: expected one of {', '.join(POLICIES)}")
    if policy == "python":
        return "python"
    if lib is None:
        if policy == "c":
            raise ImportError(f"IMIJ_BACKEND=c but {_UNAVAILABLE}: {_HOW_TO_BUILD}")
        warnings.warn(
            f"imij_plugins: {_UNAVAILABLE}; using the slow pure-Python backend; {_HOW_TO_BUILD}",
            RuntimeWarning,
            stacklevel=3,
        )
        return "python"
    return "c"


_active = _initial()


def active() -> str:
    """The backend in use: ``"c"`` or ``"python"``."""
    return _active


def available() -> tuple[str, ...]:
    """The backends this installation can run."""
    return ("c", "python") if lib is not None else ("python",)


def set_backend(name: str) -> None:
    """Switch every kernel to backend ``name`` (``"c"`` or ``"python"``)."""
    global _active
    if name not in available():
        raise ValueError(f"backend {name!r} is not available here (available: {available()})")
    _active = name


@contextlib.contextmanager
def use(name: str) -> Iterator[None]:
    """Run a block on backend ``name``, restoring the previous one after."""
    previous = _active
    set_backend(name)
    try:
        yield
    finally:
        set_backend(previous)
