"""``imij thumbnail IN OUT SIZE``: PNG thumbnails from pRVW previews or the decoded image, and one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import imij_plugins
from imij_plugins.cli import main


def solid(height: int, width: int, colour: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.array(colour, np.uint8), (height, width, len(colour))).copy()


def thumbnail(src, out, size: int) -> Image.Image:
    assert main(["thumbnail", str(src), str(out), str(size)]) == 0
    with Image.open(out) as im:
        assert im.format == "PNG"
        im.load()
        return im


def test_uses_the_preview_when_the_file_has_one(tmp_path):
    # a blue image whose pRVW preview is red: the thumbnail's colour shows which one was decoded
    red = tmp_path / "red.imi"
    imij_plugins.write(red, solid(600, 900, (255, 0, 0)), previews=(4,))
    with imij_plugins.open(red) as f:
        chunks = [c for c in f.extra_chunks() if c[0] == b"pRVW"]
    blue = solid(600, 900, (0, 0, 255))
    with_preview, without = tmp_path / "with.imi", tmp_path / "without.imi"
    imij_plugins.write(with_preview, blue, chunks=chunks)
    imij_plugins.write(without, blue)
    small = thumbnail(with_preview, tmp_path / "with.png", 100)
    assert (small.size, small.mode) == ((100, 67), "RGB")
    assert small.getpixel((50, 33)) == (255, 0, 0)
    small = thumbnail(without, tmp_path / "without.png", 100)
    assert (small.size, small.mode) == ((100, 67), "RGB")
    assert small.getpixel((50, 33)) == (0, 0, 255)


def test_a_preview_smaller_than_the_thumbnail_is_not_used(tmp_path):
    src = tmp_path / "a.imi"
    imij_plugins.write(src, solid(64, 48, (10, 200, 30)), previews=(16,))  # a 3x4 preview
    small = thumbnail(src, tmp_path / "a.png", 32)
    assert small.size == (24, 32) and small.getpixel((12, 16)) == (10, 200, 30)


def test_keeps_alpha_and_never_enlarges(tmp_path):
    src = tmp_path / "rgba.imi"
    imij_plugins.write(src, solid(20, 30, (1, 2, 3, 128)))
    small = thumbnail(src, tmp_path / "rgba.png", 256)
    assert (small.size, small.mode) == ((30, 20), "RGBA")
    assert small.getpixel((0, 0)) == (1, 2, 3, 128)


def test_an_animation_shows_its_first_frame(tmp_path):
    src = tmp_path / "anim.imi"
    imij_plugins.write(src, [solid(40, 40, (200, 0, 0)), solid(40, 40, (0, 200, 0))], durations=0.1)
    small = thumbnail(src, tmp_path / "anim.png", 16)
    assert small.size == (16, 16) and small.getpixel((8, 8)) == (200, 0, 0)


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        (np.full((8, 8), 0x8000, np.uint16), 128),  # 16-bit gray: its high byte
        (np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), None),  # float gray: stretched to 0..255
    ],
)
def test_gray_above_8_bits_becomes_8_bit_gray(tmp_path, samples, expected):
    src = tmp_path / "gray.imi"
    imij_plugins.write(src, samples)
    small = thumbnail(src, tmp_path / "gray.png", 8)
    assert (small.size, small.mode) == ((8, 8), "L")
    values = np.asarray(small)
    if expected is None:
        assert (values.min(), values.max()) == (0, 255)
    else:
        assert (values == expected).all()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x89PNG\r\n\x1a\nnot an imi", "not an IMI file"),
        (None, "overruns"),  # a truncated IMI file
        ("missing", "No such file or directory"),
    ],
)
def test_a_bad_input_is_a_one_line_error(tmp_path, capsys, content, reason):
    src = tmp_path / "bad.imi"
    if content is None:
        imij_plugins.write(src, solid(64, 64, (9, 9, 9)), previews=(4,))
        src.write_bytes(src.read_bytes()[:40])
    elif isinstance(content, bytes):
        src.write_bytes(content)
    out = tmp_path / "out.png"
    assert main(["thumbnail", str(src), str(out), "64"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"imij thumbnail: {src}: ") and reason in err
    assert not out.exists()


def test_a_size_below_one_is_refused(tmp_path, capsys):
    src = tmp_path / "a.imi"
    imij_plugins.write(src, solid(4, 4, (0, 0, 0)))
    assert main(["thumbnail", str(src), str(tmp_path / "a.png"), "0"]) == 1
    assert "at least 1 pixel" in capsys.readouterr().err
