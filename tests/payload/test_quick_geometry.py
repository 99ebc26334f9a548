"""The quick writer's default unit geometry (2.13 units decode in parallel): a quarter of the
image per unit within QUICK_UNIT_PIXELS, stripes of even heights; explicit options win."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins.payload.quick.writer import QUICK_UNIT_PIXELS, quick_geometry


@pytest.mark.parametrize(
    "width, height, stripe_rows, units",
    [
        (500, 500, 125, 4),  # a quarter megapixel photo: four units of a quarter each
        (512, 512, 128, 4),
        (451, 300, 75, 4),
        (256, 256, 128, 2),  # small: units of at least 2^15 pixels
        (2268, 1512, 56, 27),  # large: units of at most about 2^17 pixels
        (100, 7, 7, 1),
        (1000, 20, 20, 1),  # at least 16 rows
    ],
)
def test_quick_default_geometry(width, height, stripe_rows, units):
    geo = quick_geometry(width, height, None, None)
    assert (geo.stripe_rows, geo.unit_count, geo.group_cols) == (stripe_rows, units, 0)
    if units > 1:
        low, high = QUICK_UNIT_PIXELS
        assert geo.stripe_rows * width <= high + width  # within one row of the bound
        assert geo.stripe_rows * width >= min(low, width * height // units)


def test_explicit_options_and_the_default_rule_are_kept():
    assert quick_geometry(500, 500, 10, 100).unit_count == 50 * 5
    assert quick_geometry(9000, 300, None, None).group_cols == 2048


def test_quick_files_get_the_units():
    image = np.random.default_rng(0).integers(0, 256, (500, 500, 3), dtype=np.uint8)
    data = imij_plugins.encode(image, codec="quick")
    assert imij_plugins.encode(image, codec="quick", threads=1) == data
    np.testing.assert_array_equal(imij_plugins.read(data, threads=2), image)
    with imij_plugins.open(data) as f:
        assert f.payload().head.geometry.stripe_rows == 125
