"""Durability policies: reserved zeros past the last commit, ``durable="checked"`` and its recovery check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import imij_plugins.imijset as imijset
from imij_plugins._platform import POSIX
from imij_plugins.errors import Corrupt
from imij_plugins.imijset import writer
from imij_plugins.imijset.writer import RESERVE
from tests.imijset.kill import kill_repeatedly


def write(path: Path, durable: object, batches: int = 3) -> None:
    with imijset.open(path, "w", durable=durable) as arc:  # type: ignore[arg-type]
        for b in range(batches):
            for k in range(b * 300, (b + 1) * 300):
                arc.append(k, b"entry %d " % k * 3, filename=f"f{k}" if k % 7 else None)
            arc.commit()


@pytest.mark.parametrize("durable", [True, "checked"])
def test_policies_write_the_same_bytes(tmp_path: Path, durable: object) -> None:
    write(tmp_path / "plain", False)
    write(tmp_path / "synced", durable)
    assert (tmp_path / "synced").read_bytes() == (tmp_path / "plain").read_bytes()


def test_bad_durability_is_refused(path: Path) -> None:
    for bad in ("always", 1, None):
        with pytest.raises(ValueError):
            imijset.open(path, "w", durable=bad)  # type: ignore[arg-type]


def test_reserved_zeros_follow_the_commit_until_close(path: Path) -> None:
    with imijset.open(path, "w", durable="checked") as arc:
        arc.append(1, b"one")
        arc.commit()
        open_bytes = path.read_bytes()
        with imijset.open(path) as reader:  # a reader scans back over the zeros
            assert reader.get(1) == b"one"
    closed = path.read_bytes()
    assert open_bytes.startswith(closed)
    tail = open_bytes[len(closed):]
    assert len(tail) >= RESERVE // 2 and not tail.strip(b"\x00")


def test_durable_true_leaves_no_zeros(path: Path) -> None:
    with imijset.open(path, "w") as arc:
        arc.append(1, b"one")
        arc.commit()
        assert not path.read_bytes().endswith(bytes(80))


def test_a_killed_writers_zeros_are_reused(tmp_path: Path) -> None:
    """Zeros left past the last commit (the writer never closed) are overwritten by the next writer;
    any other bytes there are kept."""
    path = tmp_path / "a.imijset"
    with imijset.open(path, "w") as arc:
        arc.append(1, b"one")
    committed = path.read_bytes()
    path.write_bytes(committed + bytes(RESERVE))
    with imijset.open(path, "a") as arc:
        arc.append(2, b"two")
    data = path.read_bytes()
    assert data.startswith(committed) and b"\x00" * 1024 not in data[len(committed):]
    path.write_bytes(committed + b"torn" + bytes(100))
    with imijset.open(path, "a") as arc:
        arc.append(2, b"two")
    assert path.read_bytes().startswith(committed + b"torn" + bytes(100))


def snapshot_while_open(path: Path, copy: Path, durable: object) -> tuple[int, int]:
    """Copy the file as a power loss would find it (the writer's zeros still there) after two
    commits; return where the second commit's bytes start and end."""
    with imijset.open(path, "w", durable=durable) as arc:  # type: ignore[arg-type]
        for k in range(0, 600, 2):
            arc.append(k, b"first %d" % k)
        arc.commit()
        for k in range(1, 600, 2):
            arc.append(k, b"second %d" % k)
        arc.commit()
        shutil.copyfile(path, copy)
    with imijset.open(path) as arc:
        start = arc.entry(1).offset
    return start, path.stat().st_size


def test_a_torn_checked_commit_reads_as_the_previous_one(tmp_path: Path) -> None:
    """Any 4 KiB block of the last commit lost (zeros, as an unwritten block reads after a power
    loss) while its footer survived: the reader gets the previous commit, exactly."""
    src, copy, probe = tmp_path / "src", tmp_path / "copy", tmp_path / "probe"
    start, end = snapshot_while_open(src, copy, "checked")
    data = copy.read_bytes()
    assert len(data) > end  # zeros follow the footer: the recovery check runs
    with imijset.open(copy) as arc:
        assert arc.generation == 2 and len(arc) == 600
    for block in range(start // 4096 * 4096, end - 80, 4096):
        lost = bytearray(data)
        lo, hi = max(block, start), min(block + 4096, end - 80)
        lost[lo:hi] = bytes(hi - lo)
        probe.write_bytes(bytes(lost))
        with imijset.open(probe) as arc:
            assert arc.generation == 1, f"block at {block} lost, commit 2 still read"
            assert sorted(arc.keys()) == list(range(0, 600, 2))
            assert all(arc.get(k) == b"first %d" % k for k in range(0, 600, 2))


def test_a_file_that_ends_with_its_footer_is_not_rechecked(tmp_path: Path) -> None:
    """Without bytes after the footer (a closed writer) a damaged blob is reported when read."""
    src, copy = tmp_path / "src", tmp_path / "copy"
    start, end = snapshot_while_open(src, copy, "checked")
    data = bytearray(src.read_bytes())
    assert len(data) == end
    data[start] ^= 0xFF  # the first blob of commit 2 (key 1)
    copy.write_bytes(bytes(data))
    with imijset.open(copy) as arc:
        assert arc.generation == 2
        with pytest.raises(Corrupt, match="digest"):
            arc.get(1)


@pytest.mark.parametrize("durable, size, flushes", [(True, 100, 2), ("checked", 100, 1), ("checked", 5000, 2)])
def test_flushes_per_commit(path: Path, monkeypatch: pytest.MonkeyPatch, durable: object, size: int, flushes: int) -> None:
    """``durable=True`` flushes a batch, then its footer; ``"checked"`` flushes both at once unless
    the batch is larger than the recovery check's window (here 300 blobs of 5,000 bytes)."""
    calls: list[int] = []
    monkeypatch.setattr(writer, "fsync_file", calls.append)
    with imijset.open(path, "w", durable=durable) as arc:  # type: ignore[arg-type]
        arc.append(0, b"first")
        arc.commit()  # the first commit grows the file, then zeros are reserved past it
        for k in range(1, 301):
            arc.append(k, bytes(size))
        del calls[:]
        arc.commit()  # 1.5 MB at most: the reserved zeros still hold more than half of their 4 MiB
        assert len(calls) == flushes


CHECKED_WRITER = f"""
import sys
import imij_plugins.imijset as imijset
sys.path.insert(0, {str(Path(__file__).parent)!r})
from kill import BATCH, blob
path, first = sys.argv[1], int(sys.argv[2])
with imijset.open(path, "a", durable="checked") as arc:
    for b in range(first, first + 100000):
        for k in range(b * BATCH, (b + 1) * BATCH):
            arc.append(k, blob(k))
        arc.commit()
        print(b, flush=True)  # printed only once commit() has returned
"""


@pytest.mark.skipif(not POSIX, reason="SIGKILL")
def test_a_killed_checked_writer_loses_no_commit(path: Path) -> None:
    """SIGKILL at random moments of a ``durable="checked"`` writer, each next writer starting over
    the zeros the killed one left: every committed batch is there, whole."""
    kill_repeatedly(path, CHECKED_WRITER, seed=43)
    with imijset.open(path, "a", durable="checked"):
        pass
    data = path.read_bytes()
    assert not data.endswith(bytes(64))  # the last writer closed: no zeros left
    assert bytes(1 << 20) not in data  # each writer started over the zeros the killed one left
