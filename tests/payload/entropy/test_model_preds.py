"""Row predictors by model cost (search.model_preds, encode.c imij_enc_model_preds) and the
encoder's use of them at effort 9 (encoder._refine): hand-built rows, the C kernel against its
Python reference, bucket costs from a model's tables, and the first choice kept when the models'
estimate does not improve."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy import encoder
from imij_plugins.payload.entropy.context_stats import BUCKETS, CLASSES
from imij_plugins.payload.entropy.encoder import EFFORTS, encode_tuned
from imij_plugins.payload.entropy.estimate import COST_FIX, LOG2_FIX
from imij_plugins.payload.entropy.modeling import (
    ABSENT_BITS,
    SlotStats,
    bucket_costs,
    bucket_tokens,
    choose_model,
    effort_of,
)
from imij_plugins.payload.entropy.models import M
from imij_plugins.payload.entropy.search import choose, costs, model_preds

from .backends import NEEDS_C, both
from .syntax_writer import decode_entropy_payload, header_for

FIX = 1 << COST_FIX
ZERO_MAP = np.zeros((1, CLASSES), dtype=np.uint8)


def _costs(cheap: int, dear: int | None = None) -> np.ndarray:
    """One slot's bucket costs: 8 bits each, bucket ``cheap`` 1 bit (and ``dear`` 20)."""
    c = np.full((1, 4, BUCKETS), 8 * FIX, dtype=np.uint32)
    c[:, :, cheap] = FIX
    if dear is not None:
        c[:, :, dear] = 20 * FIX
    return c


def _both_ways(*args) -> list[int]:
    a, b = both(model_preds, *args)
    assert a == b
    return a


# --- hand-built rows ----------------------------------------------------------------------------

# Row 1 repeats row 0: N (1) predicts it exactly, W (0) leaves differences of 5 (zigzag 10).
ROWS = np.array([[[0, 5, 10, 15], [0, 5, 10, 15]]], dtype=np.uint8)


@NEEDS_C
def test_a_repeated_row_takes_n_when_zeros_are_cheap():
    # u = 0 everywhere under N, and under 3, 4 and 5 too: ties go to the lowest id
    assert _both_ways(ROWS, [8], 1, 0, 0x7F, _costs(cheap=0), ZERO_MAP, [False]) == [0, 1]


@NEEDS_C
def test_the_tables_decide_not_the_bit_length():
    # zigzag(5) = 10 cheap and 0 dear: W's row (u = 0, 10, 10, 10: 20 + 3 x 1 bits) wins over
    # N's (0, 0, 0, 0: 4 x 20 bits), although the bit-length proxy prefers N
    assert _both_ways(ROWS, [8], 1, 0, 0x7F, _costs(cheap=10, dear=0), ZERO_MAP, [False]) == [0, 0]
    _, proxy, _ = choose(costs(ROWS, [8], 1, False, 0x7F, 1), 1)
    assert proxy == [0, 1]


@NEEDS_C
def test_only_the_masked_predictors_are_tried():
    assert _both_ways(ROWS, [8], 1, 0, 0b1110001, _costs(cheap=0), ZERO_MAP, [False]) == [0, 4]


@NEEDS_C
def test_contexts_select_the_table():
    # Row 0's u is 0, 10, 10, 10, so row 1's classes are 0 at x = 0 and 4 or 5 after it under
    # every predictor; sending classes 1..15 to context 1, where 0 is dear and 10 cheap, turns
    # the choice to W (1 + 3 x 1 bits against N's 1 + 3 x 20)
    costs = _costs(cheap=0)
    costs[0, 1, 0] = 20 * FIX
    costs[0, 1, 10] = FIX
    ctx = np.ones((1, CLASSES), dtype=np.uint8)
    ctx[0, 0] = 0
    assert _both_ways(ROWS, [8], 1, 0, 0x7F, costs, ctx, [False]) == [0, 0]
    assert _both_ways(ROWS, [8], 1, 0, 0x7F, costs, ZERO_MAP, [False]) == [0, 1]


@NEEDS_C
def test_one_row_has_only_w():
    assert _both_ways(ROWS[:, :1], [8], 1, 0, 0x7F, _costs(cheap=0), ZERO_MAP, [False]) == [0]


@NEEDS_C
@pytest.mark.parametrize("case", ["ctx 4", "depth 17", "mask 0", "mask 0x80", "mode 1 of one slot", "lanes 17"])
def test_bad_arguments_are_refused(case):
    planes, depths, lanes, mode, mask, ctx = ROWS, [8], 1, 0, 0x7F, ZERO_MAP.copy()
    if case == "ctx 4":
        ctx[0, 3] = 4
    elif case == "depth 17":
        planes, depths = ROWS.astype(np.uint32), [17]
    elif case == "mask 0":
        mask = 0
    elif case == "mask 0x80":
        mask = 0x80
    elif case == "mode 1 of one slot":
        mode = 1
    else:
        lanes = 17
    for backend in ("c", "python"):
        with _backend.use(backend), pytest.raises(ValueError):
            model_preds(planes, depths, lanes, mode, mask, _costs(cheap=0), ctx, [False])


# --- C against the reference ----------------------------------------------------------------------


@NEEDS_C
@pytest.mark.parametrize("seed", range(8))
def test_the_kernel_matches_its_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        S = int(rng.integers(1, 5))
        h, w = int(rng.integers(1, 10)), int(rng.integers(1, 50))
        n = int(rng.integers(1, 17))
        depths = [n] * S
        if S > 3:
            depths[3] = int(rng.integers(1, 17))
        planes = np.stack([rng.integers(0, 1 << d, (h, w)) for d in depths])
        if rng.random() < 0.5:  # smoother content, where the predictors differ more
            planes = np.cumsum(planes % 3, axis=2) % np.array([1 << d for d in depths])[:, None, None]
        planes = planes.astype(np.uint16 if n > 8 or max(depths) > 8 else np.uint8)
        mode = int(rng.integers(0, 4)) if S >= 3 else 0
        costs = rng.integers(0, 24 * FIX, (S, 4, BUCKETS)).astype(np.uint32)
        ctx = rng.integers(0, 4, (S, CLASSES)).astype(np.uint8)
        cross = [bool(rng.random() < 0.5) for _ in range(S)]
        _both_ways(planes, depths, int(rng.integers(1, 17)), mode, int(rng.integers(1, 128)), costs, ctx, cross)


# --- bucket costs ---------------------------------------------------------------------------------


def test_bucket_costs_follow_the_tables():
    rng = np.random.default_rng(4)
    vh = np.zeros((CLASSES, BUCKETS), dtype=np.uint32)
    vh[3, :40] = rng.integers(1, 500, 40)
    vh[9, :300:7] = rng.integers(1, 50, 43)
    st = SlotStats(vh, np.zeros(CLASSES, np.uint32), np.zeros((CLASSES, BUCKETS), np.uint32))
    model = choose_model({False: st}, 10, 0, effort_of(9))
    got = bucket_costs(model)
    tok = bucket_tokens(10, model.scheme.k, model.scheme.m)
    for c in range(4):
        table = model.enc.freqs[min(c, len(model.enc.freqs) - 1)]
        for b in (0, 1, 39, 256, 300, 400):
            t, nb = int(tok[0, b]), int(tok[1, b])
            f = table[t] if t < len(table) else 0
            bits = LOG2_FIX[M] - LOG2_FIX[f] if f else ABSENT_BITS * FIX
            assert got[c, b] == bits + nb * FIX


# --- the encoder at effort 9 ------------------------------------------------------------------------


def _photo(rng, h=96, w=80) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 2 + y, x + 3 * y, 200 - x - y], axis=-1) + rng.normal(0, 6, (h, w, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


def _without_refine(monkeypatch) -> None:
    monkeypatch.setitem(EFFORTS, 9, replace(EFFORTS[9], refine=False))


def test_effort_9_refines_and_decodes(monkeypatch):
    img = _photo(np.random.default_rng(5))
    refined = encode_tuned(img, effort=9, stripe_rows=32)
    out = decode_entropy_payload(refined.payload, header_for(img, refined))
    assert np.array_equal(out.reshape(img.shape), img)
    assert encode_tuned(img, effort=9, stripe_rows=32, threads=2).payload == refined.payload
    _without_refine(monkeypatch)
    first = encode_tuned(img, effort=9, stripe_rows=32)
    assert len(refined.payload) < len(first.payload)


def test_the_first_choice_stays_when_the_estimate_does_not_improve(monkeypatch):
    img = _photo(np.random.default_rng(6))
    _without_refine(monkeypatch)
    first = encode_tuned(img, effort=9, stripe_rows=32).payload
    monkeypatch.undo()
    assert encode_tuned(img, effort=9, stripe_rows=32).payload != first  # refined
    monkeypatch.setattr(encoder, "_estimate", lambda models, pmodel: 0)  # refined models no better
    assert encode_tuned(img, effort=9, stripe_rows=32).payload == first


@NEEDS_C
def test_backends_refine_alike():
    img = _photo(np.random.default_rng(7), 40, 36)
    img[20:] = img[20:] // 64 * 64  # a few levels: palette stripes as well
    a, b = both(encode_tuned, img, effort=9, stripe_rows=8)
    assert a.payload == b.payload
