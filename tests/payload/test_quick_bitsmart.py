"""Quick unit mode 2, bit-smart byte planes (spec 2.13.1): exact bodies, errors, round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imij_plugins.errors import Corrupt, ImijError, Unsupported
from imij_plugins.payload.quick.bitsmart import (
    decode_bitsmart,
    encode_bitsmart,
    pack_bits,
    unpack_bits,
)

WORD_BYTES = (1, 2, 4, 8)


def leb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def unit(*bodies: bytes) -> bytes:
    """A mode-2 body: the plane-body lengths, then the bodies."""
    return b"".join(leb(len(body)) for body in bodies) + b"".join(bodies)


def read_leb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def plane_bodies(body: bytes, planes: int) -> list[bytes]:
    pos, lengths = 0, []
    for _ in range(planes):
        length, pos = read_leb(body, pos)
        lengths.append(length)
    out = []
    for length in lengths:
        out.append(body[pos : pos + length])
        pos += length
    assert pos == len(body)
    return out


def kinds(body: bytes, planes: int) -> list[int]:
    return [plane[0] for plane in plane_bodies(body, planes)]


def u8(body: bytes, npixels: int = 4) -> list[int]:
    return list(decode_bitsmart(body, npixels, 1, 1))


# --------------------------------------------------------------------------- bit packing


def test_pack_bits_is_lsb_first_with_zero_padding():
    assert pack_bits(np.array([0, 1, 2, 3], dtype=np.uint8), 2) == bytes([0b11100100])
    assert pack_bits(np.array([5, 6, 7], dtype=np.uint8), 3) == bytes([0b11110101, 0b1])
    assert pack_bits(np.array([0x1FF], dtype=np.uint16), 9) == bytes([0xFF, 0x01])
    assert pack_bits(np.array([], dtype=np.uint8), 3) == b""
    with pytest.raises(ValueError):
        pack_bits(np.array([4], dtype=np.uint8), 2)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.lists(st.integers(0, 2**64 - 1), max_size=40))
def test_pack_unpack_round_trip(width, raw):
    values = np.array([v & ((1 << width) - 1) for v in raw], dtype=np.uint64)
    packed = pack_bits(values, width)
    assert len(packed) == (len(raw) * width + 7) // 8
    assert unpack_bits(packed, len(raw), width).astype(np.uint64).tolist() == values.tolist()
    bits = "".join(format(v, f"0{width}b")[::-1] for v in values.tolist())
    assert int(bits[::-1] or "0", 2) == int.from_bytes(packed, "little")


def test_unpack_bits_short_input_is_corrupt():
    with pytest.raises(Corrupt):
        unpack_bits(b"\x00", 3, 3)


# --------------------------------------------------------------------------- exact bodies


def test_kind0_raw():
    assert u8(unit(bytes([0, 1, 2, 3, 4]))) == [1, 2, 3, 4]


def test_kind1_packets(backend):
    # FE 05: literal 5; 7F: DIFF +1; C0: run of 1; 40: DIFF -2
    assert u8(unit(bytes([1, 0xFE, 0x05, 0x7F, 0xC0, 0x40]))) == [5, 6, 6, 4]
    # literal then a run of 3
    assert u8(unit(bytes([1, 0xFE, 0x05, 0xC2]))) == [5, 5, 5, 5]


def test_kind2_constant():
    assert unit(bytes([2, 7])) == bytes([2, 2, 7])
    assert u8(bytes([2, 2, 7])) == [7, 7, 7, 7]


def test_kind3_dense_mask():
    # base 0x10, mask 0b101: compact bit 0 -> bit 0, bit 1 -> bit 2; values 0,1,2,3
    body = unit(bytes([3, 0x10, 0x05, 0b11100100]))
    assert body == bytes([4, 3, 0x10, 0x05, 0xE4])
    assert u8(body) == [0x10, 0x11, 0x14, 0x15]
    # 3 pixels of 3 bits: 9 bits in 2 bytes, 7 zero padding bits
    assert u8(unit(bytes([3, 0x00, 0x70, 0b10001111, 0b0])), 3) == [0x70, 0x10, 0x20]


def test_kind4_mask_packets(backend):
    # compact 1, 2, 3, 0 as packets: FE 01, 7F, 7F, FE 00
    body = unit(bytes([4, 0x80, 0x03, 0xFE, 0x01, 0x7F, 0x7F, 0xFE, 0x00]))
    assert u8(body) == [0x81, 0x82, 0x83, 0x80]


def test_kind5_dictionary():
    # entries 10, 20, 30 (count 3, width 2); indices 2, 0, 1, 2
    body = unit(bytes([5, 2, 10, 20, 30, 0b10010010]))
    assert body == bytes([6, 5, 2, 10, 20, 30, 0x92])
    assert u8(body) == [30, 10, 20, 30]
    # 256 entries: width 8, every index valid
    entries = bytes(range(256))
    assert u8(unit(bytes([5, 255]) + entries + bytes([255, 0, 7, 128]))) == [255, 0, 7, 128]


def test_kind6_dictionary_packets(backend):
    # entries 100, 200; indices 1, 1, 0, 1 as packets: FE 01, C0 (run 1), 55 (DIFF -1), 7F (+1)
    body = unit(bytes([6, 1, 100, 200, 0xFE, 0x01, 0xC0, 0x55, 0x7F]))
    assert u8(body) == [200, 200, 100, 200]


def test_kind7_repeats_an_earlier_plane():
    # one u16 channel: low plane raw, high plane repeats plane 0
    body = unit(bytes([0, 1, 2, 3, 4]), bytes([7, 0]))
    out = decode_bitsmart(body, 4, 1, 2)
    assert np.frombuffer(out, "<u2").tolist() == [0x0101, 0x0202, 0x0303, 0x0404]


def test_plane_order_is_component_major_low_byte_first():
    # two u16 components, two pixels: planes c0.lo, c0.hi, c1.lo, c1.hi
    body = unit(
        bytes([0, 0x11, 0x21]),  # plane 0: component 0, low byte
        bytes([2, 0xAA]),  # plane 1: component 0, high byte
        bytes([0, 0x33, 0x43]),  # plane 2: component 1, low byte
        bytes([7, 1]),  # plane 3: component 1, high byte = plane 1
    )
    out = decode_bitsmart(body, 2, 2, 2)
    assert bytes(out) == bytes([0x11, 0xAA, 0x33, 0xAA, 0x21, 0xAA, 0x43, 0xAA])
    assert np.frombuffer(out, "<u2").reshape(2, 2).tolist() == [[0xAA11, 0xAA33], [0xAA21, 0xAA43]]


def test_lengths_may_be_multibyte_varints():
    raw = bytes(range(200))
    body = unit(bytes([0]) + raw)
    assert body[:2] == bytes([0xC9, 0x01])
    assert bytes(decode_bitsmart(body, 200, 1, 1)) == raw


def test_accepts_any_bytes_like():
    body = unit(bytes([2, 9]))
    for form in (body, bytearray(body), memoryview(body), np.frombuffer(body, np.uint8)):
        assert u8(form) == [9] * 4


def test_zero_pixels():
    assert decode_bitsmart(unit(bytes([0])), 0, 1, 1) == bytearray()
    assert decode_bitsmart(unit(bytes([2, 5]), bytes([3, 0, 1])), 0, 1, 2) == bytearray()


# --------------------------------------------------------------------------- errors


CORRUPT = {
    # plane-body lengths
    "truncated length": b"\x80",
    "missing length": b"",
    "non-minimal length": b"\x85\x00" + bytes([0, 1, 2, 3, 4]),
    "overlong length": b"\x80" * 10 + b"\x01",
    "length beyond u64": b"\xff" * 9 + b"\x02",
    "zero-length body": b"\x00",
    "bodies short of the unit": unit(bytes([0, 1, 2, 3, 4])) + b"\x00",
    "bodies beyond the unit": bytes([5, 0, 1, 2, 3]),
    # kind 0
    "raw too short": unit(bytes([0, 1, 2, 3])),
    "raw too long": unit(bytes([0, 1, 2, 3, 4, 5])),
    # kind 1
    "packets trailing bytes": unit(bytes([1, 0xFE, 0x05, 0xC2, 0xC0])),
    "packets too few pixels": unit(bytes([1, 0xFE, 0x05, 0xC1])),
    "packets run too long": unit(bytes([1, 0xFE, 0x05, 0xC3])),
    # kind 2
    "constant without byte": unit(bytes([2])),
    "constant with two bytes": unit(bytes([2, 1, 1])),
    # kind 3
    "mask missing base/mask": unit(bytes([3, 0])),
    "mask overlaps base": unit(bytes([3, 0x01, 0x03, 0xE4])),
    "mask popcount 0": unit(bytes([3, 0x01, 0x00])),
    "mask popcount 8": unit(bytes([3, 0x00, 0xFF, 1, 2, 3, 4])),
    "mask packed too short": unit(bytes([3, 0x00, 0x07, 0xFF])),
    "mask packed too long": unit(bytes([3, 0x00, 0x03, 0xE4, 0x00])),
    "mask nonzero padding": unit(bytes([3, 0x00, 0x07, 0xFF, 0x1F])),  # 12 of 16 bits used
    # kind 4
    "mask packets out of range": unit(bytes([4, 0x00, 0x03, 0xFE, 0x04, 0xC2])),
    "mask packets bad mask": unit(bytes([4, 0x01, 0x01, 0xFE, 0x00, 0xC2])),
    "mask packets popcount 8": unit(bytes([4, 0x00, 0xFF, 0xFE, 0x00, 0xC2])),
    "mask packets bad stream": unit(bytes([4, 0x00, 0x03, 0xFE])),
    # kind 5
    "dictionary of one entry": unit(bytes([5, 0, 7, 0])),
    "dictionary missing count": unit(bytes([5])),
    "dictionary truncated": unit(bytes([5, 2, 10, 20])),
    "dictionary equal entries": unit(bytes([5, 2, 10, 10, 30, 0x92])),
    "dictionary decreasing entries": unit(bytes([5, 2, 30, 20, 10, 0x92])),
    "dictionary packed too short": unit(bytes([5, 2, 10, 20, 30])),
    "dictionary packed too long": unit(bytes([5, 2, 10, 20, 30, 0x92, 0])),
    "dictionary nonzero padding": unit(bytes([5, 1, 10, 20, 0b00010101])),  # 4 one-bit indices
    "dictionary index out of range": unit(bytes([5, 2, 10, 20, 30, 0b11000000])),
    # kind 6
    "dictionary packets one entry": unit(bytes([6, 0, 7, 0xFE, 0x00, 0xC2])),
    "dictionary packets out of range": unit(bytes([6, 1, 100, 200, 0xFE, 0x02, 0xC2])),
    "dictionary packets non-increasing": unit(bytes([6, 1, 200, 100, 0xFE, 0x01, 0xC2])),
    "dictionary packets truncated stream": unit(bytes([6, 1, 100, 200, 0xFE])),
    # kind 7
    "repeat of itself": unit(bytes([7, 0])),
    "repeat without ordinal": unit(bytes([7])),
    "repeat with two bytes": unit(bytes([7, 0, 0])),
}


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_corrupt(name, backend):
    with pytest.raises(Corrupt, match="bit-smart"):
        decode_bitsmart(CORRUPT[name], 4, 1, 1)


@pytest.mark.parametrize(
    "second",
    [bytes([7, 1]), bytes([7, 2]), bytes([7, 255])],
    ids=["itself", "later", "far"],
)
def test_corrupt_repeat_ordinal(second):
    body = unit(bytes([2, 1]), second, bytes([2, 3]))
    with pytest.raises(Corrupt, match="earlier"):
        decode_bitsmart(body, 4, 1, 3)


def test_repeat_of_an_earlier_plane_across_components():
    body = unit(bytes([2, 1]), bytes([2, 2]), bytes([7, 1]))
    assert list(decode_bitsmart(body, 2, 3, 1)) == [1, 2, 2] * 2


def test_corrupt_bodies_after_the_declared_planes():
    # two u8 planes declared, the second body missing
    with pytest.raises(Corrupt):
        decode_bitsmart(leb(2) + bytes([2, 1]), 4, 2, 1)


@pytest.mark.parametrize("kind", [8, 9, 0x80, 0xFF])
def test_unknown_kind_is_unsupported(kind):
    with pytest.raises(Unsupported, match="bit-smart"):
        decode_bitsmart(unit(bytes([kind, 0, 0])), 4, 1, 1)


@pytest.mark.parametrize("stream_kind", [b"\x01", b"\x04\x00\x01", b"\x06\x01\x00\x01"])
def test_short_packet_stream_for_huge_plane_is_corrupt_before_allocation(stream_kind):
    with pytest.raises(Corrupt, match="too short"):
        decode_bitsmart(unit(stream_kind + bytes([0xFE, 0x00, 0xFD])), 1 << 40, 1, 1)


def test_checks_precede_the_output_allocation():
    # 2**40 pixels cannot be allocated; the bad second plane is reported first
    with pytest.raises(Corrupt):
        decode_bitsmart(unit(bytes([2, 1]), bytes([3, 1, 1])), 1 << 40, 1, 2)


# --------------------------------------------------------------------------- round trips


def image_bytes(kind: str, npixels: int, channels: int, word_bytes: int, rng) -> bytes:
    shape = (npixels, channels)
    dtype = f"<u{word_bytes}"
    if kind == "random":
        return rng.integers(0, 256, size=npixels * channels * word_bytes, dtype=np.uint8).tobytes()
    if kind == "constant":
        return np.full(shape, 0x0123456789ABCDEF & ((1 << (8 * word_bytes)) - 1), dtype).tobytes()
    if kind == "low_bits":  # 10-bit values (u8: 5-bit)
        bits = min(10, 8 * word_bytes - 3)
        return rng.integers(0, 1 << bits, size=shape).astype(dtype).tobytes()
    if kind == "few_values":
        palette = rng.integers(0, 2 ** (8 * word_bytes), size=5, dtype=np.uint64)
        return palette[rng.integers(0, 5, size=shape)].astype(dtype).tobytes()
    if kind == "smooth":
        ramp = np.arange(npixels)[:, None] // 3 + np.arange(channels)[None, :] * 7
        return ramp.astype(np.uint64).astype(dtype).tobytes()
    if kind == "float":
        if word_bytes == 1:
            return rng.integers(0, 4, size=shape).astype(np.uint8).tobytes()
        ftype = {2: "<f2", 4: "<f4", 8: "<f8"}[word_bytes]
        pool = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25, 1e-3], dtype=ftype)
        values = pool[rng.integers(0, pool.size, size=shape)]
        raw = values.view(f"<u{word_bytes}").copy()
        raw[0, 0] |= raw.dtype.type(1)  # a NaN/denormal payload bit: bits must survive as stored (numpy 1.x: typed)
        return raw.tobytes()
    raise AssertionError(kind)


KINDS = ("random", "constant", "low_bits", "few_values", "smooth", "float")


@pytest.mark.parametrize("data_kind", KINDS)
@pytest.mark.parametrize("word_bytes", WORD_BYTES)
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_round_trip(channels, word_bytes, data_kind):
    rng = np.random.default_rng(channels * 100 + word_bytes * 10 + KINDS.index(data_kind))
    npixels = 37
    pixels = image_bytes(data_kind, npixels, channels, word_bytes, rng)
    for packets in (True, False):
        body = encode_bitsmart(pixels, npixels, channels, word_bytes, packets=packets)
        assert bytes(decode_bitsmart(body, npixels, channels, word_bytes)) == pixels
        assert encode_bitsmart(pixels, npixels, channels, word_bytes, packets=packets) == body
        found = kinds(body, channels * word_bytes)
        if not packets:
            assert not set(found) & {1, 4, 6}
    assert len(body) <= len(pixels) + 2 * channels * word_bytes


def test_round_trip_numpy_input_and_nan_bits():
    values = np.array([[np.nan, -0.0], [0.0, np.inf]], dtype=np.float32)
    values.view(np.uint32)[0, 0] = 0x7FC01234  # a NaN with a payload
    body = encode_bitsmart(values, 2, 2, 4)
    out = np.frombuffer(decode_bitsmart(body, 2, 2, 4), "<u4").reshape(2, 2)
    assert out.tolist() == values.view(np.uint32).tolist()
    big = values.astype(">f4")
    assert encode_bitsmart(big, 2, 2, 4) == body


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 40),
    st.integers(1, 4),
    st.sampled_from(WORD_BYTES),
    st.data(),
)
def test_round_trip_arbitrary(npixels, channels, word_bytes, data):
    size = npixels * channels * word_bytes
    alphabet = data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=6))
    pixels = bytes(data.draw(st.lists(st.sampled_from(alphabet), min_size=size, max_size=size)))
    body = encode_bitsmart(pixels, npixels, channels, word_bytes)
    assert bytes(decode_bitsmart(body, npixels, channels, word_bytes)) == pixels


def test_encoder_picks_constant_and_repeat():
    # u16 gray 0x0505: low plane constant, high plane constant (preferred over a repeat)
    pixels = np.full(100, 0x0505, "<u2").tobytes()
    assert kinds(encode_bitsmart(pixels, 100, 1, 2), 2) == [2, 2]
    # two identical random u16 channels: planes 2, 3 repeat planes 0, 1
    rng = np.random.default_rng(1)
    channel = rng.integers(0, 1 << 16, size=100).astype("<u2")
    body = encode_bitsmart(np.stack([channel, channel], axis=1).tobytes(), 100, 2, 2)
    assert kinds(body, 4) == [0, 0, 7, 7]
    assert [plane[1] for plane in plane_bodies(body, 4)[2:]] == [0, 1]


def test_encoder_picks_dense_mask_for_low_bit_depth():
    rng = np.random.default_rng(2)
    pixels = rng.integers(0, 1 << 10, size=1000).astype("<u2").tobytes()
    body = encode_bitsmart(pixels, 1000, 1, 2)
    assert kinds(body, 2) == [0, 3]
    high = plane_bodies(body, 2)[1]
    assert high[1:3] == bytes([0x00, 0x03]) and len(high) == 3 + 250


def test_encoder_picks_a_sparse_mask():
    # only bits 1 and 6 vary above base 0x81
    rng = np.random.default_rng(3)
    values = 0x81 | (rng.integers(0, 2, 500) << 1) | (rng.integers(0, 2, 500) << 6)
    body = encode_bitsmart(values.astype(np.uint8).tobytes(), 500, 1, 1)
    (plane,) = plane_bodies(body, 1)
    assert plane[:3] == bytes([3, 0x81, 0x42]) and len(plane) == 3 + 125


def test_encoder_picks_dictionary_for_few_values():
    rng = np.random.default_rng(4)
    values = np.array([3, 77, 200], dtype=np.uint8)[rng.integers(0, 3, 1000)]
    body = encode_bitsmart(values.tobytes(), 1000, 1, 1)
    (plane,) = plane_bodies(body, 1)
    assert plane[:5] == bytes([5, 2, 3, 77, 200]) and len(plane) == 5 + 250


def test_encoder_picks_packets_for_runs(backend):
    values = np.repeat(np.array([9, 40, 9, 200], dtype=np.uint8), 250)
    body = encode_bitsmart(values.tobytes(), 1000, 1, 1)
    assert kinds(body, 1)[0] in (1, 4, 6)
    assert len(body) < 40
    assert bytes(decode_bitsmart(body, 1000, 1, 1)) == values.tobytes()


def test_low_bit_depth_image_size():
    rng = np.random.default_rng(5)
    npixels = 512 * 512
    pixels = rng.integers(0, 1 << 10, size=npixels).astype("<u2").tobytes()
    body = encode_bitsmart(pixels, npixels, 1, 2)
    # low plane raw (1 + n), high plane 2-bit dense mask (3 + n / 4), 3-byte lengths each
    assert len(body) == 3 + 3 + (1 + npixels) + (3 + npixels // 4)
    assert bytes(decode_bitsmart(body, npixels, 1, 2)) == pixels


# --------------------------------------------------------------------------- robustness


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=80), st.integers(0, 12), st.integers(1, 4), st.sampled_from(WORD_BYTES))
def test_random_bytes_raise_only_imij_errors(body, npixels, channels, word_bytes):
    try:
        out = decode_bitsmart(body, npixels, channels, word_bytes)
    except ImijError:
        return
    assert len(out) == npixels * channels * word_bytes


plane_body = st.one_of(
    st.builds(lambda k, rest: bytes([k]) + rest, st.integers(0, 8), st.binary(max_size=12)),
    st.builds(
        lambda k, a, b, rest: bytes([k, a, b]) + rest,
        st.sampled_from([3, 4, 5, 6]),
        st.integers(0, 255),
        st.integers(0, 255),
        st.binary(max_size=10),
    ),
    st.builds(lambda o: bytes([7, o]), st.integers(0, 5)),
    st.builds(lambda c: bytes([2, c]), st.integers(0, 255)),
)


@settings(max_examples=600, deadline=None)
@given(st.integers(0, 8), st.sampled_from([(1, 1), (1, 2), (2, 1), (3, 1), (1, 4)]), st.data())
def test_structured_bodies_raise_only_imij_errors(npixels, geometry, data):
    channels, word_bytes = geometry
    bodies = data.draw(st.lists(plane_body, min_size=channels * word_bytes, max_size=channels * word_bytes))
    try:
        out = decode_bitsmart(unit(*bodies), npixels, channels, word_bytes)
    except ImijError:
        return
    assert len(out) == npixels * channels * word_bytes


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 30), st.sampled_from([(1, 1), (2, 2), (1, 8)]), st.data())
def test_mutated_encodings_raise_only_imij_errors(npixels, geometry, data):
    channels, word_bytes = geometry
    size = npixels * channels * word_bytes
    alphabet = data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=4))
    pixels = bytes(data.draw(st.lists(st.sampled_from(alphabet), min_size=size, max_size=size)))
    body = bytearray(encode_bitsmart(pixels, npixels, channels, word_bytes))
    for _ in range(data.draw(st.integers(1, 3))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    try:
        out = decode_bitsmart(bytes(body), npixels, channels, word_bytes)
    except ImijError:
        return
    assert len(out) == size


# --------------------------------------------------------------------------- planes of many lookups


def test_planes_longer_than_a_lookup_chunk(backend):
    """Kind 3 and kind 5 planes over several LOOKUP_CHUNK steps (and a partial last one) decode
    every pixel, into a caller's buffer too; a bad index in a late step is still Corrupt."""
    from imij_plugins.payload.quick import bitsmart

    n = 2 * bitsmart.LOOKUP_CHUNK + 13
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 3, n, dtype=np.uint8)
    dict_body = unit(bytes([5, 2, 10, 20, 30]) + pack_bits(idx, 2))  # entries 10, 20, 30; width 2
    assert bytes(decode_bitsmart(dict_body, n, 1, 1)) == bytes(np.array([10, 20, 30], np.uint8)[idx])
    compact = rng.integers(0, 4, n, dtype=np.uint8)  # base 0x10, mask 0b101
    mask_body = unit(bytes([3, 0x10, 0x05]) + pack_bits(compact, 2))
    expect = 0x10 | (compact & 1) | ((compact >> 1) << 2)
    into = bytearray(n)
    assert decode_bitsmart(mask_body, n, 1, 1, memoryview(into)) is not None
    assert bytes(into) == bytes(expect.astype(np.uint8))
    late = idx.copy()
    late[-1] = 3  # index 3 of 3 entries, in the last step
    with pytest.raises(Corrupt, match="index exceeds"):
        decode_bitsmart(unit(bytes([5, 2, 10, 20, 30]) + pack_bits(late, 2)), n, 1, 1)


def test_packet_planes_longer_than_a_lookup_chunk(backend):
    """Kind 6: dictionary indices as a packet stream over several steps; an index past the entries
    in a late step is Corrupt."""
    from imij_plugins.payload.quick import bitsmart
    from imij_plugins.payload.quick.packets import encode_packets

    n = bitsmart.LOOKUP_CHUNK + 100
    idx = (np.arange(n) // 7 % 2).astype(np.uint8)
    body = unit(bytes([6, 1, 100, 200]) + bytes(encode_packets(idx.tobytes(), n, 1, 1)))
    assert bytes(decode_bitsmart(body, n, 1, 1)) == bytes(np.array([100, 200], np.uint8)[idx])
    idx[-5] = 2
    with pytest.raises(Corrupt, match="index exceeds"):
        decode_bitsmart(unit(bytes([6, 1, 100, 200]) + bytes(encode_packets(idx.tobytes(), n, 1, 1))), n, 1, 1)


def test_decode_into_needs_little_beyond_its_output(backend):
    """A bit-smart unit of mask, dictionary and packet planes decoded into the caller's buffer
    allocates well under a third of the output besides (tracemalloc): lookups go a chunk at a
    time, packet planes are not copied again. Whole-plane lookups peaked near 3x."""
    import tracemalloc

    rng = np.random.default_rng(8)
    n = 1 << 16
    words = (rng.integers(0, 4, n) * 0x100 + (np.arange(n) // 9 % 3) * 0x1000000 + 0x70).astype("<u4")
    body = encode_bitsmart(words, n, 1, 4)
    assert {3, 5, 6} & set(kinds(body, 4))
    into = bytearray(4 * n)
    tracemalloc.start()
    try:
        decode_bitsmart(body, n, 1, 4, memoryview(into))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert bytes(into) == words.tobytes()
    assert peak < 4 * n / 3, peak / (4 * n)


def test_encoder_limit(backend):
    """encode_bitsmart with a limit: the body when it fits, None when it is longer (it may stop
    before the last plane)."""
    words = (np.arange(5000) % 7 * 0x10101 + (np.arange(5000) // 50) * 0x1000000).astype("<u4")
    body = encode_bitsmart(words, 5000, 1, 4)
    assert encode_bitsmart(words, 5000, 1, 4, limit=len(body)) == body
    assert encode_bitsmart(words, 5000, 1, 4, limit=len(body) - 1) is None
    assert encode_bitsmart(words, 5000, 1, 4, limit=0) is None
