"""One quick-pixel unit record (2.13): a mode byte, then a raw, packet or bit-smart body."""

from __future__ import annotations

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.payload.quick.bitsmart import decode_bitsmart, encode_bitsmart
from imij_plugins.payload.quick.packets import decode_packets, encode_packets

MODE_RAW, MODE_PACKETS, MODE_BIT_SMART = 0, 1, 2


def decode_quick_unit(
    body: memoryview, npixels: int, channels: int, word_bytes: int, *, bit_smart: bool, into: memoryview | None = None
) -> bytes | bytearray | memoryview:
    """The unit's samples, interleaved and little-endian, from its record body (after any ordinal);
    with ``into`` (a writable byte buffer of their size) they go there and ``into`` is returned."""
    samples = _decode(body, npixels, channels, word_bytes, bit_smart, into)
    if into is not None and samples is not into:
        into[:] = samples
        return into
    return samples


def _decode(body: memoryview, npixels: int, channels: int, word_bytes: int, bit_smart: bool,
            into: memoryview | None) -> bytes | bytearray | memoryview:
    if len(body) == 0:
        raise Corrupt("quick unit: missing mode byte")  # 2.13: missing mode/body bytes are Corrupt
    mode = body[0]
    rest = body[1:]
    if mode == MODE_RAW:
        if len(rest) != npixels * channels * word_bytes:  # 2.13: exactly w*h*C*sample_bytes
            raise Corrupt("quick unit: raw body has the wrong length")
        return rest
    if mode == MODE_PACKETS:
        return decode_packets(rest, npixels, channels, word_bytes, into)
    if mode == MODE_BIT_SMART:
        if not bit_smart:  # 2.13.1: a mode-2 unit without head bit 4 is Corrupt
            raise Corrupt("quick unit: bit-smart mode without head bit 4")
        return decode_bitsmart(rest, npixels, channels, word_bytes, into)
    raise Unsupported(f"quick unit mode {mode}")  # 2.13: other modes are Unsupported


def encode_quick_unit(pixels: bytes | memoryview, npixels: int, channels: int, word_bytes: int, *, bit_smart: bool) -> bytes:
    """The smallest valid unit body for ``pixels``: raw, packets, or (when allowed) bit-smart planes
    (ties keep the earlier); one candidate is held at a time, the raw body made only if it wins."""
    best_len, best = 1 + len(pixels), None
    coders = [(MODE_PACKETS, encode_packets)] + ([(MODE_BIT_SMART, encode_bitsmart)] if bit_smart else [])
    for mode, encode in coders:
        body = encode(pixels, npixels, channels, word_bytes, limit=best_len - 2)  # None: cannot win
        if body is not None and 1 + len(body) < best_len:
            best_len, best = 1 + len(body), (mode, body)
        del body
    return bytes([MODE_RAW]) + pixels if best is None else bytes([best[0]]) + best[1]
