"""What the five science records (1.5) share: the version byte, reserved flags, counts, the two errors."""

from __future__ import annotations

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.wire.cursor import Cursor

VERSION = 1  # 1.5: "this section defines version 1"
MAX_CHANNELS = 4  # 1.5 cALB / cATG count: 1..=4


class MalformedRecord(Corrupt):
    """A science record that breaks the 1.5 grammar or rules: reported as malformed, never fatal to a decode."""


class UnknownRecord(Unsupported):
    """A science record the reader skips (1.5): an unknown version, or an sMDT of unknown format."""


def start_record(payload: bytes | memoryview, tag: bytes) -> Cursor:
    """A cursor past the version byte; an unknown version is skipped (1.5)."""
    cur = Cursor(payload, what=tag.decode())
    version = cur.u8("version")
    if version != VERSION:  # 1.5: "A reader skips a record whose version it does not know"
        raise UnknownRecord(f"{tag.decode()} version {version}")
    return cur


def check_flags(flags: int, known: int, what: str) -> None:
    """1.5: a reserved flag bit set makes the record malformed."""
    if flags & ~known:
        raise ValueError(f"{what}: reserved flag bits 0x{flags & ~known:x} set")


def check_count(n: int, lo: int, hi: int, what: str, field_name: str) -> None:
    """A count within ``lo ..= hi``."""
    if not lo <= n <= hi:
        raise ValueError(f"{what}: {field_name} {n} outside {lo}..={hi}")
