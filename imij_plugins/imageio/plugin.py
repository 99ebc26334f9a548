"""Read and write IMI images (.imi) through imageio's v3 API.

``ImiPlugin`` adapts the :mod:`imij_plugins` core (``open``, ``encode``, ``write``) to
imageio's ``PluginV3`` interface and holds no format logic of its own. ``import imij_plugins``
registers it for ``.imi`` (:func:`imij_plugins.imageio.register_imageio`); without
registration name the class: ``iio.imread(path, plugin=ImiPlugin)``.

An IMI file holds a still image, an animation (frames of one shape and sample type, read as
the composed canvas) or pages (each page its own image; "mixed pages" differ in shape or
sample type). ``read`` returns the stored samples exactly, in their own dtype (uint8, uint16,
float16, uint32, int32, float32, int8, int16, uint64, int64, float64; floats bit for bit,
NaN payloads and -0.0 included): ``(H, W)`` for a Gray image, ``(H, W, C)`` for every other
layout (GrayAlpha, RGB, RGBA, CMYK, Oklab, OklabAlpha). Nothing is converted or applied:
orientation, colour (CICP, ICC) and alpha mode are reported by ``metadata``.

Methods
-------
.. autosummary::
    :toctree:

    ImiPlugin.read
    ImiPlugin.iter
    ImiPlugin.write
    ImiPlugin.properties
    ImiPlugin.metadata

Examples
--------
>>> import numpy as np, imageio.v3 as iio
>>> from imij_plugins.imageio import ImiPlugin
>>> a = np.arange(12, dtype=np.uint16).reshape(3, 4)
>>> data = iio.imwrite("<bytes>", a, plugin=ImiPlugin)
>>> b = iio.imread(data, plugin=ImiPlugin)
>>> b.dtype, b.shape, bool((a == b).all())
(dtype('uint16'), (3, 4), True)
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
from collections.abc import Iterator, Sequence
from types import EllipsisType
from typing import Any

import numpy as np
from imageio.core.request import URI_BYTES, URI_FILENAME, InitializationError, IOMode, Request
from imageio.core.v3_plugin_api import ImageProperties, PluginV3

from imij_plugins import api

__all__ = ["ImiIndexError", "ImiPlugin"]

Region = tuple[int, int, int, int]
Index = int | EllipsisType | None


class ImiIndexError(IndexError, ValueError):
    """An index past the last frame or page.

    An ``IndexError`` that is also the ``ValueError`` that ``PluginV3.read`` documents for an
    index out of bounds, so either ``except`` clause catches it.
    """


class ImiPlugin(PluginV3):
    """imageio v3 plugin for IMI images (.imi).

    Parameters
    ----------
    request : imageio.core.Request
        The resource to read or write.

    Raises
    ------
    InitializationError
        On read, when the resource does not start with the IMI signature. On write, when the
        target's extension is not ``.imi`` (as imageio's Pillow plugin refuses extensions it
        cannot write): ``extension=".imi"`` writes IMI to any target. A target without an
        extension (a file object, ``"<bytes>"``) is written as IMI.

    Notes
    -----
    A file is parsed and checked on the first ``read``, ``iter``, ``properties`` or
    ``metadata`` call, so a damaged IMI file raises the core's typed error
    (:class:`imij_plugins.Corrupt`, ``Unsupported``, ``TooLarge``; all ``ValueError``) from
    that call rather than an imageio "can not handle" error. A local file is memory-mapped:
    ``properties`` and ``metadata`` read its header and chunk framing only.
    """

    def __init__(self, request: Request) -> None:
        super().__init__(request)
        self._source: api.Source | None = None
        self._files: dict[bool, api.ImijFile] = {}  # keyed by verify: a verified file serves both
        self._written = False
        self._closed = False
        if request.mode.io_mode == IOMode.read:
            if not api.is_imi(request.firstbytes):
                raise InitializationError(f"`{request.filename}` is not an IMI file (no IMI signature)")
        elif request.extension not in (None, ".imi"):
            raise InitializationError(
                f"the IMI plugin writes .imi files, not `{request.extension}`: "
                "pass extension='.imi' to write IMI there anyway"
            )

    # ---------------------
    # Standard V3 Interface
    # ---------------------

    def read(
        self,
        *,
        index: Index = None,
        region: Region | None = None,
        threads: int | None = None,
        verify: bool = True,
    ) -> np.ndarray:
        """Read a frame, a page or all of them.

        Parameters
        ----------
        index : int, ..., or None
            The rule for every method of this plugin that takes ``index``:

            - ``None`` (imageio's default): an animation reads **all** its frames, stacked
              on a new axis 0; a still image or a file of pages reads image 0.
            - ``int``: that frame or page; an animation gives the composed canvas after that
              frame. Negative values count from the end. Out of range raises
              :class:`ImiIndexError` (an ``IndexError`` and a ``ValueError``).
            - ``...``: every frame or page stacked on a new axis 0. Pages that differ in
              shape or dtype (mixed pages) cannot stack: that raises ``ValueError``; read
              them one by one with ``iter()`` or ``read(index=i)``.
        region : tuple of int, optional
            ``(x, y, width, height)`` in pixels: decode only the units this rectangle
            overlaps and return just the rectangle (of each image, for ``index=...``).
        threads : int, optional
            Decoder threads (the core's default when None).
        verify : bool
            Check the file checksum (cSUM) when the file has one; ``False`` skips it.

        Returns
        -------
        ndimage : np.ndarray
            The stored samples in their own dtype: ``(H, W)`` for Gray, ``(H, W, C)``
            otherwise, with a leading batch axis for a stack.
        """
        f = self._file(verify)
        index = _default_index(f, index)
        if index is Ellipsis:
            _check_stackable(f)
            out: np.ndarray | None = None
            for i in range(f.n_frames):
                image = self._read_one(f, i, region, threads)
                if out is None:
                    out = np.empty((f.n_frames, *image.shape), image.dtype)
                out[i] = image
            return out  # type: ignore[return-value]
        return self._read_one(f, _frame_index(f, index), region, threads)

    def iter(
        self, *, region: Region | None = None, threads: int | None = None, verify: bool = True
    ) -> Iterator[np.ndarray]:
        """Yield every frame (composed canvas) or page in file order.

        Mixed pages come out in their own shapes and dtypes. ``region``, ``threads`` and
        ``verify`` work as in :meth:`read`.
        """
        f = self._file(verify)
        for i in range(f.n_frames):
            yield self._read_one(f, i, region, threads)

    def write(
        self,
        ndimage: np.ndarray | Sequence[np.ndarray],
        *,
        is_batch: bool = False,
        pages: bool = False,
        durations: float | Sequence[float] | None = None,
        **options: Any,
    ) -> bytes | None:
        """Write one IMI file, losslessly unless ``max_error`` says otherwise.

        Parameters
        ----------
        ndimage : ndarray or list of ndarray
            One ``(H, W)`` or ``(H, W, C)`` image (C = 1 to 4), or a batch: a list (always a
            batch) or an array whose axis 0 indexes images when ``is_batch=True``. Each
            array's dtype is the stored sample type (bool stores as uint8 0/1).
        is_batch : bool
            Treat axis 0 of an array as the batch axis. Never guessed from the shape.
        pages : bool
            Write a batch as pages instead of an animation. Pages may differ in shape and
            dtype (mixed pages); animation frames must share one shape and dtype.
        durations : float or list of float, optional
            Display time of each frame or page in **seconds** (one value for all, or one
            per image, any sequence or array); 0 when omitted.
        **options
            The writer's options, the fields of :class:`imij_plugins.EncodeOptions` with its
            defaults and checks: among them ``loop`` (animation plays, 0 forever; also as the
            reader's ``loop_count``), ``effort`` (1 fast .. 9 smallest), ``max_error``
            (near-lossless: each sample within that many units of the source, for u8, u16,
            u32 and i32 samples; 0 is lossless), ``codec`` (``"entropy"``, small files, or
            ``"quick"``, larger files that decode several times faster), ``checksum`` (cSUM),
            ``icc_profile``/``exif``/``xmp`` (bytes stored as they are), ``science`` (the
            science records of the IMI specification, version 2, section 1.5), ``layout``
            (``"Gray"`` ... ``"OklabAlpha"``; by default from the channel count), ``threads``,
            ``dpi``, ``previews``, ``cicp``, ``sig_bits``. A name that is not an option raises
            ``TypeError`` naming it; a bad value ``ValueError`` naming the option.

        Returns
        -------
        encoded_image : bytes or None
            The file's bytes when the target is ``"<bytes>"``, else None.

        Notes
        -----
        One ``write`` call writes the whole file; a second call on the same open plugin
        raises ``RuntimeError`` (pass every frame in one call, as a list or with
        ``is_batch=True``). The file is encoded in memory before the target is opened, so a
        write that fails while encoding leaves an existing file untouched.
        """
        misnamed = sorted({"duration", "fps"} & set(options))
        if misnamed:
            raise TypeError(f"write() got unexpected keyword arguments: {', '.join(misnamed)} "
                            "(IMI takes durations= in seconds, one value or one per frame)")
        if self.request.mode.io_mode != IOMode.write:
            raise ValueError("this IMI plugin was opened for reading: open the target with mode 'w' to write")
        if self._written:
            raise RuntimeError("this IMI target was already written: pass every frame or page to one write() call")
        if pages and options.setdefault("kind", "pages") not in ("pages", "mixed pages"):
            raise ValueError(f"pages=True writes pages, not kind={options['kind']!r}")
        images = _images_to_write(ndimage, is_batch)
        # before the target is opened: a failed encode leaves it alone; the core checks the options
        data = api.encode(images, durations=_durations(durations), **options)
        self._written = True
        if self.request._uri_type == URI_BYTES:  # as imageio's tifffile_v3 and pillow plugins check it
            return data
        self.request.get_file().write(data)
        return None

    def properties(self, index: Index = None) -> ImageProperties:
        """Shape and dtype of what ``read(index=index)`` returns, from the headers alone.

        No pixels are decoded and the checksum is not verified. ``index`` follows the rule
        in :meth:`read`; for a stack ``n_images`` is the number of frames or pages and
        ``is_batch`` is True. Mixed pages have no stacked shape: ``index=...`` raises
        ``ValueError`` for them, as ``read`` does.
        """
        f = self._file(verify=False)
        index = _default_index(f, index)
        if index is Ellipsis:
            _check_stackable(f)
            first = f.image_info(0)
            return ImageProperties(
                shape=(f.n_frames, *_out_shape(first)), dtype=first.dtype, n_images=f.n_frames, is_batch=True
            )
        described = f.image_info(_frame_index(f, index))
        return ImageProperties(shape=_out_shape(described), dtype=described.dtype, is_batch=False)

    def metadata(
        self, index: Index = None, exclude_applied: bool = True
    ) -> dict[str, Any]:
        """IMI metadata as plain Python values; no pixels are decoded.

        Parameters
        ----------
        index : int, ..., or None
            ``None`` or ``...``: the file's metadata (PluginV3: "If the index is None, then
            global metadata is returned"). ``int``: that frame's or page's own.
        exclude_applied : bool
            Accepted for the v3 API. ``read`` applies nothing (orientation, CICP, ICC and
            alpha mode are reported, not applied), so nothing is excluded.

        Returns
        -------
        metadata : dict
            File level: ``kind`` (None, "animation", "pages", "mixed pages"), ``n_images``,
            ``loop`` (animation plays, 0 forever), the header's ``width``, ``height``,
            ``layout``, ``sample`` ("u8" ... "f64"), ``coding``, ``orientation`` (1-8, not
            applied), ``cicp`` (primaries, transfer, matrix, full_range), ``sig_bits``,
            ``alpha_mode``, ``decode_speed``, ``features``, ``profiles``; ``icc_profile``,
            ``exif``, ``xmp`` (bytes, when present); ``checksum`` ("verified" or "absent");
            ``unknown_chunks`` (tags of ancillary chunks the core does not interpret).
            Per frame or page: ``index``, ``duration`` (seconds, a ``Fraction``), ``x``,
            ``y``, ``width``, ``height`` (the stored rectangle), ``uses_previous``,
            ``empty``, and ``header`` (that image's header fields as above, None for an
            empty frame), plus the image's own ``icc_profile``/``exif``/``xmp``.
        """
        f = self._file(verify=True)
        if index is None or index is Ellipsis:
            return _file_metadata(f)
        return _frame_metadata(f, _frame_index(f, index))

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()
        self._source = None
        self._closed = True
        super().close()

    # -------
    # helpers
    # -------

    def _file(self, verify: bool) -> api.ImijFile:
        """The opened file, parsed once per verify setting: a local file by its path (the core
        maps it), other resources read once."""
        if self._closed:
            raise ValueError("I/O operation on a closed IMI plugin")
        if self.request.mode.io_mode != IOMode.read:
            raise ValueError("this IMI plugin was opened for writing: open the file with mode 'r' to read")
        f = self._files.get(True)
        if f is None and not verify:
            f = self._files.get(False)
        if f is None:
            if self._source is None:
                local = self.request._uri_type == URI_FILENAME  # as imageio's tifffile plugin tells files apart
                self._source = self.request.get_local_filename() if local else self.request.get_file().read()
            f = self._files[verify] = api.open(self._source, verify=verify)
        return f

    @staticmethod
    def _read_one(f: api.ImijFile, i: int, region: Region | None, threads: int | None) -> np.ndarray:
        image = f.read(i, region=region, threads=threads)
        if f.image_info(i).layout == "Gray":
            return image.reshape(image.shape[:2])
        return image


def _default_index(f: api.ImijFile, index: Any) -> Any:
    """``index=None``: all frames of an animation, else image 0 (the rule in ``read``)."""
    if index is None:
        return Ellipsis if f.kind == "animation" else 0
    return index


def _frame_index(f: api.ImijFile, index: Any) -> int:
    if isinstance(index, bool):
        raise TypeError(f"index must be None, an int or ..., not {index!r}")
    try:
        i = operator.index(index)
    except TypeError:
        raise TypeError(f"index must be None, an int or ..., not {index!r}") from None
    n = f.n_frames
    if not -n <= i < n:
        raise ImiIndexError(f"index {index} is out of range: the file holds {n} image{'s' if n > 1 else ''}")
    return i + n if i < 0 else i


def _out_shape(described: api.ImageInfo) -> tuple[int, ...]:
    return described.shape[:2] if described.layout == "Gray" else described.shape


def _check_stackable(f: api.ImijFile) -> None:
    """Pages stack only when they agree in shape and dtype (read from their headers)."""
    if f.kind == "animation":
        return
    specs = {(_out_shape(d), d.dtype) for d in (f.image_info(i) for i in range(f.n_frames))}
    if len(specs) > 1:
        listed = ", ".join(f"{shape} {dtype}" for shape, dtype in sorted(specs, key=str))
        raise ValueError(
            f"index=...: the {f.n_frames} pages differ in shape or dtype ({listed}) and cannot be "
            "stacked; read them one at a time with iter() or read(index=i)"
        )


def _images_to_write(ndimage: Any, is_batch: bool) -> np.ndarray | list[np.ndarray]:
    """One array, or a list of them for a batch (a list or tuple is always a batch)."""
    if isinstance(ndimage, (list, tuple)):
        frames = [np.asarray(x) for x in ndimage]
    elif is_batch:
        batch = np.asarray(ndimage)
        if batch.ndim not in (3, 4):
            raise ValueError(f"is_batch=True needs an (N, H, W) or (N, H, W, C) array, got shape {batch.shape}")
        frames = list(batch)
    else:
        image = np.asarray(ndimage)
        if image.ndim == 4:
            raise ValueError(f"a 4-D array {image.shape} is a batch: pass is_batch=True (or a list of images)")
        return image
    if not frames:
        raise ValueError("nothing to write: the batch is empty")
    return frames


def _durations(durations: Any) -> Any:
    """Seconds as the core takes them: one number, or a list (from any sequence or array)."""
    if durations is None:
        return 0
    return durations if isinstance(durations, numbers.Real) else list(durations)


def _header_fields(image: api.ImijFile) -> dict[str, Any]:
    """``image``'s own header, as plain values."""
    described = image.image_info()
    return {
        "width": described.width,
        "height": described.height,
        "layout": described.layout,
        "sample": described.sample,
        "coding": described.coding,
        "orientation": described.orientation,
        "cicp": described.cicp,
        "sig_bits": described.sig_bits,
        "alpha_mode": described.alpha_mode,
        "decode_speed": described.decode_speed,
        "features": list(image.features),
        "profiles": list(image.profiles),
    }


def _file_metadata(f: api.ImijFile) -> dict[str, Any]:
    meta: dict[str, Any] = {"kind": f.kind, "n_images": f.n_frames, "loop": f.loop_count}
    meta.update(_header_fields(f))
    meta.update({key: _plain(value) for key, value in f.metadata.items()})
    meta["checksum"] = f.checksum_status
    meta["pixel_checksum"] = [f.bitmap_status(i) for i in range(f.n_frames)]
    meta["unknown_chunks"] = [tag.decode("latin-1") for tag, _, _ in f.extra_chunks()]
    return meta


def _frame_metadata(f: api.ImijFile, i: int) -> dict[str, Any]:
    info = f.frame_info(i)
    meta: dict[str, Any] = {
        "index": info.index,
        "duration": info.duration,
        "x": info.x,
        "y": info.y,
        "width": info.width,
        "height": info.height,
        "uses_previous": info.uses_previous,
        "empty": info.empty,
        "header": None,
    }
    if not info.empty:
        image = f.page(i)
        meta["header"] = _header_fields(image)
        meta.update({key: _plain(value) for key, value in image.metadata.items()})
    return meta


def _plain(value: Any) -> Any:
    """Typed metadata records as plain dicts, lists and numbers (science records with their reports)."""
    if hasattr(value, "to_plain"):
        return value.to_plain()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
