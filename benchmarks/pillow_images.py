"""Round trip of Pillow's own test images through the IMI Pillow plugin, and through `imij convert`.

Every file of the ``Tests/images`` folder of the Pillow sdist that Pillow opens and loads (every
frame, twice: every ``save_all`` walks the frames again) is saved with ``save_all=True`` to .imi
in memory, opened again, and classified:

exact
    same frame count (an APNG's default image that is not an animation frame may be left out),
    and per frame: pixels (both sides converted to one mode that holds them, see ``_arrays``),
    the mode the plugin documents for the source mode, size, duration; loop (0, forever, when the
    source says nothing), ICC, Exif tags (IFD0, Exif, GPS, IFD1; the resolution tags are
    compared as dpi; tags added are no loss), orientation, XMP, dpi (``info["dpi"]``, else the
    source Exif's resolution).
refused
    the save raised a ValueError or OSError that says why (for frames of different sizes or
    modes the save is retried with ``pages=True``, as the error message asks), or the only
    difference is a dpi the save warned it could not write (it travels in Exif that does not parse).
wrong
    saved and reopened, but something above differs (listed).
crash
    any other exception.

The second table runs ``imij convert`` (a subprocess) over the folder and classifies each file
Pillow loads the same way, from the .imi convert wrote (a failed record is refused when its error
is typed, else a crash). convert reads a TIFF's own tags and samples, so where Pillow's TIFF
reader shows something else the comparison is with what the file states::

    no X/YResolution tags   no dpi (Pillow reports (1, 1))
    signed 8-bit samples    the stored i8 samples' bytes (first channel) against Pillow's L of them
    associated alpha        the stored premultiplied samples unpremultiplied as Pillow's reader
                            does (255 * c // a of the high bytes), against Pillow's RGBA

Usage::

    python benchmarks/pillow_images.py [--images DIR] [--results benchmarks/RESULTS.md] [--no-convert]

Without ``--images`` the Pillow sdist is fetched with ``pip download`` into a temporary folder.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import PIL
from PIL import ExifTags, Image, ImageFile, TiffImagePlugin

from imij_plugins.pillow import register_pillow

SECTION = "## Pillow's test images"
PILLOW_SDIST = "pillow==13.0.0"
ALPHA_MODES = {"LA", "La", "PA", "RGBA", "RGBa"}
NUMERIC_MODES = {"1", "L", "I", "I;16", "I;16L", "I;16B", "I;16N", "F"}
# the mode the plugin documents for a source mode (modes.SAVE_MODES, the docstring's transparency rule);
# I may come back as I;16 (convert stores 16-bit PGM and TIFF as u16; the values are compared exactly)
OPENED_AS = {"I": {"I", "I;16"}, "RGBX": {"RGB"}, "P": {"RGB", "RGBA", "L", "LA"}, "PA": {"RGBA", "LA"}, "I;16L": {"I;16"}, "I;16B": {"I;16"}, "I;16N": {"I;16"}}
KEYED_16_BIT = {"I;16", "I;16L", "I;16B", "I;16N", "I"}
TRANSPARENT_AS = {"1": {"LA"}, "L": {"LA"}, "RGB": {"RGBA"}, "P": {"RGBA", "LA"}, **{m: {"LA"} for m in KEYED_16_BIT}}
WIDER = {"L": {"1"}, "LA": {"1", "L"}, "RGB": {"1", "L"}, "RGBA": {"1", "L", "LA", "RGB"}}
NO_LOOP = object()  # the source says nothing about looping
RESOLUTION_TAGS = {0x011A, 0x011B, 0x0128}  # compared as dpi: the core writes dpi as these (Exif)
X_RESOLUTION, SAMPLE_FORMAT, SAMPLE_FORMAT_INT = 0x011A, 0x0153, 2  # TIFF tags: XResolution, SampleFormat (2 signed)
POINTER_TAGS = {0x8769, 0x8825, 0xA005, 0x0201, 0x0202}  # offsets and lengths that move on rewrite


@dataclass
class Outcome:
    name: str
    format: str
    mode: str
    status: str  # exact, refused, wrong, crash
    detail: str = ""


@dataclass
class Frame:
    """One loaded frame of a source or reopened image."""

    image: Image.Image
    duration: float | None
    info: dict[str, Any] = field(default_factory=dict)


def fetch_images(folder: Path) -> Path:
    """Download and unpack the Pillow sdist; its ``Tests/images`` folder."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", PILLOW_SDIST, "-d", str(folder)],
        check=True,
    )
    archive = next(folder.glob("pillow-*.tar.gz"))
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/Tests/images/" in m.name and (m.isfile() or m.isdir())]
        tar.extractall(folder, members=members, filter="data")
    return next(folder.glob("pillow-*/Tests/images"))


def frames(im: Image.Image) -> Iterator[Frame]:
    """Every frame of ``im``, loaded (per-frame info such as duration is set by loading)."""
    for index in range(getattr(im, "n_frames", 1)):
        im.seek(index)
        im.load()
        yield Frame(im.copy(), im.info.get("duration"), dict(im.info))


def _has_alpha(im: Image.Image) -> bool:
    return im.mode in ALPHA_MODES or im.info.get("transparency") is not None


def _arrays(a: Image.Image, b: Image.Image) -> tuple[np.ndarray, np.ndarray]:
    """Both images' samples in one mode that holds both: exact values for numeric modes, else
    RGBA when either has transparency, CMYK when both are CMYK, RGB when either has colour, L."""
    if a.mode in NUMERIC_MODES and b.mode in NUMERIC_MODES and not (_has_alpha(a) or _has_alpha(b)):
        if "F" in (a.mode, b.mode):
            return np.asarray(a, dtype=np.float32).view(np.uint32), np.asarray(b, dtype=np.float32).view(np.uint32)
        return tuple(np.asarray(x.convert("L") if x.mode == "1" else x).astype(np.int64) for x in (a, b))  # type: ignore[return-value]
    if a.mode == b.mode == "CMYK":
        target = "CMYK"
    elif _has_alpha(a) or _has_alpha(b):
        target = "RGBA"
    elif {a.mode, b.mode} & {"1", "L", "I", "F"} and {a.mode, b.mode} <= NUMERIC_MODES | {"L"}:
        target = "L"
    else:
        target = "RGB"
    return np.asarray(a.convert(target)), np.asarray(b.convert(target))


def _pixels(a: Image.Image, b: Image.Image) -> str:
    x, y = _arrays(a, b)
    if x.shape != y.shape:
        return f"shape {x.shape} != {y.shape}"
    if not np.array_equal(x, y):
        return f"{int(np.count_nonzero(x != y))} samples differ"
    return ""


def _widens(mode: str, modes: set[str]) -> bool:
    """Whether ``mode`` holds every sample of one of ``modes``: an animation brings its frames to
    the smallest mode that holds them all (1 < L < LA, RGB < RGBA)."""
    return any(m in WIDER.get(mode, ()) for m in modes)


def _expected_modes(frame: Frame) -> set[str]:
    mode = frame.image.mode
    if frame.info.get("transparency") is not None and mode in TRANSPARENT_AS:
        return TRANSPARENT_AS[mode]
    return OPENED_AS.get(mode, {mode})


def _exif(im: Image.Image) -> dict[tuple[str, int], Any] | bytes | None:
    """Every tag of ``info["exif"]`` by (IFD, tag), rationals as (numerator, denominator); the raw
    bytes when Pillow cannot parse them; None without Exif (a TIFF's own tags and an orientation
    from XMP, which ``getexif()`` also returns, are not Exif to writers)."""
    raw = im.info.get("exif")
    if not raw:
        return None
    raw = bytes(raw).removeprefix(b"Exif\x00\x00")
    try:
        exif = Image.Exif()
        exif.load(raw)
        tags: dict[tuple[str, int], Any] = {("IFD0", k): v for k, v in exif.items()}
        for ifd in (ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo, ExifTags.IFD.IFD1):
            tags.update({(ifd.name, k): v for k, v in exif.get_ifd(ifd).items()})
    except Exception:  # noqa: BLE001  (malformed Exif: compare what was carried)
        return raw
    return {key: _plain(value) for key, value in tags.items() if key[1] not in RESOLUTION_TAGS | POINTER_TAGS} or None


def _plain(value: Any) -> Any:
    """A tag value comparable with ==: a rational as its terms (0/0 is NaN, which equals nothing)."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, TiffImagePlugin.IFDRational):
        return (value.numerator, value.denominator)
    return value


def _orientation(im: Image.Image) -> int:
    """What ``ImageOps.exif_transpose`` would apply (1 when the Exif does not parse)."""
    try:
        return int(im.getexif().get(ExifTags.Base.Orientation, 1))
    except Exception:  # noqa: BLE001
        return 1


def _xmp(info: dict[str, Any]) -> bytes | None:
    value = info.get("xmp") or info.get("XML:com.adobe.xmp")
    if isinstance(value, str):
        value = value.encode("utf-8")
    return bytes(value) if value else None


def _dpi(info: dict[str, Any]) -> tuple[float, float] | None:
    dpi = info.get("dpi")
    if not dpi or not all(float(v) > 0 for v in dpi):
        return None
    return (round(float(dpi[0]), 2), round(float(dpi[1]), 2))


def _exif_dpi(im: Image.Image) -> tuple[float, float] | None:
    """The resolution the Exif of ``info["exif"]`` declares (inches or cm), as dpi."""
    if not im.info.get("exif"):
        return None
    try:
        exif = im.getexif()
        unit = exif.get(0x0128, 2)
        x, y = float(exif[0x011A]), float(exif[0x011B])
    except Exception:  # noqa: BLE001  (no resolution, or Exif Pillow cannot parse)
        return None
    scale = {2: 1.0, 3: 2.54}.get(unit)
    return _dpi({"dpi": (x * scale, y * scale)}) if scale else None


def _save(path: Path) -> tuple[bytes, str]:
    """The .imi bytes of ``save_all`` on a fresh open; again as pages when the frames differ in
    size or mode (fresh: a GIF rewound after a larger frame keeps the larger size)."""
    for how in ("", "pages"):
        buf = io.BytesIO()
        with Image.open(path) as source:
            try:
                source.save(buf, format="IMI", save_all=True, pages=how == "pages")
                return buf.getvalue(), how
            except ValueError as e:
                if how or "pages=True" not in str(e):
                    raise
    raise AssertionError("unreachable")


def _keyed_16_bit(frame: Frame, stored: np.ndarray) -> str:
    """A 16-bit gray frame with a transparency key against its stored 16-bit GrayAlpha samples."""
    gray = np.asarray(frame.image).astype(np.int64)
    alpha = np.where(gray == frame.info["transparency"], 0, 0xFFFF)
    if stored.shape != (*gray.shape, 2) or not (np.array_equal(stored[..., 0], gray) and np.array_equal(stored[..., 1], alpha)):
        return "16-bit gray and key differ from the stored GrayAlpha samples"
    return ""


@dataclass
class Reference:
    """What a freshly opened source holds: its loaded frames and the file's metadata."""

    frames: list[Frame]
    info: dict[str, Any]  # the first frame's
    exif: Any
    orientation: int
    dpi: tuple[float, float] | None
    loop: Any
    file_dpi: tuple[float, float] | None  # the dpi the file states (a TIFF without resolution tags: none)
    signed_bytes: bool  # signed 8-bit TIFF samples, which Pillow reads as L of their bytes


def reference(path: Path) -> Reference:
    """The source as a fresh open shows it (Pillow loses an APNG's palette when it rewinds)."""
    with Image.open(path) as im:
        im.load()  # PNG reads eXIf after IDAT; libtiff applies and drops an orientation while loading
        exif, orientation = _exif(im), _orientation(im)
        dpi = _dpi(im.info) or _exif_dpi(im)  # a file's Exif resolution is its dpi (as Pillow's JPEG reader)
        tags = getattr(im, "tag_v2", {}) if im.format == "TIFF" else {}
        file_dpi = None if im.format == "TIFF" and X_RESOLUTION not in tags else dpi  # Pillow says (1, 1)
        signed = im.mode == "L" and SAMPLE_FORMAT_INT in _as_tuple(tags.get(SAMPLE_FORMAT))
        loaded = list(frames(im))
        return Reference(loaded, loaded[0].info, exif, orientation, dpi, im.info.get("loop", NO_LOOP), file_dpi, signed)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else () if value is None else (value,)


def _stored_view(out: Image.Image, index: int, want: Reference) -> Image.Image | None:
    """Pillow's view of frame ``index``'s stored samples where convert keeps what the file holds
    and Pillow's TIFF reader shows it otherwise (None elsewhere): signed 8-bit samples, which
    Pillow reads as L of the first sample's bytes; premultiplied alpha (alpha_mode 1), which
    Pillow unpremultiplies from the high bytes as 255 * c // a, clipped (Unpack.c unpackRGBa,
    unpackRGBa16L)."""
    stored = out.imij.read(index)
    if want.signed_bytes and stored.dtype == np.int8:
        return Image.fromarray(np.ascontiguousarray(stored[..., 0].view(np.uint8)), "L")
    if out.imij.image_info(index).alpha_mode != 1:
        return None
    samples = (stored >> 8 if stored.dtype == np.uint16 else stored).astype(np.int64)
    alpha = samples[..., -1:]
    colour = np.where(alpha == 0, 0, np.minimum(255, samples[..., :-1] * 255 // np.maximum(alpha, 1)))
    return Image.fromarray(np.concatenate([colour, alpha], axis=2).astype(np.uint8), "RGBA" if samples.shape[2] == 4 else "LA")


def frames_out(out: Image.Image, want: Reference) -> list[tuple[Frame, bool]]:
    """Every frame of the reopened .imi, each with whether it is ``_stored_view``'s view (whose
    mode is then not the plugin's to check)."""
    found = []
    for index in range(getattr(out, "n_frames", 1)):
        out.seek(index)
        view = _stored_view(out, index, want)
        if view is None:
            out.load()
            found.append((Frame(out.copy(), out.info.get("duration"), dict(out.info)), False))
        else:
            found.append((Frame(view, out.info.get("duration"), dict(out.info)), True))
    return found


def compare(want: Reference, data: bytes, own: bool = False) -> list[str]:
    """What differs between the source and the reopened .imi (empty: exact); ``own``: against
    what the file itself holds (convert reads a TIFF's tags and samples), not Pillow's defaults."""
    wanted = want.frames
    diffs: list[str] = []
    with Image.open(io.BytesIO(data)) as out:
        viewed = frames_out(out, want) if own else [(f, False) for f in frames(out)]
        got = [f for f, _ in viewed]
        animation = out.info.get("imij_kind") == "animation"
        if want.info.get("default_image") and len(got) == len(wanted) - 1:
            wanted = wanted[1:]  # an APNG's default image that is not an animation frame, left out
        if len(wanted) != len(got):
            return [f"{len(wanted)} frames -> {len(got)}"]
        if len(wanted) > 1 and any(float(w.duration or 0) > 0 for w in wanted) and not animation:
            diffs.append(f"animation -> {out.info.get('imij_kind')}")
        for index, (w, (g, view)) in enumerate(zip(wanted, viewed)):
            where = f"frame {index}: " if len(wanted) > 1 else ""
            if not view and g.image.mode not in _expected_modes(w) and not (animation and _widens(g.image.mode, _expected_modes(w))):
                diffs.append(f"{where}mode {w.image.mode} -> {g.image.mode}")
            if w.image.size != g.image.size:
                diffs.append(f"{where}size {w.image.size} -> {g.image.size}")
            elif w.image.mode in KEYED_16_BIT and isinstance(w.info.get("transparency"), int):
                pixels = _keyed_16_bit(w, out.imij.read(index))  # Pillow has no 16-bit mode with alpha
                diffs += [f"{where}{pixels}"] if pixels else []
            elif pixels := _pixels(w.image, g.image):
                diffs.append(f"{where}{pixels}")
            if animation and float(w.duration or 0) != float(g.duration or 0):
                diffs.append(f"{where}duration {w.duration} -> {g.duration}")
        out.seek(0)
        out_info = dict(out.info)
        out_exif, out_orientation = _exif(out), _orientation(out)
    loops = {0} if want.loop is NO_LOOP else {1 if want.loop is None else int(want.loop)}
    if animation and out_info.get("loop") not in loops:  # unsaid: forever, as the plugin's save_all and Pillow's APNG writer
        diffs.append(f"loop {want.loop} -> {out_info.get('loop')}")
    if (want.info.get("icc_profile") or None) != (out_info.get("icc_profile") or None):
        diffs.append("icc_profile")
    if not _exif_kept(want.exif, out_exif):
        diffs.append(_exif_difference(want.exif, out_exif))
    if want.orientation != out_orientation:  # from Exif, XMP or the IMI header
        diffs.append(f"orientation {want.orientation} -> {out_orientation}")
    if _xmp(want.info) != _xmp(out_info):
        diffs.append("xmp")
    dpi = want.file_dpi if own else want.dpi
    if dpi != _dpi(out_info):
        diffs.append(f"dpi {dpi} -> {_dpi(out_info)}")
    return diffs


def _exif_kept(a: Any, b: Any) -> bool:
    """Every tag of the source's Exif in the output's with its value (tags added, e.g. from a
    TIFF's own tags, are no loss); Exif that does not parse kept byte for byte."""
    if a is None or a == b:
        return True
    return isinstance(a, dict) and isinstance(b, dict) and all(k in b and b[k] == v for k, v in a.items())


def _exif_difference(a: Any, b: Any) -> str:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return f"exif {type(a).__name__} -> {type(b).__name__}"
    lost = sorted(set(a) - set(b))
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    added = sorted(set(b) - set(a))
    return f"exif lost {lost[:4]} changed {changed[:4]} added {added[:4]}"


def round_trip(path: Path, root: Path) -> Outcome | None:
    """The outcome for one file, or None when Pillow itself cannot open and load it."""
    try:
        with Image.open(path) as check:
            for _ in range(2):  # save_all walks the frames again (a broken APNG fails then in Pillow's writers too)
                list(frames(check))
            fmt, mode = str(check.format), check.mode
    except Exception:  # noqa: BLE001  (Pillow's own refusals: not counted)
        return None
    name = str(path.relative_to(root))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                data, how = _save(path)  # opened and saved, as a program converting files does
            except (ValueError, OSError) as e:
                return Outcome(name, fmt, mode, "refused", f"{type(e).__name__}: {e}")
        diffs = compare(reference(path), data)
    except Exception as e:  # noqa: BLE001
        return Outcome(name, fmt, mode, "crash", f"{type(e).__name__}: {e}")
    said = [str(w.message) for w in caught if "not written" in str(w.message)]
    if diffs and said and all(d.startswith("dpi ") for d in diffs):  # announced: a refusal, not silent
        return Outcome(name, fmt, mode, "refused", f"warned: {said[0]}")
    if diffs:
        return Outcome(name, fmt, mode, "wrong", "; ".join(diffs))
    return Outcome(name, fmt, mode, "exact", how)


def run_plugin(root: Path) -> list[Outcome]:
    register_pillow()
    outcomes = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            outcome = round_trip(path, root)
            if outcome is not None:
                outcomes.append(outcome)
    return outcomes


TYPED_REFUSALS = {"ValueError", "OSError", "Corrupt", "Unsupported", "TooLarge", "ImijError", "UnidentifiedImageError", "DecompressionBombError"}


def run_convert(root: Path, loadable: dict[str, Outcome]) -> dict[str, Any]:
    """``imij convert`` (a subprocess) over ``root``; each file Pillow loads classified as the
    plugin's round trip is, from the .imi that convert wrote and Pillow's view of the source."""
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "imij_plugins", "convert", str(root), "-o", out, "--json", "-q", "-j", "2"],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        records = [r for r in (json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")) if "input" in r]
        for record in records:
            name = str(Path(record["input"]).resolve().relative_to(root.resolve()))
            plugin = loadable.get(name)
            if plugin is None:
                continue  # Pillow does not load it: nothing to compare with
            status, detail = _convert_status(record)
            outcomes.append(Outcome(name, plugin.format, plugin.mode, status, detail))
    outcomes.sort(key=lambda o: o.name)
    return {"exit": result.returncode, "seconds": seconds, "records": len(records), "outcomes": outcomes, "stderr": result.stderr.strip().splitlines()[-1:]}


def _convert_status(record: dict[str, Any]) -> tuple[str, str]:
    reason = str(record.get("reason", ""))
    if record["status"] != "converted":
        typed = reason.split(":", 1)[0] in TYPED_REFUSALS
        return ("refused" if typed else "crash"), f"{record['status']}: {reason}"
    if record.get("parts"):
        return "wrong", f"split into {len(record['parts'])} files"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            diffs = compare(reference(Path(record["input"])), Path(record["output"]).read_bytes(), own=True)
    except (ValueError, OSError) as e:  # the plugin refuses what convert wrote (a typed error)
        return "wrong", f"the output does not load in Pillow: {type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001
        return "crash", f"{type(e).__name__}: {e}"
    said = [w for w in record.get("warnings", []) if "not written" in str(w)]
    if diffs and said and all(d.startswith("dpi ") for d in diffs):  # announced, as in the plugin table
        return "refused", f"warned: {said[0]}"
    return ("wrong", "; ".join(diffs)) if diffs else ("exact", "; ".join(record.get("notes", [])))


def _table(outcomes: list[Outcome], key: str) -> str:
    statuses = ("exact", "refused", "wrong", "crash")
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for o in outcomes:
        counts[getattr(o, key)][o.status] += 1
    rows = [f"| {k} | " + " | ".join(str(c[s]) for s in statuses) + " |" for k, c in sorted(counts.items())]
    head = f"| {key} | " + " | ".join(statuses) + " |\n|---|" + "---:|" * len(statuses)
    return head + "\n" + "\n".join(rows)


def section(outcomes: list[Outcome], convert: dict[str, Any] | None, folder_files: int) -> str:
    total = collections.Counter(o.status for o in outcomes)
    pages = sum(1 for o in outcomes if o.status == "exact" and o.detail == "pages")
    listed = "\n".join(f"- `{o.name}` ({o.format} {o.mode}): {o.status}: {o.detail}" for o in outcomes if o.status != "exact")
    text = (
        f"{SECTION}\n\n"
        f"`benchmarks/pillow_images.py` on the `Tests/images` folder of the Pillow {PIL.__version__} sdist "
        f"({folder_files:,} files; {len(outcomes)} open in Pillow {PIL.__version__} and load every frame twice, as a "
        f"`save_all` needs), imij_plugins at {_commit()}. Each is opened and saved with `save_all=True` to .imi and "
        "opened again; pixels (in one mode holding both; a 16-bit gray image with a transparency key against the "
        "stored 16-bit GrayAlpha samples), the documented mode, size, frame count, durations, loop, ICC, Exif tags "
        "(IFD0, Exif, GPS, IFD1), orientation, XMP and dpi are compared with a fresh open of the source. Frames of "
        f"different sizes or modes are saved again with `pages=True`, as the error asks ({pages} files). A dpi the "
        "save warned it could not write (its Exif does not parse) counts as refused.\n\n"
        f"Plugin: {total['exact']} exact, {total['refused']} refused, {total['wrong']} wrong, {total['crash']} crash.\n\n"
        f"{_table(outcomes, 'mode')}\n\n{_table(outcomes, 'format')}\n\n"
        f"Not exact:\n\n{listed or '- none'}\n"
    )
    if convert is not None:
        found = collections.Counter(o.status for o in convert["outcomes"])
        rows = "\n".join(f"- `{o.name}` ({o.format} {o.mode}): {o.status}: {o.detail}" for o in convert["outcomes"] if o.status != "exact")
        noted = "\n".join(f"- `{o.name}` ({o.format} {o.mode}): {o.detail}" for o in convert["outcomes"] if o.status == "exact" and o.detail)
        text += (
            f"\n`imij convert FOLDER -o OUT --json -j 2` over the same folder: exit {convert['exit']}, "
            f"{convert['records']} records in {convert['seconds']:.0f} s; of the files Pillow loads, "
            f"{found['exact']} exact, {found['refused']} refused, {found['wrong']} wrong, {found['crash']} crash "
            "(the .imi written, opened with the plugin and compared with Pillow's view of the source as above; "
            "a failure whose error is not a ValueError/OSError or an ImijError counts as a crash). convert keeps "
            "what a TIFF's own tags and samples state, so there the comparison is with that: a TIFF without "
            "resolution tags has no dpi (Pillow reports (1, 1), and the plugin writes what Pillow reports); "
            "signed 8-bit samples stay i8 and their bytes are compared with the L Pillow makes of them; "
            "associated alpha stays premultiplied (alpha mode 1) and is compared after unpremultiplying the "
            "stored samples as Pillow's TIFF reader does.\n\n"
            f"{_table(convert['outcomes'], 'format')}\n\nNot exact:\n\n{rows or '- none'}\n"
            f"\nExact, with a note in the record:\n\n{noted or '- none'}\n"
        )
    return text


def _commit() -> str:
    here = Path(__file__).resolve().parent
    found = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def write_section(path: Path, text: str) -> None:
    """Replace this section in ``path`` where it is (or append it), keeping the others."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    parts = old.rstrip("\n").split("\n\n## ")
    mine = [i for i, part in enumerate(parts) if ("## " + part).startswith(SECTION)]
    if mine:
        parts[mine[0]] = text.rstrip("\n").removeprefix("## ")
        path.write_text("\n\n## ".join(parts) + "\n")
    else:
        path.write_text("\n\n## ".join(parts) + "\n\n" + text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, help="a Tests/images folder (default: fetch the Pillow sdist)")
    parser.add_argument("--results", type=Path, help="rewrite this file's \"Pillow's test images\" section")
    parser.add_argument("--no-convert", action="store_true", help="skip the imij convert table")
    args = parser.parse_args()
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    with tempfile.TemporaryDirectory() as scratch:
        root = args.images or fetch_images(Path(scratch))
        outcomes = run_plugin(root)
        convert = None if args.no_convert else run_convert(root, {o.name: o for o in outcomes})
        files = sum(1 for p in root.rglob("*") if p.is_file())
    for o in outcomes:
        if o.status != "exact":
            print(f"{o.status:8} {o.name} ({o.format} {o.mode}): {o.detail}")
    print(json.dumps(collections.Counter(o.status for o in outcomes)))
    if args.results:
        write_section(args.results, section(outcomes, convert, files))


if __name__ == "__main__":
    main()
