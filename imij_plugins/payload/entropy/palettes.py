"""Palette detection for palette stripes (2.5, 5; C: imij_enc_palette, imij_enc_lookup8)."""

from __future__ import annotations

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.scratch import U32, narrow, ptr, use_c
from imij_plugins.payload.kernel_codes import KERNEL_CODES


def entry_len(depths) -> int:
    """2.5: one palette entry's bytes (u8 per slot of depth <= 8, else u16)."""
    return sum(1 if d <= 8 else 2 for d in depths)


def palette(planes: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray] | None:
    """2.5 / 5: at most 256 distinct slot tuples: the entries ordered by the sum of their slot
    values (then the tuple) and the (h, w) uint8 index plane; None when there are more."""
    S, h, w = planes.shape
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = narrow(planes)
        entries = np.empty(256 * S, dtype=U32)
        index = np.empty(h * w, dtype=np.uint8)
        n = lib.imij_enc_palette(ffi.from_buffer(pn), pn.itemsize, S, index.size, ptr(ffi, "uint32_t[]", entries, True),
                                 entries.size, ptr(ffi, "uint8_t[]", index, True))
        if n == lib.IMIJ_E_MANY:
            return None
        if n < 0:
            raise KERNEL_CODES.error(n, kernel="imij_enc_palette", refused=ValueError)
        tuples = entries[: n * S].reshape(n, S).astype(np.int64)
    else:
        flat = planes.reshape(S, -1).T.astype(np.int64)
        tuples, inverse = np.unique(flat, axis=0, return_inverse=True)
        if len(tuples) > 256:
            return None
        index = inverse.reshape(-1).astype(np.uint8)
        n = len(tuples)
    tuples = np.asarray(tuples, dtype=np.int64)
    # by sum, then the tuple (lexsort's last key is the primary one; the tuples are distinct)
    order = np.lexsort([tuples[:, s] for s in range(S - 1, -1, -1)] + [tuples.sum(axis=1)])
    rank = np.empty(n, dtype=np.uint8)
    rank[order] = np.arange(n, dtype=np.uint8)
    return [tuple(t) for t in tuples[order].tolist()], lookup8(rank, index).reshape(h, w)


def lookup8(lut: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """``lut[plane]`` for a uint8 plane and a table of at most 256 uint8 entries covering its
    values (imij_kernels.h imij_enc_lookup8: numpy's indexing widens the plane to intp first, eight
    bytes a pixel of temporary)."""
    if not use_c():
        return lut[plane]
    table = np.zeros(256, dtype=np.uint8)
    table[: len(lut)] = lut
    src = np.ascontiguousarray(plane, dtype=np.uint8)
    out = np.empty(src.shape, dtype=np.uint8)
    _backend.lib.imij_enc_lookup8(_backend.ffi.from_buffer(table), _backend.ffi.from_buffer(src), src.size,
                                  _backend.ffi.from_buffer(out, require_writable=True))
    return out


def dense(entries: list[tuple[int, ...]]) -> bool:
    """A single slot whose values fill at least 7/8 of their range: its index plane would be
    about the values less the smallest, predicted alike, so a palette stripe only adds its
    entries (5's comparison is skipped; gray photos)."""
    return len(entries[0]) == 1 and 8 * len(entries) >= 7 * (entries[-1][0] - entries[0][0] + 1)
