"""Bytes built by hand from the spec's grammar (2, 2.1, 2.4, 3, 3.3), independent of the writer."""

from __future__ import annotations

from imij_plugins.container.header import Header
from imij_plugins.payload.geometry import Geometry
from imij_plugins.payload.head import ChannelMap, LosslessHead
from imij_plugins.registry.samples import SAMPLE_BY_NAME
from imij_plugins.wire.records import Record


class Bits:
    """An LSB-first bit string (section 0): field bits in order, least significant first."""

    def __init__(self) -> None:
        self.bits: list[int] = []

    def put(self, value: int, n: int) -> Bits:
        for i in range(n):
            self.bits.append((value >> i) & 1)
        return self

    def gamma(self, v: int) -> Bits:
        """3.3: z zero bits, a one bit, then the low z bits of v (z = floor(log2 v))."""
        z = v.bit_length() - 1
        self.put(0, z).put(1, 1).put(v & ((1 << z) - 1), z)
        return self

    def exponent(self, e: int, e_prev: int) -> Bits:
        d = e - e_prev
        return self.gamma((2 * d if d >= 0 else -2 * d - 1) + 1)

    def table(self, last: int, prec: int, entries: list[tuple[int, int]]) -> Bits:
        """last, prec - 1, then per symbol its exponent and mantissa bits (e, mant)."""
        self.put(last, 8).put(prec - 1, 3)
        prev = 0
        for e, mant in entries:
            self.exponent(e, prev)
            prev = e
            if e > 1:
                self.put(mant, min(e - 1, prec - 1))
        return self

    def model(self, k: int, m: int, cross: int = 0, ctx_shift: int | None = None,
              ctx_map: tuple[int, ...] = (0,) * 16) -> Bits:
        self.put(k, 5).put(m, 3).put(cross, 1)
        if ctx_shift is not None:
            self.put(ctx_shift, 5)
        for c in ctx_map:
            self.put(c, 2)
        return self

    def simple_model(self, depth: int, cross: int = 0) -> Bits:
        """k = m = 0, one table whose only symbol is 0 (weight 1): every position decodes u = 0
        and no state ever changes."""
        self.model(0, 0, cross, 0 if depth > 16 else None)
        return self.table(0, 1, [(1, 0)])

    def tobytes(self) -> bytes:
        out = bytearray((len(self.bits) + 7) // 8)
        for i, b in enumerate(self.bits):
            out[i // 8] |= b << (i % 8)
        return bytes(out)


def header(sample: str = "u8", channels: int = 1, width: int = 1, height: int = 1, features=()) -> Header:
    return Header(width, height, sample=SAMPLE_BY_NAME[sample].code, channels=channels, mask=frozenset(features))


def head(hdr: Header, maps: list[ChannelMap], models: bytes, *, present: int = 0, lanes: int = 1,
         stripe_rows: int | None = None, group_cols: int = 0, records: list[Record] | None = None) -> LosslessHead:
    return LosslessHead(present, lanes, Geometry(hdr.width, hdr.height, stripe_rows or hdr.height, group_cols),
                        list(maps), models, list(records or []))


STATE = (1 << 16).to_bytes(4, "little")  # a valid initial state (3: >= 2^16)


def stream(lanes: int = 1) -> bytes:
    """A stream of ``lanes`` initial states and no words (enough for single-symbol tables)."""
    return STATE * lanes
