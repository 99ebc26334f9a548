"""Near-lossless bounds (2.6, head record 19, feature near_lossless)."""

from __future__ import annotations

from imij_plugins.container.header import Header
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.maps import CONST, TABLE, CodedChannel
from imij_plugins.wire.cursor import Cursor

NEAR_SAMPLES = frozenset({"u8", "u16", "u32", "i32"})  # 2.6: bounds are defined for these only


def read_bounds(payload: bytes, header: Header, chans: list[CodedChannel]) -> tuple[int, ...]:
    """Record 19's payload: one varint bound per channel (container order) and nothing else (2.6).

    The feature gate is the head parser's (2, 0.1); every other rule of 2.6 is checked here.
    """
    if header.sample_type.name not in NEAR_SAMPLES:  # 2.6: floats, i8, i16, 64-bit: corrupt
        raise Corrupt(f"near-lossless bounds for {header.sample_type.name} samples")
    cur = Cursor(payload, what="near-lossless bounds")
    bounds = tuple(cur.varint("bound") for _ in range(header.channel_count))
    cur.expect_end("bytes after the last bound")  # 2.6: "and nothing else"
    for ch, delta in enumerate(bounds):
        if delta == 0:
            continue
        cc = chans[ch]  # samples of at most 32 bits: coded channel = channel
        if cc.map.mode in (CONST, TABLE):  # 2.6: neither Const nor Table
            raise Corrupt(f"near-lossless bound {delta} on channel {ch} with map mode {cc.map.mode}")
        n = cc.map.bits
        if n < 1 or delta > (1 << (n - 1)) - 1:  # 2.6: delta <= 2^(n-1) - 1
            raise Corrupt(f"near-lossless bound {delta} on channel {ch} of depth {n}")
    if not any(bounds):  # 2.6: at least one channel has delta > 0
        raise Corrupt("near-lossless record with every bound 0")
    return bounds


def quantize(e: int, delta: int) -> int:
    """2.6 (encoders): q = sign(e) * floor((|e| + delta) / (2 delta + 1))."""
    q = (abs(e) + delta) // (2 * delta + 1)
    return q if e >= 0 else -q


def encode_bounds(bounds: list[int] | tuple[int, ...]) -> bytes:
    from imij_plugins.wire.varint import encode_varint

    return b"".join(encode_varint(b) for b in bounds)
