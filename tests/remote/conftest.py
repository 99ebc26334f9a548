"""Fixtures for remote reads: images written as cloud-friendly files, and a local HTTP server."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from extras import require

import imij_plugins as ip
from remote.images import textured
from remote.server import FileServer, Served

require("fsspec")  # the 'remote' extra


@pytest.fixture(scope="session")
def small() -> tuple[np.ndarray, bytes]:
    """512x512 RGB in 64x256 units with a filled unit table (16 units)."""
    img = textured(512, 512, 1)
    return img, ip.encode(img, stripe_rows=64, group_cols=256, unit_table="filled")


@pytest.fixture(scope="session")
def large() -> tuple[np.ndarray, bytes]:
    """The issue's bound file: 4096x4096 RGB, 64x256 units, a filled unit table (1,024 units)."""
    img = textured(4096, 4096, 2)
    return img, ip.encode(img, stripe_rows=64, group_cols=256, unit_table="filled")


@pytest.fixture
def served() -> Served:
    return Served()


@pytest.fixture
def server(served: Served) -> Iterator[FileServer]:
    require("aiohttp")  # the 'remote' extra, for HTTP
    srv = FileServer(served)
    yield srv
    srv.close()


@pytest.fixture
def memfs() -> Iterator[object]:
    """fsspec's in-memory filesystem, emptied after the test."""
    import fsspec

    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists("/remote-tests"):
        fs.rm("/remote-tests", recursive=True)


@pytest.fixture(scope="session")
def s3() -> Iterator[object]:
    """A local S3 API (moto's server mode) on a free port, with ``options`` for s3fs."""
    require("s3fs")
    require("moto.server")
    from remote.s3 import S3Server

    srv = S3Server()
    yield srv
    srv.close()
