"""Bilevel stripes (2.10): record 25, layouts 0x81 / 0x82, contexts by hand (template table,
lane-edge and stripe-top rules), every Corrupt rule, and round trips through the writer.

Every test runs on the C kernel and on the Python reference (conftest). ``oracle_bilevel`` is a
literal transcription of 2.10 and 3.1 kept independent of the package, so random records and
streams check both decoders against the spec's text as well as against each other.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import imij_plugins
from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.bilevel import (
    bilevel_record,
    fit_probabilities,
    read_bilevel_record,
    write_used_values,
)
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.level_writer import LevelOptions
from imij_plugins.payload.head import ChannelMap
from imij_plugins.payload.kernel_codes import EXPLAIN_PIXELS, KERNEL_CODES
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire.bits import BitWriter
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint

from .handmade import Bits, head, header
from .syntax_writer import (
    EntropyOptions,
    MapChoice,
    UnitChoice,
    decode_entropy_payload,
    encode_entropy_payload,
    header_for,
)

M = 1024
BIL = {F.BILEVEL}
LEVELS = {F.BILEVEL, F.TEMPLATE_PALETTES}

# 2.10's table: k -> (dy, dx)
TABLE = {0: (-2, -1), 1: (-2, 0), 2: (-2, 1), 3: (-1, -2), 4: (-1, -1), 5: (-1, 0), 6: (-1, 1), 7: (-1, 2), 8: (0, -2), 9: (0, -1)}


# --- an independent oracle -------------------------------------------------------------------


def oracle_lanes(gw: int, L: int) -> list[tuple[int, int]]:
    """2.3: lane l covers [l * lw, min((l + 1) * lw, gw)); the active lanes are the non-empty prefix."""
    lw = -(-gw // L)
    out = []
    for l in range(L):
        a, b = l * lw, min((l + 1) * lw, gw)
        if a >= b:
            break
        out.append((a, b))
    return out


def oracle_t(plane, r: int, c: int, k: int, first: int, gw: int) -> int:
    dy, dx = TABLE[k]
    y, x = r + dy, c + dx
    if y < 0 or x < 0 or x >= gw:
        return 0
    if dy == 0 and x < first:  # left of the lane's first column: one row up
        return plane[r - 1][x] if r > 0 else 0
    return plane[y][x]


class OracleStream:
    def __init__(self, data: bytes, active: int):
        assert len(data) >= 4 * active and (len(data) - 4 * active) % 2 == 0
        self.x = [int.from_bytes(data[4 * l : 4 * l + 4], "little") for l in range(active)]
        assert all(x >= 1 << 16 for x in self.x)
        self.words = [int.from_bytes(data[i : i + 2], "little") for i in range(4 * active, len(data), 2)]

    def renorm(self, l: int) -> None:
        if self.x[l] < 1 << 16:
            self.x[l] = (self.x[l] << 16) | self.words.pop(0)  # IndexError: too few words

    def binary(self, l: int, p: int) -> int:
        slot = self.x[l] % M
        t = 1 if slot >= p else 0
        self.x[l] = (M - p if t else p) * (self.x[l] >> 10) + slot - (p if t else 0)
        self.renorm(l)
        return t


def oracle_bilevel(probs, stream: bytes, gw: int, rows: int, L: int) -> list[list[int]]:
    lanes = oracle_lanes(gw, L)
    lw = lanes[0][1] - lanes[0][0]
    s = OracleStream(stream, len(lanes))
    plane = [[0] * gw for _ in range(rows)]
    for r in range(rows):
        for x in range(lw):
            for l, (a, b) in enumerate(lanes):
                if a + x >= b:
                    continue
                ctx = sum(oracle_t(plane, r, a + x, k, a, gw) << k for k in range(10))
                plane[r][a + x] = s.binary(l, probs[ctx])
    return plane


# --- building payloads by hand ---------------------------------------------------------------


def record25(inv: int, probs: dict[int, int]) -> bytes:
    """Record 25 by hand: inv, then per context a used bit and 11 bits."""
    b = Bits().put(inv, 1)
    for c in range(1024):
        if c in probs:
            b.put(1, 1).put(probs[c], 11)
        else:
            b.put(0, 1)
    return b.tobytes()


def gray1(width: int, height: int, rec: bytes | None, *, lanes: int = 1, features=BIL, stripe_rows=None, maps=None, channels=1):
    hdr = header("u8", channels, width, height, features)
    maps = maps or [ChannelMap(0, 1, 0)]
    depths = [m.bits for m in maps if m.mode != 4]
    models = Bits()
    for d in depths:
        models.simple_model(d)
    records = [Record(25, rec)] if rec is not None else []
    return hdr, head(hdr, maps, models.tobytes(), lanes=lanes, stripe_rows=stripe_rows, records=records)


def payload_bytes(lh, bodies: list[bytes]) -> bytes:
    """A whole payload from a LosslessHead built by handmade.head (2)."""
    from imij_plugins.wire.records import encode_records

    out = bytearray(encode_varint(lh.present | (2 if lh.records else 0)))
    out.append(lh.lanes)
    out += encode_varint(lh.geometry.stripe_rows) + encode_varint(lh.geometry.group_cols)
    for m in lh.maps:
        out += bytes([m.mode, m.bits]) + m.value.to_bytes(2, "little")
    out += encode_varint(len(lh.models)) + lh.models
    if lh.records:
        recs = encode_records(lh.records)
        out += encode_varint(len(recs)) + recs
    for body in bodies:
        out += encode_varint(9) + encode_varint(len(body)) + body
    return bytes(out)


STATE = (1 << 16).to_bytes(4, "little")


def deterministic(ones: set[int]) -> dict[int, int]:
    """p = 0 (t = 1, state unchanged) for the contexts in ``ones``, p = M (t = 0) elsewhere."""
    return {c: (0 if c in ones else M) for c in range(1024)}


# --- record 25 -------------------------------------------------------------------------------


def test_record25_bits_by_hand():
    rec = record25(1, {0: 700, 1023: 1024})
    t = read_bilevel_record(rec)
    assert t.inv == 1 and t.probs[0] == 700 and t.probs[1023] == M and t.probs[5] == M // 2
    assert t.used[0] and not t.used[1] and t.used[1023]
    assert len(rec) == (1 + 1024 + 2 * 11 + 7) // 8
    assert bilevel_record(1, [700] + [None] * 1022 + [1024]) == rec  # the writer's bytes are the same


def test_record25_corrupt_rules():
    with pytest.raises(Corrupt, match="above M"):  # 2.10: p_c <= M
        read_bilevel_record(record25(0, {7: 1025}))
    rec = record25(0, {})
    with pytest.raises(Corrupt, match="exactly"):  # exactly ceil(bits / 8) bytes
        read_bilevel_record(rec + b"\x00")
    with pytest.raises(Corrupt, match="runs past"):
        read_bilevel_record(rec[:-1])


def test_record25_is_gated_by_its_feature():
    rec = record25(0, deterministic(set()))
    hdr, lh = gray1(2, 1, rec, features=())
    with pytest.raises(Corrupt, match="record 25 without feature bilevel"):
        decode_entropy_payload(payload_bytes(lh, [b"\x81" + STATE]), hdr)
    hdr, lh = gray1(2, 1, rec)
    assert decode_entropy_payload(payload_bytes(lh, [b"\x81" + STATE]), hdr).shape == (1, 2, 1)


def test_record25_in_a_quick_payload_is_corrupt():
    from imij_plugins.payload.head import read_lossless_head
    from imij_plugins.wire.cursor import Cursor

    hdr = header("u8", 1, 2, 1, BIL | {F.QUICK_PIXELS})
    recs = encode_varint(25) + encode_varint(3) + b"\x00\x00\x00"
    raw = encode_varint(8 | 2) + b"\x01" + b"\x01\x00" + encode_varint(len(recs)) + recs
    with pytest.raises(Corrupt, match="quick-pixel"):
        read_lossless_head(Cursor(raw), hdr)


# --- contexts by hand ------------------------------------------------------------------------


def test_row0_left_neighbours_and_nothing_above():
    """1 x 4, one lane, t = 1 only in context 0: (0,0) ctx 0 -> 1; (0,1) W = 1: ctx 512 -> 0;
    (0,2) WW = 1: ctx 256 -> 0; (0,3) ctx 0 -> 1."""
    hdr, lh = gray1(4, 1, record25(0, deterministic({0})))
    out = decode_entropy_payload(payload_bytes(lh, [b"\x81" + STATE]), hdr)
    assert out[0, :, 0].tolist() == [1, 0, 0, 1]


def test_rows_two_above():
    """3 x 3, t = 1 in contexts 0 and 2. Row 0: 1 0 0. Row 1: (1,0) N = 1: ctx 32; (1,1) NW:
    16; (1,2) k = 3 (dx -2): 8 -> 0 0 0. Row 2: (2,0) k = 1 (dy -2, dx 0): ctx 2 -> 1; (2,1)
    k = 0 and W: 513 -> 0; (2,2) WW: 256 -> 0."""
    hdr, lh = gray1(3, 3, record25(0, deterministic({0, 2})))
    out = decode_entropy_payload(payload_bytes(lh, [b"\x81" + STATE]), hdr)
    assert out[:, :, 0].tolist() == [[1, 0, 0], [0, 0, 0], [1, 0, 0]]


def test_lane_edge_rule_by_hand():
    """4 x 2, two lanes of 2 columns, t = 1 in contexts 0 and 296. Row 0: (0,0) ctx 0 -> 1,
    (0,2): its left pixels are left of lane 1's first column on stripe row 0 -> 0, ctx 0 -> 1;
    (0,1), (0,3): W = 1 -> 0. Row 1, step x = 0: (1,0): N (k 5) and k 7 -> 160 -> 0; (1,2):
    k 3 (col 0) = 1, k 5 (col 2) = 1, and WW (col 0, left of the lane) reads one row up: 1 ->
    8 + 32 + 256 = 296 -> 1 (reading the current row, or 0, would give 40). Step x = 1: (1,1):
    NW 16 + NE 64 = 80 -> 0; (1,3): NW (col 2) 16, WW (col 1, one row up) 0, W (1,2) = 1:
    528 -> 0."""
    hdr, lh = gray1(4, 2, record25(0, deterministic({0, 296})), lanes=2)
    out = decode_entropy_payload(payload_bytes(lh, [b"\x81" + STATE * 2]), hdr)
    assert out[:, :, 0].tolist() == [[1, 0, 1, 0], [0, 0, 1, 0]]


def test_stripe_top_reads_zero_above():
    """Two stripes of one row: the second stripe's row 0 sees nothing of the first (2.3, 2.10)."""
    hdr, lh = gray1(4, 2, record25(0, deterministic({0})), stripe_rows=1)
    out = decode_entropy_payload(payload_bytes(lh, [b"\x81" + STATE, b"\x81" + STATE]), hdr)
    assert out[:, :, 0].tolist() == [[1, 0, 0, 1], [1, 0, 0, 1]]


def test_binary_step_arithmetic_by_hand():
    """1 x 2. (0,0) ctx 0, p 700: x = 0x1028A, slot 650 < 700 -> t 0, x = 700 * 64 + 650 =
    45450 < 2^16 -> word 0x0300: x = 45450 << 16 | 0x300. (0,1) ctx 0 (W = 0), slot 0x300 = 768
    >= 700 -> t 1. inv = 1 flips both: 1 0."""
    stream = (0x1028A).to_bytes(4, "little") + (0x0300).to_bytes(2, "little")
    hdr, lh = gray1(2, 1, record25(1, {0: 700}))
    assert decode_entropy_payload(payload_bytes(lh, [b"\x81" + stream]), hdr)[0, :, 0].tolist() == [1, 0]
    with pytest.raises(Corrupt, match="too few words"):  # the word is needed
        decode_entropy_payload(payload_bytes(lh, [b"\x81" + stream[:4]]), hdr)


def test_words_in_step_phase_lane_order():
    """2 x 1, two lanes, every context p = M / 2: t is bit 9 of the state. Both states drop below
    2^16 and take a word each: lane 0 the first, lane 1 the second. Unread words are ignored."""
    rec = record25(0, {})
    hdr, lh = gray1(2, 2, rec, lanes=2)
    # lane 0: x = 0x10200: slot 512 -> t 1, x = 512 * 64 + 0 = 0x8000 -> word A
    # lane 1: x = 0x10100: slot 256 -> t 0, x = 512 * 64 + 256 = 0x8100 -> word B
    # row 1: lane 0 slot = A & 1023, lane 1 slot = B & 1023
    words = [0x0200, 0x0000]  # A: t 1, B: t 0
    stream = (0x10200).to_bytes(4, "little") + (0x10100).to_bytes(4, "little") + b"".join(w.to_bytes(2, "little") for w in words)
    out = decode_entropy_payload(payload_bytes(lh, [b"\x81" + stream + b"\xff\xff"]), hdr)
    assert out[:, :, 0].tolist() == [[1, 0], [1, 0]]


@pytest.mark.parametrize("seed", range(6))
def test_random_records_and_streams_against_the_oracle(seed):
    """Random probabilities and random stream words: both decoders match the literal oracle."""
    rng = random.Random(seed)
    w, h, L = rng.randint(1, 13), rng.randint(1, 6), rng.randint(1, 6)
    probs = {c: rng.choice([0, M, rng.randint(0, M)]) for c in range(1024) if rng.random() < 0.7}
    rec = record25(rng.randint(0, 1), probs)
    table = read_bilevel_record(rec)
    active = len(oracle_lanes(w, L))
    stream = b"".join(rng.randint(1 << 16, (1 << 32) - 1).to_bytes(4, "little") for _ in range(active))
    stream += bytes(rng.randrange(256) for _ in range(2 * (w * h + 4)))
    expect = oracle_bilevel(table.probs.tolist(), stream, w, h, L)
    hdr, lh = gray1(w, h, rec, lanes=L)
    out = decode_entropy_payload(payload_bytes(lh, [b"\x81" + stream]), hdr)
    assert (out[:, :, 0] ^ table.inv).tolist() == expect


# --- every Corrupt rule of 2.10 --------------------------------------------------------------


DET0 = record25(0, deterministic(set()))  # every context p = M: t = 0, no state change


def _plan(maps=None, features=BIL, rec: bytes | None = None, channels=1, w=2, h=1):
    hdr, lh = gray1(w, h, DET0 if rec is None else rec, features=features, maps=maps, channels=channels)
    return prepare(hdr, lh)


def test_layouts_without_feature_or_record():
    p = _plan(features=())  # a prepared plan whose file lacks the feature (records are the head's job)
    for decor in (0x81, 0x82):
        with pytest.raises(Corrupt, match="without feature bilevel"):
            p.decode_unit(bytes([decor]) + STATE, 2, 1)
    hdr, lh = gray1(2, 1, None)
    p = prepare(hdr, lh)
    for decor in (0x81, 0x82):
        with pytest.raises(Corrupt, match="without head record 25"):
            p.decode_unit(bytes([decor, 0, 0]) + STATE, 2, 1)


def test_bilevel_stripe_needs_one_slot_of_depth_1():
    with pytest.raises(Corrupt, match="not 1 bit deep"):
        _plan(maps=[ChannelMap(0, 2, 0)]).decode_unit(b"\x81" + STATE, 2, 1)
    with pytest.raises(Corrupt, match="not 1 bit deep"):  # two slots (GrayAlpha, alpha coded)
        _plan(maps=[ChannelMap(0, 1, 0), ChannelMap(0, 1, 0)], channels=2).decode_unit(b"\x81" + STATE, 2, 1)
    # a Const alpha map leaves one slot: allowed (2.10)
    out = _plan(maps=[ChannelMap(0, 1, 0), ChannelMap(4, 0, 9)], channels=2).decode_unit(b"\x81" + STATE, 2, 1)
    assert out[0, :, 1].tolist() == [9, 9]


def test_bilevel_palette_rules():
    p = _plan(maps=[ChannelMap(0, 8, 0)])
    out = p.decode_unit(b"\x82\x01\x07\x09" + STATE, 2, 1)  # two entries
    assert out[0, :, 0].tolist() == [7, 7]
    with pytest.raises(Corrupt, match="0x82"):  # 2.10: more than two entries
        p.decode_unit(b"\x82\x02\x07\x09\x0a" + STATE, 2, 1)
    with pytest.raises(Corrupt, match="not below"):  # 2.5: each entry < 2^n
        _plan(maps=[ChannelMap(0, 3, 0)]).decode_unit(b"\x82\x00\x08" + STATE, 2, 1)
    with pytest.raises(Corrupt, match="runs past|ends inside"):
        p.decode_unit(b"\x82\x01\x07", 2, 1)
    with pytest.raises(Corrupt, match="deeper than 16|bits deep"):  # our reading: entries need depth <= 16
        hdr = header("u32", 1, 2, 1, BIL)
        lh = head(hdr, [ChannelMap(0, 17, 0)], Bits().simple_model(17).tobytes(), records=[Record(25, record25(0, {}))])
        prepare(hdr, lh).decode_unit(b"\x82\x00\x00\x00" + STATE, 2, 1)


@pytest.mark.skipif("c" not in _backend.available(), reason="C kernels not built")
def test_bilevel_palette_depth_kernel_code():
    """A unit past EXPLAIN_PIXELS carries the level kernel's own code: 2.5's depth rule is
    IMIJ_E_DEPTH, as for the entropy kernel's palette stripes (test_corrupt)."""
    hdr = header("u32", 1, 2, 1, BIL)
    lh = head(hdr, [ChannelMap(0, 17, 0)], Bits().simple_model(17).tobytes(), records=[Record(25, record25(0, {}))])
    text = KERNEL_CODES.message(_backend.lib.IMIJ_E_DEPTH)
    with _backend.use("c"), pytest.raises(Corrupt, match=f"^stripe: {re.escape(text)}$"):
        prepare(hdr, lh).decode_unit(b"\x82\x00\x00\x00" + STATE, 65, EXPLAIN_PIXELS // 64)


def test_bilevel_palette_index_past_the_last_entry():
    """n = 1: an index of 1 selects entry 0 (2.10). p = 0 everywhere: t = 1; inv = 0."""
    hdr, lh = gray1(3, 1, record25(0, deterministic(set(range(1024)))), maps=[ChannelMap(0, 8, 0)])
    assert prepare(hdr, lh).decode_unit(b"\x82\x00\x2a" + STATE, 3, 1)[0, :, 0].tolist() == [42, 42, 42]
    hdr, lh = gray1(3, 1, record25(0, deterministic(set(range(1024)))), maps=[ChannelMap(0, 8, 0)])
    assert prepare(hdr, lh).decode_unit(b"\x82\x01\x2a\x2b" + STATE, 3, 1)[0, :, 0].tolist() == [43, 43, 43]


@pytest.mark.parametrize("stream, message", [
    (b"\x00\x00\x01", "shorter than|ends inside"),  # 3: a state per active lane
    (b"\xff\xff\x00\x00", "below 2\\^16"),
    (STATE + b"\x00", "whole 16-bit word|odd byte count"),
])
def test_stream_rules(stream, message):
    with pytest.raises(Corrupt, match=message):
        _plan().decode_unit(b"\x81" + stream, 2, 1)


# --- round trips -----------------------------------------------------------------------------


def _strokes(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A text-like bilevel image: short horizontal and vertical strokes on white."""
    img = np.zeros((h, w), dtype=np.uint8)
    for _ in range(max(1, h * w // 40)):
        y, x = rng.integers(0, h), rng.integers(0, w)
        if rng.random() < 0.5:
            img[y, x : x + rng.integers(1, 6)] = 1
        else:
            img[y : y + rng.integers(1, 6), x] = 1
    return img


def _roundtrip(image: np.ndarray, options: EntropyOptions, layout=None) -> bytes:
    enc = encode_entropy_payload(image, options=options)
    hdr = header_for(image, enc, layout)
    out = decode_entropy_payload(enc.payload, hdr)
    assert np.array_equal(out.reshape(image.shape), image)
    return enc.payload


@pytest.mark.parametrize("lanes", range(1, 17))
def test_roundtrip_bilevel_every_lane_count(lanes):
    rng = np.random.default_rng(lanes)
    h, w = int(rng.integers(3, 12)), int(rng.integers(1, 40))
    img = _strokes(rng, h, w) if lanes % 2 else (rng.random((h, w)) < 0.3).astype(np.uint8)
    groups = 0 if w < 4 or lanes % 3 else int(rng.integers(1, w))
    for layout in (0x81, 0x82):
        opts = EntropyOptions(lanes=lanes, stripe_rows=int(rng.integers(1, h + 1)), group_cols=groups,
                              unit=UnitChoice(layout=layout, slack_words=lanes % 3))
        _roundtrip(img, opts)


def test_roundtrip_bilevel_palette_rgb_and_16_bit():
    rng = np.random.default_rng(5)
    mask = _strokes(rng, 9, 23).astype(bool)
    rgb = np.where(mask[:, :, None], np.array([200, 30, 7], np.uint8), np.array([1, 2, 3], np.uint8))
    _roundtrip(rgb, EntropyOptions(lanes=3, stripe_rows=4, unit=UnitChoice(layout=0x82)))
    g16 = np.where(mask, np.uint16(65535), np.uint16(4096))
    _roundtrip(g16, EntropyOptions(lanes=5, unit=UnitChoice(layout=0x82)))
    one = np.full((4, 5), 77, np.uint8)  # a single entry, with aliased indices (n = 1: index 1 -> entry 0)
    _roundtrip(one, EntropyOptions(lanes=2, unit=UnitChoice(layout=0x82, palette_alias=True)))


def test_roundtrip_bilevel_options():
    rng = np.random.default_rng(9)
    img = _strokes(rng, 17, 31)
    for inv in (0, 1):
        lev = LevelOptions(inv=inv, unused=False, seed=3)
        _roundtrip(img, EntropyOptions(lanes=4, stripe_rows=6, unit=UnitChoice(layout=0x81), levels=lev))
    # Shift map: coded 0/1 of a 0/128 image; a Const alpha beside it
    ga = np.stack([img * 128, np.full_like(img, 255)], axis=2).astype(np.uint8)
    _roundtrip(ga, EntropyOptions(maps=[MapChoice(1, 1), None], unit=UnitChoice(layout=0x81)), layout=2)


def test_forced_layouts_are_checked():
    img = np.arange(12, dtype=np.uint8).reshape(3, 4)
    with pytest.raises(ValueError, match="0x81"):
        encode_entropy_payload(img, options=EntropyOptions(unit=UnitChoice(layout=0x81)))
    with pytest.raises(ValueError, match="0x82"):
        encode_entropy_payload(img, options=EntropyOptions(unit=UnitChoice(layout=0x82)))
    with pytest.raises(ValueError, match="0x85"):
        encode_entropy_payload(img, options=EntropyOptions(unit=UnitChoice(layout=0x85)))


# --- the chooser -----------------------------------------------------------------------------


def _layouts(payload: bytes, hdr) -> list[int]:
    from imij_plugins.payload.data import read_data

    data = read_data(payload, hdr, 0, len(payload))
    return [payload[u.body_start] for u in data.units]


def test_chooser_takes_bilevel_for_a_page_and_declares_it():
    rng = np.random.default_rng(1)
    img = _strokes(rng, 64, 96)
    enc = encode_entropy_payload(img, options=EntropyOptions(stripe_rows=16))
    hdr = header_for(img, enc)
    assert np.array_equal(decode_entropy_payload(enc.payload, hdr)[:, :, 0], img)
    used = set(_layouts(enc.payload, hdr))
    assert used <= {0x81, 0x83, 0x84} and used
    assert enc.features_used == ({F.BILEVEL} if 0x81 in used else set()) | ({F.TEMPLATE_PALETTES} if used & {0x83, 0x84} else set())
    off = encode_entropy_payload(img, options=EntropyOptions(stripe_rows=16, levels=LevelOptions(choose=False)))
    assert len(enc.payload) < len(off.payload) and not off.features_used


def test_chooser_skips_records_that_do_not_pay():
    rng = np.random.default_rng(2)
    noise = (rng.random((6, 7)) < 0.5).astype(np.uint8)  # 42 pixels: record 25 alone is 129+ bytes
    enc = encode_entropy_payload(noise)
    assert not enc.features_used


def test_chooser_leaves_forced_syntax_alone():
    rng = np.random.default_rng(3)
    img = _strokes(rng, 32, 40)
    enc = encode_entropy_payload(img, options=EntropyOptions(unit=UnitChoice(predictors=1)))
    assert not enc.features_used


def test_encode_api_boolean_arrays_and_two_colour_images():
    rng = np.random.default_rng(4)
    page = _strokes(rng, 200, 300).astype(bool)  # big enough that a level stripe pays (5)
    data = imij_plugins.encode(page)  # the default codec: boolean pages get level stripes
    f = imij_plugins.open(data)
    assert F.BILEVEL in f.header.features or F.TEMPLATE_PALETTES in f.header.features
    assert np.array_equal(np.asarray(imij_plugins.read(data))[:, :, 0], page.astype(np.uint8))
    two = np.where(page[:, :, None], np.array([0, 0, 0], np.uint8), np.array([255, 255, 240], np.uint8))
    data = imij_plugins.encode(two, codec="entropy")
    assert np.array_equal(np.asarray(imij_plugins.read(data)), two)


def test_encoder_kernel_and_reference_write_the_same_bytes(backend):
    """The writer's reverse rANS runs in C on the C backend: both backends write equal payloads."""
    if backend != "c":
        pytest.skip("compares both backends itself")
    rng = np.random.default_rng(21)
    page = _strokes(rng, 20, 45)
    few = np.array([[9, 9, 9], [0, 50, 200], [255, 0, 0], [1, 2, 3]], np.uint8)[rng.integers(0, 4, (14, 33))]
    cases = [(page, EntropyOptions(lanes=6, stripe_rows=7, unit=UnitChoice(layout=0x81))),
             (page, EntropyOptions(lanes=16, stripe_rows=20)),
             (few, EntropyOptions(lanes=3, stripe_rows=5, unit=UnitChoice(layout=0x83, palette_alias=True))),
             (few, EntropyOptions(lanes=7, unit=UnitChoice(layout=0x84)))]
    for image, options in cases:
        out = []
        for name in ("c", "python"):
            with _backend.use(name):
                out.append(encode_entropy_payload(image, options=options).payload)
        assert out[0] == out[1]


@given(st.lists(st.one_of(st.none(), st.integers(0, 1 << 9)), min_size=1, max_size=80), st.integers(0, 7))
def test_used_values_equal_one_field_at_a_time(values, lead):
    """2.10 / 2.14: a used bit per context, then its value when used, LSB first."""
    one, packed = BitWriter(), BitWriter()
    for w in (one, packed):
        w.write(5, lead + 3)
    for v in values:
        one.write(int(v is not None), 1)
        if v is not None:
            one.write(v, 10)
    write_used_values(packed, values, 10, (1 << 10) - 1)
    assert packed.getvalue() == one.getvalue()
    with pytest.raises(ValueError):
        write_used_values(BitWriter(), values + [1 << 10], 10, (1 << 10) - 1)


def test_fit_probabilities_rows_equal_each_precision():
    """Every precision fitted at once (a column of them) gives each precision's own fit."""
    rng = np.random.default_rng(3)
    zeros, ones = rng.integers(0, 50, 300) * (rng.random(300) < 0.7), rng.integers(0, 9, 300)
    rows = fit_probabilities(zeros, ones, np.arange(4, 12)[:, None])
    for i, bits in enumerate(range(4, 12)):
        for got, want in zip(rows, fit_probabilities(zeros, ones, bits)):
            assert np.array_equal(got[i], want)
