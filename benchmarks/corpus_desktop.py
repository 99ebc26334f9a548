"""Build the second benchmark corpus: desktop icons and screenshots of installed documentation.

    python benchmarks/corpus_desktop.py                # build into benchmarks/.corpus-desktop/
    python benchmarks/corpus_desktop.py --force --list # rebuild, then print the table
    python benchmarks/run.py --corpus benchmarks/.corpus-desktop --corpus-no-build --section "Desktop corpus"

Classes: graphics (PNG icons of the Debian icon themes, 16x16 to 512x512) and screenshot
(headless Chromium of HTML manuals Debian packages install, 1280x800 to 2000x1500). Nothing
is fetched: every image is read from files a Debian package installed, picked by a fixed rule
(sorted paths, evenly spaced), so two builds on the same package versions give the same arrays.
The folder has the layout of benchmarks/corpus.py's (``<name>.npy`` per image and
``manifest.json``), written by its ``write_corpus``; the manifest also names this builder and
the Debian package versions. Sources, licenses and the apt-get line: benchmarks/CORPUS.md.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

DEFAULT_DIR = HERE / ".corpus-desktop"
BUILDER = "benchmarks/corpus_desktop.py"
VERSION = 1  # bump when a pick, a page or an operation changes: cached builds are then rebuilt
ICONS = Path("/usr/share/icons")
FONTS = ("fonts-dejavu-core", "fonts-liberation")
SHOT_TRIES = 5

LICENSES = {
    "adwaita-icon-theme": "CC-BY-SA-3.0 or LGPL-3 (adwaita-icon-theme, debian/copyright)",
    "gnome-icon-theme": "GPL-2+ (gnome-icon-theme, debian/copyright)",
    "oxygen-icon-theme": "LGPL-3+ (oxygen-icon-theme, debian/copyright)",
    "tango-icon-theme": "public domain (tango-icon-theme, debian/copyright)",
    "chromium": "BSD-3-clause (chromium, debian/copyright)",
    "python3.11-doc": "PSF License (python3.11-doc, debian/copyright)",
    "debian-reference-en": "GPL-2+ (debian-reference-en, debian/copyright)",
    "debian-reference-common": "GPL-2+ (debian-reference-common, debian/copyright)",
    "valgrind": "GNU FDL 1.2 or later (the manual's index.html)",
}
PNG_KINDS = {0: "L", 2: "RGB", 3: "P", 4: "LA", 6: "RGBA"}  # IHDR colour type (PNG 11.2.2)


@dataclass(frozen=True)
class IconPick:
    """``count`` PNGs of the colour types ``kinds`` (8-bit or less) under ``folder``, evenly spaced.

    ``folder`` is under the icon root unless absolute; names holding ``exclude`` and images of more
    than ``max_pixels`` are passed over; entries are named '<prefix>-<width>-<stem>' (prefix: the
    folder's first part)."""

    package: str
    folder: str
    kinds: tuple[str, ...]
    count: int
    pattern: str = "*.png"
    exclude: str | None = None
    max_pixels: int = 300_000
    prefix: str | None = None


@dataclass(frozen=True)
class Shot:
    """A screenshot of the installed HTML page ``path`` at ``width`` x ``height`` CSS pixels."""

    name: str
    package: str
    path: str
    width: int
    height: int


ICON_PICKS = (
    IconPick("adwaita-icon-theme", "Adwaita/512x512", ("RGBA",), 3),
    IconPick("adwaita-icon-theme", "Adwaita/256x256", ("RGBA",), 2),
    IconPick("adwaita-icon-theme", "Adwaita/96x96", ("RGBA",), 1),
    IconPick("adwaita-icon-theme", "Adwaita/48x48/legacy", ("RGBA",), 2, exclude=".symbolic."),
    IconPick("adwaita-icon-theme", "Adwaita/24x24/legacy", ("P",), 1),
    IconPick("adwaita-icon-theme", "Adwaita/16x16", ("RGBA",), 1),
    IconPick("gnome-icon-theme", "gnome/256x256", ("RGBA",), 3),
    IconPick("gnome-icon-theme", "gnome/256x256", ("LA",), 1),
    IconPick("gnome-icon-theme", "gnome/48x48", ("P",), 1),
    IconPick("gnome-icon-theme", "gnome/32x32", ("RGBA",), 1),
    IconPick("gnome-icon-theme", "gnome/16x16", ("P",), 1),
    IconPick("oxygen-icon-theme", "oxygen/base/256x256", ("RGBA",), 3),
    IconPick("oxygen-icon-theme", "oxygen/base/128x128", ("RGBA",), 2),
    IconPick("oxygen-icon-theme", "oxygen/base/64x64", ("RGBA",), 1),
    IconPick("oxygen-icon-theme", "oxygen/base/48x48", ("RGB",), 1),
    IconPick("oxygen-icon-theme", "oxygen/base/22x22", ("P",), 1),
    IconPick("tango-icon-theme", "Tango/32x32", ("RGBA",), 2),
    IconPick("tango-icon-theme", "Tango/24x24", ("P",), 1),
    IconPick("chromium", "hicolor/256x256/apps", ("RGBA",), 1, "chromium.png"),
    IconPick("chromium", "hicolor/48x48/apps", ("RGBA",), 1, "chromium.png"),
    IconPick("python3.11-doc", "/usr/share/doc/python3.11/html/_images", ("P", "RGB"), 4, prefix="pydoc"),
    IconPick("debian-reference-common", "/usr/share/debian-reference/images", ("P", "L"), 2, prefix="debref"),
)

PY_DOC = "/usr/share/doc/python3.11/html"
DEBREF = "/usr/share/debian-reference"
VALGRIND = "/usr/share/doc/valgrind/html"
SHOTS = (
    Shot("py-json-1280", "python3.11-doc", f"{PY_DOC}/library/json.html", 1280, 800),
    Shot("debref-ch01-1280", "debian-reference-en", f"{DEBREF}/ch01.en.html", 1280, 800),
    Shot("valgrind-quickstart-1280", "valgrind", f"{VALGRIND}/QuickStart.html", 1280, 800),
    Shot("py-functions-1080p", "python3.11-doc", f"{PY_DOC}/library/functions.html", 1920, 1080),
    Shot("debref-index-1080p", "debian-reference-en", f"{DEBREF}/index.en.html", 1920, 1080),
    Shot("valgrind-manual-core-1080p", "valgrind", f"{VALGRIND}/manual-core.html", 1920, 1080),
    Shot("py-stdtypes-2000", "python3.11-doc", f"{PY_DOC}/library/stdtypes.html", 2000, 1500),
    Shot("py-sqlite3-2000", "python3.11-doc", f"{PY_DOC}/library/sqlite3.html", 2000, 1500),
    Shot("debref-ch02-2000", "debian-reference-en", f"{DEBREF}/ch02.en.html", 2000, 1500),
)


# ----------------------------------------------------------------------------- icons


def png_header(path: Path) -> tuple[str, int] | None:
    """(kind 'RGBA', 'RGB', 'P', 'LA' or 'L'; pixels) from the IHDR chunk; None for 16-bit samples or not a PNG."""
    with open(path, "rb") as f:
        head = f.read(26)
    if len(head) < 26 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    depth, colour = head[24], head[25]
    kind = PNG_KINDS.get(colour) if depth <= 8 else None
    return (kind, width * height) if kind else None


def pick_icons(root: Path, pick: IconPick) -> list[Path]:
    """The pick's files: sorted regular files of the wanted kinds, ``count`` at evenly spaced places."""
    folder = root / pick.folder
    if not folder.is_dir():
        raise corpus.Missing(f"{folder} ({pick.package})")
    found = sorted(p for p in folder.rglob(pick.pattern) if p.is_file() and not p.is_symlink()
                   and not (pick.exclude and pick.exclude in p.name))
    heads = {p: png_header(p) for p in found}
    found = [p for p in found if heads[p] and heads[p][0] in pick.kinds and heads[p][1] <= pick.max_pixels]
    n = len(found)
    if n <= pick.count:
        return found
    return [found[(2 * i + 1) * n // (2 * pick.count)] for i in range(pick.count)]


def icon_mode(path: Path) -> str:
    """Array mode of an icon: RGBA where the PNG has any alpha or transparency, else L or RGB."""
    from PIL import Image

    with Image.open(path) as im:
        if im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info:
            return "RGBA"
        return "L" if im.mode in ("1", "L") else "RGB"


def entry_name(pick: IconPick, path: Path, shape: Sequence[int]) -> str:
    """'<prefix>-<width>-<file stem>', lower case, [a-z0-9-] only."""
    prefix = pick.prefix or Path(pick.folder).parts[0]
    return re.sub(r"[^a-z0-9-]+", "-", f"{prefix}-{shape[1]}-{path.stem}".lower()).strip("-")


def icon_entries(root: Path, pick: IconPick) -> list[corpus.Entry]:
    """One 'graphics' entry per icon the pick selects."""
    out = []
    for path in pick_icons(root, pick):
        mode = icon_mode(path)
        array = corpus._pil(path, mode)
        out.append(corpus.Entry(entry_name(pick, path, array.shape), "graphics", f"{path} ({pick.package})",
                                LICENSES.get(pick.package, "?"),
                                f"Pillow decode ({png_header(path)[0]} PNG), convert('{mode}')", array))
    return out


# ----------------------------------------------------------------------------- screenshots


def page_with_base(path: Path) -> str:
    """The page's HTML with a <base> to its folder, so its CSS, scripts and images load from there."""
    text = path.read_text(encoding="utf-8", errors="replace")
    base = f"<base href='{path.parent.as_uri()}/'>"
    head = re.search(r"<head[^>]*>", text, flags=re.IGNORECASE)
    return text[: head.end()] + base + text[head.end():] if head else base + text


def steady_screenshot(html_text: str, width: int, height: int, tries: int = SHOT_TRIES) -> np.ndarray:
    """corpus.py's screenshot, taken until two in a row agree: on a busy machine headless Chromium
    sometimes captures before every tile is painted (the bottom rows come out blank)."""
    last = corpus.screenshot(html_text, width, height)
    for _ in range(tries - 1):
        now = corpus.screenshot(html_text, width, height)
        if np.array_equal(now, last):
            return now
        last = now
    raise RuntimeError(f"{tries} screenshots at {width}x{height} and no two in a row agree")


def shot_entry(shot: Shot) -> corpus.Entry:
    """A 'screenshot' entry: a steady headless-Chromium screenshot of the installed page."""
    path = Path(shot.path)
    if not path.exists():
        raise corpus.Missing(f"{path} ({shot.package})")
    array = steady_screenshot(page_with_base(path), shot.width, shot.height)
    return corpus.Entry(shot.name, "screenshot", f"{path} ({shot.package}), headless Chromium",
                        LICENSES.get(shot.package, "?"),
                        f"page text plus <base href> to its folder, --window-size={shot.width},{shot.height} "
                        "--force-device-scale-factor=1 --hide-scrollbars, convert('RGB'); taken until two "
                        "captures in a row agree", array)


# ----------------------------------------------------------------------------- build


def deb_versions(packages: Sequence[str]) -> dict[str, str]:
    """Installed Debian versions of ``packages`` (absent ones are left out)."""
    out = {}
    for pkg in packages:
        try:
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if v.returncode == 0 and v.stdout.strip():
            out[pkg] = v.stdout.strip()
    return out


def _builders(root: Path, picks: Sequence[IconPick], shots: Sequence[Shot]
              ) -> Iterator[tuple[str, Callable[[], list[corpus.Entry]]]]:
    for pick in picks:
        yield f"icons {pick.folder} {'/'.join(pick.kinds)}", lambda pick=pick: icon_entries(root, pick)
    for shot in shots:
        yield f"screenshot {shot.name}", lambda shot=shot: [shot_entry(shot)]


def build(out: Path = DEFAULT_DIR, force: bool = False, strict: bool = False, quiet: bool = False,
          icon_root: Path = ICONS, picks: Sequence[IconPick] = ICON_PICKS, shots: Sequence[Shot] = SHOTS) -> dict:
    """Build the corpus into ``out`` (kept when already built by this VERSION); returns the manifest."""
    path = out / corpus.MANIFEST
    if path.exists() and not force:
        manifest = json.loads(path.read_text())
        if (manifest.get("builder") == BUILDER and manifest.get("version") == VERSION
                and all((out / r["file"]).exists() for r in manifest["images"])):
            return manifest
    entries: list[corpus.Entry] = []
    skipped: list[dict] = []
    for label, make in _builders(icon_root, picks, shots):
        try:
            made = make()
        except corpus.Missing as exc:
            if strict:
                raise SystemExit(f"missing source: {exc}") from exc
            skipped.append({"builder": label, "missing": str(exc)})
            if not quiet:
                print(f"  skipped ({exc})", file=sys.stderr)
            continue
        for e in made:
            if not quiet:
                print(f"  {e.cls:10s} {e.name:40s} {str(e.array.shape):16s} {e.array.dtype}", file=sys.stderr)
        entries += made
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate image names: {sorted({n for n in names if names.count(n) > 1})}")
    manifest = corpus.write_corpus(out, entries, skipped)
    packages = sorted({p.package for p in picks} | {s.package for s in shots} | set(FONTS))
    manifest["tools"].update(deb_versions(packages))
    manifest.update(version=VERSION, builder=BUILDER)
    path.write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_DIR, help="cache folder (default benchmarks/.corpus-desktop)")
    ap.add_argument("--force", action="store_true", help="rebuild even when a build is there")
    ap.add_argument("--strict", action="store_true", help="fail when a source package is missing")
    ap.add_argument("--list", action="store_true", help="print the manifest as a table")
    args = ap.parse_args(argv)
    manifest = build(args.out, force=args.force, strict=args.strict)
    if args.list:
        for r in manifest["images"]:
            print(f"{r['class']:10s} {r['name']:40s} {'x'.join(map(str, r['shape'])):14s} {r['dtype']:8s} {r['sha256'][:12]}")
        for s in manifest["skipped"]:
            print(f"skipped: {s['builder']}: {s['missing']}")
    total = sum(r["bytes"] for r in manifest["images"])
    print(f"{len(manifest['images'])} images, {total / 1e6:.1f} MB raw, in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
