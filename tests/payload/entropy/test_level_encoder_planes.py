"""The level kernels' encoder side (imij_level_counts / imij_level_encode) refuse a bilevel t plane
with a value above 1 wherever it is: also in the first row, which the coding pass (last row first)
would otherwise read as a template pixel before reaching it."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy.bilevel import bilevel_counts, bilevel_stream
from imij_plugins.payload.entropy.rans import Lanes

from .backends import NEEDS_C


@NEEDS_C
@pytest.mark.parametrize("at", [(0, 0), (0, 7), (5, 3), (11, 39)])
@pytest.mark.parametrize("lanes", [1, 3, 16])
def test_a_t_above_1_is_refused(at, lanes):
    rng = np.random.default_rng(7)
    t = (rng.random((12, 40)) < 0.4).astype(np.uint8)
    ln = Lanes.of(40, lanes)
    probs = np.full(1024, 512, np.int64)
    with _backend.use("c"):
        bilevel_counts(t, ln)  # the plane as given is fine
        assert bilevel_stream(t, ln, probs)
        t[at] = 2
        with pytest.raises(RuntimeError, match="kernel refused"):
            bilevel_counts(t, ln)
        with pytest.raises(RuntimeError, match="kernel refused"):
            bilevel_stream(t, ln, probs)
