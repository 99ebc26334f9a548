"""Registers IMI with Pillow and imageio when a program imports them, without importing either first.

Two users:

- the ``.pth`` file that ``imij pillow-autoload enable`` writes imports this module at every
  interpreter start-up. So it lives outside the ``imij_plugins`` package and imports only ``sys``;
  importing it waits for ``PIL.Image`` (``install``);
- ``import imij_plugins`` waits the same way for ``PIL.Image`` and ``imageio``, so that importing
  the package imports neither of them, nor numpy.

``when_imported`` puts ``Finder`` at the front of ``sys.meta_path``. When a program imports a
module that is waited for, the finder wraps that module's loader; once the module has executed,
the wrapper runs the callbacks, and the finder leaves ``sys.meta_path`` when nothing is left to
wait for. Registering with Pillow imports only ``imij_plugins.pillow.registration``: the codec
loads on the first ``.imi`` open or save. A failing callback never reaches the program: it is one
line on stderr, and the library carries on without IMI. If ``imij_plugins`` is gone (``pip
uninstall`` left the ``.pth`` behind), registering does nothing and says nothing.
"""

import sys

# No typing or __future__ import (each costs start-up time): annotations are strings, and type
# checkers treat a name TYPE_CHECKING as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType

PILLOW = "PIL.Image"
IMAGEIO = "imageio"
_LIBRARY = {PILLOW: "Pillow", IMAGEIO: "imageio"}  # for the one line a failed registration prints

_waiting: "dict[str, list[Callable[[], None]]]" = {}  # module name -> callbacks to run once it is imported


def register_with_pillow() -> None:
    """Register IMI's small Pillow entries (the codec loads on first use); nothing if imij_plugins is gone."""
    try:
        from imij_plugins.pillow.registration import register
    except ModuleNotFoundError as exc:
        if exc.name != "imij_plugins":
            raise
        return  # uninstalled, the .pth left behind: Pillow runs as if the hook were not there
    register()


def register_with_imageio() -> None:
    """Register the IMI plugin in imageio's plugin and extension tables."""
    from imij_plugins.imageio import register_imageio

    register_imageio()


def when_imported(name: str, callback: "Callable[[], None]") -> None:
    """Run ``callback`` once module ``name`` has been imported: now if it has been, else right after its import.

    A callback already waiting for ``name`` is not added twice.
    """
    if name in sys.modules:
        _run(name, callback)
        return
    callbacks = _waiting.setdefault(name, [])
    if callback not in callbacks:
        callbacks.append(callback)
    if Finder not in sys.meta_path:
        sys.meta_path.insert(0, Finder)


def _run(name: str, callback: "Callable[[], None]") -> None:
    """Run one callback; a failure is one line on stderr (a start-up hook must not break the program)."""
    try:
        callback()
    except Exception as exc:
        library = _LIBRARY.get(name, name)
        print(
            f"imij-plugins: could not register IMI with {library} ({type(exc).__name__}: {exc}); {library} works without it",
            file=sys.stderr,
        )


class _RegisteringLoader:
    """A waited-for module's own loader, wrapped: after the module has executed, runs its callbacks and unwraps itself.

    Duck-typed: subclassing ``importlib.abc.Loader`` would import ``importlib.abc`` at start-up.
    """

    def __init__(self, spec: "ModuleSpec", loader: "Loader") -> None:
        """Wrap ``loader``, the one the other finders chose for ``spec``."""
        self._spec = spec
        self._loader = loader

    def __getattr__(self, name: str) -> object:  # get_source, get_data...: for tools that read __loader__
        return getattr(self._loader, name)

    def create_module(self, spec: "ModuleSpec") -> "ModuleType | None":
        """The real loader's module (importlib requires this method next to ``exec_module``)."""
        return self._loader.create_module(spec)

    def exec_module(self, module: "ModuleType") -> None:
        """Run the module, then its callbacks: registering needs the finished module."""
        self._loader.exec_module(module)
        module.__loader__ = self._spec.loader = self._loader  # the module keeps its real loader
        callbacks = _waiting.pop(self._spec.name, [])
        if not _waiting:
            uninstall()
        for callback in callbacks:
            _run(self._spec.name, callback)


class Finder:
    """A ``sys.meta_path`` finder that acts on waited-for modules only: any other import costs one lookup."""

    @staticmethod
    def find_spec(name: str, path: "Sequence[str] | None" = None, target: "ModuleType | None" = None) -> "ModuleSpec | None":
        """The spec the other finders give for a waited-for module, its loader wrapped; None for any other name."""
        if name not in _waiting:
            return None
        for finder in sys.meta_path:
            if finder is Finder or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisteringLoader(spec, spec.loader)  # type: ignore[assignment]  # duck-typed
                return spec
        return None


def install() -> None:
    """The ``.pth`` hook's work: register IMI with Pillow now if ``PIL.Image`` is imported, else when it is."""
    when_imported(PILLOW, register_with_pillow)


def uninstall() -> None:
    """Take ``Finder`` off ``sys.meta_path``."""
    if Finder in sys.meta_path:
        sys.meta_path.remove(Finder)


install()
