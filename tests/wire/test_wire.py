"""Section 0 and 1 primitives against the spec's rules, byte for byte."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imij_plugins.errors import Corrupt
from imij_plugins.wire import (
    BitReader,
    BitWriter,
    Cursor,
    Record,
    decode_mask,
    encode_mask,
    encode_records,
    encode_varint,
    read_records,
    read_varint,
)
from imij_plugins.wire.varint import read_varints


@pytest.mark.parametrize(
    "value, encoded",
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (2**64 - 1, "ffffffffffffffffff01")],
)
def test_varint_examples(value, encoded):
    assert encode_varint(value).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0, len(encoded) // 2) == (value, len(encoded) // 2)


@given(st.integers(0, 2**64 - 1))
def test_varint_round_trip(value):
    data = encode_varint(value)
    assert read_varint(data, 0, len(data)) == (value, len(data))


@pytest.mark.parametrize(
    "encoded, reason",
    [
        ("8000", "non-minimal"),  # 0: a varint of more than one byte whose last byte is zero
        ("ff00", "non-minimal"),
        ("80", "truncated"),
        ("", "truncated"),
        ("ffffffffffffffffff02", "overflows"),  # above 2^64 - 1
        ("ffffffffffffffffff8001", "longer than 10"),  # 11 bytes
    ],
)
def test_varint_corrupt(encoded, reason):
    data = bytes.fromhex(encoded)
    with pytest.raises(Corrupt, match=reason):
        read_varint(data, 0, len(data))


def test_varint_bounded_by_end():
    with pytest.raises(Corrupt):
        read_varint(b"\x80\x01", 0, 1)


@pytest.mark.parametrize(
    "ids, encoded",
    [
        (set(), "00"),
        ({0, 1}, "03"),  # 1.0: features = 3 in one byte
        ({21}, "80808001"),  # pixel_models, bit 21
        ({3}, "08"),  # wide_samples
        ({70}, "80808080808080808080" + "01"),  # an id past 63 goes past a varint's range
    ],
)
def test_mask_examples(ids, encoded):
    data = bytes.fromhex(encoded)
    assert encode_mask(ids) == data
    assert decode_mask(data, 0, len(data)) == (frozenset(ids), len(data))


def test_mask_has_no_length_limit():
    data = encode_mask({200})
    assert len(data) == 29
    assert decode_mask(data, 0, len(data))[0] == {200}


@pytest.mark.parametrize("encoded", ["8000", "808000"])
def test_mask_non_minimal(encoded):
    data = bytes.fromhex(encoded)
    with pytest.raises(Corrupt, match="non-minimal"):
        decode_mask(data, 0, len(data))


def test_mask_runs_past_header():
    with pytest.raises(Corrupt, match="past the header"):
        decode_mask(b"\x80\x80\x01", 0, 2)


def test_records_round_trip():
    records = [Record(2, b"\x0c"), Record(4, b""), Record(10, b"abc")]
    data = encode_records(records)
    assert data == bytes.fromhex("02010c0400" "0a03616263")
    assert read_records(Cursor(data)) == records


@pytest.mark.parametrize(
    "encoded, reason",
    [
        ("0200" "0200", "strictly increasing"),  # repeated id
        ("0400" "0200", "strictly increasing"),  # out of order
        ("0205aa", "overruns"),  # record longer than its list
        ("02", "truncated"),  # missing length
    ],
)
def test_records_corrupt(encoded, reason):
    with pytest.raises(Corrupt, match=reason):
        read_records(Cursor(bytes.fromhex(encoded)))


def test_records_closed_by_enclosing_length():
    data = bytes.fromhex("0201aa" "0401bb")
    assert read_records(Cursor(data, 0, 3)) == [Record(2, b"\xaa")]


def test_bits_lsb_first():
    w = BitWriter()
    w.write(1, 1)
    w.write(0b10, 2)
    w.write(0x1F, 5)
    w.write(0x3, 4)
    assert w.getvalue() == bytes([0b11111101, 0b0011])
    r = BitReader(w.getvalue())
    assert [r.read(1), r.read(2), r.read(5), r.read(4)] == [1, 2, 0x1F, 3]
    assert r.bits_left() == 4
    with pytest.raises(Corrupt):
        r.read(5)


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2**40)), max_size=30))
def test_bits_round_trip(fields):
    fields = [(n, v & ((1 << n) - 1)) for n, v in fields]
    w = BitWriter()
    for n, v in fields:
        w.write(v, n)
    r = BitReader(w.getvalue())
    assert [r.read(n) for n, _ in fields] == [v for _, v in fields]


def test_read_fields_by_hand():
    # two records of (3, 5) bits after a 2-bit field: 0b10 | 0b101 << 2 | 0b10011 << 5 | 0b001 << 10 | 0b11111 << 13
    r = BitReader((0b10 | 0b101 << 2 | 0b10011 << 5 | 0b001 << 10 | 0b11111 << 13).to_bytes(3, "little"))
    assert r.read(2) == 0b10
    assert r.read_fields([3, 5], 2).tolist() == [[0b101, 0b10011], [0b001, 0b11111]]
    assert r.bitpos == 18
    with pytest.raises(Corrupt):
        r.read_fields([3, 5], 1)
    assert r.bitpos == 18 and r.read_fields([3, 5], 0).shape == (0, 2)


@given(st.integers(0, 7), st.lists(st.integers(1, 32), min_size=1, max_size=8), st.integers(0, 20), st.randoms())
def test_read_fields_equals_one_by_one(lead, widths, count, rnd):
    w = BitWriter()
    w.write(0, lead)
    values = [[rnd.getrandbits(n) for n in widths] for _ in range(count)]
    for rec in values:
        for v, n in zip(rec, widths):
            w.write(v, n)
    r = BitReader(w.getvalue())
    r.read(lead)
    assert r.read_fields(widths, count).tolist() == values
    assert r.bitpos == lead + sum(widths) * count


def test_cursor_bounds():
    cur = Cursor(b"\x01\x02\x03", 0, 2, "thing")
    assert cur.u8() == 1
    with pytest.raises(Corrupt, match="thing"):
        cur.take(2)
    assert cur.uint_le(1) == 2
    with pytest.raises(Corrupt):
        cur.u8()


def _one_by_one(buf: bytes, count: int):
    """read_varint ``count`` times: the reference for read_varints."""
    pos, values = 0, []
    try:
        for _ in range(count):
            value, pos = read_varint(buf, pos, len(buf))
            values.append(value)
    except Corrupt as exc:
        return ("error", str(exc))
    return (values, pos)


def _many(buf: bytes, count: int):
    try:
        return read_varints(buf, 0, len(buf), count)
    except Corrupt as exc:
        return ("error", str(exc))


@given(st.lists(st.integers(0, (1 << 64) - 1) | st.integers(0, 300), max_size=40), st.binary(max_size=4))
def test_read_varints_equals_one_by_one(values, tail):
    buf = b"".join(encode_varint(v) for v in values) + tail
    assert _many(buf, len(values)) == (values, len(buf) - len(tail))


@given(st.binary(max_size=60), st.integers(0, 12))
def test_read_varints_faults_as_one_by_one(buf, count):
    """Truncated, non-minimal, over-long and overflowing varints: the same value or message."""
    assert _many(buf, count) == _one_by_one(buf, count)


@pytest.mark.parametrize("buf", [b"\x80\x00", b"\x05\x85\x00", b"\x81", b"\x01\x02"])
def test_read_varints_examples(buf):
    assert _many(buf, 2) == _one_by_one(buf, 2)


@given(st.integers(0, 7), st.lists(st.integers(1, 32), min_size=1, max_size=8), st.integers(0, 20), st.randoms())
def test_write_fields_equals_one_by_one(lead, widths, count, rnd):
    values = [[rnd.getrandbits(n) for n in widths] for _ in range(count)]
    one, many = BitWriter(), BitWriter()
    one.write((1 << lead) - 1, lead)
    many.write((1 << lead) - 1, lead)
    for rec in values:
        for v, n in zip(rec, widths):
            one.write(v, n)
    many.write_fields(values, widths)
    assert many.getvalue() == one.getvalue()
    r = BitReader(many.getvalue())
    r.read(lead)
    assert r.read_fields(widths, count).tolist() == values


def test_write_fields_refuses_a_field_too_wide():
    with pytest.raises(ValueError):
        BitWriter().write_fields([[1, 32]], [3, 5])
    with pytest.raises(ValueError):
        BitWriter().write_fields([[-1, 0]], [3, 5])
