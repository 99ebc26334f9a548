"""The chunk tag registry (spec 1.1) as data: known tags, how often each may occur, letter-case rules.

A chunk is ``tag (4 ASCII letters), length varint, payload``. As in PNG, the case of
each tag letter carries its handling (1.1): critical or ancillary, public or private,
the reserved third letter, and whether an editor that changed the pixels may copy it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkTag:
    """One row of the 1.1 chunk tag table; ``payload`` is the spec's words.

    ``once`` is True when the chunk may occur at most once in a file (see ONCE).
    """

    tag: str
    payload: str
    once: bool

    @property
    def code(self) -> bytes:
        """The tag as the 4 bytes on the wire."""
        return self.tag.encode("ascii")


# 1.1: tag constants. Names are the tag upper-cased (xMPp is XMP, as the XMP packet).
DATA = b"DATA"
ICCP = b"iCCP"
CORG = b"cORg"
EXIF = b"eXIf"
XMP = b"xMPp"
MDCV = b"mDCv"
DWHI = b"dWHI"
CLLI = b"cLLI"
PRVW = b"pRVW"
GMAP = b"gMAP"
ANIM = b"aNIM"
FRAM = b"fRAM"
CSUM = b"cSUM"
PSUM = b"pSUM"
CALB = b"cALB"
AXES = b"aXES"
CORD = b"cORD"
SMDT = b"sMDT"
CATG = b"cATG"
UIDX = b"uIDX"
# Ancillary chunks defined outside the 1.1 table.
KVMD = b"kVMD"  # 1.3: typed item metadata ("this ancillary record")
MCMP = b"mCMP"  # 1.1, 1.5: compressed metadata (docs/METADATA_COMPRESSION.md)
PDAT = b"pDAT"  # Planes and ROI extension: primary decoders skip "these ancillary chunks"
PIDX = b"pIDX"  # Planes and ROI: the plane directory, a record list (section 1)
SLOC = b"sLOC"  # Planes and ROI: the 37-byte end-anchored locator footer

# 1.1: "iCCP, eXIf, xMPp, mDCv, cLLI, dWHI, gMAP, aNIM, cSUM, uIDX and DATA occur at most once."
_ONCE_TAGS_1_1: frozenset[str] = frozenset(
    {"iCCP", "eXIf", "xMPp", "mDCv", "cLLI", "dWHI", "gMAP", "aNIM", "cSUM", "uIDX", "DATA"}
)
# 1.4.1: pSUM "occurs at most once"; 1.5: "cALB, aXES, cORD and cATG occur at most once".
_ONCE_TAGS: frozenset[str] = _ONCE_TAGS_1_1 | {"pSUM", "cALB", "aXES", "cORD", "cATG"}

# 1.1: the chunk tag table, in table order (columns: tag, payload).
CHUNK_TAGS: tuple[ChunkTag, ...] = (
    ChunkTag('DATA', 'image data (section 2); exactly once. Chunks may precede and follow it', 'DATA' in _ONCE_TAGS),
    ChunkTag('iCCP', 'ICC profile (overrides CICP primaries/transfer when present)', 'iCCP' in _ONCE_TAGS),
    ChunkTag('cORg', 'historical color origin, never an active rendering profile (1.1.1)', 'cORg' in _ONCE_TAGS),
    ChunkTag('eXIf', 'Exif (TIFF header onward)', 'eXIf' in _ONCE_TAGS),
    ChunkTag('xMPp', 'XMP packet', 'xMPp' in _ONCE_TAGS),
    ChunkTag('mDCv', '24 bytes: SMPTE ST 2086 mastering display, as PNG mDCV', 'mDCv' in _ONCE_TAGS),
    ChunkTag('dWHI', '4 bytes: finite, strictly positive IEEE 754 binary32, big-endian; diffuse white luminance in cd/m²', 'dWHI' in _ONCE_TAGS),
    ChunkTag('cLLI', '8 bytes: MaxCLL, MaxFALL (two u32 big-endian values in 0.0001 cd/m² units, as PNG third-edition cLLI; zero means unknown)', 'cLLI' in _ONCE_TAGS),
    ChunkTag('pRVW', 'preview layer: a complete nested IMI file (e.g. a 50% downscale), repeatable; placed before DATA so it can be read from a file prefix', 'pRVW' in _ONCE_TAGS),
    ChunkTag('gMAP', 'ISO 21496-1 gain map (1.2)', 'gMAP' in _ONCE_TAGS),
    ChunkTag('aNIM', 'animation / pages control (1.3), before DATA', 'aNIM' in _ONCE_TAGS),
    ChunkTag('fRAM', 'a further frame or page (1.3), after DATA, repeatable', 'fRAM' in _ONCE_TAGS),
    ChunkTag('cSUM', 'optional file checksum in pieces (1.4); anywhere after the header', 'cSUM' in _ONCE_TAGS),
    ChunkTag('pSUM', 'optional decoded bitmap digest table (1.4.1); before DATA, at most once', 'pSUM' in _ONCE_TAGS),
    ChunkTag('cALB', 'calibration, units and missing data of each channel (1.5)', 'cALB' in _ONCE_TAGS),
    ChunkTag('aXES', 'axes, per-level transforms, affine and pixel convention (1.5)', 'aXES' in _ONCE_TAGS),
    ChunkTag('cORD', "integer coordinates on the image's non-raster axes (1.5)", 'cORD' in _ONCE_TAGS),
    ChunkTag('sMDT', 'structured metadata: schema id + text, JSON or CBOR (1.5), repeatable', 'sMDT' in _ONCE_TAGS),
    ChunkTag('cATG', 'categories: value to color, name and description per channel (1.5)', 'cATG' in _ONCE_TAGS),
    ChunkTag('uIDX', "trailing unit index (2.7): after DATA (before it: Corrupt), the file's last chunk", 'uIDX' in _ONCE_TAGS),
)

# Every tag this library knows: the 1.1 table plus the ancillary chunks named elsewhere.
KNOWN_TAGS: frozenset[bytes] = frozenset(c.code for c in CHUNK_TAGS) | {KVMD, MCMP, PDAT, PIDX, SLOC}

# Chunks allowed at most once per file (1.1, 1.4.1, 1.5); DATA must also occur (exactly once).
ONCE: frozenset[bytes] = frozenset(t.encode("ascii") for t in _ONCE_TAGS)

# 1.5: "sMDT occurs at most 64 times with distinct schema ids".
SMDT_MAX: int = 64

# Reader-checked placement: 1.1 table (aNIM before DATA, fRAM after DATA), 1.4.1 (pSUM
# before DATA) and 2.7 (uIDX after DATA, the file's last chunk). 1.5's "Writers place
# them before DATA" for the science records is a writer rule, not listed here.
BEFORE_DATA: frozenset[bytes] = frozenset({ANIM, PSUM})
AFTER_DATA: frozenset[bytes] = frozenset({FRAM, UIDX})


def is_valid_tag(tag: bytes) -> bool:
    """Whether ``tag`` is tag syntax (1.1): exactly 4 ASCII letters."""
    return len(tag) == 4 and all(0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A for b in tag)


def _upper(letter: int) -> bool:
    """Upper case, by bit 5 as in PNG (the tag must already be 4 ASCII letters)."""
    return letter & 0x20 == 0


def is_critical(tag: bytes) -> bool:
    """1st letter upper case: critical, a decoder that does not know the tag fails (1.1)."""
    return _upper(tag[0])


def is_public(tag: bytes) -> bool:
    """2nd letter upper case: public, defined by the spec; lower case is private (1.1)."""
    return _upper(tag[1])


def reserved_bit_set(tag: bytes) -> bool:
    """3rd letter lower case: the reserved bit is set (1.1 reserves the 3rd letter upper case)."""
    return not _upper(tag[2])


def is_safe_to_copy(tag: bytes) -> bool:
    """4th letter lower case: safe to copy into an edited file whose pixels changed (1.1)."""
    return not _upper(tag[3])
