"""Helpers for tests that compare a C kernel with its Python reference directly."""

from __future__ import annotations

import pytest

from imij_plugins import _backend

NEEDS_C = pytest.mark.skipif("c" not in _backend.available(), reason="C kernels not built")


def both(fn, *args, **kw):
    """The C kernel's and the Python reference's result of ``fn(*args, **kw)``."""
    with _backend.use("c"):
        a = fn(*args, **kw)
    with _backend.use("python"):
        b = fn(*args, **kw)
    return a, b
