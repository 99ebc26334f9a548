"""The commit footer: its 80 bytes, the backward scan for the newest valid one, the generation chain."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import xxhash

from imij_plugins.errors import Corrupt, TooLarge
from imij_plugins.imijset.columns import U64_MAX
from imij_plugins.imijset.pages import MAX_LEVEL, check_page_range

# Commit footer: "IMIJSET followed by byte 1", then eight u64 fields, then "XXH3-64 of the preceding 72
# bytes, seed 0"
MAGIC = b"IMIJSET\x01"
FOOTER_SIZE = 80
NO_PREVIOUS = U64_MAX  # "previous footer's committed end, or u64::MAX"
_FIELDS = struct.Struct("<8s8Q")
_DIGEST = struct.Struct("<Q")
DEFAULT_SCAN_BUDGET = 64 << 20
_WINDOW = 1 << 20
# over a network every window is a request: the newest footer and root usually sit in the last few KiB
REMOTE_WINDOW = 64 << 10

ReadAt = Callable[[int, int], bytes]


@dataclass(frozen=True)
class Footer:
    """One commit: where its generation ends, the previous one, its root page and its segment."""

    end: int
    previous: int
    root_offset: int
    root_length: int
    root_digest: int
    entries: int
    root_level: int
    generation: int

    @property
    def position(self) -> int:
        """Where the footer's own 80 bytes start."""
        return self.end - FOOTER_SIZE

    def encode(self) -> bytes:
        body = _FIELDS.pack(
            MAGIC,
            self.end,
            self.previous,
            self.root_offset,
            self.root_length,
            self.root_digest,
            self.entries,
            self.root_level,
            self.generation,
        )
        return body + _DIGEST.pack(xxhash.xxh3_64_intdigest(body))


def parse_footer(buf: bytes, position: int) -> Footer:
    """Parse and check the 80 bytes at ``position``; every broken rule is Corrupt."""
    if len(buf) != FOOTER_SIZE:
        raise Corrupt(f"commit footer at {position}: {len(buf)} bytes")
    magic, *fields = _FIELDS.unpack_from(buf)
    if magic != MAGIC:
        raise Corrupt(f"commit footer at {position}: bad magic")
    if _DIGEST.unpack_from(buf, 72)[0] != xxhash.xxh3_64_intdigest(buf[:72]):
        raise Corrupt(f"commit footer at {position}: digest mismatch")
    footer = Footer(*fields)
    what = f"commit footer at {position}"
    # Commit footer: "committed end offset, immediately after this footer"
    if footer.end != position + FOOTER_SIZE:
        raise Corrupt(f"{what}: committed end {footer.end}, expected {position + FOOTER_SIZE}")
    if footer.root_level > MAX_LEVEL:  # "root level, 0..15"
        raise Corrupt(f"{what}: root level {footer.root_level}")
    if footer.generation == 0:  # "generation, starting at 1"
        raise Corrupt(f"{what}: generation 0")
    # the first generation, and only it, has no previous footer
    if (footer.previous == NO_PREVIOUS) != (footer.generation == 1):
        raise Corrupt(f"{what}: generation {footer.generation} with previous end {footer.previous}")
    # "A footer references only earlier bytes."; a previous generation ends with its own footer
    if footer.previous != NO_PREVIOUS and not FOOTER_SIZE <= footer.previous <= position:
        raise Corrupt(f"{what}: previous end {footer.previous} is not an earlier footer's end")
    check_page_range(footer.root_offset, footer.root_length, position, what)
    return footer


def find_newest(read_at: ReadAt, size: int, budget: int, accept: Callable[[Footer, int, bytes], None],
                window_bytes: int | None = None) -> Footer:
    """Scan backward from ``size`` for the newest footer that parses and whose root ``accept`` admits.

    Commit footer: "A reader may find it by backward scanning with an explicit byte budget; bytes
    after its end are uncommitted." Only the last ``budget`` bytes are examined, a window at a
    time (``window_bytes``, 1 MiB by default; remote reads ask for less); a candidate must first sit exactly where its committed-end field says, so forged magic
    bytes cost one comparison each. ``accept(footer, start, window)`` also gets the scanned window
    and its file offset (the root usually sits just before the footer) and raises Corrupt to reject
    the candidate. Unsupported propagates: a newer writer's commit is not damage, and falling back
    past it would hide its generation.
    """
    low = max(0, size - budget)
    end = size
    first_error: Corrupt | None = None
    while end - low >= len(MAGIC):
        start = max(low, end - (window_bytes or _WINDOW))
        window = read_at(start, end - start)
        limit = len(window)
        while True:
            i = window.rfind(MAGIC, 0, limit)
            if i < 0:
                break
            limit = i + len(MAGIC) - 1
            position = start + i
            if position + FOOTER_SIZE > size:  # a footer cut off by the end of the file
                continue
            if i + 16 <= len(window) and int.from_bytes(window[i + 8 : i + 16], "little") != position + FOOTER_SIZE:
                continue
            try:
                if i + FOOTER_SIZE <= len(window):
                    raw = window[i : i + FOOTER_SIZE]
                else:
                    raw = read_at(position, FOOTER_SIZE)
                footer = parse_footer(raw, position)
                accept(footer, start, window)
                return footer
            except Corrupt as exc:
                first_error = first_error or exc
        if start == low:
            break
        end = start + len(MAGIC) - 1  # a magic straddling the window edge is found next round
    if low > 0:
        raise TooLarge(f"no valid commit footer in the last {budget} bytes (raise scan_budget)")
    if first_error is not None:
        raise Corrupt(f"no valid commit footer; the newest candidate failed: {first_error}")
    raise Corrupt("no commit footer: not an IMIJ-set archive, or nothing was committed")


def load_chain(read_at: ReadAt, newest: Footer) -> list[Footer]:
    """Every footer of the snapshot, oldest first, each checked against the one after it.

    Commit footer: "Previous-generation end positions strictly decrease and generation numbers
    decrease by exactly one." Each step moves at least 80 bytes back, so the walk is bounded by
    the file size.
    """
    chain = [newest]
    current = newest
    while current.previous != NO_PREVIOUS:
        position = current.previous - FOOTER_SIZE
        older = parse_footer(read_at(position, FOOTER_SIZE), position)
        if older.generation != current.generation - 1:
            raise Corrupt(
                f"commit footer at {position}: generation {older.generation} before generation {current.generation}"
            )
        chain.append(older)
        current = older
    chain.reverse()
    return chain
