"""gMAP (1.2): container fields byte for byte, the nested image's range, skip and Corrupt cases."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imij_plugins.container.metadata import GainMap
from imij_plugins.errors import Corrupt, Unsupported

NESTED = b"IMIJ\r\n\x87\n" + bytes([4, 2, 0, 1, 1]) + b"DATA..."  # stands in for a complete IMI file


def test_plain_gain_map_byte_exact():
    # version 0, meta_len 3, metadata, flags 0, image
    raw = bytes([0, 3]) + b"ISO" + bytes([0]) + NESTED
    g = GainMap.from_bytes(raw)
    assert g == GainMap(b"ISO", NESTED)
    assert g.image_range == (6, len(raw)) and raw[slice(*g.image_range)] == NESTED
    assert g.to_bytes() == raw


def test_alternate_cicp_and_icc_byte_exact():
    # flags 3: alt_cicp 4 bytes, then alt_icc_len varint and alt_icc, then the image
    raw = bytes([0, 0, 3, 9, 16, 0, 1, 2]) + b"IC" + NESTED
    g = GainMap.from_bytes(raw)
    assert (g.metadata, g.alt_cicp, g.alt_icc, g.image) == (b"", (9, 16, 0, 1), b"IC", NESTED)
    assert g.image_range == (10, len(raw)) and g.to_bytes() == raw


def test_iso_metadata_stays_bytes_with_a_long_length():
    meta = bytes(range(256)) * 2  # 512 bytes: a two-byte varint length
    raw = bytes([0, 0x80, 0x04]) + meta + bytes([0]) + NESTED
    g = GainMap.from_bytes(raw)
    assert g.metadata == meta and g.image_range[0] == 3 + 512 + 1 and g.to_bytes() == raw


@pytest.mark.parametrize("version", [1, 2, 255])
def test_other_version_skips_the_chunk(version):
    # 1.2: "other versions ... skip the chunk; the base image is unaffected"
    with pytest.raises(Unsupported, match="skipped"):
        GainMap.from_bytes(bytes([version, 0, 0]) + NESTED)


def test_unknown_flag_bits_skip_the_chunk():
    # 1.2 defines flag bits 0 and 1; an unknown bit may add fields before the image (SPEC_NOTES)
    with pytest.raises(Unsupported, match="flags 0x04"):
        GainMap.from_bytes(bytes([0, 0, 4]) + NESTED)


@pytest.mark.parametrize(
    "raw",
    [
        b"",  # no version
        bytes([0]),  # no meta_len
        bytes([0, 5]) + b"abc",  # metadata overruns
        bytes([0, 0]),  # no flags
        bytes([0, 0, 1, 9, 16]),  # alt_cicp cut short
        bytes([0, 0, 2, 9]) + b"short",  # alt_icc overruns
        bytes([0, 0x80]),  # truncated varint
    ],
)
def test_truncated_fields_are_corrupt(raw):
    with pytest.raises(Corrupt):
        GainMap.from_bytes(raw)


def test_alternate_cicp_full_range_must_be_boolean():
    # 1.0: CICP full_range is 0 or 1 (closed); read the same way in gMAP's alt_cicp (SPEC_NOTES)
    with pytest.raises(Corrupt, match="full range 2"):
        GainMap.from_bytes(bytes([0, 0, 1, 9, 16, 0, 2]) + NESTED)


gain_maps = st.builds(
    GainMap,
    st.binary(max_size=300),
    st.binary(max_size=50),
    st.none() | st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255), st.integers(0, 1)),
    st.none() | st.binary(max_size=200),
)


@given(gain_maps)
def test_round_trip(g):
    raw = g.to_bytes()
    back = GainMap.from_bytes(raw)
    assert back == g and back.to_bytes() == raw and raw[slice(*back.image_range)] == g.image
