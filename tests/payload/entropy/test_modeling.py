"""The model chooser's estimate kernels (3.3, 5): row costs, a slot's cost under a scheme, the
tables' precisions and the decoder's normalization, C against the numpy reference (integers,
so both choose the same models), hand-computed values and the exact class partition."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy import models
from imij_plugins.payload.entropy.context_stats import BUCKETS, CLASSES
from imij_plugins.payload.entropy.estimate import (
    COST_FIX,
    LOG2_FIX,
    Prepared,
    best_precisions,
    row_costs,
    token_cost,
    token_counts,
)
from imij_plugins.payload.entropy.modeling import bucket_tokens, partition_classes
from imij_plugins.payload.entropy.tokens import valid_parameters

from .backends import NEEDS_C, both

FIX = 1 << COST_FIX


def _l(f: int) -> int:
    return round(math.log2(f) * FIX)


def _counts(rng, rows: int, width: int, big: bool = False) -> np.ndarray:
    top = 1 << (40 if big else 12)
    h = rng.integers(0, top, (rows, width), dtype=np.int64) >> rng.integers(0, 40 if big else 12, (rows, width))
    h[rng.random((rows, width)) < 0.6] = 0
    if rows > 1:
        h[rng.integers(0, rows)] = 0  # an empty row costs 0
    return h


def test_row_cost_by_hand():
    """Counts (3, 1): f = (768, 256) sum to M, no excess; 2 symbols used, the last at 1."""
    h = np.array([[3, 1, 0, 0]])
    want = 3 * (_l(1024) - _l(768)) + (_l(1024) - _l(256)) + ((11 + 6 * 2 + 2 * 2) << COST_FIX)
    for backend in _backend.available():
        with _backend.use(backend):
            assert row_costs(h).tolist() == [want]


def test_row_cost_excess_by_hand():
    """Counts (2000, 1, 1, 1, 1): f = max(1, floor(h * M / total)) = (1021, 1, 1, 1, 1) sum to
    1025, so the commonest gives up 1 at its count."""
    h = np.array([[2000, 1, 1, 1, 1]])
    f0 = 2000 * 1024 // 2004
    excess = f0 + 4 - 1024
    assert excess == 1
    want = 2000 * (_l(1024) - _l(f0)) + 4 * _l(1024) + 2000 * (_l(f0) - _l(f0 - excess))
    want += (11 + 6 * 5 + 2 * 5) << COST_FIX
    for backend in _backend.available():
        with _backend.use(backend):
            assert row_costs(h).tolist() == [want]


@NEEDS_C
@pytest.mark.parametrize("seed", range(6))
def test_row_costs_agree(seed):
    rng = np.random.default_rng(seed)
    for width in (1, 7, 256):
        h = _counts(rng, 40, width, big=seed % 2 == 1)
        x, y = both(row_costs, h)
        assert x.tolist() == y.tolist()


@NEEDS_C
@pytest.mark.parametrize("n", [1, 8, 12, 16, 32])
def test_token_cost_agrees(n):
    rng = np.random.default_rng(n)
    vh = _counts(rng, CLASSES, BUCKETS).reshape(CLASSES, BUCKETS)
    rh = _counts(rng, CLASSES, BUCKETS).reshape(CLASSES, BUCKETS)
    zr = rng.integers(0, 1 << 20, CLASSES).astype(np.int64)
    limit = 1 << min(n, 31)
    reach = np.array([b < 256 and b < limit or b >= 256 for b in range(BUCKETS)])
    vh[:, ~reach] = 0
    _kernels_agree(vh, rh, zr, n, list(valid_parameters(n))[:: max(1, len(valid_parameters(n)) // 6)])


def _kernels_agree(vh, rh, zr, n: int, schemes) -> None:
    """token_cost and token_counts: C and the reference agree under each (k, m), with and without runs."""
    for k, m in schemes:
        tokens = bucket_tokens(n, k, m)
        for runs in (True, False):
            x, y = both(token_cost, vh, rh, zr, tokens, runs)
            assert x == y
            x, y = both(token_counts, vh, rh, zr, tokens, runs)
            assert np.array_equal(x, y)


@NEEDS_C
@pytest.mark.parametrize("buckets", [BUCKETS, 300])
@pytest.mark.parametrize("filled", [0, 1, 37])
def test_token_cost_agrees_on_few_filled_buckets(buckets, filled):
    """A small image's statistics fill few buckets, spread over the range: the C kernels read only
    those (Prepared.cols), the reference every bucket, the same results."""
    rng = np.random.default_rng(filled + buckets)
    vh = _counts(rng, CLASSES, buckets)
    rh = _counts(rng, CLASSES, buckets)
    cols = np.sort(rng.choice(buckets, filled, replace=False))
    empty = np.setdiff1d(np.arange(buckets), cols)
    vh[:, empty] = rh[:, empty] = 0
    rh[5, cols] += 1  # every listed bucket has a count
    zr = rng.integers(0, 1 << 20, CLASSES).astype(np.int64)
    assert Prepared(vh, rh, zr).cols.tolist() == cols.tolist()
    _kernels_agree(vh, rh, zr, 16, list(valid_parameters(16))[::7])


@NEEDS_C
def test_token_kernels_read_the_listed_buckets_only():
    """imij_enc_token_cost / _counts ignore the counts of buckets not in cols (the reference on
    the counts zeroed there), and refuse cols not ascending or not below buckets."""
    ffi, lib = _backend.ffi, _backend.lib
    rng = np.random.default_rng(7)
    vh, rh = (_counts(rng, CLASSES, BUCKETS).astype(np.uint32) for _ in range(2))
    zr = rng.integers(0, 1 << 20, CLASSES).astype(np.uint32)
    tokens = np.ascontiguousarray(bucket_tokens(16, 3, 1))
    th = np.zeros((CLASSES, 256), dtype=np.int64)
    args = [ffi.from_buffer("uint32_t[]", a) for a in (vh, rh, zr)] + [ffi.from_buffer("int64_t[]", tokens)]
    out, log2 = ffi.from_buffer("int64_t[]", th, require_writable=True), ffi.from_buffer("int64_t[]", LOG2_FIX)

    def kernels(cols: list[int], runs: int) -> tuple[int, int]:
        c = ffi.new("uint32_t[]", cols or [0])
        return (lib.imij_enc_token_cost(*args, BUCKETS, c, len(cols), runs, log2),
                lib.imij_enc_token_counts(*args, BUCKETS, c, len(cols), runs, out))

    for cols in ([], [0, 5, 300, BUCKETS - 1], list(range(BUCKETS))):
        cut_v, cut_r = np.zeros_like(vh), np.zeros_like(rh)
        cut_v[:, cols], cut_r[:, cols] = vh[:, cols], rh[:, cols]
        for runs in (True, False):
            with _backend.use("python"):
                want, want_th = token_cost(cut_v, cut_r, zr, tokens, runs), token_counts(cut_v, cut_r, zr, tokens, runs)
            assert kernels(cols, runs) == (want, 0)
            assert np.array_equal(th, want_th)
    for bad in ([0, BUCKETS], [5, 5], [6, 5], list(range(BUCKETS)) + [0]):
        assert kernels(bad, 1) == (lib.IMIJ_E_ARGS, lib.IMIJ_E_ARGS)


@NEEDS_C
@pytest.mark.parametrize("seed", range(6))
def test_best_precisions_agree(seed):
    rng = np.random.default_rng(seed)
    for ctxs, width in ((1, 1), (4, 37), (3, 256)):
        H = _counts(rng, ctxs, width)
        if seed % 2:
            H = H << rng.integers(0, 20)
        H[np.arange(ctxs), rng.integers(0, width, ctxs)] |= 1  # every row used
        H[0, -1] |= 1  # and the last symbol (rows may end before it)
        for lo, hi in ((1, 8), (3, 7), (5, 5)):
            x, y = both(best_precisions, H, lo, hi)
            assert [a.tolist() for a in x] == [b.tolist() for b in y]


@NEEDS_C
def test_estimate_kernels_refuse_bad_arguments():
    with _backend.use("c"):
        with pytest.raises(ValueError):
            row_costs(np.array([[3, -1]]))
        with pytest.raises(ValueError):
            row_costs(np.ones((1, 257), dtype=np.int64))
        with pytest.raises(ValueError):
            best_precisions(np.zeros((1, 4), dtype=np.int64), 1, 8)  # an unused row
        with pytest.raises(ValueError):
            best_precisions(np.ones((1, 4), dtype=np.int64), 0, 8)
        with pytest.raises(ValueError):
            best_precisions(np.full((1, 4), 1 << 32, dtype=np.int64), 1, 8)
        tokens = bucket_tokens(8, 3, 1).copy()
        tokens[0, 5] = 256
        z = np.zeros((CLASSES, BUCKETS), dtype=np.int64)
        with pytest.raises(ValueError):
            token_cost(z, z, np.zeros(CLASSES, dtype=np.int64), tokens, True)
        with pytest.raises(ValueError):
            token_counts(z, z, np.zeros(CLASSES, dtype=np.int64), tokens, True)


@NEEDS_C
@pytest.mark.parametrize("seed", range(4))
def test_c_normalization_is_the_references(seed):
    """csrc/models.c's normalization (the C decoder's, and the tables imij_enc_best_tables makes)
    is 3.3's (models.normalize) for any weights below 2^32."""
    ffi, lib = _backend.ffi, _backend.lib
    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(1, 257))
        w = (rng.integers(0, 1 << 32, n, dtype=np.uint64) >> rng.integers(0, 32, n).astype(np.uint64)).astype(np.uint32)
        w[rng.random(n) < 0.5] = 0
        w[int(rng.integers(0, n))] |= 1
        freq = np.zeros(n, dtype=np.uint32)
        assert lib.imij_normalize_table(ffi.from_buffer("uint32_t[]", w), n,
                                        ffi.from_buffer("uint32_t[]", freq, require_writable=True)) == 0
        assert freq.tolist() == models.normalize(w.tolist())


def test_partition_is_the_best_split():
    """partition_classes against every split of the used classes into at most 4 ranges."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        th = np.zeros((CLASSES, 256), dtype=np.int64)
        used = sorted(rng.choice(CLASSES, 7, replace=False).tolist())
        for c in used:
            th[c, : rng.integers(2, 40)] = rng.integers(0, 5000, 1) >> rng.integers(0, 12, 1)
            th[c, 0] += 1
        _, _, est = partition_classes(th)
        g = len(used)
        best = None
        for k in range(1, 5):
            for cuts in itertools.combinations(range(1, g), k - 1):
                bounds = list(zip((0, *cuts), (*cuts, g)))
                rows = np.array([th[used[i:j]].sum(axis=0) for i, j in bounds])
                cost = int(row_costs(rows).sum())
                best = cost if best is None else min(best, cost)
        assert est == best


def _partition_cases(rng):
    """Token counts of 0 to 16 used classes: sparse and dense rows, equal rows (ties between
    splits), a single symbol, a few symbols far apart (a small image's) and sums up to 2^40 (an
    image of 2^40 positions)."""
    yield np.zeros((CLASSES, 256), dtype=np.int64)
    for _ in range(6):
        th = np.zeros((CLASSES, 256), dtype=np.int64)
        th[np.ix_([2, 3, 9, 15], [0, 17, 200, 255])] = rng.integers(0, 5, (4, 4))
        th[2, 200] += 1
        yield th
    for _ in range(40):
        th = np.zeros((CLASSES, 256), dtype=np.int64)
        used = rng.choice(CLASSES, int(rng.integers(1, CLASSES + 1)), replace=False)
        width = int(rng.integers(1, 257))
        th[used, :width] = _counts(rng, len(used), width) << (16 if rng.random() < 0.2 else 0)
        th[used, int(rng.integers(0, width))] += 1  # every chosen class used
        if rng.random() < 0.3:
            th[used] = th[used[0]]  # equal rows: every split of them ties
        yield th


@NEEDS_C
def test_partition_kernel_is_the_reference():
    """imij_enc_partition (C) gives partition_classes' reference split: the same ctx_map, the
    same per-context counts and the same estimate, ties included."""
    for th in _partition_cases(np.random.default_rng(11)):
        (cmap, chists, cest), (pmap, phists, pest) = both(partition_classes, th)
        assert (cmap, cest) == (pmap, pest)
        assert len(chists) == len(phists)
        for a, b in zip(chists, phists):
            assert a.tolist() == b.tolist()


@NEEDS_C
def test_partition_kernel_rejects_negative_counts():
    th = np.zeros((CLASSES, 256), dtype=np.int64)
    th[3, 5] = -1
    with _backend.use("c"), pytest.raises(ValueError):
        partition_classes(th)
