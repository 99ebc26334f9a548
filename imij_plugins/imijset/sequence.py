"""The optional sequence seek blob (IMIJSEQ): the reference attribute, the blob's header and records.

Optional sequence seek blob: the index "is an ordinary blob; it uses no special archive page, IMIJ
record or feature bit", bound to the encoded image bytes by length and XXH3-64. Opening reads its
40-byte header; a positional lookup reads one 48-byte record.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import xxhash

from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported
from imij_plugins.imijset.columns import U64_MAX
from imij_plugins.imijset.entries import Entry
from imij_plugins.imijset.metadata import BYTES

ATTRIBUTE = "imij.sequence-index"
MAGIC = b"IMIJSEQ\x01"
HEADER_SIZE = 40
RECORD_SIZE = 48
ABSENT = U64_MAX  # "u64::MAX for an empty legacy update" / "for independent reconstruction"
_REFERENCE = struct.Struct("<B3Q")  # "Its 25 bytes are version 1 (u8), index-entry key, index-blob length and XXH3-64"
_HEADER = struct.Struct("<8s3Q")
_RECORD = struct.Struct("<6Q")
_RECORD_FIELDS = struct.Struct("<5Q")
_U64 = struct.Struct("<Q")
FLAG_RASTER_HASH = 1  # "bit 0 indicates that field 4 is present; other bits reject"


@dataclass(frozen=True)
class SequenceReference:
    """The ``imij.sequence-index`` attribute: which entry holds the index, and its length and digest."""

    index_key: int
    length: int
    digest: int

    def encode(self) -> bytes:
        return _REFERENCE.pack(1, self.index_key, self.length, self.digest)

    @classmethod
    def from_entry(cls, entry: Entry) -> SequenceReference | None:
        """The reference an entry carries, or None; the attribute must be typed bytes of 25 bytes."""
        for key, kind, value in entry.metadata.attributes:
            if key == ATTRIBUTE:
                if kind != BYTES:  # "the typed bytes attribute imij.sequence-index"
                    raise Corrupt(f"entry {entry.key}: {ATTRIBUTE} is not a bytes attribute")
                return cls.parse(value)  # type: ignore[arg-type]
        return None

    @classmethod
    def parse(cls, value: bytes) -> SequenceReference:
        if len(value) != _REFERENCE.size:
            raise Corrupt(f"{ATTRIBUTE}: {len(value)} bytes, expected {_REFERENCE.size}")
        version, key, length, digest = _REFERENCE.unpack(value)
        if version != 1:
            raise Unsupported(f"{ATTRIBUTE}: version {version}")
        return cls(key, length, digest)


@dataclass(frozen=True)
class SequenceRecord:
    """One item: its byte range in the image file (None for an empty update), reference and raster hash."""

    offset: int | None
    length: int
    reference: int | None = None
    raster_hash: int | None = None

    def encode(self, ordinal: int) -> bytes:
        fields = (
            ABSENT if self.offset is None else self.offset,
            self.length,
            ABSENT if self.reference is None else self.reference,
            self.raster_hash or 0,
            FLAG_RASTER_HASH if self.raster_hash is not None else 0,
        )
        body = _RECORD_FIELDS.pack(*fields)
        # field 6: "XXH3-64 of the ordinal as eight little-endian bytes followed by fields 1-5"
        return body + _U64.pack(xxhash.xxh3_64_intdigest(_U64.pack(ordinal) + body))


@dataclass(frozen=True)
class SequenceHeader:
    """The 40-byte header: the bound image file's length and digest, and the record count."""

    file_length: int
    file_digest: int
    count: int


def encode_sequence_index(image: bytes, records: Sequence[SequenceRecord]) -> bytes:
    """The index blob for ``image``; records that break a rule raise ValueError."""
    if not records:
        raise ValueError("a sequence index needs at least the primary record")
    head = _HEADER.pack(MAGIC, len(image), xxhash.xxh3_64_intdigest(image), len(records))
    out = [head, _U64.pack(xxhash.xxh3_64_intdigest(head))]
    header = SequenceHeader(len(image), 0, len(records))
    for ordinal, record in enumerate(records):
        raw = record.encode(ordinal)
        try:
            parse_record(raw, ordinal, header)
        except ImijError as exc:
            raise ValueError(str(exc)) from None
        out.append(raw)
    return b"".join(out)


def parse_header(buf: bytes, blob_length: int) -> SequenceHeader:
    """The 40-byte header, checked against the index blob's length."""
    if len(buf) < HEADER_SIZE:
        raise Corrupt(f"sequence index: {len(buf)} bytes, shorter than its header")
    magic, file_length, file_digest, count = _HEADER.unpack_from(buf)
    if magic != MAGIC:  # "IMIJSEQ followed by byte 1"
        raise Corrupt("sequence index: bad magic")
    if _U64.unpack_from(buf, 32)[0] != xxhash.xxh3_64_intdigest(buf[:32]):
        raise Corrupt("sequence index: header digest mismatch")
    if count == 0:  # "positive image count"
        raise Corrupt("sequence index: zero images")
    # "Its length is exactly 40 + 48 * count, with checked arithmetic." (Python integers do not wrap)
    if blob_length != HEADER_SIZE + RECORD_SIZE * count:
        raise Corrupt(f"sequence index: {blob_length} bytes for {count} records")
    return SequenceHeader(file_length, file_digest, count)


def parse_record(buf: bytes, ordinal: int, header: SequenceHeader) -> SequenceRecord:
    """Record ``ordinal``, checked by every rule that needs only it and the header."""
    offset, length, reference, raster, flags, digest = _RECORD.unpack(buf)
    what = f"sequence index record {ordinal}"
    if digest != xxhash.xxh3_64_intdigest(_U64.pack(ordinal) + buf[:40]):
        raise Corrupt(f"{what}: digest mismatch")
    if flags & ~FLAG_RASTER_HASH:
        raise Corrupt(f"{what}: unknown flag bits 0x{flags & ~FLAG_RASTER_HASH:x}")
    has_hash = bool(flags & FLAG_RASTER_HASH)
    if not has_hash and raster:  # field 4: "Explicit reference-raster hash, or zero when absent"
        raise Corrupt(f"{what}: a raster hash without its flag")
    if reference != ABSENT and reference >= ordinal:
        # "every reference ordinal is strictly smaller than the item's ordinal"
        raise Corrupt(f"{what}: reference {reference} is not an earlier item")
    if has_hash and reference == ABSENT:  # "Reference hashes require a reference"
        raise Corrupt(f"{what}: a reference-raster hash without a reference")
    if ordinal == 0:
        # "The primary record covers the entire image file and is independent."
        if offset != 0 or length != header.file_length or reference != ABSENT:
            raise Corrupt(f"{what}: the primary record must cover the whole image file independently")
    elif offset == ABSENT:
        # "Empty records require an earlier reference and zero length."
        if length != 0 or reference == ABSENT:
            raise Corrupt(f"{what}: an empty update needs zero length and a reference")
    elif length == 0 or offset + length > header.file_length:
        # "zero only for an empty update"; "Other nonempty ranges must lie within that file."
        raise Corrupt(f"{what}: range {offset}+{length} is empty or outside the {header.file_length}-byte file")
    return SequenceRecord(
        None if offset == ABSENT else offset,
        length,
        None if reference == ABSENT else reference,
        raster if has_hash else None,
    )


class SequenceIndex:
    """An opened seek index: the checked header, and records read one at a time."""

    def __init__(self, read_at: Callable[[int, int], bytes], image: Entry, index: Entry):
        self._read_at = read_at
        self.image = image
        self.index = index
        self.header = parse_header(read_at(index.offset, min(index.length, HEADER_SIZE)), index.length)
        # "It binds to encoded image bytes, not decoded pixels."
        if self.header.file_length != image.length or self.header.file_digest != image.digest:
            raise Corrupt(f"sequence index of entry {image.key}: bound to other image bytes")

    def __len__(self) -> int:
        return self.header.count

    def record(self, ordinal: int) -> SequenceRecord:
        """Record ``ordinal`` (one 48-byte read; the whole blob's digest is checked by ``verify``)."""
        if not 0 <= ordinal < self.header.count:
            raise IndexError(f"sequence item {ordinal} out of range ({self.header.count} items)")
        at = self.index.offset + HEADER_SIZE + RECORD_SIZE * ordinal
        return parse_record(self._read_at(at, RECORD_SIZE), ordinal, self.header)

    def chain(self, ordinal: int, max_steps: int) -> list[int]:
        """The ordinals ``ordinal`` depends on, itself first, ending at an independent item.

        "These conditions reject cycles but do not bound traversal length; applications set their
        own cache and work budgets": more than ``max_steps`` references is TooLarge.
        """
        out = [ordinal]
        record = self.record(ordinal)
        while record.reference is not None:
            if len(out) > max_steps:
                raise TooLarge(f"sequence item {ordinal}: dependency chain longer than {max_steps}")
            out.append(record.reference)
            record = self.record(record.reference)
        return out

    def span(self, ordinal: int) -> bytes:
        """The encoded bytes of item ``ordinal`` within the image file (empty for an empty update)."""
        record = self.record(ordinal)
        if record.offset is None:
            return b""
        return self._read_at(self.image.offset + record.offset, record.length)

    def verify(self) -> None:
        """The whole blob's digest and every record ("Partial reads do not verify the full blob digest")."""
        blob = self._read_at(self.index.offset, self.index.length)
        if xxhash.xxh3_64_intdigest(blob) != self.index.digest:
            raise Corrupt(f"sequence index entry {self.index.key}: blob digest mismatch")
        for ordinal in range(self.header.count):
            at = HEADER_SIZE + RECORD_SIZE * ordinal
            parse_record(blob[at : at + RECORD_SIZE], ordinal, self.header)
