"""Pillow adapter for the IMI format: ``Image.open``/``save``/``save_all`` for ``.imi`` files.

Pillow reads no entry points: a plugin is found only once its module has been imported. Any of
these registers it (each is idempotent and decodes nothing)::

    import imij_plugins                        # registers when (or once) the program imports PIL.Image
    imij_plugins.pillow.register_pillow()      # explicit, with options
    import imij_plugins.pillow.ImiImagePlugin  # the Pillow handbook's module-per-format naming

The first two register small stand-ins (``imij_plugins.pillow.registration``) that load the plugin,
numpy and the codec on the first ``.imi`` open or save.

Programs that never import this package: ``imij pillow-autoload enable`` installs an opt-in
start-up hook that registers IMI when ``PIL.Image`` is first imported. ``spawn`` process pools:
``Pool(initializer=imij_plugins.pillow.register_pillow)``, since workers are new interpreters.
Both are described in docs/PILLOW_AUTOLOAD.md.

Options (keyword arguments of ``register_pillow``; they set module globals of ``ImiImagePlugin``,
since ``Image.open`` takes no decoder options, Pillow issue #569):

``decode_threads``
    threads the core may use to decode one frame in ``load()`` (default None: the core's choice).
``verify_checksums``
    check the file checksum (cSUM) while opening (default True). ``verify()`` always checks it.
"""

TYPE_CHECKING = False  # no typing import: the autoload hook imports this package at ``import PIL.Image``
if TYPE_CHECKING:
    from typing import Any

    from imij_plugins.pillow.ImiImagePlugin import ImiImageFile

__all__ = ["ImiImageFile", "register_pillow"]

_OPTIONS = {"decode_threads": "DECODE_THREADS", "verify_checksums": "VERIFY_CHECKSUMS"}


def register_pillow(**options: "Any") -> None:
    """Register the IMI opener, saver, save_all handler, ``.imi`` and its MIME type with Pillow.

    Without options this imports no codec module: the entries load the plugin on the first
    ``.imi`` open or save (``imij_plugins.pillow.registration``). Options given are set (see the
    module docstring), which loads the plugin; options left out keep their value. An unknown
    option is ignored with a warning, as pillow-heif's ``register_heif_opener`` does. Calling it
    again restores a registration someone removed. Raises ImportError when Pillow is not installed.
    """
    if options:
        import warnings

        from imij_plugins.pillow import ImiImagePlugin

        for key, value in options.items():
            if key not in _OPTIONS:
                warnings.warn(f"Unknown option: {key}", stacklevel=2)
                continue
            setattr(ImiImagePlugin, _OPTIONS[key], value)
    from imij_plugins.pillow import registration  # imports Pillow: not at this package's import

    registration.register()


def __getattr__(name: str) -> "Any":
    if name == "ImiImageFile":  # lazy, so that importing this package does not import Pillow
        from imij_plugins.pillow.ImiImagePlugin import ImiImageFile

        return ImiImageFile
    raise AttributeError(f"module 'imij_plugins.pillow' has no attribute {name!r}")
