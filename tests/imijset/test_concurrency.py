"""Processes on one archive: readers while a writer commits, and a writer killed with SIGKILL.

Batch b holds keys BATCH * b .. BATCH * b + BATCH - 1, each blob naming its key and batch, so a
reader can tell a whole generation (every batch complete, each blob its own) from a torn one.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BATCH = 5
WRITER = f"""
import sys
import imij_plugins.imijset as imijset
path, first, count, durable = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
with imijset.open(path, "a", durable=durable) as arc:
    for b in range(first, first + count):
        for k in range(b * {BATCH}, (b + 1) * {BATCH}):
            arc.append(k, f"key {{k}} batch {{b}} ".encode() * 40, filename=f"k{{k}}")
        arc.commit()
        print(b, flush=True)  # printed only once commit() has returned
"""

READER = f"""
import sys, time
import imij_plugins.imijset as imijset
from imij_plugins.errors import ImijError
path, until = sys.argv[1], float(sys.argv[2])
seen = 0
while time.time() < until:
    with imijset.open(path) as arc:
        keys = sorted(arc.keys())
        batches = len(keys) // {BATCH}
        assert keys == list(range(batches * {BATCH})), keys  # whole batches, none torn
        for k in keys:
            assert arc.get(k) == f"key {{k}} batch {{k // {BATCH}}} ".encode() * 40, k
        assert len(arc.query(filename=f"k{{keys[-1]}}")) == (1 if keys else 0)
        seen = max(seen, batches)
print(seen)
"""


def _start(code: str, *args: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _batches(path: Path) -> list[int]:
    import imij_plugins.imijset as imijset

    if not path.exists():  # killed before it created the file
        return []
    with imijset.open(path) as arc:
        keys = sorted(arc.keys())
    assert keys == list(range(len(keys))) and len(keys) % BATCH == 0
    return list(range(len(keys) // BATCH))


def test_two_readers_see_whole_generations_while_a_writer_commits(path: Path) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(path), "0", "1", "0"], check=True, capture_output=True)
    until = time.time() + 3
    readers = [_start(READER, path, until) for _ in range(2)]
    writer = _start(WRITER, path, 1, 40, 0)
    out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    for r in readers:
        rout, rerr = r.communicate(timeout=120)
        assert r.returncode == 0, rerr[-3000:]
        assert int(rout.strip()) >= 1
    assert _batches(path) == list(range(41))


@pytest.mark.parametrize("durable", [True, False])
def test_a_writer_killed_at_random_moments_keeps_every_returned_commit(path: Path, durable: bool) -> None:
    """SIGKILL (a real kill) at a random moment, 10 times: every batch whose commit() returned
    (the child printed it) is there, whole; nothing else but at most the batch in flight."""
    rng = random.Random(26)
    committed: list[int] = []
    in_flight: set[int] = set()  # per kill, the batch after the last one printed
    next_batch = 0
    for _ in range(10):
        writer = _start(WRITER, path, next_batch, 1000, int(durable))
        first = writer.stdout.readline()  # past the interpreter's start: it is committing now
        time.sleep(rng.uniform(0, 0.05))
        os.kill(writer.pid, signal.SIGKILL)
        out = first + writer.stdout.read()  # the same buffered reader: communicate() would skip its buffer
        writer.wait(timeout=60)
        writer.stderr.close()
        writer.stdout.close()
        printed = [int(line) for line in out.split()]
        committed += printed
        in_flight.add(next_batch + len(printed))
        present = set(_batches(path))
        assert set(committed) <= present
        assert present <= set(committed) | in_flight  # at most the batch being committed
        next_batch = len(present)
