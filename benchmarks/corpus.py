"""Build the codec benchmark corpus: real images available without the web, one .npy per image.

    python benchmarks/corpus.py                # build into benchmarks/.corpus/ (skips what is built)
    python benchmarks/corpus.py --force --list # rebuild, then print the table

Classes: photo, screenshot, graphics, 16-bit, float, bilevel. Every image comes from a package
(PyPI wheels: scikit-image, matplotlib, imagecodecs; Debian: imagemagick, chromium,
libjxl-testdata, python-drizzle-testdata, eso-midas-testdata), is read from the installed files
(never fetched: skimage images that pooch would download are not used), and is turned into an
exact array by the documented, deterministic operation in its ``op``. A source whose package is
missing is skipped with a note (``--strict`` makes that an error). Sources, licenses and install
commands: benchmarks/CORPUS.md.

The cache folder holds ``<name>.npy`` files and ``manifest.json`` (class, shape, dtype, source,
license, op and the SHA-256 of each array's bytes, so two builds can be compared).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import io
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CLASSES = ("photo", "screenshot", "graphics", "16-bit", "float", "bilevel")
DEFAULT_DIR = Path(__file__).resolve().parent / ".corpus"
MANIFEST = "manifest.json"
CORPUS_VERSION = 1  # bump when an entry or an operation changes: cached builds are then rebuilt

LIBJXL = Path("/usr/share/libjxl-testdata")
DRIZZLE = Path("/usr/share/python-drizzle/test_data")
MIDAS_GLOB = "/usr/lib/eso-midas/*/test/prim"
GPL3 = Path("/usr/share/common-licenses/GPL-3")


class Missing(Exception):
    """A source's package or file is not installed here."""


@dataclass
class Entry:
    name: str
    cls: str
    source: str
    license: str
    op: str
    array: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    def record(self) -> dict:
        a = self.array
        assert a is not None
        return {
            "name": self.name,
            "class": self.cls,
            "file": f"{self.name}.npy",
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "bytes": int(a.nbytes),
            "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest(),
            "source": self.source,
            "license": self.license,
            "op": self.op,
            **self.meta,
        }


# ----------------------------------------------------------------------------- readers


def _pil(path: Path | str, mode: str) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        return np.ascontiguousarray(np.asarray(im.convert(mode)))


def _png16(path: Path) -> np.ndarray:
    """A 16-bit PNG exactly (Pillow cannot hold 16-bit RGB): libpng through imagecodecs."""
    try:
        import imagecodecs
    except ImportError as exc:
        raise Missing("imagecodecs (pip) for 16-bit PNG decoding") from exc
    a = imagecodecs.png_decode(path.read_bytes())
    if a.dtype != np.uint16:
        raise ValueError(f"{path}: expected a 16-bit PNG, got {a.dtype}")
    return np.ascontiguousarray(a)


def _pfm(path: Path) -> np.ndarray:
    """Portable float map: 'PF' (RGB) or 'Pf' (gray), width height, scale (<0: little-endian), rows bottom-up."""
    data = path.read_bytes()
    parts, pos = [], 0
    while len(parts) < 4:
        while data[pos : pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end : end + 1].isspace():
            end += 1
        parts.append(data[pos:end].decode("ascii"))
        pos = end
    pos += 1  # one whitespace byte after the scale
    kind, width, height, scale = parts[0], int(parts[1]), int(parts[2]), float(parts[3])
    channels = 3 if kind == "PF" else 1
    a = np.frombuffer(data, dtype="<f4" if scale < 0 else ">f4", count=width * height * channels, offset=pos)
    a = a.reshape(height, width, channels)[::-1]
    return np.ascontiguousarray(a.astype(np.float32)).squeeze()


def _fits_hdus(path: Path) -> Iterator[tuple[dict, list[int], int]]:
    """(header cards, NAXISn, data offset) of each HDU of a FITS file (FITS 4.0, 3.3-4.4)."""
    data = path.read_bytes()
    offset = 0
    while offset + 2880 <= len(data):
        cards: dict[str, str] = {}
        ended = False
        while not ended:
            block = data[offset : offset + 2880]
            offset += 2880
            for i in range(0, 2880, 80):
                card = block[i : i + 80].decode("ascii", "replace")
                if card.rstrip() == "END":
                    ended = True
                    break
                if card[8:10] == "= ":
                    cards[card[:8].strip()] = card[10:].split("/")[0].strip().strip("'").strip()
        if "BITPIX" not in cards:
            return
        axes = [int(cards.get(f"NAXIS{i}", 0)) for i in range(1, int(cards.get("NAXIS", 0)) + 1)]
        size = abs(int(cards["BITPIX"])) // 8 * int(np.prod(axes)) if axes else 0
        yield cards, axes, offset
        offset += (size + 2879) // 2880 * 2880


def _fits(path: Path, index: int) -> tuple[np.ndarray, dict]:
    """HDU ``index``'s data as stored (BITPIX 16 with BZERO 32768 is uint16; -32 is float32)."""
    if not path.exists():
        raise Missing(str(path))
    cards, axes, offset = list(_fits_hdus(path))[index]
    bitpix = int(cards["BITPIX"])
    dtype = {8: ">u1", 16: ">i2", 32: ">i4", -32: ">f4", -64: ">f8"}[bitpix]
    a = np.frombuffer(path.read_bytes(), dtype=dtype, count=int(np.prod(axes)), offset=offset).reshape(axes[::-1])
    bzero, bscale = float(cards.get("BZERO", 0) or 0), float(cards.get("BSCALE", 1) or 1)
    if bitpix == 16 and bzero == 32768 and bscale == 1:
        a = (a.astype(np.int32) + 32768).astype(np.uint16)  # FITS's unsigned 16-bit convention (4.4.2.5)
    elif bzero or bscale != 1:
        raise ValueError(f"{path}: scaled data (BZERO={bzero}, BSCALE={bscale}) is not taken")
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="))), cards


def _midas_dir() -> Path:
    import glob

    found = sorted(glob.glob(MIDAS_GLOB))
    if not found:
        raise Missing("eso-midas-testdata (apt-get install eso-midas-testdata)")
    return Path(found[-1])


def _need(path: Path, package: str) -> Path:
    if not path.exists():
        raise Missing(f"{path} ({package})")
    return path


# ----------------------------------------------------------------------------- package sources


def _skimage_dir() -> Path:
    try:
        import skimage.data
    except ImportError as exc:
        raise Missing("scikit-image (pip install scikit-image)") from exc
    return Path(skimage.data.__file__).parent  # the files shipped in the wheel; pooch is never called


def _mpl_dir() -> Path:
    try:
        import matplotlib
    except ImportError as exc:
        raise Missing("matplotlib (pip install matplotlib)") from exc
    return Path(matplotlib.get_data_path()) / "sample_data"


SKIMAGE_LICENSE = "scikit-image data (skimage/data/README.txt; CC0 / public domain / permissive, see CORPUS.md)"


def _skimage_entries() -> Iterator[Callable[[], Entry]]:
    photos = [
        ("sk-astronaut", "astronaut.png", "RGB", "NASA, public domain (skimage docstring)"),
        ("sk-coffee", "coffee.png", "RGB", "CC0, Rachel Michetti (skimage docstring)"),
        ("sk-chelsea", "chelsea.png", "RGB", "CC0, Stefan van der Walt (skimage docstring)"),
        ("sk-motorcycle-left", "motorcycle_left.png", "RGB", "Middlebury 2014 stereo data (Scharstein et al.), down-sampled by scikit-image"),
        ("sk-ihc", "ihc.png", "RGB", "no known copyright restrictions (skimage docstring)"),
        ("sk-camera", "camera.png", "L", "CC0, Lav Varshney (skimage docstring)"),
        ("sk-rocket", "rocket.jpg", "RGB", "SpaceX, public domain (skimage docstring); decoded from JPEG"),
    ]
    for name, fname, mode, lic in photos:
        yield lambda name=name, fname=fname, mode=mode, lic=lic: Entry(
            name, "photo", f"skimage/data/{fname} (scikit-image wheel)", lic,
            f"Pillow decode, convert('{mode}')", _pil(_need(_skimage_dir() / fname, "scikit-image"), mode))
    graphics = [
        ("sk-logo", "logo.png", "RGBA", "scikit-image logo (scikit-image project)"),
        ("sk-color", "color.png", "RGB", "scikit-image colour wheel (no separate note)"),
        ("sk-phantom", "phantom.png", "RGB", "Shepp-Logan phantom (a computed image)"),
    ]
    for name, fname, mode, lic in graphics:
        yield lambda name=name, fname=fname, mode=mode, lic=lic: Entry(
            name, "graphics", f"skimage/data/{fname} (scikit-image wheel)", lic,
            f"Pillow decode, convert('{mode}')", _pil(_need(_skimage_dir() / fname, "scikit-image"), mode))

    def text() -> Entry:
        from skimage.filters import threshold_otsu

        g = _pil(_need(_skimage_dir() / "text.png", "scikit-image"), "L")
        return Entry("sk-text-otsu", "bilevel", "skimage/data/text.png (scikit-image wheel)", "public domain, from Wikipedia (skimage docstring)",
                     "gray > skimage.filters.threshold_otsu(gray) -> 255 else 0 (uint8)",
                     np.where(g > threshold_otsu(g), 255, 0).astype(np.uint8))

    def page() -> Entry:
        from skimage.filters import threshold_sauvola

        g = _pil(_need(_skimage_dir() / "page.png", "scikit-image"), "L")
        return Entry("sk-page-sauvola", "bilevel", "skimage/data/page.png (scikit-image wheel)", "scikit-image sample (no separate note)",
                     "gray > skimage.filters.threshold_sauvola(gray, window_size=25) -> 255 else 0 (uint8)",
                     np.where(g > threshold_sauvola(g, window_size=25), 255, 0).astype(np.uint8))

    def horse() -> Entry:
        g = _pil(_need(_skimage_dir() / "horse.png", "scikit-image"), "L")
        return Entry("sk-horse", "bilevel", "skimage/data/horse.png (scikit-image wheel)",
                     "CC0, Andreas Preuss / openclipart (skimage docstring)",
                     "convert('L'), >= 128 -> 255 else 0 (uint8)", np.where(g >= 128, 255, 0).astype(np.uint8))

    def disparity() -> Entry:
        z = np.load(_need(_skimage_dir() / "motorcycle_disp.npz", "scikit-image"))
        return Entry("sk-motorcycle-disparity", "float", "skimage/data/motorcycle_disp.npz (Middlebury 2014)",
                     "Middlebury 2014 stereo data (Scharstein et al.), via scikit-image", "arr_0 as stored (float32 disparity, inf = unknown)",
                     np.ascontiguousarray(z["arr_0"].astype(np.float32)))

    yield from (text, page, horse, disparity)


def _mpl_entries() -> Iterator[Callable[[], Entry]]:
    lic = "matplotlib sample data (matplotlib license; source not stated in the package)"

    def hopper() -> Entry:
        return Entry("mpl-grace-hopper", "photo", "matplotlib mpl-data/sample_data/grace_hopper.jpg",
                     "US Navy photo, public domain; decoded from JPEG", "Pillow decode, convert('RGB')",
                     _pil(_need(_mpl_dir() / "grace_hopper.jpg", "matplotlib"), "RGB"))

    def logo() -> Entry:
        return Entry("mpl-logo", "graphics", "matplotlib mpl-data/sample_data/logo2.png", lic,
                     "Pillow decode, convert('RGBA')", _pil(_need(_mpl_dir() / "logo2.png", "matplotlib"), "RGBA"))

    def gift() -> Entry:
        return Entry("mpl-gift-icon", "graphics", "matplotlib mpl-data/sample_data/Minduka_Present_Blue_Pack.png",
                     "clip art by Minduka (openclipart, public domain)", "Pillow decode, convert('RGBA')",
                     _pil(_need(_mpl_dir() / "Minduka_Present_Blue_Pack.png", "matplotlib"), "RGBA"))

    def dem() -> Entry:
        z = np.load(_need(_mpl_dir() / "jacksboro_fault_dem.npz", "matplotlib"))
        e = z["elevation"]
        assert e.dtype == np.int16 and e.min() >= 0
        return Entry("mpl-dem-jacksboro", "16-bit", "matplotlib sample_data/jacksboro_fault_dem.npz (USGS 1/3 arc-second DEM)",
                     "USGS elevation data (public domain), via matplotlib", "elevation (int16 metres, all >= 0) .astype(uint16): exact",
                     np.ascontiguousarray(e.astype(np.uint16)))

    def mri() -> Entry:
        raw = gzip.open(_need(_mpl_dir() / "s1045.ima.gz", "matplotlib")).read()
        return Entry("mpl-mri", "16-bit", "matplotlib sample_data/s1045.ima.gz (MRI slice)", lic,
                     "np.frombuffer(.., uint16).reshape(256, 256) as matplotlib's mri example reads it: "
                     "8 significant bits in the high byte (low byte 0)",
                     np.frombuffer(raw, np.uint16).reshape(256, 256).copy())

    def topo() -> Entry:
        z = np.load(_need(_mpl_dir() / "topobathy.npz", "matplotlib"))
        return Entry("mpl-topobathy", "float", "matplotlib sample_data/topobathy.npz (topography/bathymetry)",
                     lic, "topo as stored (float32 metres)", np.ascontiguousarray(z["topo"].astype(np.float32)))

    yield from (hopper, logo, gift, dem, mri, topo)


def _mpl_charts() -> Iterator[Callable[[], Entry]]:
    """Charts rendered by matplotlib's Agg backend from its own sample data (deterministic per version)."""

    def render(name: str, draw: Callable, transparent: bool = False) -> Callable[[], Entry]:
        def build() -> Entry:
            try:
                import matplotlib

                matplotlib.use("Agg")
                import matplotlib.pyplot as plt
            except ImportError as exc:
                raise Missing("matplotlib (pip install matplotlib)") from exc
            with plt.rc_context({"font.family": "DejaVu Sans", "path.simplify": True}):
                fig = plt.figure(figsize=(8, 6), dpi=100)
                desc = draw(fig)
                buf = io.BytesIO()
                fig.savefig(buf, format="png", dpi=100, transparent=transparent, metadata={"Software": None})
                plt.close(fig)
            buf.seek(0)
            return Entry(name, "graphics", f"matplotlib {matplotlib.__version__} Agg rendering: {desc}",
                         "rendered here from matplotlib sample data", f"savefig 800x600 px, dpi 100, convert('{'RGBA' if transparent else 'RGB'}')",
                         _pil(buf, "RGBA" if transparent else "RGB"))

        return build

    def stocks() -> tuple[list[str], np.ndarray, list[str]]:
        path = _need(_mpl_dir() / "Stocks.csv", "matplotlib")
        lines = [l for l in path.read_text().splitlines() if l and not l.startswith("#")]
        header = lines[0].split(",")
        dates, rows = [], []
        for l in lines[1:]:
            cells = l.split(",")
            dates.append(cells[0])
            rows.append([float(c) if c else np.nan for c in cells[1:]])
        return header, np.array(rows), dates

    def lines(fig) -> str:
        header, values, _ = stocks()
        ax = fig.add_subplot()
        for i, label in enumerate(header[1:9]):
            y = values[:, i]
            ok = ~np.isnan(y)
            ax.plot(np.flatnonzero(ok), y[ok], label=label, linewidth=1.2)
        ax.set_yscale("log")
        ax.grid(True, alpha=0.4)
        ax.legend(ncol=4, fontsize=9)
        ax.set_title("Stocks.csv: monthly closes (log scale)")
        return "line chart of sample_data/Stocks.csv"

    def contour(fig) -> str:
        z = np.load(_need(_mpl_dir() / "jacksboro_fault_dem.npz", "matplotlib"))["elevation"]
        ax = fig.add_subplot()
        cs = ax.contourf(z[::-1].astype(float), levels=12, cmap="terrain")
        ax.contour(z[::-1].astype(float), levels=12, colors="k", linewidths=0.4)
        fig.colorbar(cs, ax=ax, label="elevation (m)")
        ax.set_title("Jacksboro fault DEM, 12 levels")
        return "filled contour map of sample_data/jacksboro_fault_dem.npz"

    def bars(fig) -> str:
        goog = np.load(_need(_mpl_dir() / "goog.npz", "matplotlib"))["price_data"]
        years = goog["date"].astype("datetime64[Y]").astype(int) + 1970
        ys = np.unique(years)
        vol = [goog["volume"][years == y].mean() / 1e6 for y in ys]
        close = [goog["close"][years == y][-1] for y in ys]
        ax1 = fig.add_subplot(1, 2, 1)
        ax1.bar([str(y) for y in ys], vol, color=["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"][: len(ys)])
        ax1.set_title("GOOG mean daily volume (M)")
        ax2 = fig.add_subplot(1, 2, 2)
        ax2.pie(close, labels=[str(y) for y in ys], autopct="%1.0f%%", startangle=90)
        ax2.set_title("share of year-end close")
        return "bar and pie charts of sample_data/goog.npz on a transparent background"

    def scatter(fig) -> str:
        goog = np.load(_need(_mpl_dir() / "goog.npz", "matplotlib"))["price_data"]
        close = goog["adj_close"]
        ret = np.diff(close) / close[:-1]
        ax = fig.add_subplot()
        ax.scatter(ret[:-1], ret[1:], c=goog["volume"][2:], s=12, alpha=0.6, cmap="viridis")
        ax.set_xlabel("return(t)")
        ax.set_ylabel("return(t+1)")
        ax.set_title("GOOG daily returns, coloured by volume")
        ax.grid(True, alpha=0.3)
        return "scatter plot of sample_data/goog.npz"

    yield render("mpl-chart-lines", lines)
    yield render("mpl-chart-contour", contour)
    yield render("mpl-chart-bars-rgba", bars, transparent=True)
    yield render("mpl-chart-scatter", scatter)


def _imagemagick() -> Iterator[Callable[[], Entry]]:
    def convert_bin() -> str:
        for cand in ("/usr/bin/convert-im6.q16", "/usr/bin/convert", "magick"):
            path = shutil.which(cand)
            if path and "Stands in for ImageMagick" not in Path(path).read_text(errors="ignore")[:2000]:
                return path
        raise Missing("imagemagick (apt-get install imagemagick)")

    def builtin(name: str, builtin_name: str) -> Callable[[], Entry]:
        def build() -> Entry:
            exe = convert_bin()
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "x.png"
                subprocess.run([exe, f"{builtin_name}:", f"PNG24:{out}"], check=True, capture_output=True, timeout=60)
                version = subprocess.run([exe, "-version"], capture_output=True, text=True).stdout.splitlines()[0]
                return Entry(name, "graphics", f"ImageMagick built-in image '{builtin_name}:' ({version.split(' http')[0]})",
                             "ImageMagick License (Apache-2.0 style)", f"convert {builtin_name}: PNG24:x.png, Pillow convert('RGB')",
                             _pil(out, "RGB"))

        return build

    yield builtin("im-logo", "logo")
    yield builtin("im-wizard", "wizard")
    yield builtin("im-netscape", "netscape")


def _libjxl_entries() -> Iterator[Callable[[], Entry]]:
    pkg = "libjxl-testdata (apt-get install libjxl-testdata)"
    ws = "external/wesaturate (wesaturate.com photos, CC0)"

    def pil(name, cls, rel, mode, lic, op=None):
        return lambda: Entry(name, cls, f"{LIBJXL}/{rel} (Debian libjxl-testdata)", lic,
                             op or f"Pillow decode, convert('{mode}')", _pil(_need(LIBJXL / rel, pkg), mode))

    yield pil("jxl-flower", "photo", "jxl/flower/flower.png", "RGB", "JPEG XL project testdata, BSD-3-Clause")
    yield pil("ws-keong-macan", "photo", "external/wesaturate/500px/cvo9xd_keong_macan_srgb8.png", "RGB", ws)
    yield pil("ws-bliznaca", "photo", "external/wesaturate/500px/u76c0g_bliznaca_srgb8.png", "RGB", ws)
    yield pil("ws-riaphotographs-rgba", "photo", "external/wesaturate/500px/tmshre_riaphotographs_alpha.png", "RGBA", ws)
    yield pil("ws-keong-macan-gray", "photo", "external/wesaturate/500px/cvo9xd_keong_macan_grayscale.png", "L", ws)
    yield pil("jxl-terminal", "screenshot", "jxl/grayscale_patches.png", "L",
              "JPEG XL project testdata, BSD-3-Clause (a terminal screenshot)")
    wg = "external/wide-gamut-tests (Paul Rohde, Apache-2.0)"
    yield pil("jxl-color-bars", "graphics", "external/wide-gamut-tests/P3-sRGB-color-bars.png", "RGB", wg)
    yield pil("jxl-color-ring", "graphics", "external/wide-gamut-tests/P3-sRGB-color-ring.png", "RGBA", wg)

    def png16(name, rel, lic):
        return lambda: Entry(name, "16-bit", f"{LIBJXL}/{rel} (Debian libjxl-testdata)", lic,
                             "16-bit PNG decoded exactly (imagecodecs.png_decode)", _png16(_need(LIBJXL / rel, pkg)))

    yield png16("jxl-hdr-room", "jxl/hdr_room.png", "JPEG XL project testdata, BSD-3-Clause")
    yield png16("pixls-dji-64px", "external/raw.pixls/DJI-FC6310-16bit_709_v4_krita.png", "raw.pixls.us, CC0")
    yield png16("ws-nikon-d3-64px", "external/wesaturate/64px/Nikon-D3-14bit_2020_g1.png", ws)

    def splines() -> Entry:
        return Entry("jxl-splines-pfm", "float", f"{LIBJXL}/jxl/splines.pfm (Debian libjxl-testdata)",
                     "JPEG XL project testdata, BSD-3-Clause", "PFM read exactly (float32 RGB, rows flipped to top-down)",
                     _pfm(_need(LIBJXL / "jxl/splines.pfm", pkg)))

    yield splines


def _fits_entries() -> Iterator[Callable[[], Entry]]:
    def hst() -> Entry:
        a, cards = _fits(DRIZZLE / "j8bt06nyq_flt.fits", 1)
        return Entry("hst-acs-flt-sci", "float", f"{DRIZZLE}/j8bt06nyq_flt.fits, HDU 1 (SCI) (Debian python-drizzle-testdata)",
                     "HST/ACS data (public); drizzle test data BSD-3-Clause (AURA)",
                     "FITS BITPIX -32 SCI extension as stored (float32 calibrated counts)", a)

    def thar() -> Entry:
        a, _ = _fits(_midas_dir() / "thar5s.fit", 0)
        assert a.dtype == np.uint16 and a.shape == (2671, 4007)
        return Entry("eso-thar-ccd", "16-bit", "eso-midas test/prim/thar5s.fit (ThAr echelle CCD frame, Debian eso-midas-testdata)",
                     "ESO-MIDAS test data, GPL-2+", "FITS BITPIX 16 + BZERO 32768 -> uint16 (exact); crop rows 823:1847, cols 979:3027 (1024x2048)",
                     np.ascontiguousarray(a[823:1847, 979:3027]))

    def midas_float(name: str, fname: str, index: int, what: str) -> Callable[[], Entry]:
        def build() -> Entry:
            a, cards = _fits(_midas_dir() / fname, index)
            assert a.dtype == np.float32
            return Entry(name, "float", f"eso-midas test/prim/{fname} HDU {index}: {what} (Debian eso-midas-testdata)",
                         "ESO-MIDAS test data, GPL-2+", "FITS BITPIX -32 as stored (float32)", a)

        return build

    yield hst
    yield thar
    yield midas_float("eso-isaac-ir", "ISAAC.2006-04-13T06:32:38.944.fits", 0, "VLT ISAAC infrared frame")
    yield midas_float("eso-uves-order", "order.fits", 0, "VLT UVES echelle order-definition flat")
    yield midas_float("eso-vimos-chip", "vimos.fits", 1, "VLT VIMOS CCD chip 1")


# ----------------------------------------------------------------------------- chromium screenshots

PAGE_CSS = """
body { margin: 0; font-family: 'DejaVu Sans', 'Liberation Sans', sans-serif; color: #1f2328; background: #fff; }
"""


def _chromium_bin() -> str:
    for cand in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(cand)
        if path:
            return path
    raise Missing("chromium (apt-get install chromium)")


def screenshot(html_text: str, width: int, height: int, scale: float = 1.0) -> np.ndarray:
    """A headless-Chromium screenshot (RGB) of a local HTML page; no network is used."""
    exe = _chromium_bin()
    with tempfile.TemporaryDirectory() as tmp:
        page, out = Path(tmp) / "page.html", Path(tmp) / "shot.png"
        page.write_text(html_text, encoding="utf-8")
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars",
               "--disable-extensions", "--mute-audio", "--no-default-browser-check",
               f"--user-data-dir={tmp}/profile", f"--window-size={width},{height}",
               f"--force-device-scale-factor={scale}", f"--screenshot={out}", page.as_uri()]
        subprocess.run(cmd, check=True, capture_output=True, timeout=180)
        return _pil(out, "RGB")


def _stocks_table() -> tuple[list[str], list[list[str]]]:
    path = _need(_mpl_dir() / "Stocks.csv", "matplotlib")
    lines = [l for l in path.read_text().splitlines() if l and not l.startswith("#")]
    return lines[0].split(","), [l.split(",") for l in lines[1:]]


def _page_docs() -> str:
    """A Sphinx-like documentation page built from the json module's docstrings (no paths in it)."""
    import inspect
    import json as json_module

    def blocks(doc: str) -> str:
        out = []
        for para in inspect.cleandoc(doc).split("\n\n"):
            if para.lstrip().startswith((">>>", "$")) or para.startswith("    "):
                out.append(f"<pre>{html.escape(para)}</pre>")
            else:
                out.append(f"<p>{html.escape(para)}</p>")
        return "".join(out)

    parts = [f"<h1>json — JSON encoder and decoder</h1>{blocks(json_module.__doc__)}"]
    for name in ("dump", "dumps", "load", "loads"):
        fn = getattr(json_module, name)
        sig = html.escape(f"json.{name}{inspect.signature(fn)}")
        parts.append(f"<dl><dt id='{name}'><code>{sig}</code><a class='hl'>¶</a></dt><dd>{blocks(fn.__doc__)}</dd></dl>")
    nav = "".join(f"<li><a href='#{n}'>json.{n}()</a></li>" for n in ("dump", "dumps", "load", "loads"))
    return f"""<!DOCTYPE html><html><head><meta charset='utf-8'><style>{PAGE_CSS}
body {{ font-size:15px; line-height:1.5; }} .top {{ background:#2b5b84; color:#fff; padding:8px 24px; font-size:14px; }}
.side {{ position:fixed; top:37px; left:0; bottom:0; width:230px; background:#f2f2f2; padding:12px 16px; font-size:13px; }}
.side ul {{ padding-left:16px; }} .side a, a {{ color:#0072aa; text-decoration:none; }}
.main {{ margin-left:270px; max-width:860px; padding:8px 24px; }} h1 {{ font-size:26px; font-weight:normal; color:#1a1a1a; }}
pre {{ background:#eef2f5; border:1px solid #ac9; padding:8px 12px; font-family:'DejaVu Sans Mono',monospace; font-size:13px; line-height:1.35; }}
dt code {{ background:#e7f2fa; border-top:3px solid #6ab0de; padding:4px 8px; display:block; font-family:'DejaVu Sans Mono'; font-size:13.5px; }}
.hl {{ color:#ccc; margin-left:6px; }} dd {{ margin-left:28px; }}
</style></head><body><div class='top'>Python » 3 Documentation » The Python Standard Library » Internet Data Handling » json</div>
<div class='side'><b>Table of contents</b><ul><li>json — JSON encoder and decoder<ul>{nav}</ul></li></ul><b>Previous topic</b><br>email<br><b>Next topic</b><br>mailbox</div>
<div class='main'>{''.join(parts)}</div></body></html>"""


def _page_code() -> str:
    import textwrap

    source = Path(textwrap.__file__).read_text()
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError as exc:
        raise Missing("pygments (pip install pygments)") from exc
    fmt = HtmlFormatter(style="monokai", linenos="inline", noclasses=True)
    code = highlight(source, PythonLexer(), fmt)
    tabs = "".join(
        f"<span style='padding:6px 14px;background:{'#272822' if i == 0 else '#3a3a3a'};color:#ddd'>{n}</span>"
        for i, n in enumerate(["textwrap.py", "json/decoder.py", "pydoc.py"])
    )
    return f"""<!DOCTYPE html><html><head><meta charset='utf-8'><style>
{PAGE_CSS} body {{ background:#272822; font-size:13px; }}
pre, td {{ font-family:'DejaVu Sans Mono', monospace; font-size:13px; line-height:17px; }}
.bar {{ background:#1e1f1c; padding:6px 0 0 0; font-family:'DejaVu Sans'; font-size:12px; }}
.side {{ position:fixed; left:0; top:0; bottom:0; width:220px; background:#1e1f1c; color:#ccc; font-size:13px; padding:10px; }}
.main {{ margin-left:240px; }} .status {{ position:fixed; bottom:0; left:0; right:0; background:#007acc; color:#fff; padding:3px 10px; font-size:12px; }}
</style></head><body>
<div class='side'><b>EXPLORER</b><br><br>{'<br>'.join('&nbsp;&nbsp;' + n for n in ['textwrap.py', 'json/', '&nbsp;&nbsp;decoder.py', '&nbsp;&nbsp;encoder.py', 'pydoc.py', 'inspect.py', 'README.md'])}</div>
<div class='main'><div class='bar'>{tabs}</div>{code}</div>
<div class='status'>Python 3 &nbsp; UTF-8 &nbsp; LF &nbsp; Ln 1, Col 1 &nbsp; Spaces: 4</div></body></html>"""


def _page_sheet() -> str:
    header, rows = _stocks_table()
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["#"] + header)
    body = []
    for i, r in enumerate(rows[:60]):
        cells = [f"<td class='n'>{i + 1}</td>", f"<td>{r[0]}</td>"]
        for c in r[1:]:
            if c:
                v = float(c)
                cls = " class='up'" if v > 100 else ""
                cells.append(f"<td{cls} style='text-align:right'>{v:,.2f}</td>")
            else:
                cells.append("<td></td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"""<!DOCTYPE html><html><head><meta charset='utf-8'><style>{PAGE_CSS}
.tool {{ background:#f3f3f3; border-bottom:1px solid #d0d0d0; padding:6px 10px; font-size:13px; }}
.tool span {{ display:inline-block; padding:3px 9px; margin-right:4px; border:1px solid #c8c8c8; border-radius:3px; background:#fff; }}
.fx {{ padding:4px 10px; border-bottom:1px solid #d0d0d0; font-size:13px; font-family:'DejaVu Sans Mono'; }}
table {{ border-collapse:collapse; font-size:12px; }} th {{ background:#e8eaed; border:1px solid #c0c0c0; padding:3px 8px; font-weight:normal; }}
td {{ border:1px solid #e0e0e0; padding:2px 8px; white-space:nowrap; }} td.n {{ background:#e8eaed; color:#555; text-align:center; }}
tr:nth-child(even) td {{ background:#f8f9fb; }} td.up {{ color:#137333; }}
</style></head><body><div class='tool'><span><b>B</b></span><span><i>I</i></span><span>Σ</span><span>%</span><span>0.00</span><span>Filter</span><span>Chart</span> Stocks.csv</div>
<div class='fx'>fx =AVERAGE(B2:B61)</div><table><tr>{head}</tr>{''.join(body)}</table></body></html>"""


def _svg_line_chart(series: list[np.ndarray], colors: list[str], w: int, h: int) -> str:
    parts = [f"<svg width='{w}' height='{h}' xmlns='http://www.w3.org/2000/svg'>"]
    for gy in range(0, h, h // 5):
        parts.append(f"<line x1='0' y1='{gy}' x2='{w}' y2='{gy}' stroke='#e5e7eb'/>")
    for s, c in zip(series, colors):
        ok = ~np.isnan(s)
        x = np.linspace(0, w, len(s))[ok]
        y = s[ok]
        y = h - 8 - (y - y.min()) / (np.ptp(y) or 1) * (h - 16)
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))
        parts.append(f"<polyline fill='none' stroke='{c}' stroke-width='2' points='{pts}'/>")
    parts.append("</svg>")
    return "".join(parts)


def _page_dashboard() -> str:
    header, rows = _stocks_table()
    values = np.array([[float(c) if c else np.nan for c in r[1:]] for r in rows])
    chart = _svg_line_chart([values[:, 0], values[:, 2], values[:, 8]], ["#2563eb", "#16a34a", "#dc2626"], 560, 220)
    last = values[-1]
    bars = "".join(
        f"<div style='display:flex;align-items:center;margin:6px 0'><span style='width:60px'>{html.escape(n)}</span>"
        f"<span style='display:inline-block;height:14px;width:{int(20 + 200 * (i + 1) / 8)}px;background:#6366f1;border-radius:3px'></span></div>"
        for i, n in enumerate(header[1:9])
    )
    cards = "".join(
        f"<div class='card'><div class='k'>{html.escape(n)}</div><div class='v'>{v:,.2f}</div>"
        f"<div class='d' style='color:{'#16a34a' if i % 3 else '#dc2626'}'>{'▲' if i % 3 else '▼'} {abs(v) % 7:.2f}%</div></div>"
        for i, (n, v) in enumerate(zip(header[1:5], last[:4]))
    )
    table = "".join(
        f"<tr><td>{r[0]}</td><td>{html.escape(header[1 + i % 8])}</td><td style='text-align:right'>{(float(r[1]) if r[1] else 0):,.2f}</td>"
        f"<td><span class='pill' style='background:{['#dcfce7', '#fef9c3', '#fee2e2'][i % 3]}'>{['filled', 'pending', 'cancelled'][i % 3]}</span></td></tr>"
        for i, r in enumerate(rows[-8:])
    )
    nav = "".join(f"<div class='nav{' on' if i == 0 else ''}'>{n}</div>" for i, n in enumerate(
        ["Overview", "Portfolio", "Orders", "Watchlist", "Reports", "Alerts", "Settings"]))
    return f"""<!DOCTYPE html><html><head><meta charset='utf-8'><style>{PAGE_CSS}
body {{ background:#f1f5f9; font-size:13px; }} .side {{ position:fixed; top:0; bottom:0; left:0; width:200px; background:#0f172a; color:#cbd5e1; padding-top:16px; }}
.nav {{ padding:10px 20px; }} .nav.on {{ background:#1e293b; color:#fff; border-left:3px solid #38bdf8; }}
.main {{ margin-left:200px; padding:18px 24px; }} h1 {{ font-size:20px; margin:0 0 14px 0; }}
.cards {{ display:flex; gap:14px; }} .card {{ flex:1; background:#fff; border-radius:8px; padding:14px; box-shadow:0 1px 3px rgba(0,0,0,.12); }}
.k {{ color:#64748b; }} .v {{ font-size:22px; font-weight:bold; margin:4px 0; }}
.row {{ display:flex; gap:14px; margin-top:14px; }} .panel {{ background:#fff; border-radius:8px; padding:14px; box-shadow:0 1px 3px rgba(0,0,0,.12); }}
table {{ border-collapse:collapse; width:100%; }} td {{ padding:6px; border-bottom:1px solid #e2e8f0; }}
.pill {{ padding:2px 8px; border-radius:10px; font-size:11px; }}
.btn {{ float:right; background:#2563eb; color:#fff; padding:6px 12px; border-radius:6px; }}
</style></head><body><div class='side'><div style='padding:0 20px 16px;font-weight:bold;color:#fff;font-size:16px'>◆ Markets</div>{nav}</div>
<div class='main'><span class='btn'>+ New order</span><h1>Overview</h1><div class='cards'>{cards}</div>
<div class='row'><div class='panel'><b>IBM, MSFT and S&amp;P 500</b><br>{chart}</div><div class='panel' style='flex:1'><b>Allocation</b>{bars}</div></div>
<div class='row'><div class='panel' style='flex:1'><b>Recent orders</b><table>{table}</table></div></div></div></body></html>"""


def _page_article() -> str:
    import base64

    text = _need(GPL3, "base-files").read_text()
    paras = [p.strip().replace("\n", " ") for p in text.split("\n\n") if p.strip()][:40]
    photo = _pil(_need(_skimage_dir() / "coffee.png", "scikit-image"), "RGB")
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(photo).save(buf, "PNG")
    uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paras[2:])
    return f"""<!DOCTYPE html><html><head><meta charset='utf-8'><style>{PAGE_CSS}
.top {{ background:#111827; color:#fff; padding:14px 40px; font-size:18px; font-weight:bold; }}
.top span {{ font-weight:normal; font-size:14px; margin-left:24px; color:#d1d5db; }}
.wrap {{ width:1100px; margin:0 auto; display:flex; gap:40px; }} article {{ flex:1; font-family:'DejaVu Serif','Liberation Serif',serif; font-size:17px; line-height:1.55; }}
h1 {{ font-family:'DejaVu Sans'; font-size:34px; margin:28px 0 6px; }} .by {{ color:#6b7280; font-size:14px; margin-bottom:18px; font-family:'DejaVu Sans'; }}
figure {{ float:right; margin:0 0 12px 20px; width:420px; }} figure img {{ width:420px; border-radius:4px; }} figcaption {{ font-size:13px; color:#6b7280; font-family:'DejaVu Sans'; }}
aside {{ width:280px; margin-top:40px; font-size:14px; }} aside div {{ border-bottom:1px solid #e5e7eb; padding:10px 0; }}
</style></head><body><div class='top'>The Free Press<span>World</span><span>Technology</span><span>Science</span><span>Opinion</span></div>
<div class='wrap'><article><h1>{html.escape(paras[0][:60])}</h1><div class='by'>{html.escape(paras[1][:90])}</div>
<figure><img src='{uri}'><figcaption>A cup of coffee (scikit-image sample, CC0).</figcaption></figure>{body}</article>
<aside><b>Most read</b>{''.join(f'<div>{html.escape(p[:80])}…</div>' for p in paras[5:12])}</aside></div></body></html>"""


def _page_letter() -> str:
    text = _need(GPL3, "base-files").read_text()
    paras = [p.strip().replace("\n", " ") for p in text.split("\n\n") if p.strip()]
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paras[:60])
    return f"""<!DOCTYPE html><html><head><meta charset='utf-8'><style>
body {{ margin:0; background:#fff; color:#000; }} .page {{ padding:72px 80px; font-family:'Liberation Serif','DejaVu Serif',serif;
font-size:14.5px; line-height:1.35; text-align:justify; }} p {{ margin:0 0 9px 0; }}
</style></head><body><div class='page'>{body}</div></body></html>"""


def _chromium_entries() -> Iterator[Callable[[], Entry]]:
    lic_note = "rendered here (page text from Python's stdlib / matplotlib sample data / Debian's GPL-3 text)"

    def shot(name, cls, page, w, h, scale=1.0, desc="", op_extra="", post=None):
        def build() -> Entry:
            rgb = screenshot(page(), w, h, scale)
            arr = post(rgb) if post else rgb
            return Entry(name, cls, f"headless Chromium screenshot of a local page: {desc}", lic_note,
                         f"--window-size={w},{h} --force-device-scale-factor={scale}, convert('RGB'){op_extra}", arr)

        return build

    yield shot("chromium-docs", "screenshot", _page_docs, 1280, 800, desc="documentation page from the json module's docstrings")
    yield shot("chromium-code", "screenshot", _page_code, 1280, 800, desc="editor-like page: Pygments (monokai) of textwrap.py")
    yield shot("chromium-sheet", "screenshot", _page_sheet, 1280, 800, desc="spreadsheet of matplotlib's Stocks.csv")
    yield shot("chromium-dashboard", "screenshot", _page_dashboard, 1280, 800, desc="dashboard with SVG chart, cards, table")
    yield shot("chromium-article-1080p", "screenshot", _page_article, 1920, 1080,
               desc="news-article layout, GPL-3 text with the skimage coffee photo")

    def to_bilevel(rgb: np.ndarray) -> np.ndarray:
        gray = rgb.astype(np.uint16).sum(axis=2)
        return np.where(gray >= 3 * 128, 255, 0).astype(np.uint8)

    yield shot("chromium-letter-bilevel", "bilevel", _page_letter, 816, 1056, 2.0,
               desc="US-letter page (GPL-3 text, Liberation Serif) at 192 dpi",
               op_extra=", R+G+B >= 384 -> 255 else 0 (uint8)", post=to_bilevel)


SOURCES: tuple[Callable[[], Iterator[Callable[[], Entry]]], ...] = (
    _skimage_entries, _mpl_entries, _mpl_charts, _imagemagick, _libjxl_entries, _fits_entries, _chromium_entries,
)


# ----------------------------------------------------------------------------- cache


def tool_versions() -> dict[str, str]:
    """Versions of what rendered or decoded the corpus (a rebuild elsewhere may differ where these do)."""
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for dist in ("numpy", "pillow", "scikit-image", "matplotlib", "imagecodecs", "pygments"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    for key, cmd in (("chromium", ["chromium", "--version"]), ("imagemagick", ["/usr/bin/convert", "-version"])):
        try:
            text = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
            out[key] = text.splitlines()[0].split(" http")[0] if text else "?"
        except (OSError, subprocess.SubprocessError):
            pass
    for pkg in ("libjxl-testdata", "python-drizzle-testdata", "eso-midas-testdata"):
        try:
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, timeout=30)
            if v.returncode == 0:
                out[pkg] = v.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def write_corpus(out: Path, entries: list[Entry], skipped: list[dict] | None = None) -> dict:
    """Write ``entries`` (arrays set) as ``<name>.npy`` plus the manifest; returns the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    records = []
    for e in entries:
        if e.cls not in CLASSES:
            raise ValueError(f"{e.name}: unknown class {e.cls!r}")
        np.save(out / f"{e.name}.npy", np.ascontiguousarray(e.array), allow_pickle=False)
        records.append(e.record())
    manifest = {"version": CORPUS_VERSION, "tools": tool_versions(), "images": records, "skipped": skipped or []}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def build(out: Path = DEFAULT_DIR, force: bool = False, strict: bool = False, quiet: bool = False) -> dict:
    """Build the corpus into ``out`` (kept when already built with this CORPUS_VERSION)."""
    path = out / MANIFEST
    if path.exists() and not force:
        manifest = json.loads(path.read_text())
        if manifest.get("version") == CORPUS_VERSION and all((out / r["file"]).exists() for r in manifest["images"]):
            return manifest
    entries, skipped = [], []
    for source in SOURCES:
        for make in source():
            try:
                entry = make()
            except Missing as exc:
                if strict:
                    raise SystemExit(f"missing source: {exc}") from exc
                name = getattr(make, "__name__", "?")
                skipped.append({"builder": f"{source.__name__}.{name}", "missing": str(exc)})
                if not quiet:
                    print(f"  skipped ({exc})", file=sys.stderr)
                continue
            if not quiet:
                a = entry.array
                print(f"  {entry.cls:10s} {entry.name:26s} {str(a.shape):16s} {a.dtype}", file=sys.stderr)
            entries.append(entry)
    return write_corpus(out, entries, skipped)


def load(out: Path = DEFAULT_DIR) -> list[tuple[dict, np.ndarray]]:
    """(record, array) for every image of a built corpus, in manifest order."""
    manifest = json.loads((out / MANIFEST).read_text())
    items = []
    for r in manifest["images"]:
        a = np.load(out / r["file"], allow_pickle=False)
        items.append((r, np.ascontiguousarray(a)))
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_DIR, help="cache folder (default benchmarks/.corpus)")
    ap.add_argument("--force", action="store_true", help="rebuild even when a build is there")
    ap.add_argument("--strict", action="store_true", help="fail when a source package is missing")
    ap.add_argument("--list", action="store_true", help="print the manifest as a table")
    ap.add_argument("--markdown", action="store_true", help="print the image table of CORPUS.md")
    args = ap.parse_args(argv)
    manifest = build(args.out, force=args.force, strict=args.strict)
    if args.markdown:
        print("| class | name | size | type | source | license note | operation |")
        print("|---|---|---|---|---|---|---|")
        for cls in CLASSES:
            for r in manifest["images"]:
                if r["class"] == cls:
                    shape = r["shape"]
                    kind = f"{r['dtype']} x{1 if len(shape) == 2 else shape[2]}"
                    print(f"| {cls} | {r['name']} | {shape[1]}x{shape[0]} | {kind} | {r['source']} | {r['license']} "
                          f"| {r['op']} |")
    if args.list:
        for r in manifest["images"]:
            print(f"{r['class']:10s} {r['name']:26s} {'x'.join(map(str, r['shape'])):14s} {r['dtype']:8s} {r['sha256'][:12]}")
        for s in manifest["skipped"]:
            print(f"skipped: {s['builder']}: {s['missing']}")
    total = sum(r["bytes"] for r in manifest["images"])
    print(f"{len(manifest['images'])} images, {total / 1e6:.1f} MB raw, in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
