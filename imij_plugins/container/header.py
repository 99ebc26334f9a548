"""The image header (1.0): read both the masked and the full form, write the masked one."""

from __future__ import annotations

from dataclasses import dataclass, field

from imij_plugins.errors import Corrupt, Unsupported
from imij_plugins.registry.features import FeatureId
from imij_plugins.registry.samples import (
    LAYOUTS,
    PIXEL_MODEL_LAYOUTS,
    SAMPLE_TYPES,
    SAMPLES_32_CODES,
    SIGNED_SAMPLE_CODES,
    WIDE_SAMPLE_CODES,
    ChannelLayout,
    SampleType,
)
from imij_plugins.wire.cursor import Cursor
from imij_plugins.wire.mask import decode_mask, encode_mask
from imij_plugins.wire.records import Record, encode_records, read_records
from imij_plugins.wire.varint import encode_varint

VERSION = 2

# 1.0: presence bits, in bit order
BIT_CODING, BIT_SAMPLE, BIT_FEATURES, BIT_CHANNELS = 0, 1, 2, 3
BIT_ORIENTATION, BIT_DECODE_SPEED, BIT_CICP, BIT_SIG_BITS, BIT_ALPHA_MODE = 4, 5, 6, 7, 8
PRESENT_ALL = 0x1FF  # the full form (1.0)

MAX_DIMENSION = (1 << 32) - 1
RECORD_CHECKSUM = 2  # 1.4: header record 2, piece_log2
RECORD_LOCATOR = 4  # 1.0: the DATA locator
DECODE_SPEED_FASTEST = 3


def default_cicp(channels: int) -> tuple[int, int, int, int]:
    """1.0 defaults: sRGB for layouts 1-4, unspecified for CMYK, 1/2/0/1 for Oklab."""
    if channels == 5:
        return (2, 2, 0, 1)
    if channels in (6, 7):
        return (1, 2, 0, 1)
    return (1, 13, 0, 1)


@dataclass
class Header:
    """Every field of the header, defaults applied, plus its record list."""

    width: int
    height: int
    coding: int = 0
    sample: int = 0
    channels: int = 3
    orientation: int = 1
    decode_speed: int = 1
    cicp: tuple[int, int, int, int] | None = None  # None: the layout's default
    sig_bits: tuple[int, ...] | None = None  # None: every channel uses all storage bits
    alpha_mode: int = 0
    mask: frozenset[int] = frozenset()  # the declared feature mask
    records: list[Record] = field(default_factory=list)

    @property
    def sample_type(self) -> SampleType:
        return SAMPLE_TYPES[self.sample]

    @property
    def layout(self) -> ChannelLayout:
        return LAYOUTS[self.channels]

    @property
    def channel_count(self) -> int:
        return LAYOUTS[self.channels].channels

    @property
    def effective_cicp(self) -> tuple[int, int, int, int]:
        return self.cicp if self.cicp is not None else default_cicp(self.channels)

    @property
    def effective_sig_bits(self) -> tuple[int, ...]:
        if self.sig_bits is not None:
            return self.sig_bits
        return (self.sample_type.bits,) * self.channel_count

    @property
    def features(self) -> frozenset[int]:
        """The header's feature set (0.1): the mask plus the features its fields imply."""
        lossy, wide = self.coding in (1, 2), self.sample in SAMPLES_32_CODES
        if not (lossy or wide):  # nothing implied: the mask itself, asked for several times a read
            return self.mask
        implied = set()
        if lossy:
            implied.add(FeatureId.LOSSY)
        if wide:
            implied.add(FeatureId.SAMPLES_32)
        return self.mask | implied

    def record(self, rid: int) -> Record | None:
        return next((r for r in self.records if r.id == rid), None)


def read_header(cur: Cursor) -> Header:
    """Parse a header closed by ``cur.end`` (the header_len bound) and validate every field.

    Field-level rules come first (Unsupported for open fields, Corrupt for closed ones), then
    the gated-syntax rules that depend on the feature mask (0.1). Admission of the feature set
    is the caller's next step.
    """
    version = cur.u8("version")
    if version != VERSION:  # 1.0: other versions Unsupported
        raise Unsupported(f"header version {version} (this reader implements version {VERSION})")
    present = cur.varint("present")
    if present >> 9:  # 1.0: a set bit not defined here is Unsupported
        raise Unsupported(f"header presence bits 0x{present & ~PRESENT_ALL:x} are not defined in version 2")
    mask: frozenset[int] = frozenset()
    if present >> BIT_FEATURES & 1:
        mask, cur.pos = decode_mask(cur.buf, cur.pos, cur.end)
    # fields into locals, the Header made once at the end (a read's fixed cost)
    coding = sample = alpha_mode = 0
    channels, orientation, decode_speed = 3, 1, 1
    cicp: tuple[int, int, int, int] | None = None
    sig_bits: tuple[int, ...] | None = None
    if present >> BIT_CODING & 1:
        coding = cur.u8("coding")
        if coding not in (0, 1, 2):  # 0.3: open field
            raise Unsupported(f"header coding {coding}")
    if present >> BIT_SAMPLE & 1:
        sample = cur.u8("sample")
        if sample not in SAMPLE_TYPES:  # 0.3: open field
            raise Unsupported(f"header sample type {sample}")
    if present >> BIT_CHANNELS & 1:
        channels = cur.u8("channels")
        if channels not in LAYOUTS:  # 0.3: closed field
            raise Corrupt(f"header channels {channels}")
    if present >> BIT_ORIENTATION & 1:
        orientation = cur.u8("orientation")
        if not 1 <= orientation <= 8:  # 0.3: closed field
            raise Corrupt(f"header orientation {orientation}")
    if present >> BIT_DECODE_SPEED & 1:
        decode_speed = cur.u8("decode_speed")
        if decode_speed > DECODE_SPEED_FASTEST:  # 0.3: informational, unknown reads as fastest
            decode_speed = DECODE_SPEED_FASTEST
    if present >> BIT_CICP & 1:
        cicp = tuple(cur.u8("cicp") for _ in range(4))  # type: ignore[assignment]
        if cicp[3] not in (0, 1):  # type: ignore[index]  # 0.3: full_range is closed
            raise Corrupt(f"header CICP full_range {cicp[3]}")  # type: ignore[index]
    if present >> BIT_SIG_BITS & 1:
        sig_bits = tuple(cur.u8("sig_bits") for _ in range(LAYOUTS[channels].channels))
    if present >> BIT_ALPHA_MODE & 1:
        alpha_mode = cur.u8("alpha_mode")
        if alpha_mode > 3:  # 0.3: closed field
            raise Corrupt(f"header alpha_mode {alpha_mode}")
    width = cur.varint("width")
    height = cur.varint("height")
    if not 1 <= width <= MAX_DIMENSION or not 1 <= height <= MAX_DIMENSION:  # 1.0
        raise Corrupt(f"header size {width}x{height} outside 1 ..= 2^32 - 1")
    h = Header(width, height, coding, sample, channels, orientation, decode_speed, cicp, sig_bits, alpha_mode, mask,
               read_records(cur) if cur.pos < cur.end else [])
    check_fields(h)
    _check_records(h)
    return h


def check_fields(h: Header) -> None:
    """The rules that tie fields together and gate them on the feature mask (0.1, 1.0)."""
    st, mask = SAMPLE_TYPES[h.sample], h.mask
    if h.sample in SIGNED_SAMPLE_CODES and FeatureId.SIGNED_SAMPLES not in mask:
        raise Corrupt(f"sample {st.name} without feature signed_samples")  # 1.0
    if h.sample in WIDE_SAMPLE_CODES and FeatureId.WIDE_SAMPLES not in mask:
        raise Corrupt(f"sample {st.name} without feature wide_samples")  # 1.0
    if h.coding and (st.kind == "i" or st.bits == 64):  # 1.0: signed and 64-bit are lossless only
        raise Corrupt(f"lossy coding of {st.name} samples")
    if h.channels in PIXEL_MODEL_LAYOUTS:  # 1.0: layouts 5-7 need pixel_models and lossless coding
        if FeatureId.PIXEL_MODELS not in mask:
            raise Corrupt(f"channel layout {h.layout.name} without feature pixel_models")
        if h.coding:
            raise Corrupt(f"channel layout {h.layout.name} with lossy coding")
    if h.sig_bits is not None:  # 1.0 / explicit source precision: 1 ..= storage bits, floats all bits
        for bits in h.sig_bits:
            if not 1 <= bits <= st.bits or (st.kind == "f" and bits != st.bits):
                raise Corrupt(f"sig_bits {bits} for {st.name} samples")
    if h.orientation not in range(1, 9) or h.alpha_mode not in range(4):
        raise Corrupt(f"orientation {h.orientation} / alpha_mode {h.alpha_mode} out of range")
    if h.cicp is not None and (len(h.cicp) != 4 or h.cicp[3] not in (0, 1) or not all(0 <= v <= 255 for v in h.cicp)):
        raise Corrupt(f"CICP {h.cicp}: four bytes, full_range 0 or 1")
    if h.sig_bits is not None and len(h.sig_bits) != h.channel_count:
        raise Corrupt(f"{len(h.sig_bits)} sig_bits for {h.channel_count} channels")
    if h.alpha_mode in (2, 3):  # 1.0: need alpha_interpretation and a stored alpha slot
        if FeatureId.ALPHA_INTERPRETATION not in mask:
            raise Corrupt(f"alpha_mode {h.alpha_mode} without feature alpha_interpretation")
        if not h.layout.has_alpha:
            raise Corrupt(f"alpha_mode {h.alpha_mode} on layout {h.layout.name} without alpha")


def _check_records(h: Header) -> None:
    """Header records: 2 and 4 are known and ignorable, other odd ids Unsupported (section 1)."""
    for rec in h.records:
        if rec.critical:  # ids 1 and 3 are retired: Unsupported like any unknown critical record
            raise Unsupported(f"critical header record {rec.id}")


def checksum_piece_log2(h: Header) -> int | None:
    """Header record 2's k (1.4), or None without the record; a malformed record is Corrupt."""
    rec = h.record(RECORD_CHECKSUM) if h.records else None  # most headers carry no record
    if rec is None:
        return None
    if len(rec.payload) != 1 or not 10 <= rec.payload[0] <= 40:
        raise Corrupt("header checksum record: expected one byte k in 10 ..= 40")
    return rec.payload[0]


def encode_header(h: Header, *, full: bool = False, records: list[Record] | None = None) -> bytes:
    """The header bytes (after header_len): the masked form, or the full form (1.0); ``records``
    (in id order) in place of the header's own."""
    present = 0
    body = bytearray()
    if full or h.mask:  # the feature mask comes right after present, then the other fields in bit order (1.0)
        present |= 1 << BIT_FEATURES
        body += encode_mask(h.mask)
    for bit, value, default in ((BIT_CODING, h.coding, 0), (BIT_SAMPLE, h.sample, 0), (BIT_CHANNELS, h.channels, 3),
                                (BIT_ORIENTATION, h.orientation, 1), (BIT_DECODE_SPEED, h.decode_speed, 1)):
        if full or value != default:
            present |= 1 << bit
            body += bytes([value])
    cicp, sig = h.effective_cicp, h.effective_sig_bits
    if full or cicp != default_cicp(h.channels):
        present |= 1 << BIT_CICP
        body += bytes(cicp)
    if full or sig != (h.sample_type.bits,) * h.channel_count:
        present |= 1 << BIT_SIG_BITS
        body += bytes(sig)
    if full or h.alpha_mode != 0:
        present |= 1 << BIT_ALPHA_MODE
        body += bytes([h.alpha_mode])
    records = h.records if records is None else records
    return b"".join((bytes([VERSION]), encode_varint(present), body, encode_varint(h.width), encode_varint(h.height),
                     encode_records(records)))
