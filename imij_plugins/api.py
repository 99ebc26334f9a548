"""The user-level API the adapters call: ``open``, ``read``, ``encode`` and ``write``."""

from __future__ import annotations

import numpy as np

from imij_plugins.reader import Failure, FrameInfo, ImijFile, Limits, Source
from imij_plugins.writer import encode, write

__all__ = ["Failure", "FrameInfo", "ImijFile", "Limits", "Source", "encode", "open", "read", "write"]


def open(src: Source, **options: object) -> ImijFile:  # noqa: A001 - the package's public verb
    """Open an IMI file from a path, bytes or a binary file object; pixels decode on ``read``.

    Options: ``verify``, ``limits``, ``threads`` and ``partial`` (read a truncated or damaged
    file as far as it goes; see ``ImijFile``).
    """
    return ImijFile(src, **options)  # type: ignore[arg-type]


def read(src: Source, index: int = 0, **options: object) -> np.ndarray:
    """Decode frame or page ``index`` of an IMI file to an (H, W, C) array."""
    region = options.pop("region", None)
    threads = options.pop("threads", None)
    with open(src, **options) as f:
        return f.read(index, region=region, threads=threads)  # type: ignore[arg-type]
