"""Reading TIFF files: every page through tifffile, else Pillow only when it keeps what the file holds.

tifffile reads any sample type, but a compression whose codec lives in imagecodecs (LZW, JPEG,
zstd, ...) needs that package. Pillow reads many of those files too, but reduces some of them
(16-bit RGB to 8 bits). So Pillow's decode is taken only when it keeps every page's sample type,
bit depth and alpha as tifffile reports them from the file's tags; otherwise the file is refused
with the reason, never converted at a lower depth.
"""

from __future__ import annotations

import io
import os
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from imij_plugins import Frame
from imij_plugins.convert.decoded import Decoded, Input, Metadata
from imij_plugins.errors import Corrupt, Unsupported

_INCH_PER_UNIT = {2: 1.0, 3: 2.54}  # TIFF ResolutionUnit: 2 inch, 3 centimetre (1 none: no dpi)
_TIFF_ICC, _TIFF_XMP = 34675, 700
# IFD0 tags Exif shares with TIFF: ImageDescription is left out (OME-XML and ImageJ use it)
_TIFF_EXIF_TAGS = (271, 272, 305, 306, 315, 33432)  # Make, Model, Software, DateTime, Artist, Copyright
_TIFF_ORIENTATION = 274
_TIFF_EXTRASAMPLES = 338
_EXIF_IFD, _INTEROP_IFD = 0x8769, 0xA005
_TIFF_SUB_IFDS = (_EXIF_IFD, 0x8825)  # the Exif and GPS IFD pointers: their IFDs go into the Exif block whole
_EXIF_PREFIX = b"Exif\x00\x00"
_TIFF_CMYK = 5  # PhotometricInterpretation SEPARATED
_TIFF_PHOTOMETRICS = (1, 2, _TIFF_CMYK)  # MinIsBlack, RGB, Separated: the ones IMI layouts mean
_ALPHA_EXTRASAMPLES = (1, 2)  # associated, unassociated (0 is an unspecified extra sample)
# ExtraSamples -> IMI alpha_mode (1.0): associated alpha is premultiplied, an unspecified extra
# sample is no opacity (undefined padding), unassociated alpha is straight
_ALPHA_MODES = {0: 3, 1: 1, 2: 0}
_CODECS_HINT = "pip install imagecodecs"


def stream(src: Input) -> str | os.PathLike[str] | io.BytesIO:
    """What third-party readers open: the path, or a stream over the bytes."""
    return io.BytesIO(src) if isinstance(src, bytes) else src


def read_tiff_file(src: Input) -> Decoded:
    """The TIFF through tifffile; when tifffile cannot decode it, Pillow's decode if it keeps every
    page's depth and alpha, else ``Unsupported`` saying why (and how to read it: imagecodecs)."""
    from imij_plugins.convert.sources import read_pillow

    try:
        return read_tiff(src)
    except (ValueError, OSError, NotImplementedError) as exc:
        first = exc
    needs_codecs = "imagecodecs" in str(first)
    try:
        decoded = read_pillow(src)
    except Exception as exc:
        if needs_codecs:
            raise Unsupported(f"tifffile cannot decode this TIFF: {first} ({_CODECS_HINT}); nor can Pillow: {exc}") from None
        raise first from None
    pages = _page_facts(src)
    loss = _pillow_loss(pages, decoded)
    if loss is None:  # the tags' metadata, as tifffile's read has it (Pillow 9 leaves out XMP and Exif)
        decoded = replace(decoded, frames=tuple(_at_file_bits(f, p) for f, p in zip(decoded.frames, pages or ()))) if pages else decoded
        metadata = _tags_metadata(src)
        return decoded if metadata is None else replace(decoded, metadata=metadata)
    hint = f" ({_CODECS_HINT})" if needs_codecs else ""
    raise Unsupported(f"tifffile cannot decode this TIFF: {first}{hint}; Pillow {loss}")


def read_tiff(src: Input) -> Decoded:
    """Every page of a TIFF through tifffile (any dtype; strips, tiles or planes), metadata from
    page 0; an OME-TIFF or ImageJ hyperstack as its series' images and dimensions."""
    import tifffile

    from imij_plugins.convert.ome import is_hyperstack, read_hyperstack

    with tifffile.TiffFile(stream(src)) as tif:
        pages = _pages(tif)
        _check_complete(pages, tif.filehandle.size)
        stack = None
        if is_hyperstack(tif):
            frames, stack = read_hyperstack(tif)
        else:
            frames = tuple(_tiff_frame(page) for page in pages)
            _check_later_alpha(pages)
        metadata = _tiff_metadata(tif.pages.first.tags, src)
    if frames[0].array.shape[2:] not in ((2,), (4,)):
        metadata = replace(metadata, alpha_mode=0)  # the extra samples are not one GrayAlpha/RGBA slot
    reader = "tiff:ome" if stack is not None and tif.is_ome else "tiff:imagej" if stack is not None else "tiff"
    return Decoded(frames, "still" if len(frames) == 1 else "pages", reader, metadata=metadata, stack=stack)


def _tiff_metadata(tags: Any, src: Input, pillow: bool = False) -> Metadata:
    """The metadata of page 0's tags: ICC, XMP, dpi, Exif, Orientation, alpha mode. Pixels that
    ``pillow`` decoded are already turned as the Orientation tag says (every supported Pillow
    transposes a TIFF when it loads it) and their alpha straight (Pillow unpremultiplies
    associated alpha, and drops an unspecified extra sample)."""
    orientation = int(tags[_TIFF_ORIENTATION].value) if _TIFF_ORIENTATION in tags and not pillow else 1
    return Metadata(
        icc_profile=_tag_bytes(tags, _TIFF_ICC),
        xmp=_tag_bytes(tags, _TIFF_XMP),
        dpi=_tiff_dpi(tags),
        exif=_tiff_exif(tags, src, orientation),
        orientation=orientation,
        alpha_mode=0 if pillow else _alpha_mode(tags),
    )


def _check_later_alpha(pages: list[Any]) -> None:
    """``Unsupported`` for a page after the first whose extra sample is not straight alpha: the
    encoder declares an alpha mode (1.0) on the first image's header only, so a later page's
    premultiplied alpha or padding would be stored as straight alpha."""
    for index, page in enumerate(pages[1:], 1):
        mode = _alpha_mode(page.tags)
        if mode:
            what = "associated (premultiplied) alpha" if mode == 1 else "an unspecified extra sample"
            raise Unsupported(f"TIFF page {index} has {what}; IMI pages after the first are written with straight alpha here: convert that page on its own")


def _alpha_mode(tags: Any) -> int:
    """The IMI alpha_mode (1.0) of page 0's first ExtraSamples value; straight without one."""
    tag = tags.get(_TIFF_EXTRASAMPLES)
    values = () if tag is None else tag.value if isinstance(tag.value, tuple) else (tag.value,)
    return _ALPHA_MODES.get(int(values[0]), 0) if values else 0


def _tags_metadata(src: Input) -> Metadata | None:
    """Page 0's metadata from its tags, which tifffile parses even where it cannot decode the
    pixels, for pixels Pillow decoded; None when it cannot parse them either."""
    import tifffile

    try:
        with tifffile.TiffFile(stream(src)) as tif:
            return _tiff_metadata(tif.pages.first.tags, src, pillow=True)
    except Exception:
        return None


def _pages(tif: Any) -> list[Any]:
    """The file's pages in IFD-chain order, up to an IFD met before (tifffile iterates a chain
    that loops back forever; Pillow stops there too)."""
    pages, seen = [], set()
    for page in tif.pages:
        if page.offset in seen:
            break
        seen.add(page.offset)
        pages.append(page)
    return pages


def _check_complete(pages: list[Any], size: int) -> None:
    """``Corrupt`` with a one-line reason for a TIFF without a readable page or whose image data
    runs past the end of the file (a truncated file)."""
    if not pages:
        raise Corrupt("TIFF has no readable page (the offset of its first IFD is outside the file)")
    for index, page in enumerate(pages):
        ends = [o + n for o, n in zip(page.dataoffsets, page.databytecounts) if n]
        if ends and max(ends) > size:
            raise Corrupt(f"TIFF is truncated: the data of page {index} ends at byte {max(ends):,}, the file has {size:,}")


def _photometric_name(value: object) -> str:
    """A PhotometricInterpretation's name (tifffile keeps values it does not know as ints)."""
    import tifffile

    try:
        return tifffile.PHOTOMETRIC(int(value)).name  # type: ignore[call-overload]
    except ValueError:
        return str(int(value))  # type: ignore[call-overload]


def _tiff_frame(page: Any) -> Frame:
    """One TIFF page as an (H, W, C) Frame: planar samples moved last, 1-bit pages as 0/1 with 1 significant bit."""
    photometric = int(page.photometric)
    if photometric not in _TIFF_PHOTOMETRICS:
        raise ValueError(f"TIFF photometric interpretation {_photometric_name(photometric)} has no IMI layout")
    array = page.asarray()
    axes: str = page.axes
    if "S" in axes:
        array = np.moveaxis(array, axes.index("S"), -1)
        axes = axes.replace("S", "") + "S"
    array = array.reshape([n for n, axis in zip(array.shape, axes) if axis in "YXS" or n != 1])
    if array.ndim not in (2, 3):
        raise ValueError(f"TIFF page with axes {page.axes} and shape {page.shape} is not one 2-D image")
    channels = 1 if array.ndim == 2 else array.shape[2]
    layout = "CMYK" if photometric == _TIFF_CMYK and channels == 4 else None
    if array.dtype == np.bool_:
        return Frame(array.astype(np.uint8), layout, (1,) * channels)
    bits = int(page.bitspersample)
    if array.dtype == np.uint8 and bits < 8:  # 2- and 4-bit samples, unpacked as they are: declared
        return Frame(array, layout, (bits,) * channels)
    return Frame(array, layout)


PageFacts = tuple[Any, int, bool]  # a page's dtype, bits per sample, alpha, as its tags say


def _page_facts(src: Input) -> list[PageFacts] | None:
    """Each page's sample type, bits per sample and alpha from its tags (tifffile parses them even
    where it cannot decode the pixels); None when it cannot parse them either."""
    import tifffile

    try:
        with tifffile.TiffFile(stream(src)) as tif:
            return [(p.dtype, int(p.bitspersample), any(int(e) in _ALPHA_EXTRASAMPLES for e in p.extrasamples)) for p in _pages(tif)]
    except Exception:
        return None


def _pillow_loss(pages: list[PageFacts] | None, decoded: Decoded) -> str | None:
    """What Pillow's decode loses against the ``pages`` the tags describe (their count, sample
    type, bits per sample and alpha), or None (also when tifffile reads no tags)."""
    if pages is None:
        return None
    if len(decoded.frames) < len(pages):
        return f"reads {len(decoded.frames)} of its {len(pages)} pages"
    for index, (frame, (dtype, bits, alpha)) in enumerate(zip(decoded.frames, pages)):
        got = frame.array.dtype
        got_bits = min(frame.sig_bits) if frame.sig_bits else got.itemsize * 8
        if dtype is not None and (got_bits < bits or (dtype.kind == "f") != (got.kind == "f")):
            return f"reads the {dtype} samples ({bits} bits) of page {index} as {got} ({got_bits} bits)"
        if alpha and frame.array.shape[2] not in (2, 4):
            return f"drops the alpha of page {index}"
    return None


def _at_file_bits(frame: Frame, page: PageFacts) -> Frame:
    """A gray frame Pillow expanded from 2 to 7 bits per sample to 0..255 (v * 255 / (2**bits - 1),
    as it unpacks "L;2" and "L;4") back to the file's samples, their bits declared, as tifffile
    reads them; any other frame as it is."""
    bits = page[1]
    step = 255 // ((1 << bits) - 1) if 1 < bits < 8 else 0
    array = frame.array
    if not step or frame.sig_bits or array.dtype != np.uint8 or array.shape[2:] not in ((), (1,)) or (array % step).any():
        return frame
    return Frame(array // step, frame.layout, (bits,))


def _tag_bytes(tags: Any, code: int) -> bytes | None:
    tag = tags.get(code)
    return bytes(tag.value) if tag is not None else None


def _tiff_exif(tags: Any, src: Input, orientation: int) -> bytes | None:
    """The TIFF's descriptive IFD0 tags, ``orientation`` where the file has the tag, and its Exif
    and GPS IFDs (read by Pillow, which keeps each value's type) as an Exif block (TIFF header
    onward), or None."""
    from PIL import Image

    found = {code: tags[code].value for code in _TIFF_EXIF_TAGS if code in tags}
    if _TIFF_ORIENTATION in tags:
        found[_TIFF_ORIENTATION] = orientation
    sub_ifds = [code for code in _TIFF_SUB_IFDS if code in tags]
    if not sub_ifds and not any(code in found for code in _TIFF_EXIF_TAGS):
        return None
    exif = Image.Exif()
    for code, value in found.items():
        exif[code] = int(value) if code == _TIFF_ORIENTATION else value
    if sub_ifds:
        with Image.open(stream(src)) as im:
            source = im.getexif()
            for code in sub_ifds:  # as dict values: Pillow 9 writes only sub-IFDs set in the Exif itself
                exif[code] = _sub_ifd(source, code)
    return exif.tobytes().removeprefix(_EXIF_PREFIX)


def _sub_ifd(exif: Any, code: int) -> dict[int, Any]:
    """The Exif or GPS IFD of a Pillow ``Exif`` as a dict, the Exif IFD's Interoperability IFD
    nested as one (its offset would point nowhere in the new block)."""
    ifd = dict(exif.get_ifd(code))
    if code == _EXIF_IFD and _INTEROP_IFD in ifd:
        ifd[_INTEROP_IFD] = dict(exif.get_ifd(_INTEROP_IFD))
    return ifd


def _tiff_dpi(tags: Any) -> tuple[float, float] | None:
    """XResolution and YResolution as dots per inch, when ResolutionUnit is inch or centimetre."""
    x, y, unit = (tags.get(code) for code in (282, 283, 296))
    per_inch = _INCH_PER_UNIT.get(int(unit.value) if unit is not None else 2)
    if x is None or y is None or per_inch is None or not all(t.value[0] > 0 and t.value[1] > 0 for t in (x, y)):
        return None  # no resolution, no unit, or a zero term (0/1 means unknown, as Pillow reads it)
    return tuple(float(Fraction(*t.value)) * per_inch for t in (x, y))  # type: ignore[return-value]
