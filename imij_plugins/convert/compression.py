"""How TIFF and OME-TIFF outputs are compressed: tifffile's arguments for ``--compression``.

tifffile writes deflate (zlib) and LZMA with the standard library; zstd and the floating-point
predictor need imagecodecs. Integer samples get the horizontal-differencing predictor (TIFF
predictor 2), floats the floating-point one (predictor 3) when imagecodecs is installed.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

TIFF_COMPRESSIONS = ("deflate", "zstd", "lzma", "none")
DEFAULT_COMPRESSION = "deflate"
_TIFFFILE_NAMES = {"deflate": "zlib", "zstd": "zstd", "lzma": "lzma", "none": None}
_NEEDS_CODECS = frozenset({"zstd"})


def has_imagecodecs() -> bool:
    """Whether imagecodecs is installed (tifffile then reads and writes its codecs)."""
    return importlib.util.find_spec("imagecodecs") is not None


def check_compression(name: str) -> None:
    """ValueError for an unknown name, or one whose codec needs imagecodecs when it is missing."""
    if name not in TIFF_COMPRESSIONS:
        raise ValueError(f"TIFF compression {name!r}: use one of {', '.join(TIFF_COMPRESSIONS)}")
    if name in _NEEDS_CODECS and not has_imagecodecs():
        raise ValueError(f"TIFF compression {name} needs imagecodecs (pip install imagecodecs); deflate needs nothing")


def tiff_arguments(name: str, dtype: np.dtype) -> dict[str, Any]:
    """tifffile ``write`` keywords for compression ``name`` of samples of ``dtype``."""
    check_compression(name)
    compression = _TIFFFILE_NAMES[name]
    if compression is None:
        return {}
    if dtype.kind in "ui":
        return {"compression": compression, "predictor": "horizontal"}
    if dtype.kind == "f" and has_imagecodecs():
        return {"compression": compression, "predictor": "floatingpoint"}
    return {"compression": compression}
