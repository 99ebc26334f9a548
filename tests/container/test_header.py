"""The header (1.0): the spec's wire examples byte for byte, both forms, every field rule."""

import pytest

from imij_plugins.container.header import Header, checksum_piece_log2, encode_header, read_header
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire import Cursor


def parse(hexstr: str) -> Header:
    data = bytes.fromhex(hexstr.replace(" ", ""))
    return read_header(Cursor(data, what="header"))


def test_simplest_rgb_u8_is_four_bytes():
    # Wire examples: "02 00 W H"
    h = Header(width=5, height=7)
    assert encode_header(h) == bytes([2, 0, 5, 7])
    got = parse("02 00 05 07")
    assert (got.width, got.height, got.sample, got.channels, got.coding) == (5, 7, 0, 3, 0)
    assert got.effective_cicp == (1, 13, 0, 1)
    assert got.features == frozenset()


def test_rgba_u16_present_0a():
    h = Header(width=16, height=9, sample=1, channels=4)
    assert encode_header(h) == bytes.fromhex("02 0a 01 04 10 09".replace(" ", ""))
    assert parse("02 0a 01 04 10 09").layout.name == "RGBA"


def test_lossy_ycocg_rgba_64x32():
    # 1.0: "lossy YCoCg RGBA 64 x 32 is 02 09 02 04 40 20"
    h = Header(width=64, height=32, coding=2, channels=4)
    assert encode_header(h) == bytes.fromhex("020902044020")
    got = parse("020902044020")
    assert got.coding == 2 and got.features == {F.LOSSY}  # lossy implied, not in the mask
    assert got.mask == frozenset()


def test_lossy_xyb_with_features_3():
    # 1.0: "a lossy file with seed tables and exact blocks declares features = 3 in one byte (02 05 03 01 ...)"
    h = Header(width=8, height=8, coding=1, mask=frozenset({F.SEED_BANK_1, F.EXACT_BLOCKS}))
    assert encode_header(h)[:4] == bytes.fromhex("02050301")
    assert parse("02 05 03 01 08 08").features == {F.SEED_BANK_1, F.EXACT_BLOCKS, F.LOSSY}


def test_f32_gray_pq_present_4a():
    h = Header(width=3, height=2, sample=5, channels=1, cicp=(9, 16, 0, 1))
    assert encode_header(h) == bytes.fromhex("02 4a 05 01 09 10 00 01 03 02".replace(" ", ""))
    assert parse("024a0501091000010302").features == {F.SAMPLES_32}  # implied by f32


def test_oklab_f16_present_0e():
    h = Header(width=2, height=2, sample=2, channels=6, mask=frozenset({F.PIXEL_MODELS}))
    assert encode_header(h) == bytes.fromhex("02 0e 80808001 02 06 02 02".replace(" ", ""))
    got = parse("020e808080010206 0202")
    assert got.layout.name == "Oklab" and got.effective_cicp == (1, 2, 0, 1)


def test_i64_present_06():
    h = Header(width=4, height=4, sample=9, channels=3, mask=frozenset({F.WIDE_SAMPLES}))
    assert encode_header(h) == bytes.fromhex("0206080904 04".replace(" ", ""))
    assert parse("020608090404").features == {F.WIDE_SAMPLES, F.SAMPLES_32}


def test_full_form_reads_like_masked_form():
    # 1.0: the full form sets present = 0x1FF (FF 03) and writes every field, the mask included
    h = Header(width=300, height=2, sample=1, channels=4)
    full = encode_header(h, full=True)
    assert full[:3] == bytes([2, 0xFF, 0x03])
    assert full[3] == 0  # an empty feature mask is one zero byte
    a, b = read_header(Cursor(full)), read_header(Cursor(encode_header(h)))
    for name in ("width", "height", "coding", "sample", "channels", "orientation", "decode_speed", "alpha_mode"):
        assert getattr(a, name) == getattr(b, name)
    assert a.effective_cicp == b.effective_cicp and a.effective_sig_bits == b.effective_sig_bits


def test_defaults_written_explicitly_are_accepted():
    # present = coding | channels with their default values
    got = parse("02 09 00 03 01 01")
    assert got.coding == 0 and got.channels == 3


def test_cmyk_default_cicp_and_sig_bits():
    h = Header(width=1, height=1, sample=1, channels=5, mask=frozenset({F.PIXEL_MODELS}), sig_bits=(10, 10, 10, 16))
    got = read_header(Cursor(encode_header(h)))
    assert got.effective_cicp == (2, 2, 0, 1)
    assert got.effective_sig_bits == (10, 10, 10, 16)


def test_records_given_are_written_in_place_of_the_headers_own():
    """encode_header(h, records=...) writes what the header holding those records writes (the
    writer adds its locator and checksum records without copying the header)."""
    import dataclasses

    from imij_plugins.wire.records import Record

    h = Header(width=300, height=2, sample=1, channels=4, orientation=6, cicp=(9, 16, 9, 0), sig_bits=(10, 10, 10, 16),
               alpha_mode=1, mask=frozenset({F.ALPHA_INTERPRETATION}), records=[Record(6, b"\xaa")])
    records = [Record(2, b"\x0c"), Record(4, b"\x05\x00")]
    for full in (False, True):
        got = encode_header(h, full=full, records=records)
        assert got == encode_header(dataclasses.replace(h, records=records), full=full)
        assert [r.id for r in read_header(Cursor(got)).records] == [2, 4]
    assert read_header(Cursor(encode_header(h))).records == h.records  # the header's own otherwise


def test_decode_speed_unknown_reads_as_fastest():
    assert parse("02 20 09 01 01").decode_speed == 3  # 0.3: informational


def test_records_kept_and_checksum_record():
    got = parse("02 00 01 01 02 01 0c 04 00")
    assert [r.id for r in got.records] == [2, 4]
    assert checksum_piece_log2(got) == 12


@pytest.mark.parametrize("k", ["09", "29"])
def test_checksum_record_k_out_of_range(k):
    with pytest.raises(Corrupt, match="checksum record"):
        checksum_piece_log2(parse(f"02 00 01 01 02 01 {k}"))


@pytest.mark.parametrize(
    "hexstr, error, reason",
    [
        ("01 00 01 01", Unsupported, "version 1"),  # 1.0: other versions Unsupported
        ("03 00 01 01", Unsupported, "version 3"),
        ("02 80 04 01 01", Unsupported, "presence bits"),  # bit 9: not defined here
        ("02 01 03 01 01", Unsupported, "coding 3"),  # open field
        ("02 02 0b 01 01", Unsupported, "sample type 11"),  # open field
        ("02 08 00 01 01", Corrupt, "channels 0"),  # closed field
        ("02 08 08 01 01", Corrupt, "channels 8"),
        ("02 10 00 01 01", Corrupt, "orientation 0"),
        ("02 10 09 01 01", Corrupt, "orientation 9"),
        ("02 40 01 0d 00 02 01 01", Corrupt, "full_range 2"),
        ("02 80 02 04 01 01", Corrupt, "alpha_mode 4"),
        ("02 00 00 01", Corrupt, "outside 1"),  # width 0
        ("02 00 01 00", Corrupt, "outside 1"),  # height 0
        ("02 00 8080808010 01", Corrupt, "outside 1"),  # width 2^32
        ("02 02 06 01 01", Corrupt, "signed_samples"),  # i8 without its feature
        ("02 02 07 01 01", Corrupt, "signed_samples"),
        ("02 02 08 01 01", Corrupt, "wide_samples"),  # u64 without its feature
        ("02 07 08 01 0a 01 01", Corrupt, "lossy coding"),  # lossy f64
        ("02 07 04 01 06 01 01", Corrupt, "lossy coding"),  # lossy i8 (mask has signed_samples)
        ("02 08 05 01 01", Corrupt, "pixel_models"),  # CMYK without its feature
        ("02 0d 80808001 01 07 01 01", Corrupt, "lossy coding"),  # OklabAlpha lossy
        ("02 88 02 04 02 01 01", Corrupt, "alpha_mode 2"),  # RGBA, mode 2 without alpha_interpretation
        ("02 84 02 808040 02 01 01", Corrupt, "without alpha"),  # mode 2 on RGB
        ("02 80 02 00 01 01", None, None),  # alpha_mode 0 written explicitly is fine
        ("02 80 01 08 00 08 01 01", Corrupt, "sig_bits 0"),  # per channel 1 ..= storage bits
        ("02 80 01 09 08 08 01 01", Corrupt, "sig_bits 9"),
        ("02 8a 01 02 01 0f 01 01", Corrupt, "sig_bits 15"),  # floats declare all bits
        ("02 00 01 01 01 00", Unsupported, "critical header record 1"),  # retired id
        ("02 00 01 01 03 00", Unsupported, "critical header record 3"),
        ("02 00 01 01 04 00 02 00", Corrupt, "strictly increasing"),
        ("02 00 01 01 02 05 00", Corrupt, "overruns"),
        ("02 04 80", Corrupt, "feature mask"),  # the mask runs past the header end
        ("02 04", Corrupt, "feature mask"),
        ("02 8c 02 808040 04 03 01 01", None, None),  # mode 3 with alpha_interpretation on RGBA
        ("02 00 01", Corrupt, "height"),
    ],
)
def test_header_rules(hexstr, error, reason):
    if error is None:
        parse(hexstr)
        return
    with pytest.raises(error, match=reason):
        parse(hexstr)


def test_even_unknown_header_record_is_skipped():
    assert [r.id for r in parse("02 00 01 01 06 02 aa bb").records] == [6]
