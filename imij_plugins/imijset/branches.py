"""Branch pages (kinds 1, 4, 5, 6): child descriptors with maximum keys, page references and bounds."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from imij_plugins.errors import Corrupt
from imij_plugins.imijset.pages import (
    CICP_BRANCH,
    DIMENSION_BRANCH,
    FILENAME_BRANCH,
    LEGACY_BRANCH,
    PAGE_HEADER,
    check_page_range,
)

Range = tuple[int, int]
# declared bounds in the order kinds 4-6 add them: width, height, CICP key, filename key
Bounds = tuple[Range | None, Range | None, Range | None, Range | None]
UNBOUNDED: Bounds = (None, None, None, None)

# Index pages: "A branch child is four u64 values: maximum key, page offset, page length, XXH3-64";
# kind 4 appends four u32 (width, height ranges), kind 5 two more u32 (CICP key range), kind 6 two
# big-endian u128 (filename key range): "Kind 6 descriptors are 88 bytes."
_DESCRIPTORS = {
    LEGACY_BRANCH: struct.Struct("<4Q"),
    DIMENSION_BRANCH: struct.Struct("<4Q4I"),
    CICP_BRANCH: struct.Struct("<4Q6I"),
    FILENAME_BRANCH: struct.Struct("<4Q6I16s16s"),
}
_KIND6 = struct.Struct("<4Q6I")


class Child:
    """One child descriptor: the page it references and what it advertises about it."""

    __slots__ = ("max_key", "offset", "length", "digest", "bounds", "level")

    def __init__(self, max_key: int, offset: int, length: int, digest: int, bounds: Bounds, level: int):
        self.max_key = max_key
        self.offset = offset
        self.length = length
        self.digest = digest
        self.bounds = bounds
        self.level = level


class Branch:
    """A parsed branch page; ``maxes`` lists the children's maximum keys for bisection."""

    __slots__ = ("kind", "level", "offset", "children", "maxes")

    def __init__(self, kind: int, level: int, offset: int, children: list[Child]):
        self.kind = kind
        self.level = level
        self.offset = offset
        self.children = children
        self.maxes = [c.max_key for c in children]


def parse_branch(buf: bytes, offset: int, kind: int, level: int, count: int, what: str) -> Branch:
    """Parse and check a branch page whose header is already checked."""
    fmt = _DESCRIPTORS[kind]
    if len(buf) != PAGE_HEADER.size + count * fmt.size:
        raise Corrupt(f"{what}: {len(buf)} bytes for {count} kind-{kind} descriptors of {fmt.size} bytes")
    children: list[Child] = []
    previous = -1
    for fields in fmt.iter_unpack(memoryview(buf)[PAGE_HEADER.size :]):
        max_key, child_offset, length, digest = fields[:4]
        # Index pages: "Children have strictly increasing maximum keys."
        if max_key <= previous:
            raise Corrupt(f"{what}: child maximum keys not strictly increasing")
        previous = max_key
        check_page_range(child_offset, length, offset, what)
        children.append(Child(max_key, child_offset, length, digest, _bounds(kind, fields, what), level - 1))
    return Branch(kind, level, offset, children)


def _bounds(kind: int, fields: tuple, what: str) -> Bounds:
    """The declared ranges of one descriptor; a minimum above its maximum covers nothing and is Corrupt."""
    if kind == LEGACY_BRANCH:
        return UNBOUNDED
    ranges: list[Range | None] = [(fields[4], fields[5]), (fields[6], fields[7]), None, None]
    if kind in (CICP_BRANCH, FILENAME_BRANCH):
        ranges[2] = (fields[8], fields[9])
    if kind == FILENAME_BRANCH:
        ranges[3] = (int.from_bytes(fields[10], "big"), int.from_bytes(fields[11], "big"))
    for r in ranges:
        if r is not None and r[0] > r[1]:
            raise Corrupt(f"{what}: descriptor bound minimum {r[0]} above maximum {r[1]}")
    return tuple(ranges)  # type: ignore[return-value]


def encode_branch(level: int, children: Sequence[Child]) -> bytes:
    """A kind 6 branch page: "New writers emit kind 6 branch pages"."""
    out = bytearray(PAGE_HEADER.pack(FILENAME_BRANCH, level, len(children)))
    for c in children:
        (w, h, k, f) = c.bounds
        out += _KIND6.pack(c.max_key, c.offset, c.length, c.digest, *w, *h, *k)  # type: ignore[misc]
        out += f[0].to_bytes(16, "big") + f[1].to_bytes(16, "big")  # type: ignore[index]
    return bytes(out)


def union(bounds: Sequence[Bounds]) -> Bounds:
    """The ranges covering every one of ``bounds`` (all fully declared, as a writer's are)."""
    return tuple(  # type: ignore[return-value]
        (min(b[i][0] for b in bounds), max(b[i][1] for b in bounds))  # type: ignore[index]
        for i in range(4)
    )


def within(inner: Bounds, outer: Bounds) -> bool:
    """Whether every range ``inner`` declares lies inside the matching range ``outer`` declares."""
    for a, b in zip(inner, outer):
        if a is not None and b is not None and (a[0] < b[0] or a[1] > b[1]):
            return False
    return True


def narrow(outer: Bounds, inner: Bounds) -> Bounds:
    """The bounds a descendant must obey: ``inner``'s where declared, else ``outer``'s."""
    return tuple(i if i is not None else o for o, i in zip(outer, inner))  # type: ignore[return-value]
