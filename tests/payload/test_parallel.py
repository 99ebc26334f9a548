"""The shared unit pool: results in order, the first error raised, nesting without deadlock."""

from __future__ import annotations

import threading

import pytest

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
