"""MComix, a Pillow program nobody here wrote, shows .imi pages: a scripted check under Xvfb.

Makes a folder of .imi pages (a photo, an RGBA page, an animation, a two-page file) and a .cbz of
.imi pages, opens each in Debian's MComix on a virtual X display, and screenshots the window. Every
page carries a solid disc of its own colour at its centre: a page counts as shown when enough of
the window has that colour (a broken-image icon has none of it). Animations are screenshot
repeatedly to see which frames appear, next to an animated GIF (which MComix plays through
GdkPixbuf) and an animated WebP (which it loads through Pillow, as it does .imi).

MComix runs on the system Python (/usr/bin/python3) with the distribution's Pillow and numpy.
Nothing is installed into it: this checkout goes on PYTHONPATH, and ``imij pillow-autoload enable``
writes its .pth hook into a temporary folder that a temporary ``sitecustomize`` adds as a site
directory, so the hook runs exactly as it would from site-packages.

Needs (Debian 12): apt install mcomix xvfb imagemagick xdotool python3-numpy python3-xxhash
python3-cffi-backend. Usage::

    python benchmarks/desktop_mcomix.py [--screenshot docs/mcomix.png] [--keep DIR]

Prints one line per check and exits 1 when a still page is not shown.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import imij_plugins  # noqa: E402  (this checkout, as MComix will import it)
from imij_plugins.samples import photo_like  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"
TOOLS = ("mcomix", "Xvfb", "import", "xdotool")
SYSTEM_MODULES = ("PIL", "numpy", "xxhash", "_cffi_backend", "gi")
WINDOW = (800, 600)  # the window size of the checks and of the screenshot
TOLERANCE = 16  # per channel: MComix scales pages with bilinear filtering
SHOWN = 0.01  # fraction of the window in the page's disc colour that counts as shown
LOAD_TIMEOUT = 30.0  # seconds to wait for a page (MComix and the codec load on first use)

Colour = tuple[int, int, int]


@dataclass(frozen=True)
class Page:
    """One test file: the disc colour of each frame or page it holds, in order."""

    name: str
    colours: tuple[Colour, ...]
    note: str


PAGES = (
    Page("01-photo.imi", ((255, 128, 0),), "photo-like RGB, 800x600, with pRVW previews"),
    Page("02-rgba.imi", ((0, 200, 255),), "RGBA, transparent corners"),
    Page("03-anim.imi", ((255, 0, 255), (0, 255, 0), (255, 255, 0)), "animation, 3 frames of 250 ms, loop forever"),
    Page("04-pages.imi", ((128, 0, 255), (255, 0, 0)), "two pages in one file"),
    Page("05-anim.gif", ((0, 0, 255), (255, 255, 255), (0, 128, 128)), "control: animated GIF (GdkPixbuf)"),
    Page("06-anim.webp", ((255, 64, 128), (64, 255, 128), (128, 64, 255)), "control: animated WebP (Pillow)"),
)
CBZ_PAGES = ("01-photo.imi", "02-rgba.imi", "03-anim.imi")


def missing() -> str | None:
    """Why the check cannot run here (a tool or a system-Python module missing), or None."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"not installed: {', '.join(absent)} (apt install mcomix xvfb imagemagick xdotool)"
    if not os.path.exists(SYSTEM_PYTHON):
        return f"no {SYSTEM_PYTHON}"
    probe = f"import {', '.join(SYSTEM_MODULES)}"
    done = subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"{SYSTEM_PYTHON} cannot import {', '.join(SYSTEM_MODULES)}: {done.stderr.strip().splitlines()[-1]}"
    return None


def disc_image(
    colour: Colour, size: tuple[int, int], background: np.ndarray | None = None, alpha: bool = False
) -> np.ndarray:
    """A (H, W, 3 or 4) page: ``background`` (grey by default) with a disc of ``colour`` at the centre."""
    width, height = size
    y, x = np.mgrid[0:height, 0:width]
    radius = min(width, height) * 0.3
    disc = (x - width / 2) ** 2 + (y - height / 2) ** 2 < radius**2
    rgb = np.full((height, width, 3), 90, np.uint8) if background is None else background.copy()
    rgb[disc] = colour
    if not alpha:
        return rgb
    a = np.where((x - width / 2) ** 2 + (y - height / 2) ** 2 < (min(width, height) * 0.48) ** 2, 255, 0).astype(np.uint8)
    a[disc] = 255
    return np.dstack([rgb, a])


def make_pages(folder: Path) -> None:
    """Write every file of PAGES into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    by_name = {p.name: p for p in PAGES}
    photo = disc_image(by_name["01-photo.imi"].colours[0], (800, 600), photo_like(600, 800))
    imij_plugins.write(folder / "01-photo.imi", photo, previews=(4, 16))
    imij_plugins.write(folder / "02-rgba.imi", disc_image(by_name["02-rgba.imi"].colours[0], (600, 600), alpha=True))
    frames = [disc_image(c, (640, 480)) for c in by_name["03-anim.imi"].colours]
    imij_plugins.write(folder / "03-anim.imi", frames, durations=0.25, loop=0)
    pages = [disc_image(c, (480, 640)) for c in by_name["04-pages.imi"].colours]
    imij_plugins.write(folder / "04-pages.imi", pages, kind="pages")
    for name, fmt in (("05-anim.gif", "GIF"), ("06-anim.webp", "WEBP")):
        images = [Image.fromarray(disc_image(c, (640, 480))) for c in by_name[name].colours]
        extra = {"lossless": True} if fmt == "WEBP" else {}
        images[0].save(folder / name, format=fmt, save_all=True, append_images=images[1:], duration=250, loop=0, **extra)


def make_cbz(folder: Path, cbz: Path) -> None:
    """A comic book archive of the CBZ_PAGES of ``folder`` (stored: the pages are compressed already)."""
    with zipfile.ZipFile(cbz, "w", zipfile.ZIP_STORED) as archive:
        for name in CBZ_PAGES:
            archive.write(folder / name, name)


def python_path(work: Path) -> str:
    """A PYTHONPATH for the system Python: a sitecustomize that adds a site directory holding the
    autoload .pth that ``imij pillow-autoload enable`` writes, then this checkout."""
    hook_dir, custom_dir = work / "site" / "hook", work / "site" / "custom"
    hook_dir.mkdir(parents=True, exist_ok=True)
    custom_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [SYSTEM_PYTHON, "-m", "imij_plugins.cli", "pillow-autoload", "enable", "--site-dir", str(hook_dir)],
        env=env, check=True, capture_output=True, cwd=work,
    )
    (custom_dir / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(hook_dir)!r})\n")
    return os.pathsep.join([str(custom_dir), str(REPO)])


@contextlib.contextmanager
def xvfb(work: Path) -> Iterator[str]:
    """A virtual X display for the duration; its name (``:N``, the first free number Xvfb finds)."""
    read_fd, write_fd = os.pipe()
    # -noreset: the server would reset when one viewer quits and refuse the next one meanwhile
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x1024x24", "-nolisten", "tcp", "-noreset"],
        pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=open(work / "xvfb.log", "wb"),
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as pipe:
            number = pipe.readline().strip()
        if not number:
            raise RuntimeError(f"Xvfb did not start: {(work / 'xvfb.log').read_text()[-500:]}")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(10)


@dataclass
class MComix:
    """One MComix process on ``display`` showing ``target``, with its own empty configuration."""

    target: Path
    display: str
    work: Path
    pythonpath: str
    process: subprocess.Popen = field(init=False)
    window: str = field(init=False)

    def __enter__(self) -> MComix:
        home = self.work / "home"
        env = {
            **os.environ,
            "DISPLAY": self.display,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "PYTHONPATH": self.pythonpath,
            "NO_AT_BRIDGE": "1",  # no accessibility bus under Xvfb
        }
        env.pop("PYTHONHOME", None)
        self.log = open(self.work / "mcomix.log", "ab")
        command = [shutil.which("mcomix") or "mcomix", str(self.target)]
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=self.log)
        try:
            pid = str(self.process.pid)
            found = self._xdotool("search", "--sync", "--onlyvisible", "--pid", pid, timeout=LOAD_TIMEOUT).split()
        except subprocess.TimeoutExpired:
            found = []
        if not found:
            self.__exit__()
            tail = (self.work / "mcomix.log").read_text(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"MComix showed no window for {self.target.name}: {tail}")
        self.window = found[0]
        self._xdotool("windowmove", self.window, "0", "0")
        self._xdotool("windowsize", "--sync", self.window, str(WINDOW[0]), str(WINDOW[1]))
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.kill()  # MComix handles SIGTERM from GTK's idle loop, seconds later; it has nothing to save
        self.process.wait()
        self.log.close()

    def _xdotool(self, *args: str, timeout: float = 10.0) -> str:
        env = {**os.environ, "DISPLAY": self.display}
        return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=timeout).stdout

    def screenshot(self) -> Image.Image:
        """The MComix window as it is on the display now."""
        command = ["import", "-display", self.display, "-window", self.window, "png:-"]
        png = subprocess.run(command, capture_output=True, check=True).stdout
        return Image.open(io.BytesIO(png)).convert("RGB")

    def key(self, name: str) -> None:
        """Press a key in the MComix window (focused first: there is no window manager to do it)."""
        self._xdotool("windowfocus", "--sync", self.window)
        self._xdotool("key", name)

    def wait_for(self, colour: Colour, timeout: float = LOAD_TIMEOUT) -> tuple[float, Image.Image]:
        """Screenshot until ``colour`` covers SHOWN of the window or ``timeout`` passes; the last
        fraction and screenshot."""
        deadline = time.monotonic() + timeout
        while True:
            shot = self.screenshot()
            share = coverage(shot, colour)
            if share >= SHOWN or time.monotonic() > deadline or self.process.poll() is not None:
                return share, shot
            time.sleep(0.25)

    def frames_seen(self, colours: tuple[Colour, ...], seconds: float = 3.0) -> list[int]:
        """Which of ``colours`` (frame indices) appear in screenshots taken for ``seconds``."""
        seen: set[int] = set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            shot = self.screenshot()
            seen.update(i for i, c in enumerate(colours) if coverage(shot, c) >= SHOWN)
            time.sleep(0.05)
        return sorted(seen)


def coverage(shot: Image.Image, colour: Colour) -> float:
    """The fraction of ``shot`` within TOLERANCE of ``colour`` in every channel."""
    pixels = np.asarray(shot, dtype=np.int16)
    return float((np.abs(pixels - np.array(colour, np.int16)) <= TOLERANCE).all(axis=-1).mean())


def shown(share: float) -> str:
    """Whether a page counts as shown, with the fraction of the window in its colour."""
    return f"{'shown' if share >= SHOWN else 'NOT shown'} ({share:.1%} of the window in its colour)"


@dataclass
class Result:
    """One check: what was opened, what was expected, what the screenshots showed."""

    name: str
    ok: bool
    detail: str


def run(work: Path, screenshot: Path | None = None) -> list[Result]:
    """Every check, in ``work``; the screenshot of the photo page to ``screenshot`` when given."""
    pages = work / "pages"
    make_pages(pages)
    cbz = work / "imi-pages.cbz"
    make_cbz(pages, cbz)
    pythonpath = python_path(work)
    results: list[Result] = []
    by_name = {p.name: p for p in PAGES}
    with xvfb(work) as display:
        for index, page in enumerate(PAGES):
            with MComix(pages / page.name, display, work, pythonpath) as viewer:
                share, shot = viewer.wait_for(page.colours[0])
                ok = share >= SHOWN
                detail = f"{page.note}: first image {shown(share)}"
                if ok and len(page.colours) > 1:
                    seen = viewer.frames_seen(page.colours)
                    label = "pages" if "pages" in page.note else "frames"
                    detail += f"; {label} seen over 3 s: {[i + 1 for i in seen]} of {len(page.colours)}"
                    if label == "pages":
                        viewer.key("Page_Down")
                        share2, _ = viewer.wait_for(page.colours[1], timeout=5.0)
                        following = PAGES[index + 1] if index + 1 < len(PAGES) else None
                        if share2 >= SHOWN:
                            detail += "; Page_Down shows page 2"
                        elif following and coverage(viewer.wait_for(following.colours[0])[1], following.colours[0]) >= SHOWN:
                            detail += f"; Page_Down goes to the next file ({following.name}), not to page 2"
                        else:
                            detail += "; Page_Down shows neither page 2 nor the next file"
                if page.name == "01-photo.imi" and screenshot is not None and ok:
                    screenshot.parent.mkdir(parents=True, exist_ok=True)
                    shot.quantize(256).save(screenshot, optimize=True)  # a 256-colour PNG: 60 KB, not 380 KB
                    detail += f"; screenshot {screenshot}"
                if not ok:
                    shot.save(work / f"failed-{page.name}.png")
                results.append(Result(f"folder/{page.name}", ok or "control" in page.note, detail))
        with MComix(cbz, display, work, pythonpath) as viewer:
            for number, name in enumerate(CBZ_PAGES, 1):
                if number > 1:
                    viewer.key("Page_Down")
                share, shot = viewer.wait_for(by_name[name].colours[0])
                ok = share >= SHOWN
                if not ok:
                    shot.save(work / f"failed-cbz-{number}.png")
                results.append(Result(f"cbz/page {number} ({name})", ok, shown(share)))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screenshot", type=Path, help="save the MComix window showing the photo page here (PNG)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (pages, logs, failed screenshots)")
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(f"skipped: {reason}")
        return 0
    with contextlib.ExitStack() as stack:
        work = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="imij-mcomix-")))
        work.mkdir(parents=True, exist_ok=True)
        results = run(work, args.screenshot)
    for r in results:
        print(f"{'ok  ' if r.ok else 'FAIL'} {r.name}: {r.detail}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
