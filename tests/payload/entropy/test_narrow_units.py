"""Narrow units (a few lanes: a 64-pixel-wide unit has 4) decode alike on the scalar path and on
every SIMD path: the AVX-512 steps gather only the entries of the step's lanes (4, 8 or 16) and
the intra predictors load each column's residuals ahead of the stores (csrc/entropy.c)."""

from __future__ import annotations

import numpy as np
import pytest

from .syntax_writer import EntropyOptions, UnitChoice, decode_entropy_payload, encode_entropy_payload, header_for
from .test_kernel_paths import _both, _same, paths  # noqa: F401 - the fixture

# (width, lanes): the lane counts around each gather width, a narrower last lane, and full ones
GEOMETRIES = [(64, 4), (61, 4), (48, 3), (20, 5), (128, 8), (125, 8), (72, 9), (40, 2)]


def _graphics(rng: np.random.Generator, height: int, width: int, channels: int) -> np.ndarray:
    """Flat areas, edges and noise: runs, small and large residuals, every token kind."""
    levels = rng.integers(0, 5, (height, width, channels)) * 60
    noisy = rng.random((height, width, 1)) < 0.3
    return np.where(noisy, rng.integers(0, 256, (height, width, channels)), levels).astype(np.uint8)


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("width, lanes", GEOMETRIES)
def test_narrow_units_agree_on_every_path(paths, channels, width, lanes):  # noqa: F811
    rng = np.random.default_rng(width * 16 + lanes + channels)
    img = _graphics(rng, 40, width, channels)
    for predictor in (None, 1, 4, 5, 6):
        unit = UnitChoice() if predictor is None else UnitChoice(predictors=predictor)
        enc = encode_entropy_payload(img, options=EntropyOptions(lanes=lanes, unit=unit))
        hdr = header_for(img, enc)
        scalar, simd = _both(paths, lambda: decode_entropy_payload(enc.payload, hdr))
        assert scalar[0] == "ok" and _same(scalar, simd), (width, lanes, predictor)
        assert np.array_equal(np.asarray(simd[1]).reshape(img.shape), img), (width, lanes, predictor)
