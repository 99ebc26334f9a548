"""``open`` and ``Archive``: one IMIJ-set file, read as its newest committed generation and appended to.

Guarantees: a reader sees exactly one committed generation (the newest footer that passes its
checks, with its root page, and when bytes follow it the pages and blobs of its last MiB); a
writer never rewrites a committed byte, commits one footer per batch, makes the batch durable
before its footer and the footer durable before ``commit`` returns (``durable=True``;
``durable="checked"`` syncs a small batch and its footer together and keeps zeros past its last
commit, see ``durability``), and truncates an abandoned batch back to where it began. One writer
at a time (an advisory lock).
With ``compact="auto"`` a writer also replaces the file, by policy, with its live entries
rewritten as one segment (``autocompact``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import xxhash

import imij_plugins
from imij_plugins._platform import BINARY, POSIX, fsync_directory, lock_writer, pread, unlock_writer
from imij_plugins.errors import Corrupt, ImijError
from imij_plugins.imijset.autocompact import AutoCompact, rewrite
from imij_plugins.imijset.columns import U64_MAX
from imij_plugins.imijset.durability import DURABILITIES, Durability, check_unflushed
from imij_plugins.imijset.entries import CICP, Description, Entry, describe
from imij_plugins.imijset.footer import DEFAULT_SCAN_BUDGET, REMOTE_WINDOW, Footer, find_newest, load_chain
from imij_plugins.imijset.keyindex import KeyIndexStats
from imij_plugins.imijset.metadata import NO_METADATA, Metadata, build_metadata
from imij_plugins.imijset.pyramid import CATALOG_KEY, PyramidLevel, decode_catalog
from imij_plugins.imijset.pyramid import MAGIC as PYRAMID_MAGIC
from imij_plugins.imijset.query import ANY, DimensionFilter, Query, _Any, run
from imij_plugins.imijset.reader import DEFAULT_CACHE_BYTES, DEFAULT_INDEX_BYTES, PageSource, Snapshot, level_of
from imij_plugins.imijset.sequence import ATTRIBUTE as SEQUENCE_ATTRIBUTE
from imij_plugins.imijset.sequence import SequenceIndex, SequenceRecord, SequenceReference, encode_sequence_index
from imij_plugins.imijset.writer import RESERVE, Output, Placement, SegmentWriter
from imij_plugins.remote import is_remote
from imij_plugins.remote.positional import RemoteBytes

Mode = Literal["r", "a", "w"]


@dataclass(frozen=True)
class VerifyReport:
    """What ``Archive.verify`` checked."""

    generations: int
    indexed: int
    live: int
    blob_bytes: int
    sequence_indexes: int
    catalog_levels: int


def open(  # noqa: A001 - the package's verb
    path: str | os.PathLike,
    mode: Mode = "r",
    *,
    placement: Placement = "interleaved",
    durable: Durability = True,
    scan_budget: int = DEFAULT_SCAN_BUDGET,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    index_bytes: int = DEFAULT_INDEX_BYTES,
    compact: Literal["auto"] | AutoCompact | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Archive:
    """Open an archive: ``r`` reads, ``a`` appends (creating the file), ``w`` starts a new one.
    A URL (any fsspec protocol, ``storage_options`` for its filesystem) opens for reading by ranges."""
    return Archive(
        path,
        mode,
        placement=placement,
        durable=durable,
        scan_budget=scan_budget,
        cache_bytes=cache_bytes,
        index_bytes=index_bytes,
        compact=compact,
        storage_options=storage_options,
    )


class Archive:
    """An IMIJ-set archive file; use as a context manager to commit on a clean exit."""

    def __init__(
        self,
        path: str | os.PathLike,
        mode: Mode = "r",
        *,
        placement: Placement = "interleaved",
        durable: Durability = True,
        scan_budget: int = DEFAULT_SCAN_BUDGET,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        index_bytes: int = DEFAULT_INDEX_BYTES,
        compact: Literal["auto"] | AutoCompact | None = None,
        storage_options: dict[str, Any] | None = None,
    ):
        if mode not in ("r", "a", "w"):
            raise ValueError(f"mode must be 'r', 'a' or 'w', not {mode!r}")
        if compact not in (None, "auto") and not isinstance(compact, AutoCompact):
            raise ValueError(f"compact must be None, 'auto' or an AutoCompact, not {compact!r}")
        if durable not in DURABILITIES or not isinstance(durable, (bool, str)):
            raise ValueError(f"durable must be True, False or 'checked', not {durable!r}")
        if placement not in ("interleaved", "tail"):
            raise ValueError(f"placement must be 'interleaved' or 'tail', not {placement!r}")
        self.path = os.fspath(path)
        self.mode = mode
        self.placement = placement
        self.durable = durable
        self._auto = AutoCompact() if compact == "auto" else compact
        self._index_bytes = index_bytes
        self._batch: SegmentWriter | None = None
        self._closed = False
        self._locked = False
        remote = _open_remote(self.path, mode, storage_options)
        created = mode != "r" and not os.path.exists(self.path)
        self._fd = -1 if remote else os.open(self.path, (os.O_RDONLY if mode == "r" else os.O_RDWR | os.O_CREAT) | BINARY, 0o666)
        try:
            if mode != "r":
                lock_writer(self._fd, self.path)
                self._locked = True
                if mode == "w":
                    os.ftruncate(self._fd, 0)
            self._sync_directory = created or mode == "w"
            size = remote.size if remote else os.fstat(self._fd).st_size
            self._source = PageSource(self._fd, 0, cache_bytes, remote.read_at if remote else None)
            self._snapshot = Snapshot(self._source, self._recover(size, scan_budget), index_bytes)
            self._out = self._output(size) if mode != "r" else None
        except BaseException:
            self._release()
            raise

    def _output(self, size: int) -> Output:
        """Where this writer appends: at the end of the file, or over zeros a writer reserved past
        the newest commit and did not truncate (it was killed). Bytes past the newest commit that
        are not all zeros (a torn batch, or a damaged commit) are never overwritten."""
        end = self._snapshot.newest.end if self._snapshot.newest else 0
        if 0 < size - end <= RESERVE and not pread(self._fd, size - end, end).strip(b"\x00"):
            return Output(self._fd, end, size)
        return Output(self._fd, size)

    def _recover(self, size: int, budget: int) -> list[Footer]:
        """The newest valid footer and its chain; an empty file has no generation yet."""
        if size == 0:
            return []

        def raw(offset: int, length: int) -> bytes:
            return self._source.read_at(offset, length)

        def accept(footer: Footer, start: int, window: bytes) -> None:
            # Commit footer: "Recovery checks the root page, not every descendant."
            i = footer.root_offset - start
            data = window[i : i + footer.root_length] if 0 <= i and i + footer.root_length <= len(window) else None
            self._source.limit = footer.end
            root = self._source.page(footer.root_offset, footer.root_length, footer.root_digest, "root page", data)
            if level_of(root) != footer.root_level:
                raise Corrupt(f"root page: level {level_of(root)}, its footer says {footer.root_level}")
            if size > footer.end:  # a writer is open, or was killed: its last commit may be torn
                check_unflushed(self._source, footer, root)

        newest = find_newest(raw, size, budget, accept, REMOTE_WINDOW if self._fd < 0 else None)
        self._source.limit = newest.end
        return load_chain(lambda off, n: self._source.read(off, n, "commit footer"), newest)

    # -- reading ---------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """The committed generation this handle reads (0 when nothing is committed)."""
        newest = self._snapshot.newest
        return newest.generation if newest else 0

    @property
    def segments(self) -> int:
        return len(self._snapshot.segments)

    @property
    def key_index(self) -> KeyIndexStats | None:
        """The merged key index point lookups use once keys interleave across segments (None until then)."""
        return self._snapshot.key_index()

    def last_key(self) -> int | None:
        """The largest live key (no format operation deletes keys), from the segment roots alone."""
        self._check_open()
        highs = [k for k in (seg.max_key() for seg in self._snapshot.segments) if k is not None]
        return max(highs) if highs else None

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the archive is closed")

    def _locate(self, key: int) -> tuple:
        """(segment, leaf, index) of the live entry with ``key`` (KeyError when there is none)."""
        self._check_open()
        if not 0 <= key <= U64_MAX:
            raise KeyError(key)
        hit = self._snapshot.locate(key)
        if hit is None:
            raise KeyError(key)
        return hit

    def entry(self, key: int) -> Entry:
        """The live entry with ``key`` (KeyError when there is none)."""
        seg, leaf, i = self._locate(key)
        leaf.full(f"generation {seg.generation} leaf at {leaf.offset}")
        return leaf.entry(i, seg.generation)

    def get(self, key: int) -> bytes:
        """The blob stored under ``key``, checked against its digest."""
        _, leaf, i = self._locate(key)
        return self._blob(key, *leaf.blob_range(i))

    def blob(self, entry: Entry) -> bytes:
        """The bytes of an ``Entry`` from this archive, checked against its digest."""
        self._check_open()
        return self._blob(entry.key, entry.offset, entry.length, entry.digest)

    def read_at(self, key: int, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` within the blob of ``key``: the spec's "entry-relative bounded
        ReadAt adapter" for an image's own region requests. Partial reads do not check the blob digest."""
        entry = self.entry(key)
        if offset < 0 or length < 0 or offset + length > entry.length:
            raise ValueError(f"bytes {offset}+{length} lie outside the {entry.length}-byte blob of key {key}")
        return self._source.read(entry.offset + offset, length, f"blob of key {key}")

    def _blob(self, key: int, offset: int, length: int, digest: int) -> bytes:
        data = self._source.read(offset, length, f"blob of key {key}")
        if xxhash.xxh3_64_intdigest(data) != digest:
            raise Corrupt(f"blob of key {key}: digest mismatch")
        return data

    def read(self, key: int, **options: object) -> np.ndarray:
        """Decode the IMI image under ``key`` through the core reader (its header is the authority)."""
        return imij_plugins.read(self.get(key), **options)

    def keys(self) -> Iterator[int]:
        """Every live key in ascending order (a full listing: every index page is checked)."""
        self._check_open()
        for key, _, _, _ in self._snapshot.merged():
            yield key

    def items(self) -> Iterator[tuple[int, Entry]]:
        """``(key, Entry)`` for every live entry in ascending key order."""
        self._check_open()
        for key, seg, leaf, i in self._snapshot.merged():
            yield key, leaf.entry(i, seg.generation)

    def __iter__(self) -> Iterator[int]:
        return self.keys()

    def __len__(self) -> int:
        return sum(1 for _ in self._snapshot.merged())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and 0 <= key <= U64_MAX and self._snapshot.locate(key) is not None

    def query(
        self,
        *,
        width: DimensionFilter = ANY,
        height: DimensionFilter = ANY,
        cicp: CICP | None | _Any = ANY,
        filename: str | None | _Any = ANY,
    ) -> list[Entry]:
        """Entries whose declared summary and metadata match: newest segment first, by key within one.

        ``width``/``height``: an int or an inclusive ``(low, high)``; ``cicp``: four code points, or
        None for entries without CICP; ``filename``: the exact name, or None for entries without one.
        """
        self._check_open()
        return run(self._snapshot, Query(width, height, cicp, filename))

    def sequence_index(self, key: int) -> SequenceIndex:
        """The seek index the entry under ``key`` references (LookupError when it has none).

        "Replacing the index key with different length/digest makes the old reference fail."
        """
        image = self.entry(key)
        ref = SequenceReference.from_entry(image)
        if ref is None:
            raise LookupError(f"entry {key} has no {SEQUENCE_ATTRIBUTE} attribute")
        try:
            index = self.entry(ref.index_key)
        except KeyError:
            raise Corrupt(f"entry {key}: its sequence index key {ref.index_key} is missing") from None
        if index.length != ref.length or index.digest != ref.digest:
            raise Corrupt(f"entry {key}: sequence index key {ref.index_key} holds a different blob")
        return SequenceIndex(lambda off, n: self._source.read(off, n, "sequence index"), image, index)

    def catalog(self) -> list[PyramidLevel] | None:
        """The pyramid catalog at key 0, or None when key 0 is absent."""
        try:
            return decode_catalog(self.get(CATALOG_KEY))
        except KeyError:
            return None

    def verify(self) -> VerifyReport:
        """Check everything: every page of every segment, every blob's digest, entry counts, every
        sequence-index reference, and the pyramid catalog when key 0 holds one."""
        self._check_open()
        indexed = blob_bytes = 0
        for seg in self._snapshot.segments:
            for leaf, i in seg.walk():
                offset, length, digest = leaf.blob_range(i)
                self._blob(int(leaf.keys[i]), offset, length, digest)
                indexed += 1
                blob_bytes += length
        live = sequences = levels = 0
        for key, entry in self.items():
            live += 1
            if SequenceReference.from_entry(entry) is not None:
                self.sequence_index(key).verify()
                sequences += 1
            if key == CATALOG_KEY:
                blob = self.blob(entry)
                if blob.startswith(PYRAMID_MAGIC):
                    levels = len(decode_catalog(blob))
        return VerifyReport(self.generation, indexed, live, blob_bytes, sequences, levels)

    # -- writing ---------------------------------------------------------------------------

    def append(
        self,
        key: int,
        blob_or_array: bytes | bytearray | memoryview | np.ndarray,
        filename: str | None = None,
        attributes: Mapping[str, object] | None = None,
        *,
        description: Description | None = None,
    ) -> None:
        """Add one entry to the current batch (keys increase within a batch; a newer entry replaces
        an older one with the same key once committed). An array is encoded as an IMI image;
        ``description`` overrides the summary read from the blob's header."""
        if filename is None and not attributes:
            meta, raw = NO_METADATA, b""
        else:
            meta, raw = build_metadata(filename, attributes)
            if attributes and SEQUENCE_ATTRIBUTE in attributes:
                _check_reference(attributes[SEQUENCE_ATTRIBUTE])
        if type(blob_or_array) is bytes:
            blob = blob_or_array
            desc = description or describe(blob)
        elif isinstance(blob_or_array, np.ndarray):
            blob = imij_plugins.encode(blob_or_array)
            desc = description or describe(blob, image_count=1)
        else:
            blob = blob_or_array if type(blob_or_array) is bytes else bytes(blob_or_array)
            desc = description or describe(blob)
        if self._batch is not None and type(key) is int:
            self._batch.add(key, blob, desc, meta, raw)
        else:
            self._add(key, blob, desc, meta, raw)

    def append_entry(self, entry: Entry, blob: bytes) -> None:
        """Append an entry copied from an archive: its summary, CICP, image count, hint and metadata
        bytes unchanged (compaction's path)."""
        self._add(entry.key, blob, entry.description, entry.metadata, entry.raw_metadata)

    def append_sequence(
        self,
        key: int,
        image: bytes,
        index_key: int,
        records: Sequence[SequenceRecord],
        filename: str | None = None,
        attributes: Mapping[str, object] | None = None,
    ) -> None:
        """Append an image and its seek index blob (two ordinary entries, in key order)."""
        if key == index_key:
            raise ValueError("the image and its seek index need different keys")
        index = encode_sequence_index(image, records)
        ref = SequenceReference(index_key, len(index), xxhash.xxh3_64_intdigest(index))
        attrs = {**(attributes or {}), SEQUENCE_ATTRIBUTE: ref.encode()}
        entries = [(key, image, filename, attrs), (index_key, index, None, None)]
        for k, blob, name, extra in sorted(entries, key=lambda e: e[0]):
            self.append(k, blob, name, extra)

    def _add(self, key: int, blob: bytes, desc: Description, meta: Metadata, raw: bytes) -> None:
        batch = self._batch
        if batch is None:
            self._check_open()
            if self._out is None:
                raise ValueError("the archive is open for reading (mode 'r')")
            batch = self._batch = SegmentWriter(self._out, self._snapshot.newest, self.placement)
        if type(key) is not int:
            if not isinstance(key, int) or isinstance(key, bool):
                raise TypeError(f"keys are ints, not {type(key).__name__}")
            key = int(key)
        batch.add(key, blob, desc, meta, raw)

    def commit(self) -> int:
        """Write the batch's index and footer (one footer per batch); return the committed generation.

        With nothing appended this writes nothing, except for a file with no generation yet, which
        gets an empty one. With ``compact="auto"`` a due rewrite follows the commit (the file then
        holds generation 1); an error while rewriting leaves the commit durable and the file as it was.
        """
        self._check_open()
        if self._out is None:
            raise ValueError("the archive is open for reading (mode 'r')")
        if self._batch is None:
            if self._snapshot.segments:
                return self.generation
            self._batch = SegmentWriter(self._out, None, self.placement)
        footer, root = self._batch.finish(self.durable)
        self._batch = None
        if self.durable == "checked":
            self._out.reserve(RESERVE)
        if self._sync_directory and self.durable:
            fsync_directory(self.path)
            self._sync_directory = False
        self._snapshot.add(footer, root)
        if self._auto is not None and POSIX:
            segments = self._snapshot.segments
            if self._auto.due(len(segments), segments[0].footer.end, footer.end):
                self._rewrite(self.placement)
        return self.generation

    def _rewrite(self, placement: Placement) -> None:
        """``compact="auto"`` and ``compact()``: the live entries into a new file renamed over this one,
        which this handle then appends to. The old file's lock is held until the rename is done, and
        readers that opened it keep reading it (POSIX keeps an unlinked file readable while it is open)."""
        fd, footer, root = rewrite(self.path, self._fd, self.items(), self.blob, placement, bool(self.durable))
        if self.durable:
            fsync_directory(self.path)
        old = self._fd
        self._fd = fd
        self._source = PageSource(fd, footer.end, self._source.cache_bytes)
        self._snapshot = Snapshot(self._source, [], self._index_bytes)
        self._snapshot.add(footer, root)
        self._out = Output(fd, footer.end)
        unlock_writer(old)
        os.close(old)

    def abort(self) -> None:
        """Drop the uncommitted batch: its bytes are truncated away, the last commit stays intact."""
        if self._batch is not None and self._out is not None:
            self._out.truncate(self._batch.start)
            self._batch = None

    def compact(self, dst: str | os.PathLike | None = None, *, placement: Placement | None = None) -> int:
        """Rewrite the live entries into one sorted segment at ``dst``; return how many were copied.

        Without ``dst`` a writer (mode ``a`` or ``w``, POSIX) commits its batch and rewrites its own
        file in place, through the same crash-safe path as ``compact="auto"``, then appends to it.
        """
        placement = placement or self.placement
        if dst is not None:
            from imij_plugins.imijset.compaction import compact

            return compact(self, dst, placement=placement, durable=self.durable)
        if self._out is None:
            raise ValueError("compacting in place needs a writer (mode 'a' or 'w'); a reader gives dst")
        if not POSIX:
            raise ValueError("compacting in place replaces an open file, which Windows refuses; give dst")
        self.commit()
        self._rewrite(placement)
        return self._snapshot.segments[0].footer.entries

    def close(self) -> None:
        """Commit a pending batch (writers) and release the file."""
        if self._closed:
            return
        try:
            if self._out is not None:
                self.commit()
                if self._out.reserved > self._out.position:  # the zeros reserved ahead
                    self._out.truncate(self._out.position)
        finally:
            self._release()

    def _release(self) -> None:
        self._closed = True
        self._batch = None
        try:
            if self._locked:
                unlock_writer(self._fd)
        finally:
            if self._fd >= 0:  # a remote archive has no descriptor
                os.close(self._fd)

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        """Commit on a clean exit; on an exception drop the batch, leaving the last commit intact."""
        if exc_type is None:
            self.close()
        elif not self._closed:
            try:
                self.abort()
            finally:
                self._release()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"generation {self.generation}, {self.segments} segments"
        return f"<imijset.Archive {self.path!r} mode={self.mode!r} {state}>"


def _open_remote(path: str, mode: Mode, storage_options: dict[str, Any] | None) -> RemoteBytes | None:
    """The remote bytes of an archive at a URL (read-only), or None for a local path."""
    if not is_remote(path):
        if storage_options:
            raise ValueError("storage_options apply to URLs only")
        return None
    if mode != "r":
        raise ValueError(f"an archive at a URL opens for reading only (mode 'r'), not {mode!r}")
    return RemoteBytes(path, storage_options)


def _check_reference(value: object) -> None:
    """A caller's ``imij.sequence-index`` value must be the 25-byte version-1 reference."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ValueError(f"{SEQUENCE_ATTRIBUTE} must be bytes")
    try:
        SequenceReference.parse(bytes(value))
    except ImijError as exc:
        raise ValueError(str(exc)) from None
