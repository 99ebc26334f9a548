"""Animations stay animations: APNG with a default image outside the animation, WebP and AVIF frame durations."""

from __future__ import annotations

import io
import struct
from fractions import Fraction

import numpy as np
import pytest
from PIL import Image, features

import imij_plugins
from imij_plugins.convert import ConvertOptions, convert_file, read_source
from imij_plugins.pillow import register_pillow

from .conftest import noise


def frames(count: int, size: tuple[int, int] = (10, 12), channels: int = 4) -> list[Image.Image]:
    return [Image.fromarray(noise((*size, channels))) for _ in range(count)]


def timing(path) -> tuple[str | None, int, list[Fraction], int]:
    with imij_plugins.open(path) as f:
        return f.kind, f.n_frames, [f.frame_info(i).duration for i in range(f.n_frames)], f.loop_count


def test_apng_whose_default_image_is_not_a_frame(tmp_path):
    default, *animation = frames(4)
    src = tmp_path / "anim.png"
    default.save(src, save_all=True, append_images=animation, default_image=True, duration=[40, 70, 250], loop=3)
    with Image.open(src) as im:
        assert im.info.get("default_image") and im.n_frames == 4
    record = convert_file(src, tmp_path / "anim.imi", ConvertOptions())
    assert record.status == "converted", record.reason
    assert timing(tmp_path / "anim.imi") == ("animation", 3, [Fraction(40, 1000), Fraction(70, 1000), Fraction(1, 4)], 3)
    for index, frame in enumerate(animation):
        assert np.array_equal(imij_plugins.read(tmp_path / "anim.imi", index), np.asarray(frame))
    assert record.notes and "default image" in record.notes[0]


def test_apng_default_image_equal_to_the_first_frame_needs_no_note(tmp_path):
    first, second = frames(2)
    src = tmp_path / "same.png"
    first.save(src, save_all=True, append_images=[first.copy(), second], default_image=True, duration=[100, 100])
    decoded = read_source(src)
    assert (decoded.kind, len(decoded.frames), decoded.notes) == ("animation", 2, ())


def test_animated_webp_keeps_each_frame_duration_and_loop(tmp_path):
    src = tmp_path / "anim.webp"
    first, *rest = frames(3, channels=3)
    first.save(src, save_all=True, append_images=rest, duration=[30, 70, 60], loop=2, lossless=True)
    assert convert_file(src, tmp_path / "anim.imi", ConvertOptions()).status == "converted"
    kind, count, durations, loop = timing(tmp_path / "anim.imi")
    assert (kind, count, durations, loop) == ("animation", 3, [Fraction(30, 1000), Fraction(70, 1000), Fraction(60, 1000)], 2)


def test_animated_avif_keeps_its_durations(tmp_path):
    if not features.check("avif"):
        pytest.skip("this Pillow has no AVIF support")
    src = tmp_path / "anim.avifs"
    first, *rest = frames(3, size=(16, 16), channels=3)
    first.save(src, "AVIF", save_all=True, append_images=rest, duration=[40, 80, 120], quality=100)
    decoded = read_source(src)
    assert decoded.kind == "animation" and len(decoded.frames) == 3
    assert [round(float(d) * 1000) for d in decoded.durations] == [40, 80, 120]


def test_apng_frames_of_different_modes_are_one_animation(tmp_path):
    gray = Image.fromarray(noise((8, 8)))
    colour = Image.fromarray(noise((8, 8, 4)))
    src = tmp_path / "mixed.png"
    gray.save(src, save_all=True, append_images=[colour], duration=[50, 50])
    assert convert_file(src, tmp_path / "mixed.imi", ConvertOptions()).status == "converted"
    assert timing(tmp_path / "mixed.imi")[:2] == ("animation", 2)


def test_a_gif_without_a_loop_setting_loops_as_the_plugin_saves_it(tmp_path):
    src = tmp_path / "unsaid.gif"
    first, *rest = (im.convert("RGB").quantize(16) for im in frames(3))
    first.save(src, save_all=True, append_images=rest, duration=50)  # no loop: no NETSCAPE extension
    with Image.open(src) as gif:
        assert "loop" not in gif.info
        register_pillow()
        plugin = io.BytesIO()
        gif.save(plugin, "IMI", save_all=True)
    with imij_plugins.open(plugin.getvalue()) as saved:
        loop = saved.loop_count
    assert convert_file(src, tmp_path / "unsaid.imi", ConvertOptions()).status == "converted"
    assert timing(tmp_path / "unsaid.imi")[3] == loop == 0  # forever, as Pillow's APNG and WebP writers


def growing_gif(sizes: list[tuple[int, int]], durations: list[int]) -> bytes:
    """A GIF of 4-colour frames at the top left, its logical screen the first frame's size: Pillow
    grows the image to a later, larger frame."""

    def lzw(pixels: list[int]) -> bytes:
        codes = []
        for i in range(0, len(pixels), 2):
            codes += [4, *pixels[i : i + 2]]  # a clear code every 2 pixels keeps codes 3 bits wide
        codes.append(5)
        data = sum(c << (3 * i) for i, c in enumerate(codes)).to_bytes((3 * len(codes) + 7) // 8, "little")
        return bytes([2]) + b"".join(bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)) + b"\x00"

    out = b"GIF89a" + struct.pack("<HHBBB", *sizes[0], 0x81, 0, 0) + bytes([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255])
    for index, ((w, h), ms) in enumerate(zip(sizes, durations)):
        out += b"\x21\xf9\x04" + struct.pack("<BHB", 0, ms // 10, 0) + b"\x00"  # graphic control: the delay
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, w, h, 0) + lzw([(x + y + index) % 4 for y in range(h) for x in range(w)])
    return out + b"\x3b"


@pytest.mark.parametrize("durations", [[0, 0], [30, 40]], ids=["untimed", "timed"])
def test_animation_frames_of_different_sizes_become_pages_with_a_note(tmp_path, durations):
    src = tmp_path / "grows.gif"
    src.write_bytes(growing_gif([(4, 3), (6, 5)], durations))
    with Image.open(src) as gif:
        want = []
        for index in range(gif.n_frames):
            gif.seek(index)
            want.append(np.asarray(gif.convert("RGB")))
    if want[0].shape == want[1].shape:
        pytest.skip("this Pillow crops GIF frames to the logical screen (Pillow 9)")
    if [w.shape for w in want] == [(3, 4, 3), (3, 4, 3)]:
        pytest.skip("this Pillow (9.4 does) crops every GIF frame to the first frame's size")
    assert [w.shape for w in want] == [(3, 4, 3), (5, 6, 3)]
    record = convert_file(src, tmp_path / "grows.imi", ConvertOptions())
    assert record.status == "converted" and "written as pages" in record.notes[0]
    assert ("0.03" in record.notes[0]) == any(durations)  # what is not kept is said
    with imij_plugins.open(tmp_path / "grows.imi") as f:
        assert f.kind == "pages" and [np.array_equal(f.read(i)[..., :3], w) for i, w in enumerate(want)] == [True, True]
