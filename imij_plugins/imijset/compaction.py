"""Compaction: the live entries of an archive rewritten into a new file as one sorted segment.

Appending and scale: "compaction creates one new sorted segment"; Index pages: "Compaction
preserves" indexed metadata; Optional sequence seek blob: "Compaction copies both entries and
the reference unchanged." Blobs, summaries, CICP, image counts, hints and metadata bytes are
copied unchanged; only offsets and pages are new.
"""

from __future__ import annotations

import os
import tempfile

from imij_plugins._platform import fsync_directory, replace_unlocked
from imij_plugins.imijset.archive import Archive
from imij_plugins.imijset.durability import Durability
from imij_plugins.imijset.writer import Placement


def compact(source: Archive, dst: str | os.PathLike, *, placement: Placement = "interleaved", durable: Durability = True) -> int:
    """Write ``source``'s live entries to ``dst`` (through a temporary file and a rename); return the count.

    Every page of ``source`` is checked by the listing and every blob by its digest as it is copied.
    ``source`` is never modified, and ``dst`` is the old file or the complete new one: an archive
    writer holding ``dst`` makes this raise BlockingIOError, and on Windows so does any program
    holding it open (PermissionError, after a brief wait).
    """
    path = os.fspath(dst)
    if os.path.exists(path) and os.path.samefile(path, source.path):
        raise ValueError("compaction writes a new file: dst must differ from the source archive")
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".imijset-", suffix=".tmp", dir=directory)
    os.close(fd)
    count = 0
    try:
        # the whole file is one commit, with no earlier one to fall back to: flushed in order
        with Archive(tmp, "w", placement=placement, durable=bool(durable)) as out:
            for _, entry in source.items():
                out.append_entry(entry, source.blob(entry))
                count += 1
        replace_unlocked(tmp, path)
        if durable:
            fsync_directory(path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return count
