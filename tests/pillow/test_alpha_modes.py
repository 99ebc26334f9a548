"""The header's alpha mode (1.0) in Pillow: premultiplied alpha opens as RGBa/La and saves back as
premultiplied, undefined padding opens without the slot, opaque alpha opens as alpha."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import imij_plugins

from .helper import assert_image_equal, reopen, sample_image, save_bytes

STRAIGHT, PREMULTIPLIED, OPAQUE, PADDING = 0, 1, 2, 3


def _premultiplied(channels: int, dtype: type = np.uint8, seed: int = 7) -> np.ndarray:
    """Random premultiplied samples: every colour sample at most its pixel's alpha."""
    top = np.iinfo(dtype).max
    array = np.random.default_rng(seed).integers(0, top + 1, (6, 9, channels), dtype=dtype)
    array[0, 0, -1] = 0  # a transparent pixel
    array[0, 1, -1] = top // 2  # a half-transparent one
    array[..., :-1] = np.minimum(array[..., :-1], array[..., -1:])
    return array


def _stored_alpha_mode(data: bytes, index: int = 0) -> int:
    with imij_plugins.open(data) as f:
        return f.image_info(index).alpha_mode


@pytest.mark.parametrize(("channels", "mode", "straight"), [(4, "RGBa", "RGBA"), (2, "La", "LA")])
def test_premultiplied_alpha_opens_in_pillows_premultiplied_mode_exactly(channels, mode, straight):
    array = _premultiplied(channels)
    data = imij_plugins.encode(array, alpha_mode=PREMULTIPLIED)
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == mode
        assert im.info["imij_alpha_mode"] == PREMULTIPLIED
        assert np.array_equal(np.asarray(im).reshape(array.shape), array)
        # unpremultiplied as Pillow's TIFF reader unpacks associated alpha (raw mode "RGBa")
        expected = Image.frombytes(mode, im.size, array.tobytes()).convert(straight)
        assert_image_equal(im.convert(straight), expected)
    if mode == "RGBa":
        tiff_unpacked = Image.frombytes("RGBA", (array.shape[1], array.shape[0]), array.tobytes(), "raw", "RGBa")
        assert_image_equal(reopen(data).convert("RGBA"), tiff_unpacked)


def test_sixteen_bit_premultiplied_alpha_opens_as_rgba_premultiplied_from_the_high_byte():
    array = _premultiplied(4, np.uint16)
    data = imij_plugins.encode(array, alpha_mode=PREMULTIPLIED)
    with Image.open(io.BytesIO(data)) as im:
        assert (im.mode, im.info["imij_bit_depth"]) == ("RGBa", 16)
        shown = np.asarray(im)
        assert np.array_equal(shown, (array >> 8).astype(np.uint8))  # still premultiplied: colour <= alpha
        assert (shown[..., :3] <= shown[..., 3:]).all()
        assert np.array_equal(im.imij.read(), array)


@pytest.mark.parametrize(("channels", "mode"), [(4, "RGB"), (2, "L")])
def test_undefined_padding_opens_without_the_slot(channels, mode):
    array = np.random.default_rng(3).integers(0, 256, (5, 7, channels), dtype=np.uint8)
    data = imij_plugins.encode(array, alpha_mode=PADDING)
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == mode
        assert im.info["imij_alpha_mode"] == PADDING
        assert np.array_equal(np.asarray(im).reshape(5, 7, -1), array[..., :-1])
        assert np.array_equal(im.imij.read(), array)  # the padding is kept in the file


def test_sixteen_bit_padding_opens_as_rgb_from_the_high_byte():
    array = np.random.default_rng(4).integers(0, 65536, (5, 7, 4), dtype=np.uint16)
    with Image.open(io.BytesIO(imij_plugins.encode(array, alpha_mode=PADDING))) as im:
        assert im.mode == "RGB"
        assert np.array_equal(np.asarray(im), (array[..., :3] >> 8).astype(np.uint8))


@pytest.mark.parametrize(("channels", "mode"), [(4, "RGBA"), (2, "LA")])
def test_opaque_alpha_opens_as_alpha_with_its_declaration_in_info(channels, mode):
    array = np.full((4, 5, channels), 255, np.uint8)
    array[..., 0] = np.arange(20, dtype=np.uint8).reshape(4, 5)
    with Image.open(io.BytesIO(imij_plugins.encode(array, alpha_mode=OPAQUE))) as im:
        assert im.mode == mode
        assert im.info["imij_alpha_mode"] == OPAQUE
        assert np.array_equal(np.asarray(im).reshape(array.shape), array)


def test_straight_alpha_opens_as_rgba_without_an_alpha_mode_in_info():
    array = _premultiplied(4)
    with Image.open(io.BytesIO(imij_plugins.encode(array))) as im:
        assert im.mode == "RGBA"
        assert "imij_alpha_mode" not in im.info


@pytest.mark.parametrize("mode", ["RGBa", "La"])
def test_premultiplied_modes_save_as_premultiplied_alpha_unchanged(mode):
    source = sample_image("RGBA" if mode == "RGBa" else "LA").convert(mode)
    data = save_bytes(source)
    assert _stored_alpha_mode(data) == PREMULTIPLIED
    assert np.array_equal(imij_plugins.read(data).reshape(np.asarray(source).shape), np.asarray(source))
    out = reopen(data)
    assert_image_equal(out, source)
    straight = "RGBA" if mode == "RGBa" else "LA"
    assert_image_equal(out.convert(straight), source.convert(straight))


@pytest.mark.parametrize("mode", ["RGBA", "LA"])
def test_straight_modes_save_as_straight_alpha(mode):
    assert _stored_alpha_mode(save_bytes(sample_image(mode))) == STRAIGHT


def test_a_premultiplied_file_saved_again_stays_premultiplied():
    data = imij_plugins.encode(_premultiplied(4), alpha_mode=PREMULTIPLIED)
    again = save_bytes(reopen(data))
    assert _stored_alpha_mode(again) == PREMULTIPLIED
    assert np.array_equal(imij_plugins.read(again), imij_plugins.read(data))


def test_pages_of_premultiplied_and_opaque_images_keep_each_page_mode():
    pages = [sample_image("RGBa"), sample_image("RGB", (5, 4)), sample_image("La", (3, 8))]
    data = save_bytes(pages[0], save_all=True, append_images=pages[1:], pages=True)
    with Image.open(io.BytesIO(data)) as im:
        for index, page in enumerate(pages):
            im.seek(index)
            im.load()
            assert_image_equal(im, page, f"page {index}")


def test_pages_mixing_premultiplied_and_straight_alpha_are_refused():
    pages = [sample_image("RGBa"), sample_image("RGBA")]
    with pytest.raises(ValueError, match="premultiplied"):
        save_bytes(pages[0], save_all=True, append_images=pages[1:], pages=True)


def test_an_animation_of_premultiplied_frames_opens_premultiplied():
    frames = [sample_image("RGBa", seed=s) for s in (1, 2)]
    data = save_bytes(frames[0], save_all=True, append_images=frames[1:], duration=50)
    assert _stored_alpha_mode(data) == PREMULTIPLIED
    with Image.open(io.BytesIO(data)) as im:
        assert im.n_frames == 2
        for index, frame in enumerate(frames):
            im.seek(index)
            im.load()
            assert_image_equal(im, frame, f"frame {index}")


def test_mixed_pages_of_a_premultiplied_file_each_open_premultiplied():
    """Mixed pages read their alpha mode from their own headers (1.3)."""
    pages = [_premultiplied(4), _premultiplied(2, seed=8)]
    data = imij_plugins.encode(pages, kind="pages", alpha_mode=PREMULTIPLIED)
    with Image.open(io.BytesIO(data)) as im:
        assert im.info["imij_kind"] == "mixed pages"
        assert im.mode == "RGBa"
        im.seek(1)
        assert im.mode == "La"
        assert np.array_equal(np.asarray(im).reshape(pages[1].shape), pages[1])


def test_the_preview_of_a_premultiplied_image_opens_premultiplied():
    array = np.repeat(np.repeat(_premultiplied(4), 4, axis=0), 4, axis=1)
    data = imij_plugins.encode(array, alpha_mode=PREMULTIPLIED, previews=(4,))
    with Image.open(io.BytesIO(data)) as im:
        assert im.draft(None, (9, 6)) is not None
        assert im.mode == "RGBa" and im.size == (9, 6)
        im.load()
        assert np.array_equal(np.asarray(im), _premultiplied(4))  # the box average of equal 4x4 blocks
