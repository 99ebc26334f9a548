"""The flat pyramid catalog (IMIJPAT\\x01 at key 0): codec, tile keys and every rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.imijset.pyramid import MORTON, ROW_MAJOR, PyramidLevel, decode_catalog, encode_catalog, morton
from imij_plugins.wire import encode_varint as varint

MAGIC = b"IMIJPAT\x01"


def level(level_id: int = 0, w: int = 10, h: int = 10, tw: int = 4, th: int = 4, order: int = 0, base: int = 1) -> bytes:
    return varint(level_id) + varint(w) + varint(h) + varint(tw) + varint(th) + bytes([order]) + varint(base)


def test_catalog_round_trip_and_layout() -> None:
    levels = [PyramidLevel(0, 1000, 700, 256, 256, ROW_MAJOR, 1), PyramidLevel(3, 500, 350, 256, 128, MORTON, 100)]
    blob = encode_catalog(levels)
    assert blob == MAGIC + varint(2) + level(0, 1000, 700, 256, 256, 0, 1) + level(3, 500, 350, 256, 128, 1, 100)
    assert decode_catalog(blob) == levels


def test_tile_keys() -> None:
    row = PyramidLevel(0, 10, 7, 4, 4, ROW_MAJOR, 50)
    assert (row.cols, row.rows) == (3, 2)
    assert row.tile_key(2, 1) == 50 + 1 * 3 + 2  # "ty * cols + tx"
    z = PyramidLevel(0, 16, 16, 4, 4, MORTON, 50)
    assert [morton(x, y) for x, y in [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 3)]] == [0, 1, 2, 3, 4, 15]
    assert z.tile_key(3, 3) == 65 and z.key_span == 16
    with pytest.raises(IndexError):
        row.tile_key(3, 0)


@pytest.mark.parametrize(
    "blob, error, message",
    [
        (b"IMIJPAT\x02" + varint(1) + level(), Corrupt, "bad magic"),
        (MAGIC + varint(0), Corrupt, "0 levels"),
        (MAGIC + varint(65) + level() * 65, Corrupt, "65 levels"),
        (MAGIC + varint(2) + level(1) + level(1), Corrupt, "level_id 1 not"),
        (MAGIC + varint(2) + level(2) + level(1), Corrupt, "level_id 1 not"),
        (MAGIC + varint(1) + level(2**32), Corrupt, "level_id 4294967296"),
        (MAGIC + varint(1) + level(w=0), Corrupt, "above zero"),
        (MAGIC + varint(1) + level(th=2**32), Corrupt, "above zero"),
        (MAGIC + varint(1) + level(order=2), Unsupported, "tile order 2"),
        (MAGIC + varint(1) + level(base=0), Corrupt, "key_base 0"),
        (MAGIC + varint(1) + level(base=2**64 - 8), Corrupt, "overflow"),  # nine tiles: the last key is 2^64
        (MAGIC + varint(1) + level() + b"\x00", Corrupt, "trailing"),
        (MAGIC + varint(2) + level(), Corrupt, "past the end|truncated"),
    ],
)
def test_catalog_rules(blob: bytes, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        decode_catalog(blob)


def test_catalog_edges_accepted() -> None:
    decode_catalog(MAGIC + varint(64) + b"".join(level(i) for i in range(64)))
    decode_catalog(MAGIC + varint(1) + level(base=2**64 - 9))  # the last of nine tile keys is u64::MAX
    decode_catalog(MAGIC + varint(1) + level(w=2**32 - 1, h=1, tw=2**32 - 1, th=1, base=2**64 - 1))
    with pytest.raises(ValueError):
        encode_catalog([PyramidLevel(0, 0, 1, 1, 1, 0, 1)])


def test_pyramid_in_an_archive(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    full = rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)
    half = full[::2, ::2].copy()
    p = tmp_path / "pyr.imijset"
    with imijset.open(p, "w") as arc:
        levels = imijset.append_pyramid(arc, [full, half], 16, 16, order=MORTON)
    with imijset.open(p) as arc:
        assert arc.catalog() == levels
        assert np.array_equal(imijset.read_tile(arc, levels[0], 3, 2), full[32:40, 48:50])
        assert np.array_equal(imijset.read_tile(arc, levels[1], 1, 1), half[16:20, 16:25])
        assert arc.verify().catalog_levels == 2
    with imijset.open(tmp_path / "none.imijset", "w") as arc:
        arc.append(5, b"x")
    with imijset.open(tmp_path / "none.imijset") as arc:
        assert arc.catalog() is None
