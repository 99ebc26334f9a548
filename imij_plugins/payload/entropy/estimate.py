"""The model chooser's estimate (3.3, 5; C: csrc/encode.c): the exact integer bit costs of
tokens under candidate tables and contexts, and each table's best precision."""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import CLASSES
from imij_plugins.payload.entropy.models import M, normalize
from imij_plugins.payload.entropy.scratch import U32, ptr, use_c
from imij_plugins.payload.kernel_codes import KERNEL_CODES

COST_FIX = 16  # estimates are bits * 2^16, exact integers: every backend chooses the same models


LOG2_FIX = np.array([0] + [round(math.log2(f) * (1 << COST_FIX)) for f in range(1, M + 1)], dtype=np.int64)


def row_costs(h: np.ndarray) -> np.ndarray:
    """imij_kernels.h imij_enc_row_costs: the estimated bits * 2^16 of coding each row of symbol counts
    h (rows, width <= 256) with a table normalized to M (3.3), plus a rough table size."""
    h = np.ascontiguousarray(h, dtype=np.int64)
    rows, width = h.shape
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        out = np.empty(rows, dtype=np.int64)
        code = lib.imij_enc_row_costs(ptr(ffi, "int64_t[]", h), rows, width, _log2_ptr(),
                                      ptr(ffi, "int64_t[]", out, True))
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_row_costs", refused=ValueError)
        return out
    if rows == 0:
        return np.zeros(0, dtype=np.int64)
    tot = h.sum(axis=1)
    f = np.where(h > 0, np.maximum(1, (h * M) // np.maximum(tot, 1)[:, None]), 0)
    at = np.arange(rows)
    top = np.argmax(f, axis=1)  # the first of the largest
    fmax, ctop = f[at, top], h[at, top]
    excess = np.maximum(f.sum(axis=1) - M, 0)
    bits = (h * (LOG2_FIX[M] - LOG2_FIX[f])).sum(axis=1)
    bits += ctop * (LOG2_FIX[fmax] - LOG2_FIX[np.maximum(1, fmax - excess)])
    nz = h > 0
    last1 = width - np.argmax(nz[:, ::-1], axis=1)
    return bits + np.where(tot > 0, (11 + 6 * nz.sum(axis=1) + 2 * last1) << COST_FIX, 0)


def counts32(a: np.ndarray) -> np.ndarray:
    """Statistics as the chooser's kernels read them: contiguous uint32 (no copy when they are);
    ValueError for counts outside 0 .. 2^32 - 1."""
    if a.dtype != U32:
        if a.size and (a.min() < 0 or a.max() >= 1 << 32):
            raise ValueError("statistics counts outside 0 .. 2^32 - 1")
        a = a.astype(U32)
    return np.ascontiguousarray(a)


@cache
def _log2_ptr():
    """LOG2_FIX as the C kernels read it (one pointer for every call)."""
    return _backend.ffi.from_buffer("int64_t[]", LOG2_FIX)


class TokenTable:
    """A scheme's (4, 640) per-bucket tokens cut to a statistics' buckets, contiguous, and its C
    pointer made once (modeling caches one per scheme and width)."""

    __slots__ = ("a", "_ptr")

    def __init__(self, tokens: np.ndarray, buckets: int):
        self.a = np.ascontiguousarray(tokens[:, :buckets], dtype=np.int64)
        self._ptr = None

    def ptr(self):
        if self._ptr is None:
            self._ptr = _backend.ffi.from_buffer("int64_t[]", self.a)
        return self._ptr


class Prepared:
    """A slot's statistics (vh, rh (16, buckets), zr (16,)) as the chooser's kernels read them,
    converted (counts32) and pointed at once: choose_model asks several costs of one slot.
    ``cols``: the buckets with a count in any class, the only ones the C kernels read (a small
    image fills few, spread over the range); the reference reads every bucket, the same sums."""

    __slots__ = ("vh", "rh", "zr", "cols", "_ptrs")

    def __init__(self, vh: np.ndarray, rh: np.ndarray, zr: np.ndarray):
        self.vh, self.rh, self.zr = counts32(vh), counts32(rh), counts32(zr)
        self.cols = np.flatnonzero(self.vh.any(axis=0) | self.rh.any(axis=0)).astype(U32)
        self._ptrs = None

    def _c(self):
        """vh, rh, zr and cols as the kernels read them (pointed at once)."""
        if self._ptrs is None:
            ffi = _backend.ffi
            self._ptrs = tuple(ffi.from_buffer("uint32_t[]", a) for a in (self.vh, self.rh, self.zr, self.cols))
        return self._ptrs

    def _table(self, tokens: np.ndarray | TokenTable) -> TokenTable:
        if isinstance(tokens, TokenTable) and tokens.a.shape[1] == self.vh.shape[1]:
            return tokens
        return TokenTable(tokens.a if isinstance(tokens, TokenTable) else tokens, self.vh.shape[1])

    def cost(self, tokens: np.ndarray | TokenTable, runs: bool) -> int:
        """token_cost of these statistics."""
        table = self._table(tokens)
        if use_c():
            vh, rh, zr, cols = self._c()
            cost = _backend.lib.imij_enc_token_cost(vh, rh, zr, table.ptr(), self.vh.shape[1], cols, self.cols.size,
                                                   int(runs), _log2_ptr())
            if cost < 0:
                raise KERNEL_CODES.error(cost, kernel="imij_enc_token_cost", refused=ValueError)
            return int(cost)
        th = self.counts(table, runs)
        extra = int((table.a[1] * self.vh.sum(axis=0, dtype=np.int64)).sum())
        if runs:
            extra += int((table.a[3] * self.rh.sum(axis=0, dtype=np.int64)).sum())
        return int(row_costs(th).sum()) + (extra << COST_FIX)

    def counts(self, tokens: np.ndarray | TokenTable, runs: bool) -> np.ndarray:
        """token_counts of these statistics."""
        table = self._table(tokens)
        th = np.zeros((CLASSES, 256), dtype=np.int64)
        if use_c():
            ffi = _backend.ffi
            vh, rh, zr, cols = self._c()
            code = _backend.lib.imij_enc_token_counts(vh, rh, zr, table.ptr(), self.vh.shape[1], cols, self.cols.size,
                                                      int(runs), ffi.from_buffer("int64_t[]", th, require_writable=True))
            if code:
                raise KERNEL_CODES.error(code, kernel="imij_enc_token_counts", refused=ValueError)
            return th
        tokens_ = table.a
        for c in range(CLASSES):
            row = np.bincount(tokens_[0], weights=self.vh[c], minlength=256)
            if runs:
                row += np.bincount(tokens_[2], weights=self.rh[c], minlength=256)
            th[c] = row
        if not runs:
            th[:, 0] += self.zr.astype(np.int64)
        return th


def token_cost(vh: np.ndarray, rh: np.ndarray, zr: np.ndarray, tokens: np.ndarray, runs: bool) -> int:
    """imij_kernels.h imij_enc_token_cost: a slot's statistics (counts32 vh, rh (16, buckets), zr (16,))
    under one scheme's per-bucket tokens (4, 640: value token, its extra bits, run token, its
    extra bits; the first buckets read): the 16 classes' row_costs plus the extra bits, * 2^16."""
    return Prepared(vh, rh, zr).cost(tokens, runs)


def partition(th: np.ndarray) -> tuple[tuple[int, ...], np.ndarray, int] | None:
    """imij_kernels.h imij_enc_partition: modeling.partition_classes' split of the 16 classes of token
    counts th (16, 256) into at most 4 contexts (ctx_map, per-context counts as rows, estimate); None
    without the C backend (the caller's reference then)."""
    if not use_c():
        return None
    ffi, lib = _backend.ffi, _backend.lib
    th = np.ascontiguousarray(th, dtype=np.int64)
    ctx_map, hists = np.empty(CLASSES, np.uint8), np.empty((4, 256), np.int64)
    nctx, width = ffi.new("uint32_t *"), ffi.new("uint32_t *")
    est = lib.imij_enc_partition(ptr(ffi, "int64_t[]", th), _log2_ptr(),
                                 ptr(ffi, "uint8_t[]", ctx_map, True), ptr(ffi, "int64_t[]", hists, True), nctx, width)
    if est < 0:
        raise KERNEL_CODES.error(est, kernel="imij_enc_partition", refused=ValueError)
    return tuple(ctx_map.tolist()), hists[: nctx[0], : width[0]], int(est)


def best_precisions(H: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """imij_kernels.h imij_enc_best_tables: per row of counts H (ctxs, width <= 256; below 2^32, each
    row with a nonzero count) the precision lo ..= hi with the fewest table plus data bits, the
    last used symbol + 1, every symbol's (e, nb, mant) at that precision and the table the
    decoder normalizes from their weights (3.3; zero past the last used symbol)."""
    H = np.ascontiguousarray(H, dtype=np.int64)
    ctxs, width = H.shape
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        prec, last1 = np.empty(ctxs, dtype=U32), np.empty(ctxs, dtype=U32)
        codes, freq = np.zeros((ctxs, width, 3), dtype=U32), np.zeros((ctxs, width), dtype=U32)
        code = lib.imij_enc_best_tables(ptr(ffi, "int64_t[]", H), ctxs, width, lo, hi, _log2_ptr(),
                                        ptr(ffi, "uint32_t[]", prec, True), ptr(ffi, "uint32_t[]", last1, True),
                                        ptr(ffi, "uint32_t[]", codes, True), ptr(ffi, "uint32_t[]", freq, True))
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_best_tables", refused=ValueError)
        return prec, last1, codes, freq
    nz = H > 0
    last1 = (nz * np.arange(1, width + 1)).max(axis=1)  # per row: last used symbol + 1
    inside = np.arange(width)[None, :] < last1[:, None]
    e = np.frexp(H.astype(np.float64))[1].astype(np.int64)  # bit_length
    dz = np.diff(np.concatenate([np.zeros((ctxs, 1), dtype=np.int64), e], axis=1), axis=1)
    z = np.where(dz >= 0, 2 * dz, -2 * dz - 1) + 1
    gamma = ((2 * np.frexp(z.astype(np.float64))[1] - 1) * inside).sum(axis=1)
    P = np.arange(lo, hi + 1)[None, :, None]  # (1, precs, 1)
    E = e[:, None, :]
    nb = np.where(E > 1, np.minimum(E - 1, P - 1), 0)  # (ctx, precs, symbols)
    sh = np.maximum(E - 1 - nb, 0)
    Hx = H[:, None, :]
    mant = np.where(E > 1, (Hx >> sh) & ((1 << nb) - 1), 0)
    w = np.where(E == 0, 0, np.where(E == 1, 1, ((1 << nb) | mant) << sh))
    tbits = 11 + gamma[:, None] + (nb * inside[:, None, :]).sum(axis=2)
    tot = w.sum(axis=2, keepdims=True)
    f = np.where(w > 0, np.maximum(1, (w * M) // np.maximum(tot, 1)), 1)
    top = np.argmax(w, axis=2)
    excess = np.maximum(np.where(w > 0, f, 0).sum(axis=2) - M, 0)
    fi = np.take_along_axis(f, top[:, :, None], axis=2)[:, :, 0]
    np.put_along_axis(f, top[:, :, None], np.maximum(1, fi - excess)[:, :, None], axis=2)
    data = (Hx * (LOG2_FIX[M] - LOG2_FIX[f])).sum(axis=2)  # bits * 2^16, as row_costs
    best = np.argmin((tbits << COST_FIX) + data, axis=1)
    at = np.arange(ctxs)
    codes = np.stack([e, nb[at, best], mant[at, best]], axis=2) * inside[:, :, None]
    freq = np.zeros((ctxs, width), dtype=np.int64)
    for c in range(ctxs):
        freq[c, : last1[c]] = normalize(w[c, best[c], : last1[c]].tolist())
    return best + lo, last1, codes, freq


def token_counts(vh: np.ndarray, rh: np.ndarray, zr: np.ndarray, tokens: np.ndarray, runs: bool) -> np.ndarray:
    """(16, 256) token counts per class of a slot's statistics under per-bucket tokens (3.2), a
    class at a time (float sums of integers below 2^53: exact; no whole-array float copies);
    imij_kernels.h imij_enc_token_counts on the C backend."""
    return Prepared(vh, rh, zr).counts(tokens, runs)
