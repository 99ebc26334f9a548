"""Start-up hook of ``imij pillow-autoload``: registers IMI with Pillow once ``PIL.Image`` is imported.

The ``.pth`` file that ``imij pillow-autoload enable`` writes imports this module at every
interpreter start-up. So it lives outside the ``imij_plugins`` package (whose ``__init__`` imports
numpy and registers everything) and imports nothing at start-up: it only puts a finder at the front
of ``sys.meta_path``. When a program imports ``PIL.Image``, the finder wraps that module's loader;
once ``PIL.Image`` has executed, the wrapper removes the finder and imports ``imij_plugins``, which
registers IMI with Pillow. A failure there never reaches the program: it is one line on stderr, and
Pillow carries on without IMI.
"""

import sys

# No typing or __future__ import (each costs start-up time): annotations are strings, and type
# checkers treat a name TYPE_CHECKING as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType

TARGET = "PIL.Image"


def register() -> None:
    """Import ``imij_plugins`` (its ``__init__`` registers IMI with Pillow); report a failure in one line."""
    try:
        import imij_plugins  # noqa: F401
    except Exception as exc:  # a start-up hook must not break the program that imported Pillow
        print(
            f"imij-plugins: Pillow autoload could not register IMI ({type(exc).__name__}: {exc}); "
            "Pillow works without it",
            file=sys.stderr,
        )


class _RegisteringLoader:
    """PIL.Image's own loader, wrapped: after the module has executed, registers IMI and unwraps itself.

    Duck-typed: subclassing ``importlib.abc.Loader`` would import ``importlib.abc`` at start-up.
    """

    def __init__(self, spec: "ModuleSpec", loader: "Loader") -> None:
        """Wrap ``loader``, the one the other finders chose for PIL.Image's ``spec``."""
        self._spec = spec
        self._loader = loader

    def __getattr__(self, name: str) -> object:  # get_source, get_data...: for tools that read __loader__
        return getattr(self._loader, name)

    def create_module(self, spec: "ModuleSpec") -> "ModuleType | None":
        """The real loader's module (importlib requires this method next to ``exec_module``)."""
        return self._loader.create_module(spec)

    def exec_module(self, module: "ModuleType") -> None:
        """Run PIL.Image, then register IMI: registering needs the finished module."""
        self._loader.exec_module(module)
        module.__loader__ = self._spec.loader = self._loader  # PIL.Image keeps its real loader
        uninstall()
        register()


class Finder:
    """A ``sys.meta_path`` finder that acts on ``PIL.Image`` only: any other import costs one comparison."""

    @staticmethod
    def find_spec(name: str, path: "Sequence[str] | None" = None, target: "ModuleType | None" = None) -> "ModuleSpec | None":
        """The spec the other finders give for ``PIL.Image``, its loader wrapped; None for any other name."""
        if name != TARGET:
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
    """Register at once if ``PIL.Image`` is already imported, else wait for it with ``Finder``."""
    if TARGET in sys.modules:
        register()
    elif Finder not in sys.meta_path:
        sys.meta_path.insert(0, Finder)


def uninstall() -> None:
    """Take ``Finder`` off ``sys.meta_path`` (its work is done once ``PIL.Image`` has loaded)."""
    if Finder in sys.meta_path:
        sys.meta_path.remove(Finder)


install()
