"""cALB, aXES, cORD, sMDT, cATG parsed alone (1.5): byte-exact examples, every malformed rule, skips, round trips."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imij_plugins.container.metadata import (
    Axes,
    Axis,
    AxisLevel,
    Calibration,
    Categories,
    Category,
    ChannelCalibration,
    Coordinates,
    MalformedRecord,
    StructuredMetadata,
    UnknownRecord,
)
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire import encode_varint as varint

from .science_bytes import XY, axes, axis, calb, calb_entry, category, catg, cord, f64, smdt, text, zz

INF, NAN = float("inf"), float("nan")


def malformed(parse, raw: bytes, match: str) -> None:
    with pytest.raises(MalformedRecord, match=match):
        parse(raw)


# --- every record: versions, truncation, trailing bytes ------------------------------------------

PARSERS = [
    (Calibration.from_bytes, calb(calb_entry())),
    (Axes.from_bytes, axes(*XY)),
    (Coordinates.from_bytes, cord(3)),
    (StructuredMetadata.from_bytes, smdt()),
    (Categories.from_bytes, catg([category(1)])),
]


@pytest.mark.parametrize("parse, good", PARSERS)
def test_unknown_version_is_skipped_not_malformed(parse, good):
    # 1.5: "A reader skips a record whose version it does not know"
    for version in (0, 2, 255):
        with pytest.raises(UnknownRecord, match=f"version {version}") as info:
            parse(bytes([version]) + good[1:])
        assert isinstance(info.value, Unsupported) and not isinstance(info.value, Corrupt)


@pytest.mark.parametrize("parse, good", PARSERS)
def test_truncation_is_malformed(parse, good):
    # 1.5: "truncation ... makes the record malformed"; sMDT's body runs to the end, so cut into its schema
    parse(good)
    cut = 4 if parse == StructuredMetadata.from_bytes else len(good) - 1
    for size in (0, cut):
        with pytest.raises(MalformedRecord) as info:
            parse(good[:size])
        assert isinstance(info.value, Corrupt)


@pytest.mark.parametrize("parse, good", [p for p in PARSERS if p[0] != StructuredMetadata.from_bytes])
def test_trailing_bytes_are_malformed(parse, good):
    # 1.5: "trailing bytes ... makes the record malformed" (an sMDT body runs to the end of the payload)
    malformed(parse, good + b"\x00", "trailing")


# --- cALB ------------------------------------------------------------------------------------------

CALB_FULL = bytes.fromhex(
    "01 01"  # version 1, count 1
    "ff01"  # flags: bits 0-7
    "0000000000000040 000000000000f0bf"  # slope 2.0, offset -1.0
    "01 4b"  # unit "K"
    "0f 6169725f74656d7065726174757265"  # quantity "air_temperature" (CF standard_name: bit 3)
    "0000000000000000 0000000000005940"  # valid_min 0.0, valid_max 100.0
    "07"  # mask plane 7
    "02 000000008087c3c0 0000000000000080".replace(" ", "")  # nodata -9999.0, -0.0
)


def test_calb_every_field_byte_exact():
    c = Calibration.from_bytes(CALB_FULL)
    assert c == Calibration((
        ChannelCalibration(
            slope=2.0, offset=-1.0, unit="K", quantity="air_temperature", cf_standard_name=True, valid_min=0.0,
            valid_max=100.0, nan_missing=True, mask_plane=7, nodata=(-9999.0, -0.0),
        ),
    ))
    assert c.channels[0].flags == 0xFF and c.to_bytes() == CALB_FULL


def test_calb_defaults_and_four_channels():
    raw = calb(calb_entry(), calb_entry(0x40), calb_entry(0x02, text("HU")), calb_entry(0x10, f64(-INF)))
    c = Calibration.from_bytes(raw)
    assert c.channels[0] == ChannelCalibration() and c.channels[0].is_identity  # bit 0 clear: 1 and 0
    assert c.channels[1].nan_missing and c.channels[2].unit == "HU" and c.channels[3].valid_min == -INF
    assert c.to_bytes() == raw


@pytest.mark.parametrize(
    "raw, match",
    [
        (calb(calb_entry(0x100)), "reserved flag bits 0x100"),  # 1.5: "bits 8 and up: reserved, 0"
        (calb(calb_entry(1 << 40)), "reserved"),
        (calb(count=0), "count 0"),  # 1.5: count "1..=4"
        (calb(*[calb_entry()] * 5), "count 5"),
        (calb(calb_entry(0x01, f64(0.0, 0.0))), "slope is zero"),  # 1.5: slope "finite, nonzero"
        (calb(calb_entry(0x01, f64(-0.0, 0.0))), "slope is zero"),
        (calb(calb_entry(0x01, f64(INF, 0.0))), "slope inf is not finite"),
        (calb(calb_entry(0x01, f64(NAN, 0.0))), "slope nan is not finite"),
        (calb(calb_entry(0x01, f64(1.0, -INF))), "offset -inf is not finite"),  # 1.5: offset "finite"
        (calb(calb_entry(0x01, f64(1.0, NAN))), "offset nan is not finite"),
        (calb(calb_entry(0x02, text(""))), "unit is 0 bytes"),  # 1.5: unit "1..=256 bytes"
        (calb(calb_entry(0x02, text("u" * 257))), "unit is 257 bytes"),
        (calb(calb_entry(0x02, text(b"K\x00"))), "NUL"),  # 1.5: str "containing no NUL"
        (calb(calb_entry(0x02, text(b"\xc3\x28"))), "UTF-8"),  # 1.5: str is UTF-8
        (calb(calb_entry(0x04, text(""))), "quantity is 0 bytes"),  # 1.5: quantity "1..=256 bytes"
        (calb(calb_entry(0x04, text("q" * 257))), "quantity is 257 bytes"),
        (calb(calb_entry(0x08)), "CF standard_name flag without a quantity"),  # 1.5: bit 3 "(needs bit 2)"
        (calb(calb_entry(0x10, f64(NAN))), "valid_min is NaN"),  # 1.5: valid_min "not NaN"
        (calb(calb_entry(0x20, f64(NAN))), "valid_max is NaN"),  # 1.5: valid_max "not NaN"
        (calb(calb_entry(0x30, f64(1.0, 0.5))), "valid_max 0.5 < valid_min 1.0"),  # 1.5: ">= valid_min"
        (calb(calb_entry(0x80, varint(1 << 32))), r"below 2\^32"),  # 1.5: mask "plane id, < 2^32"
        (calb(calb_entry(nodata=(0.0,) * 17)), "nodata_n 17"),  # 1.5: nodata_n "0..=16"
        (calb(calb_entry(nodata=(1.0, NAN))), "nodata value is NaN"),  # 1.5: nodata "not NaN"
    ],
)
def test_calb_malformed(raw, match):
    malformed(Calibration.from_bytes, raw, match)


def test_calb_boundaries_are_valid():
    ok = [
        calb(calb_entry(0x02, text("u" * 256))),
        calb(calb_entry(0x30, f64(1.0, 1.0))),  # valid_max == valid_min
        calb(calb_entry(0x30, f64(-INF, INF))),  # infinite bounds are not NaN
        calb(calb_entry(0x80, varint((1 << 32) - 1))),
        calb(calb_entry(nodata=(0.0,) * 16)),
        calb(*[calb_entry()] * 4),
    ]
    for raw in ok:
        assert Calibration.from_bytes(raw).to_bytes() == raw


# --- aXES ------------------------------------------------------------------------------------------

AXES_FULL = (
    bytes([1, 7, 3])  # version, flags: pixel is area | affine | method, N = 3
    + text("x") + b"\x00" + b"\x01" + text("m")  # space, columns
    + text("y") + b"\x00" + b"\x02" + text("m")  # space, rows
    + text("z") + b"\x03" + text("depth") + b"\x00" + text("")  # other, type "depth", coordinate, no unit
    + b"\x02"  # L = 2
    + f64(1, 1, 1) + f64(0, 0, 0)
    + f64(2, 2, 1) + f64(0.5, 0.5, 0)
    + text("mean")  # method comes before the affine
    + f64(*range(1, 13))  # affine, N (N + 1) = 12 values
)


def test_axes_every_field_byte_exact():
    a = Axes.from_bytes(AXES_FULL)
    assert a == Axes(
        (Axis("x", 0, 1, "m"), Axis("y", 0, 2, "m"), Axis("z", 3, 0, "", "depth")),
        (AxisLevel((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)), AxisLevel((2.0, 2.0, 1.0), (0.5, 0.5, 0.0))),
        pixel_is_area=True,
        method="mean",
        affine=tuple(float(v) for v in range(1, 13)),
    )
    assert a.coordinate_axes == 1 and a.to_bytes() == AXES_FULL


def test_axes_minimal_and_bindings():
    raw = axes(*XY, axis("c", 2, 3), axis("t", 1, 4, "s"))
    a = Axes.from_bytes(raw)
    assert [ax.binding for ax in a.axes] == [1, 2, 3, 4] and a.coordinate_axes == 0 and a.to_bytes() == raw
    assert Axes.from_bytes(axes(*XY, axis("o", 3, 0, axis_type=""))).axes[2].type == ""  # empty: unspecified


@pytest.mark.parametrize(
    "raw, match",
    [
        (axes(*XY, flags=8), "reserved flag bits 0x8"),  # 1.5: "bits 3 and up: reserved, 0"
        (axes(axis("x", 0, 1)), "N 1"),  # 1.5: N "2..=32 axes"
        (axes(*XY, *[axis(f"c{i}", 0, 0) for i in range(31)]), "N 33"),
        (axes(axis("", 0, 1), axis("y", 0, 2)), "axis name is 0 bytes"),  # 1.5: name "1..=256 bytes"
        (axes(axis("n" * 257, 0, 1), axis("y", 0, 2)), "axis name is 257 bytes"),
        (axes(axis("x", 0, 1), axis("x", 0, 2)), "not unique"),  # 1.5: "unique within the record"
        (axes(*XY, axis("k", 4, 0)), "kind 4"),  # 1.5: kind 0..3
        (axes(*XY, axis("o", 3, 0, axis_type="t" * 257)), "axis type is 257 bytes"),  # 1.5: type "0..=256 bytes"
        (axes(*XY, axis("b", 0, 5)), "binding 5"),  # 1.5: binding 0..4
        (axes(axis("x", 0, 1, "u" * 257), axis("y", 0, 2)), "axis unit is 257 bytes"),  # 1.5: unit "0..=256 bytes"
        (axes(axis("a", 0, 0), axis("y", 0, 2)), "0 column axes"),  # 1.5: "Exactly one axis is bound to columns"
        (axes(*XY, axis("x2", 0, 1)), "2 column axes"),
        (axes(axis("x", 0, 1), axis("a", 0, 0)), "0 row axes"),  # 1.5: "... and one to rows"
        (axes(*XY, axis("y2", 0, 2)), "2 row axes"),
        (axes(*XY, axis("c", 2, 3), axis("d", 2, 3)), "channels or to frames"),  # 1.5: "at most one to channels"
        (axes(*XY, axis("t", 1, 4), axis("u", 1, 4)), "channels or to frames"),  # 1.5: "at most one to frames"
        (axes(*XY, levels=varint(65) + (f64(1, 1) + f64(0, 0)) * 65), "L 65"),  # 1.5: L "0..=64 levels"
        (axes(*XY, levels=b"\x01" + f64(1, 0) + f64(0, 0)), "level 0 scale is zero"),  # 1.5: scale "nonzero"
        (axes(*XY, levels=b"\x01" + f64(1, INF) + f64(0, 0)), "scale inf is not finite"),  # 1.5: scale "finite"
        (axes(*XY, levels=b"\x01" + f64(1, 1) + f64(NAN, 0)), "translation nan is not finite"),  # 1.5: "finite"
        (axes(*XY, flags=4, tail=text("")), "method is 0 bytes"),  # 1.5: method "1..=256 bytes"
        (axes(*XY, flags=4, tail=text("m" * 257)), "method is 257 bytes"),
        (axes(*XY, flags=2, tail=f64(1, 0, 0, 0, 1, INF)), "affine value inf is not finite"),  # 1.5: affine "finite"
        (axes(*XY, flags=2, tail=f64(1, 0, 0, 0, 1)), "past the end"),  # 1.5: "f64 x N(N+1)"
    ],
)
def test_axes_malformed(raw, match):
    malformed(Axes.from_bytes, raw, match)


def test_axes_huge_level_count_without_axes_fails_fast():
    # N = 0 makes every level zero bytes long: L itself must be checked before the levels are read
    malformed(Axes.from_bytes, bytes([1, 0, 0]) + varint(2**63), "L 9223372036854775808")


def test_axes_boundaries_are_valid():
    ok = [
        axes(*XY, *[axis(f"c{i}", 0, 0) for i in range(30)]),  # N = 32
        axes(*XY, levels=varint(64) + (f64(1, 1) + f64(0, 0)) * 64),  # L = 64
        axes(*XY, flags=4, tail=text("m" * 256)),
        axes(axis("x", 0, 1, "u" * 256), axis("y", 0, 2)),
    ]
    for raw in ok:
        assert Axes.from_bytes(raw).to_bytes() == raw


def test_axes_writer_keeps_non_raster_levels_equal():
    # 1.5: "Writers keep the scale and translation of every non-raster axis equal across levels"
    xyz = (Axis("x", 0, 1), Axis("y", 0, 2), Axis("z", 0, 0))
    ok = Axes(xyz, (AxisLevel((1, 1, 5), (0, 0, 3)), AxisLevel((2, 2, 5), (0.5, 0.5, 3))))
    assert Axes.from_bytes(ok.to_bytes()) == ok
    bad = Axes(xyz, (AxisLevel((1, 1, 5), (0, 0, 3)), AxisLevel((2, 2, 6), (0.5, 0.5, 3))))
    with pytest.raises(ValueError, match="'z' is not raster-bound"):
        bad.to_bytes()
    levels = b"\x02" + f64(1, 1, 5) + f64(0, 0, 3) + f64(2, 2, 6) + f64(0.5, 0.5, 3)
    assert Axes.from_bytes(axes(*[a.to_bytes() for a in xyz], levels=levels)) == bad  # a writer rule: readers accept it


def test_axes_writer_refuses_a_type_outside_kind_3():
    with pytest.raises(ValueError, match="has a type but kind 0"):
        Axis("z", 0, 0, "", "depth")


# --- cORD ------------------------------------------------------------------------------------------


def test_cord_byte_exact():
    raw = bytes.fromhex("01 03 01 0a feffffffffffffffff01".replace(" ", ""))  # K 3: -1, 5, 2^63 - 1
    c = Coordinates.from_bytes(raw)
    assert c.values == (-1, 5, 2**63 - 1) and c.to_bytes() == raw
    assert Coordinates.from_bytes(cord(-(2**63))).values == (-(2**63),)


@pytest.mark.parametrize(
    "raw, match",
    [
        (cord(), "K 0"),  # 1.5: K "1..=32"
        (cord(*range(33)), "K 33"),
        (cord(1, 2, k=3), "truncated"),
    ],
)
def test_cord_malformed(raw, match):
    malformed(Coordinates.from_bytes, raw, match)


# --- sMDT ------------------------------------------------------------------------------------------


def test_smdt_byte_exact_and_body_carried_through():
    raw = bytes([1, 1, 7]) + b"cf-1.12" + b"\x00opaque pack record"
    s = StructuredMetadata.from_bytes(raw)
    assert (s.format, s.schema, s.body) == (1, "cf-1.12", b"\x00opaque pack record")
    assert s.to_bytes() == raw
    renamed = replace(s, schema="ome-ngff/0.5")  # the read body is carried through an edit of other fields
    assert StructuredMetadata.from_bytes(renamed.to_bytes()) == renamed


def test_smdt_writing_a_new_body_is_unsupported():
    # docs/METADATA_COMPRESSION.md (the pack record format) is not available to this package
    with pytest.raises(Unsupported, match="METADATA_COMPRESSION"):
        StructuredMetadata(1, "cf-1.12", b'{"units": "K"}').to_bytes()
    read = StructuredMetadata.from_bytes(smdt())
    with pytest.raises(Unsupported, match="writing a new body"):
        replace(read, body=b"other").to_bytes()


@pytest.mark.parametrize("fmt", [3, 4, 255])
def test_smdt_unknown_format_is_skipped(fmt):
    # 1.5: "A reader skips ... an sMDT whose format it does not know"
    with pytest.raises(UnknownRecord, match=f"format {fmt}"):
        StructuredMetadata.from_bytes(smdt(fmt=fmt))


@pytest.mark.parametrize(
    "schema",
    [b"", b"s" * 65, b"has space", b"tab\t", b"del\x7f", b"nul\x00", "ümlaut".encode()],
)
def test_smdt_schema_must_be_printable_ascii(schema):
    # 1.5: schema "1..=64 bytes of printable ASCII without space (0x21..=0x7E)"
    malformed(StructuredMetadata.from_bytes, smdt(schema=schema), "schema")


def test_smdt_schema_boundaries_and_every_format():
    for schema in ("s" * 64, "!", "~", "fits-header"):
        for fmt in (0, 1, 2):
            raw = smdt(schema=schema, fmt=fmt)
            assert StructuredMetadata.from_bytes(raw).to_bytes() == raw
    assert StructuredMetadata.from_bytes(smdt(body=b"")).body == b""


# --- cATG ------------------------------------------------------------------------------------------

CATG_8BIT = bytes.fromhex(
    "01 00 01"  # version 1, flags 0 (8-bit colors), count 1
    "02"  # n = 2
    "00 03 00000000 02 6267"  # value 0: color transparent black, name "bg"
    "02 07 ff0000ff 04 63656c6c 06 6120636f6e65".replace(" ", "")  # value 1: red, "cell", "a cone"
)


def test_catg_byte_exact():
    c = Categories.from_bytes(CATG_8BIT)
    assert c == Categories(((Category(0, (0, 0, 0, 0), "bg"), Category(1, (255, 0, 0, 255), "cell", "a cone")),))
    assert c.is_categorical(0) and c.to_bytes() == CATG_8BIT


def test_catg_16bit_colors_little_endian_and_signed_values():
    raw = catg([], [category(-5, bytes.fromhex("3412 ffff 0000 0100")), category(7)], flags=1)
    c = Categories.from_bytes(raw)
    assert c.wide and c.channels[0] == () and not c.is_categorical(0)
    assert c.channels[1][0] == Category(-5, (0x1234, 0xFFFF, 0, 1)) and c.to_bytes() == raw


@pytest.mark.parametrize(
    "raw, match",
    [
        (catg([category(1)], flags=2), "reserved flag bits 0x2"),  # 1.5: flags "bits 1 and up: reserved, 0"
        (catg(), "count 0"),  # 1.5: count "1..=4"
        (catg(*[[category(1)]] * 5), "count 5"),
        (catg([category(1), category(1)]), "not strictly increasing"),  # 1.5: "strictly increasing value order"
        (catg([category(2), category(1)]), "not strictly increasing"),
        (catg([zz(1) + varint(8)]), "reserved flag bits 0x8"),  # 1.5: eflags "bits 3 and up: reserved, 0"
        (catg([category(1, name="")]), "name is 0 bytes"),  # 1.5: name "1..=256 bytes"
        (catg([category(1, name="n" * 257)]), "name is 257 bytes"),
        (catg([category(1, description="")]), "description is 0 bytes"),  # 1.5: description "1..=1024 bytes"
        (catg([category(1, description="d" * 1025)]), "description is 1025 bytes"),
        (catg([category(1, name=b"a\x00")]), "NUL"),
        (catg([], []), "no channel has a category"),  # 1.5: "At least one channel has a category"
        (catg([category(1, b"\x01\x02\x03")]), "past the end"),  # 4 x u8 color
        (catg([category(1, b"\x01\x02\x03\x04\x05\x06\x07")], flags=1), "past the end"),  # 4 x u16 color
    ],
)
def test_catg_malformed(raw, match):
    malformed(Categories.from_bytes, raw, match)


def test_catg_more_than_65536_categories_is_malformed():
    # 1.5: n "0..=65536"
    entries = [category(v) for v in range(65537)]
    malformed(Categories.from_bytes, catg(entries), "n 65537")
    raw = catg(entries[:65536])
    assert len(Categories.from_bytes(raw).channels[0]) == 65536


def test_catg_writer_uses_8bit_when_every_component_is_a_multiple_of_257():
    # 1.5: "writers use 8-bit components when every component of the record is such a multiple"
    eight = Categories(((Category(0, (255, 0, 1, 255)),),))
    wide = Categories(((Category(0, (0xFFFF, 0, 257, 0xFFFF)),),), wide=True)
    assert eight.to_bytes() != b"" and Categories.from_bytes(eight.to_bytes()) == eight
    with pytest.raises(ValueError, match="multiple of 257"):
        wide.to_bytes()
    assert Categories.from_bytes(catg([category(0, bytes.fromhex("ffff 0000 0101 ffff"))], flags=1)) == wide  # read
    with pytest.raises(ValueError, match="above 255"):
        Categories(((Category(0, (256, 0, 0, 0)),),))


# --- round trips -----------------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
nonzero = finite.filter(lambda v: v != 0)
names = st.text("abcé日_-", min_size=1, max_size=8)


@st.composite
def channel_calibrations(draw):
    linear = draw(st.booleans())
    lo = draw(st.none() | st.floats(allow_nan=False))
    hi = draw(st.none() | st.floats(allow_nan=False, min_value=lo))  # min_value=None: no bound
    quantity = draw(st.none() | names)
    return ChannelCalibration(
        slope=draw(nonzero) if linear else None,
        offset=draw(finite) if linear else None,
        unit=draw(st.none() | names),
        quantity=quantity,
        cf_standard_name=quantity is not None and draw(st.booleans()),
        valid_min=lo,
        valid_max=hi,
        nan_missing=draw(st.booleans()),
        mask_plane=draw(st.none() | st.integers(0, 2**32 - 1)),
        nodata=tuple(draw(st.lists(st.floats(allow_nan=False), max_size=16))),
    )


@settings(max_examples=50)
@given(st.lists(channel_calibrations(), min_size=1, max_size=4))
def test_calb_round_trip(entries):
    c = Calibration(tuple(entries))
    raw = c.to_bytes()
    assert Calibration.from_bytes(raw) == c and Calibration.from_bytes(raw).to_bytes() == raw


@st.composite
def axes_records(draw):
    bindings = [1, 2] + draw(st.lists(st.just(0), max_size=3)) + draw(st.sampled_from([[], [3], [4], [3, 4]]))
    n = len(bindings)
    kinds = [draw(st.integers(0, 3)) for _ in bindings]
    axis_list = tuple(
        Axis(
            f"a{i}", kinds[i], b, draw(st.text("ms", max_size=3)),
            draw(st.text("t", max_size=3)) if kinds[i] == 3 else "",
        )
        for i, b in enumerate(bindings)
    )
    fixed_scale = [draw(nonzero) for _ in range(n)]
    fixed_shift = [draw(finite) for _ in range(n)]
    levels = []
    for _ in range(draw(st.integers(0, 3))):
        scale = [draw(nonzero) if b in (1, 2) else fixed_scale[i] for i, b in enumerate(bindings)]
        shift = [draw(finite) if b in (1, 2) else fixed_shift[i] for i, b in enumerate(bindings)]
        levels.append(AxisLevel(tuple(scale), tuple(shift)))
    affine = draw(st.none() | st.lists(finite, min_size=n * (n + 1), max_size=n * (n + 1)).map(tuple))
    return Axes(axis_list, tuple(levels), draw(st.booleans()), draw(st.none() | names), affine)


@settings(max_examples=60)
@given(axes_records())
def test_axes_round_trip(a):
    raw = a.to_bytes()
    assert Axes.from_bytes(raw) == a and Axes.from_bytes(raw).to_bytes() == raw


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=32))
def test_cord_round_trip(values):
    c = Coordinates(tuple(values))
    assert Coordinates.from_bytes(c.to_bytes()) == c


schemas = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=64)


@given(st.integers(0, 2), schemas, st.binary(max_size=40))
def test_smdt_round_trip_of_read_records(fmt, schema, body):
    raw = smdt(schema, body, fmt)
    assert StructuredMetadata.from_bytes(raw).to_bytes() == raw


@st.composite
def categories_records(draw):
    wide = draw(st.booleans())
    top = 0xFFFF if wide else 0xFF
    channels = []
    for _ in range(draw(st.integers(1, 4))):
        values = sorted(draw(st.sets(st.integers(-(2**63), 2**63 - 1), max_size=5)))
        channels.append(tuple(
            Category(
                v,
                draw(st.none() | st.tuples(*[st.integers(0, top)] * 4)),
                draw(st.none() | names),
                draw(st.none() | names),
            )
            for v in values
        ))
    if not any(channels):
        channels[0] = (Category(0),)
    if wide:  # a 16-bit record has a component that is not v8 * 257 (the writer rule)
        c = next(i for i, cats in enumerate(channels) if cats)
        channels[c] = channels[c][:-1] + (replace(channels[c][-1], color=(1, 0, 0, 0)),)
    return Categories(tuple(channels), wide)


@settings(max_examples=50)
@given(categories_records())
def test_catg_round_trip(c):
    raw = c.to_bytes()
    assert Categories.from_bytes(raw) == c and Categories.from_bytes(raw).to_bytes() == raw
