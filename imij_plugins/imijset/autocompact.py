"""``compact="auto"``: when a writer rewrites its own archive as one sorted segment, and how.

Appending and scale: "compaction creates one new sorted segment". The policy is tiered by segment
count and bytes: a rewrite is due once the archive has at least ``min_segments`` segments and
the bytes appended after its first (base) segment reach ``growth`` times that segment's bytes.
Each rewrite leaves one segment holding the live entries, so the base grows geometrically and
the bytes rewritten per byte appended stay at most (1 + growth) / growth (2 by default).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from imij_plugins._platform import lock_writer, replace
from imij_plugins.imijset.entries import Entry
from imij_plugins.imijset.footer import Footer
from imij_plugins.imijset.writer import Output, Placement, SegmentWriter


@dataclass(frozen=True)
class AutoCompact:
    """The rewrite policy: ``compact="auto"`` is ``AutoCompact()``."""

    min_segments: int = 16
    growth: float = 1.0

    def __post_init__(self) -> None:
        if self.min_segments < 2 or not self.growth > 0:
            raise ValueError("min_segments must be at least 2 and growth positive")

    def due(self, segments: int, base_end: int, end: int) -> bool:
        """Whether an archive of ``segments`` segments, the first ending at ``base_end`` and the
        newest at ``end``, should be rewritten now."""
        return segments >= self.min_segments and end - base_end >= self.growth * base_end


def rewrite(
    path: str,
    mode_of: int,
    items: Iterable[tuple[int, Entry]],
    blob: Callable[[Entry], bytes],
    placement: Placement,
    durable: bool,
) -> tuple[int, Footer, bytes]:
    """Write ``items`` (ascending keys) as one segment into a new file, locked for writing, and
    rename it over ``path``; return its descriptor, footer and root page.

    The new file takes the permission bits of the descriptor ``mode_of`` and is synced before the
    rename when ``durable``, so ``path`` names the old file or the complete new one. The caller
    holds the old file's writer lock across the rename, so no writer can start on either file.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".imijset-", suffix=".tmp", dir=directory)
    try:
        lock_writer(fd, tmp)
        os.chmod(tmp, stat.S_IMODE(os.fstat(mode_of).st_mode))  # by path: Windows has no fchmod
        segment = SegmentWriter(Output(fd, 0), None, placement)
        for _, entry in items:
            segment.add(entry.key, blob(entry), entry.description, entry.metadata, entry.raw_metadata)
        footer, root = segment.finish(durable)
        replace(tmp, path)
    except BaseException:
        os.close(fd)
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return fd, footer, root
