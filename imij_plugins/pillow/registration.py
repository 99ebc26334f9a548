"""Registers IMI with Pillow without loading the codec: each entry imports the real plugin on first use.

Pillow finds a format through its registries: open (with an accept check), save, save_all, file
extension and MIME type. ``register`` fills them with stand-ins that import ``ImiImagePlugin``
(numpy and the codec) when an ``.imi`` file is first opened or saved; that import registers the
real entries in their place. So the autoload hook at ``import PIL.Image``, ``import imij_plugins``
and ``register_pillow()`` cost a few small imports. The accept check is the signature test itself,
which imports nothing.
"""

import sys

from PIL import Image

from imij_plugins.signature import is_imi

TYPE_CHECKING = False  # no typing import on this path (Pillow 9 does not import it): see _imij_pillow_autoload
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import IO

    SaveHandler = Callable[[Image.Image, IO[bytes], "str | bytes"], None]

FORMAT = "IMI"
EXTENSION = ".imi"
MIME = "image/x.imi"  # no registered type; the spec names its own unregistered types in the x. tree
PLUGIN = "imij_plugins.pillow.ImiImagePlugin"


def register() -> None:
    """Register IMI with Pillow: the real plugin's entries once it is loaded, else the stand-ins; idempotent."""
    plugin = sys.modules.get(PLUGIN)
    if plugin is not None:
        # a plugin still being imported (it imported PIL.Image, which ran this) registers itself last
        if hasattr(plugin, "_register"):
            plugin._register()
        return
    register_entries(_open, is_imi, _save, _save_all)


def register_entries(
    factory: "Callable[..., Image.Image]", accept: "Callable[[bytes], bool]", save: "SaveHandler", save_all: "SaveHandler"
) -> None:
    """Put IMI's open factory, accept check, save handlers, extension and MIME type in Pillow's registries.

    Pillow before 10 appends the format to ``Image.ID`` on every ``register_open``: registering again
    (stand-ins, then the plugin) would list IMI several times, so an entry already listed is replaced.
    """
    if FORMAT in Image.ID:
        Image.OPEN[FORMAT] = (factory, accept)
    else:
        Image.register_open(FORMAT, factory, accept)
    Image.register_save(FORMAT, save)
    Image.register_save_all(FORMAT, save_all)
    Image.register_extension(FORMAT, EXTENSION)
    Image.register_mime(FORMAT, MIME)


def _plugin() -> "ModuleType":
    """The real plugin; importing it the first time replaces these stand-ins with its own entries."""
    from imij_plugins.pillow import ImiImagePlugin

    return ImiImagePlugin


def _open(fp: "IO[bytes]", filename: "str | bytes") -> "Image.Image":
    """Pillow's open factory: the real plugin's image file."""
    return _plugin().ImiImageFile(fp, filename)


def _save(im: "Image.Image", fp: "IO[bytes]", filename: "str | bytes") -> None:
    """Pillow's save handler: the real plugin's."""
    _plugin()._save(im, fp, filename)


def _save_all(im: "Image.Image", fp: "IO[bytes]", filename: "str | bytes") -> None:
    """Pillow's save_all handler: the real plugin's."""
    _plugin()._save_all(im, fp, filename)
