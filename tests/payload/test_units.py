"""The quick-pixel lossless head (2, 2.13), unit records (2.7) and quick unit modes, from
hand-built bytes: head rules, side records, ordering, the unit table hint, the reservation in
its three states, the trailing uIDX index, ordinals, and column groups decoding to the right
pixels."""

from __future__ import annotations

import builders as b
import numpy as np
import pytest
from builders import BIT_SMARTS, H_BIT_SMART, H_PALETTE, H_QUICK, ORDINALS, QUICK

import imij_plugins
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire import read_varint

IMAGE = b.ramp(5, 3)  # 5 rows x 3 columns, Gray u8
ROWS = 2  # stripe_rows: 3 units of 2, 2 and 1 rows
UNITS = b.raw_units(IMAGE[:, :, None], ROWS)
SPANS = [len(u) for u in UNITS]


def payload_file(payload: bytes, *, width: int = 3, height: int = 5, features=(QUICK,), after: bytes = b"",
                 open_data: bool = False) -> bytes:
    data = b.open_chunk(b"DATA", payload) if open_data else b.chunk(b"DATA", payload)
    return b.imi(b.header(width, height, features=features), data, after)


def decode(payload: bytes, **options) -> np.ndarray:
    return imij_plugins.read(payload_file(payload, **options))[:, :, 0]


def with_head(records: bytes | None = None, units=UNITS, **head) -> bytes:
    return b.quick_head(ROWS, records=records, **head) + b"".join(units)


def test_plain_units_decode():
    assert (decode(with_head()) == IMAGE).all()


# --- the head (2, 2.13, 2.13.1) ------------------------------------------------------------


@pytest.mark.parametrize("bit", [2, 5, 6, 7, 8, 20, 63])
def test_unknown_head_presence_bit_is_unsupported(bit):
    with pytest.raises(Unsupported, match="presence bits"):
        decode(with_head(present=H_QUICK | 1 << bit))


@pytest.mark.parametrize("lanes", [0, 17, 255])
def test_lanes_outside_1_to_16_is_corrupt(lanes):
    with pytest.raises(Corrupt, match="lanes"):
        decode(with_head(lanes=lanes))


@pytest.mark.parametrize("lanes", [2, 16])
def test_quick_with_more_than_one_lane_is_corrupt(lanes):
    with pytest.raises(Corrupt, match="lanes"):
        decode(with_head(lanes=lanes))


def test_stripe_rows_zero_is_corrupt():
    with pytest.raises(Corrupt, match="stripe_rows"):
        decode(b.quick_head(0) + b"".join(UNITS))


def test_stripe_rows_past_the_height_is_one_stripe():
    assert (decode(b.quick_head(99) + b"".join(b.raw_units(IMAGE[:, :, None], 5))) == IMAGE).all()


@pytest.mark.parametrize("group_cols", [3, 4, 1000])
def test_group_cols_at_least_width_is_corrupt(group_cols):
    with pytest.raises(Corrupt, match="group_cols"):
        decode(b.quick_head(ROWS, group_cols) + b"".join(UNITS))


def test_group_cols_on_a_one_column_image_is_corrupt():
    # 2: G is 0 or 1 ..= width - 1, so a 1-pixel-wide image has no column groups
    one = b.quick_head(1, 1) + b.unit(b.raw(b"\x05"))
    with pytest.raises(Corrupt, match="group_cols"):
        decode(one, width=1, height=1)


def test_quick_bit_without_feature_quick_pixels_is_corrupt():
    # 0.1: gated syntax in a file whose feature set lacks the feature
    with pytest.raises(Corrupt, match="quick_pixels"):
        decode(with_head(), features=(ORDINALS,))


@pytest.mark.parametrize(
    "present, features",
    [
        (H_BIT_SMART, (QUICK, BIT_SMARTS)),  # bit 4 without bit 3
        (H_QUICK | H_BIT_SMART, (QUICK,)),  # bit 4 without feature 23
    ],
    ids=["no-bit-3", "no-feature-23"],
)
def test_bit_smart_head_bit_rules(present, features):
    # 2.13.1: head bit 4 without bit 3 or without feature 23 is Corrupt
    with pytest.raises(Corrupt, match="bit-smart"):
        decode(with_head(present=present), features=features)


def test_bit_smart_head_bit_with_feature_is_fine():
    assert (decode(with_head(present=H_QUICK | H_BIT_SMART), features=(QUICK, BIT_SMARTS)) == IMAGE).all()


def test_palette_bit_with_quick_is_corrupt():
    # 2.13: palette syntax MUST NOT accompany quick coding
    with pytest.raises(Corrupt, match="palette"):
        decode(with_head(present=H_QUICK | H_PALETTE))


@pytest.mark.parametrize("rid", [19, 25, 35])
def test_gated_lossless_head_records_in_a_quick_payload_are_corrupt(rid):
    # 2.13: near-lossless, bilevel (and template) syntax must not accompany quick coding; the
    # file does not declare their features either (0.1: gated syntax)
    with pytest.raises(Corrupt, match=f"record {rid}"):
        decode(with_head(b.record(rid, b"\x00")))


@pytest.mark.parametrize("rid", [1, 5, 7, 11, 13, 21, 27, 29, 39, 41, 1001])
def test_unknown_odd_head_record_is_unsupported(rid):
    with pytest.raises(Unsupported, match=f"head record {rid}"):
        decode(with_head(b.record(rid, b"")))


@pytest.mark.parametrize("rid", [0, 2, 4, 6, 8, 14, 38, 1000])
def test_unknown_even_head_record_is_skipped(rid):
    assert (decode(with_head(b.record(rid, b"\xff\x00anything"))) == IMAGE).all()


def test_head_records_10_and_12_together_are_corrupt():
    with pytest.raises(Corrupt, match="unit table twice"):
        decode(with_head(b.hint(SPANS) + b.reservation(0)))


@pytest.mark.parametrize(
    "records",
    [
        b.record(6) + b.record(6),  # repeated id
        b.record(8) + b.record(6),  # decreasing ids
        b"\x06\x05abc",  # overruns the list
        b"\x06",  # truncated
    ],
)
def test_head_record_list_framing(records):
    with pytest.raises(Corrupt):
        decode(with_head(records))


def test_records_len_past_the_payload_is_corrupt():
    head = b.varint(H_QUICK | 2) + b"\x01" + b.varint(ROWS) + b.varint(0) + b.varint(200)
    with pytest.raises(Corrupt):
        decode(head + b"".join(UNITS))


@pytest.mark.parametrize("cut", range(1, 5))
def test_truncated_head_is_corrupt(cut):
    with pytest.raises(Corrupt):
        decode(b.quick_head(ROWS)[:-cut])


# --- unit records (2.7) -------------------------------------------------------------------


@pytest.mark.parametrize("side", [b"", b"\x00", b"whatever it holds"])
def test_side_record_is_skipped(side):
    units = [b.record(8, side) + UNITS[0], UNITS[1], b.record(8, side) + UNITS[2]]
    assert (decode(with_head(units=units)) == IMAGE).all()


def test_two_side_records_are_corrupt():
    units = [b.record(8) + b.record(8) + UNITS[0], *UNITS[1:]]
    with pytest.raises(Corrupt, match="unit record 8"):
        decode(with_head(units=units))


@pytest.mark.parametrize("rid", [0, 2, 4, 6, 10, 30, 32])
def test_wrong_even_id_is_corrupt(rid):
    # 2.7: an even id other than the expected side record's
    units = [UNITS[0], b.record(rid, b"x") + UNITS[1], UNITS[2]]
    with pytest.raises(Corrupt, match=f"unit record {rid}"):
        decode(with_head(units=units))


@pytest.mark.parametrize("rid", [1, 3, 5, 7, 31])
def test_known_main_record_where_9_is_expected_is_corrupt(rid):
    units = [UNITS[0], b.unit(UNITS[1][2:], rid=rid), UNITS[2]]
    with pytest.raises(Corrupt, match=f"unit record {rid}"):
        decode(with_head(units=units))


@pytest.mark.parametrize("rid", [11, 13, 33, 99, 2**40 + 1])
def test_unknown_odd_unit_record_is_unsupported(rid):
    units = [UNITS[0], b.unit(UNITS[1][2:], rid=rid), UNITS[2]]
    with pytest.raises(Unsupported, match="unknown unit record"):
        decode(with_head(units=units))


def test_side_record_then_unknown_odd_id_is_unsupported():
    units = [b.record(8) + b.unit(UNITS[0][2:], rid=11), *UNITS[1:]]
    with pytest.raises(Unsupported, match="unknown unit record"):
        decode(with_head(units=units))


def test_unit_record_overrunning_the_payload_is_corrupt():
    last = b"\x09" + b.varint(len(UNITS[2]) - 2 + 1) + UNITS[2][2:]
    with pytest.raises(Corrupt, match="runs past"):
        decode(with_head(units=[*UNITS[:2], last]))


def test_side_record_overrunning_the_payload_is_corrupt():
    with pytest.raises(Corrupt):
        decode(with_head(units=[*UNITS[:2], b"\x08\x7f" + UNITS[2]]))


@pytest.mark.parametrize("extra", [b"\x00", b"\x09\x00", UNITS[2], b.record(8)])
def test_bytes_after_the_last_record_are_corrupt(extra):
    with pytest.raises(Corrupt, match="after the last unit record"):
        decode(with_head(units=[*UNITS, extra]))


def test_too_few_records_is_corrupt():
    with pytest.raises(Corrupt):
        decode(with_head(units=UNITS[:2]))


def test_unit_count_past_the_bytes_is_corrupt():
    # 2.7: "a head naming more units than the bytes after it is Corrupt before anything is allocated"
    head = b.quick_head(1)  # 5 units
    with pytest.raises(Corrupt, match="stripe count exceeds data"):
        decode(head + b"\x09\x00\x09\x00")


def test_huge_unit_count_is_rejected_before_allocating():
    buf = b.imi(b.header(2**32 - 1, 2**32 - 1), b.chunk(b"DATA", b.quick_head(1, 1) + b"\x09\x01\x00"))
    with pytest.raises(Corrupt, match="stripe count exceeds data"):
        imij_plugins.open(buf).payload()


def test_non_minimal_unit_record_id_is_corrupt():
    units = [b"\x89\x00" + UNITS[0][1:], *UNITS[1:]]
    with pytest.raises(Corrupt, match="non-minimal"):
        decode(with_head(units=units))


# --- the unit table hint (head record 10) ---------------------------------------------------


def test_hint_matching_the_records():
    assert (decode(with_head(b.hint(SPANS))) == IMAGE).all()


def test_hint_spans_include_side_records():
    units = [UNITS[0], b.record(8, b"side") + UNITS[1], UNITS[2]]
    spans = [len(u) for u in units]
    assert (decode(with_head(b.hint(spans), units=units)) == IMAGE).all()
    with pytest.raises(Corrupt, match="does not match"):
        decode(with_head(b.hint(SPANS), units=units[:2] + [units[2]]))


def test_hint_on_a_single_unit():
    units = b.raw_units(IMAGE[:, :, None], 5)
    assert (decode(b.quick_head(5, records=b.hint([len(units[0])])) + units[0]) == IMAGE).all()


@pytest.mark.parametrize("spans", [SPANS[:2], SPANS + [2], []], ids=["short", "long", "empty"])
def test_hint_count_mismatch(spans):
    with pytest.raises(Corrupt, match="unit table length"):
        decode(with_head(b.hint(spans)))


@pytest.mark.parametrize("entry", [0, 1])
def test_hint_entry_below_2(entry):
    with pytest.raises(Corrupt, match="unit table entry"):
        decode(with_head(b.hint([SPANS[0], entry, SPANS[2]])))


def test_hint_summing_past_data():
    with pytest.raises(Corrupt, match="unit table exceeds DATA"):
        decode(with_head(b.hint([SPANS[0], SPANS[1], SPANS[2] + 1])))


@pytest.mark.parametrize(
    "spans",
    [
        [SPANS[0], SPANS[2], SPANS[1]],  # same sum, wrong places
        [SPANS[0], SPANS[1], SPANS[2] - 1],  # short of the records
    ],
)
def test_hint_not_matching_the_records(spans):
    assert spans != SPANS
    with pytest.raises(Corrupt, match="does not match"):
        decode(with_head(b.hint(spans)))


def test_hint_truncated_varint():
    with pytest.raises(Corrupt):
        decode(with_head(b.record(10, bytes([SPANS[0], SPANS[1], 0x80]))))


# --- the unit table reservation (head record 12) ---------------------------------------------


@pytest.mark.parametrize("state", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 7, 2 + 3 * 4])
def test_reservation_empty_and_check_tail(state, padding):
    assert (decode(with_head(b.reservation(state, padding=padding))) == IMAGE).all()


def test_reservation_check_tail_without_padding_is_three_bytes():
    # 2.7: "writes the record with no padding (3 bytes: id 12, length 1, state 1)"
    assert b.reservation(1) == b"\x0c\x01\x01"
    assert (decode(with_head(b"\x0c\x01\x01")) == IMAGE).all()


@pytest.mark.parametrize("width", [1, 2, 3, 8])
def test_reservation_filled(width):
    assert (decode(with_head(b.reservation(2, width=width, spans=SPANS))) == IMAGE).all()


@pytest.mark.parametrize(
    "spans, reason",
    [
        ([SPANS[0], SPANS[2], SPANS[1]], "does not match"),
        ([SPANS[0], 1, SPANS[2]], "unit table entry"),
        ([SPANS[0], 0, SPANS[2]], "unit table entry"),
        ([SPANS[0], SPANS[1], SPANS[2] + 1], "exceeds DATA"),
    ],
)
def test_reservation_filled_is_checked_like_the_hint(spans, reason):
    with pytest.raises(Corrupt, match=reason):
        decode(with_head(b.reservation(2, width=2, spans=spans)))


@pytest.mark.parametrize("state", [3, 4, 128, 255])
def test_reservation_bad_state(state):
    with pytest.raises(Corrupt, match="state"):
        decode(with_head(b.record(12, bytes([state]) + bytes(8))))


@pytest.mark.parametrize("width", [0, 9, 255])
def test_reservation_bad_width(width):
    with pytest.raises(Corrupt, match="width"):
        decode(with_head(b.record(12, bytes([2, width]) + bytes(3 * max(width, 1)))))


@pytest.mark.parametrize("delta", [-1, 1, -3])
def test_reservation_filled_wrong_length(delta):
    rec = b.reservation(2, width=1, spans=SPANS)[2:]
    body = rec + bytes(delta) if delta > 0 else rec[:delta]
    with pytest.raises(Corrupt, match="unit table length"):
        decode(with_head(b.record(12, body)))


@pytest.mark.parametrize("state", [0, 1])
@pytest.mark.parametrize("pad", [b"\x01", b"\x00\x00\x80", b"\x00" * 5 + b"\x01"])
def test_reservation_nonzero_padding(state, pad):
    with pytest.raises(Corrupt, match="padding"):
        decode(with_head(b.record(12, bytes([state]) + pad)))


@pytest.mark.parametrize("body", [b"", b"\x02"])
def test_reservation_truncated(body):
    with pytest.raises(Corrupt):
        decode(with_head(b.record(12, body)))


# --- the trailing unit index (uIDX, 2.7) ------------------------------------------------------

CHECK_TAIL = with_head(b.reservation(1, padding=2 + 3))


def tail_file(payload: bytes = CHECK_TAIL, *, spans=SPANS, data_len: int | None = None, after: bytes = b"",
              **options) -> bytes:
    index = b.uidx(spans, len(payload) if data_len is None else data_len, **options)
    return payload_file(payload, after=index + after)


def test_uidx_found_and_checked():
    assert (imij_plugins.read(tail_file())[:, :, 0] == IMAGE).all()
    assert (imij_plugins.read(tail_file(b.quick_head(ROWS, records=b"\x0c\x01\x01") + b"".join(UNITS)))[:, :, 0] == IMAGE).all()


@pytest.mark.parametrize("delta", [-1, 1, 100])
def test_uidx_data_len_mismatch(delta):
    with pytest.raises(Corrupt, match="unit index for another DATA"):
        imij_plugins.read(tail_file(data_len=len(CHECK_TAIL) + delta))


@pytest.mark.parametrize(
    "spans, reason",
    [
        ([SPANS[0], SPANS[2], SPANS[1]], "does not match"),
        ([SPANS[0], SPANS[1], SPANS[2] + 1], "exceeds DATA|does not match"),
        ([SPANS[0], SPANS[1] + SPANS[2]], "unit table length"),
        (SPANS + [2], "unit table length"),
        ([SPANS[0], 1, SPANS[1] + SPANS[2] - 1], "unit table entry"),
    ],
)
def test_uidx_spans_checked_like_the_hint(spans, reason):
    with pytest.raises(Corrupt, match=reason):
        imij_plugins.read(tail_file(spans=spans))


def test_uidx_with_an_open_data():
    # 2.7: an open DATA's data_len is where its records end, before the index starts
    buf = payload_file(CHECK_TAIL, open_data=True, after=b.uidx(SPANS, len(CHECK_TAIL)))
    assert (imij_plugins.read(buf)[:, :, 0] == IMAGE).all()
    bad = payload_file(CHECK_TAIL, open_data=True, after=b.uidx(SPANS, len(CHECK_TAIL) + 1))
    with pytest.raises(Corrupt, match="unit index for another DATA"):
        imij_plugins.read(bad)


BAD_SPANS = [SPANS[0], SPANS[2], SPANS[1]]  # Corrupt if the index were found


def test_streaming_writer_layout():
    # 1.4 / 2.7: a streaming writer writes an open DATA with check tail, then cSUM, then uIDX last
    head = b.header(3, 5, records=b.checksum_record(10))
    parts = [b.SIGNATURE + b.varint(len(head)) + head, b.open_chunk(b"DATA", CHECK_TAIL), b.uidx(SPANS, len(CHECK_TAIL))]
    buf = b.with_csum(parts, 2, 10)
    f = imij_plugins.open(buf)
    assert [t for t, _ in f.chunks] == ["DATA", "cSUM", "uIDX"]
    assert f.container.trailing_index() is not None
    assert (f.read()[:, :, 0] == IMAGE).all()
    parts[2] = b.uidx(BAD_SPANS, len(CHECK_TAIL))
    with pytest.raises(Corrupt, match="does not match"):
        imij_plugins.read(b.with_csum(parts, 2, 10))


@pytest.mark.parametrize(
    "buf",
    [
        tail_file(spans=BAD_SPANS, after=b.chunk(b"teXt", b"x")),  # not the last chunk
        tail_file(spans=BAD_SPANS, chunk_len=0),  # chunk_len is not its length
        tail_file(spans=BAD_SPANS, chunk_len=1 << 63),
        payload_file(CHECK_TAIL, after=b.chunk(b"uIDX", bytes(15) + b"uIDX")),  # payload under 20 bytes
        payload_file(CHECK_TAIL, after=b.chunk(b"uIDX", b"")),
        payload_file(CHECK_TAIL, after=b.chunk(b"uIDX", b"\x07\x07\x07" + bytes(20))),  # not ending in uIDX
    ],
    ids=["not-last", "chunk_len-0", "chunk_len-huge", "short", "empty", "no-tag"],
)
def test_uidx_not_found_is_skipped(buf):
    assert (imij_plugins.read(buf)[:, :, 0] == IMAGE).all()


@pytest.mark.parametrize(
    "records",
    [None, b.record(6), b.reservation(0, padding=5), b.hint(SPANS), b.reservation(2, width=1, spans=SPANS)],
    ids=["no-records", "no-record-12", "empty", "hint", "filled"],
)
def test_uidx_without_a_check_tail_head_is_skipped(records):
    # 2.7 One index in use: the uIDX chunk "is skipped whatever it holds"
    for index in (b.uidx(BAD_SPANS, 12345), b.uidx([0], 0), b.chunk(b"uIDX", b"junk")):
        assert (imij_plugins.read(payload_file(with_head(records), after=index))[:, :, 0] == IMAGE).all()


def test_uidx_before_data_is_corrupt_even_unused():
    buf = b.imi(b.header(3, 5), b.uidx(SPANS, len(CHECK_TAIL)), b.chunk(b"DATA", CHECK_TAIL))
    with pytest.raises(Corrupt, match="before DATA"):
        imij_plugins.open(buf)


# --- unit record ordinals (head record 37) ---------------------------------------------------

ORD_FEATURES = (QUICK, ORDINALS)


def ordinal_units(ordinals) -> list[bytes]:
    return [b.unit(u[2:], ordinal=o) for u, o in zip(UNITS, ordinals)]


def test_ordinals():
    units = ordinal_units([0, 1, 2])
    payload = with_head(b.hint([len(u) for u in units]) + b.record(37), units=units)
    assert (decode(payload, features=ORD_FEATURES) == IMAGE).all()


def test_ordinals_with_side_records():
    units = ordinal_units([0, 1, 2])
    units[1] = b.record(8, b"side") + units[1]
    assert (decode(with_head(b.record(37), units=units), features=ORD_FEATURES) == IMAGE).all()


@pytest.mark.parametrize("ordinals", [[0, 0, 2], [1, 0, 2], [0, 1, 3], [1, 2, 3]])
def test_ordinal_mismatch(ordinals):
    with pytest.raises(Corrupt, match="ordinal"):
        decode(with_head(b.record(37), units=ordinal_units(ordinals)), features=ORD_FEATURES)


def test_record_37_without_the_feature():
    with pytest.raises(Corrupt, match="unit_ordinals"):
        decode(with_head(b.record(37), units=ordinal_units([0, 1, 2])))


def test_record_37_with_a_payload():
    with pytest.raises(Corrupt, match="non-empty"):
        decode(with_head(b.record(37, b"\x00"), units=ordinal_units([0, 1, 2])), features=ORD_FEATURES)


def test_ordinal_missing_from_an_empty_record():
    units = ordinal_units([0, 1, 2])
    units[2] = b"\x09\x00"
    with pytest.raises(Corrupt):
        decode(with_head(b.record(37), units=units), features=ORD_FEATURES)


def test_feature_without_record_37_means_no_ordinals():
    # over-declaring is allowed (0.1): without the head record the records carry no ordinal
    assert (decode(with_head(), features=ORD_FEATURES) == IMAGE).all()


# --- quick unit modes (2.13) ----------------------------------------------------------------


def one_unit(body: bytes, *, present: int = H_QUICK, features=(QUICK,), width=2, height=2) -> np.ndarray:
    payload = b.quick_head(height, present=present) + b.unit(body)
    return imij_plugins.read(payload_file(payload, width=width, height=height, features=features))[:, :, 0]


def test_raw_unit():
    assert one_unit(b"\x00\x01\x02\x03\x04").tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("body", [b"\x00\x01\x02\x03", b"\x00\x01\x02\x03\x04\x05", b"\x00"])
def test_raw_unit_wrong_length(body):
    with pytest.raises(Corrupt, match="raw body"):
        one_unit(body)


def test_empty_unit_record_misses_its_mode_byte():
    with pytest.raises(Corrupt, match="mode"):
        one_unit(b"")


@pytest.mark.parametrize("body, present, features", [
    (b"\x01", H_QUICK, (QUICK,)),  # packets with no packet
    (b"\x01\xfe", H_QUICK, (QUICK,)),  # a literal without its word
    (b"\x02", H_QUICK | H_BIT_SMART, (QUICK, BIT_SMARTS)),  # bit-smart without its plane lengths
    (b"\x02\x02\x02", H_QUICK | H_BIT_SMART, (QUICK, BIT_SMARTS)),  # a plane shorter than its length
])
def test_missing_body_bytes_are_corrupt(body, present, features):
    with pytest.raises(Corrupt):
        one_unit(body, present=present, features=features)


def test_raw_samples_are_little_endian():
    payload = b.quick_head(1) + b.unit(b"\x00\x34\x12\x78\x56")
    buf = b.imi(b.header(2, 1, sample=1), b.chunk(b"DATA", payload))
    assert imij_plugins.read(buf)[0, :, 0].tolist() == [0x1234, 0x5678]


@pytest.mark.parametrize("mode", [3, 4, 127, 255])
def test_unknown_unit_mode_is_unsupported(mode):
    with pytest.raises(Unsupported, match=f"mode {mode}"):
        one_unit(bytes([mode, 1, 2, 3, 4]))


def test_packet_unit():
    # mode 1: FE + one gray word outputs a pixel, then 11xxxxxx repeats it xxxxxx + 1 times
    assert one_unit(b"\x01\xfe\x07\xc2").tolist() == [[7, 7], [7, 7]]


def test_bit_smart_unit():
    # mode 2: N = 1 plane (Gray u8): its body length 2, then kind 2 and its constant byte
    body = b"\x02\x02\x02\x33"
    got = one_unit(body, present=H_QUICK | H_BIT_SMART, features=(QUICK, BIT_SMARTS))
    assert got.tolist() == [[0x33, 0x33], [0x33, 0x33]]


@pytest.mark.parametrize("features", [(QUICK,), (QUICK, BIT_SMARTS)])
def test_bit_smart_unit_without_head_bit_4_is_corrupt(features):
    # 2.13.1: "A mode-2 unit without head bit 4 is Corrupt", whatever the feature mask says
    with pytest.raises(Corrupt, match="bit 4"):
        one_unit(b"\x02\x02\x02\x33", features=features)


def test_modes_mix_across_units():
    # 3 x 4, H = 2, G = 2: a raw, a packet, a bit-smart and a raw unit
    units = [
        b.unit(b"\x00\x01\x02\x03\x04"),  # rows 0-1, cols 0-1
        b.unit(b"\x01\xfe\x09\xc0"),  # rows 0-1, col 2: a literal 9, then a run of one
        b.unit(b"\x02\x02\x02\x05"),  # rows 2-3, cols 0-1: a constant plane of 5
        b.unit(b"\x00\x06\x07"),  # rows 2-3, col 2
    ]
    payload = b.quick_head(2, 2, present=H_QUICK | H_BIT_SMART) + b"".join(units)
    got = imij_plugins.read(payload_file(payload, width=3, height=4, features=(QUICK, BIT_SMARTS)))[:, :, 0]
    assert got.tolist() == [[1, 2, 9], [3, 4, 9], [5, 5, 6], [5, 5, 7]]


# --- column groups and stripes (2.3) ----------------------------------------------------------


def test_column_groups_by_hand():
    # 3 x 2 Gray image, H = 1, G = 2: units (row 0, cols 0-1), (row 0, col 2), (row 1, cols 0-1), (row 1, col 2)
    units = [b.unit(b"\x00\x0a\x0b"), b.unit(b"\x00\x0c"), b.unit(b"\x00\x14\x15"), b.unit(b"\x00\x16")]
    payload = b.quick_head(1, 2) + b"".join(units)
    got = imij_plugins.read(payload_file(payload, width=3, height=2))[:, :, 0]
    assert got.tolist() == [[10, 11, 12], [20, 21, 22]]


def test_column_groups_rgb_u16():
    # 5 x 5 RGB u16, H = 2, G = 2: 3 stripes x 3 groups, the last of each 1 column wide
    rng = np.random.default_rng(7)
    image = rng.integers(0, 65536, size=(5, 5, 3), dtype=np.uint16)
    units = b.raw_units(image, 2, 2)
    assert len(units) == 9 and len(units[2]) == 2 + 1 + 2 * 1 * 3 * 2  # id, len, mode, 2 rows x 1 col x RGB x 2 bytes
    payload = b.quick_head(2, 2, records=b.hint([len(u) for u in units])) + b"".join(units)
    buf = b.imi(b.header(5, 5, sample=1, channels=3), b.chunk(b"DATA", payload))
    got = imij_plugins.read(buf)
    assert got.dtype == np.uint16 and (got == image).all()
    assert (imij_plugins.read(buf, region=(1, 3, 3, 2)) == image[3:5, 1:4]).all()


def test_column_group_units_are_stripe_major():
    # swapping two units of one stripe moves their pixels: the order is stripe-major, then group
    image = b.ramp(4, 4)
    units = b.raw_units(image[:, :, None], 2, 2)
    swapped = [units[1], units[0], *units[2:]]
    got = imij_plugins.read(payload_file(b.quick_head(2, 2) + b"".join(swapped), width=4, height=4))[:, :, 0]
    assert (got[:2, :2] == image[:2, 2:]).all() and (got[:2, 2:] == image[:2, :2]).all()
    assert (got[2:] == image[2:]).all()


# --- what our writer writes (2.7 Writers) -----------------------------------------------------


def walk_by_hand(payload: bytes) -> tuple[int, list[bytes], list[int]]:
    """The quick head's present, its head records' raw bytes and the unit spans, by hand."""
    present, pos = read_varint(payload, 0, len(payload))
    pos += 1  # lanes
    _, pos = read_varint(payload, pos, len(payload))
    _, pos = read_varint(payload, pos, len(payload))
    records = b""
    if present & 2:
        n, pos = read_varint(payload, pos, len(payload))
        records, pos = payload[pos : pos + n], pos + n
    spans = []
    while pos < len(payload):
        start = pos
        rid, pos = read_varint(payload, pos, len(payload))
        assert rid == 9
        n, pos = read_varint(payload, pos, len(payload))
        pos += n
        spans.append(pos - start)
    assert pos == len(payload)
    return present, records, spans


@pytest.mark.parametrize("shape, rows, cols", [((40, 30), 7, 0), ((40, 30), 16, 8), ((9, 9), 1, 1)])
def test_writer_hint_matches_its_records(shape, rows, cols):
    image = (np.arange(shape[0] * shape[1]) % 253).astype(np.uint8).reshape(shape)
    buf = imij_plugins.encode(image, stripe_rows=rows, group_cols=cols, codec="quick")
    f = imij_plugins.open(buf)
    present, records, spans = walk_by_hand(bytes(f.container.payload(f.container.data)))
    assert present & H_QUICK and not present & H_PALETTE
    assert records == b.hint(spans)  # head record 10 and nothing else
    assert (f.read()[:, :, 0] == image).all()


def test_writer_single_unit_has_no_hint():
    f = imij_plugins.open(imij_plugins.encode(np.zeros((4, 4), np.uint8), codec="quick"))
    present, records, spans = walk_by_hand(bytes(f.container.payload(f.container.data)))
    assert len(spans) == 1 and records == b"" and not present & 2


# --------------------------------------------------------------------------- the writers' side


def test_unit_record_writers_byte_exact():
    """2.7 from the spec's rules: a record's id 9 and its length (which counts the ordinal), the
    unit table records of each mode, and the payload joined with each body dropped once copied."""
    from imij_plugins.payload.head import REC_UNIT_RESERVE, REC_UNIT_TABLE
    from imij_plugins.payload.units import join_units, record_prefix, unit_table_records
    from imij_plugins.wire.records import Record

    assert record_prefix(0, 5, False) == bytes([9, 5])
    assert record_prefix(200, 5, True) == bytes([9, 7, 0xC8, 0x01])  # ordinal 200: two bytes
    assert unit_table_records([5, 300], "hint") == [Record(REC_UNIT_TABLE, bytes([5, 0xAC, 0x02]))]
    assert unit_table_records([5], "hint") == []  # one unit: no hint
    assert unit_table_records([5, 300], "filled") == [Record(REC_UNIT_RESERVE, bytes([2, 2, 5, 0, 0x2C, 0x01]))]
    assert unit_table_records([5, 300], "empty") == [Record(REC_UNIT_RESERVE, bytes([0]))]
    assert unit_table_records([5, 300], "tail") == [Record(REC_UNIT_RESERVE, bytes([1]))]
    assert unit_table_records([5, 300], "none") == []
    with pytest.raises(ValueError):
        unit_table_records([5], "elsewhere")
    bodies = [b"abc", b"de"]
    assert join_units(b"H", [b"\x09\x03", b"\x09\x02"], bodies) == b"H\x09\x03abc\x09\x02de"
    assert bodies == [b"", b""]
