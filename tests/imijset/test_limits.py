"""Forged counts and lengths: every one is refused before it sizes an allocation or a loop."""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt, ImijError, TooLarge
from imij_plugins.imijset.dictionary import expand, parse_dictionary
from imij_plugins.imijset.metadata import parse_metadata
from imij_plugins.imijset.pyramid import decode_catalog
from imij_plugins.imijset.sequence import parse_header
from imij_plugins.wire import encode_varint as varint
from tests.imijset.build import D, E, FileBuilder, basic_leaf, branch, metadata_leaf, page, xxh

MAX_PEAK = 2 << 20  # no forged field may cost more than this
HUGE = 2**63


def bounded(fn: Callable[[], object], error: type = ImijError) -> None:
    """``fn`` fails with ``error`` quickly and without a large allocation."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(error):
            fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MAX_PEAK, f"peak allocation {peak} bytes"
    assert time.perf_counter() - start < 2.0


def open_data(tmp_path: Path, data: bytes, **options: object) -> Callable[[], object]:
    p = tmp_path / f"f{len(list(tmp_path.iterdir()))}.imijset"
    p.write_bytes(bytes(data))

    def run() -> object:
        with imijset.open(p, **options) as arc:  # type: ignore[arg-type]
            list(arc.keys())
            return [arc.get(k) for k in arc.keys()]

    return run


@pytest.mark.parametrize(
    "root, entries",
    [((0, HUGE, 0), 1), ((HUGE, 100, 0), 1), ((0, 2**64 - 1, 0), 1), (None, 2**64 - 1)],
)
def test_forged_footer_fields(tmp_path: Path, root: tuple | None, entries: int) -> None:
    fb = FileBuilder()
    e = fb.blob(b"x", 1)
    real = fb.page(basic_leaf([e]))
    fb.commit(root or real, entries)
    bounded(open_data(tmp_path, fb.buf))


def test_forged_child_length(tmp_path: Path) -> None:
    fb = FileBuilder()
    fb.blob(b"x", 1)
    fb.commit(fb.page(branch(6, 1, [D(1, 0, HUGE, 0)])), 1, level=1)
    bounded(open_data(tmp_path, fb.buf))


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack("<BBH", 0, 0, 65535),  # count far past 256
        struct.pack("<BBH", 6, 1, 65535),
        struct.pack("<BBH", 0, 0, 1) + varint(HUGE) * 6,  # column lengths past the page
        struct.pack("<BBH", 0, 0, 1) + varint(2**64 - 1) + varint(1) * 5,
    ],
)
def test_forged_page_counts_and_lengths(tmp_path: Path, raw: bytes) -> None:
    fb = FileBuilder()
    fb.commit(fb.page(raw), 1, level=raw[1])
    bounded(open_data(tmp_path, fb.buf))


def test_forged_blob_length(tmp_path: Path) -> None:
    fb = FileBuilder()
    e = fb.blob(b"x", 1)
    e.length = HUGE
    fb.commit(fb.page(basic_leaf([e])), 1)
    bounded(open_data(tmp_path, fb.buf))


@pytest.mark.parametrize(
    "meta",
    [
        varint(2**40) + b"\x00",  # entry metadata length
        b"\x06\x00" + varint(2**60),  # attribute count
        b"\x06\x01" + varint(2**60),  # filename length
        b"\x08\x00\x01" + varint(2**60) + b"k\x01",  # key length
    ],
)
def test_forged_metadata_lengths(tmp_path: Path, meta: bytes) -> None:
    fb = FileBuilder()
    e = fb.blob(b"x", 1)
    fb.commit(fb.page(metadata_leaf([e], c8=meta)), 1)
    bounded(open_data(tmp_path, fb.buf))
    if meta[0] < 0x80:  # a one-byte length prefix: the rest is the payload itself
        bounded(lambda: parse_metadata(meta[1:]))


def test_forged_dictionary_counts() -> None:
    col = varint(2**60) + b"\x01a"
    bounded(lambda: parse_dictionary(col, 0, len(col)))
    col = varint(1) + varint(2**50) + b"a"
    bounded(lambda: parse_dictionary(col, 0, len(col)))
    bounded(lambda: expand(b"\x01" + varint(2 * 2**50), [b"a"], "t"))
    bounded(lambda: expand(b"\x01" + varint(2**50 + 1), [b"a"], "t"))


def test_forged_sequence_count() -> None:
    head = b"IMIJSEQ\x01" + struct.pack("<3Q", 10, 0, 2**60)
    head += struct.pack("<Q", xxh(head))
    bounded(lambda: parse_header(head, 40 + 48))
    bounded(lambda: parse_header(head, 2**64 - 1))


@pytest.mark.parametrize(
    "catalog",
    [
        b"IMIJPAT\x01" + varint(2**60),
        b"IMIJPAT\x01" + varint(1) + varint(0) + varint(2**32) + varint(1) * 3 + b"\x00" + varint(1),
        b"IMIJPAT\x01" + varint(1) + varint(0) + varint(2**32 - 1) * 2 + varint(1) * 2 + b"\x00" + varint(2**64 - 10),
        b"IMIJPAT\x01" + varint(64) + (varint(0) + varint(1) * 4 + b"\x00" + varint(1)) * 2,
    ],
)
def test_forged_catalog(catalog: bytes) -> None:
    bounded(lambda: decode_catalog(catalog), Corrupt)


def test_scan_of_a_tail_full_of_magic_is_bounded(tmp_path: Path) -> None:
    """Forged magic every 8 bytes: each candidate costs one comparison; the budget ends the scan."""
    junk = b"IMIJSET\x01" * (1 << 17)  # 1 MiB
    p = tmp_path / "junk.imijset"
    p.write_bytes(junk)
    start = time.perf_counter()
    with pytest.raises(Corrupt):
        imijset.open(p)
    with pytest.raises(TooLarge):
        imijset.open(p, scan_budget=4096)
    assert time.perf_counter() - start < 5.0


def test_long_chain_reads_each_footer_once(tmp_path: Path) -> None:
    p = tmp_path / "chain.imijset"
    with imijset.open(p, "w", durable=False) as arc:
        for k in range(300):
            arc.append(k, b"x")
            arc.commit()
    with imijset.open(p) as arc:
        assert arc.generation == 300 and arc.segments == 300 and len(arc) == 300


def test_sequence_chain_budget(tmp_path: Path) -> None:
    from imij_plugins.imijset.sequence import SequenceRecord

    image = bytes(100)
    records = [SequenceRecord(0, 100)] + [SequenceRecord(i, 1, i - 1) for i in range(1, 50)]
    p = tmp_path / "seq.imijset"
    with imijset.open(p, "w") as arc:
        arc.append_sequence(1, image, 2, records)
    with imijset.open(p) as arc:
        seq = arc.sequence_index(1)
        assert seq.chain(49, max_steps=100) == list(range(49, -1, -1))
        bounded(lambda: seq.chain(49, max_steps=10), TooLarge)


def test_page_helpers_are_exact() -> None:
    """The builder's pages are what the reader expects (a guard for the tests above)."""
    assert page(0, 0, 0, [b""] * 6) == basic_leaf([])
    assert basic_leaf([E(1, 0, 1, 0)])[:4] == b"\x00\x00\x01\x00"
