"""A DATA payload (section 2, 2.7): its head, its unit records and decoding them into an array."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from imij_plugins.container.header import Header
from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.payload.head import LosslessHead, read_lossless_head
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


@dataclass
class DataPayload:
    """A parsed, framing-checked lossless payload; ``end`` is where its last record ends."""

    buf: bytes | bytearray | memoryview
    header: Header
    head: LosslessHead
    units: list[Unit]
    end: int

    def decode_into(
        self,
        out: np.ndarray,
        indices: list[int] | None = None,
        threads: int | None = None,
        origin: tuple[int, int] = (0, 0),
    ) -> None:
        """Decode units ``indices`` (default: all) into ``out``, shape (H, W, C), the header's dtype.

        ``out[0, 0]`` is image pixel ``origin``, so a region read decodes into a smaller box.

        Units share nothing (2.3, 2.13), so they decode on a thread pool; the C kernels release
        the GIL.
        """
        if not self.head.quick:
            raise Unsupported("entropy-coded lossless payloads are not implemented yet (quick-pixel units only)")
        todo = list(range(len(self.units))) if indices is None else indices
        workers = min(len(todo), threads if threads is not None else (os.cpu_count() or 1))
        if workers <= 1:
            for i in todo:
                self._decode_unit(i, out, origin)
            return
        with ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(lambda i: self._decode_unit(i, out, origin), todo):
                pass

    def _decode_unit(self, index: int, out: np.ndarray, origin: tuple[int, int]) -> None:
        x, y, w, h = self.head.geometry.unit_rect(index)
        x -= origin[0]
        y -= origin[1]
        unit = self.units[index]
        body = memoryview(self.buf)[unit.body_start : unit.end]
        channels = out.shape[2]
        samples = decode_quick_unit(
            body, w * h, channels, out.dtype.itemsize, bit_smart=self.head.bit_smart
        )
        out[y : y + h, x : x + w] = np.frombuffer(samples, dtype=out.dtype).reshape(h, w, channels)


def read_data(
    buf: bytes | bytearray | memoryview,
    header: Header,
    start: int,
    end: int,
    *,
    bounded: bool = True,
    trailing_index: memoryview | None = None,
) -> DataPayload:
    """Parse DATA's payload at ``[start, end)`` and check its unit records and unit table (2, 2.7).

    For an open DATA (``bounded=False``) ``end`` is the file's end and the payload ends with its
    last unit record. ``trailing_index`` is the payload of a found uIDX chunk (2.7), if any.
    """
    if header.coding != 0:
        raise Unsupported("lossy payloads are not implemented")
    head = read_lossless_head(Cursor(buf, start, end, "DATA head"), header)
    units = walk_units(buf, head, end)
    payload_end = units[-1].end if units else head.end
    if bounded:
        check_payload_end(units, head, end)
    spans, state = head_spans(head)
    if spans is not None:
        check_spans(spans, units, head, payload_end)
    elif state == RESERVE_CHECK_TAIL and trailing_index is not None:
        _check_trailing_index(trailing_index, units, head, payload_end - start)
    return DataPayload(buf, header, head, units, payload_end)


def _check_trailing_index(index: memoryview, units: list[Unit], head: LosslessHead, data_len: int) -> None:
    """2.7: a found trailing index is bound to DATA by data_len and checked like head record 10."""
    if int.from_bytes(index[-INDEX_FOOTER:-12], "little") != data_len:
        raise Corrupt("unit index for another DATA")
    spans = trailing_spans(index[:-INDEX_FOOTER], head.geometry.unit_count)
    if sum(spans) != sum(u.span for u in units):
        raise Corrupt("unit table does not match the records")
    check_spans(spans, units, head, None)


def measure_open_data(header: Header):
    """A chunk measurer (container.chunks.MeasureOpen) that finds where an open DATA ends."""

    def measure(tag: bytes, buf: bytes | bytearray | memoryview, start: int, end: int) -> int:
        return read_data(buf, header, start, end, bounded=False).end

    return measure
