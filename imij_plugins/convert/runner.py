"""Running the per-file job over a batch: in this process, or in worker processes for ``-j N``."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace
from multiprocessing import get_context
from typing import Protocol

from imij_plugins.convert.paths import Job
from imij_plugins.convert.pipeline import ConvertOptions, Record, convert_file


def default_workers() -> int:
    """The cores this process may run on (``-j``'s default)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class Batch(Protocol):
    """Records as files finish. After ``cancel()`` (on Ctrl-C) no new file starts, and iterating
    on yields the records of the files that were being converted, so every written file is counted;
    ``close()`` releases the workers."""

    def __iter__(self) -> Iterator[Record]: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...


class InProcess:
    """Each job converted in this process, in order (``-j 1``); Ctrl-C stops the file being
    converted (its temporary file is removed), so nothing is left running after ``cancel()``."""

    def __init__(self, jobs: Sequence[Job], options: ConvertOptions) -> None:
        self._jobs, self._options = list(jobs), options
        self._next = 0

    def __iter__(self) -> Iterator[Record]:
        while self._next < len(self._jobs):
            src, dst = self._jobs[self._next]
            self._next += 1
            yield convert_file(src, dst, self._options)

    def cancel(self) -> None:
        self._next = len(self._jobs)

    def close(self) -> None:
        pass


class Pool:
    """Each job in spawned worker processes, in completion order, each reading and writing IMI on
    one thread (N processes use N cores). The workers are started with SIGINT ignored (they
    inherit that through exec), so Ctrl-C reaches only this process, which cancels what has not
    started while the running files finish whole."""

    def __init__(self, jobs: Sequence[Job], options: ConvertOptions, workers: int) -> None:
        options = replace(options, threads=1)
        self._executor = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=get_context("spawn"))
        with _sigint_ignored():  # the workers start now, on the first submit
            self._pending: set[Future[Record]] = {self._executor.submit(convert_file, s, d, options) for s, d in jobs}

    def __iter__(self) -> Iterator[Record]:
        while self._pending:
            done, _ = wait(self._pending, return_when=FIRST_COMPLETED)
            for future in done:
                self._pending.discard(future)
                if not future.cancelled():
                    yield future.result()

    def cancel(self) -> None:
        for future in self._pending:
            future.cancel()  # only a job not started yet can be cancelled

    def close(self) -> None:
        self.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in the block (processes started in it inherit that), when this is the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run(jobs: Sequence[Job], options: ConvertOptions, workers: int) -> Batch:
    """The batch: in this process with one worker (or one job), else in worker processes."""
    if workers <= 1 or len(jobs) <= 1:
        return InProcess(jobs, options)
    return Pool(jobs, options, workers)
