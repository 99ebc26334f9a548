"""Chunks (1.1) from hand-built bytes: tag syntax, criticality, open chunks, once-only tags,
placement, a missing DATA, overruns and an open DATA measured by its records."""

from __future__ import annotations

import struct

import builders as b
import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import Corrupt, Unsupported

HEAD = b.header(2, 2)
PIXELS = bytes([10, 20, 30, 40])
PAYLOAD = b.quick_head(2) + b.unit(b.raw(PIXELS))
DATA = b.chunk(b"DATA", PAYLOAD)
EXPECTED = np.array(list(PIXELS), dtype=np.uint8).reshape(2, 2, 1)


def build(*chunks: bytes) -> bytes:
    return b.imi(HEAD, *chunks)


def decode(*chunks: bytes, **options) -> np.ndarray:
    return imij_plugins.read(build(*chunks), **options)


def test_minimal_file_decodes():
    assert (decode(DATA) == EXPECTED).all()


# --- tag syntax and criticality ------------------------------------------------------------

BAD_TAGS = [b"DAT1", b"iCC ", b"\x00\x00\x00\x00", b"dat@", b"[ata", b"`ata", b"{ata", b"te\xc3\x9f", b"DATA"[:3] + b"_"]


@pytest.mark.parametrize("tag", BAD_TAGS)
@pytest.mark.parametrize("where", ["before", "after"])
def test_tag_that_is_not_four_letters_is_corrupt(tag, where):
    # 1.1: tag = 4 bytes, ASCII letters
    bad = tag + b.varint(1)
    chunks = (bad, DATA) if where == "before" else (DATA, bad)
    with pytest.raises(Corrupt, match="not four ASCII letters"):
        decode(*chunks)


@pytest.mark.parametrize("tag", [b"teXt", b"iCCP", b"eXIf", b"cSUM", b"uIDX"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_open_ancillary_chunk_is_corrupt(tag, where):
    # 1.1: only critical chunks may be open (length 0)
    bad = b.open_chunk(tag, b"abc")
    chunks = (bad, DATA) if where == "before" else (DATA, bad)
    with pytest.raises(Corrupt, match="open"):
        decode(*chunks)


# 1.1: upper-case 1st letter = critical. DAtA sets the reserved bit (3rd letter): the lead's
# reading is that this is simply another, unknown tag. DATa and DaTA are other tags too.
UNKNOWN_CRITICAL = [b"ABCD", b"DAtA", b"DATa", b"DaTA", b"CSUM", b"UIDX", b"FRAM"]


@pytest.mark.parametrize("tag", UNKNOWN_CRITICAL)
def test_unknown_critical_chunk_before_data_is_unsupported(tag):
    with pytest.raises(Unsupported, match="unknown critical chunk"):
        decode(b.chunk(tag, b"x"), DATA)


@pytest.mark.parametrize("tag", UNKNOWN_CRITICAL)
def test_unknown_critical_chunk_after_data_is_unsupported(tag):
    # 1.1 applies criticality "to the chunks it reads after DATA"; this reader reads them all
    with pytest.raises(Unsupported, match="unknown critical chunk"):
        decode(DATA, b.chunk(tag, b"x"))


def test_unknown_critical_open_chunk_is_unsupported():
    with pytest.raises(Unsupported):
        decode(DATA, b.open_chunk(b"ABCD", b"\x01\x02"))


@pytest.mark.parametrize("tag", [b"teXt", b"prIv", b"zzzz", b"cSuM", b"dATA", b"aNIm", b"uIdX"])
def test_unknown_ancillary_chunk_is_skipped_and_listed(tag):
    # 1.1: lower-case 1st letter = ancillary, skipped when unknown; libraries return it as is
    before = b.chunk(tag, b"payload")
    after = b.chunk(tag, b"")  # an empty payload (length 1) is fine; unknown tags may repeat
    buf = build(before, DATA, after)
    f = imij_plugins.open(buf)
    assert f.chunks == [(tag.decode(), len(before)), ("DATA", len(DATA)), (tag.decode(), len(after))]
    assert (f.read() == EXPECTED).all()


# --- at most once (1.1, 1.4.1) -------------------------------------------------------------

ANIM = b.chunk(b"aNIM", bytes([1, 0, 1, 1, 10]))  # kind 1, loop 0, 1 frame, 1/10 s
PSUM = b.chunk(b"pSUM", bytes([2, 0, 8, 0, 1]) + bytes(8))  # version 2: unknown, skipped (1.4.1)
ONCE_BEFORE = {
    b"iCCP": b"icc",
    b"eXIf": b"MM\x00\x2a\x00\x00\x00\x08",
    b"xMPp": b"<x:xmpmeta/>",
    b"mDCv": bytes(24),
    b"cLLI": bytes(8),
    b"dWHI": struct.pack(">f", 203.0),
    b"gMAP": b"\x01",  # version 1: skipped (1.2)
    b"pSUM": PSUM[5:],
    b"aNIM": ANIM[5:],
}


@pytest.mark.parametrize("tag", sorted(ONCE_BEFORE))
def test_at_most_once_tags_before_data(tag):
    one = b.chunk(tag, ONCE_BEFORE[tag])
    decode(one, DATA)  # once is fine
    with pytest.raises(Corrupt, match="more than once"):
        decode(one, one, DATA)


@pytest.mark.parametrize("tag", [b"iCCP", b"eXIf", b"xMPp", b"mDCv", b"cLLI", b"dWHI", b"gMAP"])
def test_at_most_once_counts_across_data(tag):
    one = b.chunk(tag, ONCE_BEFORE[tag])
    decode(DATA, one)  # anything may follow DATA (1.1)
    with pytest.raises(Corrupt, match="more than once"):
        decode(one, DATA, one)


def test_data_twice_is_corrupt():
    with pytest.raises(Corrupt, match="more than once"):
        decode(DATA, DATA)


@pytest.mark.parametrize("verify", [True, False])
def test_csum_twice_is_corrupt(verify):
    head = b.header(2, 2, records=b.checksum_record(10))
    table = b.chunk(b"cSUM", bytes([1, 8, 10, 1]) + bytes(8))  # algo 1: the chunk is skipped (1.4)
    with pytest.raises(Corrupt, match="more than once"):
        imij_plugins.read(b.imi(head, table, DATA, table), verify=verify)


def test_uidx_twice_is_corrupt():
    index = b.uidx([len(PAYLOAD) - 4], len(PAYLOAD))
    decode(DATA, index)
    with pytest.raises(Corrupt, match="more than once"):
        decode(DATA, index, index)


@pytest.mark.parametrize("tag", [b"cALB", b"aXES", b"cORD", b"cATG"])
def test_repeated_science_record_does_not_fail_the_decode(tag):
    # 1.5: a repeated record is malformed, and malformed records never fail an image decode
    rec = b.chunk(tag, b"\x01")
    assert (decode(rec, rec, DATA) == EXPECTED).all()


@pytest.mark.parametrize("tag", [b"sMDT", b"pRVW", b"kVMD", b"cORg"])
def test_repeatable_tags(tag):
    rec = b.chunk(tag, build(DATA) if tag == b"pRVW" else b"\x01")
    assert (decode(rec, rec, DATA, rec) == EXPECTED).all()


# --- placement ----------------------------------------------------------------------------


@pytest.mark.parametrize("late", [ANIM, PSUM], ids=["aNIM", "pSUM"])
def test_before_data_chunks_after_data_are_corrupt(late):
    decode(late, DATA)
    with pytest.raises(Corrupt, match="after DATA"):
        decode(DATA, late)


def test_fram_before_data_is_corrupt():
    fram = b.chunk(b"fRAM", b"\x00\x00\x01\x0a\x00" + build(DATA))
    with pytest.raises(Corrupt, match="before DATA"):
        decode(ANIM, fram, DATA)


def test_uidx_before_data_is_corrupt():
    with pytest.raises(Corrupt, match="before DATA"):
        decode(b.uidx([len(PAYLOAD) - 4], len(PAYLOAD)), DATA)


@pytest.mark.parametrize("tag", [b"iCCP", b"gMAP", b"pRVW", b"cALB", b"sMDT", b"teXt"])
def test_other_chunks_may_follow_data(tag):
    # 1.1: "anything may follow DATA"; placing iCCP, gMAP, pRVW and the science records before
    # DATA is a writer rule (1.1, 1.5)
    payload = build(DATA) if tag == b"pRVW" else b"\x01"
    assert (decode(DATA, b.chunk(tag, payload)) == EXPECTED).all()


# --- DATA presence, overruns ---------------------------------------------------------------


@pytest.mark.parametrize("chunks", [(), (b.chunk(b"teXt", b"hi"),), (ANIM,)], ids=["none", "ancillary", "aNIM"])
def test_missing_data_is_corrupt(chunks):
    with pytest.raises(Corrupt, match="no DATA"):
        decode(*chunks)


@pytest.mark.parametrize(
    "tail",
    [
        b"D",  # a partial tag
        b"teX",
        b"teXt",  # a tag without its length
        b"teXt\x80",  # a truncated length varint
        b"teXt\x81\x00",  # a non-minimal length varint (0)
        b"teXt\x05abc",  # 4 payload bytes announced, 3 left
        b"teXt\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a huge length
        b"teXt\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # an 11-byte varint
    ],
)
def test_truncated_or_overrunning_chunk_is_corrupt(tail):
    with pytest.raises(Corrupt):
        decode(DATA, tail)


def test_data_overrunning_the_file_is_corrupt():
    with pytest.raises(Corrupt, match="overruns"):
        decode(b"DATA" + b.varint(len(PAYLOAD) + 2) + PAYLOAD)


def test_empty_data_is_corrupt():
    with pytest.raises(Corrupt):
        decode(b.chunk(b"DATA", b""))


# --- an open DATA chunk (length 0) ----------------------------------------------------------


def test_open_data_is_measured_by_its_records():
    # 1.1 / 2.7: an open DATA ends with its last unit record; chunks may follow it
    data = b.open_chunk(b"DATA", PAYLOAD)
    text = b.chunk(b"teXt", b"after")
    f = imij_plugins.open(build(data, text, b.chunk(b"iCCP", b"icc")))
    assert f.chunks == [("DATA", len(data)), ("teXt", len(text)), ("iCCP", 8)]
    assert (f.read() == EXPECTED).all()


def test_open_data_last_in_file():
    assert (decode(b.open_chunk(b"DATA", PAYLOAD)) == EXPECTED).all()


def test_open_data_with_hint_and_several_units():
    image = b.ramp(5, 3)
    units = b.raw_units(image[:, :, None], 2)
    payload = b.quick_head(2, records=b.hint([len(u) for u in units])) + b"".join(units)
    buf = b.imi(b.header(3, 5), b.open_chunk(b"DATA", payload), b.chunk(b"teXt", b"x"))
    assert (imij_plugins.read(buf)[:, :, 0] == image).all()


def test_open_data_followed_by_a_non_chunk_is_corrupt():
    with pytest.raises(Corrupt):
        decode(b.open_chunk(b"DATA", PAYLOAD), b"te1t\x01")


def test_open_data_whose_records_stop_short_is_corrupt():
    with pytest.raises(Corrupt):
        decode(b.open_chunk(b"DATA", PAYLOAD[:-1]))


def test_open_data_with_a_broken_unit_is_reported_when_opening():
    # the open chunk's length comes from walking its records, so open() already fails
    payload = b.quick_head(2) + b.unit(b.raw(PIXELS), rid=11)
    with pytest.raises(Unsupported, match="unit record 11"):
        imij_plugins.open(build(b.open_chunk(b"DATA", payload)))
