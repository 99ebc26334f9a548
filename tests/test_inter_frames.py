"""Animations written with inter frames (1.3 presence bit 0, section 4's predictors 7-9): smaller
than without, decoded equal on both backends, and the frame rules the writer follows."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins import _backend
from imij_plugins.payload.entropy import encoder


def _animation(kind: str, frames: int = 5) -> list[np.ndarray]:
    """A noisy smooth RGB scene; each frame brightens a region and/or shifts another by a pixel."""
    rng = np.random.default_rng(1)
    y, x = np.mgrid[0:90, 0:120]
    base = ((np.sin(x / 9.0) + np.cos(y / 7.0)) * 60 + 128 + rng.normal(0, 6, x.shape)).clip(0, 255)
    out = [np.stack([base, np.roll(base, 3, 1), base[::-1]], -1).astype(np.uint8)]
    for _ in range(frames - 1):
        f = out[-1].copy()
        if kind in ("brighten", "both"):
            f[15:80, 20:110] = np.clip(f[15:80, 20:110].astype(int) + 3, 0, 255)
        if kind in ("shift", "both"):
            f[5:40, 5:60] = np.roll(f[5:40, 5:60], 1, axis=1)
        if kind == "whole":
            f = np.clip(f.astype(int) + 2, 0, 255).astype(np.uint8)
        out.append(f)
    return out


def _without_inter(frames, monkeypatch, **options) -> bytes:
    with monkeypatch.context() as m:
        m.setattr(encoder, "_reference_planes", lambda *a: None)
        return imij_plugins.encode(frames, **options)


@pytest.mark.parametrize("kind", ["brighten", "both", "whole"])
def test_inter_frames_are_smaller_and_decode_equal(kind, monkeypatch):
    frames = _animation(kind)
    data = imij_plugins.encode(frames)
    assert len(data) < 0.8 * len(_without_inter(frames, monkeypatch))
    for backend in _backend.available():
        with _backend.use(backend):
            f = imij_plugins.open(data)
            assert [np.array_equal(f.read(i), frame) for i, frame in enumerate(frames)] == [True] * len(frames)
    f = imij_plugins.open(data)
    assert all(f.frame_info(i).uses_previous for i in range(1, len(frames)))


def test_bytes_do_not_depend_on_backend_or_threads():
    frames = _animation("both", 3)
    data = imij_plugins.encode(frames, threads=1)
    assert imij_plugins.encode(frames, threads=4) == data
    with _backend.use("python"):
        assert imij_plugins.encode(frames, threads=2) == data


def test_a_whole_canvas_frame_stays_intra_unless_inter_is_smaller():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (32, 40, 3), dtype=np.uint8)  # noise: no help as a reference
    b = np.broadcast_to((np.arange(40, dtype=np.uint8) * 3)[None, :, None], (32, 40, 3)).copy()
    f = imij_plugins.open(imij_plugins.encode([a, b]))
    assert not f.frame_info(1).uses_previous
    assert np.array_equal(f.read(1), b)


def test_near_lossless_animations_stay_without_inter_predictors():
    frames = _animation("brighten", 3)
    data = imij_plugins.encode(frames, max_error=2)
    f = imij_plugins.open(data)
    for i, frame in enumerate(frames):
        assert np.abs(f.read(i).astype(int) - frame).max() <= 2
