"""The shared unit pool: results in order, the first error raised, nesting without deadlock, and
which decodes use it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import imij_plugins
from imij_plugins.payload import data
from imij_plugins.payload.parallel import parallel_map


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_results_in_index_order(threads: int) -> None:
    assert parallel_map(lambda i: i * i, 37, threads) == [i * i for i in range(37)]
    assert parallel_map(lambda i: i, 0, threads) == []


def test_more_than_one_thread_works() -> None:
    seen: set[int] = set()
    barrier = threading.Barrier(2, timeout=10)

    def unit(i: int) -> int:
        seen.add(threading.get_ident())
        if i < 2:
            barrier.wait()  # both first units must run at the same time
        return i

    assert parallel_map(unit, 8, 2) == list(range(8))
    assert len(seen) == 2


def test_first_error_is_raised_and_stops_new_work() -> None:
    started: list[int] = []

    def unit(i: int) -> int:
        started.append(i)
        if i == 3:
            raise ValueError("unit 3")
        return i

    with pytest.raises(ValueError, match="unit 3"):
        parallel_map(unit, 1000, 2)
    assert len(started) < 1000


def test_nested_maps_finish() -> None:
    """Every pool thread busy with an outer unit that maps inner units: no deadlock."""
    inner = lambda i: parallel_map(lambda j: i * j, 6, 4)  # noqa: E731
    assert parallel_map(inner, 8, 4) == [[i * j for j in range(6)] for i in range(8)]


@pytest.mark.parametrize("shape, pool", [((64, 64, 3), False), ((400, 400, 3), True)])
def test_small_decodes_stay_on_the_calling_thread(monkeypatch, shape, pool):
    """data.PARALLEL_WORK: a decode of little work is not handed out; a larger one is."""
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    encoded = imij_plugins.encode(img, stripe_rows=16)
    seen = []

    def spy(fn, count, threads):
        seen.append(threads)
        return parallel_map(fn, count, threads)

    monkeypatch.setattr(data, "parallel_map", spy)
    assert np.array_equal(imij_plugins.read(encoded, threads=2), img)
    assert seen == [2 if pool else 1]
