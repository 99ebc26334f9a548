"""Test images for remote reads."""

from __future__ import annotations

import numpy as np


def textured(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A gradient under noise: RGB that codes to about 2.25 bytes a pixel, like a noisy photograph."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = ((x + y) // 32)[..., None] + np.array([0, 40, 80])
    return ((base + rng.integers(0, 40, (height, width, 3))) % 256).astype(np.uint8)
