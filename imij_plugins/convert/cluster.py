"""Running the per-file job on an existing Dask distributed cluster (``imij convert --dask ADDRESS``).

``distributed`` is the optional extra ``[dask]``; it is imported only when a cluster is asked for.
Each worker thread converts one file at a time with one IMI thread, as ``-j N`` processes do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from imij_plugins.convert.paths import Job
from imij_plugins.convert.pipeline import ConvertOptions, Record, convert_file

EXTRA_HINT = "--dask needs the optional dependency distributed: pip install 'imij-plugins[dask]'"


def run_dask(jobs: Sequence[Job], options: ConvertOptions, address: str) -> Cluster:
    """Connect to the scheduler at ``address`` now (ImportError naming the extra, OSError when it
    cannot be reached) and submit every job."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(EXTRA_HINT) from exc
    return Cluster(Client(address, timeout=30), jobs, replace(options, threads=1))


class Cluster:
    """The jobs on a Dask cluster, as a ``runner.Batch``: records in completion order; ``cancel()``
    cancels the futures not finished (a task already running on a worker still completes)."""

    def __init__(self, client: Any, jobs: Sequence[Job], options: ConvertOptions) -> None:
        from distributed import as_completed

        self._client = client
        self._futures = client.map(convert_file, [s for s, _ in jobs], [d for _, d in jobs], [options] * len(jobs), pure=False)
        self._completed = as_completed(self._futures)

    def __iter__(self) -> Iterator[Record]:
        for future in self._completed:
            if future.status == "finished":
                yield future.result()

    def cancel(self) -> None:
        self._client.cancel([f for f in self._futures if not f.done()])

    def close(self) -> None:
        self.cancel()
        self._client.close()
