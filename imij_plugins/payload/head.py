"""The lossless payload head (section 2): presence, lanes, stripes, groups, maps, models, records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

from imij_plugins.container.header import Header
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.payload.geometry import Geometry
from imij_plugins.registry.features import FeatureId
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.records import Record, encode_records, read_records
from imij_plugins.wire.varint import encode_varint

# 2: head presence bits
PRESENT_PALETTE = 1 << 0
PRESENT_RECORDS = 1 << 1
PRESENT_QUICK = 1 << 3
PRESENT_BIT_SMART = 1 << 4
PRESENT_KNOWN = PRESENT_PALETTE | PRESENT_RECORDS | PRESENT_QUICK | PRESENT_BIT_SMART

# 2: head record ids
REC_UNIT_TABLE = 10
REC_UNIT_RESERVE = 12
REC_NEAR = 19
REC_BILEVEL = 25
REC_TEMPLATE = 35
REC_ORDINALS = 37
_GATES = {REC_NEAR: FeatureId.NEAR_LOSSLESS, REC_BILEVEL: FeatureId.BILEVEL, REC_TEMPLATE: FeatureId.TEMPLATE_PALETTES}


class ChannelMap(NamedTuple):
    """One coded channel's map (2.1): mode, coded bits, value and, for mode 9, its value table
    (a named tuple: cheap to make and to hash, which every read does)."""

    mode: int
    bits: int
    value: int
    table: tuple[int, ...] = ()


@dataclass
class LosslessHead:
    """A parsed lossless head; ``end`` is where the first unit record starts."""

    present: int
    lanes: int
    geometry: Geometry
    maps: list[ChannelMap] = field(default_factory=list)
    models: bytes = b""
    records: list[Record] = field(default_factory=list)
    end: int = 0

    @property
    def quick(self) -> bool:
        return bool(self.present & PRESENT_QUICK)

    @property
    def bit_smart(self) -> bool:
        return bool(self.present & PRESENT_BIT_SMART)

    def record(self, rid: int) -> Record | None:
        for r in self.records:
            if r.id == rid:
                return r
        return None

    @property
    def ordinals(self) -> bool:
        """Head record 37: main unit records start with their ordinal (2.7)."""
        return self.record(REC_ORDINALS) is not None


def coded_channels(header: Header) -> int:
    """2.1: 64-bit samples code each channel as a hi and a lo 32-bit word."""
    n = header.channel_count
    return 2 * n if header.sample_type.bits == 64 else n


def map_value_bytes(header: Header) -> int:
    """2.1: a map's value is a u16, or a u32 for 32- and 64-bit samples."""
    return 4 if header.sample_type.bits >= 32 else 2


def write_lossless_head(present: int, lanes: int, geometry: Geometry, records: Sequence[Record] = (),
                        maps: Sequence[ChannelMap] = (), models: bytes = b"", value_bytes: int = 2) -> bytes:
    """2 / 2.1: the bytes ``read_lossless_head`` reads, for both writers. Present bit 1 is set
    when there are ``records`` (in increasing id order); ``maps`` and ``models`` are written
    outside quick heads only (2.13), map values in ``value_bytes`` (``map_value_bytes``)."""
    if records:
        present |= PRESENT_RECORDS
    head = bytearray(encode_varint(present))
    head.append(lanes)
    head += encode_varint(geometry.stripe_rows) + encode_varint(geometry.group_cols)
    if not present & PRESENT_QUICK:
        for cmap in maps:  # 2.1: mode u8, bits u8, value, then mode 9's table
            head += bytes([cmap.mode, cmap.bits]) + cmap.value.to_bytes(value_bytes, "little")
            prev = -1
            for entry in cmap.table:  # mode 9 only: the first entry, then each gap - 1
                head += encode_varint(entry - prev - 1)
                prev = entry
        head += encode_varint(len(models)) + models
    if records:
        rec_bytes = encode_records(list(records))
        head += encode_varint(len(rec_bytes)) + rec_bytes
    return bytes(head)


def read_lossless_head(cur: Cursor, header: Header) -> LosslessHead:
    """Parse and check the head of a lossless DATA payload of the image ``header`` describes."""
    present = cur.varint("head present")
    if present & ~PRESENT_KNOWN:  # 2: other bits Unsupported
        raise Unsupported(f"lossless head presence bits 0x{present & ~PRESENT_KNOWN:x}")
    quick = bool(present & PRESENT_QUICK)
    if quick and FeatureId.QUICK_PIXELS not in header.features:  # 0.1: gated syntax
        raise Corrupt("quick-pixel head bit without feature quick_pixels")
    if present & PRESENT_BIT_SMART and (not quick or FeatureId.QUICK_BIT_SMARTS not in header.features):
        raise Corrupt("bit-smart head bit without head bit 3 or feature quick_bit_smarts")  # 2.13.1
    if quick and present & PRESENT_PALETTE:  # 2.13: palette syntax must not accompany quick coding
        raise Corrupt("palette stripes with quick-pixel units")
    lanes = cur.u8("lanes")
    if not 1 <= lanes <= 16:  # 2
        raise Corrupt(f"lanes {lanes} outside 1 ..= 16")
    if quick and lanes != 1:  # 2.13: lanes MUST be 1
        raise Corrupt(f"quick-pixel head with {lanes} lanes")
    stripe_rows = cur.varint("stripe_rows")
    if stripe_rows == 0:
        raise Corrupt("stripe_rows is 0")
    group_cols = cur.varint("group_cols")
    if group_cols and not 1 <= group_cols <= header.width - 1:  # 2, 2.3
        raise Corrupt(f"group_cols {group_cols} outside 1 ..= width - 1")
    maps: list[ChannelMap] = []
    models = b""
    records: list[Record] = []
    if not quick:  # 2.13: maps, models_len and models are absent in quick payloads
        maps = _read_maps(cur, header)
        models = bytes(cur.take(cur.varint("models_len"), "models"))
    if present & PRESENT_RECORDS:
        records = read_records(cur.sub(cur.varint("records_len"), "head records"))
    head = LosslessHead(present, lanes, Geometry(header.width, header.height, stripe_rows, group_cols), maps, models,
                        records, cur.pos)
    if records:
        _check_head_records(head, header.features)
    return head


MAPS_CACHE = 64  # parsed map lists kept, by their bytes: like files share maps
_maps: dict[tuple[bytes, int], tuple[ChannelMap, ...]] = {}


def _read_maps(cur: Cursor, header: Header) -> list[ChannelMap]:
    """2.1: every coded channel's map, read by ``_read_map``. A list without a value table (modes
    0-8: each map 2 + value_bytes bytes) is kept by its bytes, so like files parse it once."""
    value_bytes = map_value_bytes(header)
    count, step = coded_channels(header), 2 + value_bytes
    pos = cur.pos
    stop = pos + count * step
    raw = bytes(cur.buf[pos:stop])
    maps = _maps.get((raw, value_bytes)) if stop <= cur.end else None  # a cut list is read, and refused
    if maps is not None:
        cur.pos = stop
        return list(maps)
    read = [_read_map(cur, header, value_bytes) for _ in range(count)]
    if cur.pos == stop:  # no value table (mode 9's entries follow its fields)
        if len(_maps) >= MAPS_CACHE:
            _maps.clear()
        _maps[raw, value_bytes] = tuple(read)
    return read


def _read_map(cur: Cursor, header: Header, value_bytes: int) -> ChannelMap:
    """2.1: mode u8, bits u8, value (u16, or u32 for 32- and 64-bit samples: ``value_bytes``),
    mode 9's table."""
    pos, buf = cur.pos, cur.buf
    if cur.end - pos >= 2 + value_bytes and buf[pos] <= 9:  # the fields are there: one slice
        mode, bits = buf[pos], buf[pos + 1]
        value = int.from_bytes(buf[pos + 2 : pos + 2 + value_bytes], "little")
        cur.pos = pos + 2 + value_bytes
    else:  # field by field, for the error that names the field
        mode = cur.u8("map mode")
        if mode > 9:  # 0.3: map mode is closed
            raise Corrupt(f"channel map mode {mode}")
        bits = cur.u8("map bits")
        value = cur.uint_le(value_bytes, "map value")
    table: tuple[int, ...] = ()
    if mode == 9:
        if FeatureId.VALUE_TABLES not in header.features:
            raise Corrupt("map mode 9 without feature value_tables")
        if value >= 65536:
            raise Corrupt("value table with more than 65536 entries")
        gaps = cur.varints(value + 1, "value table entry")  # the first entry, then each gap - 1
        table = tuple(accumulate(gaps, lambda entry, gap: entry + 1 + gap))
    return ChannelMap(mode, bits, value, table)


def _check_head_records(head: LosslessHead, features: frozenset[int]) -> None:
    """2 and 2.7: known ids, their gates, and the records quick payloads must not carry."""
    for rec in head.records:
        rid = rec.id
        if rid in _GATES:
            if _GATES[rid] not in features:  # 0.1: gated syntax without its feature
                raise Corrupt(f"head record {rid} without feature {_GATES[rid].name.lower()}")
            if head.quick:  # 2.13: near-lossless and bilevel syntax must not accompany quick coding
                raise Corrupt(f"head record {rid} in a quick-pixel payload")
        elif rid == REC_ORDINALS:
            if FeatureId.UNIT_ORDINALS not in features:
                raise Corrupt("head record 37 without feature unit_ordinals")  # 2.7
            if rec.payload:
                raise Corrupt("head record 37 with a non-empty payload")  # 2.7
        elif rid in (REC_UNIT_TABLE, REC_UNIT_RESERVE):
            continue
        elif rec.critical:
            raise Unsupported(f"unknown critical head record {rid}")
    if head.record(REC_UNIT_TABLE) and head.record(REC_UNIT_RESERVE):
        raise Corrupt("unit table twice: head records 10 and 12")  # 2.7
