"""One test per Corrupt / Unsupported rule of 2.1-2.6, 3, 3.3 and section 4 (and ruling R1)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.head import ChannelMap
from imij_plugins.payload.kernel_codes import EXPLAIN_PIXELS, KERNEL_CODES
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint

from .handmade import STATE, Bits, head, header

DEPTH = {"u8": 8, "i8": 8, "u16": 16, "f16": 16, "i16": 16, "u32": 32, "i32": 32, "f32": 32, "u64": 32, "i64": 32, "f64": 32}
CH = {1: 1, 2: 2, 3: 3, 4: 4, 5: 4, 6: 3, 7: 4}


def lsb(sample: str) -> ChannelMap:
    return ChannelMap(0, DEPTH[sample], 0)


def models(depths: list[int], cross: dict[int, int] | None = None, palette: bool = False) -> bytes:
    b = Bits()
    for i, d in enumerate(depths):
        b.simple_model(d, (cross or {}).get(i, 0))
    if palette:
        b.simple_model(8)
    return b.tobytes()


def prep(sample="u8", channels=1, maps=None, model_bytes=None, *, features=(), present=0, records=None, w=1, h=1):
    hdr = header(sample, channels, w, h, features)
    n = CH[channels] * (2 if sample in ("u64", "i64", "f64") else 1)
    maps = maps if maps is not None else [lsb(sample)] * n
    if model_bytes is None:
        depths = [m.bits for m in maps if m.mode != 4]
        model_bytes = models(depths, palette=bool(present & 1))
    return prepare(hdr, head(hdr, maps, model_bytes, present=present, records=records))


def body(decor=0, preds=b"\x00", streams=(STATE,), lens=None) -> bytes:
    lens = [len(s) for s in streams] if lens is None else lens
    return bytes([decor]) + preds + b"".join(encode_varint(n) for n in lens) + b"".join(streams)


# --- 2.1 channel maps ------------------------------------------------------------------------


@pytest.mark.parametrize("sample,bits", [("u8", 9), ("i8", 9), ("u16", 17), ("f16", 17), ("u32", 33), ("u64", 33)])
def test_bits_above_container_depth(sample, bits):
    n = 2 if sample == "u64" else 1
    with pytest.raises(Corrupt, match="above the container depth"):
        prep(sample, 1, [ChannelMap(0, bits, 0)] + [lsb(sample)] * (n - 1), models([8]), features={F.WIDE_SAMPLES})


def test_unknown_map_mode():
    with pytest.raises(Corrupt, match="unknown map mode"):
        prep("u8", 1, [ChannelMap(10, 8, 0)])


def test_shift_needs_one_bit():
    with pytest.raises(Corrupt, match="bits 0"):
        prep("u16", 1, [ChannelMap(1, 0, 0)], models([0]))
    prep("u16", 1, [ChannelMap(1, 1, 0)], models([1]))


@pytest.mark.parametrize("mode", [2, 3])
def test_replicate_scale_bits(mode):
    with pytest.raises(Corrupt, match="outside"):
        prep("u8", 1, [ChannelMap(mode, 0, 0)], models([0]))
    with pytest.raises(Corrupt, match="outside 1..=16"):  # 32-bit words: bits <= 16
        prep("u32", 1, [ChannelMap(mode, 17, 0)], models([17]))
    prep("u32", 1, [ChannelMap(mode, 16, 0)], models([16]))
    prep("u16", 1, [ChannelMap(mode, 16, 0)], models([16]))


def test_const_only_for_alpha_and_lo_words():
    with pytest.raises(Corrupt, match="neither alpha nor a lo word"):
        prep("u8", 1, [ChannelMap(4, 0, 7)], b"")
    with pytest.raises(Corrupt, match="neither alpha nor a lo word"):  # an RGB color channel
        prep("u8", 3, [lsb("u8"), ChannelMap(4, 0, 7), lsb("u8")], models([8, 8]))
    prep("u8", 4, [lsb("u8")] * 3 + [ChannelMap(4, 0, 255)], models([8, 8, 8]))  # RGBA alpha
    wide = {F.WIDE_SAMPLES}
    prep("u64", 1, [lsb("u64"), ChannelMap(4, 0, 0)], models([32]), features=wide)  # a lo word
    with pytest.raises(Corrupt, match="neither alpha nor a lo word"):  # a hi word of a color channel
        prep("u64", 1, [ChannelMap(4, 0, 0), lsb("u64")], models([32]), features=wide)
    # GrayAlpha u64: the alpha's hi and lo words may both be Const
    prep("u64", 2, [lsb("u64"), ChannelMap(4, 0, 1), lsb("u64"), ChannelMap(4, 0, 2)], models([32, 32]), features=wide)


def test_const_value_must_fit_the_word():
    """Our reading: x = value must be a container word (Const value >= 2^D is Corrupt)."""
    with pytest.raises(Corrupt, match="does not fit"):
        prep("u8", 2, [lsb("u8"), ChannelMap(4, 0, 256)], models([8]))
    prep("u8", 2, [lsb("u8"), ChannelMap(4, 0, 255)], models([8]))


def test_f16_in_f32():
    with pytest.raises(Corrupt, match="F16InF32"):
        prep("f16", 1, [ChannelMap(5, 16, 0)], models([16]))
    with pytest.raises(Corrupt, match="F16InF32"):
        prep("f32", 1, [ChannelMap(5, 15, 0)], models([15]))
    with pytest.raises(Corrupt, match="F16InF32"):  # float maps 5 and 6 do not apply to 64-bit words
        prep("f64", 1, [ChannelMap(5, 16, 0), lsb("f64")], models([16, 32]), features={F.WIDE_SAMPLES})
    prep("f32", 1, [ChannelMap(5, 16, 0)], models([16]))


def test_unorm_f32():
    with pytest.raises(Corrupt, match="UnormF32"):
        prep("u32", 1, [ChannelMap(6, 8, 0)], models([8]))
    for bits in (0, 17):
        with pytest.raises(Corrupt, match="UnormF32"):
            prep("f32", 1, [ChannelMap(6, bits, 0)], models([bits]))
    prep("f32", 1, [ChannelMap(6, 1, 0)], models([1]))


def test_offset():
    with pytest.raises(Corrupt, match="without feature offset_map"):
        prep("u32", 1, [ChannelMap(7, 8, 5)], models([8]))
    with pytest.raises(Corrupt, match="Offset on u16"):
        prep("u16", 1, [ChannelMap(7, 8, 5)], models([8]), features={F.OFFSET_MAP})
    prep("u32", 1, [ChannelMap(7, 8, 5)], models([8]), features={F.OFFSET_MAP})
    prep("i64", 1, [ChannelMap(7, 8, 5), ChannelMap(7, 3, 9)], models([8, 3]), features={F.OFFSET_MAP, F.WIDE_SAMPLES})


def test_float_shift():
    with pytest.raises(Corrupt, match="without feature float_shift"):
        prep("f16", 1, [ChannelMap(8, 10, 0)], models([10]))
    fs = {F.FLOAT_SHIFT}
    with pytest.raises(Corrupt, match="FloatShift needs"):
        prep("u16", 1, [ChannelMap(8, 10, 0)], models([10]), features=fs)
    with pytest.raises(Corrupt, match="FloatShift needs"):
        prep("f64", 1, [ChannelMap(8, 10, 0), lsb("f64")], models([10, 32]), features=fs | {F.WIDE_SAMPLES})
    for bits in (0, 16):
        with pytest.raises(Corrupt, match="FloatShift needs"):
            prep("f16", 1, [ChannelMap(8, bits, 0)], models([bits]), features=fs)
    prep("f16", 1, [ChannelMap(8, 15, 0)], models([15]), features=fs)
    prep("f32", 1, [ChannelMap(8, 31, 0)], models([31]), features=fs)


def test_value_tables():
    vt = {F.VALUE_TABLES}
    with pytest.raises(Corrupt, match="without feature value_tables"):
        prep("u16", 1, [ChannelMap(9, 1, 1, (3, 9))], models([1]))
    with pytest.raises(Corrupt, match="at most 65536 and 2\\^8"):  # no more than 2^D entries
        prep("u8", 1, [ChannelMap(9, 8, 256, tuple(range(257)))], models([8]), features=vt)
    with pytest.raises(Corrupt, match="not below 2\\^8"):
        prep("u8", 1, [ChannelMap(9, 1, 1, (3, 256))], models([1]), features=vt)
    with pytest.raises(Corrupt, match="bits 2 for a table of 2 entries"):  # bits = ceil(log2(value + 1))
        prep("u16", 1, [ChannelMap(9, 2, 1, (3, 9))], models([2]), features=vt)
    with pytest.raises(Corrupt, match="bits 1 for a table of 1 entries"):
        prep("u16", 1, [ChannelMap(9, 1, 0, (3,))], models([1]), features=vt)
    prep("u16", 1, [ChannelMap(9, 0, 0, (3,))], models([0]), features=vt)
    prep("u8", 1, [ChannelMap(9, 8, 255, tuple(range(256)))], models([8]), features=vt)
    prep("u64", 1, [ChannelMap(9, 2, 2, (0, 5, 2**32 - 1)), lsb("u64")], models([2, 32]), features=vt | {F.WIDE_SAMPLES})


# --- 2.2 / 3.3 / R1 cross context ------------------------------------------------------------


@pytest.mark.parametrize(
    "sample,channels,slot,ok",
    [
        ("u8", 1, 0, False),  # Gray
        ("u8", 2, 1, False),  # GrayAlpha: alpha
        ("u8", 3, 0, False),  # RGB: the first color slot
        ("u8", 3, 1, True),
        ("u8", 3, 2, True),
        ("u8", 4, 3, False),  # RGBA: alpha
        ("u8", 5, 3, True),  # CMYK K (ruling R1)
        ("u8", 5, 1, True),
        ("u8", 6, 2, True),  # Oklab b (R1)
        ("u8", 7, 3, False),  # OklabAlpha: alpha
        ("u64", 3, 1, True),  # the hi words' slots 1 and 2
        ("u64", 3, 3, False),  # a lo word
        ("u64", 3, 5, False),
    ],
)
def test_cross_slots(sample, channels, slot, ok):
    n = CH[channels] * (2 if sample == "u64" else 1)
    maps = [lsb(sample)] * n
    feats = {F.WIDE_SAMPLES, F.PIXEL_MODELS}
    mb = models([m.bits for m in maps], cross={slot: 1})
    if ok:
        p = prep(sample, channels, maps, mb, features=feats)
        assert p.plan.models[slot].cross
    else:
        with pytest.raises(Corrupt, match="cross context"):
            prep(sample, channels, maps, mb, features=feats)


def test_cross_in_palette_model():
    mb = Bits().simple_model(8).simple_model(8, cross=1).tobytes()
    with pytest.raises(Corrupt, match="cross context"):
        prep("u8", 1, [lsb("u8")], mb, present=1)


# --- 3.3 models ------------------------------------------------------------------------------


def _one(depth: int, k: int, m: int, last: int = 0, entries=((1, 0),), ctx_shift=None) -> bytes:
    return Bits().model(k, m, 0, ctx_shift).table(last, 1, list(entries)).tobytes()


def test_k_and_m_ranges():
    with pytest.raises(Corrupt, match="k 17"):
        prep("u32", 1, [lsb("u32")], _one(32, 17, 0, ctx_shift=0))
    with pytest.raises(Corrupt, match="m 5"):
        prep("u8", 1, [lsb("u8")], _one(8, 0, 5))


@pytest.mark.parametrize("depth,k,m", [(8, 0, 1), (4, 5, 0), (8, 2, 3), (0, 1, 0)])
def test_k_must_be_the_clamped_kv(depth, k, m):
    with pytest.raises(Corrupt, match="clamped kv"):
        prep("u8", 1, [ChannelMap(0, depth, 0)], _one(depth, k, m))


def test_k_equal_n_below_m_is_valid():
    prep("u8", 1, [ChannelMap(0, 1, 0)], _one(1, 1, 2))  # kv = min(max(1, 2), 1) = 1


@pytest.mark.parametrize("depth,k,m", [(8, 8, 0), (16, 7, 4), (0, 0, 4)])
def test_alphabet_over_256(depth, k, m):
    with pytest.raises(Corrupt, match="exceeds 256"):
        prep("u16", 1, [ChannelMap(0, depth, 0)], _one(depth, k, m))


def test_last_at_or_past_the_alphabet():
    # (8, 0, 0): alphabet 34
    with pytest.raises(Corrupt, match="at or past the alphabet"):
        prep("u8", 1, [lsb("u8")], _one(8, 0, 0, last=34, entries=[(1, 0)] + [(0, 0)] * 34))
    prep("u8", 1, [lsb("u8")], _one(8, 0, 0, last=33, entries=[(1, 0)] + [(0, 0)] * 33))


def test_gamma_with_more_than_24_zeros():
    b = Bits().model(0, 0).put(0, 8).put(0, 3)
    b.put(0, 25).put(1, 1).put(0, 25)
    with pytest.raises(Corrupt, match="more than 24 leading zero bits"):
        prep("u8", 1, [lsb("u8")], b.tobytes())
    b = Bits().model(0, 0).put(0, 8).put(0, 3)
    b.put(0, 24).put(1, 1).put(0, 24)  # 24 zeros are a valid gamma code; its e is not
    with pytest.raises(Corrupt, match="exponent"):
        prep("u8", 1, [lsb("u8")], b.tobytes())


def test_exponent_range():
    with pytest.raises(Corrupt, match="exponent 33"):
        prep("u8", 1, [lsb("u8")], _one(8, 0, 0, entries=[(33, 0)]))
    b = Bits().model(0, 0).put(0, 8).put(0, 3).gamma(2)  # zigzag 1 = -1: e = -1
    with pytest.raises(Corrupt, match="exponent -1"):
        prep("u8", 1, [lsb("u8")], b.tobytes())
    prep("u8", 1, [lsb("u8")], _one(8, 0, 0, entries=[(32, 0)]))


def test_no_nonzero_weight():
    with pytest.raises(Corrupt, match="no nonzero weight"):
        prep("u8", 1, [lsb("u8")], _one(8, 0, 0, last=3, entries=[(0, 0)] * 4))


def test_weight_on_run_token_past_the_cap():
    # (8, 0, 0): symbol 24 codes runs up to 2^15, symbol 25 runs above it
    with pytest.raises(Corrupt, match="past the run cap"):
        prep("u8", 1, [lsb("u8")], _one(8, 0, 0, last=25, entries=[(0, 0)] * 25 + [(1, 0)]))
    prep("u8", 1, [lsb("u8")], _one(8, 0, 0, last=24, entries=[(0, 0)] * 24 + [(1, 0)]))


def test_models_past_models_len():
    full = models([8])
    with pytest.raises(Corrupt, match="models: runs past the end"):
        prep("u8", 1, [lsb("u8")], full[:-1])


def test_models_padding_is_ignored():
    prep("u8", 1, [lsb("u8")], models([8]) + b"\xff\xff")
    full = bytearray(models([8]))
    full[-1] |= 0x80  # garbage bits after the last table
    prep("u8", 1, [lsb("u8")], bytes(full))


def test_palette_model_is_read_only_with_present_bit_0():
    with pytest.raises(Corrupt, match="models: runs past the end"):
        prep("u8", 1, [lsb("u8")], models([8]), present=1)


# --- 2.6 near-lossless bounds ----------------------------------------------------------------


def near(payload: bytes) -> list[Record]:
    return [Record(19, payload)]


NL = {F.NEAR_LOSSLESS}


@pytest.mark.parametrize("sample", ["f32", "f16", "i8", "i16", "u64"])
def test_bounds_only_for_u8_u16_u32_i32(sample):
    n = 2 if sample == "u64" else 1
    with pytest.raises(Corrupt, match="near-lossless bounds for"):
        prep(sample, 1, [lsb(sample)] * n, features=NL | {F.WIDE_SAMPLES, F.SIGNED_SAMPLES}, records=near(b"\x01"))


def test_bounds_count_and_trailing_bytes():
    with pytest.raises(Corrupt, match="truncated varint"):  # one bound per channel
        prep("u8", 3, features=NL, records=near(b"\x01\x01"))
    with pytest.raises(Corrupt, match="bytes after the last bound"):
        prep("u8", 1, features=NL, records=near(b"\x01\x00"))
    p = prep("u8", 3, features=NL, records=near(b"\x01\x02\x03"))
    assert p.plan.bounds == (2, 1, 3)  # slot order G, R, B


def test_bound_on_const_or_table():
    maps = [lsb("u8"), ChannelMap(4, 0, 255)]
    with pytest.raises(Corrupt, match="map mode 4"):
        prep("u8", 2, maps, models([8]), features=NL, records=near(b"\x01\x01"))
    prep("u8", 2, maps, models([8]), features=NL, records=near(b"\x01\x00"))
    with pytest.raises(Corrupt, match="map mode 9"):
        prep("u16", 1, [ChannelMap(9, 2, 3, (1, 2, 3, 4))], models([2]), features=NL | {F.VALUE_TABLES}, records=near(b"\x01"))


def test_bound_limit():
    prep("u8", 1, features=NL, records=near(b"\x7f"))  # 2^7 - 1
    with pytest.raises(Corrupt, match="depth 8"):
        prep("u8", 1, features=NL, records=near(encode_varint(128)))
    with pytest.raises(Corrupt, match="depth 1"):  # channels of at most 1 bit are exact
        prep("u8", 1, [ChannelMap(0, 1, 0)], models([1]), features=NL, records=near(b"\x01"))


def test_all_bounds_zero():
    with pytest.raises(Corrupt, match="every bound 0"):
        prep("u8", 3, features=NL, records=near(b"\x00\x00\x00"))


# --- 2.4 stripe layout -----------------------------------------------------------------------


def test_decorrelation_not_allowed():
    with pytest.raises(Corrupt, match="decorrelation mode 1"):
        prep("u8").decode_unit(body(decor=1), 1, 1)
    rgb = prep("u8", 3, [lsb("u8"), ChannelMap(0, 7, 0), lsb("u8")], models([7, 8, 8]))
    with pytest.raises(Corrupt, match="decorrelation mode 2"):  # unequal depths
        rgb.decode_unit(body(decor=2, streams=[STATE] * 3), 1, 1)
    cmyk = prep("u8", 5, features={F.PIXEL_MODELS})
    with pytest.raises(Corrupt, match="decorrelation mode 3"):
        cmyk.decode_unit(body(decor=3, streams=[STATE] * 4), 1, 1)
    rgb = prep("u8", 3)
    for decor in range(4):
        rgb.decode_unit(body(decor=decor, streams=[STATE] * 3), 1, 1)


@pytest.mark.parametrize("decor", [4, 0x7F, 0x85, 0xFF])
def test_unknown_layout_byte(decor):
    with pytest.raises(Corrupt, match="stripe layout byte"):
        prep("u8").decode_unit(body(decor=decor), 1, 1)


@pytest.mark.parametrize("decor", [0x81, 0x82, 0x83, 0x84])
def test_bilevel_and_template_layouts(decor):
    with pytest.raises(Corrupt, match="without feature"):
        prep("u8").decode_unit(body(decor=decor), 1, 1)
    feats = {F.BILEVEL, F.TEMPLATE_PALETTES}
    with pytest.raises(Corrupt, match="without head record"):
        prep("u8", features=feats).decode_unit(body(decor=decor), 1, 1)
    rid = 25 if decor < 0x83 else 35
    with pytest.raises(Corrupt, match="runs past the end"):  # a one-byte record is truncated
        prep("u8", features=feats, records=[Record(rid, b"")])


def test_predictor_rules():
    p = prep("u8", h=2)
    two = lambda preds: body(preds=preds)  # noqa: E731
    p.decode_unit(two(b"\x60"), 1, 2)
    with pytest.raises(Corrupt, match="predictor 10"):
        p.decode_unit(two(b"\xa0"), 1, 2)
    with pytest.raises(Corrupt, match="outside an inter frame"):
        p.decode_unit(two(b"\x70"), 1, 2)
    with pytest.raises(Corrupt, match="row 0 predictor 3"):
        p.decode_unit(two(b"\x03"), 1, 2)
    with pytest.raises(Corrupt, match="outside an inter frame"):
        p.decode_unit(two(b"\x07"), 1, 2)
    ref = np.zeros((2, 1, 1), dtype=np.uint8)
    for nib in (0x70, 0x80, 0x90, 0x07, 0x77):
        p.decode_unit(two(bytes([nib])), 1, 2, ref)
    with pytest.raises(Corrupt, match="row 0 predictor 8"):  # only 7 on stripe row 0
        p.decode_unit(two(b"\x08"), 1, 2, ref)
    with pytest.raises(Corrupt, match="row predictors runs past the end"):
        p.decode_unit(b"\x00", 1, 2)


def test_inter_predictors_invalid_for_64_bit_samples():
    p = prep("u64", 1, h=2, features={F.WIDE_SAMPLES})
    ref = np.zeros((2, 1, 1), dtype=np.uint64)
    with pytest.raises(Corrupt, match="64-bit samples"):
        p.decode_unit(body(preds=b"\x70", streams=[STATE] * 2), 1, 2, ref)


def test_inter_predictors_invalid_with_bounds():
    p = prep("u8", 1, h=2, features=NL, records=near(b"\x01"))
    with pytest.raises(Corrupt, match="near-lossless"):
        p.decode_unit(body(preds=b"\x70"), 1, 2, np.zeros((2, 1, 1), dtype=np.uint8))


def test_streams_and_states():
    p = prep("u8")
    with pytest.raises(Corrupt, match="past the unit record"):
        p.decode_unit(body(lens=[5]), 1, 1)
    with pytest.raises(Corrupt, match="bytes after the last stream"):
        p.decode_unit(body() + b"\x00", 1, 1)
    with pytest.raises(Corrupt, match="shorter than its 1 initial states"):
        p.decode_unit(body(streams=[STATE[:3]]), 1, 1)
    with pytest.raises(Corrupt, match="whole 16-bit word"):
        p.decode_unit(body(streams=[STATE + b"\x00"]), 1, 1)
    with pytest.raises(Corrupt, match="below 2\\^16"):
        p.decode_unit(body(streams=[(0xFFFF).to_bytes(4, "little")]), 1, 1)
    with pytest.raises(Corrupt, match="stream length"):  # a truncated varint
        p.decode_unit(b"\x00\x00", 1, 1)
    lanes3 = prepare(header("u8", 1, 3, 1), head(header("u8", 1, 3, 1), [lsb("u8")], models([8]), lanes=3))
    with pytest.raises(Corrupt, match="shorter than its 3 initial states"):  # one state per active lane
        lanes3.decode_unit(body(streams=[STATE * 2]), 3, 1)
    lanes3.decode_unit(body(streams=[STATE * 3]), 3, 1)
    lanes3.decode_unit(body(streams=[STATE * 2]), 2, 1)  # lanes of one column: the third is empty


def test_too_few_words():
    # one symbol 0 (weight 1) and symbol 1 (weight 1): every token halves the state's frequency
    mb = Bits().model(0, 0).table(1, 1, [(1, 0), (1, 0)]).tobytes()
    p = prep("u8", 1, [lsb("u8")], mb, w=1, h=1)
    # state 0x10000: slot 0 -> symbol 0, x = 512 * 64 = 0x8000 < 2^16 needs a word
    with pytest.raises(Corrupt, match="too few words"):
        p.decode_unit(body(streams=[STATE]), 1, 1)
    p.decode_unit(body(streams=[STATE + b"\x00\x00"]), 1, 1)


# --- 2.5 palette stripes ---------------------------------------------------------------------


def test_palette_stripe_needs_present_bit_0():
    with pytest.raises(Corrupt, match="without head present bit 0"):
        prep("u8").decode_unit(b"\x80\x00\x07\x00\x04" + STATE, 1, 1)


def test_palette_stripe_needs_depth_at_most_16():
    p = prep("u32", 1, [ChannelMap(0, 17, 0)], models([17], palette=True), present=1)
    with pytest.raises(Corrupt, match="deeper than 16"):
        p.decode_unit(b"\x80\x00\x07\x00\x00\x04" + STATE, 1, 1)
    p = prep("u32", 1, [ChannelMap(0, 16, 0)], models([16], palette=True), present=1)
    out = p.decode_unit(b"\x80\x00\x07\x01\x00\x04" + STATE, 1, 1)  # one u16 entry 0x107
    assert out[0, 0, 0] == 0x107


@pytest.mark.skipif("c" not in _backend.available(), reason="C kernels not built")
def test_palette_stripe_kernel_codes():
    """A unit past EXPLAIN_PIXELS carries the kernel's own code: 2.5's depth rule is
    IMIJ_E_DEPTH, as for the level kernel's palette stripes (test_bilevel), the head bit's
    IMIJ_E_PALETTE."""
    w, h = 65, EXPLAIN_PIXELS // 64  # past what the reference re-reads
    deep = prep("u32", 1, [ChannelMap(0, 17, 0)], models([17], palette=True), present=1)
    for p, stripe, code in ((deep, b"\x80\x00\x07\x00\x00\x04", "IMIJ_E_DEPTH"),
                            (prep("u8"), b"\x80\x00\x07\x00\x04", "IMIJ_E_PALETTE")):
        text = KERNEL_CODES.message(getattr(_backend.lib, code))
        with _backend.use("c"), pytest.raises(Corrupt, match=f"^stripe: {re.escape(text)}$"):
            p.decode_unit(stripe + STATE, w, h)


def test_palette_entries():
    p = prep("u8", 1, [ChannelMap(0, 3, 0)], models([3], palette=True), present=1)
    with pytest.raises(Corrupt, match="not below 2\\^3"):
        p.decode_unit(b"\x80\x00\x08\x00\x04" + STATE, 1, 1)
    with pytest.raises(Corrupt, match="palette entry runs past the end"):
        p.decode_unit(b"\x80\x05\x01\x02", 1, 1)
    assert p.decode_unit(b"\x80\x00\x07\x00\x04" + STATE, 1, 1)[0, 0, 0] == 7


def test_palette_index_past_the_entries_selects_entry_0():
    # palette model: one symbol, token 4 of (k 0, m 0) = u 8..15 with 3 extra bits -> u = 8 + e
    mb = Bits().simple_model(8).model(0, 0).table(4, 1, [(0, 0)] * 4 + [(1, 0)]).tobytes()
    p = prep("u8", 1, [lsb("u8")], mb, present=1)
    # entries 5, 6; state low 3 bits = 2: u = 10 -> d = 5 -> index 5 >= 2 -> entry 0
    state = (0x80002).to_bytes(4, "little")
    assert p.decode_unit(b"\x80\x01\x05\x06\x00\x04" + state, 1, 1)[0, 0, 0] == 5
    state = (0x80003).to_bytes(4, "little")  # u = 11 -> d = -6 -> 250 -> entry 0
    assert p.decode_unit(b"\x80\x01\x05\x06\x00\x04" + state, 1, 1)[0, 0, 0] == 5


def test_palette_stripe_with_inter_predictors():
    """Our reading: an index plane has no channel whose reference it could reduce."""
    p = prep("u8", 1, present=1, h=2)
    with pytest.raises(Corrupt, match="palette stripe"):
        p.decode_unit(b"\x80\x00\x07\x70\x04" + STATE, 1, 2, np.zeros((2, 1, 1), dtype=np.uint8))
