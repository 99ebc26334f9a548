"""LSB-first bit streams (section 0): bit i of the stream is bit (i mod 8) of byte i // 8."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imij_plugins.errors import Corrupt


class BitReader:
    """Reads LSB-first bit fields from a byte buffer; reading past the end is Corrupt."""

    __slots__ = ("buf", "bitpos", "bitend", "what")

    def __init__(self, buf: bytes | bytearray | memoryview, what: str = "bit stream", bitpos: int = 0):
        self.buf = buf
        self.bitpos = bitpos
        self.bitend = len(buf) * 8
        self.what = what

    def read(self, nbits: int) -> int:
        """The next ``nbits`` bits as an unsigned integer, first bit least significant."""
        pos = self.bitpos
        end = pos + nbits
        if nbits < 0 or end > self.bitend:
            raise Corrupt(f"{self.what}: runs past the end")
        self.bitpos = end
        chunk = int.from_bytes(self.buf[pos >> 3 : (end + 7) >> 3], "little")  # the bytes the field touches
        return (chunk >> (pos & 7)) & ((1 << nbits) - 1)

    def read_fields(self, widths: Sequence[int], count: int) -> np.ndarray:
        """``count`` consecutive records of fields ``widths`` bits wide (each at most 32) as a
        (count, len(widths)) uint32 array in one numpy pass (record 35's 256 shared entries of 4
        slots took about a millisecond read field by field)."""
        per = sum(widths)
        pos, end = self.bitpos, self.bitpos + per * count
        if count < 0 or end > self.bitend:
            raise Corrupt(f"{self.what}: runs past the end")
        self.bitpos = end
        out = np.zeros((count, len(widths)), np.uint32)
        if per * count == 0:
            return out
        first = pos >> 3
        raw = np.frombuffer(self.buf, np.uint8, count=((end + 7) >> 3) - first, offset=first)
        bits = np.unpackbits(raw, bitorder="little")[pos & 7 : (pos & 7) + per * count].reshape(count, per)
        off = 0
        for j, w in enumerate(widths):
            out[:, j] = bits[:, off : off + w].astype(np.uint32) @ (np.uint32(1) << np.arange(w, dtype=np.uint32))
            off += w
        return out

    def peek(self, nbits: int) -> int:
        """Up to ``nbits`` next bits without consuming them; past the end they read as 0."""
        pos = self.bitpos
        end = min(pos + nbits, self.bitend)
        chunk = int.from_bytes(self.buf[pos >> 3 : (end + 7) >> 3], "little")
        return (chunk >> (pos & 7)) & ((1 << (end - pos)) - 1)

    def skip(self, nbits: int) -> None:
        """Consume ``nbits`` bits (after a ``peek``); past the end is Corrupt."""
        if self.bitpos + nbits > self.bitend:
            raise Corrupt(f"{self.what}: runs past the end")
        self.bitpos += nbits

    def bits_left(self) -> int:
        return self.bitend - self.bitpos


class BitWriter:
    """Writes LSB-first bit fields; ``getvalue`` pads the last byte with zero bits."""

    __slots__ = ("_acc", "_nbits", "_out")

    def __init__(self) -> None:
        self._acc = 0
        self._nbits = 0
        self._out = bytearray()

    def write(self, value: int, nbits: int) -> None:
        if nbits < 0 or value < 0 or value >> nbits:
            raise ValueError(f"{value} does not fit {nbits} bits")
        self._acc |= value << self._nbits
        self._nbits += nbits
        if self._nbits >= 8:  # the whole bytes out at once (a field may be thousands of bits)
            whole = self._nbits >> 3
            self._out += (self._acc & ((1 << (whole << 3)) - 1)).to_bytes(whole, "little")
            self._acc >>= whole << 3
            self._nbits &= 7

    def write_fields(self, rows: Sequence[Sequence[int]], widths: Sequence[int]) -> None:
        """Records of fields ``widths`` bits wide (each at most 32), one per row, in one numpy pass
        (read_fields' inverse: record 35's 256 shared entries of 4 slots field by field took
        about 300 microseconds)."""
        values = np.array(rows, np.int64).reshape(len(rows), len(widths))
        limits = np.int64(1) << np.array(widths, np.int64)
        if ((values < 0) | (values >= limits)).any():
            raise ValueError(f"a field does not fit its width ({list(widths)} bits)")
        bits = np.concatenate([(values[:, j : j + 1] >> np.arange(w)) & 1 for j, w in enumerate(widths)], axis=1)
        self.write(int.from_bytes(np.packbits(bits.astype(bool).ravel(), bitorder="little").tobytes(), "little"),
                   bits.size)

    def getvalue(self) -> bytes:
        tail = bytes([self._acc]) if self._nbits else b""
        return bytes(self._out) + tail
