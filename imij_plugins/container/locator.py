"""The DATA locator (header record 4, 1.0): used only when it checks out against the file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from imij_plugins.container.chunks import DATA, KNOWN_CRITICAL, is_critical
from imij_plugins.errors import ImijError
from imij_plugins.registry.chunks import is_valid_tag
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.varint import read_varint


@dataclass(frozen=True)
class Locator:
    """Record 4's fields: DATA's prefix length and the lengths of the chunks before DATA."""

    prefix: int
    lengths: tuple[int, ...]


def read_locator(payload: bytes) -> Locator | None:
    """Parse record 4; a record that does not parse is ignored like a stale one (None)."""
    try:
        cur = Cursor(payload, what="DATA locator")
        prefix = cur.varint()
        count = cur.varint()
        if count > cur.remaining():  # every length takes at least one byte
            return None
        lengths = tuple(cur.varint() for _ in range(count))
        cur.expect_end()
    except ImijError:
        return None
    return Locator(prefix, lengths)


def locate_data(
    buf: bytes | bytearray | memoryview, header_end: int, locator: Locator, head_end: Callable[[int, int], int]
) -> int | None:
    """DATA's offset when ``locator`` checks out (1.0), else None (the reader walks the chunks).

    ``head_end(payload_start, end)`` parses DATA's head and returns where it ends.
    """
    pos, end = header_end, len(buf)
    try:
        for length in locator.lengths:
            tag = bytes(buf[pos : pos + 4])
            if not is_valid_tag(tag) or tag == DATA or (is_critical(tag) and tag not in KNOWN_CRITICAL):
                return None
            value, payload_start = read_varint(buf, pos + 4, end)
            if value == 0 or payload_start + value - 1 - pos != length:
                return None
            pos += length
        if bytes(buf[pos : pos + 4]) != DATA:
            return None
        _, payload_start = read_varint(buf, pos + 4, end)
        if head_end(payload_start, end) - pos != locator.prefix:
            return None
    except ImijError:
        return None
    return pos
