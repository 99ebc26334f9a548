"""imij_plugins.encode / write: codec choice, effort, near-lossless bounds and pSUM over them."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins

RNG = np.random.default_rng(7)
PHOTO = np.cumsum(RNG.integers(-3, 4, (48, 64, 3)), axis=1).clip(0, 255).astype(np.uint8)


def test_default_codec_is_entropy_and_quick_is_a_choice():
    entropy = imij_plugins.open(imij_plugins.encode(PHOTO))
    quick = imij_plugins.open(imij_plugins.encode(PHOTO, codec="quick"))
    assert "quick_pixels" not in entropy.features and "quick_pixels" in quick.features
    assert (entropy.read() == PHOTO).all() and (quick.read() == PHOTO).all()
    with pytest.raises(ValueError, match="codec"):
        imij_plugins.encode(PHOTO, codec="png")


@pytest.mark.parametrize("effort", [1, 5, 9])
def test_effort_levels_round_trip(effort):
    data = imij_plugins.encode(PHOTO, effort=effort)
    assert (imij_plugins.read(data) == PHOTO).all()
    with pytest.raises(ValueError, match="effort"):
        imij_plugins.encode(PHOTO, effort=10)


def test_max_error_needs_the_entropy_codec():
    with pytest.raises(ValueError, match="max_error"):
        imij_plugins.encode(PHOTO, codec="quick", max_error=2)


@pytest.mark.parametrize("kind", ["animation", "pages", "sequence"])
def test_near_lossless_frames_stay_in_bound_and_their_digests_are_of_the_output(kind):
    shifted = np.roll(PHOTO, 5, axis=1)
    frames = [PHOTO, shifted, PHOTO if kind == "animation" else PHOTO[:20]]
    data = imij_plugins.encode(frames, kind=kind, presentation="pages", max_error=3, pixel_checksum=True)
    f = imij_plugins.open(data)
    assert "near_lossless" in f.features
    for i, source in enumerate(frames):
        out = f.read(i)
        assert np.abs(out.astype(int) - source.astype(int)).max() <= 3
        assert f.bitmap_status(i) == "verified"


def test_max_error_zero_is_lossless_and_declares_no_bound():
    f = imij_plugins.open(imij_plugins.encode(PHOTO, max_error=0))
    assert "near_lossless" not in f.features and (f.read() == PHOTO).all()
