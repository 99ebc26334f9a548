"""imij_plugins: the IMI image format (.imi) and IMIJ-Set archives for Python.

``open``/``read``/``write`` are the core API; the Pillow and imageio adapters call them.
"""

from imij_plugins import _backend
from imij_plugins.api import FrameInfo, ImijFile, Limits, encode, open, read, write
from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported

__all__ = [
    "Corrupt",
    "FrameInfo",
    "ImijError",
    "ImijFile",
    "Limits",
    "TooLarge",
    "Unsupported",
    "backend",
    "encode",
    "open",
    "read",
    "write",
]


def __getattr__(name: str) -> str:
    if name == "backend":  # live: tests switch backends with _backend.use()
        return _backend.active()
    raise AttributeError(f"module 'imij_plugins' has no attribute {name!r}")
