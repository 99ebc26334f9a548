"""Every single-byte change and every truncation of small valid files decodes or raises ImijError."""

import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import ImijError
from imij_plugins.wire import encode_varint

SIGNATURE = b"IMIJ\r\n\x87\n"


def quick_file(width: int, height: int, units: bytes) -> bytes:
    """A hand-built file: quick_pixels declared, a quick head with one stripe, then ``units``."""
    header = bytes([2, 0x04]) + encode_varint(1 << 22) + encode_varint(width) + encode_varint(height)
    payload = bytes([0x08, 1]) + encode_varint(height) + b"\x00" + units
    return SIGNATURE + encode_varint(len(header)) + header + b"DATA" + encode_varint(len(payload) + 1) + payload


def _samples() -> list[bytes]:
    rng = np.random.default_rng(9)
    smooth = np.repeat(np.arange(6, dtype=np.uint8)[None, :, None], 5, 0).repeat(3, 2)
    return [
        imij_plugins.encode(smooth, effort=1),
        imij_plugins.encode((rng.integers(0, 16, (6, 5)) * 17).astype(np.uint16), effort=5),
        imij_plugins.encode(rng.integers(0, 255, (9, 4, 2), dtype=np.uint8), stripe_rows=3, group_cols=2, checksum=True),
        imij_plugins.encode(np.array([[1.5, -0.0], [np.nan, 2]], np.float32), exif=b"II*\x00"),
        imij_plugins.encode(rng.integers(0, 40, (6, 5, 3), dtype=np.uint8), codec="entropy", stripe_rows=3),
        imij_plugins.encode(rng.integers(0, 9, (4, 3), dtype=np.uint16), codec="entropy", unit_table="tail"),
        imij_plugins.encode(
            [np.zeros((3, 4), np.uint8), np.eye(3, 4, dtype=np.uint8)], durations=0.1, pixel_checksum=True, content_light_level=None
        ),
        imij_plugins.encode([np.zeros((2, 2), np.uint8), np.ones((3, 1, 3), np.int16)], kind="pages", xmp=b"<x/>"),
    ]


def _outcome(data: bytes) -> None:
    try:
        with imij_plugins.open(data) as f:
            for index in range(f.n_frames):
                f.read(index)
            f.metadata
    except ImijError:
        pass


@pytest.mark.parametrize("index", range(8))
def test_every_byte_change_and_truncation(index, backend):
    data = _samples()[index]
    for pos in range(len(data)):
        for value in {0x00, 0xFF, data[pos] ^ 0x01, data[pos] ^ 0x80, (data[pos] + 1) & 0xFF}:
            mutated = bytearray(data)
            mutated[pos] = value
            _outcome(bytes(mutated))
    for cut in range(len(data)):
        _outcome(data[:cut])
