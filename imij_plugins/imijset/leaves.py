"""Leaf pages: basic (kind 0), metadata (kind 2) and dictionary (kind 3) leaves, parsed and encoded.

A parsed leaf checks its columns in stages: keys when it is fetched (every fetch checks the
advertised maximum), blob references (columns 2-5) when an entry is located, and summaries,
CICP, image counts and metadata (columns 6-9) when a listing, query or entry needs them.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate

import numpy as np

from imij_plugins.errors import Corrupt
from imij_plugins.imijset.branches import Bounds
from imij_plugins.imijset.columns import decode_column, encode_column, encode_deltas, uvarint
from imij_plugins.imijset.dictionary import encode_dictionary, expand, parse_dictionary, repeated_strings, tokenize
from imij_plugins.imijset.entries import Entry, Summary, cicp_key, filename_key
from imij_plugins.imijset.metadata import MAX_PAYLOAD, NO_METADATA, Metadata, parse_metadata
from imij_plugins.imijset.pages import BASIC_LEAF, DICTIONARY_LEAF, MAX_PAGE, METADATA_LEAF, PAGE_HEADER
from imij_plugins.wire.varint import read_varint

# Index pages: a basic leaf "begins with six unsigned LEB128 column lengths"; a metadata leaf "has
# eight column lengths"; Per-leaf string dictionaries: "Kind 3 is a metadata leaf with nine columns"
COLUMNS = {BASIC_LEAF: 6, METADATA_LEAF: 8, DICTIONARY_LEAF: 9}
KEYS, OFFSETS, LENGTHS, HINTS, DIGESTS, SUMMARIES, EXTRAS, METADATA, DICTIONARY = range(9)
U32_MAX = (1 << 32) - 1
_DIGEST = struct.Struct("<Q")


class Leaf:
    """A parsed leaf page at ``offset``; ``core()`` and ``full()`` check the later columns on first use.

    Columns 1-4 are checked as numpy arrays, then kept as ``array('Q')`` (``keys``, ``offsets``,
    ``lengths``, ``hints``): compact, and indexing them yields Python ints directly.
    """

    __slots__ = (
        "kind", "count", "offset", "buf", "spans", "keys", "first_key", "last_key",
        "offsets", "lengths", "hints",
        "summaries", "cicps", "image_counts", "metas", "raw_metas", "bounds",
    )  # fmt: skip

    def __init__(self, buf: bytes, offset: int, kind: int, count: int, what: str):
        self.kind = kind
        self.count = count
        self.offset = offset
        self.buf = buf
        pos, end = PAGE_HEADER.size, len(buf)
        sizes = []
        for _ in range(COLUMNS[kind]):
            size, pos = read_varint(buf, pos, end, what)
            sizes.append(size)
        # Index pages: "followed by the six columns ... with no trailing bytes"
        if sum(sizes) != end - pos:
            raise Corrupt(f"{what}: column lengths add up to {sum(sizes)}, the page holds {end - pos}")
        self.spans = [(s, s + n) for s, n in zip(accumulate(sizes[:-1], initial=pos), sizes)]
        # column 1: "key deltas, unsigned LEB128 (first relative to zero)"; "Keys increase strictly"
        keys = np.cumsum(decode_column(buf, *self.spans[KEYS], count, f"{what} key column"), dtype=np.uint64)
        if count > 1 and not (keys[1:] > keys[:-1]).all():  # a u64 overflow also shows as a decrease
            raise Corrupt(f"{what}: keys do not increase strictly within u64")
        self.keys = array("Q", keys.tobytes())
        self.first_key = self.keys[0] if count else -1
        self.last_key = self.keys[-1] if count else -1
        self.offsets: array | None = None
        self.summaries: list[tuple[int, ...]] | None = None

    def find(self, key: int) -> int | None:
        """The index of ``key`` in this leaf, or None."""
        if not self.first_key <= key <= self.last_key:
            return None
        j = bisect_left(self.keys, key)
        return j if self.keys[j] == key else None

    def core(self, what: str) -> None:
        """Columns 2-5: blob offsets, lengths, prefix hints and digests, each blob ending before this leaf."""
        if self.offsets is not None:
            return
        n = self.count
        deltas = decode_column(self.buf, *self.spans[OFFSETS], n, f"{what} offset column")
        lengths = decode_column(self.buf, *self.spans[LENGTHS], n, f"{what} length column")
        hints = decode_column(self.buf, *self.spans[HINTS], n, f"{what} prefix column")
        start, end = self.spans[DIGESTS]
        if end - start != 8 * n:  # column 5: "blob XXH3-64 digests, eight bytes each"
            raise Corrupt(f"{what}: digest column of {end - start} bytes for {n} entries")
        offsets = np.cumsum(deltas, dtype=np.uint64)
        if n:
            ends = offsets + lengths
            # Index pages: "blobs in a segment are nonoverlapping and in write order" (a u64
            # overflow shows as an end before its start or an offset before the previous end)
            if not (ends >= offsets).all() or not (offsets[1:] >= ends[:-1]).all():
                raise Corrupt(f"{what}: blobs overlap, are out of order or overflow u64")
            # "Each blob ends before its leaf." (blob ends increase, so the last one decides)
            if int(ends[-1]) > self.offset:
                raise Corrupt(f"{what}: a blob does not end before its leaf")
            # "A prefix hint cannot exceed its blob."
            if (hints > lengths).any():
                raise Corrupt(f"{what}: a prefix hint exceeds its blob")
        self.lengths = array("Q", lengths.tobytes())
        self.hints = array("Q", hints.tobytes())
        self.offsets = array("Q", offsets.tobytes())

    def blob_range(self, i: int) -> tuple[int, int, int]:
        """Offset, length and digest of entry ``i`` (``core()`` first)."""
        return self.offsets[i], self.lengths[i], _DIGEST.unpack_from(self.buf, self.spans[DIGESTS][0] + 8 * i)[0]  # type: ignore[index]

    def full(self, what: str) -> None:
        """Columns 6-9 checked, and the leaf's actual bounds computed for its parent's claims."""
        if self.summaries is not None:
            return
        self.core(what)
        n = self.count
        summaries = _summaries(self.buf, *self.spans[SUMMARIES], n, what)
        if self.kind == BASIC_LEAF:
            cicps: list = [None] * n
            counts = [0] * n
            metas: list[Metadata] = [NO_METADATA] * n
            raws = [b""] * n
        else:
            cicps, counts = _extras(self.buf, *self.spans[EXTRAS], n, what)
            strings = parse_dictionary(self.buf, *self.spans[DICTIONARY]) if self.kind == DICTIONARY_LEAF else None
            budget = MAX_PAGE - (self.spans[METADATA][0] - self.spans[KEYS][0])  # columns 1-7 bytes
            metas, raws = _metadata(self.buf, *self.spans[METADATA], n, strings, budget, what)
        self.bounds: Bounds = (None, None, None, None)
        if n:
            widths = [s[0] for s in summaries]
            heights = [s[1] for s in summaries]
            ckeys = [cicp_key(c) for c in cicps]
            fkeys = [filename_key(m.filename) for m in metas]
            self.bounds = tuple((min(v), max(v)) for v in (widths, heights, ckeys, fkeys))  # type: ignore[assignment]
        self.cicps = cicps
        self.image_counts = counts
        self.metas = metas
        self.raw_metas = raws
        self.summaries = summaries

    def entry(self, i: int, generation: int) -> Entry:
        """Entry ``i`` (``full()`` first)."""
        assert self.summaries is not None
        offset, length, digest = self.blob_range(i)
        return Entry(
            self.keys[i],
            offset,
            length,
            digest,
            self.hints[i],
            Summary(*self.summaries[i]),
            self.cicps[i],
            self.image_counts[i],
            self.metas[i],
            self.raw_metas[i],
            generation,
        )


def _summaries(buf: bytes, start: int, end: int, n: int, what: str) -> list[tuple[int, ...]]:
    """Column 6: "width and height unsigned LEB128 (u32), channels/sample/coding each u8, known
    feature-mask low 64 bits unsigned LEB128"."""
    col = buf[start:end]
    if len(col) == 6 * n and (col[0::6] + col[1::6] + col[5::6]).isascii():
        return list(zip(col[0::6], col[1::6], col[2::6], col[3::6], col[4::6], col[5::6]))
    out = []
    pos = start
    field = f"{what} summary column"
    for _ in range(n):
        width, pos = read_varint(buf, pos, end, field)
        height, pos = read_varint(buf, pos, end, field)
        if pos + 3 > end:
            raise Corrupt(f"{field}: runs past its end")
        c, s, k = buf[pos], buf[pos + 1], buf[pos + 2]
        mask, pos = read_varint(buf, pos + 3, end, field)
        if width > U32_MAX or height > U32_MAX:
            raise Corrupt(f"{field}: dimension {max(width, height)} does not fit u32")
        out.append((width, height, c, s, k, mask))
    if pos != end:
        raise Corrupt(f"{field}: trailing bytes")
    return out


def _extras(buf: bytes, start: int, end: int, n: int, what: str) -> tuple[list, list[int]]:
    """Column 7: "CICP presence byte (0/1), four code-point bytes when present ..., then image count"."""
    col = buf[start:end]
    if len(col) == 2 * n and not any(col[0::2]) and col[1::2].isascii():
        return [None] * n, list(col[1::2])
    cicps: list = []
    counts = []
    field = f"{what} CICP/image-count column"
    pos = start
    for _ in range(n):
        if pos >= end:
            raise Corrupt(f"{field}: runs past its end")
        present = buf[pos]
        pos += 1
        if present > 1:
            raise Corrupt(f"{field}: CICP presence byte {present}")
        if present:
            if pos + 4 > end:
                raise Corrupt(f"{field}: runs past its end")
            cicp = tuple(buf[pos : pos + 4])
            if cicp[3] > 1:  # "full-range 0/1"
                raise Corrupt(f"{field}: CICP full-range byte {cicp[3]}")
            cicps.append(cicp)
            pos += 4
        else:
            cicps.append(None)
        count, pos = read_varint(buf, pos, end, field)
        counts.append(count)
    if pos != end:
        raise Corrupt(f"{field}: trailing bytes")
    return cicps, counts


def _metadata(
    buf: bytes, start: int, end: int, n: int, strings: list[bytes] | None, budget: int, what: str
) -> tuple[list[Metadata], list[bytes]]:
    """Column 8: per entry a length and that many metadata bytes (tokenized in a dictionary leaf)."""
    col = buf[start:end]
    if len(col) == n and not any(col):
        return [NO_METADATA] * n, [b""] * n
    metas: list[Metadata] = []
    raws: list[bytes] = []
    field = f"{what} metadata column"
    pos = start
    for i in range(n):
        size, pos = read_varint(buf, pos, end, field)
        if size == 0:  # "Zero length means no filename or attributes."
            metas.append(NO_METADATA)
            raws.append(b"")
            continue
        if size > MAX_PAYLOAD:  # "Nonzero lengths are at most 16,384."
            raise Corrupt(f"{field}: entry {i} metadata of {size} bytes")
        if size > end - pos:
            raise Corrupt(f"{field}: entry {i} metadata runs past its end")
        payload = buf[pos : pos + size]
        pos += size
        if strings is not None:
            payload = expand(payload, strings, f"{field} entry {i}")
            # Per-leaf string dictionaries: "The sum of expanded metadata payload bytes and column
            # 1-7 bytes cannot exceed 64 KiB"
            budget -= len(payload)
            if budget < 0:
                raise Corrupt(f"{what}: expanded metadata and columns 1-7 exceed 64 KiB")
        metas.append(parse_metadata(payload, f"{field} entry {i}"))
        raws.append(payload)
    if pos != end:
        raise Corrupt(f"{field}: trailing bytes")
    return metas, raws


def encode_leaf(
    keys: Sequence[int],
    offsets: Sequence[int],
    lengths: Sequence[int],
    hints: Sequence[int],
    digests: bytes,
    summaries: Sequence[bytes],
    extras: Sequence[bytes] | None,
    metas: Sequence[Metadata] | None,
    raws: Sequence[bytes] | None,
) -> bytes:
    """A leaf page: basic when ``extras`` is None, else metadata, or dictionary when that is smaller.

    Index pages: "Writers use basic leaves if all new fields are absent"; Per-leaf string
    dictionaries: "choose kind 3 only when the entire serialized page is smaller".
    """
    cols = [
        encode_deltas(keys),
        encode_deltas(offsets),
        encode_column(lengths),
        encode_column(hints),
        digests,
        b"".join(summaries),
    ]
    if extras is None:
        return _page(BASIC_LEAF, len(keys), cols)
    assert metas is not None and raws is not None
    cols.append(b"".join(extras))
    page = _page(METADATA_LEAF, len(keys), cols + [b"".join(uvarint(len(r)) + r for r in raws)])
    strings = repeated_strings(metas)
    if strings:
        index = {s: i for i, s in enumerate(strings)}
        tokens = [tokenize(m, index) if r else b"" for m, r in zip(metas, raws)]
        if max(map(len, tokens)) <= MAX_PAYLOAD:
            col8 = b"".join(uvarint(len(t)) + t for t in tokens)
            small = _page(DICTIONARY_LEAF, len(keys), cols + [col8, encode_dictionary(strings)])
            if len(small) < len(page):
                return small
    return page


def _page(kind: int, count: int, cols: list[bytes]) -> bytes:
    return PAGE_HEADER.pack(kind, 0, count) + b"".join(uvarint(len(c)) for c in cols) + b"".join(cols)
