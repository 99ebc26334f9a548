"""MComix (Debian's, on the system Python and Pillow) shows .imi pages from a folder and a .cbz under Xvfb.

Runs benchmarks/desktop_mcomix.py's checks when MComix, Xvfb, ImageMagick and xdotool are installed.
"""

from __future__ import annotations

import pytest
from bench_scripts import load_script

mcomix = load_script("desktop_mcomix")
REASON = mcomix.missing()


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_mcomix_shows_imi_pages_from_a_folder_and_a_cbz(tmp_path):
    results = mcomix.run(tmp_path)
    expected = [f"folder/{p.name}" for p in mcomix.PAGES]
    expected += [f"cbz/page {i} ({n})" for i, n in enumerate(mcomix.CBZ_PAGES, 1)]
    assert [r.name for r in results] == expected
    failed = [f"{r.name}: {r.detail}" for r in results if not r.ok]
    assert not failed, f"screenshots of the failures are in {tmp_path}"
