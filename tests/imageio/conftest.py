"""Fixtures for the imageio plugin tests: imageio's plugin registry saved and restored around each test.

This directory has no ``__init__.py`` on purpose: under pytest's default (prepend) import mode
a ``tests/imageio`` *package* would be imported as ``imageio`` and shadow the real imageio.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from imageio.config import known_extensions, known_plugins

from imij_plugins.imageio import EXTENSION, PLUGIN_NAME, register_imageio


@contextmanager
def saved_registry() -> Iterator[None]:
    """Put ``known_plugins`` (with its order) and ``known_extensions`` (with priorities) back afterwards."""
    plugins = list(known_plugins.items())
    extensions = {ext: [(fmt, list(fmt.priority)) for fmt in formats] for ext, formats in known_extensions.items()}
    try:
        yield
    finally:
        known_plugins.clear()
        known_plugins.update(plugins)
        known_extensions.clear()
        for ext, formats in extensions.items():
            for fmt, priority in formats:
                fmt.priority[:] = priority
            known_extensions[ext] = [fmt for fmt, _ in formats]


def _unregister() -> None:
    known_plugins.pop(PLUGIN_NAME, None)
    known_extensions.pop(EXTENSION, None)


@pytest.fixture
def unregistered() -> Iterator[None]:
    """imageio as it comes: no IMI plugin, no .imi extension (whatever ``import imij_plugins`` did)."""
    with saved_registry():
        _unregister()
        yield


@pytest.fixture
def registered() -> Iterator[None]:
    """The IMI plugin registered from scratch for this test only."""
    with saved_registry():
        _unregister()
        register_imageio()
        yield


@pytest.fixture
def only_imi(registered: None) -> None:
    """IMI is the only plugin imageio knows, so its try-every-plugin fallback reaches it."""
    for name in [n for n in known_plugins if n != PLUGIN_NAME]:
        del known_plugins[name]
