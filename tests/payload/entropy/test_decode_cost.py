"""The decode-cost model and the bound it puts on efforts above the default (decode_cost.py)."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins.payload.entropy.decode_cost import BOUND, LEVEL, LEVEL_TWO, UNIT, LevelBudget, UnitCosts, lane_steps
from imij_plugins.payload.entropy.encoder import encode_tuned
from imij_plugins.payload.geometry import Geometry


def test_lane_steps_are_rows_times_lane_width():
    # 2.3: lane width ceil(gw / L); all lanes advance together
    assert lane_steps(100, 16, 6) == 16 * 17
    assert lane_steps(64, 10, 16) == 40
    assert lane_steps(5, 3, 16) == 3  # lanes past the width are empty, a step still costs one


def test_unit_costs_by_hand():
    costs = UnitCosts(Geometry(100, 40, 16, 0), lanes=6, slots=3)
    assert costs.regular(0) == UNIT + 3 * 16 * 17
    assert costs.regular(0, palette=True) == UNIT + 16 * 17
    assert costs.level(2) == UNIT + LEVEL * 8 * 17  # the last stripe: rows 32..39
    assert costs.level(2, two=True) == UNIT + LEVEL_TWO * 8 * 17
    assert costs.total([False, True, False], {2: False}) == costs.regular(0) + costs.regular(1, True) + costs.level(2)
    assert costs.total([False, False, False], {0: True}) == costs.level(0, True) + costs.regular(1) + costs.regular(2)
    assert costs.all_regular() == sum(costs.regular(i) for i in range(3))


def test_budget_keeps_most_bytes_per_cost_first():
    costs = UnitCosts(Geometry(64, 64, 16, 0), lanes=4, slots=1)  # four equal units
    extra = costs.level(0) - costs.regular(0)
    budget = LevelBudget(costs, [False] * 4, allowance=2.5 * extra)
    # units 1 and 3 save the most per (equal) cost; unit 0 and 2 tie: the lower index is kept first
    assert budget.over([(0, 10, False), (1, 50, False), (2, 10, False), (3, 40, False)]) == [0, 2]
    budget = LevelBudget(costs, [False] * 4, allowance=3 * extra)
    assert budget.over([(0, 10, False), (1, 50, False), (2, 10, False), (3, 40, False)]) == [2]
    assert LevelBudget(costs, [False] * 4, allowance=-1.0).over([(1, 5, False)]) == [1]
    # a two-valued stripe costs less than a regular one here: it is always kept
    assert LevelBudget(costs, [False] * 4, allowance=0.0).over([(1, 5, True), (2, 50, False)]) == [2]


def _text_like(height: int = 96, width: int = 256, seed: int = 3) -> np.ndarray:
    """Glyph-like strokes on a background shaded row by row (41 levels): the default effort codes
    it with predictors, and template stripes (2.14) code it about 40% smaller, at about 5 times
    the decode cost."""
    rng = np.random.default_rng(seed)
    img = np.repeat((200 + np.arange(height) * 40 // height)[:, None], width, 1).astype(np.uint8)
    for y in range(2, height - 10, 12):
        for x in range(0, width - 8, 7):
            img[y:y + 8, x:x + 5][rng.random((8, 5)) < 0.35] = 20
    return img


@pytest.mark.parametrize("effort", [6, 9])
def test_higher_efforts_stay_within_the_bound(effort):
    img = _text_like()
    default = encode_tuned(img, effort=5, threads=1)
    bounded = encode_tuned(img, effort=effort, threads=1)
    free = encode_tuned(img, effort=effort, threads=1, slow_decode=True)
    assert bounded.decode_cost <= BOUND * default.decode_cost
    assert len(bounded.payload) <= len(default.payload)
    # the image is one the level stripes code smaller, at a cost the bound does not allow
    assert len(free.payload) < len(bounded.payload)
    assert free.decode_cost > BOUND * default.decode_cost


def test_slow_decode_through_the_public_api(tmp_path):
    img = _text_like(seed=5)
    bounded = imij_plugins.encode(img, effort=9)
    free = imij_plugins.encode(img, effort=9, slow_decode=True)
    assert len(free) < len(bounded)
    for data in (bounded, free):
        assert np.array_equal(imij_plugins.read(data)[..., 0], img)
    with pytest.raises(ValueError, match="slow_decode"):
        imij_plugins.encode(img, slow_decode="yes")
