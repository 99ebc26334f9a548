"""imij_plugins: the IMI image format (.imi) and IMIJ-Set archives for Python.

``open``/``read``/``write`` are the core API; the Pillow and imageio adapters call them.

Importing the package is cheap: each name below loads its module on first use (PEP 562), and so
does each submodule (``imij_plugins.pillow``...). Pillow and imageio read no entry points, so
importing also registers IMI with both, without importing them: at once for one the program has
already imported, else when it does (``_imij_pillow_autoload.when_imported``).
"""

import sys

import _imij_pillow_autoload as _hooks  # importing it registers with Pillow now or at ``import PIL.Image``
from imij_plugins._version import __version__ as __version__

TYPE_CHECKING = False  # no typing import: the Pillow autoload hook imports this package at ``import PIL.Image``
if TYPE_CHECKING:
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
    from imij_plugins.imageio.plugin import ImiPlugin
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

_HOMES = {  # public name -> the module that defines it
    **dict.fromkeys(
        ["EncodeOptions", "Failure", "Frame", "FrameInfo", "ImageInfo", "ImijFile", "Limits", "encode", "is_imi", "open", "read", "write"],
        "imij_plugins.api",
    ),
    **dict.fromkeys(["Corrupt", "ImijError", "TooLarge", "Unsupported"], "imij_plugins.errors"),
    "ImiPlugin": "imij_plugins.imageio.plugin",  # imports imageio
    "register_imageio": "imij_plugins.imageio",
    "register_pillow": "imij_plugins.pillow",
}

_hooks.when_imported(_hooks.IMAGEIO, _hooks.register_with_imageio)


def _module(name: str) -> object:
    """Module ``name``, imported as an import statement does (``-X importtime`` reports it, unlike importlib's)."""
    __import__(name)
    return sys.modules[name]


def __getattr__(name: str) -> object:
    """A public name or a submodule, imported on first use (the core, with its C kernels, loads here)."""
    if name == "backend":  # live: tests switch backends with _backend.use()
        return _module("imij_plugins._backend").active()  # type: ignore[attr-defined]
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(_module(home), name)
        globals()[name] = value  # the next lookup is a plain attribute
        return value
    if not name.startswith("__"):
        try:
            return _module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the lazy ones, for ``dir()`` and completion."""
    return sorted({*globals(), *__all__})
