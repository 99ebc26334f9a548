"""Fixtures for the IMIJ-Set tests: archive paths and a helper that opens hand-built bytes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import imij_plugins.imijset as imijset


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "a.imijset"


@pytest.fixture
def open_bytes(tmp_path: Path) -> Iterator[Callable[..., imijset.Archive]]:
    """Write ``data`` to a file and open it for reading; every archive opened is closed afterwards."""
    opened: list[imijset.Archive] = []

    def opener(data: bytes, **options: object) -> imijset.Archive:
        p = tmp_path / f"built-{len(opened)}-{id(data)}.imijset"
        p.write_bytes(bytes(data))
        arc = imijset.open(p, **options)  # type: ignore[arg-type]
        opened.append(arc)
        return arc

    yield opener
    for arc in opened:
        arc.close()
