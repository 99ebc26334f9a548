"""One ImijFile read from 8 threads at once gives the pixels of a read on one thread."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

import imij_plugins

THREADS = 8


def _frames() -> list[np.ndarray]:
    rng = np.random.default_rng(8)
    base = rng.integers(0, 255, (64, 80, 3), dtype=np.uint8)
    frames = [base]
    for i in range(1, 4):  # inter frames: each read composes the canvas from the frames before it
        nxt = frames[-1].copy()
        nxt[8 * i : 8 * i + 12, 4 * i : 4 * i + 30] += np.uint8(i)
        frames.append(nxt)
    return frames


def test_one_file_from_eight_threads(tmp_path: Path) -> None:
    path = tmp_path / "anim.imi"
    frames = _frames()
    imij_plugins.write(path, frames, durations=0.1, stripe_rows=8, group_cols=32)
    regions = [(0, 0, 80, 64), (5, 7, 30, 20), (40, 30, 40, 34), (79, 63, 1, 1)]
    jobs = [(i, r) for i in range(len(frames)) for r in regions]
    barrier = threading.Barrier(THREADS)
    results: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []
    with imij_plugins.open(path) as f:
        def work(t: int) -> None:
            try:
                barrier.wait()
                results[t] = [f.read(i, region=r) for i, r in jobs[t:] + jobs[:t]]  # every thread in its own order
            except BaseException as e:  # noqa: BLE001 - collected for the assertion below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for t, got in results.items():
        order = jobs[t:] + jobs[:t]
        for (i, (x, y, w, h)), image in zip(order, got):
            assert np.array_equal(image, frames[i][y : y + h, x : x + w]), (t, i, (x, y, w, h))
    assert len(results) == THREADS
