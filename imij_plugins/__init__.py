"""imij_plugins: the IMI image format (.imi) and IMIJ-Set archives for Python."""

from imij_plugins import _backend
from imij_plugins.errors import Corrupt, ImijError, TooLarge, Unsupported

__all__ = ["Corrupt", "ImijError", "TooLarge", "Unsupported", "backend"]


def __getattr__(name: str) -> str:
    if name == "backend":  # live: tests switch backends with _backend.use()
        return _backend.active()
    raise AttributeError(f"module 'imij_plugins' has no attribute {name!r}")
