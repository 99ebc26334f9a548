"""Index pages: every rule that invalidates a branch or leaf page, checked on hand-built bytes."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt, ImijError, Unsupported
from imij_plugins.wire import encode_varint as varint
from tests.imijset.build import (
    D,
    E,
    FileBuilder,
    basic_leaf,
    branch,
    dictionary_leaf,
    leaf_columns,
    metadata_leaf,
    page,
    xxh,
)

Opener = Callable[..., imijset.Archive]


def full_read(arc: imijset.Archive) -> None:
    """Everything a reader can be asked for: listing, entries, blobs."""
    for key, entry in arc.items():
        assert arc.get(key) == arc.blob(entry)


def dims(k: int) -> tuple[int, int, int, int, int, int]:
    return (10 * k, 20 * k, 3, 0, 0, 0)


def tree(
    kind: int = 6,
    groups: tuple[tuple[int, ...], ...] = ((1, 2, 3), (5, 6)),
    desc: Callable[[int, D], None] | None = None,
    root_level: int = 1,
    page_level: int | None = None,
) -> FileBuilder:
    """Blobs and one basic leaf per key group under one branch root, descriptors with exact bounds."""
    fb = FileBuilder()
    descs = []
    for keys in groups:
        entries = [fb.blob(b"blob-%d" % k, k, summary=dims(k)) for k in keys]
        d = D(max(keys), *fb.page(basic_leaf(entries)))
        d.width = (10 * min(keys), 10 * max(keys))
        d.height = (20 * min(keys), 20 * max(keys))
        descs.append(d)
    for i, d in enumerate(descs):
        if desc:
            desc(i, d)
    root = fb.page(branch(kind, root_level if page_level is None else page_level, descs))
    fb.commit(root, sum(len(g) for g in groups), level=root_level)
    return fb


@pytest.mark.parametrize("kind", [1, 4, 5, 6])
def test_every_branch_kind_reads(open_bytes: Opener, kind: int) -> None:
    arc = open_bytes(tree(kind).buf)
    assert list(arc.keys()) == [1, 2, 3, 5, 6]
    assert arc.get(5) == b"blob-5" and 4 not in arc
    assert [e.key for e in arc.query(width=(20, 50))] == [2, 3, 5]
    assert [e.key for e in arc.query(cicp=None)] == [1, 2, 3, 5, 6]
    assert [e.key for e in arc.query(filename=None)] == [1, 2, 3, 5, 6]
    full_read(arc)


def test_unknown_page_kind_is_unsupported(open_bytes: Opener) -> None:
    fb = FileBuilder()
    fb.commit(fb.page(b"\x07\x00\x00\x00"), 0)
    with pytest.raises(Unsupported, match="page kind 7"):
        open_bytes(fb.buf)
    fb = FileBuilder()
    entries = [fb.blob(b"x", 1)]
    future = D(1, *fb.page(b"\x07\x00\x01\x00future"))
    known = D(2, *fb.page(basic_leaf([fb.blob(b"y", 2)])))
    fb.commit(fb.page(branch(6, 1, [future, known])), 2, level=1)
    arc = open_bytes(fb.buf)
    assert arc.get(2) == b"y" and entries
    with pytest.raises(Unsupported, match="page kind 7"):
        arc.get(1)


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"\x00\x01\x00\x00" + bytes(6), "leaf page \\(kind 0\\) at level 1"),
        (b"\x02\x01\x00\x00" + bytes(8), "leaf page \\(kind 2\\) at level 1"),
        (struct.pack("<BBH", 0, 0, 257) + bytes(6), "257 entries"),
        (struct.pack("<BBH", 6, 0, 1) + bytes(88), "branch page at level 0"),
        (struct.pack("<BBH", 6, 16, 1) + bytes(88), "branch page at level 16"),
        (struct.pack("<BBH", 6, 1, 0), "0 children"),
        (struct.pack("<BBH", 1, 1, 129) + bytes(32 * 129), "129 children"),
    ],
)
def test_page_header_bounds(open_bytes: Opener, raw: bytes, message: str) -> None:
    fb = FileBuilder()
    root = fb.page(raw)
    fb.commit(root, 0, level=raw[1] if raw[1] <= 15 else 15)
    with pytest.raises(Corrupt, match=message):
        open_bytes(fb.buf)


@pytest.mark.parametrize("kind, size", [(1, 32), (4, 48), (5, 56), (6, 88)])
def test_branch_length_must_match_its_descriptors(open_bytes: Opener, kind: int, size: int) -> None:
    fb = tree(kind)
    good = open_bytes(fb.buf)
    assert good.get(1) == b"blob-1"
    fb = FileBuilder()
    entries = [fb.blob(b"x", 1)]
    d = D(1, *fb.page(basic_leaf(entries)))
    root = fb.page(branch(kind, 1, [d]) + b"\x00")
    fb.commit(root, 1, level=1)
    with pytest.raises(Corrupt, match=f"for 1 kind-{kind} descriptors of {size} bytes"):
        open_bytes(fb.buf)


@pytest.mark.parametrize(
    "mutate, message, at_open",
    [
        (lambda i, d: setattr(d, "max_key", 3) if i == 1 else None, "not strictly increasing", True),
        (lambda i, d: setattr(d, "width", (50, 10)) if i == 0 else None, "minimum 50 above maximum 10", True),
        (lambda i, d: setattr(d, "length", 3) if i == 0 else None, "page length 3", True),
        (lambda i, d: setattr(d, "length", 65537) if i == 0 else None, "page length 65537", True),
        (lambda i, d: setattr(d, "offset", d.offset + 1000) if i == 0 else None, "does not end before", True),
        (lambda i, d: setattr(d, "digest", d.digest ^ 1) if i == 0 else None, "fails its digest", False),
        (lambda i, d: setattr(d, "max_key", 2) if i == 0 else None, "advertises 2", False),
    ],
)
def test_child_descriptor_rules(open_bytes: Opener, mutate: Callable, message: str, at_open: bool) -> None:
    fb = tree(desc=mutate)
    if at_open:
        with pytest.raises(Corrupt, match=message):
            open_bytes(fb.buf)
        return
    arc = open_bytes(fb.buf)
    assert arc.get(5) == b"blob-5"  # the other child is unaffected
    with pytest.raises(Corrupt, match=message):
        arc.get(1)
    with pytest.raises(Corrupt, match=message):
        list(arc.keys())


def test_child_level_must_be_parent_level_minus_one(open_bytes: Opener) -> None:
    arc = open_bytes(tree(root_level=2).buf)
    with pytest.raises(Corrupt, match="level 0 below a level-2 branch"):
        arc.get(1)


def test_keys_must_increase_across_children(open_bytes: Opener) -> None:
    arc = open_bytes(tree(groups=((1, 2, 3), (3, 6))).buf)
    assert arc.get(1) == b"blob-1"
    with pytest.raises(Corrupt, match="not above the previous child's maximum 3"):
        arc.get(6)


def test_empty_leaf_is_only_a_root(open_bytes: Opener) -> None:
    fb = FileBuilder()
    empty = fb.page(basic_leaf([]))
    fb.commit(empty, 0)
    arc = open_bytes(fb.buf)
    assert list(arc.keys()) == [] and arc.generation == 1
    fb = FileBuilder()
    entries = [fb.blob(b"x", 1)]
    a = D(0, *fb.page(basic_leaf([])))
    b = D(1, *fb.page(basic_leaf(entries)))
    fb.commit(fb.page(branch(6, 1, [a, b])), 1, level=1)
    arc = open_bytes(fb.buf)
    with pytest.raises(Corrupt, match="empty leaf below a branch"):
        list(arc.keys())


def test_leaf_entries_must_lie_inside_advertised_bounds(open_bytes: Opener) -> None:
    """Only fetches that check bounds (listings, queries) see it; point lookup does not use bounds."""
    arc = open_bytes(tree(desc=lambda i, d: setattr(d, "width", (10, 20)) if i == 0 else None).buf)
    assert arc.get(3) == b"blob-3"
    with pytest.raises(Corrupt, match="outside the bounds"):
        list(arc.keys())
    with pytest.raises(Corrupt, match="outside the bounds"):
        arc.query(height=(0, 1000))
    assert arc.query(width=(45, 60))[0].key == 5  # the bad child is disjoint: skipped unfetched


def test_child_branch_descriptors_must_lie_inside_parent_bounds(open_bytes: Opener) -> None:
    fb = FileBuilder()
    entries = [fb.blob(b"v", 7, summary=dims(7))]
    leaf = D(7, *fb.page(basic_leaf(entries)), width=(70, 70), height=(140, 140))
    mid = D(7, *fb.page(branch(6, 1, [leaf])), width=(0, 60), height=(140, 140))
    fb.commit(fb.page(branch(6, 2, [mid])), 1, level=2)
    arc = open_bytes(fb.buf)
    assert arc.get(7) == b"v"
    with pytest.raises(Corrupt, match="exceed the bounds its parent advertises"):
        list(arc.keys())


def test_bounds_of_undeclared_kinds_pass_through(open_bytes: Opener) -> None:
    """A kind 1 branch between a kind 6 root and leaves: leaves are checked against the root's bounds."""
    fb = FileBuilder()
    entries = [fb.blob(b"v", 7, summary=dims(7))]
    leaf = D(7, *fb.page(basic_leaf(entries)))
    mid = D(7, *fb.page(branch(1, 1, [leaf])), width=(0, 60), height=(0, 1000))
    fb.commit(fb.page(branch(6, 2, [mid])), 1, level=2)
    arc = open_bytes(fb.buf)
    with pytest.raises(Corrupt, match="outside the bounds"):
        list(arc.keys())


def one_leaf(build: Callable[[FileBuilder, list[E]], bytes], n: int = 3) -> FileBuilder:
    fb = FileBuilder()
    entries = [fb.blob(b"blob-%d" % k, k) for k in range(1, n + 1)]
    fb.commit(fb.page(build(fb, entries)), n)
    return fb


def test_column_lengths_must_fill_the_page(open_bytes: Opener) -> None:
    def build(fb: FileBuilder, entries: list[E]) -> bytes:
        return basic_leaf(entries) + b"\x00"

    with pytest.raises(Corrupt, match="column lengths add up"):
        open_bytes(one_leaf(build).buf)


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("c1", varint(1) + varint(0) + varint(1), "keys do not increase strictly"),
        ("c1", varint(2**64 - 2) + varint(1) + varint(1), "within u64"),
        ("c1", varint(1) + varint(1), "fewer|truncated"),
        ("c1", varint(1) + varint(1) + varint(1) + varint(1), "trailing"),
    ],
)
def test_key_column_rules(open_bytes: Opener, column: str, value: bytes, message: str) -> None:
    """Keys are checked whenever the leaf is fetched, so recovery's root check sees them."""
    with pytest.raises(Corrupt, match=message):
        open_bytes(one_leaf(lambda fb, e: basic_leaf(e, **{column: value})).buf)


def _offsets(*values: int) -> bytes:
    return b"".join(varint(v) for v in values)


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("c2", _offsets(0, 5, 6), "overlap"),  # blob 2 starts inside blob 1 (6 bytes)
        ("c2", _offsets(12, 0, 6), "overlap"),  # out of write order
        ("c2", _offsets(2**64 - 3, 1, 1), "overflow|overlap"),
        ("c2", _offsets(0, 6, 1000), "does not end before its leaf"),
        ("c3", _offsets(6, 6, 7), "overlap|does not end"),
        ("c4", _offsets(0, 7, 0), "prefix hint exceeds"),
        ("c5", bytes(23), "digest column of 23 bytes"),
        ("c3", _offsets(6, 6), "fewer|truncated"),
    ],
)
def test_blob_reference_rules(open_bytes: Opener, column: str, value: bytes, message: str) -> None:
    arc = open_bytes(one_leaf(lambda fb, e: basic_leaf(e, **{column: value})).buf)
    with pytest.raises(Corrupt, match=message):
        arc.get(1)


def test_blob_digest_is_checked(open_bytes: Opener) -> None:
    def build(fb: FileBuilder, entries: list[E]) -> bytes:
        entries[1].digest ^= 1
        return basic_leaf(entries)

    arc = open_bytes(one_leaf(build).buf)
    assert arc.get(1) == b"blob-1"
    with pytest.raises(Corrupt, match="blob of key 2: digest mismatch"):
        arc.get(2)


@pytest.mark.parametrize(
    "c6, message",
    [
        (b"".join(varint(v) for v in (2**32, 1)) + bytes(4) + b"" + bytes(12), "does not fit u32"),
        (bytes(6 * 3) + b"\x00", "trailing"),
        (bytes(6 * 2) + b"\x00\x00\x00", "runs past|truncated"),
        (bytes(6 * 2) + b"\x00\x00\x00\x00\x00\x80", "truncated"),
    ],
)
def test_summary_column_rules(open_bytes: Opener, c6: bytes, message: str) -> None:
    if "u32" in message:
        c6 = varint(2**32) + varint(1) + bytes(3) + varint(0) + bytes(12)
    arc = open_bytes(one_leaf(lambda fb, e: basic_leaf(e, c6=c6)).buf)
    assert arc.get(1) == b"blob-1"  # point lookup does not parse summaries
    with pytest.raises(Corrupt, match=message):
        arc.entry(1)


@pytest.mark.parametrize(
    "c7, message",
    [
        (b"\x02\x00" + b"\x00\x00" * 2, "presence byte 2"),
        (b"\x01\x01\x0d\x00\x02\x00" + b"\x00\x00" * 2, "full-range byte 2"),
        (b"\x00\x00" * 3 + b"\x00", "trailing"),
        (b"\x00\x00" * 2 + b"\x01\x01\x0d", "runs past"),
    ],
)
def test_cicp_and_image_count_column_rules(open_bytes: Opener, c7: bytes, message: str) -> None:
    arc = open_bytes(one_leaf(lambda fb, e: metadata_leaf(e, c7=c7)).buf)
    with pytest.raises(Corrupt, match=message):
        list(arc.items())


def text(s: bytes) -> bytes:
    return varint(len(s)) + s


@pytest.mark.parametrize(
    "c8, error, message",
    [
        (varint(16385) + bytes(16385) + b"\x00\x00", Corrupt, "16385 bytes"),
        (varint(50) + b"\x00\x00" + b"\x00\x00", Corrupt, "runs past"),
        (b"\x00\x00\x00\x00", Corrupt, "trailing"),
        (text(b"\x00\x01" + text(b"k") + b"\x09") + b"\x00\x00", Unsupported, "value type 9"),
        (text(b"\x01" + text(b"a\x00")) + b"\x00\x00", Corrupt, "NUL"),
    ],
)
def test_metadata_column_rules(open_bytes: Opener, c8: bytes, error: type, message: str) -> None:
    arc = open_bytes(one_leaf(lambda fb, e: metadata_leaf(e, c8=c8)).buf)
    assert arc.get(2) == b"blob-2"
    with pytest.raises(error, match=message):
        list(arc.keys())


def test_metadata_leaf_round_trip(open_bytes: Opener) -> None:
    def build(fb: FileBuilder, entries: list[E]) -> bytes:
        entries[0].cicp = (9, 16, 9, 0)
        entries[0].images = 4
        entries[2].meta = b"\x01" + text(b"c.imi") + b"\x01" + text(b"k") + b"\x00" + text(b"v")
        return metadata_leaf(entries)

    arc = open_bytes(one_leaf(build).buf)
    e1, e3 = arc.entry(1), arc.entry(3)
    assert e1.cicp == (9, 16, 9, 0) and e1.image_count == 4 and e1.filename is None
    assert e3.filename == "c.imi" and e3.attributes == {"k": "v"}
    assert [e.key for e in arc.query(cicp=(9, 16, 9, 0))] == [1]
    assert [e.key for e in arc.query(filename="c.imi")] == [3]


def _dictionary_archive(tokenized: list[bytes], strings: list[bytes], **override: bytes) -> FileBuilder:
    fb = FileBuilder()
    entries = [fb.blob(b"blob-%d" % k, k) for k in (1, 2)]
    fb.commit(fb.page(dictionary_leaf(entries, tokenized, strings, **override)), 2)
    return fb


def test_dictionary_leaf_reads(open_bytes: Opener) -> None:
    tok = b"\x01" + varint(1) + b"\x01" + varint(3) + b"\x00" + varint(2 * 2) + b"ab"
    arc = open_bytes(_dictionary_archive([tok, b""], [b"name.imi", b"tag"]).buf)
    assert arc.entry(1).filename == "name.imi" and arc.entry(1).attributes == {"tag": "ab"}
    assert arc.entry(2).filename is None
    assert arc.query(filename="name.imi")[0].key == 1


@pytest.mark.parametrize(
    "tokenized, strings, message",
    [
        ([b"\x01" + varint(5), b""], [b"a"], "references dictionary entry 2"),
        ([b"", b""], [], "count 0"),
        ([b"", b""], [b"b", b"a"], "increasing"),
    ],
)
def test_dictionary_leaf_rules(open_bytes: Opener, tokenized: list[bytes], strings: list[bytes], message: str) -> None:
    arc = open_bytes(_dictionary_archive(tokenized, strings).buf)
    with pytest.raises(Corrupt, match=message):
        list(arc.keys())


def test_dictionary_expansion_budget_is_64_kib(open_bytes: Opener) -> None:
    """Small tokens of a 16 KiB string expand past the 64 KiB page budget across entries."""
    fb = FileBuilder()
    entries = [fb.blob(b"x", k) for k in range(1, 6)]
    strings = [b"s" * 16000]
    tok = b"\x00\x01" + varint(1) + b"\x00" + varint(1)  # one text attribute: key and value both the string
    tok = b"\x00\x01" + varint(2) + b"k" + b"\x00" + varint(1)
    fb.commit(fb.page(dictionary_leaf(entries, [tok] * 5, strings)), 5)
    arc = open_bytes(fb.buf)
    with pytest.raises(Corrupt, match="exceed 64 KiB"):
        list(arc.keys())


def test_cross_leaf_blob_overlap_is_found_by_full_scans(open_bytes: Opener) -> None:
    fb = FileBuilder()
    a = [fb.blob(b"aaaa", 1), fb.blob(b"bbbb", 2)]
    da = D(2, *fb.page(basic_leaf(a)))
    b = [E(3, a[1].offset, 4, xxh(b"bbbb"))]  # points into the first leaf's last blob
    db = D(3, *fb.page(basic_leaf(b)))
    fb.commit(fb.page(branch(6, 1, [da, db])), 3, level=1)
    arc = open_bytes(fb.buf)
    assert arc.get(3) == b"bbbb"
    with pytest.raises(Corrupt, match="overlaps the previous leaf"):
        list(arc.keys())


def test_all_read_errors_are_imij_errors(open_bytes: Opener) -> None:
    def build(fb: FileBuilder, entries: list[E]) -> bytes:
        cols = leaf_columns(entries)
        return page(0, 0, 3, cols[:5] + [b"\xff" * 18])

    arc = open_bytes(one_leaf(build).buf)
    with pytest.raises(ImijError):
        full_read(arc)
