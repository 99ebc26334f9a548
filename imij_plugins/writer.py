"""Writing IMI files: a still image, an animation or pages, with metadata chunks (1, 1.3, 2.13)."""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import BinaryIO, Literal, Mapping, Sequence

import numpy as np

from imij_plugins.container.animation import KIND_ANIMATION, KIND_MIXED_PAGES, KIND_PAGES, KIND_SEQUENCE
from imij_plugins.container.frames import EMPTY, FRAME_REFERENCE, HAS_RECORDS, USES_PREVIOUS
from imij_plugins.container import metadata as md
from imij_plugins.container.header import Header, check_fields
from imij_plugins.errors import Corrupt
from imij_plugins.container.pixel_checksum import bitmap_digest, encode_bitmap_digests
from imij_plugins.container.writer import assemble, stream_file, trailing_index_payload, write_atomic
from imij_plugins.payload.encode import choose_geometry, encode_quick_payload
from imij_plugins.pixels.dtypes import as_image_array, layout_code, sample_code
from imij_plugins.registry.features import FeatureId
from imij_plugins.registry.samples import PIXEL_MODEL_LAYOUTS, SIGNED_SAMPLE_CODES, WIDE_SAMPLE_CODES
from imij_plugins.wire.varint import encode_varint

Chunks = Sequence[tuple[bytes, bytes, str]]  # (tag, payload, "before" | "after" DATA)
KINDS = {"animation": KIND_ANIMATION, "pages": KIND_PAGES, "sequence": KIND_SEQUENCE}
PRESENTATIONS = {"pages": 0, "animation": 1}  # 1.3 kind 4 presentation byte


@dataclass(frozen=True)
class _Coded:
    """One image coded as header + DATA payload, not yet framed into a file."""

    header: Header
    payload: bytes
    head_len: int
    units: int
    trailing_index: bytes | None = None


def _code_image(
    array: np.ndarray,
    *,
    layout,
    effort,
    stripe_rows,
    group_cols,
    threads,
    codec="entropy",
    max_error=0,
    unit_table="hint",
    ordinals=False,
    reference: np.ndarray | None = None,
) -> _Coded:
    image = as_image_array(array)
    height, width, channels = image.shape
    sample = sample_code(image.dtype)
    channels_code = layout_code(channels, layout)
    if codec == "entropy":
        return _code_entropy(image, channels_code, effort, max_error, stripe_rows, group_cols, threads, unit_table, ordinals,
                             reference)
    if codec != "quick":
        raise ValueError(f"codec must be 'quick' or 'entropy', not {codec!r}")
    if max_error:
        raise ValueError("max_error needs codec='entropy': quick-pixel units are exact (2.13)")
    geometry = choose_geometry(width, height, stripe_rows, group_cols)
    encoded = encode_quick_payload(
        image, geometry, bit_smart=effort >= 4, threads=threads, unit_table=unit_table, ordinals=ordinals
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
                  threads, unit_table: str, ordinals: bool, reference: np.ndarray | None = None) -> _Coded:
    """An entropy-coded payload (2.1-2.7, 3) from the tuned encoder (section 5); ``reference``:
    an inter frame's previous canvas under it (section 4's predictors 7-9)."""
    from imij_plugins.payload.entropy.encoder import encode_tuned  # only when asked for

    height, width = image.shape[:2]
    encoded = encode_tuned(image, effort=effort, max_error=max_error, threads=threads, layout=channels_code,
                           stripe_rows=stripe_rows, group_cols=group_cols, unit_table=unit_table, ordinals=ordinals,
                           reference=reference)
    header = Header(width=width, height=height, sample=sample_code(image.dtype), channels=channels_code,
                    mask=encoded.features_used)
    trailing = None
    if unit_table == "tail":  # the writer's check-tail head; the spans for uIDX come from a walk
        trailing = _spans_for_tail(header, encoded.payload)
    return _Coded(header, encoded.payload, encoded.head_len, encoded.units, trailing)


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
    out = replace(
        header,
        cicp=tuple(cicp) if cicp is not None else None,
        orientation=orientation,
        sig_bits=tuple(sig_bits) if sig_bits is not None else None,
        alpha_mode=alpha_mode,
        mask=frozenset(mask),
    )
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


def _prepare(
    image: np.ndarray | Sequence[np.ndarray],
    *,
    layout: str | int | None = None,
    effort: int = 5,
    checksum: bool = False,
    icc_profile: bytes | None = None,
    exif: bytes | None = None,
    xmp: bytes | None = None,
    chunks: Chunks = (),
    durations: float | Fraction | Sequence[float | Fraction] = 0,
    loop: int = 0,
    kind: str = "animation",
    presentation: str = "animation",
    references: Sequence[int | None] | None = None,
    stripe_rows: int | None = None,
    group_cols: int | None = None,
    threads: int | None = None,
    pixel_checksum: bool = False,
    unit_table: str = "hint",
    ordinals: bool = False,
    codec: Literal["entropy", "quick"] = "entropy",
    max_error: float = 0,
    cicp: tuple[int, int, int, int] | None = None,
    orientation: int = 1,
    sig_bits: Sequence[int] | None = None,
    alpha_mode: int = 0,
    mastering_display: md.MasteringDisplay | None = None,
    content_light_level: md.ContentLightLevel | None = None,
    diffuse_white: md.DiffuseWhite | float | None = None,
    color_origin: md.ColorOrigin | None = None,
    item_metadata: md.ItemMetadata | None = None,
    science: Mapping[str, object] | None = None,
) -> "_Layout":
    """The parts of the file ``encode`` describes (its options), before they are joined or streamed."""
    opts = dict(layout=layout, effort=effort, stripe_rows=stripe_rows, group_cols=group_cols, threads=threads)
    frames = [image] if isinstance(image, np.ndarray) else list(image)
    if not frames:
        raise ValueError("nothing to write: an empty list of frames")
    opts["codec"] = codec
    opts["max_error"] = max_error
    first = _code_image(frames[0], **opts, unit_table=unit_table, ordinals=ordinals)
    first = replace(first, header=_with_fields(first.header, cicp, orientation, sig_bits, alpha_mode))
    if isinstance(diffuse_white, (int, float)):
        diffuse_white = md.DiffuseWhite.from_nits(diffuse_white)
    typed = (
        (b"iCCP", icc_profile),
        (b"eXIf", exif),
        (b"xMPp", xmp),
        (b"mDCv", mastering_display and mastering_display.to_bytes()),
        (b"cLLI", content_light_level and content_light_level.to_bytes()),
        (b"dWHI", diffuse_white and diffuse_white.to_bytes()),
        (b"cORg", color_origin and color_origin.to_bytes()),
        (b"kVMD", item_metadata and item_metadata.to_bytes()),
    )
    before = [(tag, value) for tag, value in typed if value is not None]
    if science:  # 1.5: writers place the records before DATA
        before += md.science_chunks(first.header.channel_count, **science)  # type: ignore[arg-type]
    before += [(tag, payload) for tag, payload, place in chunks if place == "before"]
    after = [(tag, payload) for tag, payload, place in chunks if place != "before"]
    header = first.header
    if len(frames) > 1 or not isinstance(image, np.ndarray):
        header, anim, frame_chunks = _frames(first, frames, durations, loop, kind, opts, presentation, references)
        before.insert(0, (b"aNIM", anim))
        after = frame_chunks + after
    trailer = []
    if first.trailing_index is not None:  # 2.7: the trailing unit index is the file's last chunk
        trailer.append((b"uIDX", trailing_index_payload(first.trailing_index)))
    locator = unit_table in ("hint", "filled", "tail") and first.units >= 2  # 1.0: with a hint or reservation
    out = _Layout(header, first, before, after, trailer, locator, checksum)
    if not pixel_checksum:
        return out
    if max_error:  # 1.4.1: the digest is of the decoded raster, which near-lossless changes
        digests = [_decoded_digest(d, i) for i, d in enumerate(_decoded(out.to_bytes()))]
    else:  # lossless: the source is the output
        digests = [_digest(f, i, layout) for i, f in enumerate(frames)]
    return replace(out, before=before + [(b"pSUM", encode_bitmap_digests(digests))])


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


def encode(image: np.ndarray | Sequence[np.ndarray], **options: object) -> bytes:
    """The bytes of an IMI file holding ``image`` losslessly.

    ``image`` is one (H, W) or (H, W, C) array, or a list of them: an animation (each frame
    cropped to what changed and coded against the previous canvas where section 4's inter
    predictors 7-9 are smaller; durations in seconds, ``loop`` 0 = forever) or, with
    ``kind="pages"``, pages (mixed pages when their shapes or sample types differ), or with
    ``kind="sequence"`` sequence items (1.3 kind 4, ``presentation`` "animation" or "pages",
    ``references[i]`` an earlier item that item i is coded against, checked by its digest).
    ``codec="entropy"`` (the default) codes entropy-coded units (2.1-2.6, 2.10, 2.14, 3) with
    section 5's encoder: ``effort`` 1 (fast) .. 9 (smallest), default 5; ``max_error`` B > 0
    allows each integer sample to differ by up to B (near-lossless, 2.6). ``codec="quick"``
    codes quick-pixel units (2.13): larger files that decode several times faster; there
    effort 1-3 codes packets only, 4 and up also tries bit-smart planes per unit.
    ``checksum`` adds a cSUM file checksum (1.4), ``pixel_checksum`` a pSUM digest of every
    decoded image, frame canvas or page (1.4.1). ``unit_table`` ("hint", "none", "filled",
    "empty", "tail") and ``ordinals`` choose how DATA's unit records are indexed (2.7).
    Header fields: ``cicp``, ``orientation``, ``sig_bits`` (per channel), ``alpha_mode`` (2
    opaque, 3 undefined padding declare alpha_interpretation). Metadata chunks (1.1-1.5):
    ``mastering_display``, ``content_light_level``, ``diffuse_white`` (cd/m² or DiffuseWhite),
    ``color_origin``, ``item_metadata`` (kVMD) and ``science`` (keyword arguments of
    ``container.metadata.science_chunks``: calibration, axes, coordinates, categories, structured).
    """
    return _prepare(image, **options).to_bytes()  # type: ignore[arg-type]


encode.__signature__ = inspect.signature(_prepare).replace(return_annotation=bytes)  # type: ignore[attr-defined]  # its options


def _frames(first: _Coded, frames: list, durations, loop: int, kind: str, opts: dict, presentation="animation", references=None):
    """aNIM and the fRAM chunks of an animation, pages or sequence items (1.3), and the outer header."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, not {kind!r}")
    times = list(durations) if isinstance(durations, Sequence) else [durations] * len(frames)
    if len(times) != len(frames):
        raise ValueError(f"{len(times)} durations for {len(frames)} frames")
    arrays = [as_image_array(f) for f in frames]
    wire_kind = KINDS[kind]
    fram: list[tuple[bytes, bytes]] = []
    mask = set(first.header.mask)
    if wire_kind == KIND_ANIMATION:
        if any(a.shape != arrays[0].shape or a.dtype != arrays[0].dtype for a in arrays):
            raise ValueError("animation frames must share one shape and dtype (write pages for mixed sizes)")
        for previous, current, t in zip(arrays, arrays[1:], times[1:]):
            rect = _changed_rect(previous, current)
            if rect is None:
                fram.append((b"fRAM", b"\x00\x00" + _duration(t) + encode_varint(USES_PREVIOUS | EMPTY)))
                continue
            x, y, w, h = rect
            coded, present = _code_frame(current[y : y + h, x : x + w], previous[y : y + h, x : x + w],
                                         (w, h) == (current.shape[1], current.shape[0]), opts)
            mask |= coded.header.mask
            fram.append((b"fRAM", encode_varint(x) + encode_varint(y) + _duration(t) + encode_varint(present) + _nested_file(coded)))
    elif wire_kind == KIND_SEQUENCE:
        if presentation not in PRESENTATIONS:
            raise ValueError(f"presentation must be one of {sorted(PRESENTATIONS)}")
        mask.add(FeatureId.SEQUENCE_ITEMS)
        if presentation == "animation" and any(a.shape != arrays[0].shape or a.dtype != arrays[0].dtype for a in arrays):
            raise ValueError("animation sequence items share one shape and dtype (presentation='pages' for others)")
        refs = list(references) if references is not None else [None] * len(frames)
        if len(refs) != len(frames) or refs[0] is not None:
            raise ValueError("references: one per item, None for the first")
        for i, (item, t, ref) in enumerate(zip(arrays[1:], times[1:], refs[1:]), start=1):
            coded = _code_image(item, **opts)
            mask |= coded.header.features
            records = b""
            if ref is not None:  # 1.3: record 33, an earlier item and its raster digest
                if not 0 <= ref < i or arrays[ref].shape != item.shape or arrays[ref].dtype != item.dtype:
                    raise ValueError(f"item {i} may reference only an earlier item of its shape and dtype")
                digest = _digest(arrays[ref], ref, opts["layout"])
                body = encode_varint(ref) + digest.to_bytes(8, "little")
                records = encode_varint(FRAME_REFERENCE) + encode_varint(len(body)) + body
            present = HAS_RECORDS if records else 0
            head = b"\x00\x00" + _duration(t) + encode_varint(present)
            if records:
                head += encode_varint(len(records)) + records
            fram.append((b"fRAM", head + _nested_file(coded)))
    else:
        for page, t in zip(frames[1:], times[1:]):
            coded = _code_image(page, **opts)
            mask |= coded.header.features  # 0.1: the outer set covers each page's, implied features included
            if (coded.header.channels, coded.header.sample) != (first.header.channels, first.header.sample):
                wire_kind = KIND_MIXED_PAGES
            fram.append((b"fRAM", b"\x00\x00" + _duration(t) + b"\x00" + _nested_file(coded)))
    if wire_kind == KIND_MIXED_PAGES:
        mask.add(FeatureId.MIXED_PAGES)
    outer = Header(**{**first.header.__dict__, "mask": frozenset(mask - _implied(first.header))})
    anim = bytes([wire_kind]) + encode_varint(loop) + encode_varint(len(frames)) + _duration(times[0])
    if wire_kind == KIND_SEQUENCE:
        anim += bytes([PRESENTATIONS[presentation]])
    return outer, anim, fram


def _code_frame(image: np.ndarray, previous: np.ndarray, whole: bool, opts: dict) -> tuple[_Coded, int]:
    """An animation frame over its changed rectangle and its fRAM presence bits (1.3).

    A cropped frame uses the previous canvas (bit 0) and is coded against it: section 4's
    predictors 7-9 where the row search finds them smaller. A frame covering the canvas is coded
    both ways and stays intra (a seek point) unless inter is smaller. Lossless only: with
    ``max_error`` the canvas is not the previous source frame, and bounds forbid 7-9 (2.6).
    """
    inter_ok = opts["codec"] == "entropy" and not opts["max_error"]
    reference = previous if inter_ok else None
    if not whole:
        return _code_image(image, **opts, reference=reference), USES_PREVIOUS
    intra = _code_image(image, **opts)
    if reference is None:
        return intra, 0
    inter = _code_image(image, **opts, reference=reference)
    if len(_nested_file(inter)) < len(_nested_file(intra)):
        return inter, USES_PREVIOUS
    return intra, 0


def _digest(frame: np.ndarray, ordinal: int, layout: str | int | None) -> int:
    """1.4.1: the digest of one image, frame canvas or page (lossless: the source is the output)."""
    image = as_image_array(frame)
    h, w, c = image.shape
    return bitmap_digest(w, h, layout_code(c, layout), sample_code(image.dtype), ordinal, image.tobytes())


def _decoded(data: bytes) -> list[tuple[Header, np.ndarray]]:
    """Every image, frame canvas or page of ``data`` as a reader outputs it, with its header."""
    from imij_plugins.reader import ImijFile  # the reader sits above the writer's layers

    with ImijFile(data) as f:
        return [(f.header if f.kind == "animation" else f.page(i).header, f.read(i)) for i in range(f.n_frames)]


def _decoded_digest(decoded: tuple[Header, np.ndarray], ordinal: int) -> int:
    """1.4.1: the digest of one decoded raster."""
    header, image = decoded
    return bitmap_digest(image.shape[1], image.shape[0], header.channels, header.sample, ordinal, image.tobytes())


def _implied(header: Header) -> frozenset[int]:
    """Features the header's own fields imply, which need no mask bit (0.1)."""
    return header.features - header.mask


def write(dst: str | os.PathLike | BinaryIO, image: np.ndarray | Sequence[np.ndarray], *, streaming: bool = False,
          **options: object) -> None:
    """Write an IMI file (``encode``'s options); a path is written through a temporary file and a rename.

    ``streaming`` writes the file chunk by chunk (container.writer.StreamWriter) to a stream that
    need not seek, never joining it in memory; with ``checksum`` the cSUM table then comes last
    (1.4). The images are coded first, since the header's feature set covers every frame (0.1).
    """
    parts = _prepare(image, **options)  # type: ignore[arg-type]
    write_atomic(dst, parts.stream if streaming else parts.to_bytes())
