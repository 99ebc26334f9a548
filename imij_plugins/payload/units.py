"""Unit records (2.7): walking them, ordinals, and the unit table in its three places; and the
writers' side: record prefixes, unit table records, the payload joined in one buffer."""

from __future__ import annotations

from typing import NamedTuple

from imij_plugins.errors import Corrupt, ImijError, Unsupported
from imij_plugins.payload.head import REC_UNIT_RESERVE, REC_UNIT_TABLE, LosslessHead
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.records import Record
from imij_plugins.wire.varint import encode_varint, read_varint

UNIT_STRIPE = 9  # 2.7: lossless stripe
KNOWN_MAIN = frozenset({1, 3, 5, 7, 9, 31})  # 2.7 and the registry's unit records

# 2.7: reservation states
RESERVE_EMPTY, RESERVE_CHECK_TAIL, RESERVE_FILLED = 0, 1, 2

UNIT_TABLES = ("hint", "none", "filled", "empty", "tail")  # where a writer puts the unit spans (2.7)


def record_prefix(index: int, body_len: int, ordinals: bool) -> bytes:
    """2.7: a unit record's id and length (the length counts the ordinal when there is one)."""
    ordinal = encode_varint(index) if ordinals else b""
    return encode_varint(UNIT_STRIPE) + encode_varint(len(ordinal) + body_len) + ordinal


def check_unit_table(unit_table: str) -> None:
    """A writer's ``unit_table`` choice is one of UNIT_TABLES (checked before any coding)."""
    if unit_table not in UNIT_TABLES:
        raise ValueError(f"unit_table must be one of {UNIT_TABLES}")


def unit_table_records(spans: list[int], unit_table: str, *, width: int | None = None, padding: int = 0) -> list[Record]:
    """2.7: the head records ``unit_table`` asks for: the hint (record 10, for two or more
    units), a reservation filled in place (``width`` bytes an entry, by default the fewest that
    hold every span), left empty or pointing at the check tail (then ``padding`` zero bytes); none."""
    check_unit_table(unit_table)
    if unit_table == "hint" and len(spans) >= 2:
        return [Record(REC_UNIT_TABLE, b"".join(encode_varint(s) for s in spans))]
    if unit_table == "filled":
        width = width if width is not None else max(1, (max(spans).bit_length() + 7) // 8)
        if not 1 <= width <= 8 or any(s >> (8 * width) for s in spans):
            raise ValueError(f"unit table width {width}")
        fill = b"".join(s.to_bytes(width, "little") for s in spans)
        return [Record(REC_UNIT_RESERVE, bytes([RESERVE_FILLED, width]) + fill)]
    if unit_table in ("empty", "tail"):
        state = RESERVE_EMPTY if unit_table == "empty" else RESERVE_CHECK_TAIL
        return [Record(REC_UNIT_RESERVE, bytes([state]) + bytes(padding))]
    return []


def join_units(head: bytes, prefixes: list[bytes], bodies: list[bytes]) -> bytes:
    """The payload: the head, then each unit's prefix and body, built in one buffer with each
    body dropped from ``bodies`` once copied (the coded units are not held twice)."""
    payload = bytearray(head)
    for index, prefix in enumerate(prefixes):
        payload += prefix
        payload += bodies[index]
        bodies[index] = b""
    return bytes(payload)


class Unit(NamedTuple):
    """One main record: ``span`` covers its side record and framing, ``body`` its payload after
    any ordinal (a named tuple: one per unit of every read)."""

    span_start: int
    body_start: int
    end: int

    @property
    def span(self) -> int:
        return self.end - self.span_start


def walk_units(
    buf: bytes | bytearray | memoryview,
    head: LosslessHead,
    end: int,
    *,
    main_id: int = UNIT_STRIPE,
    errors: list[ImijError] | None = None,
) -> list[Unit]:
    """Walk the head's unit records from ``head.end``; return them and check they fill ``[.., end)``.

    ``end`` is the payload's end for a bounded DATA; for an open one, pass the file's end and
    read the returned last unit's ``end``. With ``errors`` (a partial read) the walk stops at the
    first record that breaks a rule, appends why, and returns the records before it.
    """
    count = head.geometry.unit_count
    if errors is None and count > end - head.end:  # 2.7: every unit takes at least one byte
        raise Corrupt("stripe count exceeds data")
    cur = Cursor(buf, head.end, end, "unit records")
    units: list[Unit] = []
    try:
        _walk(cur, head, count, main_id, units)
    except (Corrupt, Unsupported) as exc:
        if errors is None:
            raise
        errors.append(exc)
    return units


def _walk(cur: Cursor, head: LosslessHead, count: int, main_id: int, units: list[Unit]) -> None:
    """Append the ``count`` main records at ``cur`` to ``units``, raising at the first that breaks 2.7."""
    ordinals = bool(head.records) and head.ordinals
    for index in range(count):
        span_start = cur.pos
        rid = cur.varint("unit record id")
        if rid == main_id - 1:  # 2.7: at most one side record, id kind - 1, skipped
            cur.take(cur.varint("side record length"), "side record")
            rid = cur.varint("unit record id")
        if rid != main_id:
            if rid & 1 and rid not in KNOWN_MAIN:
                raise Unsupported(f"unknown unit record {rid}")
            raise Corrupt(f"unit record {rid} where record {main_id} is expected")
        try:  # a body's length takes several bytes: the field's name is built only for the error
            length, start = read_varint(cur.buf, cur.pos, cur.end)
        except Corrupt:
            cur.varint("unit record length")
            raise
        if length > cur.end - start:  # Cursor.sub's rule, its message built only here
            raise Corrupt(f"{cur.what}: unit record {index} runs past the end")
        cur.pos = end = start + length
        if ordinals:  # 2.7: head record 37, each main record starts with its ordinal
            body = Cursor(cur.buf, start, end, f"unit record {index}")
            ordinal = body.varint("unit record ordinal")
            if ordinal != index:
                raise Corrupt(f"unit record ordinal {ordinal} on record {index}")
            start = body.pos
        units.append(Unit(span_start, start, end))


def check_payload_end(units: list[Unit], head: LosslessHead, end: int) -> None:
    """2.7: the records fill a bounded payload exactly; bytes after the last record are Corrupt."""
    last = units[-1].end if units else head.end
    if last != end:
        raise Corrupt("bytes after the last unit record")


def head_spans(head: LosslessHead) -> tuple[list[int] | None, int | None]:
    """The unit table the head carries: ``(spans, reservation state)`` (2.7).

    spans come from record 10 or a filled reservation; the state is None without record 12.
    Entry counts and widths are checked before anything is allocated.
    """
    count = head.geometry.unit_count
    rec = head.record(REC_UNIT_TABLE)
    if rec is not None:
        return _varint_spans(rec.payload, count, "unit table"), None
    rec = head.record(REC_UNIT_RESERVE)
    if rec is None:
        return None, None
    cur = Cursor(rec.payload, what="unit table reservation")
    state = cur.u8("state")
    if state == RESERVE_FILLED:
        width = cur.u8("width")
        if not 1 <= width <= 8:
            raise Corrupt(f"unit table reservation width {width}")
        if len(rec.payload) != 2 + count * width:
            raise Corrupt("unit table length")
        spans = [cur.uint_le(width) for _ in range(count)]
        _check_entries(spans)
        return spans, state
    if state not in (RESERVE_EMPTY, RESERVE_CHECK_TAIL):
        raise Corrupt(f"unit table reservation state {state}")
    if any(rec.payload[1:]):
        raise Corrupt("unit table padding")
    return None, state


def trailing_spans(payload: bytes | memoryview, count: int) -> list[int]:
    """The spans of a trailing index's payload before its 20-byte footer (2.7)."""
    return _varint_spans(payload, count, "trailing unit index")


def _varint_spans(payload: bytes | memoryview, count: int, what: str) -> list[int]:
    spans: list[int] = []
    pos, end = 0, len(payload)
    while pos < end:
        if len(spans) == count:
            raise Corrupt("unit table length")
        value, pos = read_varint(payload, pos, end, what)
        spans.append(value)
    if len(spans) != count:
        raise Corrupt("unit table length")
    _check_entries(spans)
    return spans


def _check_entries(spans: list[int]) -> None:
    if any(s < 2 for s in spans):
        raise Corrupt("unit table entry")  # 2.7: each entry at least 2


def check_spans(spans: list[int], units: list[Unit], head: LosslessHead, data_end: int | None) -> None:
    """Compare a unit table with the walked records (2.7): the sum, then every span."""
    if data_end is not None and sum(spans) > data_end - head.end:
        raise Corrupt("unit table exceeds DATA")
    if any(s != u.span for s, u in zip(spans, units)):
        raise Corrupt("unit table does not match the records")
