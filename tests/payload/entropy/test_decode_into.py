"""decode_unit(..., out=view): a unit decodes straight into its rectangle of a larger array
(data.py's DataPayload.decode_into), bit-identical to a fresh array, nothing outside it touched."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins


def _image(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1000, (70, 90, 3)).astype(dtype)
    return a << 6 if dtype == "uint16" else a  # uint16: a Shift map; int16 / f16: Table maps


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "float16", "float32", "uint64"])
def test_decode_unit_into_view(backend: str, dtype: str) -> None:
    src = _image(dtype)
    payload = imij_plugins.open(imij_plugins.encode(src)).payload()
    geometry, decoder = payload.head.geometry, payload.decoder
    canvas = np.full((src.shape[0] + 4, src.shape[1] + 6, 3), 0x55, dtype=src.dtype)
    inner = canvas[2:-2, 3:-3]
    for i, unit in enumerate(payload.units):
        x, y, w, h = geometry.unit_rect(i)
        body = memoryview(payload.buf)[unit.body_start : unit.end]
        fresh = decoder.decode_unit(body, w, h)
        view = inner[y : y + h, x : x + w]
        assert decoder.decode_unit(body, w, h, out=view) is view
        assert fresh.tobytes() == np.ascontiguousarray(view).tobytes()
    assert inner.tobytes() == src.tobytes()
    border = canvas.copy()
    border[2:-2, 3:-3] = 0x55
    assert (border.view(f"u{src.itemsize}") == np.array(0x55, src.dtype).view(f"u{src.itemsize}")).all()


def test_out_of_the_wrong_shape(backend: str) -> None:
    payload = imij_plugins.open(imij_plugins.encode(_image("uint8"))).payload()
    x, y, w, h = payload.head.geometry.unit_rect(0)
    unit = payload.units[0]
    body = memoryview(payload.buf)[unit.body_start : unit.end]
    with pytest.raises(ValueError):
        payload.decoder.decode_unit(body, w, h, out=np.empty((h, w + 1, 3), np.uint8))
