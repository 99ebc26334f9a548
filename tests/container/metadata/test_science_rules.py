"""The 1.5 rules between science records, per-record reports, the writer of a record set, and plane sets."""

import pytest

from imij_plugins.container.metadata import (
    AttachmentEntry,
    Axes,
    Axis,
    Calibration,
    Categories,
    Category,
    ChannelCalibration,
    Coordinates,
    MalformedRecord,
    StructuredMetadata,
    encode_attachment,
    parse_record,
    plane_set_records,
    read_attachment,
    science_chunks,
    science_records,
)

from .science_bytes import XY, axes, axis, calb, calb_entry, category, catg, cord, entry, f64, smdt

CALB1 = calb(calb_entry(0x02, b"\x01K"))
AXES_Z = axes(*XY, axis("z", 0, 0))  # one coordinate-bound axis
CATG1 = catg([category(1, name="cell")])


def statuses(records):
    return [(r.tag, r.status) for r in records.reports]


def test_every_record_parsed_and_reachable():
    chunks = [(b"cALB", CALB1), (b"aXES", AXES_Z), (b"cORD", cord(4)), (b"cATG", CATG1), (b"sMDT", smdt()),
              (b"sMDT", smdt("wkt2", fmt=0)), (b"iCCP", b"ignored"), (b"DATA", b"")]
    r = science_records(chunks, channels=1)
    assert all(rep.status == "parsed" and rep.reason == "" for rep in r.reports) and len(r.reports) == 6
    assert r.calibration.channels[0].unit == "K" and r.axes.coordinate_axes == 1
    assert r.coordinates.values == (4,) and r.categories.is_categorical(0)
    assert [s.schema for s in r.structured] == ["cf-1.12", "wkt2"]


def test_unknown_record_is_reported_as_skipped_not_as_an_error():
    # 1.5: "A reader skips a record whose version it does not know"
    r = science_records([(b"cALB", bytes([2]) + CALB1[1:]), (b"sMDT", smdt(fmt=9))], channels=1)
    assert statuses(r) == [(b"cALB", "unknown"), (b"sMDT", "unknown")]
    assert "version 2" in r.reports[0].reason and "format 9" in r.reports[1].reason
    assert r.calibration is None and r.structured == ()


def test_malformed_record_is_reported_with_its_reason():
    # 1.5: "Malformed records never fail an image decode; a reader of the records reports them"
    r = science_records([(b"cATG", catg([category(2), category(1)])), (b"cALB", CALB1)], channels=1)
    assert statuses(r) == [(b"cATG", "malformed"), (b"cALB", "parsed")]
    assert "strictly increasing" in r.reports[0].reason and r.reports[0].value is None


@pytest.mark.parametrize("tag, payload", [(b"cALB", CALB1), (b"aXES", axes(*XY)), (b"cORD", cord(1)), (b"cATG", CATG1)])
def test_once_only_records_repeated_are_malformed(tag, payload):
    # 1.5: "cALB, aXES, cORD and cATG occur at most once"; "a repeated record" makes it malformed
    chunks = [(tag, payload), (tag, payload)] + ([(b"aXES", AXES_Z)] if tag == b"cORD" else [])
    r = science_records(chunks, channels=1)
    assert [s for t, s in statuses(r) if t == tag] == ["malformed", "malformed"]
    assert "at most once" in r.reports[0].reason


def test_a_repeat_of_an_unknown_version_still_counts():
    r = science_records([(b"cALB", CALB1), (b"cALB", bytes([7]))], channels=1)
    assert statuses(r) == [(b"cALB", "malformed"), (b"cALB", "unknown")]


def test_smdt_at_most_64():
    # 1.5: "sMDT occurs at most 64 times"
    ok = [(b"sMDT", smdt(f"s{i}")) for i in range(64)]
    assert {s for _, s in statuses(science_records(ok, 1))} == {"parsed"}
    r = science_records(ok + [(b"sMDT", smdt("s64"))], 1)
    assert {s for _, s in statuses(r)} == {"malformed"} and "at most 64" in r.reports[0].reason


def test_smdt_schema_ids_distinct():
    # 1.5: sMDT occurs "with distinct schema ids"
    r = science_records([(b"sMDT", smdt("a")), (b"sMDT", smdt("b")), (b"sMDT", smdt("a", fmt=0))], 1)
    assert [s for _, s in statuses(r)] == ["malformed", "parsed", "malformed"]
    assert "'a' repeated" in r.reports[0].reason
    skipped = science_records([(b"sMDT", smdt("a")), (b"sMDT", smdt("a", fmt=7))], 1)  # a skipped one has no schema id
    assert [s for _, s in statuses(skipped)] == ["parsed", "unknown"]


@pytest.mark.parametrize("tag, payload", [
    (b"cALB", calb(calb_entry(), calb_entry())),
    (b"cATG", catg([category(1)], [])),
])
def test_channel_count_must_be_the_images(tag, payload):
    # 1.5: "count u8 C = the image's channel count"
    assert statuses(science_records([(tag, payload)], channels=2)) == [(tag, "parsed")]
    r = science_records([(tag, payload)], channels=3)
    assert statuses(r) == [(tag, "malformed")] and "the image has 3 channels" in r.reports[0].reason


def test_cord_without_axes_is_malformed():
    # 1.5: "A cORD without an aXES ... is malformed"
    r = science_records([(b"cORD", cord(1))], 1)
    assert statuses(r) == [(b"cORD", "malformed")] and "without an aXES" in r.reports[0].reason


def test_cord_k_must_match_the_coordinate_bound_axes():
    # 1.5: "or whose K differs from that record's number of coordinate-bound axes, is malformed"
    assert statuses(science_records([(b"aXES", AXES_Z), (b"cORD", cord(1))], 1))[1] == (b"cORD", "parsed")
    r = science_records([(b"aXES", AXES_Z), (b"cORD", cord(1, 2))], 1)
    assert statuses(r)[1] == (b"cORD", "malformed") and "K = 2" in r.reports[1].reason
    r = science_records([(b"aXES", axes(*XY)), (b"cORD", cord(1))], 1)
    assert statuses(r)[1] == (b"cORD", "malformed")


def test_cord_whose_axes_was_skipped_is_skipped():
    # 1.5: "A reader skips ... a cORD whose aXES it skipped"
    r = science_records([(b"cORD", cord(1)), (b"aXES", bytes([2]))], 1)
    assert statuses(r) == [(b"cORD", "unknown"), (b"aXES", "unknown")] and "skipped" in r.reports[0].reason


def test_cord_whose_axes_is_malformed_is_malformed():
    # SPEC_NOTES: a malformed aXES gives the cORD nothing to be checked against
    r = science_records([(b"aXES", axes(*XY, flags=8)), (b"cORD", cord(1))], 1)
    assert statuses(r) == [(b"aXES", "malformed"), (b"cORD", "malformed")]
    assert "aXES is malformed" in r.reports[1].reason


def test_categorical_channel_keeps_slope_1_offset_0():
    # 1.5: "A categorical channel with any other slope or offset is malformed" (its cALB entry, if any)
    two = catg([category(1)], [])  # channel 0 categorical, channel 1 not
    scaled = calb(calb_entry(0x01, f64(2.0, 0.0)), calb_entry())
    r = science_records([(b"cALB", scaled), (b"cATG", two)], 2)
    assert statuses(r) == [(b"cALB", "malformed"), (b"cATG", "parsed")] and "categorical" in r.reports[0].reason
    offset = calb(calb_entry(0x01, f64(1.0, 0.5)), calb_entry())
    assert statuses(science_records([(b"cALB", offset), (b"cATG", two)], 2))[0] == (b"cALB", "malformed")
    fine = [
        calb(calb_entry(0x01, f64(1.0, 0.0)), calb_entry()),  # stated 1 and 0
        calb(calb_entry(0x01, f64(1.0, -0.0)), calb_entry()),  # -0 equals 0
        calb(calb_entry(0x10, f64(0.0), nodata=(255.0,)), calb_entry(0x01, f64(3.0, 1.0))),  # nodata stays; ch 1 free
    ]
    for payload in fine:
        r = science_records([(b"cALB", payload), (b"cATG", two)], 2)
        assert statuses(r) == [(b"cALB", "parsed"), (b"cATG", "parsed")]


def test_parse_record_alone():
    assert parse_record(b"cORD", cord(1)).status == "parsed"  # no cross-record rules
    assert parse_record(b"cORD", cord()).status == "malformed"


# --- writing a set of records --------------------------------------------------------------------


def test_science_chunks_round_trip():
    xyz = Axes((Axis("x", 0, 1), Axis("y", 0, 2), Axis("z", 0, 0, "um")))
    chunks = science_chunks(
        2,
        calibration=Calibration((ChannelCalibration(), ChannelCalibration(slope=0.5, offset=1.0))),
        axes=xyz,
        coordinates=Coordinates((-3,)),
        categories=Categories(((Category(0, name="bg"), Category(1, name="fg")), ())),
        structured=[StructuredMetadata.from_bytes(smdt())],
    )
    assert [t for t, _ in chunks] == [b"cALB", b"aXES", b"cORD", b"cATG", b"sMDT"]
    r = science_records(chunks, 2)
    assert r.axes == xyz and r.coordinates == Coordinates((-3,)) and r.structured[0].body == b"\x00pack"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"coordinates": Coordinates((1,))}, "without an aXES"),
        ({"calibration": Calibration((ChannelCalibration(),) * 2)}, "the image has 1 channels"),
        (
            {"calibration": Calibration((ChannelCalibration(slope=2.0, offset=0.0),)),
             "categories": Categories(((Category(1),),))},
            "categorical",
        ),
        ({"structured": [StructuredMetadata.from_bytes(smdt("a"))] * 2}, "repeated"),
    ],
)
def test_science_chunks_refuses_a_set_a_reader_would_report(kwargs, match):
    with pytest.raises(ValueError, match=match):
        science_chunks(1, **kwargs)


# --- plane sets ----------------------------------------------------------------------------------

CAL_DEFAULT = calb(calb_entry(0x02, b"\x01K"))
CAL_OWN = calb(calb_entry(0x02, b"\x02mK"))


def test_attachment_entries_byte_exact():
    data = bytes.fromhex("00 63414c42 07 0101 02014b 00".replace(" ", "")) + entry(2, b"xTRA", b"any")
    entries = read_attachment(data)
    assert entries == (AttachmentEntry(0, b"cALB", CAL_DEFAULT), AttachmentEntry(2, b"xTRA", b"any"))
    assert encode_attachment(entries, plane_count=2) == data


def test_plane_records_own_else_defaults_per_tag():
    # 1.5: "A plane's records of a tag are its own entries of that tag if it has any, else the defaults'"
    data = entry(0, b"cALB", CAL_DEFAULT) + entry(0, b"aXES", AXES_Z)
    data += entry(2, b"cALB", CAL_OWN) + entry(2, b"cORD", cord(9))
    ps = plane_set_records(data, plane_count=3)
    assert ps.defaults.calibration.channels[0].unit == "K" and ps.defaults.axes.coordinate_axes == 1
    p0, p1 = ps.plane(0), ps.plane(1)
    assert p0.calibration.channels[0].unit == "K" and p0.coordinates is None
    assert p1.calibration.channels[0].unit == "mK" and p1.axes == ps.defaults.axes
    assert p1.coordinates.values == (9,)  # 1.5: "an own cORD refers to the plane's effective aXES"
    with pytest.raises(IndexError):
        ps.plane(3)


def test_plane_set_uses_c_1():
    # 1.5: "For each target the single-image rules apply with C = 1"
    data = entry(1, b"cALB", calb(calb_entry(), calb_entry()))
    r = plane_set_records(data, 1).plane(0)
    assert statuses(r) == [(b"cALB", "malformed")] and "1 channels" in r.reports[0].reason


def test_plane_set_axes_bind_no_channels_or_frames():
    # 1.5: "no channels or frames bindings"
    for extra in (axis("c", 2, 3), axis("t", 1, 4)):
        r = plane_set_records(entry(1, b"aXES", axes(*XY, extra)), 1).plane(0)
        assert statuses(r) == [(b"aXES", "malformed")] and "channels or frames" in r.reports[0].reason


def test_no_cord_for_target_0():
    # 1.5: "no cORD for target 0"; a plane that would inherit it gets the malformed record
    data = entry(0, b"aXES", AXES_Z) + entry(0, b"cORD", cord(1))
    ps = plane_set_records(data, 2)
    assert statuses(ps.defaults) == [(b"aXES", "parsed"), (b"cORD", "malformed")]
    assert statuses(ps.plane(0))[1] == (b"cORD", "malformed")
    own = plane_set_records(data + entry(2, b"cORD", cord(5)), 2).plane(1)
    assert statuses(own) == [(b"cORD", "parsed"), (b"aXES", "parsed")]


def test_plane_set_other_tags_are_skipped_and_unknown_versions_reported():
    ps = plane_set_records(entry(1, b"zzzz", b"\xff") + entry(1, b"cATG", bytes([3])), 1)
    assert statuses(ps.plane(0)) == [(b"cATG", "unknown")]


def test_own_unknown_entry_hides_the_defaults():
    # 1.5: "its own entries of that tag if it has any": an own skipped entry is still the plane's
    ps = plane_set_records(entry(0, b"cALB", CAL_DEFAULT) + entry(1, b"cALB", bytes([2])), 1)
    assert ps.plane(0).calibration is None and statuses(ps.plane(0)) == [(b"cALB", "unknown")]


@pytest.mark.parametrize(
    "data, match",
    [
        (b"\x00cAL", "past the end"),  # truncated tag
        (b"\x00cALB", "truncated"),  # no length
        (b"\x00cALB\x00", "entry length 0"),  # 1.5: length "payload bytes + 1 (>= 1)"
        (b"\x00cALB\x05\x01", "past the end"),  # payload overruns the attachment
        (b"\x00cA1B\x01", "bad entry"),  # 1.5: tag "4 bytes ASCII letters"
        (entry(3, b"cALB", CAL_DEFAULT), "target 3"),  # 1.5: "k + 1: plane k (< plane count)"
    ],
)
def test_attachment_framing_errors_are_malformed(data, match):
    with pytest.raises(MalformedRecord, match=match):
        plane_set_records(data, plane_count=2)


def test_encode_attachment_refuses_what_a_reader_would_report():
    with pytest.raises(ValueError, match="target 0"):
        encode_attachment([AttachmentEntry(0, b"cORD", cord(1))], 1)
    with pytest.raises(ValueError, match="target 2"):
        encode_attachment([AttachmentEntry(2, b"cALB", CAL_OWN)], 1)
    with pytest.raises(ValueError):
        AttachmentEntry(0, b"cA1B", b"")
