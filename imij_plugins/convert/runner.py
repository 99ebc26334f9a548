"""Running the per-file job over a batch: in this process, or in worker processes for ``-j N``."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from multiprocessing import get_context
from typing import Iterator, Sequence

from imij_plugins.convert.paths import Job
from imij_plugins.convert.pipeline import ConvertOptions, Record, convert_file


def default_workers() -> int:
    """The cores this process may run on (``-j``'s default)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which cancels what has not started; a file being
    converted still finishes whole (its output appears only by a rename)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run(jobs: Sequence[Job], options: ConvertOptions, workers: int) -> Iterator[Record]:
    """Each job's record as it finishes: in order with one worker (in this process), in completion
    order with several (spawned processes, so it is safe wherever it is called from, each reading
    and writing IMI on one thread so N processes use N cores). Interrupting or closing the
    iterator cancels the jobs not started and waits for the running ones."""
    if workers <= 1 or len(jobs) <= 1:
        for src, dst in jobs:
            yield convert_file(src, dst, options)
        return
    pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=get_context("spawn"), initializer=_ignore_sigint)
    options = replace(options, threads=1)
    try:
        futures = [pool.submit(convert_file, src, dst, options) for src, dst in jobs]
        for future in as_completed(futures):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
