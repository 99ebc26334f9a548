"""Animations and pages: seek/tell, durations, loop, save_all, append_images."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageSequence, features

import imij_plugins

from .helper import PILLOW_VERSION, assert_image_equal, reopen, sample_image, save_bytes


def _moving_square(n: int = 5, mode: str = "RGB") -> list[Image.Image]:
    """Frames that differ in a small moving rectangle, so the writer stores changed rectangles."""
    frames = []
    for i in range(n):
        im = sample_image(mode, (24, 16), seed=1)
        im.paste(Image.new(mode, (5, 4), (200, 30 * i, 90)[: len(mode)] if mode != "L" else 30 * i), (3 * i, i))
        frames.append(im)
    return frames


def _save_all(frames: list[Image.Image], **params) -> bytes:
    return save_bytes(frames[0], save_all=True, append_images=frames[1:], **params)


def test_animation_seeks_forwards_and_backwards_to_the_frames_written():
    frames = _moving_square()
    with Image.open(io.BytesIO(_save_all(frames, duration=50))) as im:
        assert (im.n_frames, im.is_animated, im.info["imij_kind"]) == (5, True, "animation")
        for order in (range(5), reversed(range(5)), [3, 0, 4, 1, 1, 2]):
            for index in order:
                im.seek(index)
                assert im.tell() == index
                assert_image_equal(im, frames[index], f"frame {index}")


def test_seek_outside_the_sequence_raises_eoferror():
    with Image.open(io.BytesIO(_save_all(_moving_square(3)))) as im:
        with pytest.raises(EOFError):
            im.seek(3)
        with pytest.raises(EOFError):
            im.seek(-1)
        assert im.tell() == 0


def test_a_still_image_has_the_frame_attributes():
    with Image.open(io.BytesIO(save_bytes(sample_image("L")))) as im:
        assert (im.n_frames, im.is_animated, im.tell()) == (1, False, 0)
        assert "duration" not in im.info and "loop" not in im.info
        im.seek(0)
        with pytest.raises(EOFError):
            im.seek(1)


def test_durations_and_loop_round_trip():
    frames = _moving_square(4)
    data = _save_all(frames, duration=[100, 40, 1000 / 30, 250], loop=3)
    with Image.open(io.BytesIO(data)) as im:
        assert im.info["loop"] == 3
        durations, timestamps = [], []
        for frame in ImageSequence.Iterator(im):
            durations.append(frame.info["duration"])
            timestamps.append(frame.info["timestamp"])
    assert durations == pytest.approx([100, 40, 1000 / 30, 250])
    assert timestamps == pytest.approx([0, 100, 140, 140 + 1000 / 30])


def test_a_single_duration_applies_to_every_frame_and_loop_defaults_to_forever():
    with Image.open(io.BytesIO(_save_all(_moving_square(3), duration=80))) as im:
        assert im.info["loop"] == 0
        for index in range(3):
            im.seek(index)
            assert im.info["duration"] == 80


def test_loop_none_plays_once():
    with imij_plugins.open(_save_all(_moving_square(2), loop=None)) as f:
        assert f.loop_count == 1


def test_resaving_an_opened_animation_keeps_frames_durations_and_loop():
    frames = _moving_square(4)
    first = _save_all(frames, duration=[10, 20, 30, 40], loop=2)
    with Image.open(io.BytesIO(first)) as im:
        out = io.BytesIO()
        im.save(out, format="IMI", save_all=True)  # durations from each frame's info, as APNG
    with Image.open(io.BytesIO(out.getvalue())) as im:
        assert im.info["loop"] == 2
        for index, frame in enumerate(ImageSequence.Iterator(im)):
            assert frame.info["duration"] == pytest.approx(10 * (index + 1))
            assert_image_equal(frame, frames[index])


def test_wrong_number_of_durations_is_refused():
    with pytest.raises(ValueError, match="3 durations for 4 frames"):
        _save_all(_moving_square(4), duration=[1, 2, 3])


def test_save_all_restores_tell_of_every_image():
    first = Image.open(io.BytesIO(_save_all(_moving_square(3))))
    second = Image.open(io.BytesIO(_save_all(_moving_square(2))))
    with first, second:
        first.seek(2)
        second.seek(1)
        data = save_bytes(first, save_all=True, append_images=[second])
        assert (first.tell(), second.tell()) == (2, 1)
    with Image.open(io.BytesIO(data)) as im:
        assert im.n_frames == 5


@pytest.mark.skipif(PILLOW_VERSION < (11, 2), reason="Image.save picks save_all for append_images from Pillow 11.2.1")
def test_append_images_without_save_all_writes_every_frame():
    """Image.save picks the save_all handler when append_images is given (Image.py save)."""
    frames = _moving_square(3)
    with Image.open(io.BytesIO(save_bytes(frames[0], append_images=frames[1:]))) as im:
        assert im.n_frames == 3


def test_plain_save_of_a_multi_frame_image_writes_the_current_frame():
    frames = _moving_square(3)
    with Image.open(io.BytesIO(_save_all(frames))) as im:
        im.seek(1)
        data = save_bytes(im)
    out = reopen(data)
    assert_image_equal(out, frames[1])
    with imij_plugins.open(data) as f:
        assert f.n_frames == 1


def test_save_all_of_one_frame_writes_a_still_image():
    with imij_plugins.open(save_bytes(sample_image("RGB"), save_all=True)) as f:
        assert (f.n_frames, f.kind) == (1, None)


def test_animation_frames_of_8_bit_modes_widen_to_a_common_mode():
    gray, rgba = sample_image("L", (6, 4)), sample_image("RGBA", (6, 4), 9)
    with Image.open(io.BytesIO(_save_all([gray, rgba]))) as im:
        assert im.mode == "RGBA"
        assert_image_equal(im, gray.convert("RGBA"))
        im.seek(1)
        assert_image_equal(im, rgba)


def test_animation_frames_of_other_mixes_point_to_pages():
    with pytest.raises(ValueError, match="pages=True"):
        _save_all([sample_image("L", (6, 4)), sample_image("I;16", (6, 4))])
    with pytest.raises(ValueError, match="one size .*pages=True"):
        _save_all([sample_image("L", (6, 4)), sample_image("L", (5, 4))])


def test_pages_of_different_sizes_and_modes():
    pages = [
        sample_image("L", (5, 4), 1),
        sample_image("RGB", (7, 3), 2),
        sample_image("I;16", (2, 9), 3),
        sample_image("F", (3, 3), 4),
        sample_image("RGBA", (1, 1), 5),
        sample_image("I", (4, 2), 6),
    ]
    with Image.open(io.BytesIO(_save_all(pages, pages=True))) as im:
        assert (im.n_frames, im.is_animated, im.info["imij_kind"]) == (6, True, "mixed pages")
        for order in (range(6), reversed(range(6)), [2, 2, 0, 5, 1]):
            for index in order:
                im.seek(index)
                assert (im.mode, im.size) == (pages[index].mode, pages[index].size)
                assert_image_equal(im, pages[index], f"page {index}")
                assert im.info["imij_bit_depth"] == {"L": 8, "RGB": 8, "RGBA": 8, "I;16": 16, "F": 32, "I": 32}[im.mode]


def test_pages_of_one_mode():
    pages = [sample_image("RGB", (4 + i, 3), i) for i in range(3)]
    with Image.open(io.BytesIO(_save_all(pages, pages=True, duration=[0, 5, 0]))) as im:
        assert im.info["imij_kind"] == "pages"
        for index, frame in enumerate(ImageSequence.Iterator(im)):
            assert_image_equal(frame, pages[index])
        im.seek(1)
        assert im.info["duration"] == 5


def test_cmyk_pages():
    pages = [sample_image("CMYK", (3, 2), i) for i in range(2)]
    with Image.open(io.BytesIO(_save_all(pages, pages=True))) as im:
        for index, frame in enumerate(ImageSequence.Iterator(im)):
            assert_image_equal(frame, pages[index])


def test_a_page_pillow_cannot_hold_refuses_only_that_page():
    data = imij_plugins.encode([np.zeros((2, 3), np.uint8), np.zeros((2, 2), np.float64)], kind="pages")
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        im.seek(1)
        assert im.mode == "F"
        with pytest.raises(imij_plugins.Unsupported):
            im.load()
        im.seek(0)
        im.load()


def test_a_new_core_image_when_the_page_shape_changes():
    """Pillow #8439: a frame of another size or mode needs a new self.im."""
    pages = [sample_image("L", (5, 4)), sample_image("RGB", (2, 7))]
    with Image.open(io.BytesIO(_save_all(pages, pages=True))) as im:
        im.load()
        im.seek(1)
        im.load()
        assert (im.im.mode, im.im.size) == ("RGB", (2, 7))


def test_mode_1_animation_keeps_mode_1():
    frames = [sample_image("1", (9, 5), seed) for seed in range(3)]
    with Image.open(io.BytesIO(_save_all(frames))) as im:
        for index, frame in enumerate(ImageSequence.Iterator(im)):
            assert_image_equal(frame, frames[index])


def test_mode_1_with_gray_frames_is_stored_as_0_255():
    frames = [sample_image("1", (9, 5)), sample_image("L", (9, 5))]
    with Image.open(io.BytesIO(_save_all(frames))) as im:
        assert im.mode == "L"
        assert_image_equal(im, frames[0].convert("L"))


def test_mode_1_pages():
    """Each page's own header declares its significant bits (mixed pages, 1.3): mode 1 pages stay 1."""
    pages = [sample_image("1", (9, 5)), sample_image("RGB", (3, 3)), sample_image("1", (4, 4), 7)]
    with Image.open(io.BytesIO(_save_all(pages, pages=True))) as im:
        assert_image_equal(im, pages[0])
        im.seek(2)
        assert_image_equal(im, pages[2])


def _reopened_as(fmt: str, frames: list[Image.Image], **params) -> Image.Image:
    """``frames`` saved by Pillow's own ``fmt`` writer and opened again (not loaded)."""
    buf = io.BytesIO()
    frames[0].save(buf, format=fmt, save_all=True, append_images=frames[1:], **params)
    return Image.open(buf)


@pytest.mark.skipif(not features.check("webp"), reason="Pillow without WebP")
def test_webp_frame_durations_are_read_after_each_frame_loads():
    """WebP and AVIF set a frame's info["duration"] in load(), not seek() (``iss634.webp``)."""
    durations = [0, 70, 60, 70]
    with _reopened_as("WEBP", _moving_square(4), duration=durations, loop=2, lossless=True) as source:
        data = save_bytes(source, save_all=True)
    with Image.open(io.BytesIO(data)) as im:
        assert [frame.info["duration"] for frame in ImageSequence.Iterator(im)] == pytest.approx(durations)
        assert im.info["loop"] == 2


def _palette_frame(index: int) -> Image.Image:
    im = Image.new("P", (8, 6), index)
    im.putpalette([0, 0, 0, 0, 0, 255])  # black, blue
    im.info["transparency"] = b"\xff\x80"  # opaque, half transparent
    return im


def test_apng_frames_that_reduce_to_different_modes_animate_in_one_mode():
    """Palette frames with alpha where one uses only black (LA) and one blue (RGBA), as
    ``apng/mode_palette_1bit_alpha.png``: brought to one mode as Pillow's APNG and WebP writers do."""
    frames = [_palette_frame(0), _palette_frame(1)]
    try:
        _reopened_as("PNG", frames)
    except ValueError:
        pytest.skip("this Pillow's APNG writer cannot write palette frames with alpha")
    with _reopened_as("PNG", frames, duration=[100, 200]) as source:
        data = save_bytes(source, save_all=True)
    with _reopened_as("PNG", frames, duration=[100, 200]) as source:  # Pillow loses an APNG's palette on rewind
        wanted = [frame.convert("RGBA") for frame in ImageSequence.Iterator(source)]
    with Image.open(io.BytesIO(data)) as im:
        assert (im.info["imij_kind"], im.n_frames, im.mode) == ("animation", 2, "RGBA")
        for index, want in enumerate(wanted):
            im.seek(index)
            assert_image_equal(im.convert("RGBA"), want, f"frame {index}")
            assert im.info["duration"] == [100, 200][index]


def test_save_all_from_a_later_page_writes_the_first_pages_metadata():
    """A TIFF or MPO page has its own info; the file's metadata is the first image's."""
    pages = [sample_image("L", (6, 4)), sample_image("RGB", (5, 3))]
    pages[1].encoderinfo = {"dpi": (1, 1)}  # each page's own (Pillow 11+); older Pillow gives every page the first's
    with _reopened_as("TIFF", pages, dpi=(300, 300)) as source:
        source.seek(1)
        if source.info["dpi"] == (300, 300):
            pytest.skip("this Pillow's TIFF writer gives every page the first page's dpi")
        data = save_bytes(source, save_all=True, pages=True)
        assert source.tell() == 1
    with Image.open(io.BytesIO(data)) as im:
        assert im.info["dpi"] == pytest.approx((300, 300))
