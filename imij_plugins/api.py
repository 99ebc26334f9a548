"""The user-level API the adapters call: ``open``, ``read``, ``write`` and the lazy ``ImijFile``."""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass
from typing import BinaryIO, Union

import numpy as np

from imij_plugins.container.file import Container, read_container
from imij_plugins.container.header import Header
from imij_plugins.container.writer import assemble, write_atomic
from imij_plugins.errors import TooLarge, Unsupported
from imij_plugins.payload.data import DataPayload, measure_open_data, read_data
from imij_plugins.payload.encode import choose_geometry, encode_quick_payload
from imij_plugins.pixels.dtypes import as_image_array, dtype_of, layout_code, sample_code
from imij_plugins.registry.features import FeatureId, feature_name
from imij_plugins.registry.profiles import required_profiles
from imij_plugins.registry.samples import PIXEL_MODEL_LAYOUTS, SIGNED_SAMPLE_CODES, WIDE_SAMPLE_CODES

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO]

DEFAULT_MAX_IMAGE_BYTES = 1 << 32  # 4 GiB of decoded samples per read
_METADATA_TAGS = {b"iCCP": "icc_profile", b"eXIf": "exif", b"xMPp": "xmp"}


@dataclass(frozen=True)
class Limits:
    """Resource limits checked before any allocation sized by the file."""

    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES


def _load(src: Source) -> bytes | bytearray | memoryview:
    if isinstance(src, (bytes, bytearray, memoryview)):
        return src
    if hasattr(src, "read"):
        return src.read()  # type: ignore[union-attr]
    with builtins.open(os.fspath(src), "rb") as f:  # type: ignore[arg-type]
        return f.read()


class ImijFile:
    """An opened IMI file: header and chunks parsed and checked, pixels decoded on ``read``."""

    def __init__(self, src: Source, *, verify: bool = True, limits: Limits = Limits(), threads: int | None = None):
        self._buf = _load(src)
        self.limits = limits
        self.threads = threads
        self.container: Container = read_container(self._buf, verify=verify, measure_open=measure_open_data)
        self._payload: DataPayload | None = None

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
    def n_frames(self) -> int:
        anim = self.container.animation
        return anim.frame_count if anim else 1

    @property
    def chunks(self) -> list[tuple[str, int]]:
        """Every chunk as ``(tag, whole length)`` in file order."""
        return [(c.tag.decode("ascii"), c.size) for c in self.container.chunks]

    @property
    def metadata(self) -> dict[str, object]:
        """ICC, Exif and XMP payloads by their Pillow info names, plus unknown ancillary chunks."""
        out: dict[str, object] = {}
        for chunk in self.container.chunks:
            name = _METADATA_TAGS.get(chunk.tag)
            if name is not None:
                out[name] = bytes(self.container.payload(chunk))
        return out

    # pixels
    def payload(self) -> DataPayload:
        """DATA's parsed head and unit records (parsed once, on first use)."""
        if self._payload is None:
            data = self.container.data
            self._payload = read_data(
                self._buf,
                self.header,
                data.payload_start,
                data.end if not data.open else len(self._buf),
                bounded=not data.open,
                trailing_index=self.container.trailing_index(),
            )
        return self._payload

    def read(
        self, index: int = 0, *, region: tuple[int, int, int, int] | None = None, threads: int | None = None
    ) -> np.ndarray:
        """Frame/page ``index`` as an (H, W, C) array of the file's sample type.

        ``region=(x, y, w, h)`` decodes only the units that region overlaps.
        """
        if not 0 <= index < self.n_frames:
            raise IndexError(f"frame {index} out of range (file has {self.n_frames})")
        if index:
            raise Unsupported("reading frames and pages after the first is not implemented yet")
        x, y, w, h = region if region is not None else (0, 0, self.width, self.height)
        if w < 1 or h < 1 or x < 0 or y < 0 or x + w > self.width or y + h > self.height:
            raise ValueError(f"region {region} is not inside the {self.width}x{self.height} image")
        self._check_size(w, h)
        payload = self.payload()
        threads = threads if threads is not None else self.threads
        if region is None:
            out = np.empty(self.shape, dtype=self.dtype)
            payload.decode_into(out, threads=threads)
            return out
        geometry = payload.head.geometry
        indices = geometry.units_in(x, y, w, h)
        x0, y0, _, _ = geometry.unit_rect(indices[0])
        x1, y1, uw, uh = geometry.unit_rect(indices[-1])
        self._check_size(x1 + uw - x0, y1 + uh - y0)
        box = np.empty((y1 + uh - y0, x1 + uw - x0, self.channels), dtype=self.dtype)
        payload.decode_into(box, indices, threads=threads, origin=(x0, y0))
        return box[y - y0 : y - y0 + h, x - x0 : x - x0 + w].copy()

    def _check_size(self, w: int, h: int) -> None:
        need = w * h * self.channels * self.dtype.itemsize
        if need > self.limits.max_image_bytes:
            raise TooLarge(f"decoding {w}x{h} needs {need} bytes, over the limit of {self.limits.max_image_bytes}")

    def close(self) -> None:
        self._payload = None

    def __enter__(self) -> "ImijFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ImijFile {self.width}x{self.height} {self.layout} {self.dtype} frames={self.n_frames}>"


def open(src: Source, **options: object) -> ImijFile:  # noqa: A001 - the package's public verb
    """Open an IMI file from a path, bytes or a binary file object; pixels decode on ``read``."""
    return ImijFile(src, **options)  # type: ignore[arg-type]


def read(src: Source, index: int = 0, **options: object) -> np.ndarray:
    """Decode frame ``index`` of an IMI file to an (H, W, C) array."""
    region = options.pop("region", None)
    threads = options.pop("threads", None)
    with open(src, **options) as f:
        return f.read(index, region=region, threads=threads)  # type: ignore[arg-type]


def encode(
    array: np.ndarray,
    *,
    layout: str | int | None = None,
    effort: int = 5,
    checksum: bool = False,
    icc_profile: bytes | None = None,
    exif: bytes | None = None,
    xmp: bytes | None = None,
    stripe_rows: int | None = None,
    group_cols: int | None = None,
    threads: int | None = None,
) -> bytes:
    """The bytes of an IMI file holding ``array`` (H, W) or (H, W, C) losslessly.

    effort 1-3 codes quick-pixel packets; 4 and up also tries bit-smart planes per unit.
    """
    image = as_image_array(array)
    height, width, channels = image.shape
    sample = sample_code(image.dtype)
    channels_code = layout_code(channels, layout)
    geometry = choose_geometry(width, height, stripe_rows, group_cols)
    encoded = encode_quick_payload(image, geometry, bit_smart=effort >= 4, threads=threads)
    mask = {FeatureId.QUICK_PIXELS}
    if encoded.uses_bit_smart:
        mask.add(FeatureId.QUICK_BIT_SMARTS)
    if sample in SIGNED_SAMPLE_CODES:
        mask.add(FeatureId.SIGNED_SAMPLES)
    if sample in WIDE_SAMPLE_CODES:
        mask.add(FeatureId.WIDE_SAMPLES)
    if channels_code in PIXEL_MODEL_LAYOUTS:
        mask.add(FeatureId.PIXEL_MODELS)
    header = Header(width=width, height=height, sample=sample, channels=channels_code, mask=frozenset(mask))
    before = [(tag, value) for tag, value in ((b"iCCP", icc_profile), (b"eXIf", exif), (b"xMPp", xmp)) if value is not None]
    return assemble(
        header,
        encoded.payload,
        encoded.head_len,
        before=before,
        locator=geometry.unit_count >= 2,  # 1.0: with a unit table hint in DATA's head
        checksum=checksum,
    )


def write(dst: str | os.PathLike | BinaryIO, array: np.ndarray, **options: object) -> None:
    """Write ``array`` as an IMI file; a path is written through a temporary file and a rename."""
    write_atomic(dst, encode(array, **options))  # type: ignore[arg-type]
