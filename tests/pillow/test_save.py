"""Save parameters with the names Pillow users know."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import imij_plugins

from .helper import assert_image_equal, reopen, sample_image, save_bytes


def test_save_by_extension_and_to_a_file_object(tmp_path):
    im = sample_image("RGB")
    im.save(tmp_path / "x.imi")
    with Image.open(tmp_path / "x.imi") as out:
        assert out.format == "IMI"
        assert out.get_format_mimetype() == "image/x.imi"
        assert_image_equal(out, im)
    buf = io.BytesIO()
    im.save(buf, "IMI")
    assert buf.getvalue() == (tmp_path / "x.imi").read_bytes()


def test_lossless_must_be_true_or_absent():
    im = sample_image("L")
    assert save_bytes(im, lossless=True) == save_bytes(im)
    with pytest.raises(ValueError, match="lossless"):
        save_bytes(im, lossless=False)


def test_near_lossless_and_codec(tmp_path):
    im = sample_image("L")
    assert save_bytes(im, max_error=0) == save_bytes(im)
    near = Image.open(io.BytesIO(save_bytes(im, max_error=2)))
    diff = np.abs(np.asarray(near, np.int16) - np.asarray(im, np.int16))
    assert diff.max() <= 2 and "near_lossless" in near.imij.features
    quick = Image.open(io.BytesIO(save_bytes(im, codec="quick")))
    assert "quick_pixels" in quick.imij.features and np.array_equal(np.asarray(quick), np.asarray(im))
    with pytest.raises(ValueError, match="max_error"):
        im.save(tmp_path / "x.imi", max_error=1, codec="quick")
    assert not (tmp_path / "x.imi").exists()


@pytest.mark.parametrize("effort", [1, 3, 5, 9])
def test_effort_and_its_alias_method(effort):
    im = sample_image("RGBA", (40, 30))
    data = save_bytes(im, effort=effort)
    assert data == save_bytes(im, method=effort)
    assert data == imij_plugins.encode(__import__("numpy").asarray(im), effort=effort)
    assert_image_equal(reopen(data), im)


def test_slow_decode_is_the_core_option():
    rng = np.random.default_rng(3)  # glyph-like strokes on a shaded background: template stripes pay
    a = np.repeat((200 + np.arange(96) * 40 // 96)[:, None], 256, 1).astype(np.uint8)
    for y in range(2, 86, 12):
        for x in range(0, 248, 7):
            a[y:y + 8, x:x + 5][rng.random((8, 5)) < 0.35] = 20
    im = Image.fromarray(a)
    slow = save_bytes(im, effort=9, slow_decode=True)
    assert slow == imij_plugins.encode(a, effort=9, slow_decode=True)
    assert len(slow) < len(save_bytes(im, effort=9))
    assert_image_equal(reopen(slow), im)


def test_checksum_writes_csum():
    with imij_plugins.open(save_bytes(sample_image("RGB"), checksum=True)) as f:
        assert f.container.piece_table is not None
    with imij_plugins.open(save_bytes(sample_image("RGB"))) as f:
        assert f.container.piece_table is None


def test_threads_do_not_change_the_bytes():
    im = sample_image("RGB", (300, 200))
    assert save_bytes(im, threads=1) == save_bytes(im, threads=4)


def test_unknown_parameters_are_ignored_like_pillows_plugins():
    im = sample_image("L")
    assert save_bytes(im, quality=80, optimize=True, subsampling=0) == save_bytes(im)


def test_saving_an_opened_file_over_itself(tmp_path):
    path = tmp_path / "x.imi"
    im = sample_image("RGB")
    im.save(path)
    with Image.open(path) as opened:
        opened.save(path)  # Image.save loads the image before it truncates the file
    with Image.open(path) as again:
        assert_image_equal(again, im)


def test_dpi_round_trips_through_exif_resolution():
    im = sample_image("RGB")
    with Image.open(io.BytesIO(save_bytes(im, dpi=(300, 72)))) as opened:
        assert opened.info["dpi"] == pytest.approx((300, 72))
        assert opened.getexif()[282] == 300
        again = save_bytes(opened)  # info["dpi"] is kept on a re-save
    with Image.open(io.BytesIO(again)) as reopened:
        assert reopened.info["dpi"] == pytest.approx((300, 72))
    with Image.open(io.BytesIO(save_bytes(im))) as plain:
        assert "dpi" not in plain.info


def test_previews_parameter_serves_thumbnails(monkeypatch):
    im = sample_image("RGB", (256, 192))
    data = save_bytes(im, previews=(4, 16))
    with Image.open(io.BytesIO(data)) as opened:
        opened.thumbnail((32, 24))  # draft(None, (64, 48)): the 1/4 preview
        assert opened.info["imij_preview"] == (64, 48)
        assert opened.size == (32, 24)
    with Image.open(io.BytesIO(data)) as opened:
        assert_image_equal(opened, im)  # the image itself is untouched
