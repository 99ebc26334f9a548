"""Byte-exact payloads built by hand from 2, 2.1, 2.4, 3.1, 3.2 and 3.3, with the pixels they must give."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.models import Table, normalize
from imij_plugins.payload.entropy.tokens import Scheme, split_token
from imij_plugins.payload.head import ChannelMap

from .handmade import Bits, head, header
from .syntax_writer import decode_entropy_payload


def test_models_bits_of_the_1x1_example():
    """k 0, m 0, cross 0, ctx_map all 0, one table: last 4, prec 1, exponents 0,0,0,0,1."""
    bits = Bits().model(0, 0).table(4, 1, [(0, 0)] * 4 + [(1, 0)]).tobytes()
    # 41 zero bits; last = 4 at bits 41..48 (bit 43); prec - 1 = 0; gamma(1) x 4 = bits 52..55;
    # e = 1: zigzag(1) + 1 = 3 = gamma "0 1 1" at bits 56..58
    assert bits == bytes.fromhex("0000000000 08 f0 06".replace(" ", ""))


def test_1x1_gray_u8_decodes_by_hand():
    # head (2): present 0, lanes 1, stripe_rows 1, group_cols 0, map Lsb 8 bits value 0 (u16),
    # models_len 8 and the models above
    payload = bytes.fromhex("00 01 01 00" "00 08 0000" "08" "0000000000 08 f0 06".replace(" ", ""))
    # unit record (2.7): id 9, len 7; stripe (2.4): decor 0, predictors (1 byte: row 0 = W),
    # stream len 4, stream: the initial state 0x00080002 and no words (3).
    # 3.1: slot = 2 -> symbol 4 (freq M, the state keeps 0x80002); token 4 of (k 0, m 0):
    # q = 3, msb = 3, nb = 3, base 8; extra bits: e = x mod 8 = 2, x >>= 3 -> 0x10000 >= 2^16
    # so no word; u = 10, d = unzigzag(10) = 5, row 0 at x = 0: W = 0, v = 5.
    payload += bytes.fromhex("09 07" "00" "00" "04" "02000800".replace(" ", ""))
    out = decode_entropy_payload(payload, header("u8", 1, 1, 1))
    assert out.dtype == np.uint8 and out.shape == (1, 1, 1)
    assert out[0, 0, 0] == 5


def _two_lane_payload(w0: int, w1: int) -> bytes:
    # table: symbols 0 and 2 with weight 1 each (e = 1, 0, 1) -> freq 512 / 0 / 512, cum 0 / 512 / 512
    models = Bits().model(0, 0).table(2, 1, [(1, 0), (0, 0), (1, 0)]).tobytes()
    assert models == bytes.fromhex("0000000000046019")
    head_bytes = bytes.fromhex("00 02 01 00" "00 08 0000".replace(" ", "")) + bytes([len(models)]) + models
    # lane 0 state 0x00010005: slot 5 -> symbol 0, x = 512 * 64 + 5 = 0x8005 < 2^16 -> word w0
    # lane 1 state 0x00010203: slot 515 -> symbol 2, x = 512 * 64 + 3 = 0x8003 -> word w1
    # extra phase: lane 0 nb = 0; lane 1 nb = 1: e = x mod 2 = w1 & 1
    stream = bytes.fromhex("05000100" "03020100") + w0.to_bytes(2, "little") + w1.to_bytes(2, "little")
    body = b"\x00" + b"\x00" + bytes([len(stream)]) + stream
    return head_bytes + bytes([9, len(body)]) + body


def test_2x1_two_lanes_word_order_step_phase_lane():
    """Two lanes of one column each: lane 0's token renormalization takes the first word, lane 1's
    the second (3.1: order (step, phase, lane)); lane 1's extra bit comes from its own word."""
    hdr = header("u8", 1, width=2, height=1)
    out = decode_entropy_payload(_two_lane_payload(0x1110, 0x0001), hdr)
    # lane 0: u 0 -> 0. lane 1: u = base 2 + e 1 = 3 -> d = -2 -> 254; row 0 at lane x = 0: W = 0
    assert out[0, :, 0].tolist() == [0, 254]
    # read per lane instead of in (step, phase, lane) order, lane 1 would take 0x1110: e = 0, u = 2
    # and d = 1; with both words even, that is the right answer
    out = decode_entropy_payload(_two_lane_payload(0x1111, 0x0000), hdr)
    assert out[0, :, 0].tolist() == [0, 1]


def test_unread_words_are_ignored():
    """2.7: a stream may end with words its decode never reads."""
    payload = bytearray(_two_lane_payload(0x1110, 0x0001))
    payload[-16] += 2  # the record length
    payload[-13] += 2  # the stream length
    payload += b"\xff\xff"
    assert decode_entropy_payload(bytes(payload), header("u8", 1, 2, 1))[0, :, 0].tolist() == [0, 254]


def test_zigzag_of_two_is_one():
    out = decode_entropy_payload(_two_lane_payload(0x1111, 0x0000), header("u8", 1, 2, 1))
    assert out[0, 1, 0] == 1  # u = 2 -> unzigzag 1


def test_1x2_context_selects_second_table():
    """Row 0 has class 0 (context 0: only symbol 1, u = 1); row 1 at x = 0 has sum = 2 un = 2,
    class 2, which ctx_map sends to context 1 (only symbol 0, u = 0)."""
    ctx_map = (0, 0) + (1,) * 14
    models = Bits().model(0, 0, ctx_map=ctx_map).table(1, 1, [(0, 0), (1, 0)]).table(0, 1, [(1, 0)]).tobytes()
    payload = bytes.fromhex("00 01 02 00" "00 08 0000".replace(" ", "")) + bytes([len(models)]) + models
    # predictors: row 0 = 0 (low nibble), row 1 = 1 (N): byte 0x10; one stream, state only
    body = b"\x00" + b"\x10" + b"\x04" + (1 << 16).to_bytes(4, "little")
    payload += bytes([9, len(body)]) + body
    out = decode_entropy_payload(payload, header("u8", 1, width=1, height=2))
    # row 0: u 1 -> d = -1 -> 255; row 1: N = 255, d = 0 -> 255
    assert out[:, 0, 0].tolist() == [255, 255]


def test_rgb_decorrelation_and_cross_by_hand():
    """RGB: slots G, R, B (2.2). All three decode one fixed residual; decor 1 adds G to R and B."""
    # slot model: one symbol: token 2 of (k 0, m 0): q 1, msb 1, nb 1, base 2; e from the state
    b = Bits()
    for slot in range(3):
        b.model(0, 0, cross=1 if slot else 0).table(2, 1, [(0, 0), (0, 0), (1, 0)])
    models = b.tobytes()
    hdr = header("u8", 3, 1, 1)
    lh = head(hdr, [ChannelMap(0, 8, 0)] * 3, models)
    payload = prepare(hdr, lh)
    # states: e = x mod 2 -> G: e 0 (u 2, d 1), R: e 1 (u 3, d -2), B: e 0 (u 2, d 1);
    # each state >> 1 stays >= 2^16 so no word is read
    streams = [(0x00020000).to_bytes(4, "little"), (0x00020001).to_bytes(4, "little"), (0x00020000).to_bytes(4, "little")]
    body = b"\x01" + b"\x00" + b"".join(bytes([4]) for _ in streams) + b"".join(streams)
    px = payload.decode_unit(body, 1, 1)
    # decor 1: R = -2 + 1 = -1 -> 255; B = 1 + 1 = 2; G = 1. Output channel order R, G, B.
    assert px[0, 0].tolist() == [255, 1, 2]
    body3 = b"\x03" + body[1:]
    # decor 3: R = 255 (sext -1), B = 1 + floor((-1 + 1) / 2) = 1
    assert payload.decode_unit(body3, 1, 1)[0, 0].tolist() == [255, 1, 1]
    body2 = b"\x02" + body[1:]
    # decor 2: B = 1 + R(new) = 1 + 255 = 0 mod 256
    assert payload.decode_unit(body2, 1, 1)[0, 0].tolist() == [255, 1, 0]


def test_normalization_by_hand():
    # W = 9: floor(w * 1024 / 9) = 568, 341, -, 113 (sum 1022); add 1 to the heaviest, then the next
    assert normalize([5, 3, 0, 1]) == [569, 342, 0, 113]
    # sum 1026: subtract cycling over symbols whose f > 1: only symbol 0, twice
    assert normalize([1000000, 1, 1, 1]) == [1021, 1, 1, 1]
    # 465 + 372 + 200 ones = 1037: 13 subtractions alternate 0, 1, 0, 1, ... (7 and 6)
    assert normalize([500, 400] + [1] * 200) == [458, 366] + [1] * 200
    # one symbol takes all of M
    t = Table.from_weights([0, 0, 7])
    assert t.freq == (0, 0, 1024) and t.lut == bytes([2]) * 1024
    # ties by weight order by index
    assert normalize([1, 1, 1]) == [342, 341, 341]


def test_tokens_by_hand():
    s = Scheme(8, 0, 0)  # 3.2: 1 + 8 value tokens, 1 + 24 run tokens
    assert (s.value_tokens, s.run_tokens, s.alphabet) == (9, 25, 34)
    assert s.token(0) == (False, 0, 0)
    assert s.token(1) == (False, 1, 0)
    assert s.token(4) == (False, 8, 3)
    assert s.token(8) == (False, 128, 7)
    assert s.token(9) == (True, 0, 0)  # run of 1
    assert s.token(24) == (True, 1 << 14, 14)  # runs of 2^14 + 1 ..= 2^15
    assert not s.run_token_past_cap(24) and s.run_token_past_cap(25)
    s = Scheme(16, 4, 2)  # 16 + 12 * 4 value tokens
    assert s.value_tokens == 64 and s.rk == 4 and s.run_tokens == 16 + 20 * 4
    assert split_token(16, 4, 2) == (16, 2) and split_token(17, 4, 2) == (20, 2)
    assert split_token(63, 4, 2) == (((4 | 3) << 13), 13)  # msb 15: the largest 16-bit residuals
    s = Scheme(32, 0, 0)
    assert s.token(32) == (False, 1 << 31, 31)  # nb 31: 16 extra bits, then 15 high extra bits
    s = Scheme(4, 4, 1)  # kv >= n: 2^n direct value tokens
    assert s.value_tokens == 16 and s.token(15) == (False, 15, 0) and s.rk == 4


def test_high_extra_bits_by_hand():
    """u32 Gray, Lsb 32: token 32 (nb 31): e low 16 bits from the extra phase, high 15 bits
    from the high extra phase, each with its own renormalization (3.1)."""
    b = Bits().model(0, 0, ctx_shift=0).table(32, 1, [(0, 0)] * 32 + [(1, 0)])
    models = b.tobytes()
    hdr = header("u32", 1, 1, 1)
    lh = head(hdr, [ChannelMap(0, 32, 0)], models)
    payload = prepare(hdr, lh)
    # state 0x0001ABCD: token phase keeps it (freq M); extra: e = 0xABCD, x = 1 -> word 0x7FFF:
    # x = 0x17FFF; high: e |= (x mod 2^15) << 16 = 0x7FFF << 16, x = 0x17FFF >> 15 = 2 -> word
    stream = (0x0001ABCD).to_bytes(4, "little") + (0x7FFF).to_bytes(2, "little") + (0).to_bytes(2, "little")
    body = b"\x00\x00" + bytes([len(stream)]) + stream
    u = (1 << 31) + (0x7FFF << 16 | 0xABCD)  # base 2^31 + e
    d = ((u >> 1) ^ -(u & 1)) & 0xFFFFFFFF
    assert payload.decode_unit(body, 1, 1)[0, 0, 0] == d
    with pytest.raises(Corrupt, match="too few words"):  # one word short
        payload.decode_unit(b"\x00\x00" + bytes([len(stream) - 2]) + stream[:-2], 1, 1)
