"""Positional reads of a remote file (``read_at(offset, length)``), for readers that address bytes
themselves, such as IMIJ-Set archives: each range fetched once, through the same fetcher and checks."""

from __future__ import annotations

from typing import Any

from imij_plugins.remote.fetch import FetchStats, open_fetcher
from imij_plugins.remote.source import RangeSource


class RemoteBytes:
    """A remote file's ``size`` and its bytes by ``read_at``, which fetches only what it has not yet."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.source = RangeSource(open_fetcher(url, storage_options))
        self.size = self.source.size

    @property
    def stats(self) -> FetchStats:
        """Requests and bytes so far (the size request included)."""
        return self.source.fetcher.stats

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset``, fewer at the end of the file (as ``pread``)."""
        end = min(offset + length, self.size)
        if end <= offset:
            return b""
        self.source.ensure([(offset, end)])
        return bytes(self.source.buf[offset:end])
