"""The encoder kernels' plumbing (C: csrc/encode.c): whether to call C, cffi pointers, per-thread
buffers, and the narrowest unsigned types (``value_dtype``) that planes and residuals are held in:
the C kernels read uint8, uint16 and uint32 arrays as they are, so no plane is widened whole.

Each encoder kernel runs its C function when ``_backend.active() == "c"`` (with the GIL released,
so units encode in parallel on threads) and otherwise its pure-Python reference; both give the
same result bit for bit (tests/payload/entropy/test_encoder.py).
"""

from __future__ import annotations

import threading

import numpy as np

from imij_plugins import _backend

U32 = np.uint32


_local = threading.local()


def thread_buffer(name: str, size: int, dtype) -> np.ndarray:
    """A per-thread buffer of at least ``size`` elements, reused across calls (a payload's units
    are of about one size; sized to the call, so a small image's stay small)."""
    buf = getattr(_local, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        setattr(_local, name, buf)
    return buf[:size]


def release_scratch() -> None:
    """Drop this thread's buffers (the encoder calls it when a payload is done)."""
    for name in ("ops", "out"):
        if hasattr(_local, name):
            delattr(_local, name)


def use_c() -> bool:
    return _backend.active() == "c"


def ptr(ffi, ctype: str, a: np.ndarray, writable: bool = False):
    return ffi.from_buffer(ctype, a, require_writable=writable)


def planes32(planes: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(planes, dtype=U32)


NARROW = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(U32))


def value_dtype(depths: list[int]) -> np.dtype:
    """The narrowest unsigned type holding values of every depth (2.1: n <= 32)."""
    top = max(depths, default=0)
    return NARROW[0] if top <= 8 else NARROW[1] if top <= 16 else NARROW[2]


def narrow(a: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """``a`` contiguous in ``dtype`` (default: its own type when uint8, uint16 or uint32, else
    uint32), as the C kernels read it (their esize is its itemsize)."""
    if dtype is None:
        dtype = a.dtype if a.dtype in NARROW else np.dtype(U32)
    return np.ascontiguousarray(a, dtype=dtype)


def pair(u: np.ndarray, u0: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """A slot's residuals and slot 0's in one narrow type (the kernels take one esize)."""
    if u0 is None:
        return narrow(u), None
    common = max(narrow(u[:0]).dtype, narrow(u0[:0]).dtype, key=lambda d: d.itemsize)
    return narrow(u, common), narrow(u0, common)


def refs_ptr(ffi, refs: np.ndarray | None, shape: tuple[int, ...]):
    """The reference planes for the C kernels (NULL without a reference)."""
    if refs is None:
        return ffi.NULL
    if refs.shape != shape:
        raise ValueError(f"reference planes of shape {refs.shape}, expected {shape}")
    return ptr(ffi, "uint32_t[]", planes32(refs))
