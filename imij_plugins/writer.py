"""Writing IMI files: a still image, an animation or pages, with metadata chunks (1, 1.3, 2.13)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

import numpy as np

from imij_plugins.container import metadata as md
from imij_plugins.container.animation import KIND_ANIMATION, KIND_MIXED_PAGES, KIND_PAGES, KIND_SEQUENCE
from imij_plugins.container.frames import EMPTY, FRAME_REFERENCE, HAS_RECORDS, USES_PREVIOUS
from imij_plugins.container.header import Header, check_fields
from imij_plugins.container.metadata.resolution import exif_with_dpi
from imij_plugins.container.pixel_checksum import bitmap_digest, encode_bitmap_digests
from imij_plugins.container.writer import assemble, stream_file, trailing_index_payload, write_atomic
from imij_plugins.errors import Corrupt
from imij_plugins.options import DEFAULTS, PRESENTATIONS, EncodeKeywords, EncodeOptions, Frame
from imij_plugins.payload.quick.writer import encode_quick_payload, quick_geometry
from imij_plugins.pixels.dtypes import as_image_array, layout_code, sample_code
from imij_plugins.pixels.resample import downscale
from imij_plugins.registry.features import FeatureId
from imij_plugins.registry.samples import PIXEL_MODEL_LAYOUTS, SIGNED_SAMPLE_CODES, WIDE_SAMPLE_CODES
from imij_plugins.wire.varint import encode_varint

if TYPE_CHECKING:
    from typing_extensions import Unpack

Image = np.ndarray | Frame | Sequence[np.ndarray | Frame]  # what encode() takes
KINDS = {"animation": KIND_ANIMATION, "pages": KIND_PAGES, "sequence": KIND_SEQUENCE}


class _Coded(NamedTuple):
    """One image coded as header + DATA payload, not yet framed into a file (a named tuple: cheap to make and copy)."""

    header: Header
    payload: bytes
    head_len: int
    units: int
    trailing_index: bytes | None = None
    recon: np.ndarray | None = None  # near-lossless, when asked: the samples a decoder outputs (2.6)


def _code_image(
    frame: Frame,
    opts: EncodeOptions,
    *,
    unit_table: str = "hint",
    ordinals: bool = False,
    reference: np.ndarray | None = None,
) -> _Coded:
    """One image coded as header + DATA payload with the options' codec; a page's or item's own
    ``sig_bits`` go in its header (1.0)."""
    image = as_image_array(frame.array)
    height, width, channels = image.shape
    sample = sample_code(image.dtype)
    channels_code = layout_code(channels, frame.layout if frame.layout is not None else opts.layout)
    group_cols = opts.group_cols if opts.group_cols is None or opts.group_cols < width else 0  # 2: one group
    if opts.codec == "entropy":
        return _code_entropy(image, channels_code, opts.effort, opts.max_error, opts.stripe_rows, group_cols,
                             opts.threads, unit_table, ordinals, reference, opts.slow_decode, opts.pixel_checksum)
    geometry = quick_geometry(width, height, opts.stripe_rows, group_cols)
    encoded = encode_quick_payload(
        image, geometry, bit_smart=opts.effort >= 4, threads=opts.threads, unit_table=unit_table, ordinals=ordinals
    )
    mask = {FeatureId.QUICK_PIXELS}  # 0.1: declare exactly the features used
    if encoded.uses_bit_smart:
        mask.add(FeatureId.QUICK_BIT_SMARTS)
    if encoded.uses_ordinals:
        mask.add(FeatureId.UNIT_ORDINALS)
    if sample in SIGNED_SAMPLE_CODES:
        mask.add(FeatureId.SIGNED_SAMPLES)
    if sample in WIDE_SAMPLE_CODES:
        mask.add(FeatureId.WIDE_SAMPLES)
    if channels_code in PIXEL_MODEL_LAYOUTS:
        mask.add(FeatureId.PIXEL_MODELS)
    header = Header(width=width, height=height, sample=sample, channels=channels_code, mask=frozenset(mask))
    return _Coded(header, encoded.payload, encoded.head_len, geometry.unit_count, encoded.trailing_index)


def _code_entropy(image: np.ndarray, channels_code: int, effort: int, max_error: float, stripe_rows, group_cols,
                  threads, unit_table: str, ordinals: bool, reference: np.ndarray | None = None,
                  slow_decode: bool = False, recon: bool = False) -> _Coded:
    """An entropy-coded payload (2.1-2.7, 3) from the tuned encoder (section 5); ``reference``:
    an inter frame's previous canvas under it (section 4's predictors 7-9); ``recon``: with the
    samples a decoder outputs when near-lossless (for pSUM, 1.4.1)."""
    from imij_plugins.payload.entropy.encoder import encode_tuned  # only when asked for

    height, width = image.shape[:2]
    encoded = encode_tuned(image, effort=effort, max_error=max_error, threads=threads, layout=channels_code,
                           stripe_rows=stripe_rows, group_cols=group_cols, unit_table=unit_table, ordinals=ordinals,
                           reference=reference, slow_decode=slow_decode, recon=recon)
    header = Header(width=width, height=height, sample=sample_code(image.dtype), channels=channels_code,
                    mask=encoded.features_used)
    trailing = None
    if unit_table == "tail":  # the writer's check-tail head; the spans for uIDX come from a walk
        trailing = _spans_for_tail(header, encoded.payload)
    return _Coded(header, encoded.payload, encoded.head_len, encoded.units, trailing, encoded.recon)


def _spans_for_tail(header: Header, payload: bytes) -> bytes:
    """The uIDX body (spans, data_len) of a check-tail payload, from its walked records (2.7)."""
    from imij_plugins.payload.head import read_lossless_head
    from imij_plugins.payload.units import walk_units
    from imij_plugins.wire.cursor import Cursor

    head = read_lossless_head(Cursor(payload, 0, len(payload)), header)
    units = walk_units(payload, head, len(payload))
    return b"".join(encode_varint(u.span) for u in units) + len(payload).to_bytes(8, "little")


def _with_fields(header: Header, cicp, orientation: int, sig_bits, alpha_mode: int) -> Header:
    """The header with the caller's CICP, orientation, significant bits and alpha mode (1.0)."""
    mask = set(header.mask)
    if alpha_mode in (2, 3):
        mask.add(FeatureId.ALPHA_INTERPRETATION)  # 1.0: alpha modes 2 and 3
    out = Header(**{**header.__dict__, "cicp": tuple(cicp) if cicp is not None else None, "orientation": orientation,
                    "sig_bits": tuple(sig_bits) if sig_bits is not None else None, "alpha_mode": alpha_mode,
                    "mask": frozenset(mask)})
    try:
        check_fields(out)  # the reader's rules, so a writer never emits a header it would refuse
    except Corrupt as exc:
        raise ValueError(str(exc)) from None
    return out


def _nested_file(coded: _Coded) -> bytes:
    """A frame's or page's complete nested file: no metadata, no locator, no checksum (1.0, 1.3)."""
    return assemble(coded.header, coded.payload, coded.head_len)


def _duration(value: float | Fraction) -> bytes:
    """1.3: varint num, varint den (> 0), seconds."""
    f = Fraction(value).limit_denominator(1_000_000)
    if f < 0:
        raise ValueError(f"negative duration {value}")
    return encode_varint(f.numerator) + encode_varint(f.denominator)


def _changed_rect(previous: np.ndarray, current: np.ndarray) -> tuple[int, int, int, int] | None:
    """The bounding box of the pixels that differ (bitwise), or None when none do."""
    diff = (previous.view(np.uint8) != current.view(np.uint8)).reshape(current.shape[0], current.shape[1], -1).any(axis=2)
    rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
    if rows.size == 0:
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


def _frames_of(image: Image) -> tuple[list[Frame], bool]:
    """The images to write as Frames, and whether ``image`` was one image rather than a list."""
    if isinstance(image, (np.ndarray, Frame)):
        items: list = [image]
        single = True
    else:
        items, single = list(image), False
    if not items:
        raise ValueError("nothing to write: an empty list of frames")
    return [f if isinstance(f, Frame) else Frame(f) for f in items], single


def _prepare(image: Image, opts: EncodeOptions) -> _Layout:
    """The parts of the file ``encode`` describes, before they are joined or streamed."""
    frames, single = _frames_of(image)
    first = _code_image(frames[0], opts, unit_table=opts.unit_table, ordinals=opts.ordinals)
    sig_bits = _sig_bits(frames[0], opts)
    first = first._replace(header=_with_fields(first.header, opts.cicp, opts.orientation, sig_bits, opts.alpha_mode))
    diffuse_white = opts.diffuse_white
    if isinstance(diffuse_white, (int, float)):
        diffuse_white = md.DiffuseWhite.from_nits(diffuse_white)
    exif = exif_with_dpi(opts.exif, opts.dpi) if opts.dpi is not None else opts.exif
    typed = (
        (b"iCCP", opts.icc_profile),
        (b"eXIf", exif),
        (b"xMPp", opts.xmp),
        (b"mDCv", opts.mastering_display and opts.mastering_display.to_bytes()),
        (b"cLLI", opts.content_light_level and opts.content_light_level.to_bytes()),
        (b"dWHI", diffuse_white and diffuse_white.to_bytes()),
        (b"cORg", opts.color_origin and opts.color_origin.to_bytes()),
        (b"kVMD", opts.item_metadata and opts.item_metadata.to_bytes()),
    )
    before = [(tag, bytes(value)) for tag, value in typed if value is not None]
    before += [(b"pRVW", p) for p in _previews(frames[0], first.header, opts)]  # 1.1: before DATA
    if opts.science:  # 1.5: writers place the records before DATA
        before += md.science_chunks(first.header.channel_count, **opts.science)  # type: ignore[arg-type]
    before += [(tag, bytes(payload)) for tag, payload, place in opts.chunks if place == "before"]
    after = [(tag, bytes(payload)) for tag, payload, place in opts.chunks if place != "before"]
    header, parts = first.header, []
    if not single:
        header, anim, frame_chunks, parts = _frames(first, frames, opts)
        before.insert(0, (b"aNIM", anim))
        after = frame_chunks + after
    trailer = []
    if first.trailing_index is not None:  # 2.7: the trailing unit index is the file's last chunk
        trailer.append((b"uIDX", trailing_index_payload(first.trailing_index)))
    locator = opts.unit_table in ("hint", "filled", "tail") and first.units >= 2  # 1.0: with a hint or reservation
    out = _Layout(header, first, before, after, trailer, locator, opts.checksum)
    if not opts.pixel_checksum:
        return out
    if opts.max_error:  # 1.4.1: the digest is of the decoded raster, which near-lossless changes
        rasters = _rasters(first, as_image_array(frames[0].array), parts, opts.kind == "animation")
        digests = [_raster_digest(h, image, i) for i, (h, image) in enumerate(rasters)]
    else:  # lossless: the source is the output
        digests = [_digest(f, i, _layout(f, opts)) for i, f in enumerate(frames)]
    return replace(out, before=before + [(b"pSUM", encode_bitmap_digests(digests))])


def _layout(frame: Frame, opts: EncodeOptions) -> str | int | None:
    """The layout ``frame`` is written with: its own, else the options'."""
    return frame.layout if frame.layout is not None else opts.layout


def _sig_bits(frame: Frame, opts: EncodeOptions) -> Sequence[int] | None:
    """The significant bits ``frame`` declares: its own, else the options'."""
    return frame.sig_bits if frame.sig_bits is not None else opts.sig_bits


def _previews(frame: Frame, header: Header, opts: EncodeOptions) -> list[bytes]:
    """pRVW payloads (1.1): image 0 downscaled by each factor of ``opts.previews`` (box average),
    each a complete nested file of the image's layout, significant bits and alpha mode (a box
    average of premultiplied samples is premultiplied), smallest last."""
    out = []
    for factor in sorted(set(opts.previews)):
        small = downscale(as_image_array(frame.array), factor)
        if small.shape[:2] == (header.height, header.width):
            continue  # an image no larger than the factor has no smaller preview
        coded = _code_image(Frame(small, header.channels), replace(opts, group_cols=None, stripe_rows=None,
                                                                      pixel_checksum=False))
        described = _with_fields(coded.header, None, 1, header.sig_bits, header.alpha_mode)  # 1.1: the image's pixels
        out.append(_nested_file(coded._replace(header=described)))
    return out


@dataclass(frozen=True)
class _Layout:
    """A whole file's parts (header, DATA, the chunks around it), joined or streamed (1, 1.4)."""

    header: Header
    first: _Coded
    before: list[tuple[bytes, bytes]]
    after: list[tuple[bytes, bytes]]
    trailer: list[tuple[bytes, bytes]]  # the trailing uIDX (2.7), always last
    locator: bool
    checksum: bool

    def to_bytes(self) -> bytes:
        """The file in memory: a cSUM table goes just before DATA (1.4)."""
        return assemble(self.header, self.first.payload, self.first.head_len, before=self.before,
                        after=self.after + self.trailer, locator=self.locator, checksum=self.checksum)

    def stream(self, out: BinaryIO) -> int:
        """The file written chunk by chunk to ``out`` (need not seek): a cSUM table goes last,
        before a trailing uIDX (1.4); returns the bytes written."""
        return stream_file(out, self.header, self.first.payload, self.first.head_len, before=self.before,
                           after=self.after, trailer=self.trailer, locator=self.locator, checksum=self.checksum)


def encode(image: Image, options: EncodeOptions | None = None, /, **changes: Unpack[EncodeKeywords]) -> bytes:
    """The bytes of an IMI file holding ``image`` losslessly (or within ``max_error``).

    ``image`` is one (H, W) or (H, W, C) array (or a ``Frame``: an array with its own layout
    and significant bits), or a list of them: an animation (each frame cropped to what changed
    and coded against the previous canvas where section 4's inter predictors 7-9 are smaller),
    or with ``kind="pages"`` pages (mixed pages when their layouts, sample types or significant
    bits differ), or with ``kind="sequence"`` sequence items (1.3 kind 4). The options are
    ``EncodeOptions``' fields, given as an object, as keywords, or both (keywords win); a bad
    option is a ``ValueError`` naming it, raised before any coding.
    """
    return _prepare(image, _options(options, changes)).to_bytes()


def _options(options: EncodeOptions | None, changes: Mapping[str, object]) -> EncodeOptions:
    """``options`` (or the defaults) with the keyword ``changes``, checked."""
    return (options if options is not None else DEFAULTS).replace(**changes)  # type: ignore[arg-type]


_Part = tuple[_Coded | None, int, int, np.ndarray]  # a frame's coded image (None: empty), origin, source


def _frames(first: _Coded, frames: list[Frame], opts: EncodeOptions,
            ) -> tuple[Header, bytes, list[tuple[bytes, bytes]], list[_Part]]:
    """aNIM and the fRAM chunks of an animation, pages or sequence items (1.3), the outer header,
    and each frame after the first as coded."""
    times = list(opts.durations) if isinstance(opts.durations, Sequence) else [opts.durations] * len(frames)
    if len(times) != len(frames):
        raise ValueError(f"durations: {len(times)} for {len(frames)} frames")
    arrays = [as_image_array(f.array) for f in frames]
    wire_kind = KINDS[opts.kind]
    fram: list[tuple[bytes, bytes]] = []
    parts: list[_Part] = []
    mask = set(first.header.mask)
    animated = wire_kind == KIND_ANIMATION or (wire_kind == KIND_SEQUENCE and opts.presentation == "animation")
    if animated:  # 1.3: frames (and animation items) share one ImageInfo
        described = {(a.shape, a.dtype, _resolved(f, a, opts)) for f, a in zip(frames, arrays)}
        if len(described) > 1:
            raise ValueError("animation frames must share one shape, dtype, layout and sig_bits (1.3): write images "
                             "that differ as pages (kind='pages'; pages=True in the Pillow and imageio plugins)")
    if wire_kind == KIND_ANIMATION:
        for previous, current, t in zip(arrays, arrays[1:], times[1:]):
            rect = _changed_rect(previous, current)
            if rect is None:
                fram.append((b"fRAM", b"\x00\x00" + _duration(t) + encode_varint(USES_PREVIOUS | EMPTY)))
                parts.append((None, 0, 0, current))
                continue
            x, y, w, h = rect
            coded, present = _code_frame(Frame(current[y : y + h, x : x + w], frames[0].layout),
                                         previous[y : y + h, x : x + w], (w, h) == (current.shape[1], current.shape[0]), opts)
            mask |= coded.header.mask
            parts.append((coded, x, y, current[y : y + h, x : x + w]))
            fram.append((b"fRAM", encode_varint(x) + encode_varint(y) + _duration(t) + encode_varint(present) + _nested_file(coded)))
    elif wire_kind == KIND_SEQUENCE:
        mask.add(FeatureId.SEQUENCE_ITEMS)
        refs = list(opts.references) if opts.references is not None else [None] * len(frames)
        if len(refs) != len(frames) or refs[0] is not None:
            raise ValueError("references: one per item, None for the first")
        for i, (item, t, ref) in enumerate(zip(frames[1:], times[1:], refs[1:]), start=1):
            coded = _described(item, opts)
            parts.append((coded, 0, 0, arrays[i]))
            mask |= coded.header.features
            records = b""
            if ref is not None:  # 1.3: record 33, an earlier item and its raster digest
                if not _is_index(ref) or not 0 <= ref < i or arrays[ref].shape != arrays[i].shape or arrays[ref].dtype != arrays[i].dtype:
                    raise ValueError(f"references: item {i} may reference only an earlier item of its shape and dtype")
                digest = _digest(frames[ref], ref, _layout(frames[ref], opts))
                body = encode_varint(ref) + digest.to_bytes(8, "little")
                records = encode_varint(FRAME_REFERENCE) + encode_varint(len(body)) + body
            present = HAS_RECORDS if records else 0
            head = b"\x00\x00" + _duration(t) + encode_varint(present)
            if records:
                head += encode_varint(len(records)) + records
            fram.append((b"fRAM", head + _nested_file(coded)))
    else:
        for page, array, t in zip(frames[1:], arrays[1:], times[1:]):
            coded = _described(page, opts)
            parts.append((coded, 0, 0, array))
            mask |= coded.header.features  # 0.1: the outer set covers each page's, implied features included
            if _image_info(coded.header) != _image_info(first.header):  # 1.3, 1.5: per-page layout, sample, bits
                wire_kind = KIND_MIXED_PAGES
            fram.append((b"fRAM", b"\x00\x00" + _duration(t) + b"\x00" + _nested_file(coded)))
    if wire_kind == KIND_MIXED_PAGES:
        mask.add(FeatureId.MIXED_PAGES)
    outer = Header(**{**first.header.__dict__, "mask": frozenset(mask - _implied(first.header))})
    anim = bytes([wire_kind]) + encode_varint(opts.loop) + encode_varint(len(frames)) + _duration(times[0])
    if wire_kind == KIND_SEQUENCE:
        anim += bytes([PRESENTATIONS.index(opts.presentation)])
    return outer, anim, fram, parts


def _is_index(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _resolved(frame: Frame, array: np.ndarray, opts: EncodeOptions) -> tuple[int, tuple[int, ...] | None]:
    """The layout code and significant bits ``frame`` is written with."""
    bits = _sig_bits(frame, opts)
    return layout_code(array.shape[2], _layout(frame, opts)), tuple(bits) if bits is not None else None


def _image_info(header: Header) -> tuple[int, int, tuple[int, ...]]:
    """What kind 2 pages share and mixed pages may vary (1.3): layout, sample type, significant bits."""
    return header.channels, header.sample, tuple(header.effective_sig_bits)


def _described(frame: Frame, opts: EncodeOptions) -> _Coded:
    """A page or sequence item coded with its own header's significant bits and alpha mode (1.3)."""
    coded = _code_image(frame, opts)
    alpha_mode = _page_alpha_mode(coded.header, opts.alpha_mode)
    return coded._replace(header=_with_fields(coded.header, None, 1, _sig_bits(frame, opts), alpha_mode))


def _page_alpha_mode(header: Header, alpha_mode: int) -> int:
    """The alpha mode a page's or sequence item's own header declares: the file's.

    1.3: mixed pages (kind 3) and sequence items (kind 4) each keep their own header, alpha_mode
    included ("Each nested file keeps its own header"; kind 4: "Animation items have identical
    ImageInfo (... alpha mode); pages may differ"), and readers take it from there, so every page
    declares it, not the first image alone. A page without an alpha slot declares straight (0):
    1.0 allows modes 2 and 3 only on a GrayAlpha/RGBA/OklabAlpha layout, and there is no alpha for
    mode 1 to describe. Uniform pages (kind 2) and animation frames take the outer header's (1.3).
    """
    return alpha_mode if header.layout.has_alpha else 0


def _code_frame(frame: Frame, previous: np.ndarray, whole: bool, opts: EncodeOptions) -> tuple[_Coded, int]:
    """An animation frame over its changed rectangle and its fRAM presence bits (1.3).

    A cropped frame uses the previous canvas (bit 0) and is coded against it: section 4's
    predictors 7-9 where the row search finds them smaller. A frame covering the canvas is coded
    both ways and stays intra (a seek point) unless inter is smaller. Lossless only: with
    ``max_error`` the canvas is not the previous source frame, and bounds forbid 7-9 (2.6).
    """
    inter_ok = opts.codec == "entropy" and not opts.max_error
    reference = previous if inter_ok else None
    if not whole:
        return _code_image(frame, opts, reference=reference), USES_PREVIOUS
    intra = _code_image(frame, opts)
    if reference is None:
        return intra, 0
    inter = _code_image(frame, opts, reference=reference)
    if len(_nested_file(inter)) < len(_nested_file(intra)):
        return inter, USES_PREVIOUS
    return intra, 0


def _digest(frame: Frame, ordinal: int, layout: str | int | None) -> int:
    """1.4.1: the digest of one image, frame canvas or page (lossless: the source is the output)."""
    image = as_image_array(frame.array)
    h, w, c = image.shape
    return bitmap_digest(w, h, layout_code(c, layout), sample_code(image.dtype), ordinal, image.tobytes())


def _rasters(first: _Coded, source: np.ndarray, parts: list[_Part], animation: bool) -> Iterator[tuple[Header, np.ndarray]]:
    """Every image, frame canvas or page as a reader outputs it, with the header of its layout and
    sample type: near-lossless images from the encoder's reconstruction, not decoded again (2.6);
    an animation frame's canvas is the previous one with the frame's rectangle replaced (1.3)."""
    canvas = _output(first, source)
    yield first.header, canvas
    if animation:
        canvas = canvas.copy()  # the source or the reconstruction stay as they are
    for coded, x, y, array in parts:
        image = None if coded is None else _output(coded, array)
        if not animation:
            assert coded is not None and image is not None  # pages and sequence items are never empty
            yield coded.header, image
            continue
        if image is not None:
            canvas[y : y + image.shape[0], x : x + image.shape[1]] = image
        yield first.header, canvas


def _output(coded: _Coded, source: np.ndarray) -> np.ndarray:
    """What a reader outputs of one coded image: its reconstruction, or its source when exact."""
    return coded.recon if coded.recon is not None else as_image_array(source)


def _raster_digest(header: Header, image: np.ndarray, ordinal: int) -> int:
    """1.4.1: the digest of one output raster."""
    return bitmap_digest(image.shape[1], image.shape[0], header.channels, header.sample, ordinal, image.tobytes())


def _implied(header: Header) -> frozenset[int]:
    """Features the header's own fields imply, which need no mask bit (0.1)."""
    return header.features - header.mask


def write(
    dst: str | os.PathLike[str] | BinaryIO,
    image: Image,
    options: EncodeOptions | None = None,
    /,
    *,
    streaming: bool = False,
    **changes: Unpack[EncodeKeywords],
) -> None:
    """Write an IMI file (``encode``'s options); a path is written through a temporary file and a rename.

    ``streaming`` writes the file chunk by chunk (container.writer.StreamWriter) to a stream that
    need not seek, never joining it in memory; with ``checksum`` the cSUM table then comes last
    (1.4). The images are coded first, since the header's feature set covers every frame (0.1).
    """
    parts = _prepare(image, _options(options, changes))
    write_atomic(dst, parts.stream if streaming else parts.to_bytes())
