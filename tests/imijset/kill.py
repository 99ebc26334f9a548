"""SIGKILL a process that commits numbered batches, at random moments, and check what survived.

A script gets the archive path and its first batch number, commits batches of ``BATCH`` entries
(key ``k`` holds ``blob(k)``), and prints each batch number once its commit has returned.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import imij_plugins.imijset as imijset

BATCH = 5


def blob(key: int) -> bytes:
    return f"key {key} batch {key // BATCH} ".encode() * 40


def batches(path: Path) -> list[int]:
    """The batches the archive holds, each whole (every page and blob checked)."""
    if not path.exists():
        return []
    with imijset.open(path) as arc:
        arc.verify()
        keys = sorted(arc.keys())
        for k in keys:
            assert arc.get(k) == blob(k)
    assert keys == list(range(len(keys))) and len(keys) % BATCH == 0
    return list(range(len(keys) // BATCH))


def kill_repeatedly(path: Path, script: str, seed: int, kills: int = 8, window: float = 0.1) -> None:
    """Run ``script`` ``kills`` times, each SIGKILLed within ``window`` seconds of its first commit:
    every batch whose commit returned is there, whole, and nothing but at most the batch in flight."""
    rng = random.Random(seed)
    committed: list[int] = []
    in_flight: set[int] = set()
    next_batch = 0
    for _ in range(kills):
        proc = subprocess.Popen([sys.executable, "-c", script, str(path), str(next_batch)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        first = proc.stdout.readline()  # type: ignore[union-attr]
        time.sleep(rng.uniform(0, window))
        os.kill(proc.pid, signal.SIGKILL)
        out = first + proc.stdout.read()  # type: ignore[union-attr]
        proc.wait(timeout=60)
        err = proc.stderr.read()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
        printed = [int(line) for line in out.split()]
        assert printed, f"the process committed nothing before the kill: {err}"
        committed += printed
        in_flight.add(next_batch + len(printed))
        present = set(batches(path))
        assert set(committed) <= present
        assert present <= set(committed) | in_flight
        next_batch = len(present)
