"""Writing one append batch: blobs, leaf and branch pages, then the footer linked to the previous commit.

Only bytes past the last commit are ever written (past the file's end, or over zeros reserved
there); a batch that is abandoned is truncated back to where it began, so committed bytes are
never rewritten.
"""

from __future__ import annotations

import os
import struct
from typing import Literal

from xxhash import xxh3_64_intdigest

from imij_plugins._platform import fsync_file, pwrite
from imij_plugins.imijset.branches import Bounds, Child, encode_branch, union
from imij_plugins.imijset.columns import U64_MAX, uvarint
from imij_plugins.imijset.durability import WINDOW, Durability
from imij_plugins.imijset.entries import OPAQUE, OPAQUE_BYTES, OPAQUE_DESCRIPTION, Description, cicp_key, filename_key
from imij_plugins.imijset.footer import FOOTER_SIZE, NO_PREVIOUS, Footer
from imij_plugins.imijset.leaves import encode_leaf
from imij_plugins.imijset.metadata import Metadata
from imij_plugins.imijset.pages import MAX_CHILDREN, MAX_ENTRIES, MAX_PAGE

Placement = Literal["interleaved", "tail"]
FLUSH_AT = 1 << 20
# zeros a durable="checked" writer keeps past its committed end (``Output.reserve``)
RESERVE = 4 << 20
# a metadata leaf entry takes at most 48 bytes in columns 1-5, 23 in the summary, 15 in column 7
# and 3 for its metadata length; the page header and nine column lengths at most 31
_ENTRY_BOUND = 89
_PAGE_BOUND = 31
_OPAQUE_BOUNDS: Bounds = ((0, 0), (0, 0), (0, 0), (0, 0))


class Output:
    """Buffered positional writes that append at ``position``, the next free byte of the file.

    ``buf`` holds the bytes from ``flushed`` to ``position``, written out once it reaches 1 MiB.
    ``reserved`` is the file's size: the bytes from ``position`` to it are uncommitted (zeros
    ``reserve`` added, or zeros a killed writer left) and are overwritten by the next batch.
    """

    def __init__(self, fd: int, position: int, reserved: int | None = None):
        self.fd = fd
        self.position = position
        self.reserved = position if reserved is None else reserved
        self.buf = bytearray()
        self._flushed = position
        self.synced = position  # every byte before it is durable (or was there when opened)

    def write(self, data: bytes) -> int:
        """Append ``data``; return the file offset it starts at."""
        offset = self.position
        self.position += len(data)
        if len(data) >= FLUSH_AT:
            self.flush()
            self._pwrite(data)
        else:
            self.buf += data
            if len(self.buf) >= FLUSH_AT:
                self.flush()
        return offset

    def flush(self) -> None:
        if self.buf:
            self._pwrite(self.buf)
            self.buf = bytearray()

    def _pwrite(self, data: bytes | bytearray) -> None:
        view = memoryview(data)
        while view:
            n = pwrite(self.fd, view, self._flushed)
            self._flushed += n
            view = view[n:]

    def sync(self, durable: Durability) -> None:
        """Flush, then make the bytes durable when the caller asked for durability."""
        self.flush()
        if durable:
            fsync_file(self.fd)
            self.synced = self.position

    def truncate(self, position: int) -> None:
        """Drop every byte from ``position`` on (only ever uncommitted bytes)."""
        self.buf = bytearray()
        os.ftruncate(self.fd, position)
        self.position = self._flushed = self.reserved = position
        self.synced = min(self.synced, position)

    def reserve(self, ahead: int) -> None:
        """Extend the file with zeros to ``ahead`` bytes past ``position``, unless half that is left.

        ``durable="checked"`` commits only flush once when their footer lands before the file's
        end, so that recovery finds bytes after it and checks the commit (``durability``). The
        zeros lie past the committed end: "bytes after its end are uncommitted". The file is
        extended, not written: the file system stores no blocks for the zeros.
        """
        if self.reserved - self.position >= ahead // 2:
            return
        self.flush()
        self.reserved = self.position + ahead
        os.ftruncate(self.fd, self.reserved)


class LeafBuilder:
    """The entries of the leaf being filled, one row each; columns are derived when the leaf closes."""

    __slots__ = ("rows", "basic", "opaque", "raw_bytes")

    def __init__(self) -> None:
        # (key, offset, length, digest, description, metadata, metadata payload) per entry
        self.rows: list[tuple[int, int, int, int, Description, Metadata, bytes]] = []
        self.basic = True
        self.opaque = True  # every description is OPAQUE_DESCRIPTION
        self.raw_bytes = 0  # metadata payload bytes: with 89 bytes an entry, what bounds the page size

    def encode(self) -> tuple[bytes, Bounds]:
        """The page, and the bounds its parent descriptor declares."""
        keys, offsets, lengths, digests, descs, metas, raws = zip(*self.rows)
        n = len(keys)
        packed = struct.pack(f"<{n}Q", *digests)
        if self.basic and self.opaque:  # opaque blobs without metadata
            page = encode_leaf(keys, offsets, lengths, bytes(n), packed, [OPAQUE_BYTES * n], None, None, None)
            return page, _OPAQUE_BOUNDS
        summaries = [d.summary for d in descs]
        extras = None
        if not self.basic:
            # column 7: CICP presence, its four bytes, then the image count
            extras = [
                (b"\x01" + bytes(d.cicp) if d.cicp is not None else b"\x00") + uvarint(d.image_count) for d in descs
            ]
        page = encode_leaf(
            keys,
            offsets,
            lengths,
            [d.prefix_hint for d in descs],
            packed,
            [OPAQUE_BYTES if s is OPAQUE else s.encode() for s in summaries],
            extras,
            None if self.basic else metas,
            None if self.basic else raws,
        )
        columns = (
            [s.width for s in summaries],
            [s.height for s in summaries],
            [cicp_key(d.cicp) for d in descs],
            [filename_key(m.filename) for m in metas],
        )
        return page, tuple((min(v), max(v)) for v in columns)  # type: ignore[return-value]


class SegmentWriter:
    """One append segment: entries in strictly increasing key order, then ``finish`` writes the footer.

    Page placement: "The default writer emits each page as soon as it fills, between blobs"
    (``interleaved``); ``tail`` emits "every leaf in key order, then each branch level in key order,
    the root last, then the footer".
    """

    def __init__(self, out: Output, previous: Footer | None, placement: Placement = "interleaved"):
        self.out = out
        self.start = out.position
        self.previous = previous
        self.placement = placement
        self.leaf = LeafBuilder()
        self.count = 0
        self.last_key = -1
        # Index pages: "Writers build pages bottom-up with at most 127 pending child descriptors per level."
        self.pending: list[list[Child]] = [[]]
        self.tail_leaves: list[tuple[bytes, Child]] = []
        self.last_page = b""  # every page ends before its parent, so the last one written is the root

    def add(self, key: int, blob: bytes, desc: Description, meta: Metadata, raw: bytes) -> None:
        """Write one blob and index it; keys must increase within a batch ("Keys increase strictly")."""
        if not self.last_key < key <= U64_MAX:
            if not 0 <= key <= U64_MAX:
                raise ValueError(f"key {key} outside 0 ..= 2^64 - 1")
            raise ValueError(f"key {key} after {self.last_key}: keys must increase within a batch; commit() first")
        opaque = desc is OPAQUE_DESCRIPTION
        if not opaque and desc.prefix_hint > len(blob):
            raise ValueError("a prefix hint cannot exceed its blob")
        leaf = self.leaf
        rows = leaf.rows
        if raw or leaf.raw_bytes:  # without metadata 256 entries always fit (31 + 89 * 256 bytes)
            # Index pages: "Page-size limits may close a leaf before 256 entries."
            if rows and _PAGE_BOUND + _ENTRY_BOUND * (len(rows) + 1) + leaf.raw_bytes + len(raw) > MAX_PAGE:
                self._close_leaf()
                leaf = self.leaf
                rows = leaf.rows
            leaf.raw_bytes += len(raw)
        if not opaque:
            leaf.opaque = False
            if desc.cicp is not None or desc.image_count:
                leaf.basic = False
        if raw:
            leaf.basic = False
        # "blobs in a segment are nonoverlapping and in write order"; "Each blob ends before its leaf."
        out = self.out
        offset = out.position
        n = len(blob)
        if n < FLUSH_AT:  # Output.write, inlined for small blobs
            out.position = offset + n
            buf = out.buf
            buf += blob
            if len(buf) >= FLUSH_AT:
                out.flush()
        else:
            out.write(blob)
        rows.append((key, offset, n, xxh3_64_intdigest(blob), desc, meta, raw))
        self.last_key = key
        self.count += 1
        if len(rows) == MAX_ENTRIES:
            self._close_leaf()

    def _close_leaf(self) -> None:
        page, bounds = self.leaf.encode()
        child = Child(self.leaf.rows[-1][0], 0, len(page), xxh3_64_intdigest(page), bounds, 0)
        self.leaf = LeafBuilder()
        if self.placement == "tail":
            self.tail_leaves.append((page, child))
        else:
            child.offset = self._write_page(page)
            self._push(child)

    def _write_page(self, page: bytes) -> int:
        self.last_page = page
        return self.out.write(page)

    def _push(self, child: Child) -> None:
        """Add a finished page to its level; 128 pending children make a branch one level up."""
        level = child.level
        if len(self.pending) == level + 1:
            self.pending.append([])
        self.pending[level].append(child)
        if len(self.pending[level]) == MAX_CHILDREN:
            self._push(self._branch(level + 1, self.pending[level]))
            self.pending[level] = []

    def _branch(self, level: int, children: list[Child]) -> Child:
        page = encode_branch(level, children)
        offset = self._write_page(page)
        bounds = union([c.bounds for c in children])
        return Child(children[-1].max_key, offset, len(page), xxh3_64_intdigest(page), bounds, level)

    def finish(self, durable: Durability) -> tuple[Footer, bytes]:
        """Write the remaining pages and the footer; return the footer and the root page's bytes."""
        if self.leaf.rows:
            self._close_leaf()
        if self.placement == "tail":
            root = self._finish_tail()
        else:
            root = self._finish_interleaved()
        # Commit footer: the footer is durable only after everything it references, or, with
        # durable="checked", in the same flush when recovery checks them all (durability.WINDOW)
        # and the footer lands before the file's end, so recovery knows to check
        out = self.out
        end = out.position + FOOTER_SIZE
        if durable != "checked" or end - out.synced > WINDOW or end >= out.reserved:
            out.sync(durable)
        prev = self.previous
        footer = Footer(
            end=self.out.position + FOOTER_SIZE,
            previous=prev.end if prev else NO_PREVIOUS,
            root_offset=root.offset,
            root_length=root.length,
            root_digest=root.digest,
            entries=self.count,
            root_level=root.level,
            generation=prev.generation + 1 if prev else 1,
        )
        self.out.write(footer.encode())
        self.out.sync(durable)
        return footer, self.last_page

    def _finish_interleaved(self) -> Child:
        """Close every level bottom-up until one page is left: the root."""
        if not any(self.pending):
            return self._empty_root()
        level = 0
        while True:
            above = any(self.pending[level + 1 :])
            current = self.pending[level]
            if not above and len(current) == 1:
                return current[0]
            if current:
                self.pending[level] = []
                self._push(self._branch(level + 1, current))
            level += 1

    def _finish_tail(self) -> Child:
        """Leaves in key order, then each branch level in key order, the root last."""
        if not self.tail_leaves:
            return self._empty_root()
        level_pages = []
        for page, child in self.tail_leaves:
            child.offset = self._write_page(page)
            level_pages.append(child)
        level = 0
        while len(level_pages) > 1:
            level += 1
            level_pages = [
                self._branch(level, level_pages[i : i + MAX_CHILDREN]) for i in range(0, len(level_pages), MAX_CHILDREN)
            ]
        return level_pages[0]

    def _empty_root(self) -> Child:
        """Index pages: "an empty leaf is the empty segment root"."""
        page = encode_leaf([], [], [], [], b"", [], None, None, None)
        return Child(0, self._write_page(page), len(page), xxh3_64_intdigest(page), (None,) * 4, 0)  # type: ignore[arg-type]
