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
import sys
from types import EllipsisType
from typing import Any, Iterator, Sequence, Union

import numpy as np
from imageio.core.request import URI_BYTES, InitializationError, IOMode, Request
from imageio.core.v3_plugin_api import ImageProperties, PluginV3

import imij_plugins
from imij_plugins.container.file import is_imi
from imij_plugins.container.metadata import ScienceRecords
from imij_plugins.reader import ImijFile

__all__ = ["ImiIndexError", "ImiPlugin"]

Region = tuple[int, int, int, int]
Index = Union[int, EllipsisType, None]


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
        On read, when the resource does not start with the IMI signature. On write, when
        imageio reaches this plugin in its search for a target that is not ``.imi`` (an
        unregistered ``.png`` say); naming the plugin (``plugin=ImiPlugin`` or
        ``plugin="IMI"``) or ``extension=".imi"`` writes IMI to any target.

    Notes
    -----
    A file is parsed and checked on the first ``read``, ``iter``, ``properties`` or
    ``metadata`` call, so a damaged IMI file raises the core's typed error
    (:class:`imij_plugins.Corrupt`, ``Unsupported``, ``TooLarge``; all ``ValueError``) from
    that call rather than an imageio "can not handle" error.
    """

    def __init__(self, request: Request) -> None:
        super().__init__(request)
        self._data: bytes | None = None
        self._files: dict[bool, ImijFile] = {}  # keyed by verify: a verified file serves both
        self._written = False
        self._closed = False
        if request.mode.io_mode == IOMode.read:
            if not is_imi(request.firstbytes):
                raise InitializationError(f"`{request.filename}` is not an IMI file (no IMI signature)")
        elif request.extension != ".imi" and _searched_by_imopen():
            raise InitializationError(
                f"the IMI plugin writes .imi files, not `{request.extension}`: name it with "
                "plugin= or pass extension='.imi' to write IMI there anyway"
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
        durations: float | Sequence[float] | None = None,
        loop: int = 0,
        pages: bool = False,
        effort: int = 5,
        max_error: float = 0,
        codec: str = "entropy",
        checksum: bool = False,
        icc_profile: bytes | None = None,
        exif: bytes | None = None,
        xmp: bytes | None = None,
        science: Any = None,
        layout: str | int | None = None,
        threads: int | None = None,
        **unknown: Any,
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
        durations : float or list of float, optional
            Display time of each frame or page in **seconds** (one value for all, or one
            per image); 0 when omitted.
        loop : int
            Animation plays; 0 loops forever.
        pages : bool
            Write a batch as pages instead of an animation. Pages may differ in shape and
            dtype (mixed pages); animation frames must share one shape and dtype.
        effort : int
            Encoder effort, as in :func:`imij_plugins.encode`.
        max_error : number
            Near-lossless coding: each sample may differ from the source by up to
            ``max_error`` (0, the default, is lossless). Bounds exist for u8, u16, u32 and
            i32 samples (spec 2.6); other sample types are written exactly.
        codec : str
            ``"entropy"`` (small files, the default) or ``"quick"`` (quick-pixel units:
            larger files that decode several times faster).
        checksum : bool
            Add a file checksum (cSUM) that readers verify.
        icc_profile, exif, xmp : bytes, optional
            Metadata payloads stored as they are.
        science : dict, optional
            Science records (1.5) as keyword arguments of
            ``imij_plugins.container.metadata.science_chunks``: ``calibration``, ``axes``,
            ``coordinates``, ``categories``, ``structured``.
        layout : str or int, optional
            Channel layout (``"Gray"``, ``"GrayAlpha"``, ``"RGB"``, ``"RGBA"``, ``"CMYK"``,
            ``"Oklab"``, ``"OklabAlpha"``); by default from the channel count (1-4 ->
            Gray, GrayAlpha, RGB, RGBA).
        threads : int, optional
            Encoder threads.

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
        if unknown:
            raise TypeError(_unknown_write_arguments(unknown))
        if self.request.mode.io_mode != IOMode.write:
            raise ValueError("this IMI plugin was opened for reading: open the target with mode 'w' to write")
        if self._written:
            raise RuntimeError("this IMI target was already written: pass every frame or page to one write() call")
        images = _images_to_write(ndimage, is_batch, pages)
        options = dict(
            layout=layout,
            effort=effort,
            max_error=max_error,
            codec=codec,
            checksum=checksum,
            icc_profile=icc_profile,
            exif=exif,
            xmp=xmp,
            durations=_durations(durations),
            loop=loop,
            kind="pages" if pages else "animation",
            threads=threads,
            science=science,
        )
        data = imij_plugins.encode(images, **options)  # before the target is opened: a failed encode leaves it alone
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
            return ImageProperties(
                shape=(f.n_frames, *_out_shape(f)), dtype=f.dtype, n_images=f.n_frames, is_batch=True
            )
        image = _stored_image(f, _frame_index(f, index))
        return ImageProperties(shape=_out_shape(image), dtype=image.dtype, is_batch=False)

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
        self._data = None
        self._closed = True
        super().close()

    # -------
    # helpers
    # -------

    def _file(self, verify: bool) -> ImijFile:
        """The opened file, parsed once per verify setting; the bytes are read once."""
        if self._closed:
            raise ValueError("I/O operation on a closed IMI plugin")
        if self.request.mode.io_mode != IOMode.read:
            raise ValueError("this IMI plugin was opened for writing: open the file with mode 'r' to read")
        f = self._files.get(True)
        if f is None and not verify:
            f = self._files.get(False)
        if f is None:
            if self._data is None:
                self._data = self.request.get_file().read()
            f = self._files[verify] = imij_plugins.open(self._data, verify=verify)
        return f

    @staticmethod
    def _read_one(f: ImijFile, i: int, region: Region | None, threads: int | None) -> np.ndarray:
        image = f.read(i, region=region, threads=threads)
        if _stored_image(f, i).layout == "Gray":
            return image.reshape(image.shape[:2])
        return image


def _searched_by_imopen() -> bool:
    """Whether imopen is trying this plugin in its search rather than building the one named.

    imopen builds a plugin named with ``plugin=`` (a name or a class) inside its nested
    ``loader`` function, and the candidates of its extension search and of its try-every-plugin
    fallback straight from its own body (imageio 2.38 core/imopen.py lines 129-138 against 196
    and 234). The frame two levels up, the caller of ``ImiPlugin.__init__``, tells which; a
    caller outside imopen (a subclass, direct construction) counts as naming the plugin.
    """
    caller = sys._getframe(2)
    return caller.f_globals.get("__name__") == "imageio.core.imopen" and caller.f_code.co_name != "loader"


def _default_index(f: ImijFile, index: Any) -> Any:
    """``index=None``: all frames of an animation, else image 0 (the rule in ``read``)."""
    if index is None:
        return Ellipsis if f.kind == "animation" else 0
    return index


def _frame_index(f: ImijFile, index: Any) -> int:
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


def _stored_image(f: ImijFile, i: int) -> ImijFile:
    """The file whose header describes what ``read(i)`` returns: the canvas's for animations."""
    return f if f.kind == "animation" or i == 0 else f.page(i)


def _out_shape(image: ImijFile) -> tuple[int, ...]:
    return image.shape[:2] if image.layout == "Gray" else image.shape


def _check_stackable(f: ImijFile) -> None:
    """Pages stack only when they agree in shape and dtype (read from their headers)."""
    if f.kind == "animation":
        return
    specs = {(_out_shape(p), p.dtype) for p in (f.page(i) for i in range(f.n_frames))}
    if len(specs) > 1:
        listed = ", ".join(f"{shape} {dtype}" for shape, dtype in sorted(specs, key=str))
        raise ValueError(
            f"index=...: the {f.n_frames} pages differ in shape or dtype ({listed}) and cannot be "
            "stacked; read them one at a time with iter() or read(index=i)"
        )


def _images_to_write(ndimage: Any, is_batch: bool, pages: bool) -> np.ndarray | list[np.ndarray]:
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
    if not pages:
        kinds = {(x.shape + (1,) if x.ndim == 2 else x.shape, x.dtype) for x in frames}
        if len(kinds) > 1:
            raise ValueError(
                "animation frames must share one shape and dtype; pass pages=True to write "
                "images of different shapes or dtypes as (mixed) pages"
            )
    return frames


def _durations(durations: Any) -> Any:
    """Seconds as the core takes them: one number, or a list (from any sequence or array)."""
    if durations is None:
        return 0
    return durations if isinstance(durations, numbers.Real) else list(durations)


def _unknown_write_arguments(unknown: dict[str, Any]) -> str:
    names = ", ".join(sorted(unknown))
    msg = f"write() got unexpected keyword arguments: {names}"
    if "duration" in unknown or "fps" in unknown:
        msg += " (IMI takes durations= in seconds, one value or one per frame)"
    return msg


def _header_fields(image: ImijFile) -> dict[str, Any]:
    h = image.header
    return {
        "width": image.width,
        "height": image.height,
        "layout": image.layout,
        "sample": h.sample_type.name,
        "coding": h.coding,
        "orientation": h.orientation,
        "cicp": tuple(h.effective_cicp),
        "sig_bits": tuple(h.effective_sig_bits),
        "alpha_mode": h.alpha_mode,
        "decode_speed": h.decode_speed,
        "features": list(image.features),
        "profiles": list(image.profiles),
    }


def _file_metadata(f: ImijFile) -> dict[str, Any]:
    meta: dict[str, Any] = {"kind": f.kind, "n_images": f.n_frames, "loop": f.loop_count}
    meta.update(_header_fields(f))
    meta.update({key: _plain(value) for key, value in f.metadata.items()})
    meta["checksum"] = f.checksum_status
    meta["pixel_checksum"] = [f.bitmap_status(i) for i in range(f.n_frames)]
    meta["unknown_chunks"] = [tag.decode("latin-1") for tag, _, _ in f.extra_chunks()]
    return meta


def _frame_metadata(f: ImijFile, i: int) -> dict[str, Any]:
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
    if isinstance(value, ScienceRecords):
        return {
            "calibration": _plain(value.calibration),
            "axes": _plain(value.axes),
            "coordinates": _plain(value.coordinates),
            "categories": _plain(value.categories),
            "structured": [_plain(s) for s in value.structured],
            "reports": [{"tag": r.tag.decode("latin-1"), "status": r.status, "reason": r.reason} for r in value.reports],
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
