"""benchmarks/corpus_desktop.py on a fake icon tree: the fixed selection rule, identical rebuilds,
and a manifest that benchmarks/run.py measures (the screenshot part only where Chromium is installed)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bench_scripts import BENCH, load_script
from PIL import Image


@pytest.fixture(scope="module")
def desktop():
    return load_script("corpus_desktop")


def _icon(path: Path, size: int, seed: int, mode: str = "RGBA") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rgba = rng.integers(0, 256, (size, size, 4), dtype=np.uint8)
    rgba[: size // 2, :, 3] = 0  # a transparent half, as icons have
    im = Image.fromarray(rgba, "RGBA")
    if mode == "P":
        im = im.convert("RGB").quantize(16)  # a palette without transparency
    im.save(path)


def _fake_tree(root: Path) -> None:
    apps = root / "Theme" / "16x16" / "apps"
    for i, name in enumerate("abcde"):
        _icon(apps / f"{name}.png", 16, i)
    _icon(apps / "f.symbolic.png", 16, 9)  # excluded by name
    _icon(apps / "g.png", 600, 10)  # over max_pixels
    (apps / "h.png").symlink_to(apps / "a.png")  # a link repeats an icon: passed over
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(apps / "i.png")  # RGB: a kind the pick does not take
    Image.fromarray(np.full((16, 16), 1000, np.uint16)).save(apps / "j.png")  # 16-bit samples: never taken
    _icon(root / "Theme" / "48x48" / "p.png", 48, 11, mode="P")


def _picks(desktop) -> tuple:
    return (
        desktop.IconPick("fake-theme", "Theme/16x16", ("RGBA",), 2, exclude=".symbolic."),
        desktop.IconPick("fake-theme", "Theme/48x48", ("P",), 1),
        desktop.IconPick("absent-theme", "Absent/32x32", ("RGBA",), 1),
    )


def _shots(desktop, tmp_path: Path) -> tuple:
    if shutil.which("chromium") is None:
        return ()
    doc = tmp_path / "doc"
    doc.mkdir()
    (doc / "style.css").write_text("body { background: #ff0000; margin: 0; }")
    (doc / "page.html").write_text("<html><head><link rel='stylesheet' href='style.css'></head>"
                                   "<body><p>Installed manual page</p></body></html>")
    return (desktop.Shot("doc-page", "fake-doc", str(doc / "page.html"), 320, 200),)


def test_selection_is_evenly_spaced_over_sorted_files_of_the_wanted_kind(desktop, tmp_path: Path) -> None:
    _fake_tree(tmp_path)
    pick = _picks(desktop)[0]
    chosen = desktop.pick_icons(tmp_path, pick)
    assert [p.name for p in chosen] == ["b.png", "d.png"]  # of a..e: places 5 // 4 and 15 // 4
    assert desktop.png_header(tmp_path / "Theme" / "48x48" / "p.png") == ("P", 48 * 48)
    with pytest.raises(desktop.corpus.Missing):
        desktop.pick_icons(tmp_path, _picks(desktop)[2])


def test_build_twice_gives_the_same_manifest_and_run_measures_it(desktop, tmp_path: Path) -> None:
    icons = tmp_path / "icons"
    _fake_tree(icons)
    picks, shots = _picks(desktop), _shots(desktop, tmp_path)
    first = desktop.build(tmp_path / "one", icon_root=icons, picks=picks, shots=shots, quiet=True)
    second = desktop.build(tmp_path / "two", icon_root=icons, picks=picks, shots=shots, quiet=True)
    assert [(r["name"], r["sha256"]) for r in first["images"]] == [(r["name"], r["sha256"]) for r in second["images"]]

    names = {r["name"]: r for r in first["images"]}
    assert {"theme-16-b", "theme-16-d", "theme-48-p"} <= set(names)
    assert names["theme-16-b"]["shape"] == [16, 16, 4] and names["theme-48-p"]["shape"] == [48, 48, 3]
    assert [s["builder"] for s in first["skipped"]] == ["icons Absent/32x32 RGBA"]
    assert first["builder"] == "benchmarks/corpus_desktop.py" and first["version"] == desktop.VERSION
    for r, a in desktop.corpus.load(tmp_path / "one"):
        assert r["class"] in desktop.corpus.CLASSES
        assert r["sha256"] == hashlib.sha256(a.tobytes()).hexdigest() and list(a.shape) == r["shape"]
    if shots:
        shot = np.load(tmp_path / "one" / "doc-page.npy")
        assert shot.shape == (200, 320, 3)
        assert tuple(shot[199, 319]) == (255, 0, 0)  # the page's own stylesheet was loaded through <base>

    results, out = tmp_path / "RESULTS.md", tmp_path / "results.json"
    cmd = [sys.executable, str(BENCH / "run.py"), "--corpus", str(tmp_path / "one"), "--corpus-no-build",
           "--results", str(results), "--json", str(out), "--codecs", "imi,png", "--efforts", "default",
           "--section", "Desktop corpus", "--repeats", "1", "--min-repeats", "1", "--min-time", "0", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    measured = [r for r in data["rows"] if "bpp" in r]
    assert {r["image"] for r in measured} == set(names)
    assert all(r["lossless"] for r in measured)
    text = results.read_text()
    assert text.count("## Desktop corpus") == 1 and "## Codec comparison" not in text
    assert "`python benchmarks/corpus_desktop.py`" in text and "#### graphics" in text
