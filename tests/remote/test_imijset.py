"""IMIJ-Set archives read over URLs: the footer, the index pages and the entries asked for, by ranges."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

import imij_plugins as ip
from imij_plugins import imijset
from remote.images import textured
from remote.server import FileServer, Served

COMMITS, PER_COMMIT = 3, 200


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> tuple[bytes, dict[int, np.ndarray]]:
    """An archive of 600 small images in 3 commits (3 segments), and the images by key."""
    path = tmp_path_factory.mktemp("imijset") / "a.imijset"
    images = {key: textured(48, 64, key) for key in range(COMMITS * PER_COMMIT)}
    with imijset.open(path, "w") as arc:
        for key, img in images.items():
            arc.append(key, img, filename=f"img{key}.png")
            if key % PER_COMMIT == PER_COMMIT - 1:
                arc.commit()
    return path.read_bytes(), images


def test_entry_over_http(server: FileServer, served: Served, archive) -> None:
    """One entry fetches the footers, the index pages on its path and its blob: a small part of the archive."""
    data, images = archive
    served.files["/a.imijset"] = data
    served.reset()
    with imijset.open(server.url("a.imijset")) as arc:
        assert arc.generation == COMMITS and arc.segments == COMMITS
        np.testing.assert_array_equal(arc.read(321), images[321])
        assert arc.entry(321).filename == "img321.png"
    assert served.bytes <= 0.05 * len(data)  # measured: 7 requests, 88,604 of 4,215,314 bytes
    assert served.requests <= 12


def test_listing_equals_local(server: FileServer, served: Served, archive, tmp_path) -> None:
    data, images = archive
    served.files["/a.imijset"] = data
    path = tmp_path / "a.imijset"
    path.write_bytes(data)
    with imijset.open(server.url("a.imijset")) as arc, imijset.open(path) as local:
        assert list(arc.keys()) == list(local.keys())
        assert arc.get(599) == local.get(599)
        assert arc.read_at(5, 0, 8) == local.read_at(5, 0, 8)
        assert arc.verify() == local.verify()


def test_entry_over_s3(s3, archive) -> None:
    data, images = archive
    url = s3.put("imijset", "a.imijset", data)
    s3.counts.reset()
    with imijset.open(url, storage_options=s3.options) as arc:
        np.testing.assert_array_equal(ip.read(arc.get(17)), images[17])
    assert s3.counts.bytes <= 0.05 * len(data)


def test_read_only_and_missing(server: FileServer, served: Served, archive) -> None:
    served.files["/a.imijset"] = archive[0]
    with pytest.raises(ValueError, match="reading only"):
        imijset.open(server.url("a.imijset"), "a")
    with pytest.raises(FileNotFoundError):
        imijset.open(server.url("none.imijset"))


def test_damaged_blob_is_corrupt(server: FileServer, served: Served, archive, tmp_path) -> None:
    """A flipped byte in an entry's blob fails that entry's digest, fetched remotely as locally."""
    data, _ = archive
    path = tmp_path / "a.imijset"
    path.write_bytes(data)
    with imijset.open(path) as local:
        entry = local.entry(100)
    damaged = bytearray(data)
    damaged[entry.offset + entry.length // 2] ^= 1
    served.files["/a.imijset"] = bytes(damaged)
    with imijset.open(server.url("a.imijset")) as arc:
        with pytest.raises(ip.Corrupt, match="digest"):
            arc.get(100)
        arc.get(101)


def test_datatree_of_a_remote_archive(server: FileServer, served: Served, archive) -> None:
    xr = require("xarray")
    data, images = archive
    served.files["/a.imijset"] = data
    served.required = {"X-Token": "sesame"}
    tree = xr.open_datatree(server.url("a.imijset"), engine="imi", storage_options={"headers": {"X-Token": "sesame"}})
    np.testing.assert_array_equal(tree["key_42"]["image"].values, images[42])
    assert tree["key_42"].attrs["filename"] == "img42.png"
    tree.close()
