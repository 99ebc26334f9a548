"""Running the per-file job on an existing Dask distributed cluster (``imij convert --dask ADDRESS``).

``distributed`` is the optional extra ``[dask]``; it is imported only when a cluster is asked for.
Each worker thread converts one file at a time with one IMI thread, as ``-j N`` processes do.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator, Sequence

from imij_plugins.convert.paths import Job
from imij_plugins.convert.pipeline import ConvertOptions, Record, convert_file

EXTRA_HINT = "--dask needs the optional dependency distributed: pip install 'imij-plugins[dask]'"


def run_dask(jobs: Sequence[Job], options: ConvertOptions, address: str) -> Iterator[Record]:
    """Connect to the scheduler at ``address`` now (ImportError naming the extra, OSError when it
    cannot be reached), then each job's record as it finishes; closing the iterator cancels the rest."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(EXTRA_HINT) from exc
    client = Client(address, timeout=30)
    return _results(client, jobs, replace(options, threads=1))


def _results(client: Any, jobs: Sequence[Job], options: ConvertOptions) -> Iterator[Record]:
    from distributed import as_completed

    futures = client.map(convert_file, [s for s, _ in jobs], [d for _, d in jobs], [options] * len(jobs), pure=False)
    try:
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.cancel(futures)
        client.close()
