"""cORg (1.1.1): byte-exact examples; Corrupt for malformed bytes, Unsupported for unknown values."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imij_plugins.container.metadata import ColorOrigin, read_color_origin
from imij_plugins.container.metadata.origin import AUTHORITY_CICP, AUTHORITY_ICC, PROVENANCE_ICC
from imij_plugins.errors import Corrupt, Unsupported


def test_cicp_origin_byte_exact():
    # version 1, provenance 2 (CICP), authority 1 (CICP), flags bit 1, then BT.2100 PQ 9/16/0/1
    raw = bytes([1, 2, 1, 2, 9, 16, 0, 1])
    o = ColorOrigin.from_bytes(raw)
    assert o == ColorOrigin(2, AUTHORITY_CICP, cicp=(9, 16, 0, 1))
    assert o.to_bytes() == raw


def test_icc_and_cicp_origin_byte_exact():
    # 1.1.1: CICP first, then "all remaining payload bytes" are the ICC profile
    raw = bytes([1, 1, 0, 3, 1, 13, 0, 1]) + b"ICCPROFILE"
    o = ColorOrigin.from_bytes(raw)
    assert (o.provenance, o.authority, o.cicp, o.icc) == (PROVENANCE_ICC, AUTHORITY_ICC, (1, 13, 0, 1), b"ICCPROFILE")
    assert o.to_bytes() == raw


def test_empty_present_icc_is_distinct_from_absence():
    # 1.1.1: "An empty present profile is distinct from absence"
    present, absent = ColorOrigin.from_bytes(bytes([1, 1, 0, 1])), ColorOrigin.from_bytes(bytes([1, 1, 0, 0]))
    assert present.icc == b"" and absent.icc is None and present != absent
    assert present.to_bytes() == bytes([1, 1, 0, 1]) and absent.to_bytes() == bytes([1, 1, 0, 0])


def test_assumed_origin_needs_no_carrier():
    # 1.1.1: "assumed and legacy origins can have neither carrier"
    assert ColorOrigin.from_bytes(bytes([1, 0, 1, 0])) == ColorOrigin(0, 1)
    assert ColorOrigin.from_bytes(bytes([1, 3, 0, 0])) == ColorOrigin(3, 0)


@pytest.mark.parametrize("raw", [b"", b"\x01", b"\x01\x02", b"\x01\x02\x01", b"\x01\x02\x01\x02\x09\x10\x00"])
def test_truncation_is_corrupt(raw):
    # 1.1.1: "Typed origin readers reject ... truncation ... as Corrupt"
    with pytest.raises(Corrupt, match="past the end"):
        ColorOrigin.from_bytes(raw)


def test_nonboolean_range_is_corrupt():
    # 1.1.1: "nonboolean range ... as Corrupt"
    with pytest.raises(Corrupt, match="full range 2"):
        ColorOrigin.from_bytes(bytes([1, 2, 1, 2, 9, 16, 0, 2]))


def test_trailing_data_is_corrupt():
    # 1.1.1: "No other trailing bytes are permitted"
    with pytest.raises(Corrupt, match="trailing"):
        ColorOrigin.from_bytes(bytes([1, 2, 1, 2, 9, 16, 0, 1, 0]))
    with pytest.raises(Corrupt, match="trailing"):
        ColorOrigin.from_bytes(bytes([1, 0, 0, 0, 7]))


def test_duplicates_are_corrupt():
    # 1.1.1: "Typed origin readers reject duplicates ... as Corrupt"
    one = bytes([1, 0, 0, 0])
    with pytest.raises(Corrupt, match="2 times"):
        read_color_origin([one, one])
    assert read_color_origin([one]) == ColorOrigin(0, 0) and read_color_origin([]) is None


@pytest.mark.parametrize(
    "raw, match",
    [
        (bytes([2, 0, 0, 0]), "version 2"),  # unknown version
        (bytes([0]), "version 0"),
        (bytes([1, 4, 0, 0]), "provenance 4"),  # unknown provenance
        (bytes([1, 0, 2, 0]), "authority 2"),  # unknown authority
        (bytes([1, 0, 0, 4]), "flags 0x04"),  # unknown flag bit
        (bytes([1, 0, 0, 0x80]), "flags 0x80"),
    ],
)
def test_unknown_values_are_unsupported(raw, match):
    # 1.1.1: "unknown versions, provenance, authority or flag bits return Unsupported"
    with pytest.raises(Unsupported, match=match):
        ColorOrigin.from_bytes(raw)


def test_unknown_value_is_reported_where_the_field_is():
    # 0.3: decided where the field is, so an unknown provenance wins over later truncation
    with pytest.raises(Unsupported):
        ColorOrigin.from_bytes(bytes([1, 9]))


def test_writer_refuses_unknown_values():
    for kwargs in ({"provenance": 4, "authority": 0}, {"provenance": 0, "authority": 2}):
        with pytest.raises(ValueError):
            ColorOrigin(**kwargs)
    with pytest.raises(ValueError, match="full range"):
        ColorOrigin(2, 1, cicp=(9, 16, 0, 3))


origins = st.builds(
    ColorOrigin,
    st.integers(0, 3),
    st.integers(0, 1),
    st.none() | st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255), st.integers(0, 1)),
    st.none() | st.binary(max_size=40),
)


@given(origins)
def test_round_trip(o):
    raw = o.to_bytes()
    assert ColorOrigin.from_bytes(raw) == o and ColorOrigin.from_bytes(raw).to_bytes() == raw
