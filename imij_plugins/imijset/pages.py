"""Index page framing: kind, level and count, and the bounds checked before any page is read or parsed."""

from __future__ import annotations

import struct

from imij_plugins.errors import Corrupt, Unsupported

# Index pages: "kind u8 (0 basic leaf, 1 legacy branch, 2 metadata leaf, 3 dictionary leaf, 4
# dimension-bounded branch, 5 dimension/CICP-bounded branch, 6 dimension/CICP/filename-bounded branch)"
BASIC_LEAF, LEGACY_BRANCH, METADATA_LEAF, DICTIONARY_LEAF = 0, 1, 2, 3
DIMENSION_BRANCH, CICP_BRANCH, FILENAME_BRANCH = 4, 5, 6
LEAF_KINDS = frozenset({BASIC_LEAF, METADATA_LEAF, DICTIONARY_LEAF})
BRANCH_KINDS = frozenset({LEGACY_BRANCH, DIMENSION_BRANCH, CICP_BRANCH, FILENAME_BRANCH})

MAX_PAGE = 65536  # Index pages: "Pages are at most 65,536 bytes."
MAX_LEVEL = 15  # Commit footer: "root level, 0..15"
MAX_CHILDREN = 128  # Index pages: "Branch pages have 1..128 children"
MAX_ENTRIES = 256  # Index pages: "leaf pages 0..256 entries"
PAGE_HEADER = struct.Struct("<BBH")  # kind u8, level u8, count u16


def check_page_range(offset: int, length: int, limit: int, what: str) -> None:
    """A referenced page: 4 ..= 65,536 bytes, ending at or before ``limit`` (its parent or footer)."""
    if not PAGE_HEADER.size <= length <= MAX_PAGE:
        raise Corrupt(f"{what}: page length {length} outside {PAGE_HEADER.size} ..= {MAX_PAGE}")
    # Index pages: "All child page ranges end before their parent."; Commit footer: "A footer
    # references only earlier bytes."
    if offset + length > limit:
        raise Corrupt(f"{what}: page at {offset}+{length} does not end before {limit}")


def read_page_header(buf: bytes, what: str) -> tuple[int, int, int]:
    """Kind, level and count, each checked against its bound before the body is parsed."""
    kind, level, count = PAGE_HEADER.unpack_from(buf)
    if kind in LEAF_KINDS:
        if level != 0:
            raise Corrupt(f"{what}: leaf page (kind {kind}) at level {level}")
        if count > MAX_ENTRIES:
            raise Corrupt(f"{what}: leaf with {count} entries (at most {MAX_ENTRIES})")
    elif kind in BRANCH_KINDS:
        if not 1 <= level <= MAX_LEVEL:
            raise Corrupt(f"{what}: branch page at level {level} (1 ..= {MAX_LEVEL})")
        if not 1 <= count <= MAX_CHILDREN:
            raise Corrupt(f"{what}: branch with {count} children (1 ..= {MAX_CHILDREN})")
    else:
        # a page kind this version does not define: a later writer's page, not a damaged one
        raise Unsupported(f"{what}: index page kind {kind}")
    return kind, level, count
