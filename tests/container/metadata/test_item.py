"""kVMD (1.3): typed item metadata byte for byte, every malformed rule (Corrupt), unknown version (Unsupported)."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imij_plugins.container.metadata import Attribute, AttrType, ItemMetadata, read_item_metadata
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire import encode_varint


def text(s: bytes) -> bytes:
    return encode_varint(len(s)) + s


def kvmd(*attrs: bytes, filename: bytes | None = None, count: int | None = None) -> bytes:
    """A version 1 payload from hand-made attribute bytes."""
    head = b"\x00" if filename is None else b"\x01" + text(filename)
    return b"\x01" + head + encode_varint(len(attrs) if count is None else count) + b"".join(attrs)


EXAMPLE = bytes.fromhex(
    "01"  # version
    "01 05 612e696d69"  # filename flag 1, "a.imi"
    "03"  # three attributes, keys in increasing byte order
    "01 62 05 01"  # "b": boolean true
    "01 6e 03 feffffffffffffff"  # "n": i64 -2
    "01 74 00 02 6869".replace(" ", "")  # "t": text "hi"
)


def test_example_byte_exact():
    m = ItemMetadata.from_bytes(EXAMPLE)
    assert m.filename == "a.imi"
    assert m.attributes == (
        Attribute("b", AttrType.BOOL, True),
        Attribute("n", AttrType.I64, -2),
        Attribute("t", AttrType.TEXT, "hi"),
    )
    assert m.as_dict() == {"b": True, "n": -2, "t": "hi"}
    assert m.to_bytes() == EXAMPLE
    assert ItemMetadata.from_mapping({"t": "hi", "n": -2, "b": True}, filename="a.imi").to_bytes() == EXAMPLE


def test_every_value_type():
    attrs = (
        text(b"a") + b"\x00" + text("é".encode()),
        text(b"b") + b"\x01" + text(b"\x00\xff"),
        text(b"c") + b"\x02" + (2**64 - 1).to_bytes(8, "little"),
        text(b"d") + b"\x03" + (-(2**63)).to_bytes(8, "little", signed=True),
        text(b"e") + b"\x04" + struct.pack("<d", -0.5),
        text(b"f") + b"\x05" + b"\x00",
    )
    raw = kvmd(*attrs)
    m = ItemMetadata.from_bytes(raw)
    assert m.as_dict() == {"a": "é", "b": b"\x00\xff", "c": 2**64 - 1, "d": -(2**63), "e": -0.5, "f": False}
    assert [a.type for a in m.attributes] == list(AttrType)
    assert m.to_bytes() == raw


def test_empty_representation():
    # 1.3: "Empty metadata may have an empty representation following the version"
    assert ItemMetadata.from_bytes(b"\x01") == ItemMetadata()
    assert ItemMetadata.from_bytes(b"\x01\x00\x00") == ItemMetadata()  # the long form reads the same
    assert ItemMetadata().to_bytes() == b"\x01"


def test_unknown_version_is_unsupported():
    # 1.3: "report unknown versions as Unsupported"
    with pytest.raises(Unsupported, match="version 2"):
        ItemMetadata.from_bytes(b"\x02\x00\x00")


def test_duplicate_chunks_are_corrupt():
    # 1.3: "attribute readers reject malformed/duplicate chunks"
    with pytest.raises(Corrupt, match="2 times"):
        read_item_metadata([b"\x01", b"\x01"])
    assert read_item_metadata([]) is None and read_item_metadata([EXAMPLE]).filename == "a.imi"


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"", "past the end"),  # no version byte
        (b"\x01\x00", "truncated"),  # no attribute count
        (b"\x01\x01\x05a.i", "past the end"),  # filename cut short
        (kvmd(text(b"k") + b"\x03\x01\x02"), "past the end"),  # i64 cut short
        (b"\x01\x02\x00", "filename flag 2"),  # 1.3: "filename flag 0/1"
        (kvmd(filename=b""), "filename is 0 bytes"),  # 1.3 / IMIJ-Set: filenames are 1..4096 bytes
        (kvmd(filename=b"x" * 4097), "filename is 4097 bytes"),  # 1.3: "filename at most 4096 bytes"
        (kvmd(filename=b"a\x00b"), "NUL"),  # 1.3: "Names exclude NUL"
        (kvmd(filename=b"\xff"), "UTF-8"),  # 1.3: UTF-8 filename
        (kvmd(text(b"") + b"\x05\x01"), "key is 0 bytes"),  # 1.3: "nonempty" keys
        (kvmd(text(b"k" * 129) + b"\x05\x01"), "key is 129 bytes"),  # 1.3: "Keys are at most 128 bytes"
        (kvmd(text(b"k\x00") + b"\x05\x01"), "NUL"),  # 1.3: "Names exclude NUL"
        (kvmd(text(b"\xc3") + b"\x05\x01"), "UTF-8"),  # 1.3: UTF-8 keys
        (kvmd(text(b"k") + b"\x05\x01", text(b"k") + b"\x05\x01"), "unique"),  # 1.3: "unique" keys
        (kvmd(text(b"b") + b"\x05\x01", text(b"a") + b"\x05\x01"), "increasing"),  # 1.3: "ordered" keys
        (kvmd(text(b"k") + b"\x06\x00"), "value type 6"),  # 1.3: types 0-5
        (kvmd(text(b"k") + b"\x05\x02"), "boolean byte 2"),  # 1.3: "boolean byte 0/1"
        (kvmd(text(b"k") + b"\x04" + struct.pack("<d", float("nan"))), "F64"),  # 1.3: "finite IEEE f64"
        (kvmd(text(b"k") + b"\x04" + struct.pack("<d", float("inf"))), "F64"),
        (kvmd(text(b"k") + b"\x00" + text(b"\xed\xa0\x80")), "UTF-8"),  # text values are UTF-8 (no surrogates)
        (kvmd() + b"\x00", "trailing"),  # no trailing bytes
    ],
)
def test_malformed_is_corrupt(raw, match):
    with pytest.raises(Corrupt, match=match):
        ItemMetadata.from_bytes(raw)


def test_more_than_64_attributes_is_corrupt():
    # 1.3: "at most 64 attributes"
    attrs = [text(b"k%02d" % i) + b"\x05\x01" for i in range(65)]
    with pytest.raises(Corrupt, match="65 attributes"):
        ItemMetadata.from_bytes(kvmd(*attrs))
    assert len(ItemMetadata.from_bytes(kvmd(*attrs[:64])).attributes) == 64


def test_more_than_16384_bytes_after_the_version_is_corrupt():
    # 1.3: "at most 16384 bytes after the version"
    def payload(n: int) -> bytes:
        head = kvmd(text(b"k") + b"\x01")  # a bytes value whose length varint follows
        value_len = n - (len(head) - 1) - 2  # two-byte length varint
        return head + encode_varint(value_len) + bytes(value_len)

    assert len(payload(16384)) == 16385 and ItemMetadata.from_bytes(payload(16384)).to_bytes() == payload(16384)
    with pytest.raises(Corrupt, match="16385 bytes after the version"):
        ItemMetadata.from_bytes(payload(16385))
    with pytest.raises(ValueError, match="after the version"):
        ItemMetadata(None, (Attribute("k", AttrType.BYTES, bytes(16400)),)).to_bytes()


def test_writer_refuses_bad_values():
    with pytest.raises(ValueError):
        Attribute("k", AttrType.U64, -1)
    with pytest.raises(ValueError):
        Attribute("k", AttrType.I64, 2**63)
    with pytest.raises(ValueError):
        Attribute("k", AttrType.U64, True)  # a bool is not a u64
    with pytest.raises(ValueError, match="increasing"):
        ItemMetadata(None, (Attribute.of("b", 1), Attribute.of("a", 1)))


def test_from_mapping_orders_keys_by_utf8_bytes():
    m = ItemMetadata.from_mapping({"é": 1, "z": 2, "B": 3, "a": 4})
    assert [a.key for a in m.attributes] == ["B", "a", "z", "é"]
    assert [a.type for a in m.attributes] == [AttrType.U64] * 4


names = st.text("abzBé日\x01 ", min_size=1, max_size=12)
values = (
    st.text("ab\x00é日", max_size=20)
    | st.binary(max_size=20)
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
)


@given(st.none() | names, st.dictionaries(names, values, max_size=8))
def test_round_trip(filename, attributes):
    m = ItemMetadata.from_mapping(attributes, filename)
    raw = m.to_bytes()
    assert ItemMetadata.from_bytes(raw) == m and ItemMetadata.from_bytes(raw).to_bytes() == raw
