"""imageio v3 plugin for IMIJ-Set archives (``.imijset``): each entry is one image.

``index`` is an entry's position in key order; ``iter()`` walks the entries; ``metadata()``
gives keys, filenames and attributes; ``iio.imwrite("x.imijset", images)`` writes one entry
per image (keys 0, 1, ...). Pixels come from the entries' IMI files through the core.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import numpy as np
from imageio.core.request import URI_BYTES, InitializationError, IOMode, Request
from imageio.core.v3_plugin_api import ImageProperties, PluginV3

from imij_plugins import api, imijset
from imij_plugins.errors import ImijError
from imij_plugins.registry.samples import LAYOUTS, SAMPLE_TYPES

if TYPE_CHECKING:
    from typing_extensions import Unpack

EXTENSION = ".imijset"


def _shaped(image: np.ndarray) -> np.ndarray:
    """Gray as (H, W), like the IMI plugin."""
    return image[:, :, 0] if image.shape[2] == 1 else image


class ImijSetPlugin(PluginV3):
    """Read and write IMIJ-Set archives; refuses requests that are not ``.imijset``."""

    def __init__(self, request: Request) -> None:
        super().__init__(request)
        self._archive: imijset.Archive | None = None
        if request.extension != EXTENSION and request.format_hint != EXTENSION:
            raise InitializationError(f"not an IMIJ-Set target: {request.raw_uri!r}")
        if request.mode.io_mode == IOMode.read:
            try:
                self._archive = imijset.open(request.get_local_filename(), "r")
                self._keys = list(self._archive.keys())
            except (ImijError, OSError) as exc:
                raise InitializationError(f"not a readable IMIJ-Set archive: {exc}") from exc

    def _key(self, index: int) -> int:
        if not -len(self._keys) <= index < len(self._keys):
            raise IndexError(f"entry {index} out of range (archive has {len(self._keys)})")
        return self._keys[index]

    def read(self, *, index: int | EllipsisType | None = None, **options: Any) -> np.ndarray:
        """Entry ``index`` (position in key order); ``None`` or ``...`` stacks every entry.

        Stacking needs one shape and dtype; otherwise use ``iter()``.
        """
        if self._archive is None:
            raise ValueError("this IMIJ-Set target was opened for writing")
        if isinstance(index, int):
            return _shaped(self._archive.read(self._key(index), **options))
        images = [_shaped(self._archive.read(key, **options)) for key in self._keys]
        if len({(a.shape, a.dtype) for a in images}) > 1:
            raise ValueError("the entries differ in shape or dtype: read them one at a time with iter()")
        return np.stack(images) if images else np.empty((0,))

    def iter(self, **options: Any) -> Iterator[np.ndarray]:
        for key in self._keys:
            yield _shaped(self._archive.read(key, **options))  # type: ignore[union-attr]

    def properties(self, index: int | EllipsisType | None = None) -> ImageProperties:
        """Shape and dtype from the entries' summaries (no pixel is decoded)."""
        if self._archive is None:
            raise ValueError("this IMIJ-Set target was opened for writing")
        entries = [self._archive.entry(k) for k in (self._keys if not isinstance(index, int) else [self._key(index)])]
        shapes = set()
        for e in entries:
            s = e.summary
            channels = LAYOUTS[s.channels].channels if s.channels in LAYOUTS else 0
            shape = (s.height, s.width) if channels == 1 else (s.height, s.width, channels)
            shapes.add((shape, np.dtype(SAMPLE_TYPES[s.sample].dtype) if s.sample in SAMPLE_TYPES else np.dtype("u1")))
        if isinstance(index, int):
            (shape, dtype), = shapes
            return ImageProperties(shape=shape, dtype=dtype, n_images=None, is_batch=False)
        if len(shapes) != 1:
            raise ValueError("the entries differ in shape or dtype: ask for one entry with index=")
        (shape, dtype), = shapes
        return ImageProperties(shape=(len(entries), *shape), dtype=dtype, n_images=len(entries), is_batch=True)

    def metadata(self, index: int | EllipsisType | None = None, exclude_applied: bool = True) -> dict[str, Any]:
        """Archive level: keys, filenames and attributes of every entry; one entry's for an int."""
        if self._archive is None:
            raise ValueError("this IMIJ-Set target was opened for writing")
        if isinstance(index, int):
            e = self._archive.entry(self._key(index))
            return {"key": e.key, "filename": e.filename, "attributes": e.attributes, "cicp": e.cicp, "length": e.length}
        entries = [self._archive.entry(k) for k in self._keys]
        return {
            "keys": list(self._keys),
            "filenames": [e.filename for e in entries],
            "attributes": [e.attributes for e in entries],
            "generation": self._archive.generation,
        }

    def write(
        self, ndimage: np.ndarray | list, *, is_batch: bool = False, **imi_options: Unpack[api.EncodeKeywords]
    ) -> bytes | None:
        """One entry per image (keys 0, 1, ...); ``imi_options`` are ``imij_plugins.EncodeOptions``' fields,
        checked before any image is coded."""
        options = api.EncodeOptions(**imi_options)
        images = list(ndimage) if is_batch or isinstance(ndimage, (list, tuple)) else [ndimage]
        blobs = [api.encode(np.asarray(a), options) for a in images]
        if self.request._uri_type == URI_BYTES:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "out.imijset")
                self._write_archive(path, blobs)
                with open(path, "rb") as f:
                    return f.read()
        self._write_archive(self.request.get_local_filename(), blobs)
        return None

    @staticmethod
    def _write_archive(path: str, blobs: list[bytes]) -> None:
        with imijset.open(path, "w") as archive:
            for key, blob in enumerate(blobs):
                archive.append(key, blob)

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()
            self._archive = None
        super().close()
