"""Separate images on separate threads: the same results as one after another (pillow-heif threading_test)."""

from __future__ import annotations

import io
import threading
from concurrent.futures import ThreadPoolExecutor

from PIL import Image, ImageSequence

from .helper import sample_image, save_bytes


def _files() -> list[bytes]:
    files = []
    for i, mode in enumerate(["RGB", "RGBA", "L", "I;16", "F", "CMYK", "LA", "I"]):
        first = sample_image(mode, (257 + 16 * i, 193), seed=i)
        if i % 2:
            second = sample_image(mode, first.size, seed=100 + i)
            files.append(save_bytes(first, save_all=True, append_images=[second], duration=20, effort=5))
        else:
            files.append(save_bytes(first, effort=5))
    return files


def _decode(data: bytes, barrier: threading.Barrier | None = None) -> list[tuple[str, tuple[int, int], bytes]]:
    if barrier is not None:
        barrier.wait()
    with Image.open(io.BytesIO(data)) as im:
        return [(frame.mode, frame.size, frame.tobytes()) for frame in ImageSequence.Iterator(im)]


def test_eight_threads_open_and_load_different_files():
    files = _files()
    expected = [_decode(data) for data in files]
    for _ in range(3):
        barrier = threading.Barrier(len(files))
        with ThreadPoolExecutor(max_workers=len(files)) as pool:
            results = list(pool.map(_decode, files, [barrier] * len(files)))
        assert results == expected
