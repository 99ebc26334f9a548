"""The context classes (3.1) of residuals below 2^16 at ctx_shift 0, which csrc/encode.c's
row_classes computes 32 positions at a time on the SIMD path (the lane starts and the positions
past the last 32 apart), are the scalar path's and the Python reference's: the statistics
(imij_enc_stats, with and without the cross context) and the stream (imij_enc_stream, whole rows
and rows wider than its 4096-column segments) agree on every path, for widths next to multiples
of 32 and lane starts inside and at the edges of the 32-position groups."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import stats
from imij_plugins.payload.entropy.modeling import SlotStats, choose_model, effort_of
from imij_plugins.payload.entropy.streams import stream

from .backends import NEEDS_C
from .test_kernel_paths import paths  # noqa: F401 - the fixture
from .test_stream_paths import _on_paths


@pytest.fixture
def lib(paths):  # noqa: F811 - the fixture imported above
    """The C kernels; ``paths`` restores the path in use afterwards."""
    return paths


def _residuals(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Values of every class: small ones, zero stretches, and some up to 2^16 - 1 (class 15)."""
    u = rng.integers(0, 1 << rng.integers(1, 17, (h, w)), dtype=np.int64).astype(np.uint16)
    u[rng.random((h, w)) < 0.3] = 0
    u[rng.random((h, w)) < 0.02] = 65535
    return u


def _per_path(lib, fn) -> list:
    """fn's result on the scalar path, then on each SIMD path this CPU has, then the reference's."""
    out = _on_paths(lib, fn)
    with _backend.use("python"):
        out.append(fn())
    return out


def _same_counts(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@NEEDS_C
@pytest.mark.parametrize("w", [1, 31, 32, 33, 64, 65, 97, 130])
@pytest.mark.parametrize("lanes", [1, 3, 16])
@pytest.mark.parametrize("cross", [False, True])
def test_statistics_classes_agree_on_every_path(lib, w, lanes, cross):
    rng = np.random.default_rng(w * 97 + lanes * 2 + cross)
    h = int(rng.integers(1, 6))
    u = _residuals(rng, h, w)
    u0 = _residuals(rng, h, w) if cross else None
    for run_min in (0, 4):
        outs = _per_path(lib, lambda: stats(u, u0, lanes, 0, run_min))
        for plain, xs in outs[1:]:
            assert _same_counts(plain, outs[0][0])
            assert (xs is None) == (outs[0][1] is None)
            assert xs is None or _same_counts(xs, outs[0][1])


@NEEDS_C
@pytest.mark.parametrize("h, w, lanes", [(3, 70, 3), (5, 200, 16), (2, 4200, 16), (1, 4133, 5)])
def test_stream_classes_agree_on_every_path(lib, h, w, lanes):
    """Rows up to 4096 columns take their classes at once, wider ones per block of lane columns."""
    rng = np.random.default_rng(h * w + lanes)
    u = _residuals(rng, h, w)
    u0 = _residuals(rng, h, w)
    with _backend.use("c"):
        plain, xs = stats(u, u0, lanes, 0, 4)
    for counts, cross in ((plain, False), (xs, True)):  # each model from its own classes' counts
        model = replace(choose_model({False: SlotStats(*counts)}, 16, 0, effort_of(5)).enc, cross=cross)
        outs = _per_path(lib, lambda: stream(u, u0, lanes, model))
        assert all(o == outs[0] for o in outs[1:])
