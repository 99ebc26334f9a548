"""Template palette stripes (2.14): record 35, layouts 0x83 / 0x84, typical rows, phase 0, the
candidate phases and the escape phase by hand, every Corrupt rule, round trips, the chooser.

Every test runs on the C kernel and on the Python reference (conftest); ``oracle_template`` is
a literal transcription of 2.14's phases list, independent of the package's decoders.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.level_writer import LevelOptions
from imij_plugins.payload.entropy.models import table_code
from imij_plugins.payload.entropy.template import read_template_record, template_record
from imij_plugins.payload.head import ChannelMap
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire.records import Record

from .handmade import Bits, head, header
from .syntax_writer import EntropyOptions, UnitChoice, decode_entropy_payload, encode_entropy_payload, header_for
from .test_bilevel import STATE, M, OracleStream, _layouts, oracle_lanes, oracle_t, payload_bytes

TPL = {F.TEMPLATE_PALETTES}
CAND = (5, 6, 4, 8, 1)  # 2.14: N, NE, NW, WW, NN


def record35(prec: int, p: dict[int, int], q: dict[int, int], escape=None, shared=None, depths=(8,)) -> bytes:
    """Record 35 by hand: ``escape`` is (last, prec, [(e, mant), ...]) for Bits.table."""
    b = 4 + prec
    bits = Bits().put(prec, 3)
    for c in range(1024):
        bits.put(1, 1).put(p[c], b) if c in p else bits.put(0, 1)
    for c in range(40):
        bits.put(1, 1).put(q[c], b) if c in q else bits.put(0, 1)
    if escape is None:
        bits.put(0, 1)
    else:
        bits.put(1, 1).table(*escape)
    if shared is None:
        bits.put(0, 1)
    else:
        bits.put(1, 1).put(len(shared) - 1, 8)
        for entry in shared:
            for v, d in zip(entry, depths):
                bits.put(v, d)
    return bits.tobytes()


def only(symbol: int) -> tuple[int, int, list[tuple[int, int]]]:
    """A direct-index table with all of M on ``symbol``: it decodes without changing the state."""
    return (symbol, 1, [(0, 0)] * symbol + [(1, 0)])


def gray8(width: int, height: int, rec: bytes | None, *, lanes: int = 1, features=TPL, stripe_rows=None, bits: int = 8):
    hdr = header("u8", 1, width, height, features)
    records = [Record(35, rec)] if rec is not None else []
    lh = head(hdr, [ChannelMap(0, bits, 0)], Bits().simple_model(bits).tobytes(), lanes=lanes, stripe_rows=stripe_rows, records=records)
    return hdr, lh


def all_contexts(value: int) -> dict[int, int]:
    return {c: value for c in range(1024)}


# --- an independent oracle -------------------------------------------------------------------


def oracle_template(P, Q, esc, n: int, typical, stream: bytes, gw: int, rows: int, L: int) -> list[list[int]]:
    lanes = oracle_lanes(gw, L)
    lw = lanes[0][1] - lanes[0][0]
    s = OracleStream(stream, len(lanes))
    plane = [[0] * gw for _ in range(rows)]
    for r in range(rows):
        if typical[r]:
            plane[r] = list(plane[r - 1]) if r else [0] * gw
            continue
        for x in range(lw):
            opened = {}
            for l, (a, b) in enumerate(lanes):
                if a + x >= b:
                    continue
                t = [oracle_t(plane, r, a + x, k, a, gw) for k in range(10)]
                W = t[9]
                ctx = (512 if W == 0 else 0) + sum(1 << k for k in range(9) if t[k] == W)
                if s.binary(l, P[ctx]) == 0:
                    plane[r][a + x] = W
                elif n <= 2:
                    plane[r][a + x] = 1 - W
                else:
                    opened[l] = t
            for j in range(5):
                for l in sorted(opened):
                    t = opened[l]
                    c = t[CAND[j]]
                    if c == t[9] or c in [t[CAND[i]] for i in range(j)]:
                        continue
                    if s.binary(l, Q[8 * j + min(t.count(c), 7)]) == 0:
                        plane[r][lanes[l][0] + x] = c
                        del opened[l]
            for l in sorted(opened):
                value = 0
                if esc is not None:
                    slot = s.x[l] % M
                    value = next(sym for sym in range(len(esc.freq)) if esc.cum[sym] <= slot < esc.cum[sym] + esc.freq[sym])
                    s.x[l] = esc.freq[value] * (s.x[l] >> 10) + slot - esc.cum[value]
                    s.renorm(l)
                plane[r][lanes[l][0] + x] = value
    return plane


# --- record 35 -------------------------------------------------------------------------------


def test_record35_bits_by_hand():
    rec = record35(7, {0: 1024, 9: 3}, {39: 1000}, escape=only(2), shared=[(5,), (250,)])
    t = read_template_record(rec, [8])
    assert (t.prec, t.bits) == (7, 11)
    assert t.p[0] == 1024 and t.p[9] == 3 and t.p[1] == M // 2 and t.q[39] == 1000 and t.q[0] == M // 2
    assert t.escape is not None and t.escape.freq[2] == M and t.shared.tolist() == [[5], [250]]
    # b < 11: v * 2^(10 - b)
    t = read_template_record(record35(0, {5: 15}, {0: 1}), [8])
    assert t.p[5] == 15 * 64 and t.q[0] == 64 and t.escape is None and t.shared is None
    # the writer's bytes are the same
    code = table_code([0, 0, 1], 1)
    assert template_record(7, [1024] + [None] * 8 + [3] + [None] * 1014, [None] * 39 + [1000], code, [(5,), (250,)], [8]) == rec


def test_record35_corrupt_rules():
    with pytest.raises(Corrupt, match="above M"):  # b = 11: corrupt above M
        read_template_record(record35(7, {3: 1025}, {}), [8])
    with pytest.raises(Corrupt, match="above M"):
        read_template_record(record35(7, {}, {7: 2047}), [8])
    rec = record35(2, {}, {})
    with pytest.raises(Corrupt, match="exactly"):
        read_template_record(rec + b"\x00", [8])
    with pytest.raises(Corrupt, match="runs past"):
        read_template_record(rec[:-1], [8])
    with pytest.raises(Corrupt, match="16"):  # shared entries need slots at most 16 bits deep
        read_template_record(record35(0, {}, {}, shared=[(1,)], depths=(17,)), [17])
    read_template_record(record35(0, {}, {}), [17])  # without shared entries a deep slot is fine
    # the direct-index table follows 3.3's rules
    with pytest.raises(Corrupt, match="no nonzero weight"):
        read_template_record(record35(0, {}, {}, escape=(1, 1, [(0, 0), (0, 0)])), [8])
    with pytest.raises(Corrupt, match="exponent"):
        read_template_record(record35(0, {}, {}, escape=(0, 1, [(33, 0)])), [8])
    bits = Bits().put(0, 3)
    for _ in range(1064):
        bits.put(0, 1)
    bits.put(1, 1).put(0, 8).put(0, 3).put(0, 25).put(1, 1)  # a gamma code with 25 leading zeros
    with pytest.raises(Corrupt, match="24 leading zero"):
        read_template_record(bits.tobytes() + bytes(8), [8])


def test_record35_gated_and_not_in_quick_payloads():
    from imij_plugins.payload.head import read_lossless_head
    from imij_plugins.wire.cursor import Cursor
    from imij_plugins.wire.varint import encode_varint

    rec = record35(0, {}, {})
    hdr, lh = gray8(2, 1, rec, features=())
    with pytest.raises(Corrupt, match="record 35 without feature template_palettes"):
        decode_entropy_payload(payload_bytes(lh, [b"\x83\x00\x00\x00" + STATE]), hdr)
    hdr = header("u8", 1, 2, 1, TPL | {F.QUICK_PIXELS})
    recs = encode_varint(35) + encode_varint(len(rec)) + rec
    raw = encode_varint(8 | 2) + b"\x01" + b"\x01\x00" + encode_varint(len(recs)) + recs
    with pytest.raises(Corrupt, match="quick-pixel"):
        read_lossless_head(Cursor(raw), hdr)


# --- phases by hand --------------------------------------------------------------------------


def test_two_entries_flip_and_typical_rows():
    """n = 2: p = 0 where W == 0 (m = 1: i = 1 - W = 1), p = M elsewhere (i = W). A row decodes
    1 1 1 1; a typical row 0 is index 0; a typical row 1 copies row 0. No state changes."""
    rec = record35(7, {c: (0 if c & 512 else M) for c in range(1024)}, {})
    hdr, lh = gray8(4, 2, rec)
    p = prepare(hdr, lh)
    entries = b"\x01\x0a\x14"  # n - 1 = 1: entries 10, 20
    for bits, expect in ((0b00, [[1] * 4] * 2), (0b01, [[0] * 4, [1] * 4]), (0b10, [[1] * 4] * 2), (0b11, [[0] * 4] * 2)):
        out = p.decode_unit(b"\x83" + entries + bytes([bits]) + STATE, 4, 2)
        assert out[:, :, 0].tolist() == [[[10, 20][i] for i in row] for row in expect]


def test_candidates_and_escape_by_hand():
    """n = 5, one lane, 3 x 2. p = 0 everywhere (every pixel differs from W: open); q = M (take
    the candidate) only in contexts 3 and 30; the escape table decodes 4. Row 0: every candidate
    equals W = 0 or an earlier one, so every pixel escapes: 4 4 4. Row 1: (1,0) W 0, N = 4 with
    3 template pixels equal to it: q[3] takes N -> 4. (1,1) W = 4: N, NE, NW equal W; WW = 0
    with 6 equal template pixels: q[8 * 3 + 6] = q[30] takes it -> 0. (1,2) W = 0: N = 4 with
    4 equal: q[4] rejects; NE = W, NW = N, WW = N, NN = W: skipped; escape -> 4."""
    rec = record35(7, all_contexts(0), {c: (M if c in (3, 30) else 0) for c in range(40)}, escape=only(4))
    hdr, lh = gray8(3, 2, rec)
    p = prepare(hdr, lh)
    out = p.decode_unit(b"\x83\x04" + bytes([1, 11, 21, 31, 41]) + b"\x00" + STATE, 3, 2)
    assert out[:, :, 0].tolist() == [[41, 41, 41], [41, 1, 41]]
    # n = 3: index 4 selects entry 0 (2.14)
    out = p.decode_unit(b"\x83\x02" + bytes([1, 11, 21]) + b"\x00" + STATE, 3, 2)
    assert out[:, :, 0].tolist() == [[1, 1, 1], [1, 1, 1]]
    # without the direct-index table an escape decodes 0 and keeps the state
    rec = record35(7, all_contexts(0), {c: (M if c in (3, 30) else 0) for c in range(40)})
    hdr, lh = gray8(3, 2, rec)
    out = prepare(hdr, lh).decode_unit(b"\x83\x04" + bytes([1, 11, 21, 31, 41]) + b"\x00" + STATE, 3, 2)
    assert out[:, :, 0].tolist() == [[1, 1, 1], [1, 1, 1]]


def test_shared_entries_layout_0x84():
    rec = record35(7, all_contexts(0), {c: 0 for c in range(40)}, escape=only(1), shared=[(7,), (8,), (9,)])
    hdr, lh = gray8(2, 1, rec)
    out = prepare(hdr, lh).decode_unit(b"\x84\x00" + STATE, 2, 1)
    assert out[0, :, 0].tolist() == [8, 8]


def test_escape_token_arithmetic_by_hand():
    """1 x 1, n = 3. p = 0 (open), no candidate differs from W, escape table weights 1, 0, 1 ->
    freq 512 / 0 / 512: state 0x10300, slot 768 -> symbol 2, x = 512 * 64 + 768 - 512 = 0x8100
    -> word 0x0000; index 2."""
    rec = record35(7, all_contexts(0), {}, escape=(2, 1, [(1, 0), (0, 0), (1, 0)]))
    hdr, lh = gray8(1, 1, rec)
    p = prepare(hdr, lh)
    body = b"\x83\x02" + bytes([5, 6, 7]) + b"\x00" + (0x10300).to_bytes(4, "little")
    assert p.decode_unit(body + b"\x00\x00", 1, 1)[0, 0, 0] == 7
    with pytest.raises(Corrupt, match="too few words"):
        p.decode_unit(body, 1, 1)


@pytest.mark.parametrize("seed", range(8))
def test_random_records_and_streams_against_the_oracle(seed):
    rng = random.Random(seed)
    w, h, L = rng.randint(1, 11), rng.randint(1, 6), rng.randint(1, 5)
    prec = rng.randint(0, 7)
    vmax = M if prec == 7 else (1 << (4 + prec)) - 1
    p = {c: rng.choice([0, vmax, rng.randint(0, vmax)]) for c in range(1024) if rng.random() < 0.8}
    q = {c: rng.choice([0, vmax, rng.randint(0, vmax)]) for c in range(40) if rng.random() < 0.8}
    escape = None
    if rng.random() < 0.7:
        last = rng.randint(0, 255)
        exps = [rng.choice([0, 0, 1, 2, 3, 5]) for _ in range(last + 1)]
        exps[rng.randrange(last + 1)] = 3
        escape = (last, 1, [(e, 0) for e in exps])
    n = rng.choice([1, 2, 3, 5, 200, 256])
    rec = record35(prec, p, q, escape)
    tables = read_template_record(rec, [8])
    typical = [rng.random() < 0.2 for _ in range(h)]
    active = len(oracle_lanes(w, L))
    stream = b"".join(rng.randint(1 << 16, (1 << 32) - 1).to_bytes(4, "little") for _ in range(active))
    stream += bytes(rng.randrange(256) for _ in range(2 * (7 * w * h + 4)))
    expect = oracle_template(tables.p.tolist(), tables.q.tolist(), tables.escape, n, typical, stream, w, h, L)
    hdr, lh = gray8(w, h, rec, lanes=L)
    rows = bytearray((h + 7) // 8)
    for r, flag in enumerate(typical):
        rows[r >> 3] |= flag << (r & 7)
    body = b"\x83" + bytes([n - 1]) + bytes(range(n)) + bytes(rows) + stream
    out = prepare(hdr, lh).decode_unit(body, w, h)
    assert out[:, :, 0].tolist() == [[i if i < n else 0 for i in row] for row in expect]


# --- every Corrupt rule of 2.14 --------------------------------------------------------------


DET = record35(7, all_contexts(M), {}, shared=[(3,)])  # every pixel equals W: index 0, no state change


def test_layouts_without_feature_or_record():
    hdr, lh = gray8(2, 1, DET, features=())
    p = prepare(hdr, lh)
    for decor in (0x83, 0x84):
        with pytest.raises(Corrupt, match="without feature template_palettes"):
            p.decode_unit(bytes([decor, 0, 0, 0]) + STATE, 2, 1)
    hdr, lh = gray8(2, 1, None)
    p = prepare(hdr, lh)
    for decor in (0x83, 0x84):
        with pytest.raises(Corrupt, match="without head record 35"):
            p.decode_unit(bytes([decor, 0, 0, 0]) + STATE, 2, 1)


def test_shared_layout_needs_shared_entries():
    hdr, lh = gray8(2, 1, record35(7, all_contexts(M), {}))
    with pytest.raises(Corrupt, match="no shared entries"):
        prepare(hdr, lh).decode_unit(b"\x84\x00" + STATE, 2, 1)
    hdr, lh = gray8(2, 1, DET)
    assert prepare(hdr, lh).decode_unit(b"\x84\x00" + STATE, 2, 1)[0, :, 0].tolist() == [3, 3]


def test_typical_row_bits_past_the_last_row():
    hdr, lh = gray8(2, 3, DET)
    p = prepare(hdr, lh)
    p.decode_unit(b"\x84\x07" + STATE, 2, 3)
    with pytest.raises(Corrupt, match="past the last row"):  # our reading of "bits past the last row are 0"
        p.decode_unit(b"\x84\x08" + STATE, 2, 3)
    hdr, lh = gray8(2, 8, DET)
    prepare(hdr, lh).decode_unit(b"\x84\xff" + STATE, 2, 8)  # 8 rows: no bit past the last


def test_entries_and_truncation():
    hdr, lh = gray8(2, 1, record35(7, all_contexts(M), {}, shared=[(3,)], depths=(3,)), bits=3)
    p = prepare(hdr, lh)
    with pytest.raises(Corrupt, match="not below"):
        p.decode_unit(b"\x83\x00\x08\x00" + STATE, 2, 1)
    for cut in (b"\x83", b"\x83\x01\x02", b"\x83\x00\x02", b"\x83\x00\x02\x00\x00\x00"):
        with pytest.raises(Corrupt, match="runs past|ends inside|shorter than"):
            p.decode_unit(cut, 2, 1)
    hdr = header("u32", 1, 2, 1, TPL)
    lh = head(hdr, [ChannelMap(0, 17, 0)], Bits().simple_model(17).tobytes(), records=[Record(35, record35(0, {}, {}))])
    with pytest.raises(Corrupt, match="bits deep|deeper than 16"):
        prepare(hdr, lh).decode_unit(b"\x83\x00\x00\x00\x00" + STATE, 2, 1)


@pytest.mark.parametrize("stream, message", [
    (b"\x00\x00\x01", "shorter than|ends inside"),
    (b"\xff\xff\x00\x00", "below 2\\^16"),
    (STATE + b"\x00", "whole 16-bit word|odd byte count"),
])
def test_stream_rules(stream, message):
    hdr, lh = gray8(2, 1, DET)
    with pytest.raises(Corrupt, match=message):
        prepare(hdr, lh).decode_unit(b"\x84\x00" + stream, 2, 1)


# --- round trips -----------------------------------------------------------------------------


def _few_colours(rng: np.random.Generator, h: int, w: int, k: int, C: int, dtype=np.uint8) -> np.ndarray:
    """Blocks, lines and noise in k colours."""
    idx = np.repeat(np.repeat(rng.integers(0, k, (h // 3 + 1, w // 2 + 1)), 3, 0), 2, 1)[:h, :w]
    noise = rng.random((h, w)) < 0.15
    idx = np.where(noise, rng.integers(0, k, (h, w)), idx)
    idx[rng.integers(0, h)] = rng.integers(0, k)  # a flat row
    top = np.iinfo(dtype).max
    pal = rng.integers(0, top, (k, C), dtype=np.int64, endpoint=True).astype(dtype)
    img = pal[idx]
    return img[:, :, 0] if C == 1 else img


def _roundtrip(image, options, layout=None):
    enc = encode_entropy_payload(image, options=options)
    hdr = header_for(image, enc, layout)
    out = decode_entropy_payload(enc.payload, hdr)
    assert np.array_equal(out.reshape(image.shape), image)
    return enc, hdr


@pytest.mark.parametrize("lanes", range(1, 17))
def test_roundtrip_template_every_lane_count(lanes):
    rng = np.random.default_rng(100 + lanes)
    h, w = int(rng.integers(2, 11)), int(rng.integers(1, 37))
    k = [1, 2, 3, 5, 16, 60][lanes % 6]
    img = _few_colours(rng, h, w, k, 3 if lanes % 2 else 1)
    groups = 0 if w < 4 or lanes % 3 else int(rng.integers(1, w))
    for layout in (0x83, 0x84):
        opts = EntropyOptions(lanes=lanes, stripe_rows=int(rng.integers(1, h + 1)), group_cols=groups,
                              unit=UnitChoice(layout=layout, typical=lanes % 4 != 0, slack_words=lanes % 2))
        _roundtrip(img, opts)


def test_roundtrip_template_options():
    rng = np.random.default_rng(7)
    img = _few_colours(rng, 12, 19, 7, 3)
    for prec in range(8):
        _roundtrip(img, EntropyOptions(lanes=3, stripe_rows=5, unit=UnitChoice(layout=0x84), levels=LevelOptions(prec=prec)))
    lev = LevelOptions(escape=True, escape_prec=3, unused=False, seed=11)
    _roundtrip(img, EntropyOptions(lanes=2, unit=UnitChoice(layout=0x83, palette_seed=5, palette_alias=True), levels=lev))
    # 256 tuples: every index, escapes, own entries
    many = rng.permutation(np.arange(256 * 3, dtype=np.int64) % 256).reshape(24, 32).astype(np.uint8)
    _roundtrip(many, EntropyOptions(lanes=4, stripe_rows=24, unit=UnitChoice(layout=0x83)))
    # 16-bit RGBA, shared entries forced
    rgba = _few_colours(rng, 9, 13, 4, 4, np.uint16)
    _roundtrip(rgba, EntropyOptions(lanes=5, unit=UnitChoice(layout=0x84), levels=LevelOptions(shared=True)))
    # records forced without units, and both records in one payload
    enc, _ = _roundtrip(img, EntropyOptions(levels=LevelOptions(choose=False, record25=True, record35=True)))
    assert enc.features_used == {F.BILEVEL, F.TEMPLATE_PALETTES}
    two = np.where(rng.random((8, 9)) < 0.3, 200, 3).astype(np.uint8)
    units = [UnitChoice(layout=layout) for layout in (0x82, 0x83, 0x84, None)]
    enc, hdr = _roundtrip(two, EntropyOptions(stripe_rows=2, units=units, levels=LevelOptions(choose=False)))
    assert _layouts(enc.payload, hdr)[:3] == [0x82, 0x83, 0x84]


def test_forced_template_syntax_is_checked():
    rng = np.random.default_rng(8)
    img = rng.integers(0, 65535, (20, 20), dtype=np.uint16)  # 400 tuples
    with pytest.raises(ValueError, match="at most 256"):
        encode_entropy_payload(img, options=EntropyOptions(unit=UnitChoice(layout=0x83)))
    with pytest.raises(ValueError, match="0x84|shared"):
        encode_entropy_payload(img, options=EntropyOptions(stripe_rows=2, group_cols=4, unit=UnitChoice(layout=0x84)))
    with pytest.raises(ValueError, match="record35"):
        encode_entropy_payload(img[:2, :2], options=EntropyOptions(unit=UnitChoice(layout=0x83), levels=LevelOptions(record35=False)))
    with pytest.raises(ValueError, match="16 bits"):
        encode_entropy_payload(img.astype(np.uint32) << 8, options=EntropyOptions(unit=UnitChoice(layout=0x83)))


# --- the chooser -----------------------------------------------------------------------------


def test_chooser_takes_template_stripes_for_a_screenshot():
    rng = np.random.default_rng(12)
    idx = np.zeros((96, 128), dtype=np.int64)
    for _ in range(40):  # flat boxes and "text" rows
        y, x = rng.integers(0, 90), rng.integers(0, 120)
        idx[y : y + rng.integers(2, 20), x : x + rng.integers(2, 60)] = rng.integers(0, 12)
    idx[::7, ::3] = 12
    pal = rng.integers(0, 256, (13, 3)).astype(np.uint8)
    img = pal[idx]
    enc, hdr = _roundtrip(img, EntropyOptions(stripe_rows=32))
    assert F.TEMPLATE_PALETTES in enc.features_used and F.BILEVEL not in enc.features_used
    assert set(_layouts(enc.payload, hdr)) & {0x83, 0x84}
    off = encode_entropy_payload(img, options=EntropyOptions(stripe_rows=32, levels=LevelOptions(choose=False)))
    assert len(enc.payload) < len(off.payload)


def test_chooser_with_more_than_256_tuples_shares_few_tuples():
    """Over 256 tuples in the image: the stripes of few tuples may share record 35's entries (2.14),
    the noisy ones stay predictive."""
    rng = np.random.default_rng(13)
    img = np.zeros((64, 64), dtype=np.uint16)
    img[:32] = rng.integers(0, 3, (32, 64)) * 1000  # few values on top
    img[32:] = rng.integers(0, 65535, (32, 64))  # noise below: > 256 tuples
    img[:32, 10:50] = 7
    enc, hdr = _roundtrip(img, EntropyOptions(stripe_rows=16, lanes=4))
    layouts = _layouts(enc.payload, hdr)
    assert layouts[:2] == [0x84, 0x84] and all(layout < 0x80 for layout in layouts[2:])


def test_encode_api_screenshot_roundtrip_both_codecs():
    rng = np.random.default_rng(14)
    img = _few_colours(rng, 40, 50, 6, 3)
    data = imij_plugins.encode(img, codec="entropy")
    assert np.array_equal(np.asarray(imij_plugins.read(data)), img)


def _level_planes(seed: int):
    """A random index plane (with repeated rows) of n entries, its typical rows and lanes."""
    from imij_plugins.payload.entropy.rans import Lanes
    from imij_plugins.payload.entropy.template import typical_rows

    rng = np.random.default_rng(seed)
    h, w, n = int(rng.integers(1, 40)), int(rng.integers(1, 90)), int(rng.choice([1, 2, 3, 7, 256]))
    index = rng.integers(0, n, (h, w)).astype(np.uint8)
    if rng.random() < 0.5:  # few changes: long runs of W, as in real stripes
        index = np.where(rng.random((h, w)) < 0.9, 0, index).astype(np.uint8)
    index[h // 2 :] = index[h // 2 : h // 2 + 1]  # repeated rows: typical rows
    typical = typical_rows(index) if seed % 2 else np.zeros(h, bool)
    return rng, index, n, typical, Lanes.of(w, int(rng.integers(1, 17)))


@pytest.mark.parametrize("seed", range(40))
def test_template_kernels_equal_the_reference(seed):
    """The encoder's side of 2.14 (outcome counts and the stream, operations rebuilt step by
    step from the plane, last step first): C kernel and Python reference agree byte for byte."""
    from imij_plugins import _backend
    from imij_plugins.payload.entropy.models import Table
    from imij_plugins.payload.entropy.template import template_counts, template_stream

    if "c" not in _backend.available():
        pytest.skip("the C backend is not built")
    rng, index, n, typical, lanes = _level_planes(seed)
    p = rng.integers(0, 1025, 1024) if seed % 3 == 0 else np.full(1024, 300)  # 0 and M: outcomes without probability
    q = rng.integers(1, 1024, 40)
    escape = Table.from_weights(rng.integers(0, 4, 255).tolist() + [1]) if seed % 4 else None
    results = {}
    for name in ("c", "python"):
        with _backend.use(name):
            results[name] = template_counts(index, n, typical, lanes), template_stream(index, n, typical, lanes, p, q, escape)
    (c_counts, c_stream), (py_counts, py_stream) = results["c"], results["python"]
    for got, want in zip(c_counts, py_counts):
        assert np.array_equal(got, want)
    assert c_stream == py_stream


def test_bilevel_kernels_equal_the_reference():
    """The encoder's side of 2.10: context counts and streams, C kernel and reference."""
    from imij_plugins import _backend
    from imij_plugins.payload.entropy.bilevel import bilevel_counts, bilevel_stream

    if "c" not in _backend.available():
        pytest.skip("the C backend is not built")
    streams = 0
    for seed in range(30):
        _, index, _, _, lanes = _level_planes(seed)
        t = (index & 1).astype(np.uint8)
        probs = np.random.default_rng(seed).integers(0 if seed % 5 == 0 else 1, 1024, 1024)
        got = {}
        for name in ("c", "python"):
            with _backend.use(name):
                got[name] = bilevel_counts(t, lanes), bilevel_stream(t, lanes, probs)
        for a, b in zip(got["c"][0], got["python"][0]):
            assert np.array_equal(a, b)
        assert got["c"][1] == got["python"][1]
        streams += got["c"][1] is not None
    assert 0 < streams < 30  # both a stream and "no probability" were exercised


@pytest.mark.parametrize("backend", ["c", "python"])
def test_level_streams_stop_at_their_limit(backend):
    """A chooser's candidate stream that would pass ``limit`` bytes is None on both backends;
    at or above its length the limit changes nothing."""
    from imij_plugins import _backend
    from imij_plugins.payload.entropy.bilevel import bilevel_stream
    from imij_plugins.payload.entropy.models import Table
    from imij_plugins.payload.entropy.template import template_stream

    if backend not in _backend.available():
        pytest.skip("the C backend is not built")
    _, index, n, typical, lanes = _level_planes(3)
    p, q, escape = np.full(1024, 300), np.full(40, 500), Table.from_weights([1] * 256)
    t = (index & 1).astype(np.uint8)
    with _backend.use(backend):
        for code in (lambda limit: template_stream(index, n, typical, lanes, p, q, escape, limit),
                     lambda limit: bilevel_stream(t, lanes, p, limit)):
            whole = code(None)
            assert whole is not None and len(whole) > 8
            assert code(len(whole)) == whole
            assert code(len(whole) + 100) == whole
            assert code(len(whole) - 1) is None
            assert code(0) is None
