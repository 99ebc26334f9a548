"""The streaming writer (container.writer.StreamWriter, imij_plugins.write(streaming=True)): files
written front to back to a stream that cannot seek, with the cSUM table last (1.4)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import xxhash

import imij_plugins
from imij_plugins.container.header import Header
from imij_plugins.container.writer import StreamWriter
from imij_plugins.errors import Corrupt, ImijError, Unsupported
from imij_plugins.options import EncodeOptions
from imij_plugins.wire.varint import encode_varint
from imij_plugins.writer import _prepare


class Pipe(io.RawIOBase):
    """A write-only stream that cannot seek or tell, like a pipe or a socket."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.data += bytes(b)
        return len(b)

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        raise OSError("not seekable")

    def seek(self, *args) -> int:
        raise OSError("not seekable")


def _frames(n: int = 3, shape=(6, 7, 3)) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    first = rng.integers(0, 255, shape, dtype=np.uint8)
    return [first] + [first ^ np.uint8(i) for i in range(1, n)]


def _streamed(frames, **options) -> bytes:
    pipe = Pipe()
    imij_plugins.write(pipe, frames, streaming=True, **options)
    return bytes(pipe.data)


def _check_frames(data: bytes, frames) -> None:
    f = imij_plugins.open(data)
    assert f.checksum_status == "verified"
    assert all(np.array_equal(f.read(i), frame) for i, frame in enumerate(frames))


def test_streamed_files_verify_with_the_table_last():
    frames = _frames()
    data = _streamed(frames, checksum=True)
    f = imij_plugins.open(data)
    assert [c.tag for c in f.container.chunks][-1] == b"cSUM"
    _check_frames(data, frames)


def test_the_table_by_hand():
    """1.4: algo 0, width 8, k, covered_len, one XXH3-64 per 2^k-byte piece of the file without
    the chunk; header record 2 (id 2, length 1, k); k as 1.4 chooses for the covered length."""
    image = _frames(1)[0]
    data = _streamed(image, checksum=True)
    at = data.rindex(b"cSUM")
    covered = data[:at]
    k = max(10, (len(covered) - 1).bit_length())  # one piece covers files up to 64 KiB
    payload = bytes([0, 8, k]) + encode_varint(len(covered)) + xxhash.xxh3_64_intdigest(covered).to_bytes(8, "little")
    assert data[at:] == b"cSUM" + encode_varint(len(payload) + 1) + payload
    header_len = data[8]
    assert data[9 + header_len - 3 : 9 + header_len] == bytes([2, 1, k])  # the header's last record
    _check_frames(data, [image])


def test_every_flipped_byte_is_detected():
    frames = _frames(2)
    data = _streamed(frames, checksum=True)
    f = imij_plugins.open(data)
    tags = {c.start + i for c in f.container.chunks for i in range(4)}
    end = data.rindex(b"cSUM")
    for i in range(end):
        bad = bytearray(data)
        bad[i] ^= 0x10
        with pytest.raises(ImijError) as info:
            g = imij_plugins.open(bytes(bad))
            for j in range(g.n_frames):
                g.read(j)
        # 1.4: with the table after the failing bytes the error stands (an unknown header
        # version or critical chunk tag is Unsupported before the table is reached)
        if isinstance(info.value, Unsupported):
            assert i == 9 or i in tags, i
        else:
            assert isinstance(info.value, Corrupt), (i, info.value)


def test_many_pieces_and_a_piece_size_of_our_choice():
    frames = _frames(4, (40, 50, 3))
    parts = _prepare(frames, EncodeOptions())
    pipe = Pipe()
    writer = StreamWriter(pipe, parts.header, checksum=True, piece_log2=10)
    for tag, payload in [*parts.before, (b"DATA", parts.first.payload), *parts.after]:
        writer.chunk(tag, payload)
    size = writer.finish()
    data = bytes(pipe.data)
    at = data.rindex(b"cSUM")
    assert size == len(data) and at > 3 * 1024
    table = imij_plugins.open(data).container.piece_table
    assert table is not None and table.k == 10 and table.covered_len == at
    pieces = [data[i : min(i + 1024, at)] for i in range(0, at, 1024)]
    assert table.digests == b"".join(xxhash.xxh3_64_intdigest(p).to_bytes(8, "little") for p in pieces)
    _check_frames(data, frames)
    for i in (20, 1500, len(data) - 40):  # one byte in the first, a middle and the last piece
        bad = bytearray(data)
        bad[i] ^= 0x01
        with pytest.raises(Corrupt):  # 1.4: a table after the failing bytes lets the first error stand
            imij_plugins.open(bytes(bad))


def test_the_table_precedes_a_trailing_unit_index():
    """1.4: a streaming writer puts the table last, or just before a trailing uIDX (2.7)."""
    image = np.random.default_rng(1).integers(0, 255, (300, 400, 3), dtype=np.uint8)
    data = _streamed(image, checksum=True, unit_table="tail")
    tags = [c.tag for c in imij_plugins.open(data).container.chunks]
    assert tags[-2:] == [b"cSUM", b"uIDX"]
    assert imij_plugins.open(data).container.trailing_index() is not None
    _check_frames(data, [image])


def test_without_a_checksum_the_bytes_are_encodes():
    frames = _frames()
    assert _streamed(frames, unit_table="tail") == imij_plugins.encode(frames, unit_table="tail")
    assert _streamed(frames, pixel_checksum=True) == imij_plugins.encode(frames, pixel_checksum=True)


def test_streaming_to_a_path(tmp_path):
    frames = _frames()
    path = tmp_path / "a.imi"
    imij_plugins.write(path, frames, streaming=True, checksum=True)
    _check_frames(path.read_bytes(), frames)


def test_a_finished_writer_takes_no_more_chunks():
    pipe = Pipe()
    writer = StreamWriter(pipe, Header(1, 1), checksum=True)
    assert writer.k == 20  # 1 MiB pieces when the length is not known
    writer.chunk(b"DATA", b"")
    writer.finish()
    with pytest.raises(ValueError):
        writer.chunk(b"xTRA", b"1")
