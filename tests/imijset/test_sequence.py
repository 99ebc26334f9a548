"""The optional sequence seek blob: reference attribute, header, records and every rule."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.imijset.sequence import (
    ATTRIBUTE,
    SequenceHeader,
    SequenceRecord,
    SequenceReference,
    encode_sequence_index,
    parse_header,
    parse_record,
)
from tests.imijset.build import xxh

IMAGE = bytes(range(256)) * 4  # a 1 KiB "image file": the index binds to bytes, not pixels
RECORDS = [
    SequenceRecord(0, len(IMAGE)),  # the primary covers the whole file, independently
    SequenceRecord(100, 50, 0, raster_hash=1234),
    SequenceRecord(None, 0, 1),  # an empty legacy update
    SequenceRecord(300, 20, None),
]


def raw_record(ordinal: int, offset: int, length: int, ref: int, raster: int, flags: int, digest: int | None = None) -> bytes:
    body = struct.pack("<5Q", offset, length, ref, raster, flags)
    return body + struct.pack("<Q", xxh(struct.pack("<Q", ordinal) + body) if digest is None else digest)


def test_index_blob_layout() -> None:
    blob = encode_sequence_index(IMAGE, RECORDS)
    assert len(blob) == 40 + 48 * len(RECORDS)
    assert blob[:8] == b"IMIJSEQ\x01"
    assert struct.unpack_from("<3Q", blob, 8) == (len(IMAGE), xxh(IMAGE), len(RECORDS))
    assert struct.unpack_from("<Q", blob, 32)[0] == xxh(blob[:32])
    header = parse_header(blob, len(blob))
    assert [parse_record(blob[40 + 48 * i : 88 + 48 * i], i, header) for i in range(4)] == RECORDS
    assert blob[40 + 48 : 88 + 48] == raw_record(1, 100, 50, 0, 1234, 1)
    assert blob[40 + 96 : 40 + 144] == raw_record(2, 2**64 - 1, 0, 1, 0, 0)


def test_archive_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "s.imijset"
    with imijset.open(p, "w") as arc:
        arc.append_sequence(7, IMAGE, 3, RECORDS, filename="clip.imi")
    with imijset.open(p) as arc:
        ref = SequenceReference.from_entry(arc.entry(7))
        index_blob = arc.get(3)
        assert ref == SequenceReference(3, len(index_blob), xxh(index_blob))
        assert arc.entry(7).attributes[ATTRIBUTE] == ref.encode() and len(ref.encode()) == 25
        seq = arc.sequence_index(7)
        assert len(seq) == 4 and seq.record(1) == RECORDS[1]
        assert seq.span(1) == IMAGE[100:150] and seq.span(2) == b"" and seq.span(0) == IMAGE
        assert seq.chain(2, max_steps=5) == [2, 1, 0]
        seq.verify()
        with pytest.raises(IndexError):
            seq.record(4)
        with pytest.raises(LookupError):
            arc.sequence_index(3)  # the index entry itself carries no reference
        assert arc.verify().sequence_indexes == 1
        arc.compact(tmp_path / "c.imijset")
    with imijset.open(tmp_path / "c.imijset") as c:  # "Compaction copies both entries and the reference unchanged."
        assert c.sequence_index(7).record(1) == RECORDS[1]


def test_replacing_the_index_breaks_the_old_reference(tmp_path: Path) -> None:
    p = tmp_path / "s.imijset"
    with imijset.open(p, "w") as arc:
        arc.append_sequence(7, IMAGE, 3, RECORDS)
        arc.commit()
        arc.append(3, encode_sequence_index(IMAGE, RECORDS[:2]))
    with imijset.open(p) as arc:
        with pytest.raises(Corrupt, match="holds a different blob"):
            arc.sequence_index(7)
        with pytest.raises(Corrupt):
            arc.verify()


def test_missing_index_and_rebinding(tmp_path: Path) -> None:
    p = tmp_path / "s.imijset"
    ref = SequenceReference(99, 10, 0).encode()
    with imijset.open(p, "w") as arc:
        arc.append(1, IMAGE, attributes={ATTRIBUTE: ref})
        other = encode_sequence_index(IMAGE + b"!", [SequenceRecord(0, len(IMAGE) + 1)])
        arc.append(2, other)
        arc.append(3, IMAGE, attributes={ATTRIBUTE: SequenceReference(2, len(other), xxh(other)).encode()})
    with imijset.open(p) as arc:
        with pytest.raises(Corrupt, match="key 99 is missing"):
            arc.sequence_index(1)
        with pytest.raises(Corrupt, match="bound to other image bytes"):
            arc.sequence_index(3)


def test_reference_attribute_rules(tmp_path: Path) -> None:
    with pytest.raises(Unsupported, match="version 2"):
        SequenceReference.parse(b"\x02" + bytes(24))
    with pytest.raises(Corrupt, match="24 bytes"):
        SequenceReference.parse(bytes(24))
    p = tmp_path / "s.imijset"
    with imijset.open(p, "w") as arc:
        with pytest.raises(ValueError):
            arc.append(1, b"x", attributes={ATTRIBUTE: b"short"})
        with pytest.raises(ValueError):
            arc.append(1, b"x", attributes={ATTRIBUTE: "text, not bytes"})
        with pytest.raises(ValueError):
            arc.append_sequence(1, IMAGE, 1, RECORDS)
    # a text attribute with that name, written by another writer: not a typed bytes reference
    from imij_plugins.wire import encode_varint as varint
    from tests.imijset.build import FileBuilder, metadata_leaf

    fb = FileBuilder()
    e = fb.blob(b"x", 1)
    key = ATTRIBUTE.encode()
    e.meta = b"\x00\x01" + varint(len(key)) + key + b"\x00" + varint(25) + bytes(25)
    fb.commit(fb.page(metadata_leaf([e])), 1)
    fb.write(tmp_path / "t.imijset")
    with imijset.open(tmp_path / "t.imijset") as arc:
        with pytest.raises(Corrupt, match="not a bytes attribute"):
            arc.sequence_index(1)


def header(file_length: int = 1000, count: int = 1, magic: bytes = b"IMIJSEQ\x01", digest: int | None = None) -> bytes:
    head = magic + struct.pack("<3Q", file_length, 5, count)
    return head + struct.pack("<Q", xxh(head) if digest is None else digest)


@pytest.mark.parametrize(
    "data, length, message",
    [
        (header(magic=b"IMIJSEQ\x02"), 88, "bad magic"),
        (header(digest=1), 88, "header digest"),
        (header(count=0), 40, "zero images"),
        (header(count=2), 88, "88 bytes for 2 records"),
        (header()[:39], 88, "shorter than its header"),
    ],
)
def test_header_rules(data: bytes, length: int, message: str) -> None:
    with pytest.raises(Corrupt, match=message):
        parse_header(data, length)


H = SequenceHeader(1000, 0, 10)
MAX = 2**64 - 1


@pytest.mark.parametrize(
    "ordinal, fields, message",
    [
        (1, (0, 10, MAX, 0, 0, 123), "digest mismatch"),
        (1, (0, 10, MAX, 0, 2, None), "unknown flag bits 0x2"),
        (1, (0, 10, 0, 7, 0, None), "raster hash without its flag"),
        (1, (0, 10, MAX, 7, 1, None), "without a reference"),
        (1, (0, 10, 1, 0, 0, None), "not an earlier item"),
        (1, (0, 10, 5, 0, 0, None), "not an earlier item"),
        (0, (1, 999, MAX, 0, 0, None), "primary record"),
        (0, (0, 999, MAX, 0, 0, None), "primary record"),
        (0, (MAX, 0, MAX, 0, 0, None), "primary record"),
        (2, (MAX, 0, MAX, 0, 0, None), "empty update needs"),
        (2, (MAX, 5, 1, 0, 0, None), "empty update needs"),
        (2, (10, 0, 1, 0, 0, None), "empty or outside"),
        (2, (990, 11, 1, 0, 0, None), "empty or outside"),
        (2, (MAX - 1, 5, 1, 0, 0, None), "empty or outside"),
    ],
)
def test_record_rules(ordinal: int, fields: tuple, message: str) -> None:
    with pytest.raises(Corrupt, match=message):
        parse_record(raw_record(ordinal, *fields), ordinal, H)


def test_record_edges_accepted() -> None:
    assert parse_record(raw_record(0, 0, 1000, MAX, 0, 0), 0, H) == SequenceRecord(0, 1000)
    assert parse_record(raw_record(3, 990, 10, 2, 0, 1), 3, H) == SequenceRecord(990, 10, 2, 0)  # a present zero hash
    with pytest.raises(ValueError):
        encode_sequence_index(IMAGE, [])
    with pytest.raises(ValueError, match="primary"):
        encode_sequence_index(IMAGE, [SequenceRecord(0, 10)])
