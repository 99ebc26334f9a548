"""A DATA payload (section 2, 2.7): its head, its unit records and decoding them into an array."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from imij_plugins.container.chunks import MeasureOpen
from imij_plugins.container.header import Header
from imij_plugins.errors import Corrupt, ImijError, Unsupported
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.head import LosslessHead, read_lossless_head
from imij_plugins.payload.parallel import default_threads, parallel_map
from imij_plugins.payload.quick.unit import decode_quick_unit
from imij_plugins.payload.units import (
    RESERVE_CHECK_TAIL,
    Unit,
    check_payload_end,
    check_spans,
    head_spans,
    trailing_spans,
    walk_units,
)
from imij_plugins.wire.cursor import Cursor

INDEX_FOOTER = 20  # 2.7: data_len u64, chunk_len u64, "uIDX"

# Units go to the pool when the work of the decode, estimated as samples + 4 x body bytes (about
# a millisecond at this size on one core), outweighs handing them out: a helper thread wakes in
# tens of microseconds, and the units' Python parts share one GIL.
PARALLEL_WORK = 3 << 17
BYTE_WORK = 4  # a body byte costs about as much as four samples (rANS words, tokens)


class UnitDecoder(Protocol):
    """The one interface every lossless unit coding implements: one unit record's body in, pixels out."""

    def decode_unit(
        self, body: memoryview, width: int, height: int, reference: np.ndarray | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """The unit's (height, width, C) samples; ``reference`` is the previous canvas under it.

        With ``out`` (shape (height, width, C), the header's dtype, any strides: the unit's
        rectangle of the image) the samples go there and ``out`` is returned, so no unit-sized
        copy is made; else a new array."""
        ...


@dataclass(frozen=True)
class QuickUnits:
    """Quick-pixel units (2.13, 2.13.1): raw, packet or bit-smart bodies."""

    channels: int
    dtype: np.dtype
    bit_smart: bool

    def decode_unit(
        self, body: memoryview, width: int, height: int, reference: np.ndarray | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        direct = out is not None and out.dtype == self.dtype and out.flags.c_contiguous  # a full-width stripe
        into = memoryview(out).cast("B") if direct else None
        samples = decode_quick_unit(body, width * height, self.channels, self.dtype.itemsize, bit_smart=self.bit_smart, into=into)
        if direct:
            return out
        pixels = np.frombuffer(samples, dtype=self.dtype).reshape(height, width, self.channels)
        if out is None:
            return pixels
        out[...] = pixels  # a column group's rectangle: one copy
        return out


@dataclass
class DataPayload:
    """A parsed, framing-checked lossless payload; ``end`` is where its last record ends.

    A partial read may hold fewer ``units`` than the geometry names (``walk_error`` says why the
    walk stopped) and fills ``missing`` (walked units under a bad cSUM piece) and ``errors``
    (rules the payload breaks outside any one unit, e.g. its unit table).
    """

    buf: bytes | bytearray | memoryview
    header: Header
    head: LosslessHead
    units: list[Unit]
    end: int
    decoder: UnitDecoder
    walk_error: ImijError | None = None
    missing: dict[int, ImijError] = field(default_factory=dict)
    errors: list[ImijError] = field(default_factory=list)

    def decode_into(
        self,
        out: np.ndarray,
        indices: list[int] | None = None,
        threads: int | None = None,
        origin: tuple[int, int] = (0, 0),
        reference: np.ndarray | None = None,
        failures: dict[int, ImijError] | None = None,
    ) -> None:
        """Decode units ``indices`` (default: all) into ``out``, shape (H, W, C), the header's dtype.

        ``out[0, 0]`` is image pixel ``origin``, so a region read decodes into a smaller box.
        ``reference`` is the previous canvas under the whole image, for inter frames (section 4).
        Units share nothing (2.3, 2.13), so they decode on a thread pool; the C kernels release
        the GIL. With ``failures`` (a partial read, ``out`` zeroed by the caller), units the walk
        did not reach are skipped, and a walked unit that does not decode is zeroed and recorded
        there by index instead of raising.
        """
        reached = len(self.units)
        if reached == 1 and indices is None:  # one unit (most small images): inline, no pool or closure
            self._decode_unit(0, out, origin, reference, failures)
            return
        todo = list(range(reached)) if indices is None else [i for i in indices if i < reached]
        workers = threads if threads is not None else default_threads()
        if workers > 1 and len(todo) > 1:  # one unit runs inline (parallel_map): no estimate needed
            work = out.size + BYTE_WORK * sum(self.units[i].end - self.units[i].body_start for i in todo)
            if work < PARALLEL_WORK:
                workers = 1
        parallel_map(lambda j: self._decode_unit(todo[j], out, origin, reference, failures), len(todo), workers)

    def _decode_unit(
        self,
        index: int,
        out: np.ndarray,
        origin: tuple[int, int],
        reference: np.ndarray | None,
        failures: dict[int, ImijError] | None,
    ) -> None:
        """Decode unit ``index`` into its rectangle of ``out`` (zeros and a record when it fails, partial)."""
        x, y, w, h = self.head.geometry.unit_rect(index)
        if out.shape[0] == h and out.shape[1] == w and (x, y) == origin:  # the unit is the whole of out: no view
            target = out
        else:
            target = out[y - origin[1] : y - origin[1] + h, x - origin[0] : x - origin[0] + w]
        try:
            if self.missing and index in self.missing:
                raise self.missing[index]
            unit = self.units[index]
            ref = None if reference is None else reference[y : y + h, x : x + w]
            with memoryview(self.buf)[unit.body_start : unit.end] as body:
                # released on the way out: an error's traceback keeps the frames that saw it, and a
                # live view of a mapped file keeps ImijFile.close from unmapping it
                self.decoder.decode_unit(body, w, h, ref, out=target)  # straight into its rectangle
        except (Corrupt, Unsupported) as exc:
            if failures is None:
                raise
            target[...] = 0  # 2.3: units share nothing, so the others still decode
            failures[index] = exc


def unit_decoder(header: Header, head: LosslessHead) -> UnitDecoder:
    """The decoder of this head's units: quick-pixel units (2.13), else entropy coded, whose maps,
    models and head records are checked once here, before any unit decodes."""
    if head.quick:
        return QuickUnits(header.channel_count, np.dtype(header.sample_type.dtype), head.bit_smart)
    return prepare(header, head)


def read_data(
    buf: bytes | bytearray | memoryview,
    header: Header,
    start: int,
    end: int,
    *,
    bounded: bool = True,
    trailing_index: memoryview | None = None,
    partial: bool = False,
    bad_ranges: Sequence[tuple[int, int]] = (),
) -> DataPayload:
    """Parse DATA's payload at ``[start, end)`` and check its unit records and unit table (2, 2.7).

    For an open DATA (``bounded=False``) ``end`` is the file's end and the payload ends with its
    last unit record. ``trailing_index`` is the payload of a found uIDX chunk (2.7), if any.
    ``partial`` (the head must still parse): the walk stops at a record that breaks the rules
    (``walk_error``), units under a ``bad_ranges`` byte range (mismatching cSUM pieces) go to
    ``missing``, and other rule breaks to ``errors``, instead of raising.
    """
    if header.coding != 0:
        raise Unsupported("lossy payloads are not implemented")
    head = read_lossless_head(Cursor(buf, start, end, "DATA head"), header)
    decoder = unit_decoder(header, head)
    walk_errors: list[ImijError] | None = [] if partial else None
    units = walk_units(buf, head, end, errors=walk_errors)
    payload = DataPayload(buf, header, head, units, units[-1].end if units else head.end, decoder)
    if not walk_errors:
        try:
            _check_records(payload, start, end, bounded, trailing_index)
        except Corrupt as exc:
            if not partial:
                raise
            payload.errors.append(exc)
    if walk_errors:
        payload.walk_error = walk_errors[0]
    if partial:
        _mark_missing(payload, start, bad_ranges)
    return payload


def _check_records(
    payload: DataPayload, start: int, end: int, bounded: bool, trailing_index: memoryview | None
) -> None:
    """2.7: the records fill a bounded payload, and the unit table in use matches them."""
    head, units = payload.head, payload.units
    if bounded:
        check_payload_end(units, head, end)
    if not head.records:  # no unit table in the head, none to check
        return
    spans, state = head_spans(head)
    if spans is not None:
        check_spans(spans, units, head, payload.end)
    elif state == RESERVE_CHECK_TAIL and trailing_index is not None:
        _check_trailing_index(trailing_index, units, head, payload.end - start)


def _mark_missing(payload: DataPayload, start: int, bad_ranges: Sequence[tuple[int, int]]) -> None:
    """A partial read's walked units under a mismatching cSUM piece (1.4): none of them is trusted."""
    mismatch = Corrupt("file checksum mismatch")
    for lo, hi in bad_ranges:
        if lo < payload.head.end and hi > start:
            payload.errors.append(mismatch)  # the head's bytes: every unit is suspect, none known bad
        for index, unit in enumerate(payload.units):
            if lo < unit.end and hi > unit.span_start:
                payload.missing[index] = mismatch


def _check_trailing_index(index: memoryview, units: list[Unit], head: LosslessHead, data_len: int) -> None:
    """2.7: a found trailing index is bound to DATA by data_len and checked like head record 10."""
    if int.from_bytes(index[-INDEX_FOOTER:-12], "little") != data_len:
        raise Corrupt("unit index for another DATA")
    spans = trailing_spans(index[:-INDEX_FOOTER], head.geometry.unit_count)
    if sum(spans) != sum(u.span for u in units):
        raise Corrupt("unit table does not match the records")
    check_spans(spans, units, head, None)


def measure_open_data(header: Header, partial: bool = False) -> MeasureOpen:
    """A chunk measurer that finds where an open DATA ends (1.1); in a partial read, an open
    DATA whose head or records break off runs to the file's end."""

    def measure(tag: bytes, buf: bytes | bytearray | memoryview, start: int, end: int) -> int:
        if not partial:
            return read_data(buf, header, start, end, bounded=False).end
        try:
            payload = read_data(buf, header, start, end, bounded=False, partial=True)
        except Corrupt:
            return end
        return end if payload.walk_error is not None else payload.end

    return measure
