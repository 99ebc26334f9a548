"""Unit tables in every place the writer can put them (2.7) and the DATA locator (1.0), read back."""

import numpy as np
import pytest

import imij_plugins
from imij_plugins.container.locator import Locator, read_locator
from imij_plugins.errors import Corrupt
from imij_plugins.wire import encode_varint

IMAGE = np.random.default_rng(1).integers(0, 9, (40, 13, 3), dtype=np.uint8)


@pytest.mark.parametrize("codec", ["entropy", "quick"])
@pytest.mark.parametrize("unit_table", ["hint", "none", "filled", "empty", "tail"])
@pytest.mark.parametrize("ordinals", [False, True])
def test_unit_table_modes_round_trip(unit_table, ordinals, codec, backend):
    """Both codecs' writers (payload/units.py's shared helpers) in every mode, read back whole and
    by region (which walks the table)."""
    data = imij_plugins.encode(IMAGE, stripe_rows=7, unit_table=unit_table, ordinals=ordinals, codec=codec)
    f = imij_plugins.open(data)
    assert np.array_equal(f.read(), IMAGE)
    assert ("unit_ordinals" in f.features) == ordinals
    assert (f.container.trailing_index() is not None) == (unit_table == "tail")
    assert np.array_equal(f.read(region=(2, 10, 5, 9)), IMAGE[10:19, 2:7])


def test_forged_trailing_index_is_corrupt():
    data = bytearray(imij_plugins.encode(IMAGE, stripe_rows=7, unit_table="tail"))
    i = data.rindex(b"uIDX", 0, len(data) - 4)  # the chunk tag, not the footer's
    data[i + 5] += 1  # first span
    with pytest.raises(Corrupt, match="unit table"):
        imij_plugins.read(bytes(data))


def test_trailing_index_for_another_data():
    data = bytearray(imij_plugins.encode(IMAGE, stripe_rows=7, unit_table="tail"))
    data[-20] ^= 1  # data_len
    with pytest.raises(Corrupt, match="another DATA"):
        imij_plugins.read(bytes(data))


def test_index_not_last_is_skipped():
    data = imij_plugins.encode(IMAGE, stripe_rows=7, unit_table="tail")
    f = imij_plugins.open(data + b"zzZz\x01")  # an ancillary chunk after the index
    assert f.container.trailing_index() is None and np.array_equal(f.read(), IMAGE)


def test_locator_checks_out_and_goes_stale():
    data = imij_plugins.encode(IMAGE, stripe_rows=7, exif=b"II*\x00")
    assert imij_plugins.open(data).locator_status == "valid"
    at = data.index(b"eXIf")
    edited = data[:at] + b"zzZz" + encode_varint(3) + b"ab" + data[at:]  # a chunk added before DATA
    f = imij_plugins.open(edited)
    assert f.locator_status == "stale" and np.array_equal(f.read(), IMAGE)  # ignored, still decodes
    assert imij_plugins.open(imij_plugins.encode(IMAGE)).locator_status == "absent"


@pytest.mark.parametrize("payload", [b"", b"\x05", b"\x05\x02\x01", b"\x05\x01\x03\x00"])
def test_locator_that_does_not_parse_is_ignored(payload):
    assert read_locator(payload) is None


def test_locator_parses():
    assert read_locator(b"\x07\x02\x03\x81\x01") == Locator(7, (3, 129))
