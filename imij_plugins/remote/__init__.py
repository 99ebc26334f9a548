"""Remote reads: IMI files at fsspec URLs or in fsspec file objects, fetched by ranges.

Needs the ``remote`` extra (fsspec; aiohttp for HTTP). Nothing here imports fsspec until a URL
is opened, so local reads do not pay for it.
"""

from __future__ import annotations

from typing import Any

from imij_plugins.remote.errors import RangeUnsupported, RemoteChanged, RemoteError, RemoteTimeout, RemoteTruncated
from imij_plugins.remote.fetch import open_fetcher
from imij_plugins.remote.file import RemoteFile

__all__ = ["RangeUnsupported", "RemoteChanged", "RemoteError", "RemoteFile", "RemoteTimeout", "RemoteTruncated", "is_remote", "open_remote"]


def is_remote(src: object) -> bool:
    """A URL with a protocol (``https://``, ``s3://``, ``file://``, ...) or an fsspec file object."""
    if isinstance(src, str):
        return "://" in src
    return type(src).__module__.startswith("fsspec") and hasattr(src, "fs") and hasattr(src, "path")


def open_remote(src: Any, storage_options: dict[str, Any] | None = None) -> RemoteFile:
    """The remote file ``src`` (a URL, with ``storage_options`` for its filesystem, or an fsspec
    file object), its size asked for now and no bytes read yet."""
    return RemoteFile(open_fetcher(src, storage_options))
