"""Near-lossless pSUM (1.4.1) from the encoder's reconstruction: the samples the encoder hands back
are what a reader decodes of the written file, bit for bit, and the digests written of them verify."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins import _backend
from imij_plugins.payload.entropy.encoder import encode_tuned

BACKENDS = [b for b in ("c", "python") if b in _backend.available()]
LIMITS = {np.uint8: 255, np.uint16: 65535, np.int32: 1 << 20}


def _image(dtype, channels: int, h: int = 48, w: int = 72, seed: int = 0) -> np.ndarray:
    """A gradient with noise over the top half and four gray levels at random below (palette stripes)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    top = LIMITS[dtype]
    planes = [(x * (c + 1) * top // (3 * w) + y * top // (4 * h)) for c in range(channels)]
    img = np.stack(planes, axis=2) + rng.integers(0, 9, (h, w, channels))
    img[h // 2 :] = rng.integers(0, 4, (h - h // 2, w, 1)) * (top // 4)  # four tuples at random: palette stripes
    if dtype == np.int32:
        img = img - (1 << 19)  # negative samples too
    img = np.clip(img, -(1 << 19), top).astype(dtype)
    return img[:, :, 0] if channels == 1 else img


def _read_all(data: bytes) -> list[np.ndarray]:
    """Every image of ``data`` read with pSUM checking on, each reported verified."""
    with imij_plugins.ImijFile(data) as f:
        out = [f.read(i) for i in range(f.n_frames)]
        assert [f.bitmap_status(i) for i in range(f.n_frames)] == ["verified"] * f.n_frames
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("effort", [1, 5, 9])
def test_reconstruction_is_what_a_reader_decodes(backend, dtype, channels, effort):
    img = _image(dtype, channels, seed=channels + effort)
    with _backend.use(backend):
        for bound in (1, 4):
            recon = encode_tuned(img, effort=effort, max_error=bound, stripe_rows=8, recon=True).recon
            assert recon is not None
            data = imij_plugins.encode(img, effort=effort, max_error=bound, stripe_rows=8, pixel_checksum=True)
            decoded = imij_plugins.read(data, verify=True)
            assert recon.dtype == decoded.dtype
            assert recon.tobytes() == decoded.tobytes()
            assert recon.shape[:2] == decoded.shape[:2]
            error = np.abs(recon.astype(np.int64).reshape(img.shape) - img.astype(np.int64))
            assert 0 < error.max() <= bound  # near-lossless, within the bound
            _read_all(data)


@pytest.mark.parametrize("backend", BACKENDS)
def test_column_groups_and_one_unit(backend):
    img = _image(np.uint8, 3, h=40, w=200, seed=7)
    with _backend.use(backend):
        for rows, cols in ((8, 64), (None, None), (16, 48)):
            encoded = encode_tuned(img, effort=5, max_error=2, stripe_rows=rows, group_cols=cols, recon=True)
            data = imij_plugins.encode(img, max_error=2, stripe_rows=rows, group_cols=cols, pixel_checksum=True)
            assert encoded.recon.tobytes() == imij_plugins.read(data).tobytes()
            _read_all(data)


def test_reconstruction_only_when_asked_and_near_lossless():
    img = _image(np.uint8, 3)
    assert encode_tuned(img, effort=5, max_error=3).recon is None
    assert encode_tuned(img, effort=5, recon=True).recon is None
    floats = img.astype(np.float32)  # 2.6: no bounds for float samples, the payload is exact
    assert encode_tuned(floats, effort=5, max_error=3, recon=True).recon is None


def test_pages_and_mixed_pages_verify():
    pages = [_image(np.uint8, 3, seed=1), _image(np.uint16, 1, seed=2), _image(np.uint8, 3, seed=3).astype(np.float32)]
    data = imij_plugins.encode(pages, kind="pages", max_error=3, pixel_checksum=True)
    images = _read_all(data)
    assert images[2].tobytes() == pages[2].tobytes()  # the float page is exact
    data = imij_plugins.encode(pages[:1] * 2, kind="pages", max_error=3, pixel_checksum=True)
    _read_all(data)


def test_sequence_items_verify():
    items = [_image(np.uint8, 4, seed=s) for s in range(3)]
    _read_all(imij_plugins.encode(items, kind="sequence", max_error=2, pixel_checksum=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_animation_canvases_verify(backend):
    first = _image(np.uint8, 3, seed=4)
    second = first.copy()
    second[5:20, 10:40] = 200 - second[5:20, 10:40]  # a changed rectangle over near-lossless pixels
    third = second.copy()
    third[:, :] = _image(np.uint8, 3, seed=5)  # the whole canvas
    frames = [first, second, second.copy(), third]  # the third frame is empty (nothing changed)
    with _backend.use(backend):
        data = imij_plugins.encode(frames, kind="animation", max_error=3, pixel_checksum=True)
    _read_all(data)


def test_write_streaming_verifies(tmp_path):
    path = tmp_path / "near.imi"
    imij_plugins.write(path, _image(np.uint16, 3), max_error=5, pixel_checksum=True, streaming=True)
    _read_all(path.read_bytes())
