"""imij_plugins: the IMI image format (.imi) and IMIJ-Set archives for Python.

``open``/``read``/``write`` are the core API; the Pillow and imageio adapters call them.
"""

from imij_plugins import _backend
from imij_plugins.api import (
    EncodeOptions,
    Failure,
    Frame,
    FrameInfo,
    ImageInfo,
    ImijFile,
    Limits,
    encode,
    is_imi,
    open,
    read,
    write,
)
from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported
from imij_plugins.imageio import register_imageio
from imij_plugins.pillow import register_pillow

__all__ = [
    "Corrupt",
    "EncodeOptions",
    "Failure",
    "Frame",
    "FrameInfo",
    "ImageInfo",
    "ImiPlugin",
    "ImijError",
    "ImijFile",
    "Limits",
    "TooLarge",
    "Unsupported",
    "backend",
    "encode",
    "is_imi",
    "open",
    "read",
    "register_imageio",
    "register_pillow",
    "write",
]

# Neither Pillow nor imageio reads entry points (ECOSYSTEM.md section 3): importing registers.
for _register in (register_pillow, register_imageio):
    try:
        _register()
    except ImportError:  # that library is not installed: nothing to register with
        pass
del _register


def __getattr__(name: str) -> object:
    if name == "backend":  # live: tests switch backends with _backend.use()
        return _backend.active()
    if name == "ImiPlugin":  # imports imageio's plugin base only when asked for
        from imij_plugins.imageio.plugin import ImiPlugin

        return ImiPlugin
    raise AttributeError(f"module 'imij_plugins' has no attribute {name!r}")
