"""Box-average downscaling, for preview layers (pRVW, 1.1)."""

from __future__ import annotations

import numpy as np

_BLOCK_ROWS = 64  # output rows averaged at a time: the float64 copy stays a few MB for any image


def downscale(image: np.ndarray, factor: int) -> np.ndarray:
    """``image`` (H, W, C) reduced by ``factor`` on both axes: each output sample is the mean of
    its factor x factor block (edge blocks as far as the image goes), rounded half up for
    integers; 64-bit integers, which a float64 mean cannot hold exactly, take the block's first."""
    h, w, _ = image.shape
    if image.dtype.kind in "iu" and image.dtype.itemsize == 8:
        return np.ascontiguousarray(image[::factor, ::factor])
    xs = np.arange(0, w, factor)
    widths = np.diff(np.append(xs, w))
    out = np.empty((len(range(0, h, factor)), len(xs), image.shape[2]), image.dtype)
    for top in range(0, out.shape[0], _BLOCK_ROWS):
        rows = image[top * factor : (top + _BLOCK_ROWS) * factor]
        ys = np.arange(0, rows.shape[0], factor)
        sums = np.add.reduceat(np.add.reduceat(rows, ys, axis=0, dtype=np.float64), xs, axis=1)
        heights = np.diff(np.append(ys, rows.shape[0]))
        mean = sums / (heights[:, None, None] * widths[None, :, None])
        if image.dtype.kind != "f":
            info = np.iinfo(image.dtype)
            mean = np.clip(np.floor(mean + 0.5), info.min, info.max)
        out[top : top + len(ys)] = mean.astype(image.dtype)
    return out
