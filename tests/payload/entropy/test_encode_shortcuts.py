"""The default effort's shortcuts (payload/entropy/encoder.py, level_writer.py): residuals kept from
a unit's analysis until it is coded, and template units coded only in the layout their outcomes
were counted in, write what the long ways write (or a valid, no larger file) and decode exactly."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins.payload.entropy import encoder, level_writer
from imij_plugins.payload.entropy.encoder import encode_tuned
from imij_plugins.registry.features import FeatureId as F

from .syntax_writer import decode_entropy_payload, header_for


def _images() -> list[np.ndarray]:
    """A photo-like RGB image (regular stripes), a drawing of few colours (palette and template
    stripes) and a 16-bit gray one."""
    rng = np.random.default_rng(27)
    y, x = np.mgrid[0:96, 0:130]
    photo = (np.stack([x + y, 2 * x, 3 * y], axis=-1) + rng.integers(0, 6, (96, 130, 3))) % 256
    drawing = np.full((96, 130, 3), 250, np.int64)
    for _ in range(40):
        r, c = int(rng.integers(0, 90)), int(rng.integers(0, 120))
        drawing[r : r + int(rng.integers(1, 6)), c : c + int(rng.integers(2, 30))] = rng.integers(0, 255, 3)
    deep = (x * 300 + y * 7 + rng.integers(0, 40, x.shape)).astype(np.uint16)
    return [photo.astype(np.uint8), drawing.astype(np.uint8), deep]


def _decodes(image: np.ndarray, enc) -> None:
    assert np.array_equal(decode_entropy_payload(enc.payload, header_for(image, enc, None)),
                          image if image.ndim == 3 else image[:, :, None])


@pytest.mark.parametrize("effort", [1, 5, 9])
@pytest.mark.parametrize("threads", [1, 2])
def test_kept_residuals_write_the_bytes_computed_again(monkeypatch, effort, threads):
    """Units coded from their analysis' residuals (EncodePlan.keep) give the bytes of units whose
    residuals are computed again, on one thread and on a pool; effort 9 never keeps them."""
    monkeypatch.setattr(encoder, "PARALLEL_SAMPLES", 0)
    for image in _images():
        kept = encode_tuned(image, effort=effort, threads=threads, stripe_rows=16)
        with monkeypatch.context() as m:
            m.setattr(encoder.EncodePlan, "keep", property(lambda self: False))
            again = encode_tuned(image, effort=effort, threads=threads, stripe_rows=16)
        assert kept.payload == again.payload
        _decodes(image, kept)


def test_keep_only_within_the_input_size():
    """Residuals are kept where they take no more bytes than the input: 8-bit RGB and 16-bit
    gray, not 8-bit slots widened to 16 bits (a 9-bit map of 8-bit samples has none), and never
    where effort 9 chooses the rows again."""
    photo, _, deep = _images()
    assert encoder._plan(photo, None, 5, 0, None, None, None).keep
    assert encoder._plan(deep[:, :, None], None, 5, 0, None, None, None).keep
    assert not encoder._plan(photo, None, 9, 0, None, None, None).keep


def _many_colours() -> np.ndarray:
    """Noise of 120 colours: every 16-row stripe holds all of them, so shared entries win by
    far (own entries would cost 360 bytes a stripe)."""
    rng = np.random.default_rng(5)
    return rng.integers(0, 256, (120, 3))[rng.integers(0, 120, (96, 130))].astype(np.uint8)


@pytest.mark.parametrize("image", [_images()[1], _many_colours()], ids=["drawing", "noise"])
def test_counted_template_layout_only(monkeypatch, image):
    """Below effort 6 a free template unit is coded only in the layout it was counted in (shared
    entries here), at effort 6 both ways. The file decodes; coding the other layout too finds
    at most a little (the drawing's stripes of few colours do 0.7% better with own entries)."""
    tried: list[bool] = []
    real = level_writer.LevelCoder._template_body

    def spy(self, u, tables, layout, limit):
        tried.append(layout == u.template_layout)
        return real(self, u, tables, layout, limit)

    monkeypatch.setattr(level_writer.LevelCoder, "_template_body", spy)
    fast = encode_tuned(image, effort=5, stripe_rows=16)
    assert tried and all(tried)
    assert F.TEMPLATE_PALETTES in fast.features_used
    _decodes(image, fast)
    tried.clear()
    with monkeypatch.context() as m:
        m.setattr(level_writer.LevelOptions, "both_layouts", property(lambda self: True, lambda self, v: None))
        both = encode_tuned(image, effort=5, stripe_rows=16)
    assert not all(tried)  # the other layout was coded too
    assert len(both.payload) <= len(fast.payload) <= 1.01 * len(both.payload)
    tried.clear()
    encode_tuned(image, effort=6, stripe_rows=16)
    assert not all(tried)


@pytest.mark.parametrize("size, skips", [(8, True), (16, True), (24, False)])
def test_tiny_images_skip_the_level_chooser(monkeypatch, size, skips):
    """Where the candidates' regular records are no larger than the smallest record 25 or 35,
    no table set can win: the chooser is not run, and the bytes are those it would choose."""
    rng = np.random.default_rng(size)
    icon = np.array([[0, 0, 0, 0], [255, 255, 255, 255], [200, 40, 40, 255]], np.uint8)[rng.integers(0, 3, (size, size))]
    made: list[int] = []
    real = level_writer.LevelCoder.__init__
    monkeypatch.setattr(level_writer.LevelCoder, "__init__", lambda self, *a, **k: made.append(1) or real(self, *a, **k))
    fast = encode_tuned(icon, effort=5)
    _decodes(icon, fast)
    assert (not made) == skips  # noise of 3 colours: 24 x 24 takes about 180 bytes, past record 35's 132
    with monkeypatch.context() as m:
        m.setattr(level_writer, "cannot_pay", lambda bodies: False)
        full = encode_tuned(icon, effort=5)
    assert fast.payload == full.payload
