"""Helpers for the Pillow adapter tests, after Pillow's Tests/helper.py: assertions that name the failure."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import PIL
from PIL import Image

import imij_plugins
import imij_plugins.pillow  # noqa: F401  (until `import imij_plugins` registers, the tests import the adapter)
from imij_plugins.container.file import SIGNATURE, read_container
from imij_plugins.container.header import encode_header
from imij_plugins.wire.varint import encode_varint, read_varint

imij_plugins.pillow.register_pillow()

RNG_SEED = 42
PILLOW_VERSION = tuple(int(part) for part in PIL.__version__.split(".")[:2])


def assert_image_equal(a: Image.Image, b: Image.Image, msg: str = "") -> None:
    """Same mode, same size, same bytes."""
    assert a.mode == b.mode, f"{msg} mode {a.mode!r} != {b.mode!r}"
    assert a.size == b.size, f"{msg} size {a.size} != {b.size}"
    if a.tobytes() != b.tobytes():
        diff = np.flatnonzero(np.asarray(a).ravel() != np.asarray(b).ravel())
        raise AssertionError(f"{msg} {a.mode} {a.size}: {diff.size} samples differ, first at flat index {diff[:5]}")


def sample_image(mode: str, size: tuple[int, int] = (13, 7), seed: int = RNG_SEED) -> Image.Image:
    """A random image of ``mode`` using the mode's whole range."""
    rng = np.random.default_rng(seed)
    w, h = size
    if mode == "I":
        return Image.fromarray(rng.integers(-(2**31), 2**31 - 1, (h, w), dtype=np.int32))
    if mode == "F":
        a = rng.standard_normal((h, w)).astype(np.float32) * 1e6
        a.flat[:3] = [np.nan, -0.0, np.inf]
        return Image.fromarray(a)
    if mode.startswith("I;16"):
        im = Image.fromarray(rng.integers(0, 65536, (h, w), dtype=np.uint16))
        return im if mode == "I;16" else im.convert(mode)
    if mode == "1":
        return Image.fromarray(rng.integers(0, 2, (h, w)).astype(bool))
    if mode in ("P", "PA"):
        im = Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8), "L").convert("P")
        im.putpalette(rng.integers(0, 256, 768, dtype=np.uint8).tobytes())
        if mode == "PA":
            im = im.convert("PA")
            im.putalpha(Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8)))
        return im
    bands = Image.getmodebands(mode)
    return Image.frombytes(mode, size, rng.integers(0, 256, w * h * bands, dtype=np.uint8).tobytes())


def save_bytes(im: Image.Image, **params: Any) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="IMI", **params)
    return buf.getvalue()


def reopen(data: bytes) -> Image.Image:
    """The loaded frame 0 of ``data`` (a detached copy; the file is closed)."""
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.copy()


def with_header(data: bytes, **fields: Any) -> bytes:
    """``data`` with header fields changed (a forged file; only for files with no header-relative offsets)."""
    header = read_container(data, verify=False).header
    for key, value in fields.items():
        setattr(header, key, value)
    header_len, pos = read_varint(data, len(SIGNATURE), len(data), "header_len")
    body = encode_header(header)
    return SIGNATURE + encode_varint(len(body)) + body + bytes(data[pos + header_len :])
