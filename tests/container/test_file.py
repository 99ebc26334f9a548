"""The container (1, 1.0, 1.3, 1.4) from hand-built bytes: signature, header_len, admission,
header records, the DATA locator our writer writes, cSUM and aNIM."""

from __future__ import annotations

from fractions import Fraction

import builders as b
import numpy as np
import pytest

import imij_plugins
from imij_plugins.container.header import read_header
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.registry.chunks import KNOWN_TAGS, is_critical, is_valid_tag
from imij_plugins.wire import Cursor, read_varint

PIXELS = bytes([10, 20, 30, 40])
PAYLOAD = b.quick_head(2) + b.unit(b.raw(PIXELS))
DATA = b.chunk(b"DATA", PAYLOAD)
EXPECTED = np.array(list(PIXELS), dtype=np.uint8).reshape(2, 2, 1)


def decode(buf: bytes, **options) -> np.ndarray:
    return imij_plugins.read(buf, **options)


# --- signature and header_len (1) ----------------------------------------------------------


def test_good_file():
    assert (decode(b.imi(b.header(2, 2), DATA)) == EXPECTED).all()


@pytest.mark.parametrize("i", range(8))
def test_every_signature_byte_is_checked(i):
    buf = bytearray(b.imi(b.header(2, 2), DATA))
    buf[i] ^= 0x20
    with pytest.raises(Corrupt, match="signature"):
        decode(bytes(buf))


@pytest.mark.parametrize(
    "damaged",
    [
        b"",
        b"IMIJ\r\n\x87",  # short
        b"IMIJ\n\x87\n",  # CR LF -> LF
        b"IMIJ\r\n\x07\n",  # 7-bit transport
        b"IMIJ\r\n\x87\r\n",  # LF -> CR LF
    ],
)
def test_transport_damage_is_caught_by_the_signature(damaged):
    good = b.imi(b.header(2, 2), DATA)
    with pytest.raises(Corrupt, match="signature"):
        decode(damaged + good[8:] if damaged else b"")


def with_header_len(head: bytes, length_field: bytes, *rest: bytes) -> bytes:
    return b.SIGNATURE + length_field + head + b"".join(rest)


def test_header_len_past_the_file_is_corrupt():
    head = b.header(2, 2)
    with pytest.raises(Corrupt, match="header runs past"):
        decode(with_header_len(head, b.varint(len(head) + 1)))


def test_header_len_missing_or_truncated_is_corrupt():
    with pytest.raises(Corrupt, match="header_len"):
        decode(b.SIGNATURE)
    with pytest.raises(Corrupt, match="header_len"):
        decode(b.SIGNATURE + b"\x80")


def test_header_len_non_minimal_is_corrupt():
    head = b.header(2, 2)
    assert len(head) < 0x80
    with pytest.raises(Corrupt, match="non-minimal"):
        decode(with_header_len(head, bytes([len(head) | 0x80, 0]), DATA))


@pytest.mark.parametrize("cut", [0, 1, 2, 3])
def test_header_len_too_short_is_corrupt(cut):
    # header_len closes the header: a field that runs past it is Corrupt (1.0)
    head = b.header(2, 2)
    short = len(head) - 1 - cut
    with pytest.raises(Corrupt):
        decode(with_header_len(head, b.varint(short), DATA))


def test_header_len_zero_is_corrupt():
    with pytest.raises(Corrupt, match="version"):
        decode(with_header_len(b"", b"\x00", b.header(2, 2), DATA))


def test_header_len_longer_reads_the_next_bytes_as_header_records():
    # the two bytes 06 00 inside header_len are an even (ignorable) header record
    head = b.header(2, 2) + b.record(6)
    f = imij_plugins.open(b.imi(head, DATA))
    assert [r.id for r in f.header.records] == [6]
    assert (f.read() == EXPECTED).all()


@pytest.mark.parametrize("rid", [1, 3, 5, 7, 99])
def test_critical_header_record_is_unsupported(rid):
    # 1.0: ids 1 and 3 are retired, "Unsupported like any unknown critical record"
    with pytest.raises(Unsupported, match=f"header record {rid}"):
        decode(b.imi(b.header(2, 2, records=b.record(rid, b"\x00")), DATA))


def test_stale_locator_is_ignored():
    # 1.0: a locator that disagrees with the file is ignored, the reader walks the chunks
    locator = b.record(4, b.varint(3) + b.varint(2) + b.varint(9) + b.varint(9))
    buf = b.imi(b.header(2, 2, records=locator), b.chunk(b"teXt", b"x"), DATA)
    assert (decode(buf) == EXPECTED).all()
    garbage = b.record(4, b"\xff")  # not even a varint: still ignorable
    assert (decode(b.imi(b.header(2, 2, records=garbage), DATA)) == EXPECTED).all()


# --- admission (0.1) ----------------------------------------------------------------------

NOT_A_CHUNK = b"\x00\x01\x02"  # Corrupt if a reader looked at the chunks


@pytest.mark.parametrize(
    "head, name",
    [
        (b.header(2, 2, coding=2), "lossy"),  # implied by a coding-2 header
        (b.header(2, 2, coding=1), "lossy"),
        (b.header(2, 2, features=(22, 14)), "channel_layouts"),
        (b.header(2, 2, features=(22, 17)), "small_transforms"),
        (b.header(2, 2, features=(22, 27)), "feature 27"),
        (b.header(2, 2, features=(22, 64)), "feature 64"),
        (b.header(2, 2, features=(200,)), "feature 200"),
    ],
)
def test_unimplemented_feature_is_unsupported_right_after_the_header(head, name):
    # 0.1: Unsupported naming the feature right after the header, before any chunk
    for rest in (NOT_A_CHUNK, b"", DATA):
        with pytest.raises(Unsupported, match=name):
            imij_plugins.open(b.imi(head, rest))


@pytest.mark.parametrize(
    "head, reason",
    [
        (b.header(2, 2, features=(27,), channels=9), "channels 9"),
        (b.header(2, 2, features=(27,), sample=6), "signed_samples"),
        (b.header(2, 2, features=(27,), records=b.checksum_record(9)), "checksum record"),
        (b.header(2, 2, coding=2, records=b.checksum_record(41)), "checksum record"),
    ],
)
def test_header_corrupt_checks_come_before_admission(head, reason):
    with pytest.raises(Corrupt, match=reason):
        imij_plugins.open(b.imi(head, DATA))


def test_implemented_features_are_admitted():
    head = b.header(2, 2, features=(2, 3, 15, 20, 21, 22, 23, 26))  # over-declaring is allowed
    assert (decode(b.imi(head, DATA)) == EXPECTED).all()


# --- the DATA locator (header record 4, 1.0) -----------------------------------------------


def quick_head_end(buf: bytes, pos: int) -> int:
    """Where a quick-pixel lossless head starting at ``pos`` ends (2, 2.13), parsed by hand."""
    present, pos = read_varint(buf, pos, len(buf))
    assert present & 8, "our writer codes quick-pixel units"
    pos += 1  # lanes
    _, pos = read_varint(buf, pos, len(buf))  # stripe_rows
    _, pos = read_varint(buf, pos, len(buf))  # group_cols
    if present & 2:
        records_len, pos = read_varint(buf, pos, len(buf))
        pos += records_len
    return pos


def check_locator(buf: bytes) -> bool:
    """Check header record 4 against the file exactly as 1.0 tells a reader to; False without one."""
    header_len, pos = read_varint(buf, 8, len(buf))
    header_end = pos + header_len
    head = read_header(Cursor(buf, pos, header_end, "header"))
    rec = head.record(4)
    if rec is None:
        return False
    cur = Cursor(rec.payload, what="locator")
    prefix = cur.varint()
    lengths = [cur.varint() for _ in range(cur.varint())]
    cur.expect_end()
    pos = header_end  # "The chunks start right after the header"
    for whole in lengths:
        tag = buf[pos : pos + 4]
        assert is_valid_tag(tag) and tag != b"DATA"
        assert not (is_critical(tag) and tag not in KNOWN_TAGS)
        length, payload_start = read_varint(buf, pos + 4, len(buf))
        assert length != 0 and payload_start - pos + length - 1 == whole  # "exactly its listed length"
        pos += whole
    assert buf[pos : pos + 4] == b"DATA"  # "DATA starts after the last one"
    _, data_payload = read_varint(buf, pos + 4, len(buf))
    assert quick_head_end(buf, data_payload) - pos == prefix  # "a head that ends exactly at prefix"
    # the locator is only written with a unit table hint or reservation (1.0)
    present, _ = read_varint(buf, data_payload, len(buf))
    assert present & 2
    return True


@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize(
    "meta",
    [{}, {"icc_profile": b"i" * 300}, {"icc_profile": b"icc", "exif": b"MM\x00*" + bytes(200), "xmp": b"<x/>" * 50}],
    ids=["none", "icc", "icc-exif-xmp"],
)
def test_writer_locator_checks_out(checksum, meta):
    image = np.arange(40 * 24 * 3, dtype=np.uint8).reshape(40, 24, 3)
    buf = imij_plugins.encode(image, stripe_rows=16, checksum=checksum, codec="quick", **meta)
    assert check_locator(buf)
    assert (decode(buf) == image).all()


def test_writer_locator_with_many_units_and_groups():
    image = (np.arange(300 * 70, dtype=np.uint32).reshape(300, 70) % 251).astype(np.uint16)
    buf = imij_plugins.encode(image, stripe_rows=3, group_cols=9, checksum=True, icc_profile=b"x" * 5000, codec="quick")
    assert check_locator(buf)
    assert (decode(buf)[:, :, 0] == image).all()


def test_writer_locator_lists_anim_psum_and_other_chunks():
    frames = [np.full((20, 6, 3), i, np.uint8) for i in range(3)]
    buf = imij_plugins.encode(
        frames, stripe_rows=4, checksum=True, pixel_checksum=True, durations=0.5, chunks=[(b"teXt", b"hello", "before")],
        codec="quick",
    )
    assert check_locator(buf)
    f = imij_plugins.open(buf)
    assert [tag for tag, _ in f.chunks][:2] == ["aNIM", "teXt"]
    for chunk in f.container.find(b"fRAM"):  # 1.0: nested files carry no locator
        payload = bytes(f.container.payload(chunk))
        nested = payload[payload.index(b.SIGNATURE) :]
        assert not check_locator(nested)


def test_single_unit_file_has_no_locator():
    buf = imij_plugins.encode(np.zeros((4, 4, 3), np.uint8))
    assert not check_locator(buf)


# --- cSUM (1.4) ---------------------------------------------------------------------------


def csum_file(*, k: int = 10, at: int = 2, record_k: int | None = 10, chunks=None, **options) -> bytes:
    """[sig+header with record 2, teXt, DATA, iCCP] with a cSUM before part ``at``."""
    records = b.checksum_record(record_k) if record_k is not None else b""
    head = b.SIGNATURE + b.varint(len(b.header(2, 2, records=records))) + b.header(2, 2, records=records)
    parts = [head] + (chunks or [b.chunk(b"teXt", b"note"), DATA, b.chunk(b"iCCP", b"icc")])
    return b.with_csum(parts, at, k, **options)


@pytest.mark.parametrize("at", [1, 2, 3, 4])
@pytest.mark.parametrize("width", [8, 4])
def test_csum_anywhere_after_the_header(at, width):
    assert (decode(csum_file(at=at, width=width)) == EXPECTED).all()


def big_chunks() -> list[bytes]:
    image = b.ramp(50, 50)
    units = b.raw_units(image[:, :, None], 7)
    payload = b.quick_head(7, records=b.hint([len(u) for u in units])) + b"".join(units)
    return [b.chunk(b"teXt", b"note" * 100), b.chunk(b"DATA", payload)]


def big_file(**options) -> bytes:
    head = b.header(50, 50, records=b.checksum_record(10))
    return b.with_csum([b.SIGNATURE + b.varint(len(head)) + head, *big_chunks()], 1, 10, **options)


@pytest.mark.parametrize("at", [1, 2, 3])
@pytest.mark.parametrize("width", [8, 4])
def test_csum_many_pieces(at, width):
    head = b.header(50, 50, records=b.checksum_record(10))
    parts = [b.SIGNATURE + b.varint(len(head)) + head, *big_chunks()]
    buf = b.with_csum(parts, at, 10, width=width)
    assert len(buf) > 2 * 1024  # three pieces of 2^10 bytes
    assert (decode(buf)[:, :, 0] == b.ramp(50, 50)).all()


@pytest.mark.parametrize("offset", [0, 1024, 1500, -1])
def test_csum_mismatch_in_any_piece(offset):
    buf = bytearray(big_file())
    data_start = buf.index(b"DATA")
    pos = len(buf) - 1 if offset < 0 else data_start + 40 + offset  # inside raw pixel bytes
    buf[pos] ^= 1
    with pytest.raises(Corrupt, match="file checksum mismatch"):
        decode(bytes(buf))
    decode(bytes(buf), verify=False)  # turned off: read as a decoder without checksums would


def test_csum_mismatch_in_an_ancillary_chunk_after_the_table():
    buf = bytearray(csum_file(at=1))
    buf[buf.index(b"note")] ^= 1
    with pytest.raises(Corrupt, match="file checksum mismatch"):
        imij_plugins.open(bytes(buf))


def test_csum_mismatch_explains_a_later_error():
    # 1.4: a table before the failing bytes; a mismatching piece under them is reported instead
    buf = bytearray(csum_file(at=1))
    mode = buf.index(b"DATA") + 5 + len(b.quick_head(2)) + 2  # tag, length, head, unit id and len
    assert buf[mode] == 0
    buf[mode] = 3  # mode 3: Unsupported without the table
    with pytest.raises(Corrupt, match="file checksum mismatch"):
        decode(bytes(buf))
    with pytest.raises(Unsupported, match="mode 3"):
        decode(bytes(buf), verify=False)


def test_error_before_a_trailing_table_stands():
    # 1.4: "When the table comes after them, the error stands"
    buf = bytearray(csum_file(at=4))
    buf[buf.index(b"teXt")] = ord("1")
    with pytest.raises(Corrupt, match="not four ASCII letters"):
        decode(bytes(buf))


@pytest.mark.parametrize("width", [0, 1, 2, 5, 7, 9, 16])
def test_csum_width_must_be_4_or_8(width):
    good = csum_file()
    start = good.index(b"cSUM") + 5
    buf = bytearray(good)
    buf[start + 1] = width
    with pytest.raises(Corrupt, match="width"):
        decode(bytes(buf))


@pytest.mark.parametrize("k", [0, 9, 41, 64, 255])
def test_csum_k_outside_10_to_40(k):
    buf = bytearray(csum_file())
    buf[buf.index(b"cSUM") + 5 + 2] = k
    with pytest.raises(Corrupt):
        decode(bytes(buf))


def edited_table(edit) -> bytes:
    """A csum_file whose cSUM payload is ``edit(algo, width, k, covered, digests)``."""
    good = csum_file()
    start = good.index(b"cSUM")
    length, payload_start = read_varint(good, start + 4, len(good))
    payload = good[payload_start : payload_start + length - 1]
    covered, pos = read_varint(payload, 3, len(payload))
    new = edit(payload[0], payload[1], payload[2], covered, payload[pos:])
    return good[:start] + b.chunk(b"cSUM", new) + good[payload_start + length - 1 :]


def table(algo, width, k, covered, digests):
    return bytes([algo, width, k]) + b.varint(covered) + digests


@pytest.mark.parametrize("delta", [-1, 1, 1000])
def test_csum_covered_len_must_be_the_file_without_the_chunk(delta):
    buf = edited_table(lambda a, w, k, c, d: table(a, w, k, c + delta, d))
    with pytest.raises(Corrupt, match="covered_len"):
        decode(buf)


def test_csum_covered_len_zero():
    with pytest.raises(Corrupt, match="covered_len"):
        decode(edited_table(lambda a, w, k, c, d: table(a, w, k, 0, b"")))


@pytest.mark.parametrize("digests", [lambda d: d + bytes(8), lambda d: d[:-8], lambda d: d[:-1], lambda d: d + b"\0"])
def test_csum_digest_count(digests):
    with pytest.raises(Corrupt, match="digest count"):
        decode(edited_table(lambda a, w, k, c, d: table(a, w, k, c, digests(d))))


def test_csum_truncated_fields():
    for cut in range(0, 4):
        with pytest.raises(Corrupt):
            decode(edited_table(lambda a, w, k, c, d: table(a, w, k, c, d)[:cut]))


@pytest.mark.parametrize(
    "edit",
    [
        lambda a, w, k, c, d: table(1, w, k, c, bytes(len(d))),  # digests that would mismatch
        lambda a, w, k, c, d: table(7, 5, k, c + 1, b"?"),  # nothing after k is checked
        lambda a, w, k, c, d: table(255, w, k, 0, b""),
    ],
)
def test_csum_other_algo_is_skipped(edit):
    # 1.4: "Another algo byte: the chunk is skipped (not checked)"
    buf = edited_table(edit)
    assert (decode(buf) == EXPECTED).all()


def test_csum_other_algo_keeps_the_record_rules():
    # "the record and placement rules still apply"
    buf = b.imi(b.header(2, 2), b.chunk(b"cSUM", table(1, 8, 10, 5, b"")), DATA)  # no header record 2
    with pytest.raises(Corrupt, match="without header record 2"):
        decode(buf)
    assert (decode(buf, verify=False) == EXPECTED).all()


def test_csum_other_algo_k_still_meets_the_record():
    # our reading of "the record ... rules still apply": the fixed algo/width/k bytes are read and
    # k must equal header record 2's, as for any table; nothing after k is looked at
    buf = b.imi(b.header(2, 2, records=b.checksum_record(10)), b.chunk(b"cSUM", bytes([1, 0, 11])), DATA)
    with pytest.raises(Corrupt, match="differs from header record 2"):
        decode(buf)
    assert (decode(buf, verify=False) == EXPECTED).all()


def test_csum_record_without_table():
    with pytest.raises(Corrupt, match="no cSUM"):
        decode(b.imi(b.header(2, 2, records=b.checksum_record(10)), DATA))
    assert (decode(b.imi(b.header(2, 2, records=b.checksum_record(10)), DATA), verify=False) == EXPECTED).all()


def test_csum_table_without_record():
    buf = csum_file(record_k=None)
    with pytest.raises(Corrupt, match="without header record 2"):
        decode(buf)
    assert (decode(buf, verify=False) == EXPECTED).all()


def test_csum_table_k_differs_from_the_record():
    buf = csum_file(k=11, record_k=10)
    with pytest.raises(Corrupt, match="differs from header record 2"):
        decode(buf)
    assert (decode(buf, verify=False) == EXPECTED).all()


@pytest.mark.parametrize("payload", [b"", b"\x0a\x00", bytes([9]), bytes([41])])
def test_malformed_checksum_record_is_reported_with_the_header(payload):
    # 1.4: checked with the header, before the chunks, whether or not a table follows
    head = b.header(2, 2, records=b.record(2, payload))
    with pytest.raises(Corrupt, match="checksum record"):
        decode(b.imi(head, b"!!!!"))


# --- aNIM (1.3) ---------------------------------------------------------------------------


def anim(kind=1, loop=0, frames=1, num=1, den=10, extra=b"") -> bytes:
    return b.chunk(b"aNIM", bytes([kind]) + b.varint(loop) + b.varint(frames) + b.varint(num) + b.varint(den) + extra)


def fram(nested: bytes, present: int = 0) -> bytes:
    return b.chunk(b"fRAM", b.varint(0) + b.varint(0) + b.varint(1) + b.varint(10) + b.varint(present) + nested)


NESTED = b.imi(b.header(2, 2), DATA)


def test_animation_with_frames():
    buf = b.imi(b.header(2, 2), anim(frames=3), DATA, fram(NESTED), fram(NESTED))
    f = imij_plugins.open(buf)
    assert f.n_frames == 3 and f.container.animation.duration == Fraction(1, 10)
    assert (f.read(0) == EXPECTED).all()


@pytest.mark.parametrize("shape", [(4, 4, 3), (300, 300, 3), (1200, 1200, 4)])
def test_writer_csum_checks_out(shape):
    # recompute our writer's table from the file bytes alone (1.4 Coverage, Choosing k)
    image = np.random.default_rng(3).integers(0, 256, size=shape, dtype=np.uint8)
    buf = imij_plugins.encode(image, checksum=True, effort=1)
    f = imij_plugins.open(buf)
    (table,) = f.container.find(b"cSUM")
    assert f.chunks[[t for t, _ in f.chunks].index("cSUM") + 1][0] == "DATA"  # just before DATA
    payload = bytes(f.container.payload(table))
    algo, width, k = payload[:3]
    covered_len, pos = read_varint(payload, 3, len(payload))
    covered = buf[: table.start] + buf[table.end :]
    assert (algo, width) == (0, 8) and covered_len == len(covered)
    assert f.header.record(2).payload == bytes([k])
    pieces = -(-len(covered) // (1 << k))
    if len(covered) <= 1 << 16:
        assert pieces == 1
    else:
        assert pieces <= 16 or k == 20
        assert 16 <= k <= 20
    assert payload[pos:] == b.csum_payload(covered, k)[pos:]
    assert (f.read() == image).all()


@pytest.mark.parametrize("at", [1, 2, 3])
def test_csum_with_an_open_data(at):
    # 1.4: "An open DATA chunk (length 0) changes nothing ... a table after it is found once DATA ends"
    head = b.SIGNATURE + b.varint(len(b.header(2, 2, records=b.checksum_record(10))))
    head += b.header(2, 2, records=b.checksum_record(10))
    parts = [head, b.chunk(b"teXt", b"note"), b.open_chunk(b"DATA", PAYLOAD)]
    buf = b.with_csum(parts, at, 10)
    assert (decode(buf) == EXPECTED).all()
    damaged = bytearray(buf)
    damaged[damaged.index(b"note")] ^= 1
    with pytest.raises(Corrupt, match="file checksum mismatch"):
        decode(bytes(damaged))


@pytest.mark.parametrize("kind", [1, 2])
def test_single_frame_anim(kind):
    assert imij_plugins.open(b.imi(b.header(2, 2), anim(kind=kind), DATA)).n_frames == 1


@pytest.mark.parametrize("frames, count", [(2, 0), (1, 1), (3, 1), (0, 0)])
def test_anim_frame_count_must_match_the_fram_chunks(frames, count):
    buf = b.imi(b.header(2, 2), anim(frames=frames), DATA, *[fram(NESTED)] * count)
    with pytest.raises(Corrupt, match="frame_count"):
        imij_plugins.open(buf)


@pytest.mark.parametrize("kind", [0, 5, 200])
def test_anim_unknown_kind_is_unsupported(kind):
    with pytest.raises(Unsupported, match="kind"):
        imij_plugins.open(b.imi(b.header(2, 2), anim(kind=kind), DATA))


@pytest.mark.parametrize("kind, feature", [(3, "mixed_pages"), (4, "sequence_items")])
def test_anim_gated_kind_without_its_feature_is_corrupt(kind, feature):
    extra = b"\x00" if kind == 4 else b""
    with pytest.raises(Corrupt, match=feature):
        imij_plugins.open(b.imi(b.header(2, 2), anim(kind=kind, extra=extra), DATA))


def test_anim_zero_denominator_is_corrupt():
    with pytest.raises(Corrupt, match="denominator"):
        imij_plugins.open(b.imi(b.header(2, 2), anim(den=0), DATA))


def test_anim_trailing_or_missing_bytes_are_corrupt():
    with pytest.raises(Corrupt, match="trailing"):
        imij_plugins.open(b.imi(b.header(2, 2), anim(extra=b"\x00"), DATA))
    for cut in range(1, 6):
        short = b.chunk(b"aNIM", bytes([1, 0, 1, 1, 10])[:-cut])
        with pytest.raises(Corrupt):
            imij_plugins.open(b.imi(b.header(2, 2), short, DATA))


def test_fram_without_anim_is_corrupt():
    with pytest.raises(Corrupt, match="without aNIM"):
        imij_plugins.open(b.imi(b.header(2, 2), DATA, fram(NESTED)))


def test_anim_after_data_is_corrupt():
    with pytest.raises(Corrupt, match="after DATA"):
        imij_plugins.open(b.imi(b.header(2, 2), DATA, anim()))
