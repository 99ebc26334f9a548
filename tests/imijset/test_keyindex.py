"""The merged key index: point lookups across many segments whose keys interleave, against a dict model."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import imij_plugins.imijset as imijset
from imij_plugins.errors import Corrupt
from imij_plugins.imijset.reader import INDEX_FANOUT, INDEX_TAIL


def _blob(key: int, batch: int) -> bytes:
    return f"key {key} batch {batch}".encode()


def _commit(arc: imijset.Archive, keys: set[int], batch: int, model: dict[int, bytes]) -> None:
    for k in sorted(keys):
        arc.append(k, _blob(k, batch))
        model[k] = _blob(k, batch)
    arc.commit()


def _check(arc: imijset.Archive, model: dict[int, bytes], universe: int) -> None:
    """Every key in and around the model: present ones hold their newest blob, absent ones raise."""
    for k in range(universe + 2):
        if k in model:
            assert arc.get(k) == model[k], k
            assert arc.entry(k).key == k
            assert k in arc
        else:
            assert k not in arc
            with pytest.raises(KeyError):
                arc.get(k)
    assert list(arc.keys()) == sorted(model)


batches = st.lists(st.sets(st.integers(0, 60), min_size=1, max_size=25), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches, check_every=st.integers(1, 12))
def test_lookups_match_a_dict_across_interleaved_commits(tmp_path: Path, batches: list[set[int]], check_every: int) -> None:
    """Lookups between commits on the writer's handle (index built, then checked against newer
    segments and extended), and again on a fresh reader, always see the newest entry of each key."""
    path = tmp_path / f"h{random.getrandbits(64)}.imijset"
    model: dict[int, bytes] = {}
    with imijset.open(path, "w", durable=False) as arc:
        for b, keys in enumerate(batches):
            _commit(arc, keys, b, model)
            if b % check_every == 0:
                _check(arc, model, 60)
        _check(arc, model, 60)
    with imijset.open(path) as arc:
        _check(arc, model, 60)


def test_queries_keep_replacement_rules_with_the_index(path: Path) -> None:
    """A newer nonmatching replacement hides an old match; results stay newest segment first."""
    with imijset.open(path, "w", durable=False) as arc:
        for b in range(INDEX_FANOUT + 4):
            for k in range(b, 40, 3):
                arc.append(k, _blob(k, b), filename=f"b{b}")
            arc.commit()
        assert arc.get(20) and arc.key_index is not None
        got = [(e.key, e.filename) for e in arc.query(filename="b0")]
        newest = {}
        for b in range(INDEX_FANOUT + 4):
            for k in range(b, 40, 3):
                newest[k] = f"b{b}"
        assert got == sorted((k, n) for k, n in newest.items() if n == "b0")


def _interleaved(path: Path, segments: int, universe: int, seed: int = 3) -> dict[int, bytes]:
    rng = random.Random(seed)
    model: dict[int, bytes] = {}
    with imijset.open(path, "w", durable=False) as arc:
        for b in range(segments):
            _commit(arc, set(rng.sample(range(universe), universe // 4)), b, model)
    return model


def test_index_is_built_lazily_and_extended_after_commits(path: Path) -> None:
    model = _interleaved(path, 20, 200)
    with imijset.open(path, "a", durable=False) as arc:
        assert arc.key_index is None  # nothing looked up yet
        _check(arc, model, 200)
        stats = arc.key_index
        assert stats is not None and stats.segments == 20 and stats.entries == len(model)
        assert stats.nbytes >= 10 * len(model)
        for b in range(20, 20 + INDEX_TAIL):  # newer segments are checked before the index
            _commit(arc, set(range(b, 200, 7)) | {200 + b}, b, model)
            _check(arc, model, 230)
            assert arc.key_index.segments == 20  # type: ignore[union-attr]
        _commit(arc, set(range(0, 250, 5)), 99, model)
        _check(arc, model, 250)
        stats = arc.key_index
        assert stats is not None and stats.segments == 21 + INDEX_TAIL and stats.entries == len(model)


def test_zero_budget_means_no_index(path: Path) -> None:
    model = _interleaved(path, 12, 100)
    with imijset.open(path, index_bytes=0) as arc:
        _check(arc, model, 100)
        assert arc.key_index is None


def test_threads_share_one_index(path: Path) -> None:
    model = _interleaved(path, 30, 400)
    errors: list[BaseException] = []
    with imijset.open(path) as arc:
        def reader(seed: int) -> None:
            rng = random.Random(seed)
            try:
                for k in (rng.randrange(402) for _ in range(400)):
                    assert (arc.get(k) if k in model else None) == model.get(k), k
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert arc.key_index is not None and arc.key_index.segments == 30


def test_a_damaged_segment_leaves_lookups_on_the_key_range_path(path: Path) -> None:
    """The build stops at a leaf that fails its digest; lookups elsewhere still answer, and the
    lookup that reaches the damaged leaf reports it."""
    model: dict[int, bytes] = {}
    with imijset.open(path, "w", durable=False, placement="tail") as arc:
        _commit(arc, set(range(1000, 1600)), 0, model)  # three leaves, written after the blobs
        first_leaf = arc.entry(1599).offset + arc.entry(1599).length
        for b in range(1, INDEX_FANOUT + 4):
            _commit(arc, set(range(b, 100, 2)), b, model)
    with open(path, "r+b") as f:
        f.seek(first_leaf + 20)
        byte = f.read(1)
        f.seek(first_leaf + 20)
        f.write(bytes([byte[0] ^ 0xFF]))
    with imijset.open(path) as arc:
        for k in range(100):
            assert (arc.get(k) if k in model else None) == model.get(k), k
        assert arc.key_index is None
        assert arc.get(1599) == model[1599]
        with pytest.raises(Corrupt):
            arc.get(1000)
