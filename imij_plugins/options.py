"""The writer's options as one typed, checked object (``EncodeOptions``) and one image to write
with its own description (``Frame``).

``encode``/``write`` take ``EncodeOptions`` or the same names as keywords (``EncodeKeywords``),
and the Pillow and imageio adapters build an ``EncodeOptions``, so renaming an option breaks
every caller at type-check time. Every option is checked when the object is made: a bad value
is a ``ValueError`` naming the option, before any pixel is coded.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from imij_plugins.container import metadata as md
from imij_plugins.payload.effort import DEFAULT_EFFORT
from imij_plugins.pixels.dtypes import find_layout
from imij_plugins.registry.chunks import (
    ANIM,
    CSUM,
    DATA,
    EXIF,
    FRAM,
    ICCP,
    ONCE,
    PSUM,
    UIDX,
    XMP,
    is_critical,
    is_valid_tag,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_EFFORT", "Chunks", "EncodeKeywords", "EncodeOptions", "Frame"]

Chunks = Sequence[tuple[bytes, bytes, str]]  # (tag, payload, "before" | "after" DATA)
Codec = Literal["entropy", "quick"]
UnitTable = Literal["hint", "none", "filled", "empty", "tail"]
Kind = Literal["animation", "pages", "mixed pages", "sequence"]
Seconds = float | Fraction

CODECS = ("entropy", "quick")
UNIT_TABLES = ("hint", "none", "filled", "empty", "tail")  # where the unit spans go (2.7)
KINDS = ("animation", "pages", "sequence")
# The reader's names the writer takes as well, so that a file's own values write back:
# ``ImijFile.loop_count`` as ``loop``, and ``ImijFile.kind`` "mixed pages" as "pages" (the writer
# writes mixed pages, 1.3 kind 3, when the pages differ)
ALIASES = {"loop_count": "loop"}
KIND_ALIASES = {"mixed pages": "pages"}
PRESENTATIONS = ("pages", "animation")  # 1.3 kind 4 presentation byte 0, 1
PLACES = ("before", "after")
# Chunks the writer makes itself (structure, checksums) or from its own options (ICC, Exif, XMP).
WRITER_TAGS = frozenset({DATA, ANIM, FRAM, CSUM, UIDX, PSUM, ICCP, EXIF, XMP})
# The once-only chunk each typed metadata option writes (1.1, 1.5).
_TYPED_TAGS = {"mastering_display": b"mDCv", "content_light_level": b"cLLI", "diffuse_white": b"dWHI"}
_SCIENCE_TAGS = {"calibration": b"cALB", "axes": b"aXES", "coordinates": b"cORD", "categories": b"cATG"}


@dataclass(frozen=True)
class Frame:
    """One frame, page or sequence item with its own header description.

    ``layout`` and ``sig_bits`` (per channel, 1.0) override the options' for this image: pages
    and sequence items each have their own header (1.3); an animation's frames share the outer
    header's, so they must agree.
    """

    array: np.ndarray
    layout: str | int | None = None
    sig_bits: Sequence[int] | None = None

    def __post_init__(self) -> None:
        _check_layout("Frame.layout", self.layout)
        _check_sig_bits("Frame.sig_bits", self.sig_bits)


@dataclass(frozen=True, kw_only=True)
class EncodeOptions:
    """How ``encode`` and ``write`` code an image, animation, pages or sequence.

    Coding: ``codec`` "entropy" (2.1-2.6, 2.10, 2.14, 3: small files) or "quick" (2.13: larger
    files that decode faster); ``effort`` 1 (fast) .. 9 (smallest): efforts above 5 make files
    that decode at most about 10% slower than effort 5's (never larger), unless ``slow_decode``
    lets them pick narrow column groups, short stripes and bilevel or template stripes wherever
    those are smaller, however slow they decode; ``max_error`` B > 0
    near-lossless (2.6: every integer sample within B of the source; entropy codec only);
    ``threads``; ``stripe_rows`` and ``group_cols`` fix the unit grid (2.3; an image no wider
    than ``group_cols`` is one column group); ``unit_table`` and ``ordinals`` choose how DATA
    indexes its units (2.7). ``checksum`` adds cSUM (1.4), ``pixel_checksum`` pSUM (1.4.1).

    Header fields (1.0): ``layout`` (default from the channel count), ``cicp``,
    ``orientation``, ``sig_bits``, ``alpha_mode`` (2 opaque and 3 undefined padding declare
    alpha_interpretation). Metadata (1.1-1.5): ``icc_profile``, ``exif``, ``xmp``, ``dpi``
    (written as Exif resolution tags), ``mastering_display``, ``content_light_level``,
    ``diffuse_white``, ``color_origin``, ``item_metadata``, ``science`` (keyword arguments of
    ``container.metadata.science_chunks``), ``chunks`` (extra ancillary chunks as
    ``(tag, payload, "before" | "after")``) and ``previews`` (downscale factors, each a pRVW
    preview layer, e.g. ``(4, 16)``).

    Several images: ``kind`` "animation" (``durations`` in seconds, ``loop`` 0 = forever),
    "pages", or "sequence" (1.3 kind 4, ``presentation`` and ``references``). The reader's names
    are taken too: kind "mixed pages" (as "pages"), and ``loop_count`` for ``loop`` as a keyword
    of ``encode``, ``write`` and ``replace``.
    """

    codec: Codec = "entropy"
    effort: int = DEFAULT_EFFORT
    slow_decode: bool = False
    max_error: float = 0
    threads: int | None = None
    stripe_rows: int | None = None
    group_cols: int | None = None
    unit_table: UnitTable = "hint"
    ordinals: bool = False
    checksum: bool = False
    pixel_checksum: bool = False
    layout: str | int | None = None
    cicp: tuple[int, int, int, int] | None = None
    orientation: int = 1
    sig_bits: Sequence[int] | None = None
    alpha_mode: int = 0
    icc_profile: bytes | None = None
    exif: bytes | None = None
    xmp: bytes | None = None
    dpi: tuple[float, float] | None = None
    mastering_display: md.MasteringDisplay | None = None
    content_light_level: md.ContentLightLevel | None = None
    diffuse_white: md.DiffuseWhite | float | None = None
    color_origin: md.ColorOrigin | None = None
    item_metadata: md.ItemMetadata | None = None
    science: Mapping[str, object] | None = None
    chunks: Chunks = ()
    previews: Sequence[int] = ()
    kind: Kind = "animation"
    durations: Seconds | Sequence[Seconds] = 0
    loop: int = 0
    presentation: Literal["pages", "animation"] = "animation"
    references: Sequence[int | None] | None = None

    def __post_init__(self) -> None:
        _one_of("codec", self.codec, CODECS)
        _int_in("effort", self.effort, 1, 9)
        if not _is_real(self.max_error) or not self.max_error >= 0:
            raise ValueError(f"max_error must be a number >= 0, not {self.max_error!r}")
        if self.max_error and self.codec == "quick":
            raise ValueError("max_error needs codec='entropy': quick-pixel units are exact (2.13)")
        for name in ("threads", "stripe_rows"):
            if getattr(self, name) is not None:
                _int_in(name, getattr(self, name), 1)
        if self.group_cols is not None:
            _int_in("group_cols", self.group_cols, 0)
        _one_of("unit_table", self.unit_table, UNIT_TABLES)
        for name in ("slow_decode", "ordinals", "checksum", "pixel_checksum"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}")
        _check_layout("layout", self.layout)
        if self.cicp is not None and (len(self.cicp) != 4 or not all(_is_int(v) and 0 <= v <= 255 for v in self.cicp)):
            raise ValueError(f"cicp must be 4 integers 0..=255 (primaries, transfer, matrix, full_range), not {self.cicp!r}")
        _int_in("orientation", self.orientation, 1, 8)
        _check_sig_bits("sig_bits", self.sig_bits)
        _int_in("alpha_mode", self.alpha_mode, 0, 3)
        for name in ("icc_profile", "exif", "xmp"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), (bytes, bytearray, memoryview)):
                raise ValueError(f"{name} must be bytes, not {type(getattr(self, name)).__name__}")
        if self.dpi is not None and (len(self.dpi) != 2 or not all(_positive(v) for v in self.dpi)):
            raise ValueError(f"dpi must be two positive numbers (x, y), not {self.dpi!r}")
        typed = {tag for name, tag in _TYPED_TAGS.items() if getattr(self, name) is not None}
        typed |= {tag for name, tag in _SCIENCE_TAGS.items() if (self.science or {}).get(name) is not None}
        _check_chunks(self.chunks, typed)
        if not all(_is_int(f) and 2 <= f <= 1 << 16 for f in self.previews):
            raise ValueError(f"previews must be downscale factors >= 2 (e.g. (4, 16)), not {self.previews!r}")
        if self.kind in KIND_ALIASES:
            object.__setattr__(self, "kind", KIND_ALIASES[self.kind])
        _one_of("kind", self.kind, KINDS)
        _one_of("presentation", self.presentation, PRESENTATIONS)
        _int_in("loop", self.loop, 0)
        times = self.durations if isinstance(self.durations, Sequence) else [self.durations]
        if not all(_is_real(t) and t >= 0 for t in times):
            raise ValueError(f"durations must be seconds >= 0, one number or one per image, not {self.durations!r}")

    def replace(self, **changes: Unpack[EncodeKeywords]) -> EncodeOptions:
        """A copy with ``changes`` (a reader's name of ``ALIASES`` as the writer's), checked again;
        the defaults with changes of plain values (``encode(image, threads=1)``) are checked once
        and kept (``_checked_defaults``)."""
        for alias, name in ALIASES.items():
            if alias in changes:
                if name in changes:
                    raise TypeError(f"encode option {name} given twice, also as {alias}")
                changes[name] = changes.pop(alias)  # type: ignore[literal-required]
        unknown = set(changes) - OPTION_NAMES
        if unknown:
            raise TypeError(f"unknown encode option(s): {', '.join(sorted(unknown))}")
        if not changes:
            return self
        if self is DEFAULTS:
            return _checked_defaults(changes)
        return replace(self, **changes)


class EncodeKeywords(TypedDict, total=False):
    """``EncodeOptions``' fields as keywords of ``encode`` and ``write`` (a test keeps the two equal)."""

    codec: Codec
    effort: int
    slow_decode: bool
    max_error: float
    threads: int | None
    stripe_rows: int | None
    group_cols: int | None
    unit_table: UnitTable
    ordinals: bool
    checksum: bool
    pixel_checksum: bool
    layout: str | int | None
    cicp: tuple[int, int, int, int] | None
    orientation: int
    sig_bits: Sequence[int] | None
    alpha_mode: int
    icc_profile: bytes | None
    exif: bytes | None
    xmp: bytes | None
    dpi: tuple[float, float] | None
    mastering_display: md.MasteringDisplay | None
    content_light_level: md.ContentLightLevel | None
    diffuse_white: md.DiffuseWhite | float | None
    color_origin: md.ColorOrigin | None
    item_metadata: md.ItemMetadata | None
    science: Mapping[str, object] | None
    chunks: Chunks
    previews: Sequence[int]
    kind: Kind
    durations: Seconds | Sequence[Seconds]
    loop: int
    presentation: Literal["pages", "animation"]
    references: Sequence[int | None] | None


OPTION_NAMES = frozenset(f.name for f in fields(EncodeOptions))


def _is_int(value: object) -> bool:
    """An integer, Python's or numpy's, that is not a bool (a plain int answers first)."""
    return type(value) is int or (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)))


def _is_real(value: object) -> bool:
    """A real number, Python's or numpy's, that is not a bool (a plain int or float answers first)."""
    return type(value) in (int, float) or (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)))


def _positive(value: object) -> bool:
    return _is_real(value) and 0 < float(value) < float("inf")  # type: ignore[arg-type]


def _int_in(name: str, value: object, lo: int, hi: int | None = None) -> None:
    """``value`` is an integer in ``lo ..= hi`` (no upper bound when ``hi`` is None)."""
    if not _is_int(value) or value < lo or (hi is not None and value > hi):  # type: ignore[operator]
        bound = f"{lo} ..= {hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be an integer {bound}, not {value!r}")


def _one_of(name: str, value: object, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")


def _check_layout(name: str, layout: object) -> None:
    """A layout name (any case) or code of 1.0's table, or None (from the channel count)."""
    if layout is not None:
        try:
            find_layout(layout)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None


def _check_sig_bits(name: str, sig_bits: object) -> None:
    """Significant bits per channel, each 1 ..= 64 (1.0; checked against the sample type when coded)."""
    if sig_bits is None:
        return
    if isinstance(sig_bits, (str, bytes)) or not isinstance(sig_bits, Sequence) or not 1 <= len(sig_bits) <= 4:
        raise ValueError(f"{name} must list 1-4 bit counts, one per channel, not {sig_bits!r}")
    for bits in sig_bits:
        _int_in(name, bits, 1, 64)


def _check_chunks(chunks: object, typed: set[bytes]) -> None:
    """Extra chunks: ancillary tags this writer does not make itself, placed before or after DATA,
    a once-only tag at most once counting the typed options' chunks (``typed``; 1.1)."""
    seen = set(typed)
    for item in chunks:  # type: ignore[attr-defined]
        if not isinstance(item, tuple) or len(item) != 3:
            raise ValueError(f"chunks: each chunk is (tag, payload, 'before' | 'after'), not {item!r}")
        tag, payload, place = item
        if not isinstance(tag, bytes) or not is_valid_tag(tag) or is_critical(tag):
            raise ValueError(f"chunks: {tag!r} is not an ancillary chunk tag (4 ASCII letters, the first lower case)")
        if tag in WRITER_TAGS:
            raise ValueError(f"chunks: {tag.decode()} is written by the writer itself or from its own option")
        if tag in ONCE and tag in seen:
            raise ValueError(f"chunks: {tag.decode()} occurs at most once (1.1), counting the typed options")
        seen.add(tag)
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise ValueError(f"chunks: the payload of {tag.decode()} must be bytes")
        _one_of("chunks: place", place, PLACES)


DEFAULTS = EncodeOptions()  # the writer's defaults, checked once
_PLAIN = (int, str, bool, type(None))  # immutable values whose type and equality say all (not floats: -0.0 == 0.0)
_CHECKED: dict[tuple[tuple[str, type, object], ...], EncodeOptions] = {}
_CHECKED_MAX = 64


def _checked_defaults(changes: Mapping[str, object]) -> EncodeOptions:
    """The defaults with ``changes``, checked; kept when every value is of an exact plain type, so
    the same keywords are checked once (the kept object is immutable: frozen, plain values). A
    value of another type (np.int64, a list) is checked every time."""
    if any(type(v) not in _PLAIN for v in changes.values()):
        return replace(DEFAULTS, **changes)
    key = tuple(sorted((name, type(v), v) for name, v in changes.items()))  # type: True is not 1
    found = _CHECKED.get(key)
    if found is None:
        found = replace(DEFAULTS, **changes)  # a bad value raises here, and nothing is kept
        if len(_CHECKED) >= _CHECKED_MAX:  # full: start again, so the keywords in use are kept
            _CHECKED.clear()
        _CHECKED[key] = found
    return found
