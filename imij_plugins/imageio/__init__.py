"""imageio v3 support: the ``ImiPlugin`` class and ``register_imageio()``.

imageio has no entry points: a third-party plugin is found only through the two dicts in
``imageio.config`` (``known_plugins``, ``known_extensions``), which ``register_imageio()``
updates in place. Until it runs, ``iio.imwrite("x.imi", a)`` falls through to a plugin that
writes a TIFF into ``x.imi``; ``iio.imread(path, plugin=ImiPlugin)`` works either way.

Nothing here imports imageio until it is used, so ``import imij_plugins.imageio`` cannot fail.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PLUGIN_NAME", "ImiPlugin", "register_imageio"]

PLUGIN_NAME = "IMI"  # upper case: imageio.v2 also finds plugins by format.upper()
EXTENSION = ".imi"
ARCHIVE_PLUGIN = "IMIJSET"
ARCHIVE_EXTENSION = ".imijset"


def register_imageio() -> None:
    """Make imageio choose the IMI plugin for ``.imi`` files; calling it again changes nothing.

    Adds ``PluginConfig("IMI")`` to ``imageio.config.known_plugins`` (imported lazily, on
    first use) and puts ``"IMI"`` first in the priority of ``.imi`` in ``known_extensions``,
    creating that entry when imageio has none.

    ``"IMI"`` also goes first in ``known_plugins``, the order of imopen's try-every-plugin
    fallback (bytes, file objects, unknown extensions). Otherwise imageio's Pillow plugin,
    once Pillow knows IMI, takes IMI bytes first and refuses the sample types Pillow has no
    mode for. Trying IMI first costs other formats one signature check on read, and nothing
    on write (the plugin refuses non-.imi targets it was not named for).
    """
    from imageio.config import FileExtension, PluginConfig, known_extensions, known_plugins

    config = PluginConfig(name=PLUGIN_NAME, class_name="ImiPlugin", module_name="imij_plugins.imageio.plugin")
    others = [(name, cfg) for name, cfg in known_plugins.items() if name != PLUGIN_NAME]
    known_plugins.clear()  # in place: imopen imported this very dict
    known_plugins[PLUGIN_NAME] = config
    known_plugins.update(others)
    known_plugins[ARCHIVE_PLUGIN] = PluginConfig(
        name=ARCHIVE_PLUGIN, class_name="ImijSetPlugin", module_name="imij_plugins.imageio.archive_plugin"
    )
    for extension, name, description in (
        (EXTENSION, PLUGIN_NAME, "IMI image: lossless samples of 8 to 64 bits, animations and pages (imij_plugins)"),
        (ARCHIVE_EXTENSION, ARCHIVE_PLUGIN, "IMIJ-Set archive of IMI images (imij_plugins)"),
    ):
        formats = known_extensions.setdefault(extension, [])
        for fmt in formats:
            fmt.priority[:] = [n for n in fmt.priority if n != name]
        if formats:
            formats[0].priority.insert(0, name)
        else:
            formats.append(FileExtension(extension=extension, priority=[name], name=name, description=description))


def __getattr__(name: str) -> Any:
    if name == "ImiPlugin":  # imports imageio
        from imij_plugins.imageio.plugin import ImiPlugin

        return ImiPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
