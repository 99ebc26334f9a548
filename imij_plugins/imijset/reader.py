"""Reading committed generations: verified page fetches, point lookup, key-ordered walks and merging.

Every page is fetched through ``PageSource.page``, which checks its length bound, its digest and
its header before parsing; every fetch below a parent then checks what the parent advertised
(level, maximum key, key order, and the declared bounds when the caller asks for them).
"""

from __future__ import annotations

import heapq
import threading
import time
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from imij_plugins._platform import pread
from imij_plugins.errors import Corrupt, ImijError
from imij_plugins.imijset.branches import UNBOUNDED, Bounds, Branch, Child, narrow, parse_branch, within
from imij_plugins.imijset.footer import Footer, ReadAt
from imij_plugins.imijset.keyindex import KeyIndex, KeyIndexStats, bytes_per_key, merge
from imij_plugins.imijset.leaves import Leaf
from imij_plugins.imijset.pages import LEAF_KINDS, check_page_range, read_page_header

if TYPE_CHECKING:
    from imij_plugins.imijset.query import Query

Page = Leaf | Branch
DEFAULT_CACHE_BYTES = 64 << 20
DEFAULT_INDEX_BYTES = 64 << 20
# a lookup whose key lies in more segments' key ranges than this builds the merged key index
INDEX_FANOUT = 4
# segments committed after the key index was built that lookups check one by one before it is extended
INDEX_TAIL = 8
# what a parsed page holds besides its bytes: four uint64 columns per leaf entry, one Child object
# per branch descriptor
_LEAF_ENTRY_BYTES = 32
_CHILD_BYTES = 120


class PageSource:
    """Positional reads below the committed end, and an LRU cache of parsed pages of bounded size.

    Reads go to ``fd``, or to ``read_at(offset, length)`` when given (a remote archive's ranges)."""

    def __init__(self, fd: int, limit: int, cache_bytes: int = DEFAULT_CACHE_BYTES, read_at: ReadAt | None = None):
        self.fd = fd
        self.read_at: ReadAt = read_at or (lambda offset, length: pread(fd, length, offset))
        self.limit = limit
        self.cache_bytes = cache_bytes
        self._cached = 0
        self._cache: OrderedDict[tuple[int, int, int], tuple[Page, int]] = OrderedDict()

    def read(self, offset: int, length: int, what: str) -> bytes:
        """``length`` committed bytes at ``offset``; a range past the committed end is Corrupt."""
        if offset + length > self.limit:
            raise Corrupt(f"{what}: bytes {offset}+{length} lie past the committed end {self.limit}")
        data = self.read_at(offset, length)
        if len(data) != length:
            raise Corrupt(f"{what}: the file ends before {offset + length}")
        return data

    def cached(self, offset: int, length: int, digest: int) -> Page | None:
        """The parsed page when the cache holds it (every cached page passed ``page``'s checks)."""
        key = (offset, length, digest)
        hit = self._cache.get(key)
        if hit is None:
            return None
        self._cache.move_to_end(key)
        return hit[0]

    def page(self, offset: int, length: int, digest: int, what: str, data: bytes | None = None) -> Page:
        """The page a parent (or footer) references, verified; ``data`` supplies bytes already read."""
        hit = self.cached(offset, length, digest)
        if hit is not None:
            return hit
        key = (offset, length, digest)
        check_page_range(offset, length, self.limit, what)  # bounds before the read allocates
        buf = data if data is not None else self.read(offset, length, what)
        # Index pages: "A parent records the full page digest."
        if xxhash.xxh3_64_intdigest(buf) != digest:
            raise Corrupt(f"{what}: page at {offset} fails its digest")
        kind, level, count = read_page_header(buf, what)
        page: Page
        if kind in LEAF_KINDS:
            page = Leaf(buf, offset, kind, count, what)
            weight = length + _LEAF_ENTRY_BYTES * count
        else:
            page = parse_branch(buf, offset, kind, level, count, what)
            weight = length + _CHILD_BYTES * count
        self._cache[key] = (page, weight)
        self._cached += weight
        while self._cached > self.cache_bytes and len(self._cache) > 1:
            self._cached -= self._cache.popitem(last=False)[1][1]
        return page


def level_of(page: Page) -> int:
    return page.level if isinstance(page, Branch) else 0


class Segment:
    """One committed append segment: its footer and the index tree under its root."""

    __slots__ = ("footer", "source", "_root", "_min_key")

    def __init__(self, footer: Footer, source: PageSource):
        self.footer = footer
        self.source = source
        self._root: Page | None = None
        self._min_key: int | None = None

    @property
    def generation(self) -> int:
        return self.footer.generation

    def root(self, data: bytes | None = None) -> Page:
        """The root page, checked against the footer ("Recovery checks the root page")."""
        if self._root is None:
            f = self.footer
            what = f"generation {f.generation} root"
            page = self.source.page(f.root_offset, f.root_length, f.root_digest, what, data)
            if level_of(page) != f.root_level:
                raise Corrupt(f"{what}: page level {level_of(page)}, footer says {f.root_level}")
            self._root = page
        return self._root

    def max_key(self) -> int | None:
        root = self.root()
        if isinstance(root, Branch):
            return root.maxes[-1]
        return root.last_key if root.count else None

    def min_key(self) -> int | None:
        """The first key, found down the leftmost children (cached: lookups prune segments with it)."""
        if self._min_key is None:
            page = self.root()
            while isinstance(page, Branch):
                page = self._child(page.children[0], -1, None, page)
            if not page.count:
                return None
            self._min_key = page.first_key
        return self._min_key

    def _where(self, child: Child) -> str:
        return f"generation {self.footer.generation} page at {child.offset}"

    def _child(self, child: Child, lower: int, allowed: Bounds | None, parent: Branch) -> Page:
        """Fetch ``child`` and check it against its parent's descriptor and the key order."""
        page = self.source.cached(child.offset, child.length, child.digest)
        if page is None:
            page = self.source.page(child.offset, child.length, child.digest, self._where(child))
        # Index pages: "Its level is the parent level minus one."
        if level_of(page) != parent.level - 1:
            raise Corrupt(f"{self._where(child)}: level {level_of(page)} below a level-{parent.level} branch")
        if isinstance(page, Branch):
            first, last = page.maxes[0], page.maxes[-1]
        else:
            if not page.count:  # "an empty leaf is the empty segment root", never a child
                raise Corrupt(f"{self._where(child)}: empty leaf below a branch")
            first, last = page.first_key, page.last_key
        # "Each fetched child page must match its advertised maximum"
        if last != child.max_key:
            raise Corrupt(f"{self._where(child)}: maximum key {last}, its parent advertises {child.max_key}")
        if first <= lower:  # keys increase strictly across children
            raise Corrupt(f"{self._where(child)}: key {first} not above the previous child's maximum {lower}")
        if allowed is not None:
            # "A fetched child checks advertised bounds against its actual leaf entries or
            # descendants with matching declarations."
            if isinstance(page, Branch):
                if not all(within(c.bounds, allowed) for c in page.children):
                    raise Corrupt(f"{self._where(child)}: a descriptor's bounds exceed the bounds its parent advertises")
            else:
                if page.summaries is None:
                    page.full(self._where(child))
                if not within(page.bounds, allowed):
                    raise Corrupt(f"{self._where(child)}: entries outside the bounds its parent advertises")
        return page

    def locate(self, key: int) -> tuple[Leaf, int] | None:
        """Point lookup: one page per level, each verified ("point lookup verifies the pages it traverses")."""
        page = self.root()
        lower = -1
        while isinstance(page, Branch):
            i = bisect_left(page.maxes, key)
            if i == len(page.maxes):
                return None
            below = page.maxes[i - 1] if i else lower
            page = self._child(page.children[i], below, None, page)
            lower = below
        j = page.find(key)
        if j is None:
            return None
        if page.offsets is None:
            page.core(f"generation {self.generation} leaf at {page.offset}")
        return page, j

    def key_array(self) -> np.ndarray:
        """Every key of this segment in order, from pages checked as a point lookup checks them, and
        the footer's entry count ("Full scans verify the segment entry count")."""
        parts = [np.frombuffer(leaf.keys, dtype=np.uint64) for leaf in self._leaves(self.root(), -1)]
        keys = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        if len(keys) != self.footer.entries:
            raise Corrupt(f"generation {self.generation}: {len(keys)} entries, its footer says {self.footer.entries}")
        return keys

    def _leaves(self, page: Page, lower: int) -> Iterator[Leaf]:
        if isinstance(page, Leaf):
            yield page
            return
        below = lower
        for child in page.children:
            yield from self._leaves(self._child(child, below, None, page), below)
            below = child.max_key

    def walk(self, query: Query | None = None) -> Iterator[tuple[Leaf, int]]:
        """Entries in key order with every fetched page fully checked; ``query`` prunes disjoint children.

        Without a query this is a full scan: "Full scans verify the segment entry count, key order
        and cross-leaf blob order/nonoverlap."
        """
        state = [0, 0]  # entries seen, end of the last blob
        yield from self._walk(self.root(), -1, UNBOUNDED, query, state)
        if query is None and state[0] != self.footer.entries:
            raise Corrupt(f"generation {self.generation}: {state[0]} entries, its footer says {self.footer.entries}")

    def _walk(self, page: Page, lower: int, allowed: Bounds, query: Query | None, state: list[int]) -> Iterator[tuple[Leaf, int]]:
        if isinstance(page, Leaf):
            what = f"generation {self.generation} leaf at {page.offset}"
            if page.summaries is None:
                page.full(what)
            if query is None and page.count:
                if int(page.offsets[0]) < state[1]:  # type: ignore[index]
                    raise Corrupt(f"{what}: its first blob overlaps the previous leaf's blobs")
                state[0] += page.count
                state[1] = int(page.offsets[-1]) + int(page.lengths[-1])  # type: ignore[index]
            for i in range(page.count):
                if query is None or query.matches(page, i):
                    yield page, i
            return
        below = lower
        for child in page.children:
            # "A query may skip a disjoint child without fetching it"
            if query is None or not query.disjoint(child.bounds):
                inner = narrow(allowed, child.bounds)
                yield from self._walk(self._child(child, below, inner, page), below, inner, query, state)
            below = child.max_key


class Snapshot:
    """The segments of one committed generation chain, oldest first, with a key-range index for lookups
    and, once lookups need it, a merged key index (``index_bytes`` bounds its memory; 0 disables it)."""

    def __init__(self, source: PageSource, footers: list[Footer], index_bytes: int = DEFAULT_INDEX_BYTES):
        self.source = source
        self.segments = [Segment(f, source) for f in footers]
        self.index_bytes = index_bytes
        self._ranges: tuple[list[int], list[int], list[int], list[Segment]] | None = None
        self._keys: KeyIndex | None = None
        self._unindexed = False  # the key index was refused by its budget or a segment failed its checks
        self._lock = threading.Lock()

    @property
    def newest(self) -> Footer | None:
        return self.segments[-1].footer if self.segments else None

    def add(self, footer: Footer, root: bytes) -> Segment:
        """A generation this process just committed; its root page comes from the writer."""
        self.source.limit = footer.end
        segment = Segment(footer, self.source)
        segment.root(root)
        self.segments.append(segment)
        self._ranges = None
        return segment

    def _index(self) -> tuple[list[int], list[int], list[int], list[Segment]]:
        """Segments sorted by first key, with each one's last key and the running maximum of those.

        A segment whose leftmost path cannot be read (damaged, or a page kind this version does not
        know) gets first key 0: it stays a candidate for every key up to its last, and the lookup
        that reaches that page reports it.
        """
        if self._ranges is None:
            spans = []
            for seg in self.segments:
                high = seg.max_key()
                if high is None:
                    continue
                try:
                    low = seg.min_key()
                except ImijError:
                    low = 0
                spans.append((low, high, seg))
            spans.sort(key=lambda s: s[0])
            running, highest = [], -1
            for _, high, _ in spans:
                highest = max(highest, high)
                running.append(highest)
            self._ranges = ([s[0] for s in spans], [s[1] for s in spans], running, [s[2] for s in spans])
        return self._ranges

    def candidates(self, key: int) -> list[Segment]:
        """Segments whose key range holds ``key``, newest first ("Lookup cost grows with segment count")."""
        lows, highs, running, segs = self._index()
        found = []
        j = bisect_right(lows, key) - 1
        while j >= 0 and running[j] >= key:
            if highs[j] >= key:
                found.append(segs[j])
            j -= 1
        if len(found) > 1:
            found.sort(key=lambda s: s.generation, reverse=True)
        return found

    def locate(self, key: int) -> tuple[Segment, Leaf, int] | None:
        """The newest entry with ``key``: "Newer entries replace older entries with the same numeric key".

        Without the key index this tries every segment whose key range holds ``key``, newest first;
        when those are more than ``INDEX_FANOUT`` it builds the index. With it, the segments
        committed since it was built come first (newest first), then the one segment it names.
        """
        index = self._keys
        if index is None:
            found = self.candidates(key)
            if len(found) <= INDEX_FANOUT or self._unindexed:
                return _first(found, key)
            index = self._build()
            if index is None:
                return _first(found, key)
        elif len(self.segments) - index.segments > INDEX_TAIL:
            index = self._build()
            if index is None:
                return _first(self.candidates(key), key)
        for seg in reversed(self.segments[index.segments :]):
            high = seg.max_key()
            if high is not None and key <= high:
                hit = seg.locate(key)
                if hit is not None:
                    return seg, hit[0], hit[1]
        ordinal = index.owner(key)
        if ordinal is None:
            return None
        seg = self.segments[ordinal]
        hit = seg.locate(key)
        if hit is None:
            raise Corrupt(f"generation {seg.generation}: key {key} is missing from the pages that listed it")
        return seg, hit[0], hit[1]

    def _build(self) -> KeyIndex | None:
        """Build the key index, or extend it by the segments committed since; None when it is refused.

        One thread builds while the others wait, then share the result. The budget counts the
        footers' entry counts before any page is read. A segment that fails its checks leaves the
        archive unindexed: lookups then take the key-range path, which reports the damage when it
        reaches it.
        """
        with self._lock:
            index = self._keys
            if self._unindexed:
                return None
            segments = self.segments[:]
            first = index.segments if index is not None else 0
            if index is not None and len(segments) - first <= INDEX_TAIL:
                return index  # another thread extended it
            entries = (len(index.keys) if index is not None else 0) + sum(s.footer.entries for s in segments[first:])
            if entries * bytes_per_key(len(segments)) > self.index_bytes:
                return self._refuse()
            started = time.perf_counter()
            try:
                arrays = [seg.key_array() for seg in segments[first:]]
            except ImijError:
                return self._refuse()
            self._keys = merge(arrays, index, started)
            return self._keys

    def _refuse(self) -> None:
        self._keys = None
        self._unindexed = True

    def key_index(self) -> KeyIndexStats | None:
        """The key index's size and latest build cost, or None while there is none."""
        index = self._keys
        return index.stats() if index is not None else None

    def merged(self) -> Iterator[tuple[int, Segment, Leaf, int]]:
        """Every live entry in key order: "Listing merges sorted segment cursors and filters only after
        resolving replacements" (for one key the newest segment sorts first; older ones are dropped)."""
        cursors = [_cursor(seg) for seg in self.segments]
        previous = -1
        for key, _, seg, leaf, i in heapq.merge(*cursors, key=lambda t: (t[0], t[1])):
            if key != previous:
                previous = key
                yield key, seg, leaf, i


def _first(segments: list[Segment], key: int) -> tuple[Segment, Leaf, int] | None:
    """The entry with ``key`` in the first of ``segments`` that holds one."""
    for seg in segments:
        hit = seg.locate(key)
        if hit is not None:
            return seg, hit[0], hit[1]
    return None


def _cursor(seg: Segment) -> Iterator[tuple[int, int, Segment, Leaf, int]]:
    """One segment's entries as merge items ordered by key, then newest generation first."""
    generation = -seg.generation
    current, keys = None, []
    for leaf, i in seg.walk():
        if leaf is not current:
            current, keys = leaf, leaf.keys.tolist()
        yield keys[i], generation, seg, leaf, i
