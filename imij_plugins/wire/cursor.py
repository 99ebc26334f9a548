"""A bounded reader over a byte buffer: every read checks the end, so a field never overruns."""

from __future__ import annotations

from imij_plugins.errors import Corrupt
from imij_plugins.wire.varint import read_varint, read_varints


class Cursor:
    """Reads fields from ``buf[pos:end]``; any read past ``end`` is Corrupt naming ``what``."""

    __slots__ = ("buf", "pos", "end", "what")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None, what: str = "data"):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.what = what

    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def u8(self, field: str = "byte") -> int:
        if self.pos >= self.end:
            raise Corrupt(f"{self.what}: {field} runs past the end")
        value = self.buf[self.pos]
        self.pos += 1
        return value

    def varint(self, field: str = "varint") -> int:
        pos = self.pos
        if pos < self.end:
            byte = self.buf[pos]
            if byte < 0x80:  # one byte (read_varint's fast path, without building its message)
                self.pos = pos + 1
                return byte
        value, self.pos = read_varint(self.buf, pos, self.end, f"{self.what}: {field}")
        return value

    def varints(self, count: int, field: str = "varint") -> list[int]:
        """``count`` consecutive varints."""
        values, self.pos = read_varints(self.buf, self.pos, self.end, count, f"{self.what}: {field}")
        return values

    def _skip(self, n: int, field: str) -> int:
        """Move past the next ``n`` bytes (Corrupt when fewer are left); their start."""
        pos = self.pos
        if n < 0 or n > self.end - pos:
            raise Corrupt(f"{self.what}: {field} runs past the end")
        self.pos = pos + n
        return pos

    def take(self, n: int, field: str = "bytes") -> memoryview:
        """The next ``n`` bytes as a memoryview (no copy)."""
        pos = self._skip(n, field)
        return memoryview(self.buf)[pos : pos + n]

    def uint_le(self, width: int, field: str = "integer") -> int:
        pos = self._skip(width, field)
        return int.from_bytes(self.buf[pos : pos + width], "little")  # a few bytes: no view

    def sub(self, n: int, what: str) -> Cursor:
        """A cursor over the next ``n`` bytes, which this cursor skips."""
        if n < 0 or n > self.end - self.pos:
            raise Corrupt(f"{self.what}: {what} runs past the end")
        child = Cursor(self.buf, self.pos, self.pos + n, what)
        self.pos += n
        return child

    def expect_end(self, field: str = "trailing bytes") -> None:
        if self.pos != self.end:
            raise Corrupt(f"{self.what}: {field}")
