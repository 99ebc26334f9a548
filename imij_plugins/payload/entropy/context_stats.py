"""The residuals' context statistics (3.2, 3.3; C: imij_enc_stats): per context class the value,
zero-run and run histograms the model chooser reads, in imij_kernels.h's buckets."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.residuals import bit_length, lane_edges
from imij_plugins.payload.entropy.scratch import U32, pair, ptr, use_c
from imij_plugins.payload.entropy.tokens import RUN_CAP
from imij_plugins.payload.kernel_codes import KERNEL_CODES

BUCKETS = 640  # imij_kernels.h IMIJ_ENC_BUCKETS: u below 256 exact, then (msb, 4 bits below it)


CLASSES = 16


def bucket_of(u: np.ndarray) -> np.ndarray:
    """imij_kernels.h's bucket: u below 256, else 256 + (msb - 8) * 16 + the 4 bits below the msb."""
    u = np.asarray(u, dtype=np.int64)
    msb = bit_length(u) - 1
    sh = np.maximum(msb - 4, 0)
    big = 256 + (msb - 8) * 16 + ((u >> sh) & 15)
    return np.where(u < 256, u, big)


def stats(u: np.ndarray, u0: np.ndarray | None, lanes: int, ctx_shift: int, run_min: int, buckets: int = BUCKETS):
    """imij_kernels.h imij_enc_stats on one slot plane: (vh (16, buckets), zr (16,), rh (16, buckets))
    uint32 without the cross context, and with u0 given a second triple with it (else None)."""
    plain = new_counts(buckets=buckets)
    cross = new_counts(buckets=buckets) if u0 is not None else None
    add_stats(plain, cross, u, u0, lanes, ctx_shift, run_min)
    return plain, cross


Counts = tuple[np.ndarray, np.ndarray, np.ndarray]  # vh (16, buckets), zr (16,), rh (16, buckets)


def new_counts(dtype=U32, buckets: int = BUCKETS) -> Counts:
    """Zeroed statistics arrays (vh, zr, rh) in ``dtype`` (uint32: the kernel adds to them in
    place), rows of ``buckets`` (stat_buckets': the first that a slot's values and runs reach)."""
    return (np.zeros((CLASSES, buckets), dtype=dtype), np.zeros(CLASSES, dtype=dtype),
            np.zeros((CLASSES, buckets), dtype=dtype))


@lru_cache(maxsize=256)
def stat_buckets(depth: int, run_positions: int) -> int:
    """Buckets a slot's statistics reach: those of values below 2^depth (depth <= 32) and of runs
    of at most min(2^15, run_positions) positions (3.2), so that its arrays hold no column that
    can only stay zero (16 x 640 uint32 is 40 KiB; a small image's counts fill a fraction).
    Cached: every unit's count asks."""
    top = int(bucket_of(np.array((1 << min(depth, 32)) - 1)))
    run = int(bucket_of(np.array(min(RUN_CAP, run_positions) - 1))) if run_positions > 1 else 0
    return max(top, run) + 1


def add_stats(plain: Counts, cross: Counts | None, u: np.ndarray, u0: np.ndarray | None, lanes: int, ctx_shift: int,
              run_min: int) -> None:
    """imij_kernels.h imij_enc_stats: add one slot plane's counts to ``plain`` and, with u0 given, the
    cross context's to ``cross``; the kernel adds in place to uint32 arrays. ValueError when a
    value or a run falls past the arrays' buckets."""
    h, w = u.shape
    buckets = plain[0].shape[1]
    if cross is None:
        u0 = None
    if use_c() and all(a.dtype == U32 and a.flags.c_contiguous for a in plain + (cross or ())):
        ffi, lib = _backend.ffi, _backend.lib
        uu, u00 = pair(u, u0)
        rows = np.empty(3 * w, dtype=U32)
        ptrs = [ptr(ffi, "uint32_t[]", a, True) for a in plain]
        ptrs += [ptr(ffi, "uint32_t[]", a, True) for a in cross] if cross is not None else ptrs  # (unread without u0)
        p0 = ffi.from_buffer(u00) if u00 is not None else ffi.NULL
        code = lib.imij_enc_stats(ffi.from_buffer(uu), p0, uu.itemsize, w, h, lanes, ctx_shift, run_min, buckets,
                                  ptr(ffi, "uint32_t[]", rows, True), rows.size, *ptrs)
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_stats", refused=ValueError)
        return
    if use_c():  # wider accumulators: count in uint32, then add
        tmp = new_counts(buckets=buckets)
        xtmp = new_counts(buckets=buckets) if cross is not None else None
        add_stats(tmp, xtmp, u, u0, lanes, ctx_shift, run_min)
    else:
        tmp = _stats_ref(u, None, lanes, ctx_shift, run_min, buckets)
        xtmp = _stats_ref(u, u0, lanes, ctx_shift, run_min, buckets) if u0 is not None else None
    for acc, add in ((plain, tmp), (cross, xtmp)):
        if acc is not None and add is not None:
            for a, b in zip(acc, add):
                a += b.astype(a.dtype)


def _classes_ref(u: np.ndarray, u0: np.ndarray | None, lanes: int, shift: int) -> np.ndarray:
    """3.1's class of every position (vectorized)."""
    h, w = u.shape
    t = np.minimum(u.astype(np.int64) >> shift, 1 << 16)
    first, _ = lane_edges(Lanes.of(w, lanes))
    tw = np.zeros((h, w), dtype=np.int64)
    tw[:, 1:] = t[:, :-1]
    tn = np.zeros((h, w), dtype=np.int64)
    tn[1:] = t[:-1]
    hasw = np.broadcast_to(~first, (h, w))
    hasn = np.zeros((h, w), dtype=bool)
    hasn[1:] = True
    s = np.where(hasw & hasn, tw + tn, np.where(hasw, 2 * tw, np.where(hasn, 2 * tn, 0)))
    if u0 is not None:
        s = s + np.minimum(u0.astype(np.int64) >> shift, 1 << 16)
    return np.minimum(bit_length(s), 15)


def _stats_ref(u, u0, lanes, shift, run_min, buckets):
    vh, zr, rh = _stats_full_ref(u, u0, lanes, shift, run_min)
    h, w = u.shape
    longest = min(RUN_CAP, -(-w // lanes) * h)
    top = int(bucket_of(np.array(u.max() if u.size else 0)))
    if top >= buckets or (run_min and int(bucket_of(np.array(longest - 1))) >= buckets):
        raise ValueError(f"statistics of {buckets} buckets cannot hold these residuals")
    return vh[:, :buckets].copy(), zr, rh[:, :buckets].copy()


def _stats_full_ref(u, u0, lanes, shift, run_min):
    h, w = u.shape
    cls = _classes_ref(u, u0, lanes, shift)
    vh = np.zeros((CLASSES, BUCKETS), dtype=np.int64)
    rh = np.zeros((CLASSES, BUCKETS), dtype=np.int64)
    zr = np.zeros(CLASSES, dtype=np.int64)
    if not run_min:
        np.add.at(vh, (cls.ravel(), bucket_of(u.ravel())), 1)
        return vh, zr, rh
    ln = Lanes.of(w, lanes)
    uu = u.tolist()
    cc = cls.tolist()
    for c0, width in zip(ln.starts, ln.widths):
        seq = [(r, c0 + x) for r in range(h) for x in range(width)]
        vals = [uu[r][c] for r, c in seq]
        ahead = [0] * (len(seq) + 1)
        for i in range(len(seq) - 1, -1, -1):
            ahead[i] = ahead[i + 1] + 1 if vals[i] == 0 else 0
        skip = 0
        for i, (r, c) in enumerate(seq):
            k = cc[r][c]
            if skip:
                skip -= 1
                zr[k] += 1
                continue
            zeros = min(ahead[i], RUN_CAP)
            if zeros >= run_min:
                rh[k, int(bucket_of(np.array(zeros - 1)))] += 1
                zr[k] += 1
                skip = zeros - 1
                continue
            vh[k, int(bucket_of(np.array(vals[i])))] += 1
    return vh, zr, rh
