"""Hand-built IMIJ-set bytes straight from the spec's grammar, independent of the package's writer.

Only varints come from imij_plugins.wire (tested on their own in tests/wire).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from imij_plugins.wire import encode_varint as varint

U64_MAX = (1 << 64) - 1
FOOTER_MAGIC = b"IMIJSET\x01"


def xxh(data: bytes) -> int:
    return xxhash.xxh3_64_intdigest(data)


@dataclass
class E:
    """One leaf entry as the spec's columns describe it."""

    key: int
    offset: int = 0
    length: int = 0
    digest: int = 0
    hint: int = 0
    summary: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)
    cicp: tuple[int, int, int, int] | None = None
    images: int = 0
    meta: bytes = b""


def summary_bytes(s: tuple[int, ...]) -> bytes:
    w, h, c, sa, co, mask = s
    return varint(w) + varint(h) + bytes((c, sa, co)) + varint(mask)


def leaf_columns(entries: list[E]) -> list[bytes]:
    """Columns 1-6 of a basic leaf."""
    keys = [e.key for e in entries]
    offs = [e.offset for e in entries]
    return [
        b"".join(varint(k - p) for k, p in zip(keys, [0] + keys[:-1])),
        b"".join(varint(o - p) for o, p in zip(offs, [0] + offs[:-1])),
        b"".join(varint(e.length) for e in entries),
        b"".join(varint(e.hint) for e in entries),
        b"".join(struct.pack("<Q", e.digest) for e in entries),
        b"".join(summary_bytes(e.summary) for e in entries),
    ]


def extras_column(entries: list[E]) -> bytes:
    out = b""
    for e in entries:
        out += (b"\x01" + bytes(e.cicp) if e.cicp is not None else b"\x00") + varint(e.images)
    return out


def meta_column(entries: list[E]) -> bytes:
    return b"".join(varint(len(e.meta)) + e.meta for e in entries)


def page(kind: int, level: int, count: int, columns: list[bytes]) -> bytes:
    """Page header, column lengths, columns."""
    return struct.pack("<BBH", kind, level, count) + b"".join(varint(len(c)) for c in columns) + b"".join(columns)


def basic_leaf(entries: list[E], **override: bytes) -> bytes:
    cols = leaf_columns(entries)
    return page(0, 0, len(entries), _override(cols, override))


def metadata_leaf(entries: list[E], **override: bytes) -> bytes:
    cols = leaf_columns(entries) + [extras_column(entries), meta_column(entries)]
    return page(2, 0, len(entries), _override(cols, override))


def dictionary_leaf(entries: list[E], tokenized: list[bytes], strings: list[bytes], **override: bytes) -> bytes:
    """Kind 3: columns 1-7 as a metadata leaf, column 8 tokenized payloads, column 9 the dictionary."""
    cols = leaf_columns(entries) + [extras_column(entries)]
    cols.append(b"".join(varint(len(t)) + t for t in tokenized))
    cols.append(varint(len(strings)) + b"".join(varint(len(s)) + s for s in strings))
    return page(3, 0, len(entries), _override(cols, override))


def _override(cols: list[bytes], override: dict[str, bytes]) -> list[bytes]:
    for name, data in override.items():
        cols[int(name[1:]) - 1] = data  # c1 .. c9
    return cols


@dataclass
class D:
    """A branch child descriptor."""

    max_key: int
    offset: int
    length: int
    digest: int
    width: tuple[int, int] = (0, 0)
    height: tuple[int, int] = (0, 0)
    cicp: tuple[int, int] = (0, 0)
    name: tuple[int, int] = (0, 0)


def branch(kind: int, level: int, children: list[D], count: int | None = None) -> bytes:
    out = struct.pack("<BBH", kind, level, len(children) if count is None else count)
    for c in children:
        out += struct.pack("<4Q", c.max_key, c.offset, c.length, c.digest)
        if kind >= 4:
            out += struct.pack("<4I", *c.width, *c.height)
        if kind >= 5:
            out += struct.pack("<2I", *c.cicp)
        if kind == 6:
            out += c.name[0].to_bytes(16, "big") + c.name[1].to_bytes(16, "big")
    return out


def footer_bytes(
    end: int, previous: int, root: tuple[int, int, int], entries: int, level: int, generation: int, magic: bytes = FOOTER_MAGIC
) -> bytes:
    body = magic + struct.pack("<8Q", end, previous, *root, entries, level, generation)
    return body + struct.pack("<Q", xxh(body))


@dataclass
class FileBuilder:
    """Appends blobs, pages and footers, tracking offsets as a writer would."""

    buf: bytearray = field(default_factory=bytearray)
    last_end: int = U64_MAX
    generation: int = 0

    def blob(self, data: bytes, key: int, **fields: object) -> E:
        offset = len(self.buf)
        self.buf += data
        return E(key, offset, len(data), xxh(data), **fields)  # type: ignore[arg-type]

    def page(self, data: bytes) -> tuple[int, int, int]:
        offset = len(self.buf)
        self.buf += data
        return offset, len(data), xxh(data)

    def commit(self, root: tuple[int, int, int], entries: int, level: int = 0, **footer: object) -> bytes:
        """Append a footer for ``root``; ``footer`` overrides any field (end, previous, generation, magic)."""
        self.generation += 1
        fields = dict(
            end=len(self.buf) + 80, previous=self.last_end, root=root, entries=entries, level=level, generation=self.generation
        )
        fields.update(footer)
        data = footer_bytes(**fields)  # type: ignore[arg-type]
        self.buf += data
        self.last_end = len(self.buf)
        return data

    def write(self, path: Path) -> Path:
        path.write_bytes(bytes(self.buf))
        return path


def single_leaf_archive(entries_data: list[tuple[int, bytes]], kind: int = 0, metas: dict[int, bytes] | None = None) -> FileBuilder:
    """Blobs, one leaf (basic or metadata) as the root, a footer."""
    fb = FileBuilder()
    entries = [fb.blob(data, key) for key, data in entries_data]
    for e in entries:
        e.meta = (metas or {}).get(e.key, b"")
    root = fb.page(basic_leaf(entries) if kind == 0 else metadata_leaf(entries))
    fb.commit(root, len(entries))
    return fb
