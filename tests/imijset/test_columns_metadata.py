"""LEB128 columns, typed entry metadata and per-leaf dictionaries: every grammar rule."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.imijset.columns import decode_column, encode_column
from imij_plugins.imijset.dictionary import encode_dictionary, expand, parse_dictionary, repeated_strings, tokenize
from imij_plugins.imijset.metadata import I64, Metadata, build_metadata, parse_metadata, serialize
from imij_plugins.wire import encode_varint as varint


def decode(col: bytes, count: int) -> list[int]:
    return decode_column(col, 0, len(col), count, "col").tolist()


@given(st.lists(st.integers(0, 2**64 - 1), max_size=300))
def test_column_round_trip(values: list[int]) -> None:
    assert decode(encode_column(values), len(values)) == values


@pytest.mark.parametrize(
    "values",
    [[5] + [1] * 255, [1 << 40] + [200] * 255, [0] * 256, [300] * 10, [127, 128, 16383, 16384, 2**64 - 1]],
)
def test_column_fast_paths_agree(values: list[int]) -> None:
    assert decode(encode_column(values), len(values)) == values


@pytest.mark.parametrize(
    "col, count, message",
    [
        (b"\x01\x02", 1, "trailing"),  # more values than the count
        (b"\x01", 2, "truncated"),  # fewer
        (b"\x01\x81", 2, "truncated"),  # ends inside a varint
        (b"\x01\x80\x00", 2, "non-minimal"),
        (b"\x80\x00", 1, "non-minimal"),
        (b"\x01\x80\x80\x00\x80\x00", 3, "non-minimal"),  # a two-byte run with a zero last byte
        (b"\xff" * 10 + b"\x01", 1, "longer than 10 bytes"),
        (b"\xff" * 9 + b"\x02", 1, "overflows"),
        (b"\x01", 0, "zero values"),
    ],
)
def test_column_rules(col: bytes, count: int, message: str) -> None:
    with pytest.raises(Corrupt, match=message):
        decode(col, count)


def meta(filename: bytes | None = None, attrs: list[tuple[bytes, int, bytes]] = ()) -> bytes:
    """A metadata payload from raw parts: filename bytes, then (key, type, encoded value)."""
    out = b"\x00" if filename is None else b"\x01" + varint(len(filename)) + filename
    out += varint(len(attrs))
    for key, kind, value in attrs:
        out += varint(len(key)) + key + bytes([kind]) + value
    return out


def text(s: bytes) -> bytes:
    return varint(len(s)) + s


def test_metadata_round_trip_all_types() -> None:
    attrs = {"t": "héllo", "b": b"\x00\xff", "u": 2**64 - 1, "i": -5, "j": I64(7), "f": -0.0, "yes": True, "no": False}
    parsed, payload = build_metadata("dir/ä.imi", attrs)
    again = parse_metadata(payload)
    assert again == parsed
    assert again.filename == "dir/ä.imi"
    values = again.as_dict()
    assert values == attrs and type(values["j"]) is I64 and type(values["u"]) is int
    assert math.copysign(1, values["f"]) == -1
    assert [k for k, _, _ in again.attributes] == sorted(attrs, key=lambda k: k.encode())
    assert serialize(again) == payload


def test_empty_metadata_is_zero_length() -> None:
    assert build_metadata(None, None) == (Metadata(), b"")
    assert build_metadata(None, {}) == (Metadata(), b"")
    assert parse_metadata(b"\x00\x00") == Metadata()  # the non-canonical empty form still parses


@pytest.mark.parametrize(
    "payload, error, message",
    [
        (b"", Corrupt, "payload length"),
        (meta() + b"\x00" * 16383, Corrupt, "payload length"),
        (b"\x02\x00", Corrupt, "presence"),
        (meta(b""), Corrupt, "filename of 0"),
        (meta(b"a" * 4097), Corrupt, "filename of 4097"),
        (meta(b"a\x00b"), Corrupt, "NUL"),
        (meta(b"\xff"), Corrupt, "UTF-8"),
        (meta(b"\xed\xa0\x80"), Corrupt, "UTF-8"),  # an encoded surrogate
        (b"\x00" + varint(65) + b"", Corrupt, "65 attributes"),
        (meta(None, [(b"b", 2, bytes(8)), (b"a", 2, bytes(8))]), Corrupt, "out of order"),
        (meta(None, [(b"a", 2, bytes(8)), (b"a", 2, bytes(8))]), Corrupt, "duplicate"),
        (meta(None, [(b"", 2, bytes(8))]), Corrupt, "key of 0"),
        (meta(None, [(b"k" * 129, 2, bytes(8))]), Corrupt, "key of 129"),
        (meta(None, [(b"k\x00", 2, bytes(8))]), Corrupt, "NUL"),
        (meta(None, [(b"k", 6, b"")]), Unsupported, "value type 6"),
        (meta(None, [(b"k", 4, struct.pack("<d", math.inf))]), Corrupt, "nonfinite"),
        (meta(None, [(b"k", 4, struct.pack("<d", math.nan))]), Corrupt, "nonfinite"),
        (meta(None, [(b"k", 5, b"\x02")]), Corrupt, "boolean"),
        (meta(None, [(b"k", 0, text(b"\xc3"))]), Corrupt, "UTF-8"),
        (meta(None, [(b"k", 2, bytes(7))]), Corrupt, "past the end"),
        (meta(None, [(b"k", 1, varint(5) + b"ab")]), Corrupt, "past the end"),
        (meta() + b"\x00", Corrupt, "trailing"),
    ],
)
def test_metadata_rules(payload: bytes, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        parse_metadata(payload)


def test_metadata_limits_accepted_at_the_edge() -> None:
    name = b"n" * 4096
    key = b"k" * 128
    parsed = parse_metadata(meta(name, [(key, 0, text("é".encode() * 10))]))
    assert parsed.filename == "n" * 4096
    attrs = [(b"%02d" % i, 5, b"\x01") for i in range(64)]
    assert len(parse_metadata(meta(None, attrs)).attributes) == 64
    size = 16384 - 5 - 2  # presence, count, key length, key, type; a two-byte value length
    big = meta(None, [(b"k", 1, varint(size) + b"x" * size)])
    assert len(big) == 16384
    parse_metadata(big)


@pytest.mark.parametrize(
    "filename, attributes, error",
    [
        ("", None, ValueError),
        ("a\x00", None, ValueError),
        ("x" * 4097, None, ValueError),
        (None, {"": 1}, ValueError),
        (None, {"k" * 129: 1}, ValueError),
        (None, {str(i): i for i in range(65)}, ValueError),
        (None, {"k": math.inf}, ValueError),
        (None, {"k": 2**64}, ValueError),
        (None, {"k": -(2**63) - 1}, ValueError),
        (None, {"k": "\ud800"}, ValueError),
        (None, {"k": b"x" * 16384}, ValueError),
        (None, {"k": [1]}, TypeError),
        (None, {1: 1}, TypeError),
        (b"name", None, TypeError),
    ],
)
def test_caller_metadata_is_checked(filename: object, attributes: object, error: type) -> None:
    with pytest.raises(error):
        build_metadata(filename, attributes)  # type: ignore[arg-type]


def test_dictionary_tokens_expand_to_the_literal_form() -> None:
    metas = [build_metadata("same.imi", {"tag": "red", "n": i})[0] for i in range(3)] + [build_metadata("other", {"tag": "x"})[0]]
    strings = repeated_strings(metas)
    assert strings == sorted([b"n", b"red", b"same.imi", b"tag"])
    index = {s: i for i, s in enumerate(strings)}
    for m in metas:
        tokens = tokenize(m, index)
        assert expand(tokens, strings, "t") == serialize(m)
    assert parse_dictionary(encode_dictionary(strings), 0, len(encode_dictionary(strings))) == strings


@pytest.mark.parametrize(
    "column, message",
    [
        (varint(0), "count 0"),
        (varint(3) + text(b"a"), "count 3"),
        (varint(1) + varint(0) + b"pad", "string of 0"),
        (varint(1) + varint(16385) + b"a" * 16385, "string of 16385"),
        (varint(2) + text(b"b") + text(b"a"), "increasing"),
        (varint(2) + text(b"a") + text(b"a"), "increasing"),
        (varint(1) + text(b"\xff"), "UTF-8"),
        (varint(1) + text(b"a") + b"\x00", "trailing"),
    ],
)
def test_dictionary_column_rules(column: bytes, message: str) -> None:
    with pytest.raises(Corrupt, match=message):
        parse_dictionary(column, 0, len(column))


def test_dictionary_string_at_limit() -> None:
    s = b"a" * 16384
    col = varint(1) + varint(len(s)) + s
    assert parse_dictionary(col, 0, len(col)) == [s]


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"\x01" + varint(5), "references dictionary entry 2"),  # filename token 2*2+1
        (b"\x02", "presence"),
        (b"\x00" + varint(65), "65 attributes"),
        (b"\x00\x01" + varint(1) + b"\x09", "value type 9"),
        (b"\x00\x00\x00", "trailing"),
        (b"\x01" + varint(2 * 20000) + b"a" * 20000 + b"\x00", "expands past"),
        (b"\x00" + varint(3) + (varint(1) + b"\x00" + varint(2 * 10) + b"x" * 10) * 3, None),
    ],
)
def test_expansion_rules(payload: bytes, message: str | None) -> None:
    strings = [b"a", b"b"]
    if message is None:  # keys "a", "a", "a": expansion succeeds, the shared parser rejects duplicates
        with pytest.raises(Corrupt, match="duplicate"):
            parse_metadata(expand(payload, strings, "t"))
        return
    error = Unsupported if "value type" in message else Corrupt
    with pytest.raises(error, match=message):
        expand(payload, strings, "t")


def test_expansion_caps_growth() -> None:
    """A 16 KiB dictionary string referenced twice would expand past 16,384 bytes: rejected while growing."""
    strings = [b"s" * 16000]
    payload = b"\x01" + varint(1) + varint(1) + varint(1) + b"\x00" + varint(1)
    with pytest.raises(Corrupt, match="expands past"):
        expand(payload, strings, "t")
