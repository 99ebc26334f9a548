"""``durable="checked"``: one flush per commit, and the recovery check that makes that safe.

Commit footer: "A snapshot is valid independently of any later, incomplete append." and
"Recovery checks the root page, not every descendant." With ``durable=True`` a writer flushes a
batch's blobs and pages before it writes the footer, then flushes the footer: after a power loss
a footer on disk implies everything it references is there, so checking its root is enough.

``durable="checked"`` writes the footer right after the batch and flushes once, when the bytes
written since the last flush (the previous commit's) fit in ``WINDOW`` and the footer lands
inside the zeros the writer reserved (``writer.Output.reserve``), so bytes follow it; otherwise
the batch is flushed before its footer as with ``durable=True``. After a power loss the footer
may have reached the disk without some of those bytes, so when bytes follow a footer (a writer
is open, or was killed or lost power) recovery also checks every page and blob of that commit
in its last ``WINDOW`` bytes against the digests its parents record (a SQLite WAL's checksummed
recovery, bounded): a torn commit fails, and the scan falls back to the previous one. A writer
that closes truncates its reserved zeros, so a file that ends with its footer needs no check.
Every reader of this package runs the check, whichever policy wrote the file; a reader that
checks only the root (as the specification allows) may, after a power loss, see a torn
``"checked"`` commit, whose damaged pages and blobs then fail their digests when read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import xxhash

from imij_plugins.errors import Corrupt
from imij_plugins.imijset.branches import Branch
from imij_plugins.imijset.footer import NO_PREVIOUS, Footer
from imij_plugins.imijset.leaves import Leaf

if TYPE_CHECKING:
    from imij_plugins.imijset.reader import PageSource

Durability = bool | Literal["checked"]
DURABILITIES = (True, False, "checked")
WINDOW = 1 << 20  # bytes a "checked" commit may leave unflushed before its footer


def check_unflushed(source: PageSource, footer: Footer, root: Leaf | Branch) -> None:
    """Check every page and blob of ``footer``'s commit that ends in its last ``WINDOW`` bytes.

    ``root`` is the commit's root page, already checked against the footer. Index pages: "All
    child page ranges end before their parent", so a child that ends before the window holds no
    descendant in it and is skipped without a read.
    """
    low = max(0 if footer.previous == NO_PREVIOUS else footer.previous, footer.end - WINDOW)
    what = f"generation {footer.generation}"
    pending = [root]
    while pending:
        page = pending.pop()
        if isinstance(page, Branch):
            for c in page.children:
                if c.offset + c.length > low:
                    pending.append(source.page(c.offset, c.length, c.digest, f"{what} page at {c.offset}"))
            continue
        page.core(f"{what} leaf at {page.offset}")
        for i in range(page.count):
            offset, length, digest = page.blob_range(i)
            if offset + length > low and xxhash.xxh3_64_intdigest(source.read(offset, length, what)) != digest:
                raise Corrupt(f"{what}: the blob at {offset} fails its digest (a commit torn by a power loss?)")
