"""``ImijFile``: an opened IMI file — header, chunks, frames and pages — decoded on demand."""

from __future__ import annotations

import builtins
import contextlib
import functools
import gc
import mmap
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, BinaryIO, Union

import numpy as np

from imij_plugins.container import metadata as md
from imij_plugins.container.animation import KIND_ANIMATION, KIND_MIXED_PAGES, KIND_SEQUENCE, Animation
from imij_plugins.container.chunks import FRAM
from imij_plugins.container.file import Container, read_container
from imij_plugins.container.frames import FrameControl, check_frame, check_reference, read_frame_control
from imij_plugins.container.header import Header
from imij_plugins.container.locator import locate_data, read_locator
from imij_plugins.container.metadata.resolution import dpi_from_exif
from imij_plugins.container.pixel_checksum import BitmapDigests, bitmap_digest, read_bitmap_digests
from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported
from imij_plugins.payload.data import DataPayload, measure_open_data, read_data
from imij_plugins.payload.head import read_lossless_head
from imij_plugins.pixels.dtypes import dtype_of
from imij_plugins.registry.chunks import is_critical, is_safe_to_copy
from imij_plugins.registry.features import feature_name
from imij_plugins.registry.profiles import required_profiles
from imij_plugins.remote import RemoteFile, is_remote, open_remote
from imij_plugins.wire.cursor import Cursor

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO]  # or an fsspec file object
Buffer = bytes | bytearray | memoryview | mmap.mmap

DEFAULT_MAX_IMAGE_BYTES = 1 << 32  # 4 GiB of decoded samples per read
METADATA_TAGS = {b"iCCP": "icc_profile", b"eXIf": "exif", b"xMPp": "xmp"}
KIND_NAMES = {1: "animation", 2: "pages", 3: "mixed pages", 4: "sequence"}
_TYPED_METADATA = (  # (tag, key, parser of every payload of that tag)
    (b"mDCv", "mastering_display", lambda p: md.MasteringDisplay.from_bytes(p[0])),
    (b"cLLI", "content_light_level", lambda p: md.ContentLightLevel.from_bytes(p[0])),
    (b"dWHI", "diffuse_white", lambda p: md.DiffuseWhite.from_bytes(p[0])),
    (b"cORg", "color_origin", md.read_color_origin),
    (b"kVMD", "item_metadata", md.read_item_metadata),
)
_SCIENCE_TAGS = frozenset({b"cALB", b"aXES", b"cORD", b"sMDT", b"cATG"})
_METADATA_READ = frozenset({*METADATA_TAGS, *(tag for tag, _, _ in _TYPED_METADATA), b"gMAP"})
# an open DATA's measurer, per ``partial`` (made once: every open passes one)
_MEASURE_OPEN = {p: functools.partial(measure_open_data, partial=p) for p in (False, True)}


@dataclass(frozen=True)
class Limits:
    """Resource limits checked before any allocation sized by the file."""

    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES


@dataclass(frozen=True)
class Failure:
    """What a partial read could not decode: ``image`` None is the file's container; ``units``
    the image's units (2.3 order: stripe-major, then column group) left zero, None for no
    particular unit (a payload head, a digest)."""

    image: int | None
    units: range | None
    error: ImijError


@dataclass(frozen=True)
class FrameInfo:
    """Where a frame or page sits and how long it shows (1.3)."""

    index: int
    duration: Fraction  # seconds
    x: int
    y: int
    width: int
    height: int
    uses_previous: bool = False
    empty: bool = False


@dataclass(frozen=True)
class ImageInfo:
    """How a header describes what ``read(index)`` returns (1.0): the animation canvas for every
    frame; a page's or sequence item's own header; color and orientation from the outer header
    except for mixed pages and sequence items, which carry their own (1.3)."""

    width: int
    height: int
    layout: str
    dtype: np.dtype
    sample: str  # "u8" ... "f64"
    sig_bits: tuple[int, ...]  # per channel; all storage bits unless the header declares fewer
    cicp: tuple[int, int, int, int]
    orientation: int
    alpha_mode: int
    coding: int
    decode_speed: int

    @property
    def channels(self) -> int:
        return len(self.sig_bits)

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, self.channels)

    @classmethod
    def of(cls, header: Header, described: Header) -> ImageInfo:
        """The pixels of ``header``, with color and orientation from ``described``."""
        return cls(header.width, header.height, header.layout.name, dtype_of(header.sample), header.sample_type.name,
                   tuple(header.effective_sig_bits), tuple(described.effective_cicp), described.orientation,
                   described.alpha_mode, header.coding, header.decode_speed)


def load_source(src: Source) -> Buffer:
    """The bytes of a path, a bytes-like object or a binary file object (read from its position).

    A path is memory-mapped, so opening reads only the pages the header and chunk framing touch
    and pixel bytes are read when they decode (a file truncated by another program while it is
    mapped is the one case this cannot guard against).
    """
    if isinstance(src, (bytes, bytearray, memoryview)):
        return src
    if hasattr(src, "read"):
        return src.read()  # type: ignore[union-attr]
    with builtins.open(os.fspath(src), "rb") as f:  # type: ignore[arg-type]
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty files and files that cannot be mapped
            return f.read()


class ImijFile:
    """An opened IMI file: container checked at open (every frame's header too), pixels on ``read``.

    ``partial=True`` reads a damaged or truncated file as far as it goes: only the signature and
    header must be whole. Frames and pages are those whose fRAM and nested header survive; ``read``
    never raises Corrupt for the pixels but zeroes every unit (2.3) that is missing, does not
    decode or sits under a mismatching cSUM piece, and ``failures(index)`` says what was lost
    (empty: the read was complete). Checksums never report "verified" for an incomplete read.
    Reads may run on many threads at once (an animation's frames compose one at a time).

    A URL (``https://``, ``s3://``, ``file://``, any fsspec protocol, ``storage_options`` for its
    filesystem) or an fsspec file object is read by ranges: the container at open, then the
    units each read overlaps (see ``imij_plugins.remote``); cSUM is then checked piece by piece
    under the bytes fetched, not whole at open.
    """

    def __init__(
        self,
        src: Source,
        *,
        verify: bool = True,
        limits: Limits = Limits(),
        threads: int | None = None,
        partial: bool = False,
        storage_options: dict[str, Any] | None = None,
    ):
        if is_remote(src):
            buf: Buffer | RemoteFile = open_remote(src, storage_options)
        elif storage_options:
            raise ValueError("storage_options apply to URLs and fsspec file objects only")
        else:
            buf = load_source(src)
        self._setup(buf, verify, limits, threads, partial)

    @classmethod
    def _nested(cls, buf: memoryview, parent: ImijFile, frame_bad_ranges: tuple[tuple[int, int], ...] | None = None) -> ImijFile:
        """A complete nested file inside ``parent``: a frame or page (``frame_bad_ranges`` given,
        1.3), or a preview or gain map (1.1, 1.2)."""
        nested = cls.__new__(cls)
        nested._setup(buf, parent.verify, parent.limits, parent.threads, parent.partial, frame_bad_ranges)
        parent._children.append(nested)
        return nested

    def _setup(
        self,
        buf: Buffer | RemoteFile,
        verify: bool,
        limits: Limits,
        threads: int | None,
        partial: bool,
        bad_ranges: tuple[tuple[int, int], ...] | None = None,
    ) -> None:
        """Parse the container; ``bad_ranges`` (this file's offsets of mismatching cSUM pieces) is
        given for a nested file, which may not carry frames of its own (1.3). A remote file's
        container bytes are fetched here; its units when a read needs them."""
        measure_open = _MEASURE_OPEN[bool(partial)]
        self._remote = buf if isinstance(buf, RemoteFile) else None
        if self._remote is not None:
            self.container: Container = self._remote.container(verify=verify, measure_open=measure_open, partial=partial)
            buf = self._remote.buf
        else:
            self.container = read_container(buf, verify=verify, measure_open=measure_open, partial=partial)
        self._buf: Buffer | None = buf
        self._children: list[ImijFile] = []  # nested files viewing this file's bytes, closed with it
        self.verify = verify
        self.limits = limits
        self.threads = threads
        self.partial = partial
        self._bad_ranges = (*self.container.bad_ranges, *(bad_ranges or ()))
        self._payload: DataPayload | None = None
        self._payload_error: Corrupt | None = None  # partial reads: why DATA's head could not be read
        self._unit_failures: dict[int, ImijError] = {}  # partial reads: units of this file's DATA left zero
        self._checks: dict[int, list[ImijError]] = {}  # partial reads: digests that failed, per image
        self._infos: dict[int, ImageInfo] = {}  # image_info per index, made once (headers are fixed at open)
        if bad_ranges is not None and self.container.animation is not None:
            raise Corrupt("a nested frame or page carries frames of its own")  # 1.3
        self._frames = self._read_frames()
        self._canvas: tuple[int, np.ndarray] | None = None  # the last composed animation canvas
        self._canvas_lock = threading.Lock()  # _compose updates the cached canvas in place: one thread at a time
        self.bitmap_digests = self._read_bitmap_digests()
        self._verified: set[int] = set()

    # header information
    @property
    def header(self) -> Header:
        return self.container.header

    @property
    def width(self) -> int:
        return self.header.width

    @property
    def height(self) -> int:
        return self.header.height

    @property
    def channels(self) -> int:
        return self.header.channel_count

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, self.channels)

    @property
    def dtype(self) -> np.dtype:
        return dtype_of(self.header.sample)

    @property
    def layout(self) -> str:
        return self.header.layout.name

    @property
    def features(self) -> tuple[str, ...]:
        """The header's feature set by name (mask plus implied features, 0.1)."""
        return tuple(feature_name(f) for f in sorted(self.header.features))

    @property
    def profiles(self) -> list[str]:
        return required_profiles(self.header.features)

    @property
    def locator_status(self) -> str:
        """Header record 4 (1.0): "absent", "valid" (it names DATA's place) or "stale" (ignored)."""
        self._check_open()
        rec = self.header.record(4)
        if rec is None:
            return "absent"
        locator = read_locator(rec.payload)
        if locator is None:
            return "stale"

        def head_end(start: int, end: int) -> int:
            return read_lossless_head(Cursor(self._buf, start, end, "DATA head"), self.header).end

        data = self.container.data
        found = locate_data(self._buf, self.container.header_end, locator, head_end)
        return "valid" if data is not None and found == data.start else "stale"

    # frames and pages
    @property
    def n_frames(self) -> int:
        return len(self._frames) + 1

    @property
    def kind(self) -> str | None:
        """``"animation"``, ``"pages"``, ``"mixed pages"``, or None for a single image."""
        anim = self.container.animation
        return KIND_NAMES[anim.kind] if anim else None

    @property
    def loop_count(self) -> int:
        """Animation plays: 0 forever (1.3)."""
        anim = self.container.animation
        return anim.loop_count if anim else 0

    def frame_info(self, index: int) -> FrameInfo:
        """Duration and rectangle of frame or page ``index``."""
        self._check_index(index)
        if index == 0:
            anim = self.container.animation
            return FrameInfo(0, anim.duration if anim else Fraction(0), 0, 0, self.width, self.height)
        ctrl, nested = self._frames[index - 1]
        w, h = (nested.width, nested.height) if nested else (0, 0)
        return FrameInfo(index, ctrl.duration, ctrl.x0, ctrl.y0, w, h, ctrl.uses_previous, ctrl.empty)

    def image_info(self, index: int = 0) -> ImageInfo:
        """What ``read(index)`` returns and how the file describes it, from headers alone."""
        self._check_index(index)
        info = self._infos.get(index)
        if info is None:
            anim = self.container.animation
            if index == 0 or anim is None or anim.kind == KIND_ANIMATION:
                info = ImageInfo.of(self.header, self.header)
            else:
                page = self.page(index).header
                info = ImageInfo.of(page, page if anim.kind in (KIND_MIXED_PAGES, KIND_SEQUENCE) else self.header)
            self._infos[index] = info
        return info

    def page(self, index: int) -> ImijFile:
        """Page or frame ``index`` as its own file object (its own header; 0 is this file)."""
        self._check_index(index)
        if index == 0:
            return self
        nested = self._frames[index - 1][1]
        if nested is None:
            raise ValueError(f"frame {index} is empty: it repeats the previous frame")
        return nested

    def _read_frames(self) -> list[tuple[FrameControl, ImijFile | None]]:
        """Every fRAM parsed and its nested header checked against the outer file at open (1.3, 0.1)."""
        anim = self.container.animation
        if anim is None:
            return []
        frames: list[tuple[FrameControl, ImijFile | None]] = []
        for chunk in self.container.find(FRAM):
            try:
                frames.append(self._read_frame(chunk.payload_start, chunk.end, anim, frames))
            except Corrupt as exc:
                if not self.partial:
                    raise
                self.container.damage.append(exc)  # a partial read keeps the frames before it
                break
        return frames

    def _read_frame(
        self, start: int, end: int, anim: Animation, frames: list[tuple[FrameControl, ImijFile | None]]
    ) -> tuple[FrameControl, ImijFile | None]:
        """One fRAM at ``[start, end)`` and its nested file, checked against the earlier ones (1.3)."""
        ctrl = read_frame_control(self._buf, start, end, anim.kind)
        nested = None
        if ctrl.image is not None:
            lo, hi = ctrl.image
            bad = tuple((max(a, lo) - lo, min(b, hi) - lo) for a, b in self._bad_ranges if a < hi and b > lo)
            nested = ImijFile._nested(memoryview(self._buf)[lo:hi], self, bad)
        check_frame(anim, len(frames) + 1, ctrl, nested.header if nested else None, self.header)
        if ctrl.reference is not None:  # 1.3: the referenced item's ImageInfo must match
            earlier = self.header if ctrl.reference[0] == 0 else frames[ctrl.reference[0] - 1][1].header  # type: ignore[union-attr]
            check_reference(earlier, nested.header)  # type: ignore[union-attr]
        return ctrl, nested

    def _read_bitmap_digests(self) -> BitmapDigests | None:
        """The pSUM table, checked against the frame count at open (1.4.1)."""
        found = self.container.find(b"pSUM")
        if not found:
            return None
        anim = self.container.animation
        try:  # aNIM's count: the same as n_frames unless a partial read lost frames
            return read_bitmap_digests(self.container.payload(found[0]), anim.frame_count if anim else 1)
        except Corrupt as exc:
            if not self.partial:
                raise
            self.container.damage.append(exc)
            return None

    @property
    def checksum_status(self) -> str:
        """cSUM (1.4): "verified", "unchecked" (verify=False), "unknown" (another algorithm), "absent",
        or "failed" (a partial read of a file whose table is gone, broken or mismatches); for a
        URL "pieces" until every piece was fetched: those under the bytes read so far matched."""
        if self.container.checksum_failed:
            return "failed"
        table = self.container.piece_table
        if not self.container.find(b"cSUM"):
            return "absent"
        if table is None:
            return "unchecked"
        if table.algo != 0:
            return "unknown"
        return "pieces" if self._remote is not None and not self._remote.verified else "verified"

    def bitmap_status(self, index: int = 0) -> str:
        """pSUM state of frame ``index``: "verified", "pending" (not fully read yet), "absent" or "unknown"."""
        self._check_index(index)
        if self.bitmap_digests is None:
            return "absent"
        if not self.bitmap_digests.known:
            return "unknown"
        return "verified" if index in self._verified else "pending"

    def _verify_bitmap(self, index: int, image: np.ndarray, header: Header) -> None:
        """1.4.1: a full read checks the decoded raster against its digest; a mismatch is Corrupt
        (recorded in a partial read, where an incomplete raster is never checked nor verified)."""
        table = self.bitmap_digests
        if not self.verify or table is None or not table.known or (self.partial and self.failures(index)):
            return
        h, w, _ = image.shape
        if bitmap_digest(w, h, header.channels, header.sample, index, image.tobytes()) != table.digests[index]:
            self._fail_check(index, Corrupt(f"decoded bitmap checksum mismatch (pSUM) on image {index}"))
            return
        self._verified.add(index)

    def _fail_check(self, index: int, error: Corrupt) -> None:
        """A digest check of image ``index`` failed: raise, or record it in a partial read."""
        if not self.partial:
            raise error
        self._checks.setdefault(index, []).append(error)

    def failures(self, index: int = 0) -> list[Failure]:
        """What reads of frame or page ``index`` so far could not decode (``partial=True``; empty:
        complete): the container's damage, then per image it is made of (an animation canvas:
        the frames since the last intra frame) its missing units, head and digest failures."""
        self._check_index(index)
        out = [Failure(None, None, e) for e in self.container.damage]
        for i in self._sources(index):
            image = self if i == 0 else self._frames[i - 1][1]
            if image is not None:
                out += image._own_failures(i)
            out += [Failure(i, None, e) for e in self._checks.get(i, [])]
        return out

    def _sources(self, index: int) -> range:
        """The images the read of ``index`` decodes: for an animation, back to the last intra frame (1.3)."""
        anim = self.container.animation
        start = index
        if index and anim is not None and anim.kind == KIND_ANIMATION:
            while start > 0 and self._frames[start - 1][0].uses_previous:
                start -= 1
        return range(start, index + 1)

    def _own_failures(self, image: int) -> list[Failure]:
        """This file's own DATA failures, reported as image ``image`` of the outer file."""
        out = [Failure(image, None, e) for e in self.container.damage] if image else []
        if self._payload_error is not None:
            out.append(Failure(image, None, self._payload_error))
        payload = self._payload
        if payload is not None:
            out += [Failure(image, None, e) for e in payload.errors]
        out += [Failure(image, range(u, u + 1), self._unit_failures[u]) for u in sorted(self._unit_failures)]
        if payload is not None and payload.walk_error is not None:  # 2.7: no record after this one
            out.append(Failure(image, range(len(payload.units), payload.head.geometry.unit_count), payload.walk_error))
        return out

    def iter_frames(self) -> Iterator[np.ndarray]:
        """Every frame (composed canvas) or page in order."""
        for index in range(self.n_frames):
            yield self.read(index)

    # metadata
    @property
    def chunks(self) -> list[tuple[str, int]]:
        """Every chunk as ``(tag, whole length)`` in file order."""
        return [(c.tag.decode("ascii"), c.size) for c in self.container.chunks]

    @property
    def metadata(self) -> dict[str, object]:
        """The file's metadata as plain values (1.1, 1.1.1, 1.2, 1.3, 1.5), parsed on each access.

        Keys: "icc_profile", "exif", "xmp" (bytes), "dpi" (from Exif), "cicp" (4-tuple), "orientation",
        "mastering_display", "content_light_level", "diffuse_white", "color_origin",
        "item_metadata", "gain_map", "science" (a ScienceRecords with a report per record).
        Only keys whose chunk is present appear, except "cicp" and "orientation". A chunk that
        breaks its rules (1.1, 1.1.1, 1.3) is left out and named under "malformed" with the
        reason: metadata never fails the image, and one bad chunk does not hide the others.
        """
        self._check_open()
        out: dict[str, object] = {"cicp": self.header.effective_cicp, "orientation": self.header.orientation}
        payloads: dict[bytes, list[bytes]] = {}
        for chunk in self.container.chunks:  # only the tags read here: DATA and frames stay mapped
            if chunk.tag in _METADATA_READ:
                payloads.setdefault(chunk.tag, []).append(bytes(self.container.payload(chunk)))
        for tag, name in METADATA_TAGS.items():
            if tag in payloads:
                out[name] = payloads[tag][0]
        malformed: dict[str, str] = {}
        for tag, name, parse in _TYPED_METADATA:
            if tag in payloads:
                try:
                    out[name] = parse(payloads[tag])
                except ImijError as exc:
                    malformed[name] = f"{type(exc).__name__}: {exc}"
        if "exif" in out:  # Exif resolution tags: IMI has no field of its own for print resolution
            dpi = dpi_from_exif(out["exif"])  # type: ignore[arg-type]
            if dpi is not None:
                out["dpi"] = dpi
        if b"gMAP" in payloads:
            try:
                out["gain_map"] = md.GainMap.from_bytes(payloads[b"gMAP"][0])
            except Unsupported:
                pass  # 1.2: another version or metadata that does not parse: skip the chunk
            except ImijError as exc:
                malformed["gain_map"] = f"{type(exc).__name__}: {exc}"
        science = [(c.tag, bytes(self.container.payload(c))) for c in self.container.chunks if c.tag in _SCIENCE_TAGS]
        if science:
            out["science"] = md.science_records(science, self.channels)
        if malformed:
            out["malformed"] = malformed
        return out

    def previews(self) -> list[ImijFile]:
        """The pRVW preview layers, each a complete nested file (1.1)."""
        self._check_open()
        return [ImijFile._nested(self.container.payload(c), self) for c in self.container.find(b"pRVW")]

    def gain_map_image(self) -> ImijFile | None:
        """The gMAP gain map image as a nested file (1.2), or None without a usable gMAP."""
        gain_map = self.metadata.get("gain_map")
        if gain_map is None:
            return None
        payload = self.container.payload(self.container.find(b"gMAP")[0])
        start, end = gain_map.image_range  # type: ignore[attr-defined]
        return ImijFile._nested(payload[start:end], self)

    def extra_chunks(self, *, pixels_changed: bool = False) -> list[tuple[bytes, bytes, str]]:
        """Ancillary chunks this reader does not interpret, as ``(tag, payload, "before"|"after")``.

        Pass them to ``write(..., chunks=...)`` to carry them into a re-written file; with
        ``pixels_changed`` only the safe-to-copy ones are kept (1.1, fourth letter).
        """
        self._check_open()
        known = {b"DATA", b"aNIM", b"fRAM", b"cSUM", b"uIDX", b"pSUM", *METADATA_TAGS}
        out = []
        place = "before"
        for chunk in self.container.chunks:
            if chunk.tag == b"DATA":
                place = "after"
            elif chunk.tag not in known and not is_critical(chunk.tag):
                if not pixels_changed or is_safe_to_copy(chunk.tag):
                    out.append((chunk.tag, bytes(self.container.payload(chunk)), place))
        return out

    # pixels
    def payload(self) -> DataPayload:
        """DATA's parsed head and unit records (parsed once, on first use); for a URL with a unit
        table, a unit no read has fetched yet has ``body_start`` -1 (2.7: placed by its span)."""
        self._check_open()
        if self._payload is None:
            data = self.container.data
            if data is None:  # only in a partial read
                raise Corrupt("file has no DATA chunk")
            if self._remote is not None:  # units placed by the unit table, fetched per read
                self._payload = self._remote.payload(self.header, data, self.container.trailing_index())
                if self._payload is not None:
                    return self._payload
            self._payload = read_data(
                self._buf,
                self.header,
                data.payload_start,
                data.end if not data.open else len(self._buf),
                bounded=not data.open,
                trailing_index=self.container.trailing_index(),
                partial=self.partial,
                bad_ranges=self._bad_ranges,
            )
        return self._payload

    def read(
        self, index: int = 0, *, region: tuple[int, int, int, int] | None = None, threads: int | None = None
    ) -> np.ndarray:
        """Frame or page ``index`` as an (H, W, C) array of its sample type.

        Animations return the composed canvas after frame ``index`` (1.3). ``region=(x, y, w, h)``
        decodes only the units that region overlaps (for a still image or a page). A file opened
        with ``partial=True`` zeroes what does not decode: see ``failures(index)``.
        """
        self._check_index(index)
        threads = threads if threads is not None else self.threads
        anim = self.container.animation
        if index and anim is not None and anim.kind == KIND_ANIMATION:  # kind 4 items are whole images
            with self._canvas_lock:  # the copy too: the next composition reuses this canvas
                canvas = self._compose(index, threads)
                if region is None:
                    self._verify_bitmap(index, canvas, self.header)
                    return canvas.copy()
                x, y, w, h = self._check_region(region, self.width, self.height)
                return canvas[y : y + h, x : x + w].copy()
        page = self.page(index) if index else self
        reference = self._sequence_reference(index, threads) if index else None
        image = page._read_data(region, threads, reference)
        if region is None:
            self._verify_bitmap(index, image, page.header)
        return image

    def _sequence_reference(self, index: int, threads: int | None) -> np.ndarray | None:
        """1.3 kind 4: the earlier item a record 33 names, its raster checked by its digest first."""
        ref = self._frames[index - 1][0].reference
        if ref is None:
            return None
        ordinal, digest = ref
        raster = self.read(ordinal, threads=threads)
        item = self.page(ordinal).header
        h, w, _ = raster.shape
        if bitmap_digest(w, h, item.channels, item.sample, ordinal, raster.tobytes()) != digest:
            self._fail_check(index, Corrupt(f"item {index} references item {ordinal} whose decoded raster does not match its digest"))
        return raster

    def _read_data(
        self, region: tuple[int, int, int, int] | None, threads: int | None, reference: np.ndarray | None = None
    ) -> np.ndarray:
        """This file's DATA image, or ``region`` of it: decoded units, zeros for failed ones in a partial read."""
        payload = self._partial_payload()
        failures = self._unit_failures if self.partial else None
        if payload is None:  # a partial read whose DATA head is gone: nothing decodes
            x, y, w, h = (0, 0, self.width, self.height) if region is None else self._check_region(region, self.width, self.height)
            self._check_size(w, h)
            return np.zeros((h, w, self.channels), dtype=self.dtype)
        if region is None or reference is not None:
            header = self.container.header
            width, height, channels = header.width, header.height, header.channel_count
            dtype = dtype_of(header.sample)
            self._check_size(width, height, channels, dtype)
            out = (np.zeros if self.partial else np.empty)((height, width, channels), dtype=dtype)
            if self._remote is not None:
                self._remote.fetch_units(payload, None)
            payload.decode_into(out, threads=threads, reference=reference, failures=failures)
            if region is not None:
                x, y, w, h = self._check_region(region, self.width, self.height)
                return out[y : y + h, x : x + w].copy()
            return out
        x, y, w, h = self._check_region(region, self.width, self.height)
        geometry = payload.head.geometry
        indices = geometry.units_in(x, y, w, h)
        x0, y0, _, _ = geometry.unit_rect(indices[0])
        x1, y1, uw, uh = geometry.unit_rect(indices[-1])
        self._check_size(x1 + uw - x0, y1 + uh - y0)
        box = (np.zeros if self.partial else np.empty)((y1 + uh - y0, x1 + uw - x0, self.channels), dtype=self.dtype)
        if self._remote is not None:
            self._remote.fetch_units(payload, indices)
        payload.decode_into(box, indices, threads=threads, origin=(x0, y0), failures=failures)
        return box[y - y0 : y - y0 + h, x - x0 : x - x0 + w].copy()

    def _partial_payload(self) -> DataPayload | None:
        """``payload()``; None in a partial read whose DATA is gone or whose head breaks the rules."""
        if self._payload is None and self._payload_error is not None:
            return None
        try:
            return self.payload()
        except Corrupt as exc:
            if not self.partial:
                raise
            self._payload_error = exc
            return None

    def _compose(self, index: int, threads: int | None) -> np.ndarray:
        """The animation canvas after frame ``index``: from the last intra frame, or the cached canvas (1.3)."""
        start = self._sources(index).start
        if self._canvas is not None and start <= self._canvas[0] <= index:
            start, canvas = self._canvas
        elif start == 0:
            canvas = self._read_data(None, threads)
        else:
            canvas = self._frames[start - 1][1].read(threads=threads)  # type: ignore[union-attr]
        for i in range(start + 1, index + 1):
            ctrl, nested = self._frames[i - 1]
            if nested is None:
                continue  # 1.3: an empty frame repeats the previous one
            if not ctrl.uses_previous:
                canvas = nested._read_data(None, threads)
            else:  # an inter frame: its rectangle of the previous canvas is the reference (section 4)
                rows = slice(ctrl.y0, ctrl.y0 + nested.height)
                cols = slice(ctrl.x0, ctrl.x0 + nested.width)
                canvas[rows, cols] = nested._read_data(None, threads, canvas[rows, cols])
        self._canvas = (index, canvas)
        return canvas

    @staticmethod
    def _check_region(region: tuple[int, int, int, int], width: int, height: int) -> tuple[int, int, int, int]:
        x, y, w, h = region
        if w < 1 or h < 1 or x < 0 or y < 0 or x + w > width or y + h > height:
            raise ValueError(f"region {region} is not inside the {width}x{height} image")
        return x, y, w, h

    def _check_index(self, index: int) -> None:
        self._check_open()
        if not 0 <= index < self.n_frames:
            raise IndexError(f"frame {index} out of range (file has {self.n_frames})")

    def _check_size(self, w: int, h: int, channels: int | None = None, dtype: np.dtype | None = None) -> None:
        """TooLarge when ``w`` x ``h`` pixels (of ``channels`` and ``dtype``, default the header's) exceed the limit."""
        need = w * h * (channels or self.channels) * (dtype or self.dtype).itemsize
        if need > self.limits.max_image_bytes:
            raise TooLarge(f"decoding {w}x{h} needs {need} bytes, over the limit of {self.limits.max_image_bytes}")

    def close(self) -> None:
        """Release the file: nested files first, then every view of the bytes and the memory map
        of a path. Reading afterwards raises ValueError; closing again does nothing."""
        if self._buf is None:
            return
        for child in self._children:
            child.close()
        self._children.clear()
        self._frames, self._payload, self._canvas = [], None, None
        buf, self._buf = self._buf, None
        self.container.buf = b""
        if isinstance(buf, memoryview):
            buf.release()  # a nested file's view of its parent's bytes
        elif isinstance(buf, mmap.mmap):
            try:
                buf.close()
            except BufferError:  # a view still held by a reference cycle: collect it, then unmap
                gc.collect()
                with contextlib.suppress(BufferError):
                    # views held by an error's traceback (a failure's frames, an exception being
                    # raised through ``with``): the map goes with the last of them
                    buf.close()

    @property
    def closed(self) -> bool:
        return self._buf is None

    def _check_open(self) -> None:
        if self._buf is None:
            raise ValueError("I/O operation on a closed IMI file")

    def __enter__(self) -> ImijFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ImijFile {self.width}x{self.height} {self.layout} {self.dtype} frames={self.n_frames}>"
