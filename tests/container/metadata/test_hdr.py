"""mDCv, cLLI and dWHI (1.1): byte-exact examples, every length and value rule, round trips."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imij_plugins.container.metadata import ContentLightLevel, DiffuseWhite, MasteringDisplay
from imij_plugins.errors import Corrupt

# BT.2020 primaries, D65 white, 1000 / 0.005 cd/m²: PNG mDCV's example values (x 50000, cd/m² x 10000)
MDCV_BT2020 = bytes.fromhex("8a48 3908 2134 9baa 1996 08fc 3d13 4042 00989680 00000032".replace(" ", ""))


def test_mdcv_bt2020_byte_exact():
    md = MasteringDisplay.from_bytes(MDCV_BT2020)
    assert md == MasteringDisplay((35400, 14600), (8500, 39850), (6550, 2300), (15635, 16450), 10_000_000, 50)
    assert md.to_bytes() == MDCV_BT2020


@pytest.mark.parametrize("size", [0, 23, 25, 28])
def test_mdcv_other_length_is_corrupt(size):
    # 1.1: "24 bytes"
    with pytest.raises(Corrupt, match="expected 24"):
        MasteringDisplay.from_bytes(bytes(size))


def test_mdcv_writer_refuses_out_of_range_fields():
    with pytest.raises(ValueError, match="u16"):
        MasteringDisplay((65536, 0), (0, 0), (0, 0), (0, 0), 0, 0)
    with pytest.raises(ValueError, match="u32"):
        MasteringDisplay((0, 0), (0, 0), (0, 0), (0, 0), 1 << 32, 0)


u32 = st.integers(0, 0xFFFF_FFFF)


@given(st.binary(min_size=24, max_size=24))
def test_mdcv_round_trips_any_24_bytes(raw):
    assert MasteringDisplay.from_bytes(raw).to_bytes() == raw


def test_clli_eight_bytes():
    # MaxCLL 1000 cd/m², MaxFALL 400 cd/m² in 0.0001 cd/m² units, u32 BE
    raw = bytes.fromhex("00989680 003d0900".replace(" ", ""))
    c = ContentLightLevel.from_bytes(raw)
    assert (c.max_cll, c.max_fall) == (10_000_000, 4_000_000)
    assert c.to_bytes() == raw


def test_clli_legacy_four_bytes_scaled_by_10000():
    # 1.1: legacy "two u16 big-endian whole-nit values ... multiply each by 10,000"
    c = ContentLightLevel.from_bytes(bytes.fromhex("03e8 0190".replace(" ", "")))
    assert (c.max_cll, c.max_fall) == (1000 * 10_000, 400 * 10_000)
    assert c.to_bytes() == bytes.fromhex("00989680003d0900")  # writers emit only the 8-byte form
    top = ContentLightLevel.from_bytes(b"\xff\xff\xff\xff")
    assert top.max_cll == 65535 * 10_000 < 1 << 32


def test_clli_zero_means_unknown_and_is_valid():
    assert ContentLightLevel.from_bytes(bytes(8)) == ContentLightLevel(0, 0)


@pytest.mark.parametrize("size", [0, 2, 3, 5, 7, 9, 16])
def test_clli_other_length_is_corrupt(size):
    # 1.1: "other lengths are Corrupt"
    with pytest.raises(Corrupt, match="cLLI"):
        ContentLightLevel.from_bytes(bytes(size))


@given(u32, u32)
def test_clli_round_trip(a, b):
    c = ContentLightLevel(a, b)
    assert ContentLightLevel.from_bytes(c.to_bytes()) == c


def test_dwhi_203_nits_byte_exact():
    d = DiffuseWhite.from_bytes(bytes.fromhex("434b0000"))
    assert d.nits == 203.0 and d.to_bytes() == bytes.fromhex("434b0000")
    assert DiffuseWhite.from_nits(203.0) == d


def test_dwhi_keeps_positive_subnormals_bit_for_bit():
    # 1.1: "Preserve its exact bits, including positive subnormal values"
    for raw in (bytes.fromhex("00000001"), bytes.fromhex("007fffff")):
        d = DiffuseWhite.from_bytes(raw)
        assert d.to_bytes() == raw and 0 < d.nits < 1.2e-38


@pytest.mark.parametrize("size", [0, 3, 5, 8])
def test_dwhi_other_length_is_corrupt(size):
    # 1.1: "Other lengths ... are Corrupt"
    with pytest.raises(Corrupt, match="expected 4"):
        DiffuseWhite.from_bytes(bytes(size))


@pytest.mark.parametrize("raw", ["00000000", "80000000"])
def test_dwhi_zero_of_either_sign_is_corrupt(raw):
    # 1.1: "zero (either sign) ... Corrupt"
    with pytest.raises(Corrupt, match="zero"):
        DiffuseWhite.from_bytes(bytes.fromhex(raw))


@pytest.mark.parametrize("raw", ["c34b0000", "80000001", "bf800000"])
def test_dwhi_negative_is_corrupt(raw):
    # 1.1: "negative values ... are Corrupt" (negative subnormals included)
    with pytest.raises(Corrupt, match="negative"):
        DiffuseWhite.from_bytes(bytes.fromhex(raw))


@pytest.mark.parametrize("raw", ["7f800000", "ff800000"])
def test_dwhi_infinity_is_corrupt(raw):
    # 1.1: "infinities ... are Corrupt"
    with pytest.raises(Corrupt, match="infinite"):
        DiffuseWhite.from_bytes(bytes.fromhex(raw))


@pytest.mark.parametrize("raw", ["7fc00000", "7f800001", "ffffffff"])
def test_dwhi_nan_is_corrupt(raw):
    # 1.1: "NaNs are Corrupt"
    with pytest.raises(Corrupt, match="NaN"):
        DiffuseWhite.from_bytes(bytes.fromhex(raw))


def test_dwhi_writer_refuses_what_a_reader_rejects():
    for nits in (0.0, -1.0, math.inf, math.nan, 1e-50):  # 1e-50 rounds to binary32 zero
        with pytest.raises(ValueError):
            DiffuseWhite.from_nits(nits)
    with pytest.raises(ValueError, match="overflows"):
        DiffuseWhite.from_nits(1e300)


@given(st.integers(1, 0x7F7F_FFFF))
def test_dwhi_round_trips_every_valid_bit_pattern(bits):
    raw = bits.to_bytes(4, "big")
    d = DiffuseWhite.from_bytes(raw)
    assert d.to_bytes() == raw and d.nits > 0 and DiffuseWhite.from_nits(d.nits) == d
