"""The stream writer's steps mixing every kind of lane: plain small values, zeros that start a run,
lanes inside a run, and values of 1024 and more (long tokens), so the C kernel's plain-lane loop
hands lanes to the general path and back within one step; its streams are the reference's."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import stats
from imij_plugins.payload.entropy.modeling import SlotStats, choose_model, effort_of
from imij_plugins.payload.entropy.streams import stream

from .backends import NEEDS_C, both


def _mixed(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Residuals whose columns alternate small values, zero runs and values up to 2^14."""
    u = rng.integers(1, 200, (h, w)).astype(np.uint16)
    kind = rng.integers(0, 4, w)
    u[:, kind == 1] = 0  # zero columns: runs within and across rows
    big = kind == 2
    u[:, big] = rng.integers(1024, 1 << 14, (h, int(big.sum())))
    u[rng.random((h, w)) < 0.2] = 0  # scattered zeros: short runs and single zeros
    return u


@NEEDS_C
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lanes", [1, 5, 16])
def test_mixed_lane_kinds_match_the_reference(seed, lanes):
    rng = np.random.default_rng(900 + seed)
    h, w = int(rng.integers(3, 30)), int(rng.integers(16, 200))
    u = _mixed(rng, h, w)
    u0 = rng.integers(0, 300, (h, w)).astype(np.uint16)
    with _backend.use("c"):
        plain, cross = stats(u, u0, lanes, 0, 4)
    for effort in (1, 5, 9):
        model = choose_model({False: SlotStats(*plain), True: SlotStats(*cross)}, 14, 0, effort_of(effort))
        a, b = both(stream, u, u0, lanes, model.enc)
        assert a == b
