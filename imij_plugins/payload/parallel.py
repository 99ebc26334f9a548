"""One process-wide worker pool for independent units (2.3, 2.13): the C kernels release the GIL.

A pool made per call costs more than a small image's decode; this one is made once, the calling
thread works too, and workers take the next unit index as they finish (units differ in cost).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from imij_plugins._platform import after_fork_in_child

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_CORES = os.cpu_count() or 1  # asked once: the call costs microseconds on every read


def _reset_after_fork() -> None:
    """A forked child has none of the parent's worker threads: it makes its own pool when needed."""
    global _pool, _pool_size
    _pool, _pool_size = None, 0


after_fork_in_child(_reset_after_fork)


def _executor(helpers: int) -> ThreadPoolExecutor:
    """The shared pool, grown to at least ``helpers`` threads."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < helpers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(helpers, thread_name_prefix="imij"), helpers
        return _pool


def default_threads() -> int:
    """Threads to use when the caller names none: every core."""
    return _CORES


def parallel_map(fn: Callable[[int], T], count: int, threads: int) -> list[T]:
    """``[fn(i) for i in range(count)]`` on up to ``threads`` threads, the calling thread one of them.

    The first exception stops the others taking new indices and is raised here. Helpers that had
    not started when the caller ran out of work are cancelled, so nested calls cannot deadlock.
    """
    workers = min(count, threads)
    if workers <= 1:
        return [fn(i) for i in range(count)]
    results: list[T | None] = [None] * count
    indices = iter(range(count))
    take = threading.Lock()
    failed: list[BaseException] = []

    def drain() -> None:
        while not failed:
            with take:
                i = next(indices, None)
            if i is None:
                return
            try:
                results[i] = fn(i)
            except BaseException as exc:  # handed to the caller below
                failed.append(exc)

    helpers = [_executor(workers - 1).submit(drain) for _ in range(workers - 1)]
    drain()
    for job in helpers:
        if not job.cancel():
            job.result()
    if failed:
        raise failed[0]
    return results  # type: ignore[return-value]
