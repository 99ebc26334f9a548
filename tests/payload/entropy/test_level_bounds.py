"""The level chooser's lower bounds (level_writer.LevelCoder._cannot_win): where they rule every
table set out, the chooser fits no table and codes no unit, and the bytes are those the full
chooser writes; where a set may win, it runs."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins.payload.entropy import level_writer
from imij_plugins.payload.entropy.encoder import encode_tuned
from imij_plugins.registry.features import FeatureId as F

from .syntax_writer import decode_entropy_payload, header_for


def _icon(size: int, colours: int, channels: int, seed: int, block: int = 4) -> np.ndarray:
    """Noise of ``colours`` random colours in blocks of ``block`` x ``block`` pixels."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 256, (colours, channels)).astype(np.uint8)
    return table[np.kron(rng.integers(0, colours, (size // block, size // block)), np.ones((block, block), np.int64))]


def _smooth() -> np.ndarray:
    """A 16 x 16 RGBA gradient with a little noise: 256 colours, a few bits a sample."""
    rng = np.random.default_rng(1)
    y, x = np.mgrid[0:16, 0:16]
    return ((np.stack([x * 7 + y * 3 + 40 * k for k in range(4)], -1) + rng.integers(0, 8, (16, 16, 4))) % 256).astype(np.uint8)


def _images() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:48, 0:40]
    return [
        ("rgba-16-smooth", _smooth()),
        ("rgba-16-many", _icon(16, 60, 4, 1, 1)),
        ("rgba-32-few", _icon(32, 5, 4, 2)),
        ("rgb-48-two", _icon(48, 2, 3, 3)),
        ("rgb-64-two", _icon(64, 2, 3, 3, 1)),  # bilevel stripes win
        ("rgb-64-two-blocks", _icon(64, 2, 3, 3, 2)),  # template stripes win
        ("rgb-64-three", _icon(64, 3, 3, 3, 1)),
        ("gray-64-three", _icon(64, 3, 1, 4)[:, :, 0]),
        ("bits-40", (rng.random((40, 56)) < 0.1).astype(np.uint8)),
        ("gradient-48", ((x + 2 * y) % 256).astype(np.uint8)),
        ("u16-32-few", (_icon(32, 4, 3, 5).astype(np.uint16) * 250)),
    ]


@pytest.mark.parametrize("effort", [5, 6])
@pytest.mark.parametrize("stripe_rows", [None, 16])
@pytest.mark.parametrize("name, image", _images(), ids=[n for n, _ in _images()])
def test_bounds_keep_the_bytes(monkeypatch, name, image, effort, stripe_rows):
    """With and without the bounds the payload is the same, and it decodes."""
    fast = encode_tuned(image, effort=effort, stripe_rows=stripe_rows)
    with monkeypatch.context() as m:
        m.setattr(level_writer.LevelCoder, "_cannot_win", lambda self, bodies: False)
        full = encode_tuned(image, effort=effort, stripe_rows=stripe_rows)
    assert fast.payload == full.payload
    expect = image if image.ndim == 3 else image[:, :, None]
    assert np.array_equal(decode_entropy_payload(fast.payload, header_for(image, fast, None)), expect)


def _ruled_out(monkeypatch, image: np.ndarray) -> list[bool]:
    """What _cannot_win answered in one encode (nothing when the chooser never got that far)."""
    said: list[bool] = []
    real = level_writer.LevelCoder._cannot_win

    def spy(self, bodies):
        said.append(real(self, bodies))
        return said[-1]

    monkeypatch.setattr(level_writer.LevelCoder, "_cannot_win", spy)
    encode_tuned(image)
    return said


def test_many_shared_entries_rule_the_template_out(monkeypatch):
    """256 RGBA entries make record 35 over 1,150 bytes: the regular record of a smooth 16 x 16
    unit is about 600, so nothing is fitted."""
    assert _ruled_out(monkeypatch, _smooth()) == [True]


def test_a_set_that_may_win_is_weighed(monkeypatch):
    """Noise of two colours over 64 x 64: bilevel palette stripes may win, so the chooser runs
    (and they do)."""
    image = _icon(64, 2, 3, 3, 1)
    assert _ruled_out(monkeypatch, image) == [False]
    assert F.BILEVEL in encode_tuned(image).features_used
