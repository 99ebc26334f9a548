"""The lossless head's channel maps (2.1): a list without a value table is kept by its bytes and
parsed once, and a kept list never answers for one it is not (cut short, wider values, a table)."""

from __future__ import annotations

import pytest

from imij_plugins.errors import Corrupt
from imij_plugins.payload.geometry import Geometry
from imij_plugins.payload.head import ChannelMap, map_value_bytes, read_lossless_head, write_lossless_head
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire.cursor import Cursor

from .entropy.handmade import header


def _bytes(hdr, maps: list[ChannelMap]) -> bytes:
    return write_lossless_head(0, 1, Geometry(hdr.width, hdr.height, 1, 0), maps=maps, models=b"\x00",
                               value_bytes=map_value_bytes(hdr))


def _read(hdr, data: bytes, end: int | None = None):
    return read_lossless_head(Cursor(data, 0, len(data) if end is None else end, "DATA head"), hdr)


def test_a_list_read_twice_is_the_same():
    hdr = header("u8", 3)
    maps = [ChannelMap(0, 8, 0), ChannelMap(0, 7, 1), ChannelMap(4, 0, 255)]
    data = _bytes(hdr, maps)
    first, again = _read(hdr, data), _read(hdr, data)
    assert first.maps == again.maps == maps and first.end == again.end == len(data)
    again.maps.append(ChannelMap(0, 8, 0))  # each read has its own list
    assert _read(hdr, data).maps == maps


def test_a_kept_list_does_not_answer_for_a_cut_one():
    """Four maps cut after three whose bytes are a three-channel list read before: Corrupt."""
    three = [ChannelMap(0, 8, 0)] * 3
    assert _read(header("u8", 3), _bytes(header("u8", 3), three)).maps == three
    four = header("u8", 4)
    data = _bytes(four, [ChannelMap(0, 8, 0)] * 4)
    with pytest.raises(Corrupt, match="runs past the end"):
        _read(four, data, end=4 + 3 * 4)  # present, lanes, stripe_rows, group_cols, then 3 maps


def test_a_kept_list_does_not_answer_for_wider_values():
    """A list kept for 16-bit map values does not answer for the same bytes read with 32-bit ones."""
    narrow = header("u8", 2)
    maps = [ChannelMap(0, 8, 0), ChannelMap(0, 8, 0)]
    data = _bytes(narrow, maps)
    assert _read(narrow, data).maps == maps
    wide = header("u32", 2)
    assert _read(wide, _bytes(wide, maps)).maps == maps
    with pytest.raises(Corrupt):
        _read(wide, data)  # the 16-bit list's 8 bytes are not two 32-bit maps


def test_value_tables_are_read_each_time():
    hdr = header("u16", 1, features={F.VALUE_TABLES})
    table = ChannelMap(9, 3, 2, (1, 5, 40000))
    data = _bytes(hdr, [table])
    assert _read(hdr, data).maps == _read(hdr, data).maps == [table]
