"""One small adapter per codec for benchmarks/run.py: encode an array to bytes, decode it back.

This package is driven only through its public API: ``imij_plugins.encode(array, effort=e,
codec=c, threads=t)`` and ``imij_plugins.read(data, threads=t)``. The effort levels and codec
options are discovered at run time (``imij_options``) from ``inspect.signature(imij_plugins.encode)``
and by asking the encoder, so new options keep working without touching this file.

References: PNG via Pillow (default = compress_level 6, and compress_level 9), WebP lossless via
Pillow, QOI (``qoi``), JPEG XL lossless (imagecodecs/libjxl, effort 1 and its default 7), TIFF
with zstd or deflate and a predictor (tifffile + imagecodecs: horizontal for integers,
floating-point for floats), JPEG-LS (imagecodecs/CharLS, the 16-bit reference).
Optional packages that are not installed just drop their codecs (``unavailable()`` says why).

Note: run.py loads this file by path (``importlib``): the name ``codecs`` is the standard
library's, which the interpreter has imported before any script runs.
"""

from __future__ import annotations

import importlib.util
import inspect
import io
import os
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

ALL_THREADS = os.cpu_count() or 1
EFFORT_RANGE = range(1, 10)  # effort 1 (fast) ... 9 (smallest); each is probed before use


@dataclass(frozen=True)
class Codec:
    name: str  # unique label in the tables, e.g. "imi quick e5" / "png" / "jxl e1"
    family: str  # imi, png, webp, qoi, jxl, tiff, jpegls
    encode: Callable[[np.ndarray], bytes]
    decode: Callable[[bytes], np.ndarray]
    supports: Callable[[np.ndarray], str | None]  # None when the array can be coded, else why not
    threads: int | None = None  # IMI: the threads= passed to encode and read
    params: dict = field(default_factory=dict)
    note: str = ""

    @property
    def variant(self) -> str:
        """The name without the thread count: one row of the tables holds both thread counts."""
        return self.params.get("variant", self.name)


def channels(a: np.ndarray) -> int:
    return 1 if a.ndim == 2 else a.shape[2]


def same_pixels(original: np.ndarray, decoded: np.ndarray) -> bool:
    """Exact equality, bit for bit (float NaN payloads and -0.0 included); (H, W, 1) == (H, W)."""
    decoded = np.asarray(decoded)
    if decoded.ndim == 3 and decoded.shape[2] == 1 and original.ndim == 2:
        decoded = decoded[:, :, 0]
    if decoded.shape != original.shape or decoded.dtype != original.dtype:
        return False
    return np.ascontiguousarray(decoded).tobytes() == np.ascontiguousarray(original).tobytes()


# ----------------------------------------------------------------------------- this package


@dataclass(frozen=True)
class ImiOptions:
    signature: str
    default_effort: int | None
    default_codec: str | None
    efforts: tuple[int, ...]
    codecs: tuple[str | None, ...]  # None: encode has no codec= option
    threads: bool  # encode takes threads=
    how: str  # how the codec options were found


def _literal_values(annotation: object) -> tuple | None:
    """The values of a ``Literal[...]`` annotation (also inside Optional/Union), else None."""
    if isinstance(annotation, str):
        found = re.findall(r"['\"]([^'\"]+)['\"]", annotation) if "Literal" in annotation else []
        return tuple(found) or None
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    for arg in typing.get_args(annotation):
        values = _literal_values(arg)
        if values:
            return values
    return None


def _probe_image() -> np.ndarray:
    return (np.arange(8 * 8 * 3, dtype=np.uint16) * 37 % 251).astype(np.uint8).reshape(8, 8, 3)


def imij_options() -> ImiOptions:
    """Effort levels and codec options of ``imij_plugins.encode`` (its ``EncodeOptions``), found at run time.

    Codec names come from, in order: a ``Literal`` annotation of ``codec``; a ``CODECS`` tuple
    on ``imij_plugins`` or ``imij_plugins.writer``; the ValueError the encoder raises for an
    unknown name (it lists the valid ones); the default alone. Efforts are 1..9 (the
    writer's range; a ``Literal`` annotation of ``effort`` overrides it), keeping those the encoder takes.
    """
    import imij_plugins

    sig = inspect.signature(getattr(imij_plugins, "EncodeOptions", imij_plugins.encode))
    params = sig.parameters
    effort_p, codec_p = params.get("effort"), params.get("codec")
    default_effort = effort_p.default if effort_p is not None and effort_p.default is not inspect.Parameter.empty else None
    default_codec = codec_p.default if codec_p is not None and codec_p.default is not inspect.Parameter.empty else None
    img = _probe_image()

    codecs: list[str | None]
    how = ""
    if codec_p is None:
        codecs, how = [None], "encode has no codec= option"
    else:
        values = _literal_values(codec_p.annotation)
        if values:
            codecs, how = list(values), "Literal annotation of codec"
        else:
            found = None
            for owner in ("imij_plugins", "imij_plugins.options", "imij_plugins.writer"):
                mod = __import__(owner, fromlist=["_"])
                if isinstance(getattr(mod, "CODECS", None), (tuple, list, dict, frozenset, set)):
                    found, how = list(mod.CODECS), f"{owner}.CODECS"
                    break
            if found is None:
                try:
                    imij_plugins.encode(img, codec="\x00no-such-codec")
                    found, how = [], "encoder accepted an unknown codec name"
                except ValueError as exc:
                    found = [n for n in re.findall(r"'([A-Za-z0-9_\-]+)'", str(exc))]
                    how = f"the encoder's error for an unknown codec: {exc}"
                except Exception as exc:  # noqa: BLE001 - any refusal tells nothing more
                    found, how = [], f"unknown codec raised {type(exc).__name__}"
            codecs = list(dict.fromkeys(([default_codec] if default_codec else []) + found))
        # keep only names the encoder takes
        codecs = [c for c in codecs if _takes(imij_plugins.encode, img, codec=c)]

    efforts_src = _literal_values(effort_p.annotation) if effort_p is not None else None
    candidates = [int(e) for e in efforts_src] if efforts_src else list(EFFORT_RANGE)
    if effort_p is None:
        efforts: list[int] = []
    else:
        kw = {"codec": default_codec} if default_codec is not None else {}
        efforts = [e for e in candidates if _takes(imij_plugins.encode, img, effort=e, **kw)]
    return ImiOptions(
        signature=str(sig),
        default_effort=default_effort,
        default_codec=default_codec,
        efforts=tuple(efforts),
        codecs=tuple(codecs),
        threads="threads" in params,
        how=how,
    )


def _takes(encode: Callable, img: np.ndarray, **kw: object) -> bool:
    try:
        encode(img, **kw)
        return True
    except (ValueError, TypeError, NotImplementedError):
        return False


def imij_codecs(
    options: ImiOptions | None = None,
    efforts: list[int] | None = None,
    codec_options: list[str | None] | None = None,
    thread_counts: list[int] | None = None,
) -> list[Codec]:
    """This package at each codec option x effort x thread count (1 and all cores by default)."""
    import imij_plugins

    opts = options or imij_options()
    efforts = list(opts.efforts) if efforts is None else efforts
    codec_options = list(opts.codecs) if codec_options is None else codec_options
    if thread_counts is None:
        thread_counts = sorted({1, ALL_THREADS}) if opts.threads else [0]
    out = []
    for c in codec_options:
        for e in efforts or [None]:
            for t in thread_counts:
                kw: dict = {}
                if c is not None:
                    kw["codec"] = c
                if e is not None:
                    kw["effort"] = e
                if opts.threads and t:
                    kw["threads"] = t
                variant = "imi" + (f" {c}" if c else "") + (f" e{e}" if e is not None else "")
                rkw = {"threads": t} if (opts.threads and t) else {}

                def enc(a: np.ndarray, kw=kw) -> bytes:
                    return imij_plugins.encode(a, **kw)

                def dec(b: bytes, rkw=rkw) -> np.ndarray:
                    return imij_plugins.read(b, **rkw)

                out.append(Codec(
                    name=f"{variant} t{t}", family="imi", encode=enc, decode=dec, supports=lambda a: None,
                    threads=t, params={"variant": variant, "codec": c, "effort": e, "threads": t,
                                       "default": (c == opts.default_codec and e == opts.default_effort)},
                    note="imij_plugins.encode(" + ", ".join(f"{k}={v!r}" for k, v in kw.items()) + ")",
                ))
    return out


# ----------------------------------------------------------------------------- references


def _pillow_png_mode(a: np.ndarray) -> str | None:
    if a.dtype == np.uint8:
        return {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}.get(channels(a))
    if a.dtype == np.uint16 and channels(a) == 1:
        return "I;16"
    return None


def _png_supports(a: np.ndarray) -> str | None:
    if _pillow_png_mode(a):
        return None
    if a.dtype == np.uint16 and channels(a) in (2, 3, 4):
        if importlib.util.find_spec("imagecodecs") is None:
            return "16-bit colour PNG needs imagecodecs (Pillow cannot write it)"
        return None
    return f"PNG holds no {a.dtype}"


def _png_codec(level: int | None) -> Codec:
    from PIL import Image

    def enc(a: np.ndarray) -> bytes:
        mode = _pillow_png_mode(a)
        if mode is None:  # 16-bit GA/RGB/RGBA: libpng through imagecodecs at the same zlib level
            import imagecodecs  # noqa: PLC0415

            return bytes(imagecodecs.png_encode(a, level=6 if level is None else level))
        buf = io.BytesIO()
        kw = {} if level is None else {"compress_level": level}
        Image.fromarray(a[:, :, 0] if a.ndim == 3 and mode in ("L", "I;16") else a).save(buf, format="PNG", **kw)
        return buf.getvalue()

    def dec(b: bytes) -> np.ndarray:
        if b[24] == 16 and b[25] != 0:  # IHDR bit depth 16, colour type not gray: Pillow would drop bits
            import imagecodecs

            return imagecodecs.png_decode(b)
        with Image.open(io.BytesIO(b)) as im:
            return np.asarray(im)

    name = "png" if level is None else f"png {level}"
    return Codec(name, "png", enc, dec, _png_supports, params={"level": 6 if level is None else level},
                 note=f"Pillow PNG, {'default (compress_level 6)' if level is None else f'compress_level={level}'}; "
                      "16-bit GA/RGB(A) via imagecodecs libpng at the same level")


def _webp_codec() -> Codec:
    from PIL import Image, features

    def supports(a: np.ndarray) -> str | None:
        if not features.check("webp"):
            return "Pillow built without WebP"
        return None if a.dtype == np.uint8 else f"WebP holds 8-bit only, not {a.dtype}"

    def widen(a: np.ndarray) -> np.ndarray:
        c = channels(a)
        if c == 1:
            g = a if a.ndim == 2 else a[:, :, 0]
            return np.stack([g, g, g], axis=2)
        if c == 2:
            return np.stack([a[:, :, 0]] * 3 + [a[:, :, 1]], axis=2)
        return a

    def enc(a: np.ndarray) -> bytes:
        buf = io.BytesIO()
        Image.fromarray(widen(a)).save(buf, format="WEBP", lossless=True, quality=80, method=4, exact=True)
        return buf.getvalue()

    def dec(b: bytes) -> np.ndarray:
        with Image.open(io.BytesIO(b)) as im:
            return np.asarray(im)

    return Codec("webp", "webp", enc, dec, supports, params={"quality": 80, "method": 4},
                 note="Pillow WebP lossless=True, quality=80, method=4 (Pillow defaults), exact=True; "
                      "gray/GA are stored as RGB/RGBA (R=G=B) and compared after taking them back; an all-opaque alpha "
                      "that libwebp drops is put back as 255 before the comparison")


def _webp_unwiden(original: np.ndarray, decoded: np.ndarray) -> np.ndarray:
    c = channels(original)
    if c in (2, 4) and decoded.ndim == 3 and decoded.shape[2] == 3:  # libwebp drops an all-opaque alpha
        decoded = np.concatenate([decoded, np.full(decoded.shape[:2] + (1,), 255, np.uint8)], axis=2)
    if c == 1 and decoded.ndim == 3:
        return decoded[:, :, 0] if original.ndim == 2 else decoded[:, :, :1]
    if c == 2 and decoded.ndim == 3 and decoded.shape[2] == 4:
        return decoded[:, :, [0, 3]]
    return decoded


def _qoi_codec() -> Codec:
    import qoi

    def supports(a: np.ndarray) -> str | None:
        return None if a.dtype == np.uint8 and channels(a) in (3, 4) else "QOI holds 8-bit RGB/RGBA only"

    return Codec("qoi", "qoi", lambda a: bytes(qoi.encode(np.ascontiguousarray(a))), qoi.decode, supports,
                 note="qoi package (reference C implementation)")


def _jxl_codec(effort: int) -> Codec:
    import imagecodecs

    def supports(a: np.ndarray) -> str | None:
        if a.dtype not in (np.uint8, np.uint16, np.float32):
            return f"not {a.dtype}"
        return None if channels(a) in (1, 2, 3, 4) else "1-4 channels only"

    def enc(a: np.ndarray) -> bytes:
        return bytes(imagecodecs.jpegxl_encode(a, lossless=True, effort=effort, numthreads=ALL_THREADS))

    def dec(b: bytes) -> np.ndarray:
        return imagecodecs.jpegxl_decode(b, numthreads=ALL_THREADS)

    return Codec(f"jxl e{effort}", "jxl", enc, dec, supports, params={"effort": effort},
                 note=f"imagecodecs (libjxl) lossless, effort={effort}{' (libjxl default)' if effort == 7 else ''}, "
                      f"numthreads={ALL_THREADS}")


def _tiff_codec(compression: str) -> Codec:
    import imagecodecs  # tifffile's zstd and deflate codecs come from it
    import tifffile

    del imagecodecs

    def supports(a: np.ndarray) -> str | None:
        return None if channels(a) in (1, 2, 3, 4) else "1-4 channels only"

    def enc(a: np.ndarray) -> bytes:
        buf = io.BytesIO()
        photometric = "rgb" if channels(a) >= 3 else "minisblack"
        tifffile.imwrite(buf, a, compression=compression, predictor=True, photometric=photometric,
                         maxworkers=ALL_THREADS)
        return buf.getvalue()

    def dec(b: bytes) -> np.ndarray:
        return tifffile.imread(io.BytesIO(b), maxworkers=ALL_THREADS)

    return Codec(f"tiff {compression}", "tiff", enc, dec, supports, params={"compression": compression},
                 note=f"tifffile compression={compression!r} (imagecodecs default level), predictor=True "
                      f"(horizontal for integers, floating-point for floats), maxworkers={ALL_THREADS}")


def _jpegls_codec() -> Codec:
    import imagecodecs

    def supports(a: np.ndarray) -> str | None:
        if a.dtype not in (np.uint8, np.uint16):
            return f"not {a.dtype}"
        return None if channels(a) in (1, 3) else "gray or RGB only"

    return Codec("jpegls", "jpegls", lambda a: bytes(imagecodecs.jpegls_encode(a)), imagecodecs.jpegls_decode,
                 supports, note="imagecodecs (CharLS) JPEG-LS lossless, defaults")


_REFERENCES: tuple[tuple[str, Callable[[], Codec]], ...] = (
    ("png", lambda: _png_codec(None)),
    ("png 9", lambda: _png_codec(9)),
    ("webp", _webp_codec),
    ("qoi", _qoi_codec),
    ("jxl e1", lambda: _jxl_codec(1)),
    ("jxl e7", lambda: _jxl_codec(7)),
    ("tiff zstd", lambda: _tiff_codec("zstd")),
    ("tiff deflate", lambda: _tiff_codec("deflate")),
    ("jpegls", _jpegls_codec),
)

_unavailable: dict[str, str] = {}


def reference_codecs(names: list[str] | None = None) -> list[Codec]:
    """The other codecs whose packages are installed (those missing are listed by ``unavailable``)."""
    out = []
    for name, make in _REFERENCES:
        if names is not None and name not in names:
            continue
        try:
            out.append(make())
        except ImportError as exc:
            _unavailable[name] = f"{exc.name or exc}: not installed"
    return out


def reference_names() -> list[str]:
    return [n for n, _ in _REFERENCES]


def unavailable() -> dict[str, str]:
    return dict(_unavailable)


def roundtrip_view(codec: Codec, original: np.ndarray, decoded: np.ndarray) -> np.ndarray:
    """What to compare with the original: WebP's widened gray/GA are taken back to 1/2 channels."""
    if codec.family == "webp":
        return _webp_unwiden(original, np.asarray(decoded))
    return np.asarray(decoded)
