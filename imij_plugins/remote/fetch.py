"""Ranged reads of one remote file through fsspec, each response checked before it is used."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from imij_plugins.remote.errors import RangeUnsupported, RemoteChanged, RemoteError, RemoteTimeout, RemoteTruncated

INSTALL_HINT = "reading URLs needs fsspec (and aiohttp for HTTP): pip install 'imij-plugins[remote]'"


@dataclass
class FetchStats:
    """What a fetcher asked for: requests (ranges) and bytes, the metadata request included."""

    requests: int = 0
    bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, requests: int, nbytes: int) -> None:
        with self.lock:
            self.requests += requests
            self.bytes += nbytes


class RangeFetcher:
    """Byte ranges of ``path`` on filesystem ``fs``, fetched concurrently where ``fs`` is async.

    Over HTTP every range carries ``If-Match`` with the ETag seen at open, so a file replaced
    between requests fails (412) instead of mixing two versions; on any filesystem a response
    longer than its range (a server ignoring Range) or shorter (a cut connection, a file that
    shrank) is a typed RemoteError. ``timeout`` (seconds) bounds the size request and each batch of
    concurrent ranges on an async filesystem (HTTP, S3, ...): past it, ``RemoteTimeout``.
    """

    def __init__(self, fs: Any, path: str, timeout: float | None = None) -> None:
        self.fs = fs
        self.path = path
        self.timeout = timeout
        self.stats = FetchStats()
        try:
            info = self._call("info", path)
        except FileNotFoundError as exc:
            if _timed_out(exc.__cause__):  # fsspec's HTTP reports a failed size request as missing
                raise RemoteTimeout(f"{path}: no answer to the size request: {exc.__cause__}") from exc
            raise
        except Exception as exc:  # noqa: BLE001 - transport failures of any fsspec backend
            raise _transport_error(path, exc) from exc
        self.stats.add(1, 0)
        size = info.get("size")
        if size is None:
            raise RemoteError(f"{path}: the server does not say the file's size")
        self.size: int = int(size)
        self.etag: str | None = info.get("ETag") or info.get("etag")
        self._kwargs: dict[str, Any] = {}
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        if self.etag and not self.etag.startswith("W/") and {"http", "https"} & set(protocols):
            # merged with the filesystem's own headers (storage_options), which a call's would replace
            self._kwargs["headers"] = {**getattr(fs, "kwargs", {}).get("headers", {}), "If-Match": self.etag}

    def fetch(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of every ``[start, end)`` in ``ranges`` (inside the file), in one batch."""
        if not ranges:
            return []
        starts = [a for a, _ in ranges]
        ends = [b for _, b in ranges]
        try:
            if len(ranges) == 1:
                out: list[Any] = [self._call("cat_file", self.path, start=starts[0], end=ends[0], **self._kwargs)]
            else:
                out = self._call("cat_ranges", [self.path] * len(ranges), starts, ends, on_error="return", **self._kwargs)
        except Exception as exc:  # noqa: BLE001
            raise _transport_error(self.path, exc) from exc
        self.stats.add(len(ranges), sum(len(b) for b in out if isinstance(b, (bytes, bytearray))))
        for (start, end), data in zip(ranges, out):
            if isinstance(data, BaseException):
                raise _transport_error(self.path, data) from data
            if len(data) > end - start:
                raise RangeUnsupported(f"{self.path}: asked for {end - start} bytes at {start}, got {len(data)}: "
                                       "the server ignores Range requests")
            if len(data) < end - start:
                raise RemoteTruncated(f"{self.path}: asked for {end - start} bytes at {start}, got {len(data)}")
        return out

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``fs.method(...)``, bounded by ``timeout`` (fsspec cancels the coroutine) where ``fs`` is async."""
        if self.timeout is None or not getattr(self.fs, "async_impl", False):
            return getattr(self.fs, method)(*args, **kwargs)
        from fsspec.asyn import sync

        return sync(self.fs.loop, getattr(self.fs, "_" + method), *args, timeout=self.timeout, **kwargs)


def _timed_out(exc: BaseException | None) -> bool:
    """A timeout of any layer: asyncio's and fsspec's, aiohttp's, botocore's (by name: not imported)."""
    import asyncio  # here, not at import: a local read never needs it (fsspec has imported it by now)

    return isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or type(exc).__name__ in (
        "ServerTimeoutError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionTimeoutError", "SocketTimeoutError")


def _transport_error(path: str, exc: BaseException) -> OSError:
    """A typed OSError for a failed request: a changed file, a missing one, or any other failure."""
    if isinstance(exc, RemoteError | FileNotFoundError):
        return exc  # type: ignore[return-value]
    if _timed_out(exc):
        return RemoteTimeout(f"{path}: no answer in time: {type(exc).__name__}: {exc}")
    status = getattr(exc, "status", None) or getattr(exc, "code", None)
    if status in (412, 416):  # If-Match failed, or the range is past a shorter file
        return RemoteChanged(f"{path} changed while it was read (HTTP {status})")
    if status == 404:
        return FileNotFoundError(path)
    if type(exc).__name__ in ("ClientPayloadError", "ContentLengthError", "IncompleteRead"):
        return RemoteTruncated(f"{path}: response cut short: {exc}")
    return RemoteError(f"{path}: {type(exc).__name__}: {exc}")


def open_fetcher(src: Any, storage_options: dict[str, Any] | None) -> RangeFetcher:
    """A fetcher for a URL (with ``storage_options`` for its filesystem; their ``timeout``, in
    seconds, is this reader's bound on each request batch) or an fsspec file object."""
    try:
        import fsspec
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    if isinstance(src, str):
        options = dict(storage_options or {})
        timeout = options.pop("timeout", None)
        fs, path = fsspec.core.url_to_fs(src, **options)
        return RangeFetcher(fs, path, timeout)
    if storage_options:
        raise ValueError("storage_options apply to URLs; an fsspec file object carries its filesystem")
    return RangeFetcher(src.fs, src.path)
