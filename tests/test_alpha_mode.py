"""The writer's alpha mode (1.0 header field) on every image of a file: pages and sequence items
keep their own headers (1.3), so each declares it; previews describe the image's pixels (1.1)."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins

RGBA = np.random.default_rng(2).integers(0, 256, (6, 8, 4), dtype=np.uint8)
GRAY_ALPHA = np.random.default_rng(3).integers(0, 256, (5, 7, 2), dtype=np.uint8)
RGB = np.random.default_rng(4).integers(0, 256, (4, 9, 3), dtype=np.uint8)


def _declared(data: bytes) -> list[tuple[int, int]]:
    """(what the reader reports, what the image's own header says) for every image of ``data``."""
    with imij_plugins.open(data) as f:
        return [(f.image_info(i).alpha_mode, f.page(i).header.alpha_mode) for i in range(f.n_frames)]


@pytest.mark.parametrize("alpha_mode", [1, 2, 3])
def test_every_mixed_page_with_alpha_declares_the_files_alpha_mode(alpha_mode):
    data = imij_plugins.encode([RGBA, GRAY_ALPHA, RGB], kind="pages", alpha_mode=alpha_mode)
    assert imij_plugins.open(data).kind == "mixed pages"
    # a page without an alpha slot declares straight: 1.0 allows 2 and 3 only with one
    assert _declared(data) == [(alpha_mode, alpha_mode), (alpha_mode, alpha_mode), (0, 0)]
    for index, page in enumerate([RGBA, GRAY_ALPHA, RGB]):
        assert np.array_equal(imij_plugins.read(data, index), page)


def test_uniform_pages_declare_the_alpha_mode_in_every_header():
    data = imij_plugins.encode([RGBA, RGBA[::-1].copy()], kind="pages", alpha_mode=1)
    assert imij_plugins.open(data).kind == "pages"
    assert _declared(data) == [(1, 1), (1, 1)]


@pytest.mark.parametrize("presentation", ["pages", "animation"])
def test_sequence_items_declare_the_files_alpha_mode(presentation):
    """Animation items must share their ImageInfo, alpha mode included (1.3 kind 4): a file whose
    later items said straight would be Corrupt."""
    data = imij_plugins.encode([RGBA, RGBA[::-1].copy()], kind="sequence", presentation=presentation, alpha_mode=1)
    assert _declared(data) == [(1, 1), (1, 1)]


def test_animation_frames_take_the_outer_headers_alpha_mode():
    data = imij_plugins.encode([RGBA, RGBA[::-1].copy()], kind="animation", alpha_mode=1)
    with imij_plugins.open(data) as f:
        assert [f.image_info(i).alpha_mode for i in range(f.n_frames)] == [1, 1]


@pytest.mark.parametrize("alpha_mode", [0, 1, 3])
def test_previews_declare_the_images_alpha_mode(alpha_mode):
    image = np.repeat(np.repeat(RGBA, 4, axis=0), 4, axis=1)
    with imij_plugins.open(imij_plugins.encode(image, alpha_mode=alpha_mode, previews=(4,))) as f:
        (preview,) = f.previews()
        assert preview.image_info().alpha_mode == alpha_mode
        assert np.array_equal(preview.read(), RGBA)


def test_padding_on_an_image_without_alpha_is_refused():
    with pytest.raises(ValueError, match="alpha_mode 3"):
        imij_plugins.encode(RGB, alpha_mode=3)
