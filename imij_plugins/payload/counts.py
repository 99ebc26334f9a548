"""Value counts of narrow words, for both codecs' encoders (the quick codec's bit-smart planes,
the entropy encoder's map choice and palettes): csrc/encode.c's imij_enc_histogram, which counts
bytes in place, or numpy's bincount a chunk at a time (it widens its input to int64 first)."""

from __future__ import annotations

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.kernel_codes import KERNEL_CODES

NARROW = (np.dtype(np.uint8), np.dtype(np.uint16))


def histogram(words: np.ndarray, D: int) -> np.ndarray:
    """imij_kernels.h imij_enc_histogram: counts (int64) of every value of words of at most 16 bits
    (uint8 / uint16, values below 2^D)."""
    if _backend.active() == "c" and words.dtype in NARROW and D <= 8 * words.itemsize:
        ffi, lib = _backend.ffi, _backend.lib
        stride = _word_stride(words)
        flat = words if stride else np.ascontiguousarray(words)  # one channel of pixels: counted in place
        counts = np.zeros(1 << D, dtype=np.uint64)
        code = lib.imij_enc_histogram(ffi.cast("void *", flat.ctypes.data), flat.itemsize, flat.size, stride or 1, D,
                                      ffi.from_buffer("uint64_t[]", counts, require_writable=True), counts.size)
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_histogram", refused=ValueError)
        return counts.view(np.int64)
    flat = words.ravel()
    counts = np.zeros(1 << D, dtype=np.int64)
    step = 1 << 16
    for i in range(0, flat.size, step):  # bincount widens its input: a chunk at a time
        counts += np.bincount(flat[i : i + step], minlength=1 << D)
    return counts


def _word_stride(words: np.ndarray) -> int:
    """The words' step in elements when, in C order, they lie one step apart in memory (a
    contiguous array, or one channel of a contiguous image: step C), else 0."""
    dims = [(n, st) for n, st in zip(words.shape, words.strides) if n != 1]
    if not dims:
        return 1
    step = dims[-1][1]
    if step <= 0 or step % words.itemsize:
        return 0
    expect = step
    for n, st in reversed(dims):
        if st != expect:
            return 0
        expect = st * n
    return step // words.itemsize


def distinct_values(words: np.ndarray, D: int) -> np.ndarray:
    """The distinct values (sorted, int64) of words of at most 16 bits: from their histogram, or,
    for at most 2^D words (small 16-bit images), from a sorted copy, which then takes at most a
    quarter of the counts' memory."""
    if words.size <= 1 << D:
        return np.unique(words).astype(np.int64)
    return np.flatnonzero(histogram(words, D))


__all__ = ["distinct_values", "histogram"]
