"""Built-in sample images, generated on the fly (the demo and examples use them; no data files)."""

from __future__ import annotations

import numpy as np


def photo_like(height: int = 384, width: int = 512) -> np.ndarray:
    """An 8-bit RGB image with smooth gradients, soft shapes and mild noise, like a photo."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    r = 128 + 100 * np.sin(x / 47.0) * np.cos(y / 61.0)
    g = 128 + 90 * np.sin((x + y) / 83.0)
    b = 255 * (x / width) * (1 - y / height) + 40 * np.exp(-(((x - width / 2) ** 2 + (y - height / 2) ** 2) / 8000))
    noise = np.random.default_rng(7).normal(0, 3, (height, width, 3))
    rgb = np.stack([r, g, b], axis=-1) + noise
    return np.clip(rgb, 0, 255).astype(np.uint8)


def graphic(height: int = 384, width: int = 512) -> np.ndarray:
    """An 8-bit RGBA image of flat colour blocks, stripes and text-like marks, like a screenshot."""
    img = np.zeros((height, width, 4), np.uint8)
    img[..., 3] = 255
    img[:, :, :3] = (240, 240, 245)
    img[:32, :, :3] = (40, 60, 120)
    img[32:, :96, :3] = (220, 225, 230)
    rng = np.random.default_rng(11)
    for row in range(48, height - 16, 18):
        for col in range(112, width - 40, 9):
            if rng.random() < 0.7:
                img[row : row + 9, col : col + 6, :3] = (30, 30, 30)
    img[200:300, 300:460, :3] = (200, 80, 60)
    img[200:300, 300:460, 3] = 200
    return img


def depth_map(height: int = 256, width: int = 256) -> np.ndarray:
    """A 16-bit grayscale image holding 12-bit values, like a depth sensor or microscope frame."""
    y, x = np.mgrid[0:height, 0:width]
    return ((np.hypot(x - width / 2, y - height / 2) * 23 + x * 3) % 4096).astype(np.uint16)


def float_field(height: int = 256, width: int = 256) -> np.ndarray:
    """A 32-bit float single-channel field with a NaN and a negative zero, like science data."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    field = np.sin(x / 19) * np.cos(y / 23) * 1000
    field[0, 0] = np.nan
    field[0, 1] = -0.0
    return field.astype(np.float32)


SAMPLES = {
    "photo_rgb8": photo_like,
    "graphic_rgba8": graphic,
    "depth_gray16": depth_map,
    "field_f32": float_field,
}
