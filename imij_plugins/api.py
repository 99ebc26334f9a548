"""The user-level API the adapters call: ``open``, ``read``, ``encode`` and ``write``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from imij_plugins.container.file import is_imi
from imij_plugins.container.header import default_cicp
from imij_plugins.options import OPTION_NAMES, EncodeKeywords, EncodeOptions, Frame
from imij_plugins.reader import Failure, FrameInfo, ImageInfo, ImijFile, Limits, Source
from imij_plugins.registry.samples import LAYOUTS

if TYPE_CHECKING:
    from imij_plugins.writer import encode, write

__all__ = [
    "EncodeKeywords",
    "EncodeOptions",
    "Failure",
    "Frame",
    "FrameInfo",
    "LAYOUT_DEFAULT_CICPS",
    "OPTION_NAMES",
    "ImageInfo",
    "ImijFile",
    "Limits",
    "Source",
    "encode",
    "is_imi",
    "open",
    "read",
    "write",
]

_LIMITS = Limits()
#: The CICP each channel layout means when its header declares none (1.0), by layout name.
LAYOUT_DEFAULT_CICPS: dict[str, tuple[int, int, int, int]] = {c.name: default_cicp(code) for code, c in LAYOUTS.items()}


def open(  # noqa: A001 - the package's public verb
    src: Source,
    *,
    verify: bool = True,
    limits: Limits = _LIMITS,
    threads: int | None = None,
    partial: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> ImijFile:
    """Open an IMI file from a path (memory-mapped), bytes, a binary file object, or a URL
    (``https://``, ``s3://``, ``file://``, any fsspec protocol) or fsspec file object.

    The container and every frame's header are checked now; pixels decode on ``read``.
    ``verify`` checks the file checksum (cSUM, 1.4) now and pSUM digests on full reads;
    ``limits`` bounds what a read may allocate; ``threads`` is the default for reads;
    ``partial`` reads a truncated or damaged file as far as it goes (see ``ImijFile``).
    A URL is read by ranges (the ``remote`` extra): the container now, each read's units when
    it runs, and ``verify`` checks the cSUM pieces under the bytes fetched as they arrive;
    ``storage_options`` go to its fsspec filesystem (docs/REMOTE.md).
    """
    return ImijFile(src, verify=verify, limits=limits, threads=threads, partial=partial, storage_options=storage_options)


def read(
    src: Source,
    index: int = 0,
    *,
    region: tuple[int, int, int, int] | None = None,
    threads: int | None = None,
    verify: bool = True,
    limits: Limits = _LIMITS,
    partial: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> np.ndarray:
    """Frame or page ``index`` of an IMI file as an (H, W, C) array of its sample type
    (``region=(x, y, w, h)`` decodes only the units it overlaps)."""
    with ImijFile(src, verify=verify, limits=limits, partial=partial, storage_options=storage_options) as f:
        return f.read(index, region=region, threads=threads)


def __getattr__(name: str) -> Any:
    """``encode`` and ``write`` load the writer on first use, so reading imports no writer module."""
    if name in ("encode", "write"):
        from imij_plugins import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
