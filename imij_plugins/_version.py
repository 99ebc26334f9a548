"""The package version: the one source pyproject.toml (dynamic version) and ``imij_plugins.__version__`` read."""

__version__ = "0.1.0"
