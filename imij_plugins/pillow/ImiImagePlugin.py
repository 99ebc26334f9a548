"""Pillow plugin for the IMI image format (.imi): ``Image.open``, ``save`` and ``save_all``.

Importing this module registers the plugin (the Pillow handbook's ``XxxImagePlugin`` naming);
``import imij_plugins`` and ``imij_plugins.pillow.register_pillow()`` do the same. Pillow reads no
entry points, so one of these imports has to run before ``Image.open("x.imi")``.

The module only adapts the core (``imij_plugins.open`` / ``encode``); the mode table is data in
``imij_plugins.pillow.modes``, and the conversions between Pillow images and arrays, which
``imij convert`` uses as well, are ``imij_plugins.pillow.images``.

Reading
    ``_open`` parses the container and every frame header through the core and decodes no pixels;
    ``load()`` decodes the current frame or page. ``im.imij`` is the core ``ImijFile``: the exact
    samples of any frame are ``im.imij.read(im.tell())``, whatever the Pillow mode.

    A truncated or damaged file opens when its header is whole (the core's ``partial=True``).
    ``load()`` then raises ``imij_plugins.Corrupt``, or with ``ImageFile.LOAD_TRUNCATED_IMAGES``
    returns the units that decoded and black (0) elsewhere; ``im.imij.failures(im.tell())`` lists
    what was lost.

    ``info`` keys: ``icc_profile``, ``exif`` (with the ``Exif\\0\\0`` prefix, as PNG), ``xmp``
    (bytes); ``cicp`` (the effective (primaries, transfer, matrix, full_range) tuple);
    ``mastering_display``, ``content_light_level``, ``diffuse_white`` (the core's typed records,
    when present); ``imij_science`` (the core's ``ScienceRecords``, when present);
    ``imij_bit_depth`` (stored bits per sample: 16 for a u16 RGB file that opens as 8-bit RGB);
    ``imij_alpha_mode`` (the header's alpha mode, when not 0 straight: 1 premultiplied, 2 opaque,
    3 undefined padding; see "Alpha modes" below);
    ``imij_chunks`` (ancillary chunks the core does not interpret and that are safe to copy; a save
    writes them back); ``imij_preview`` (the preview size, after ``draft()`` picked one);
    ``imij_metadata_error`` (why the metadata could not be read; the pixels still load); and for
    multi-frame files ``imij_kind`` ("animation", "pages", "mixed pages"), ``loop`` (0 = forever),
    ``duration`` and ``timestamp`` (ms). The header orientation shows as the Exif Orientation of
    ``getexif()`` when the Exif has none (as Pillow does for XMP), so ``ImageOps.exif_transpose`` works.

Alpha modes (the header field of the IMI specification, version 2, section 1.0)
    Premultiplied alpha (1) opens in Pillow's premultiplied modes ``RGBa`` and ``La``, each sample
    as stored (16-bit samples by their high byte, still premultiplied); ``convert("RGBA")`` or
    ``convert("LA")`` unpremultiplies exactly as Pillow's TIFF reader does with associated alpha.
    Undefined padding (3) is not opacity: it opens as ``RGB`` or ``L`` without the slot, as
    Pillow's TIFF reader opens an unspecified extra sample. Opaque (2) opens as ``RGBA``/``LA``
    with the stored slot. ``im.imij.read()`` returns every stored slot whatever the mode. Saving
    ``RGBa`` or ``La`` writes alpha mode 1 with the samples as they are (no unpremultiplying);
    every other mode writes straight alpha (0). Pages of one file share one alpha mode here, so
    ``save_all`` refuses pages that mix premultiplied and straight alpha (``ValueError``).

Saving
    ``effort`` (or ``method``), ``slow_decode``, ``lossless`` (True or absent), ``max_error`` (near-lossless: each
    sample within that many units of the source), ``codec`` ("entropy", the default, or "quick"),
    ``icc_profile``, ``exif`` (bytes or ``Image.Exif``), ``xmp``, ``cicp``, ``orientation``,
    ``mastering_display``, ``content_light_level``, ``diffuse_white``, ``science`` (the core's
    ``science=`` mapping), ``checksum`` (cSUM), ``pixel_checksum`` (pSUM), ``threads``; for
    ``save_all``: ``append_images``, ``duration`` (ms, a number or a list), ``loop`` and ``pages=True``
    (pages, which may differ in size and mode, instead of an animation). Records that are safe to
    copy into an edited image (ICC, Exif, XMP, CICP, mastering display, orientation via Exif) fall
    back to ``im.info``; content light level, diffuse white and science records describe the
    pixels and are written only when passed (the spec's unsafe-to-copy chunks, 1.1).
    Unknown keywords are ignored, as Pillow's own plugins do.

    Modes follow ``modes.SAVE_MODES``. IMI has no colour key, so an image whose
    ``info["transparency"]`` is one (PNG tRNS on 1/L/RGB/16-bit gray, a GIF frame without a
    palette) is stored with the key made alpha, as Pillow's WebP writer turns it into RGBA: 1 and
    L become LA, RGB becomes RGBA (``convert("RGBA")`` of the reopened image is the source's), and
    16-bit gray becomes 16-bit GrayAlpha (alpha 0 or 65535), which keeps every bit for
    ``im.imij.read()`` and opens in Pillow as 8-bit LA, as a 16-bit gray+alpha PNG does. A dpi of
    (0, 0) in ``im.info`` (DCX, PCX: unknown) is left out. Exif that does not parse is written as
    it is, as Pillow's writers do; a dpi cannot join it then and is left out with a warning.
    Animation frames are brought to one mode (the smallest of 1/L/LA/RGB/RGBA holding them all);
    the file's metadata is the first image's.
"""

from __future__ import annotations

import functools
import os
import warnings
from fractions import Fraction
from typing import IO, Any

import numpy as np
from PIL import ExifTags, Image, ImageFile

from imij_plugins import api
from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported
from imij_plugins.pillow import modes
from imij_plugins.pillow.images import (
    EXIF_PREFIX,
    loop_count,
    metadata_options,
    one_mode,
    reduced,
    stored_alpha,
    to_pillow,
)
from imij_plugins.pillow.registration import FORMAT, register_entries
from imij_plugins.signature import is_imi

#: Threads the core may use to decode one frame in ``load()`` (None: the core's default).
#: Set with ``register_pillow(decode_threads=n)``.
DECODE_THREADS: int | None = None
#: Check the file checksum (cSUM) while opening, and the decoded-bitmap digests (pSUM) while
#: loading. ``verify()`` always checks both. Set with ``register_pillow(verify_checksums=False)``.
VERIFY_CHECKSUMS: bool = True

# the core's metadata names -> info keys
_INFO_FROM_METADATA = {
    "icc_profile": "icc_profile",
    "xmp": "xmp",
    "cicp": "cicp",
    "dpi": "dpi",
    "mastering_display": "mastering_display",
    "content_light_level": "content_light_level",
    "diffuse_white": "diffuse_white",
    "science": "imij_science",
}
# keys that describe one image of a file: replaced when seeking to a page (1.3: nothing is inherited)
_PER_IMAGE_KEYS = frozenset({"exif", "imij_bit_depth", "imij_alpha_mode", "imij_metadata_error", *_INFO_FROM_METADATA.values()})
_TYPED_TAGS = {"mastering_display": b"mDCv"}  # the safe-to-copy records info holds typed (1.1)
_PAGES = ("pages", "mixed pages")


_open_mode = functools.lru_cache(maxsize=64)(modes.open_mode)  # per header kind, not per open
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825  # ExifTags.IFD.Exif and .GPSInfo (Pillow 9.4+)
_MODE_ATTR = "_mode" if isinstance(getattr(Image.Image, "mode", None), property) else "mode"
_IM_ATTR = "_im" if isinstance(getattr(Image.Image, "im", None), property) else "im"


def _bomb_check(size: tuple[int, int]) -> None:
    """Refuse a size above twice ``Image.MAX_IMAGE_PIXELS`` before anything is allocated: the check
    ``Image._decompression_bomb_check(size, error_only=True)`` makes in WebP's ``_open`` (Pillow 13),
    written here with public names because that private keyword exists in Pillow 13 only."""
    limit = Image.MAX_IMAGE_PIXELS
    pixels = max(1, size[0]) * max(1, size[1])
    if limit is not None and pixels > 2 * limit:
        msg = f"Image size ({pixels} pixels) exceeds limit of {2 * limit} pixels, could be decompression bomb DOS attack."
        raise Image.DecompressionBombError(msg)


# Pillow programs catch OSError around load(): each core error is raised as a class deriving
# from both (``except imij_plugins.Corrupt`` still works), the core error chained as its cause.
_OS_ERRORS: dict[type[ImijError], type[OSError]] = {
    cls: type(cls.__name__, (cls, OSError), {"__module__": __name__, "__doc__": f"{cls.__doc__} (an OSError in Pillow)"})
    for cls in (Corrupt, Unsupported, TooLarge, ImijError)
}


def _os_error(error: ImijError) -> OSError:
    """``error`` as the OSError Pillow's convention asks for, of the same ImijError class."""
    cls = next(_OS_ERRORS[c] for c in type(error).__mro__ if c in _OS_ERRORS)
    out = cls(str(error))
    out.__cause__ = error
    return out


class ImiImageFile(ImageFile.ImageFile):
    format = FORMAT
    format_description = "IMI image"

    imij: api.ImijFile
    """The core file object: the exact samples of every frame or page, whatever the Pillow mode."""

    def _open(self) -> None:
        assert self.fp is not None
        if not is_imi(self.fp.read(8)):
            msg = "not an IMI file"
            raise SyntaxError(msg)
        # A named file is memory-mapped by the core: opening touches the header and chunk
        # framing only, pixel bytes are read in load(). Other streams are read whole.
        path = self.filename if isinstance(self.filename, str) and self.filename and os.path.isfile(self.filename) else None
        if path is None:
            self.fp.seek(0)
        data = path if path is not None else self.fp.read()
        try:  # partial: only a broken header fails here; damage after it surfaces in load()
            self.imij = api.open(data, verify=VERIFY_CHECKSUMS, threads=DECODE_THREADS, partial=True)
        except ImijError as e:
            # SyntaxError makes Image.open report UnidentifiedImageError (Image.py _open_core)
            msg = f"not a readable IMI file: {e}"
            raise SyntaxError(msg) from e
        self._data = data
        # Image.open checks the first image's size after _open returns, but pages can be larger.
        # Nothing sized by a header is allocated before load(); raising early with error_only
        # follows WebPImagePlugin._open ("check the size before creating it").
        kind, n_frames = self.imij.kind, self.imij.n_frames
        first = self.imij.image_info(0)
        _bomb_check((first.width, first.height))
        if kind in _PAGES:
            for index in range(1, n_frames):
                described = self.imij.image_info(index)
                _bomb_check((described.width, described.height))

        self.n_frames = n_frames
        self.is_animated = n_frames > 1
        self._frame = 0
        self._loaded_frame = -1
        self._preview: api.ImijFile | None = None
        if self.is_animated:
            self._close_exclusive_fp_after_loading = False  # kept for seek until close() (GIF, APNG)
        self._durations: list[Fraction] = []  # seconds, per frame or page
        if kind is not None:
            self.info["imij_kind"] = kind
            self.info["loop"] = self.imij.loop_count
            self._durations = [self.imij.frame_info(i).duration for i in range(n_frames)]
        self._describe(0, first)
        # safe-to-copy chunks the core leaves raw; mDCv is info["mastering_display"] already
        # (extra_chunks() also returns chunks the core parses into metadata)
        chunks = self.imij.extra_chunks(pixels_changed=True)
        if chunks:
            typed = {_TYPED_TAGS[key] for key in _TYPED_TAGS if key in self.info}
            chunks = [c for c in chunks if c[0] not in typed]
        if chunks:
            self.info["imij_chunks"] = chunks

    def _describe(self, frame: int, described: api.ImageInfo | None = None) -> None:
        """Mode, size and per-image info of ``frame`` (a page has its own; animation frames share one);
        ``described`` is its ``image_info`` when the caller has it."""
        image = self.imij.page(frame) if frame and self.imij.kind in _PAGES else self.imij
        if frame == 0 or image is not self.imij:
            described = described or self.imij.image_info(frame)
            if self.info:  # a seek: the previous image's keys go (an open has none yet)
                for key in self.info.keys() & _PER_IMAGE_KEYS:
                    del self.info[key]
            self._orientation = described.orientation
            self._exif = None  # getexif() re-reads info["exif"]
            meta = image.metadata
            if "malformed" in meta:  # the core leaves a bad chunk out and says why; the pixels still decode
                self.info["imij_metadata_error"] = "; ".join(f"{k}: {v}" for k, v in meta["malformed"].items())  # type: ignore[union-attr]
                warnings.warn(f"IMI metadata not read: {self.info['imij_metadata_error']}", stacklevel=2)
            for name, key in _INFO_FROM_METADATA.items():
                if name in meta:
                    self.info[key] = meta[name]
            if "exif" in meta:
                exif = bytes(meta["exif"])  # type: ignore[arg-type]
                self.info["exif"] = exif if exif.startswith(EXIF_PREFIX) else EXIF_PREFIX + exif  # as PNG
            self.info["imij_bit_depth"] = described.dtype.itemsize * 8
            if described.alpha_mode:
                self.info["imij_alpha_mode"] = described.alpha_mode
            self._described = described
            self._entry = _open_mode(described.layout, described.dtype, described.sig_bits, described.alpha_mode)
            mode = self._entry.mode if self._entry else modes.nominal_mode(described.layout, described.dtype)
            size = (described.width, described.height)
            if self._core_image() is not None and (mode != self.mode or size != self.size):
                self._drop_core_image()  # a new core image when the frame's size or mode changes (Pillow #8439)
            self._set_mode_size(mode, size)
        if self._durations:  # ms, as GIF, APNG and WebP report them; timestamp: when the frame starts
            self.info["duration"] = float(self._durations[frame] * 1000)
            self.info["timestamp"] = float(sum(self._durations[:frame]) * 1000)

    def getexif(self) -> Image.Exif:
        """The Exif of ``info["exif"]``; without an Orientation tag there, the header's orientation
        (1.0) fills it, as ``Image.getexif`` fills it from XMP."""
        exif = super().getexif()
        if ExifTags.Base.Orientation not in exif and self._orientation != 1:
            exif[ExifTags.Base.Orientation] = self._orientation
        return exif

    def _getexif(self) -> dict[int, Any] | None:
        """The legacy flat Exif dict (as WebP's): IFD0 with the Exif IFD merged in and GPS as a dict."""
        if "exif" not in self.info:
            return None
        exif = self.getexif()
        merged = dict(exif)
        merged.update(exif.get_ifd(_EXIF_IFD))
        if _GPS_IFD in exif:
            merged[_GPS_IFD] = exif.get_ifd(_GPS_IFD)
        return merged

    # Pillow 10.1 made ``mode`` a read-only property over ``_mode``, and Pillow 11 ``im`` one over
    # ``_im``; before, both were plain attributes. These three work on Pillow 9.3 to 13.
    def _set_mode_size(self, mode: str, size: tuple[int, int]) -> None:
        setattr(self, _MODE_ATTR, mode)
        self._size = size

    def _core_image(self) -> Any:
        return getattr(self, _IM_ATTR, None)

    def _drop_core_image(self) -> None:
        setattr(self, _IM_ATTR, None)

    def seek(self, frame: int) -> None:
        if not self._seek_check(frame):
            return
        self._frame = frame
        self._describe(frame)

    def tell(self) -> int:
        return self._frame

    def draft(self, mode: str | None, size: tuple[int, int] | None) -> tuple[str, tuple[int, int, float, float]] | None:
        """Load a pRVW preview (1.1) instead of the image: the smallest one at least ``size``,
        no larger than the image, whose Pillow mode is the image's (or ``mode``). Only for a
        single-frame image not loaded yet; once per image, as ``JpegImagePlugin.draft``. Returns
        ``(mode, box)`` with the whole image's box in the preview, or None when nothing changed;
        ``info["imij_preview"]`` is then the preview's size. A preview that does not parse is skipped.
        ``Image.thumbnail`` calls this with its size times ``reducing_gap``."""
        if size is None or self.n_frames != 1 or self._loaded_frame != -1 or self._preview is not None:
            return None
        try:
            previews = self.imij.previews()
        except ImijError:
            return None
        best: tuple[api.ImijFile, modes.OpenMode] | None = None
        for preview in previews:
            described = preview.image_info()
            entry = modes.open_mode(described.layout, described.dtype, described.sig_bits, described.alpha_mode)
            if entry is None or entry.mode not in (self.mode, mode):
                continue
            if not (size[0] <= preview.width <= self.width and size[1] <= preview.height <= self.height):
                continue
            if (preview.width, preview.height) == self.size:
                continue
            if best is None or preview.width * preview.height < best[0].width * best[0].height:
                best = (preview, entry)
        if best is None:
            return None
        self._preview, self._entry = best
        self._set_mode_size(self._entry.mode, (self._preview.width, self._preview.height))
        self._drop_core_image()
        self.info["imij_preview"] = self.size
        return self.mode, (0, 0, float(self.size[0]), float(self.size[1]))

    def load(self) -> Image.core.PixelAccess | None:
        """Decode the current frame or page (or the preview ``draft()`` chose); a failure is an
        OSError that is also the core's error (Pillow's convention for load)."""
        if self._loaded_frame != self._frame or self._core_image() is None:
            try:
                samples = self._decode()
            except ImijError as e:
                raise _os_error(e) from e
            self.im = Image.core.new(self.mode, self.size)
            self.frombytes(samples, "raw", self._entry.rawmode)  # type: ignore[union-attr]
            self.readonly = 0
            self._loaded_frame = self._frame
            if self.n_frames == 1:
                if self._exclusive_fp and self.fp:
                    self.fp.close()
                self.fp = None
        return Image.Image.load(self)

    def _decode(self) -> np.ndarray:
        """The current image's samples as the bytes its mode's raw mode unpacks."""
        if self._entry is None:
            raise Unsupported(modes.unsupported_message(self._described.layout, self._described.dtype))
        if self._preview is not None:
            samples = self._preview.read(threads=DECODE_THREADS)
            failures = self._preview.failures()
        else:  # the core zeroes the units that did not decode and lists them (partial=True)
            samples = self.imij.read(self._frame, threads=DECODE_THREADS)
            failures = self.imij.failures(self._frame)
        if failures and not ImageFile.LOAD_TRUNCATED_IMAGES:
            raise failures[0].error
        return to_pillow(samples, self._entry)

    def verify(self) -> None:
        """Re-open the file's bytes with the checks on and decode every frame and page: the core
        checks cSUM, the framing and the pSUM digests of the decoded bitmaps. Raises an OSError
        that is also ``imij_plugins.Corrupt`` on a mismatch. Like Pillow's ``verify()``, it
        closes the file it opened; re-open the image to load it."""
        try:
            with api.open(self._data, verify=True, threads=DECODE_THREADS) as checked:
                for index in range(checked.n_frames):
                    checked.read(index, threads=DECODE_THREADS)
        except ImijError as e:
            raise _os_error(e) from e
        super().verify()

    def close(self) -> None:
        imij = getattr(self, "imij", None)
        if imij is not None:
            imij.close()
        super().close()


# --------------------------------------------------------------------
# Saving

def _one_alpha_mode(stored: list[tuple[api.Frame, int]]) -> tuple[list[api.Frame], int]:
    """The frames and the one alpha mode they are written with. The writer takes one alpha mode
    per file (``EncodeOptions.alpha_mode``); images without an alpha channel take any."""
    with_alpha = {mode for frame, mode in stored if frame.array.shape[2] in (2, 4)}
    if len(with_alpha) > 1:
        msg = ("cannot write premultiplied (RGBa, La) and straight (RGBA, LA) alpha in one IMI file: "
               "convert the images to one of them first")
        raise ValueError(msg)
    return [frame for frame, _ in stored], max(with_alpha, default=0)


# save parameters taken as the core's options of the same name (the rest default as EncodeOptions)
_SAVE_OPTIONS: dict[str, Any] = {
    "max_error": lambda v: v, "codec": lambda v: v, "checksum": bool, "pixel_checksum": bool, "threads": int, "previews": tuple,
    "slow_decode": bool,
}


def _options(im: Image.Image) -> api.EncodeOptions:
    """The core's options from the save parameters (a bad one: ValueError, before encoding)."""
    info = im.encoderinfo
    if info.get("lossless", True) is not True:
        msg = "IMI files are written losslessly here: pass lossless=True or leave it out (lossy IMI is not available)"
        raise ValueError(msg)
    given = {name: read(info[name]) for name, read in _SAVE_OPTIONS.items() if info.get(name) is not None}
    effort = info.get("effort", info.get("method"))  # ``method``: WebP's name for it
    if effort is not None:
        given["effort"] = int(effort)
    return api.EncodeOptions(chunks=tuple(im.info.get("imij_chunks", ())), **given, **metadata_options(im, info))


def _save(im: Image.Image, fp: IO[bytes], filename: str | bytes) -> None:
    options = _options(im)
    frame, alpha_mode = stored_alpha(im)
    fp.write(api.encode(frame, options, alpha_mode=alpha_mode))


def _save_all(im: Image.Image, fp: IO[bytes], filename: str | bytes) -> None:
    info = im.encoderinfo
    sequence = [im, *info.get("append_images", [])]
    if sum(getattr(s, "n_frames", 1) for s in sequence) == 1:
        _save(im, fp, filename)  # one frame: a still image, as WebPImagePlugin._save_all does
        return
    pages = bool(info.get("pages", False))
    duration = info.get("duration")
    images: list[Image.Image] = []
    durations: list[Fraction] = []
    positions = [(s, s.tell()) for s in sequence]
    try:
        im.seek(0)  # the file's metadata is the first image's (a TIFF or MPO page has its own)
        options = _options(im)
        for source in sequence:
            for index in range(getattr(source, "n_frames", 1)):
                source.seek(index)
                source.load()  # WebP and AVIF set a frame's info["duration"] when they load it
                if isinstance(duration, (list, tuple)):
                    ms = duration[len(images)] if len(images) < len(duration) else 0
                elif duration is None:
                    ms = source.info.get("duration", 0)  # each frame's own, as APNG _write_multiple_frames
                else:
                    ms = duration
                images.append(source.copy())
                durations.append(Fraction(ms) / 1000)
    finally:
        for source, position in positions:  # restore tell() (WebP _save_all, pillow-heif)
            source.seek(position)
    if isinstance(duration, (list, tuple)) and len(duration) != len(images):
        msg = f"{len(duration)} durations for {len(images)} frames"
        raise ValueError(msg)
    if pages:  # each page its own mode (mixed pages)
        stored, alpha_mode = _one_alpha_mode([stored_alpha(i) for i in images])
        fp.write(api.encode(stored, options, durations=durations, kind="pages", alpha_mode=alpha_mode))
        return
    loop = loop_count(info.get("loop", im.info.get("loop", 0)))
    images = one_mode([reduced(i) for i in images])
    if len({i.size for i in images}) > 1 or len({i.mode for i in images}) > 1:
        what = "size" if len({i.size for i in images}) > 1 else "mode"
        msg = f"animation frames must share one {what} (pass pages=True to write pages of different {what}s)"
        raise ValueError(msg)
    frames, alpha_mode = _one_alpha_mode([stored_alpha(i) for i in images])
    fp.write(api.encode(frames, options, durations=durations, loop=loop, kind="animation", alpha_mode=alpha_mode))


# --------------------------------------------------------------------
# Registry


def _register() -> None:
    register_entries(ImiImageFile, is_imi, _save, _save_all)


_register()
