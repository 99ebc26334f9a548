"""``compact="auto"``: the policy, rewrites in place against a dict model, and SIGKILL during a rewrite."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import pytest

import imij_plugins.imijset as imijset
from imij_plugins._platform import POSIX
from imij_plugins.imijset.autocompact import AutoCompact
from imij_plugins.imijset.cli import main_set
from tests.imijset.kill import batches, kill_repeatedly

posix_only = pytest.mark.skipif(not POSIX, reason="automatic rewrites run on POSIX only")


def test_policy_is_tiered_by_segment_count_and_bytes() -> None:
    policy = AutoCompact(min_segments=4, growth=1.0)
    assert not policy.due(3, 100, 1000)  # too few segments, however many bytes
    assert not policy.due(4, 100, 199)  # 99 bytes appended after a 100-byte base
    assert policy.due(4, 100, 200)
    assert AutoCompact(growth=0.5).due(16, 100, 150)


@pytest.mark.parametrize("options", [{"min_segments": 1}, {"growth": 0}])
def test_bad_policies_are_refused(options: dict) -> None:
    with pytest.raises(ValueError):
        AutoCompact(**options)


def test_compact_takes_auto_a_policy_or_none(path: Path) -> None:
    with pytest.raises(ValueError):
        imijset.open(path, "w", compact="always")  # type: ignore[arg-type]


@posix_only
def test_rewrites_keep_every_live_entry_and_its_metadata(path: Path) -> None:
    rng = random.Random(5)
    model: dict[int, tuple[bytes, str]] = {}
    rewrites = 0
    with imijset.open(path, "w", durable=False, compact=AutoCompact(min_segments=3, growth=0.5)) as arc:
        for b in range(60):
            for k in sorted(rng.sample(range(300), 12)):
                model[k] = (f"{k} in {b}".encode() * 5, f"f{b}")
                arc.append(k, model[k][0], filename=model[k][1], attributes={"batch": b})
            arc.commit()
            rewrites += arc.segments == 1
            for k in rng.sample(sorted(model), 10):
                assert arc.get(k) == model[k][0]
        assert rewrites >= 5
        assert sorted(arc.keys()) == sorted(model)
    with imijset.open(path) as arc:
        for k, entry in arc.items():
            assert arc.blob(entry) == model[k][0]
            assert entry.filename == model[k][1] and entry.attributes["batch"] == int(model[k][1][1:])
        assert arc.verify().live == len(model)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


@posix_only
def test_a_reader_keeps_its_generation_and_a_second_writer_is_refused(path: Path) -> None:
    with imijset.open(path, "w", durable=False, compact=AutoCompact(min_segments=2, growth=0.1)) as arc:
        arc.append(1, b"old")
        arc.commit()
        with imijset.open(path) as reader:
            arc.append(1, b"new")
            arc.append(2, b"two")
            arc.commit()
            assert arc.segments == 1  # rewritten
            assert reader.get(1) == b"old" and 2 not in reader
        with pytest.raises(BlockingIOError):
            imijset.open(path, "a")
        arc.append(3, b"three")
    with imijset.open(path) as reader:
        assert [reader.get(k) for k in (1, 2, 3)] == [b"new", b"two", b"three"]


WRITER = f"""
import sys
import imij_plugins.imijset as imijset
from imij_plugins.imijset.autocompact import AutoCompact
sys.path.insert(0, {str(Path(__file__).parent)!r})
from kill import BATCH, blob
path, first = sys.argv[1], int(sys.argv[2])
with imijset.open(path, "a", compact=AutoCompact(min_segments=2, growth=0.05)) as arc:
    for b in range(first, first + 100000):
        for k in range(b * BATCH, (b + 1) * BATCH):
            arc.append(k, blob(k), filename=f"k{{k}}")
        arc.commit()
        print(b, flush=True)  # printed only once commit() (and any rewrite) has returned
"""


@posix_only
def test_a_writer_killed_while_rewriting_loses_no_commit(path: Path) -> None:
    """SIGKILL at random moments of a writer that rewrites after nearly every commit."""
    kill_repeatedly(path, WRITER, seed=41)


COMPACTOR = f"""
import contextlib, io, sys
import imij_plugins.imijset as imijset
from imij_plugins.imijset.cli import main_set
sys.path.insert(0, {str(Path(__file__).parent)!r})
from kill import BATCH, blob
path, first = sys.argv[1], int(sys.argv[2])
for b in range(first, first + 100000):
    with imijset.open(path, "a") as arc:
        for k in range(b * BATCH, (b + 1) * BATCH):
            arc.append(k, blob(k), filename=f"k{{k}}")
    print(b, flush=True)  # printed only once the batch is committed
    with contextlib.redirect_stdout(io.StringIO()):
        assert main_set(["compact", path]) == 0  # in place: the same rewrite as compact="auto"
"""


@posix_only
def test_imij_set_compact_killed_while_rewriting_loses_no_commit(path: Path) -> None:
    """SIGKILL at random moments of a process that commits a batch, then runs ``imij set compact
    ARCHIVE`` (which rewrites every entry so far): every committed batch is there, whole."""
    kill_repeatedly(path, COMPACTOR, seed=42, window=0.15)
    present = batches(path)
    # where the last kill landed is up to the clock; what it left compacts to one whole segment
    with contextlib.redirect_stdout(io.StringIO()):
        assert main_set(["compact", str(path)]) == 0
    with imijset.open(path) as arc:
        assert arc.segments == 1
    assert batches(path) == present


@posix_only
def test_compact_in_place_keeps_entries_mode_and_the_batch(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        for b in range(4):
            for k in range(b, 40, 4):
                arc.append(k, b"v%d" % k, filename=f"n{k}")
            arc.commit()
    path.chmod(0o640)
    with imijset.open(path) as reader:
        with pytest.raises(ValueError):
            reader.compact()
        before = {k: (reader.blob(e), e.filename) for k, e in reader.items()}
    with imijset.open(path, "a") as arc:
        arc.append(100, b"pending")  # committed first, then compacted with the rest
        assert arc.compact() == 41 and arc.segments == 1
        arc.append(101, b"after")
    assert path.stat().st_mode & 0o777 == 0o640
    with imijset.open(path) as arc:
        assert {k: (arc.blob(e), e.filename) for k, e in arc.items() if k < 100} == before
        assert arc.get(100) == b"pending" and arc.get(101) == b"after"
        assert arc.segments == 2
    assert [p.name for p in path.parent.iterdir()] == [path.name]
