"""The archive API and writer: batches, replacement, modes, placement, leaf kinds, queries, compaction."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import imij_plugins
import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt
from imij_plugins.imijset.branches import Branch
from imij_plugins.imijset.entries import Description, Summary
from imij_plugins.imijset.leaves import Leaf
from imij_plugins.imijset.pages import MAX_PAGE


def pages_of(arc: imijset.Archive, generation: int) -> tuple[list[Leaf], list[Branch]]:
    """Every page of one segment (leaves in key order, branches in visit order), via a full walk."""
    seg = arc._snapshot.segments[generation - 1]
    leaves: list[Leaf] = []
    for leaf, _ in seg.walk():
        if not leaves or leaves[-1] is not leaf:
            leaves.append(leaf)
    branches: list[Branch] = []
    stack = [seg.root()]
    while stack:
        page = stack.pop()
        if isinstance(page, Branch):
            branches.append(page)
            stack.extend(arc._snapshot.source.page(c.offset, c.length, c.digest, "t") for c in page.children)
    return leaves, branches


def test_append_commit_get(path: Path) -> None:
    image = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    with imijset.open(path, "w") as arc:
        arc.append(1, b"one")
        arc.append(2, image, filename="img.imi", attributes={"scene": "test"})
        arc.append(3, b"")  # "A zero-length blob is allowed."
    with imijset.open(path) as arc:
        assert arc.generation == 1 and arc.segments == 1
        assert list(arc.keys()) == [1, 2, 3] and list(arc) == [1, 2, 3] and len(arc) == 3
        assert arc.get(1) == b"one" and arc.get(3) == b""
        assert np.array_equal(arc.read(2), image)
        assert 2 in arc and 4 not in arc and -1 not in arc and "2" not in arc
        with pytest.raises(KeyError):
            arc.get(4)
        with pytest.raises(KeyError):
            arc.get(2**64)
        e = arc.entry(2)
        assert e.filename == "img.imi" and e.attributes == {"scene": "test"}
        assert (e.summary.width, e.summary.height, e.summary.channels) == (7, 5, 3)
        assert e.image_count == 1 and e.cicp == (1, 13, 0, 1)
        assert [k for k, _ in arc.items()] == [1, 2, 3]
        assert arc.last_key() == 3
        assert arc.read_at(1, 1, 2) == b"ne" and arc.read_at(3, 0, 0) == b""
        with pytest.raises(ValueError):
            arc.read_at(1, 2, 2)


def test_summaries_come_from_the_header_only(path: Path) -> None:
    blob = imij_plugins.encode(np.zeros((4, 9), np.uint16))
    with imijset.open(path, "w") as arc:
        arc.append(1, blob)
        arc.append(2, b"\x89PNG not an image of ours")
        arc.append(3, blob[:9])  # a cut header: opaque
        arc.append(4, blob, description=Description(Summary(1, 2, 3, 4, 5, 6), (9, 16, 9, 1), 2, 0))
    with imijset.open(path) as arc:
        e1 = arc.entry(1)
        header = imij_plugins.open(blob).header
        assert (e1.summary.width, e1.summary.height, e1.summary.channels, e1.summary.sample) == (9, 4, header.channels, header.sample)
        assert e1.summary.features == sum(1 << f for f in header.mask)
        assert e1.image_count == 0  # bytes: read only the header, count unknown
        assert 0 < e1.prefix_hint < len(blob)
        assert imij_plugins.open(blob[: e1.prefix_hint] + blob[e1.prefix_hint :]).header == header
        for key in (2, 3):
            e = arc.entry(key)
            assert e.summary == Summary() and e.cicp is None and e.prefix_hint == 0
        e4 = arc.entry(4)
        assert e4.summary == Summary(1, 2, 3, 4, 5, 6) and e4.cicp == (9, 16, 9, 1) and e4.image_count == 2


def test_newer_entries_replace_older_ones(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        for k in range(10):
            arc.append(k, b"v1-%d" % k)
        assert arc.commit() == 1
        arc.append(3, b"v2-3")
        arc.append(20, b"v2-20")
        assert arc.commit() == 2
        arc.append(3, b"v3-3")
        arc.append(7, b"v3-7")
    with imijset.open(path) as arc:
        assert arc.generation == 3
        assert list(arc.keys()) == list(range(10)) + [20]
        assert arc.get(3) == b"v3-3" and arc.get(7) == b"v3-7" and arc.get(8) == b"v1-8"
        assert {k: e.generation for k, e in arc.items()}[3] == 3
        assert arc.verify().indexed == 14 and arc.verify().live == 11


def test_batches_commit_one_footer_each(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        for k in range(1000):
            arc.append(k, b"x")
    data = path.read_bytes()
    assert data.count(b"IMIJSET\x01") == 1
    with imijset.open(path, "a") as arc:
        assert arc.commit() == 1  # nothing appended: no new generation
    assert path.read_bytes() == data


def test_keys_must_increase_within_a_batch(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        arc.append(5, b"a")
        with pytest.raises(ValueError, match="keys must increase"):
            arc.append(5, b"b")
        with pytest.raises(ValueError, match="keys must increase"):
            arc.append(4, b"b")
        with pytest.raises(ValueError):
            arc.append(2**64, b"b")
        with pytest.raises(TypeError):
            arc.append("6", b"b")  # type: ignore[arg-type]
        arc.commit()
        arc.append(4, b"c")  # a new batch may go lower
    with imijset.open(path) as arc:
        assert list(arc.keys()) == [4, 5]


def test_context_manager_keeps_the_last_commit_on_exception(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        arc.append(1, b"kept")
    committed = path.read_bytes()
    with pytest.raises(RuntimeError):
        with imijset.open(path, "a") as arc:
            arc.append(2, b"x" * 5000)
            raise RuntimeError("boom")
    assert path.read_bytes() == committed
    with imijset.open(path, "a") as arc:
        arc.append(3, b"y")
        arc.abort()
        arc.append(4, b"z")
    with imijset.open(path) as arc:
        assert list(arc.keys()) == [1, 4] and arc.generation == 2


def test_modes(path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        imijset.open(path)
    with pytest.raises(ValueError):
        imijset.open(path, "x")  # type: ignore[arg-type]
    with imijset.open(path, "a") as arc:  # creates; closing commits an empty generation
        assert arc.generation == 0
    with imijset.open(path) as arc:
        assert arc.generation == 1 and list(arc.keys()) == []
        with pytest.raises(ValueError, match="mode 'r'"):
            arc.append(1, b"x")
        with pytest.raises(ValueError, match="mode 'r'"):
            arc.commit()
    with imijset.open(path, "a") as arc:
        arc.append(1, b"x")
    with imijset.open(path, "w") as arc:  # a new archive
        arc.append(9, b"y")
    with imijset.open(path) as arc:
        assert list(arc.keys()) == [9] and arc.generation == 1
    arc = imijset.open(path)
    arc.close()
    arc.close()
    with pytest.raises(ValueError, match="closed"):
        arc.get(9)


def test_one_writer_at_a_time(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        with pytest.raises(BlockingIOError):
            imijset.open(path, "a")
        with imijset.open(path) as reader:  # readers take no lock
            assert reader.generation == 0
        arc.append(1, b"x")


def test_appending_after_an_uncommitted_tail(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        arc.append(1, b"one")
    with open(path, "ab") as f:
        f.write(b"torn batch bytes" * 10)
    with imijset.open(path, "a") as arc:
        assert arc.generation == 1
        arc.append(2, b"two")
    with imijset.open(path) as arc:
        assert arc.generation == 2 and arc.get(1) == b"one" and arc.get(2) == b"two"
        assert b"torn batch bytes" in path.read_bytes()  # never rewritten


def test_nothing_committed_is_corrupt_not_empty(path: Path) -> None:
    path.write_bytes(b"blob bytes of a batch that never committed")
    with pytest.raises(Corrupt):
        imijset.open(path)
    with pytest.raises(Corrupt):
        imijset.open(path, "a")


@pytest.mark.parametrize("placement", ["interleaved", "tail"])
def test_multi_level_trees(tmp_path: Path, placement: str) -> None:
    n = 256 * 129 + 5  # more than 128 leaves: a level-2 root
    p = tmp_path / f"{placement}.imijset"
    with imijset.open(p, "w", placement=placement, durable=False) as arc:  # type: ignore[arg-type]
        for k in range(n):
            arc.append(3 * k, k.to_bytes(3, "little"))
    with imijset.open(p) as arc:
        assert arc._snapshot.segments[0].footer.root_level == 2
        assert arc.get(3 * 1000) == (1000).to_bytes(3, "little") and 3001 not in arc
        assert sum(1 for _ in arc.keys()) == n
        leaves, branches = pages_of(arc, 1)
        assert len(leaves) == 130 and all(leaf.count == 256 for leaf in leaves[:-1])
        assert all(b.kind == 6 and 1 <= len(b.children) <= 128 for b in branches)
        blob_end = max(int(leaf.offsets[-1]) + int(leaf.lengths[-1]) for leaf in leaves)
        offsets = sorted([leaf.offset for leaf in leaves] + [b.offset for b in branches])
        root = arc._snapshot.segments[0].footer
        assert root.root_offset == offsets[-1] and root.root_offset + root.root_length == root.position
        if placement == "tail":
            # "every leaf in key order, then each branch level in key order, the root last"
            assert blob_end <= leaves[0].offset
            assert [leaf.offset for leaf in leaves] == offsets[: len(leaves)]
            levels = [b.level for b in sorted(branches, key=lambda b: b.offset)]
            assert levels == sorted(levels)
        else:
            assert leaves[0].offset < blob_end  # pages between blobs, emitted as they fill


def test_large_metadata_closes_leaves_early(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        for k in range(12):
            arc.append(k, b"x", filename=f"f{k}", attributes={"big": os.urandom(15000)})
    with imijset.open(path) as arc:
        leaves, _ = pages_of(arc, 1)
        assert len(leaves) > 2 and all(leaf.count < 256 for leaf in leaves)
        assert all(len(leaf.buf) <= MAX_PAGE for leaf in leaves)
        assert [arc.entry(k).filename for k in range(12)] == [f"f{k}" for k in range(12)]


def test_leaf_kinds_chosen_by_the_writer(tmp_path: Path) -> None:
    def kinds(entries: list[tuple[str | None, dict | None]]) -> int:
        p = tmp_path / f"k{len(list(tmp_path.iterdir()))}.imijset"
        with imijset.open(p, "w") as arc:
            for k, (name, attrs) in enumerate(entries):
                arc.append(k, b"blob", filename=name, attributes=attrs)
        with imijset.open(p) as arc:
            leaves, _ = pages_of(arc, 1)
            assert [arc.entry(k).filename for k in range(len(entries))] == [n for n, _ in entries]
            assert [arc.entry(k).attributes for k in range(len(entries))] == [a or {} for _, a in entries]
            return leaves[0].kind

    assert kinds([(None, None)] * 5) == 0  # "Writers use basic leaves if all new fields are absent"
    assert kinds([(f"unique-{i}.imi", None) for i in range(5)]) == 2  # nothing repeats
    repeated = [("same/long/directory/name.imi", {"camera": "left", "session": "2026-12-02"})] * 40
    assert kinds(repeated) == 3  # repeated strings: the dictionary page is smaller


def test_queries(path: Path) -> None:
    small = imij_plugins.encode(np.zeros((4, 8, 3), np.uint8))
    wide = imij_plugins.encode(np.zeros((4, 64, 3), np.uint8))
    gray = imij_plugins.encode(np.zeros((30, 30), np.uint16))
    long_a, long_b = "a-shared-prefix-of-16/x.imi", "a-shared-prefix-of-16/y.imi"
    with imijset.open(path, "w") as arc:
        arc.append(1, small, filename=long_a)
        arc.append(2, wide, filename=long_b)
        arc.append(3, gray)
        arc.append(4, b"opaque", filename="o.bin")
        arc.commit()
        arc.append(1, b"replaced by opaque")  # hides key 1 from dimension queries
        arc.append(5, small, filename=long_a)
    with imijset.open(path) as arc:
        assert [e.key for e in arc.query(width=8)] == [5]
        assert [e.key for e in arc.query(width=(8, 64), height=4)] == [5, 2]  # newest segment first
        assert [e.key for e in arc.query(height=(0, 0))] == [1, 4]
        assert [e.key for e in arc.query(cicp=(1, 13, 0, 1))] == [5, 2, 3]
        assert [e.key for e in arc.query(cicp=None)] == [1, 4]
        assert [e.key for e in arc.query(filename=long_a)] == [5]  # key 1 was replaced
        assert [e.key for e in arc.query(filename=long_b)] == [2]
        assert [e.key for e in arc.query(filename="a-shared-prefix-of-16/z.imi")] == []
        assert [e.key for e in arc.query(filename=None)] == [1, 3]
        assert [e.key for e in arc.query(filename=long_b, width=8)] == []
        assert [e.key for e in arc.query()] == [1, 5, 2, 3, 4]
        with pytest.raises(ValueError):
            arc.query(cicp=(1, 2, 3))
        with pytest.raises(TypeError):
            arc.query(filename=b"x")


def test_queries_skip_disjoint_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "q.imijset"
    with imijset.open(p, "w", durable=False) as arc:
        for k in range(256 * 20):
            arc.append(k, b"x", description=Description(Summary(k // 256 + 1, 1), None, 0, 0))
    with imijset.open(p) as arc:
        fetched: list[int] = []
        source = arc._snapshot.source
        original = source.page

        def counting(offset, length, digest, what, data=None):  # type: ignore[no-untyped-def]
            fetched.append(offset)
            return original(offset, length, digest, what, data)

        monkeypatch.setattr(source, "page", counting)
        hits = arc.query(width=7)
        assert [e.key for e in hits] == list(range(6 * 256, 7 * 256))
        root = arc._snapshot.segments[0].footer.root_offset
        assert [o for o in fetched if o != root] == [hits[0].offset + 256]  # only the matching leaf


def test_compaction_preserves_everything(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.imijset", tmp_path / "dst.imijset"
    image = imij_plugins.encode(np.ones((3, 5, 3), np.uint8))
    with imijset.open(src, "w") as arc:
        for k in range(300):
            arc.append(k, b"old-%d" % k, filename=f"f{k % 3}", attributes={"k": k, "s": "v", "i": imijset.I64(3)})
        arc.commit()
        arc.append(5, image, filename="new.imi", attributes={"b": b"\x00"})
        arc.append(400, b"", description=Description(Summary(1, 2, 3, 4, 5, 6), (1, 1, 1, 0), 3, 0))
    with imijset.open(src) as a:
        assert a.compact(dst) == 301
        with pytest.raises(ValueError):
            a.compact(src)
        with imijset.open(dst) as b:
            assert b.generation == 1 and b.segments == 1
            assert list(a.keys()) == list(b.keys())
            for (ka, ea), (kb, eb) in zip(a.items(), b.items()):
                assert ka == kb and a.blob(ea) == b.blob(eb)
                assert (ea.summary, ea.cicp, ea.image_count, ea.prefix_hint, ea.raw_metadata, ea.digest) == (
                    eb.summary, eb.cicp, eb.image_count, eb.prefix_hint, eb.raw_metadata, eb.digest
                )
            assert b.verify().live == 301
    with imijset.open(dst) as b:
        assert b.compact(tmp_path / "tail.imijset", placement="tail") == 301
    with imijset.open(tmp_path / "tail.imijset") as c:
        assert list(c.keys()) == list(range(300)) + [400]


def test_verify_finds_a_damaged_blob(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        arc.append(1, b"a" * 100)
        arc.append(2, b"b" * 100)
    data = bytearray(path.read_bytes())
    data[150] ^= 1
    path.write_bytes(bytes(data))
    with imijset.open(path) as arc:
        assert arc.get(1) == b"a" * 100
        with pytest.raises(Corrupt, match="blob of key 2"):
            arc.verify()


batches = st.lists(
    st.dictionaries(st.integers(0, 60), st.binary(max_size=40), max_size=25), min_size=1, max_size=5
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches, placement=st.sampled_from(["interleaved", "tail"]))
def test_model(tmp_path: Path, batches: list[dict[int, bytes]], placement: str) -> None:
    """Random batches against a dict: listing, lookups and compaction agree."""
    p = tmp_path / "model.imijset"
    model: dict[int, bytes] = {}
    with imijset.open(p, "w", placement=placement, durable=False) as arc:  # type: ignore[arg-type]
        for batch in batches:
            for k in sorted(batch):
                arc.append(k, batch[k], filename=f"n{k}" if k % 2 else None)
            arc.commit()
            model.update(batch)
    with imijset.open(p) as arc:
        assert list(arc.keys()) == sorted(model)
        assert all(arc.get(k) == v for k, v in model.items())
        assert all(k not in arc for k in range(61) if k not in model)
        assert sorted(e.key for e in arc.query(filename=None)) == sorted(k for k in model if k % 2 == 0)
        arc.compact(tmp_path / "model-c.imijset")
    with imijset.open(tmp_path / "model-c.imijset") as c:
        assert {k: c.get(k) for k in c.keys()} == model
