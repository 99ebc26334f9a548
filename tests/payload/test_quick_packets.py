"""The 2.13 quick-pixel packet codec, on both backends (the ``backend`` fixture)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.kernel_codes import KERNEL_CODES
from imij_plugins.payload.quick import packets
from imij_plugins.payload.quick.packets import (
    MSG_RUN,
    MSG_TRAILING,
    MSG_TRUNCATED,
    MSG_UNEQUAL,
    _decode_packets_py,
    _encode_packets_py,
    decode_packets,
    encode_packets,
)

SHAPES = list(itertools.product((1, 2, 3, 4), (1, 2, 4, 8)))  # (channels, word_bytes)
HYPO = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def words(values, word_bytes):
    return b"".join(int(v).to_bytes(word_bytes, "little") for v in values)


def fold(w, wb):
    return sum((w >> (8 * i)) & 0xFF for i in range(wb))


def index_of(t, wb):
    r, g, b, a = t
    return (3 * fold(r, wb) + 5 * fold(g, wb) + 7 * fold(b, wb) + 11 * fold(a, wb)) % 64


def decode(body, n, ch, wb):
    return bytes(decode_packets(body, n, ch, wb))


def py_decode(*args):
    """decode_packets on the Python backend (the reference, through the same dispatcher)."""
    with _backend.use("python"):
        return decode_packets(*args)


def outcome(fn, *args):
    """The result or the Corrupt message, so backends can be compared on any input."""
    try:
        return ("ok", bytes(fn(*args)))
    except Corrupt as e:
        return ("corrupt", str(e))


# ---- hand-built streams from the spec's rules --------------------------------------------------


def test_literal_then_run(backend):
    # FE 05: one colour word (1-channel); C0: run of 1 of the previous tuple.
    assert decode(b"\xfe\x05\xc0", 2, 1, 1) == bytes([5, 5])


def test_run_of_62_and_initial_state(backend):
    # The initial tuple is (0,0,0,2^D-1); a run opening the stream outputs it.
    assert decode(b"\xfd", 62, 4, 1) == bytes([0, 0, 0, 255]) * 62
    assert decode(b"\xc0", 1, 2, 2) == bytes([0, 0, 0xFF, 0xFF])
    assert decode(b"\xc1", 2, 3, 1) == bytes(6)


def test_diff(backend):
    # 01 10 10 11: r+0, g+0, b+1
    assert decode(bytes([0b01101011]), 1, 3, 1) == bytes([0, 0, 1])
    # 01 00 01 11: r-2, g-1, b+1 from (10, 20, 30)
    assert decode(b"\xff\x0a\x14\x1e\x07" + bytes([0b01000111]), 2, 4, 1) == bytes(
        [10, 20, 30, 7, 8, 19, 31, 7]
    )


def test_luma(backend):
    # 10 101000 (dg = 40-32 = 8), rrrrbbbb = 1010 0101: r += 8+10-8, g += 8, b += 8+5-8
    assert decode(b"\xa8\xa5", 1, 3, 1) == bytes([10, 8, 5])
    # extremes: dg = -32, rrrr = 0, bbbb = 15 from (100, 100, 100)
    assert decode(b"\xfe\x64\x64\x64\x80\x0f", 2, 3, 1) == bytes([100, 100, 100, 60, 68, 75])


def test_index_of_untouched_slot_reinserts_at_its_hash(backend):
    # FF 40 00 00 00: (64,0,0,0) hashes to 3*64 % 64 = 0, so it occupies slot 0.
    # 05: untouched slot 5 holds (0,0,0,0); it is output and inserted at its hash, 0.
    # 00: slot 0 now holds (0,0,0,0), not (64,0,0,0).
    assert index_of((64, 0, 0, 0), 1) == 0
    body = b"\xff\x40\x00\x00\x00" + b"\x05" + b"\x00"
    assert decode(body, 3, 4, 1) == bytes([64, 0, 0, 0]) + bytes(4) + bytes(4)


def test_initial_cache_entries_are_zero_tuples(backend):
    # Every slot initially holds (0,0,0,0): an INDEX outputs alpha 0, not 2^D-1.
    assert decode(b"\x2a", 1, 2, 2) == bytes(4)


def test_ff_sets_hidden_alpha_of_3_channel_image(backend):
    # FF 01 02 03 00: pixel (1,2,3), hidden a = 0; it is cached at hash (3+10+21+0) % 64 = 34,
    # not at the hash of (1,2,3,255), which is 23.
    assert index_of((1, 2, 3, 0), 1) == 34 and index_of((1, 2, 3, 255), 1) == 23
    body = b"\xff\x01\x02\x03\x00" + b"\xfe\x09\x09\x09" + bytes([34]) + bytes([23])
    assert decode(body, 4, 3, 1) == bytes([1, 2, 3, 9, 9, 9, 1, 2, 3, 0, 0, 0])
    # The hidden alpha persists through FE and DIFF: a later pixel hashes with a = 0 too.
    body = b"\xff\x01\x02\x03\x00" + bytes([0b01101010]) + bytes([34])
    assert decode(body, 3, 3, 1) == bytes([1, 2, 3, 1, 2, 3, 1, 2, 3])


def test_hidden_alpha_of_1_channel_image(backend):
    # FF x a on a 1-channel image: a is stored nowhere but hashes. (7,7,7,0) -> 15*7 % 64 = 41.
    assert index_of((7, 7, 7, 0), 1) == 41
    assert decode(b"\xff\x07\x00" + bytes([41]), 2, 1, 1) == bytes([7, 7])


def test_two_channel_literals(backend):
    # FE: one colour word, a preserved; FF: colour then alpha.
    body = b"\xfe\x11\x22" + b"\xff\x33\x44\x55\x66"
    assert decode(body, 2, 2, 2) == words([0x2211, 0xFFFF, 0x4433, 0x6655], 2)


def test_16_bit_literal_and_wraparound(backend):
    # FE 34 12 = 0x1234; DIFF 01 00 00 00 = all -2.
    assert decode(b"\xfe\x34\x12\x40", 2, 1, 2) == words([0x1234, 0x1232], 2)
    # DIFF -1 from 0 wraps to 2^16-1; DIFF +1 wraps back to 0.
    assert decode(b"\x55\x7f", 2, 1, 2) == words([0xFFFF, 0x0000], 2)
    # 3-channel LUMA wrap: dg = +31 from 2^16-16 -> 15.
    body = b"\xfe" + words([0xFFF0] * 3, 2) + bytes([0x80 | 63, 0x88])
    assert decode(body, 2, 3, 2) == words([0xFFF0] * 3 + [15] * 3, 2)


def test_16_bit_fold_hash(backend):
    # fold sums the bytes of a word: (0x0102, ...) hashes like bytes 1+2.
    t = (0x0102, 0x0304, 0x0506, 0xFFFF)
    h = index_of(t, 2)
    assert h == (3 * 3 + 5 * 7 + 7 * 11 + 11 * 510) % 64
    body = b"\xfe" + words(t[:3], 2) + b"\xfe" + words([9, 9, 9], 2) + bytes([h])
    assert decode(body, 3, 3, 2) == words(list(t[:3]) + [9, 9, 9] + list(t[:3]), 2)


def test_64_bit_literals_and_wraparound(backend):
    top = 2**64 - 1
    # DIFF -1 from 0 gives 2^64-1 in every colour; LUMA dg = +1 (rrrr = bbbb = 8) wraps to 0.
    body = b"\x55" + bytes([0x80 | 33, 0x88])
    assert decode(body, 2, 3, 8) == words([top] * 3 + [0] * 3, 8)
    # FF literal with a 64-bit alpha; the 4-channel output carries it.
    t = (0x0123456789ABCDEF, 0xFEDCBA9876543210, 2**63, 1)
    body = b"\xff" + words(t, 8) + bytes([0b01111111])  # DIFF +1 +1 +1
    expect = words(t, 8) + words([(t[0] + 1) % 2**64, (t[1] + 1) % 2**64, (t[2] + 1) % 2**64, 1], 8)
    assert decode(body, 2, 4, 8) == expect
    # the 64-bit hash of t, then an INDEX back to it after a literal elsewhere
    h = index_of(t, 8)
    assert h != index_of((5, 5, 5, 1), 8)
    body = b"\xff" + words(t, 8) + b"\xfe" + words([5, 5, 5], 8) + bytes([h])
    assert decode(body, 3, 4, 8) == words(t, 8) + words([5, 5, 5, 1], 8) + words(t, 8)


def test_32_bit_literal_1_channel(backend):
    assert decode(b"\xfe\x78\x56\x34\x12\xc1", 3, 1, 4) == words([0x12345678] * 3, 4)


def test_zero_pixels(backend):
    assert decode(b"", 0, 3, 1) == b""
    assert encode_packets(b"", 0, 4, 8) == b""
    with pytest.raises(Corrupt, match="bytes after the last pixel"):
        decode_packets(b"\xc0", 0, 1, 1)


# ---- malformed streams ------------------------------------------------------------------------


@pytest.mark.parametrize("ch,wb", SHAPES)
def test_empty_stream(backend, ch, wb):
    with pytest.raises(Corrupt) as e:
        decode_packets(b"", 1, ch, wb)
    assert str(e.value) == MSG_TRUNCATED


@pytest.mark.parametrize("ch,wb", SHAPES)
def test_truncated_literals(backend, ch, wb):
    colour = 3 if ch >= 3 else 1
    fe = b"\xfe" + bytes(range(1, 1 + colour * wb))
    ff = b"\xff" + bytes(range(1, 1 + (colour + 1) * wb))
    decode_packets(fe, 1, ch, wb)
    decode_packets(ff, 1, ch, wb)
    for full in (fe, ff):
        for cut in range(len(full)):
            with pytest.raises(Corrupt) as e:
                decode_packets(full[:cut], 1, ch, wb)
            assert str(e.value) == MSG_TRUNCATED


def test_luma_missing_second_byte(backend):
    with pytest.raises(Corrupt) as e:
        decode_packets(b"\xa0", 1, 3, 1)
    assert str(e.value) == MSG_TRUNCATED
    with pytest.raises(Corrupt) as e:
        decode_packets(b"\xc0\xa0", 2, 4, 2)
    assert str(e.value) == MSG_TRUNCATED


@pytest.mark.parametrize(
    "body,n",
    [(b"\xc1", 1), (b"\xfd", 61), (b"\xfe\x01\xc1", 2), (b"\xc0\xc0\xc1", 3), (b"\xfc", 60)],
)
def test_run_past_the_end(backend, body, n):
    with pytest.raises(Corrupt) as e:
        decode_packets(body, n, 1, 1)
    assert str(e.value) == MSG_RUN


@pytest.mark.parametrize("body,n", [(b"\xc0\xc0", 1), (b"\xfe\x01\x00", 1), (b"\xc1\xa0", 2), (b"\x00\x00", 1)])
def test_trailing_bytes(backend, body, n):
    with pytest.raises(Corrupt) as e:
        decode_packets(body, n, 1, 1)
    assert str(e.value) == MSG_TRAILING


@pytest.mark.parametrize("ch", [1, 2])
@pytest.mark.parametrize("wb", [1, 2, 4, 8])
@pytest.mark.parametrize(
    "body",
    [
        bytes([0b01101011]),  # DIFF b+1
        bytes([0b01011010]),  # DIFF r-1
        bytes([0b10100000, 0x88 + 1]),  # LUMA bbbb = 9
        bytes([0b10100000, 0x88 - 0x10]),  # LUMA rrrr = 7
    ],
)
def test_unequal_colour_components(backend, ch, wb, body):
    with pytest.raises(Corrupt) as e:
        decode_packets(body + b"\xc0", 2, ch, wb)
    assert str(e.value) == MSG_UNEQUAL
    # ... while the same ops are fine on 3/4-channel images
    decode_packets(body + b"\xc0", 2, ch + 2, wb)


@pytest.mark.parametrize("ch", [1, 2])
def test_equal_diff_and_luma_accepted_on_1_2_channels(backend, ch):
    body = bytes([0b01111111, 0b10000000 | 40, 0x88, 0b01000000])  # +1, +8, -2
    out = decode(body, 3, ch, 1)
    xs = out[:: ch]
    assert list(xs) == [1, 9, 7]


def test_pixel_count_beyond_62_per_byte_is_truncated(backend):
    with pytest.raises(Corrupt) as e:
        decode_packets(b"\xfd" * 2, 125, 4, 1)
    assert str(e.value) == MSG_TRUNCATED
    with pytest.raises(Corrupt):  # a huge pixel count never allocates
        decode_packets(b"\xfd", 2**62, 4, 8)


def test_bad_arguments(backend):
    with pytest.raises(ValueError):
        decode_packets(b"", 0, 5, 1)
    with pytest.raises(ValueError):
        decode_packets(b"", 0, 1, 3)
    with pytest.raises(ValueError):
        encode_packets(b"\x00", 1, 2, 1)
    with pytest.raises(ValueError):
        decode_packets(b"", -1, 1, 1)


# ---- encoder ------------------------------------------------------------------------------------


def test_encoder_hand_checked(backend):
    # first pixel equal to the initial state -> a run; then literal, diff, luma, index, run
    px = bytes([0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 255, 11, 21, 29, 255, 21, 31, 41, 255,
                0, 0, 0, 255, 10, 20, 30, 255, 10, 20, 30, 255, 10, 20, 30, 7])
    stream = encode_packets(px, 9, 4, 1)
    h0 = index_of((0, 0, 0, 255), 1)
    h1 = index_of((10, 20, 30, 255), 1)
    assert stream == bytes(
        [0xC1, 0xFE, 10, 20, 30, 0b01111101, 0x80 | 42, 0x8A, h0, h1, 0xC0, 0xFF, 10, 20, 30, 7]
    )
    assert decode(stream, 9, 4, 1) == px


def test_encoder_runs_split_at_62(backend):
    px = bytes([200]) * 200
    stream = encode_packets(px, 200, 1, 1)
    assert stream == b"\xfe\xc8" + b"\xfd" * 3 + bytes([0xC0 | 12])
    assert decode(stream, 200, 1, 1) == px


def test_encoder_1_2_channel_ops_keep_colours_equal(backend):
    xs = [0, 1, 3, 2, 40, 10, 255, 0, 7, 7, 9]
    for ch in (1, 2):
        px = bytes(v for x in xs for v in ((x,) if ch == 1 else (x, 255)))
        stream = encode_packets(px, len(xs), ch, 1)
        assert decode(stream, len(xs), ch, 1) == px
        i = 0
        while i < len(stream):  # walk the ops: diffs equal, lumas rrrr = bbbb = 8
            t = stream[i]
            if t in (0xFE, 0xFF):
                i += 1 + (1 if t == 0xFE else 2)
                continue
            if t >> 6 == 1:
                assert (t >> 4) & 3 == (t >> 2) & 3 == t & 3
            if t >> 6 == 2:
                assert stream[i + 1] == 0x88
                i += 1
            i += 1


def test_encoder_accepts_buffers(backend):
    arr = np.arange(48, dtype=np.uint16).reshape(4, 4, 3)
    stream = encode_packets(arr, 16, 3, 2)
    assert stream == encode_packets(arr.tobytes(), 16, 3, 2)
    assert stream == encode_packets(bytearray(arr.tobytes()), 16, 3, 2)
    assert decode_packets(memoryview(stream), 16, 3, 2) == arr.tobytes()
    assert decode_packets(bytearray(stream), 16, 3, 2) == arr.tobytes()
    assert decode_packets(np.frombuffer(stream, np.uint8), 16, 3, 2) == arr.tobytes()


# ---- backends agree; round trips --------------------------------------------------------------


def _images(ch, wb, rng):
    """Random images of several textures, as (npixels, bytes)."""
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[wb]
    top = np.iinfo(dtype).max
    out = []
    for kind in ("noise", "repeats", "deltas", "mixed", "flat", "alpha"):
        n = int(rng.integers(1, 400))
        if kind == "noise":
            a = rng.integers(0, top, size=(n, ch), dtype=dtype, endpoint=True)
        elif kind == "repeats":
            pal = rng.integers(0, top, size=(4, ch), dtype=dtype, endpoint=True)
            a = pal[np.repeat(rng.integers(0, 4, size=n // 5 + 1), 5)[:n]]
        elif kind == "deltas":
            step = rng.integers(-40, 40, size=(n, ch)).astype(np.int64)
            if ch <= 2:
                step[:, 1:] = rng.integers(-1, 2, size=(n, ch - 1)) * (rng.random((n, ch - 1)) < 0.1)
            base = rng.integers(0, top, size=ch, dtype=dtype, endpoint=True).astype(object)
            vals = (np.cumsum(step, axis=0).astype(object) + base) % (int(top) + 1)
            a = np.array(vals.tolist(), dtype=dtype).reshape(n, ch)
        elif kind == "mixed":
            pal = rng.integers(0, top, size=(6, ch), dtype=dtype, endpoint=True)
            a = pal[rng.integers(0, 6, size=n)]
            small = rng.random(n) < 0.3
            a[small] = (a[small].astype(object) + rng.integers(-2, 2, size=(int(small.sum()), ch)).astype(object)) % (int(top) + 1)
        elif kind == "flat":
            a = np.zeros((n, ch), dtype=dtype)
            if ch in (2, 4):
                a[:, -1] = top
            a[n // 2 :] = rng.integers(0, top, size=ch, dtype=dtype, endpoint=True)
        else:  # alpha changes every few pixels
            a = np.repeat(rng.integers(0, 3, size=(n // 3 + 1, ch), dtype=dtype), 3, axis=0)[:n]
        out.append((n, np.ascontiguousarray(a, dtype=dtype).astype(f"<u{wb}").tobytes()))
    return out


@pytest.mark.parametrize("ch,wb", SHAPES)
def test_backends_agree_and_round_trip(backend, ch, wb):
    rng = np.random.default_rng(1000 * ch + wb)
    for n, px in _images(ch, wb, rng):
        stream = encode_packets(px, n, ch, wb)
        assert stream == _encode_packets_py(px, n, ch, wb)
        assert decode_packets(stream, n, ch, wb) == px
        assert _decode_packets_py(stream, n, ch, wb) == px
        assert len(stream) <= packets.encode_bound(n, ch, wb)


@pytest.mark.parametrize("ch,wb", SHAPES)
def test_truncated_valid_streams(backend, ch, wb):
    # Every strict prefix of a valid stream (cut inside or between any op) ends early.
    rng = np.random.default_rng(7 * ch + wb)
    for n, px in _images(ch, wb, rng):
        n = min(n, 40)  # every op kind within the first 40 pixels; keeps the python side quick
        px = px[: n * ch * wb]
        stream = encode_packets(px, n, ch, wb)
        for cut in range(len(stream)):
            with pytest.raises(Corrupt) as e:
                decode_packets(stream[:cut], n, ch, wb)
            assert str(e.value) == MSG_TRUNCATED


@pytest.mark.parametrize("ch,wb", SHAPES)
def test_mutated_streams_agree(backend, ch, wb):
    # Flip bytes of valid streams: both backends give the same pixels or the same Corrupt.
    rng = random.Random(31 * ch + wb)
    nrng = np.random.default_rng(31 * ch + wb)
    for n, px in _images(ch, wb, nrng):
        stream = bytearray(encode_packets(px, n, ch, wb))
        for _ in range(20):
            m = bytearray(stream)
            for _ in range(rng.randint(1, 3)):
                m[rng.randrange(len(m))] = rng.randrange(256)
            n2 = max(1, n + rng.choice((0, 0, 0, -1, 1, -5)))
            assert outcome(decode_packets, bytes(m), n2, ch, wb) == outcome(
                py_decode, bytes(m), n2, ch, wb
            )


@HYPO
@given(
    body=st.binary(max_size=64),
    npixels=st.integers(0, 200),
    ch=st.integers(1, 4),
    wb=st.sampled_from([1, 2, 4, 8]),
)
def test_random_bytes_only_corrupt(backend, body, npixels, ch, wb):
    got = outcome(decode_packets, body, npixels, ch, wb)
    if got[0] == "ok":
        assert len(got[1]) == npixels * ch * wb
    assert got == outcome(py_decode, body, npixels, ch, wb)


@HYPO
@given(
    body=st.lists(
        st.one_of(
            st.integers(0, 255),
            st.sampled_from([0xFE, 0xFF, 0x55, 0x6A, 0x80, 0xA0, 0xC0, 0xFD, 0x00]),
        ),
        max_size=40,
    ).map(bytes),
    ch=st.integers(1, 4),
    wb=st.sampled_from([1, 2, 4, 8]),
    slack=st.integers(-3, 3),
)
def test_op_shaped_bytes_agree(backend, body, ch, wb, slack):
    # A pixel count near what the stream would produce, to reach the end-of-stream checks.
    npixels = max(0, len(body) + slack)
    assert outcome(decode_packets, body, npixels, ch, wb) == outcome(py_decode, body, npixels, ch, wb)


@HYPO
@given(data=st.data(), ch=st.integers(1, 4), wb=st.sampled_from([1, 2, 4, 8]))
def test_round_trip_hypothesis(backend, data, ch, wb):
    n = data.draw(st.integers(0, 80))
    top = 2 ** (8 * wb) - 1
    values = st.one_of(st.integers(0, 3), st.integers(top - 3, top), st.integers(0, top))
    pix = data.draw(st.lists(st.lists(values, min_size=ch, max_size=ch), min_size=n, max_size=n))
    # repeat some pixels to make runs and index hits
    pix = [pix[i // 2] for i in range(n)] if data.draw(st.booleans()) else pix
    px = b"".join(words(p, wb) for p in pix)
    stream = encode_packets(px, n, ch, wb)
    assert stream == _encode_packets_py(px, n, ch, wb)
    assert decode_packets(stream, n, ch, wb) == px


# ---- the C entry points themselves ------------------------------------------------------------

needs_c = pytest.mark.skipif(_backend.lib is None, reason="C kernels not built")


@needs_c
def test_c_error_codes_match_the_table():
    """The C codes of malformed streams raise Corrupt with the messages the Python reference
    raises (csrc's imij_strerror texts; tests/payload/test_kernel_codes.py ties every code to its
    constant)."""
    lib = _backend.lib
    for code, message in ((lib.IMIJ_E_TRUNCATED, MSG_TRUNCATED), (lib.IMIJ_E_RUN, MSG_RUN),
                          (lib.IMIJ_E_TRAILING, MSG_TRAILING), (lib.IMIJ_E_UNEQUAL, MSG_UNEQUAL)):
        error = KERNEL_CODES.error(code, kernel="quick packets")
        assert type(error) is Corrupt and str(error) == message


@needs_c
def test_c_checks_sizes_and_arguments():
    lib, ffi = _backend.lib, _backend.ffi
    size_max = 2 ** (8 * ffi.sizeof("size_t")) - 1
    src = ffi.new("uint8_t[]", b"\xfe\x01")
    dst = ffi.new("uint8_t[]", 8)
    assert lib.imij_quick_decode(src, 2, dst, 1, 1, 1, 1) == 0
    assert lib.imij_quick_decode(src, 2, dst, 2, 1, 1, 1) == lib.IMIJ_E_SIZE
    assert lib.imij_quick_decode(src, 2, dst, 0, 1, 1, 1) == lib.IMIJ_E_SIZE
    assert lib.imij_quick_decode(src, 2, dst, 8, size_max // 4 + 1, 4, 1) == lib.IMIJ_E_SIZE
    assert lib.imij_quick_decode(src, 2, dst, 8, size_max // 2, 4, 8) == lib.IMIJ_E_SIZE
    assert lib.imij_quick_decode(src, 2, dst, 1, 1, 0, 1) == lib.IMIJ_E_ARGS
    assert lib.imij_quick_decode(src, 2, dst, 1, 1, 5, 1) == lib.IMIJ_E_ARGS
    assert lib.imij_quick_decode(src, 2, dst, 3, 1, 1, 3) == lib.IMIJ_E_ARGS
    assert lib.imij_quick_encode_bound(10, 4, 8) == 10 * 33
    assert lib.imij_quick_encode_bound(size_max // 33 + 1, 4, 8) == 0
    assert lib.imij_quick_encode_bound(1, 3, 16) == 0
    out = ffi.new("uint8_t[]", 64)
    px = ffi.new("uint8_t[]", b"\x01\x02\x03\x04")
    assert lib.imij_quick_encode(px, 4, 1, 4, 1, out, 5) == 5
    assert lib.imij_quick_encode(px, 4, 1, 4, 1, out, 4) == lib.IMIJ_E_SPACE
    assert lib.imij_quick_encode(px, 3, 1, 4, 1, out, 64) == lib.IMIJ_E_SIZE
    assert lib.imij_quick_encode(px, 4, 1, 4, 3, out, 64) == lib.IMIJ_E_ARGS
    assert lib.imij_quick_encode(px, 0, 0, 4, 1, out, 0) == 0


@pytest.mark.parametrize("channels, word_bytes", [(1, 1), (3, 1), (4, 2), (2, 8)])
def test_encoder_limit(backend, channels, word_bytes):
    """With a limit a stream longer than it is None (the kernel's buffer is then the limit and
    one pixel's largest output, not the worst case); one of exactly the limit comes back whole."""
    rng = random.Random(channels * 10 + word_bytes)
    px = bytes(rng.randrange(256) for _ in range(300 * channels * word_bytes))
    px = px[: 100 * channels * word_bytes] * 2 + px[200 * channels * word_bytes :]  # runs and literals
    full = encode_packets(px, 300, channels, word_bytes)
    assert encode_packets(px, 300, channels, word_bytes, limit=len(full)) == full
    assert encode_packets(px, 300, channels, word_bytes, limit=len(full) + 1000) == full
    assert encode_packets(px, 300, channels, word_bytes, limit=len(full) - 1) is None
    assert encode_packets(px, 300, channels, word_bytes, limit=0) is None


def test_kernel_space_below_the_bound():
    """imij_quick_encode below its bound: a stream of dst_cap - (2 + C * word bytes) bytes fits,
    and a buffer too small for the stream is refused without a write past it."""
    if "c" not in _backend.available():
        pytest.skip("C kernels not built")
    ffi, lib = _backend.ffi, _backend.lib
    px = bytes(range(256)) * 4  # 1024 literal-heavy one-byte pixels
    stream = _encode_packets_py(px, 1024, 1, 1)
    step = 2 + 1
    for cap, fits in ((len(stream) + step, True), (len(stream) - 1, False), (2, False)):
        out = bytearray(cap + 16)  # 16 guard bytes
        n = lib.imij_quick_encode(ffi.from_buffer(px), len(px), 1024, 1, 1, ffi.from_buffer(out), cap)
        if fits:
            assert n == len(stream) and bytes(out[:n]) == stream
        else:
            assert n == lib.IMIJ_E_SPACE
        assert out[cap:] == bytearray(16)
