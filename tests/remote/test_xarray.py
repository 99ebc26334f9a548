"""The xarray engine over URLs with ``storage_options``: lazy Datasets whose reads fetch the units they need."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

from remote.server import FileServer, Served

xr = require("xarray")

TOKEN = {"headers": {"X-Token": "sesame"}}


def test_open_dataset_passes_storage_options(server: FileServer, served: Served, large) -> None:
    """A server that wants a header: every request (open, and each chunk's task) carries it."""
    img, data = large
    served.files["/big.imi"] = data
    served.required = {"X-Token": "sesame"}
    ds = xr.open_dataset(server.url("big.imi"), engine="imi", storage_options=TOKEN)
    assert ds["image"].shape == img.shape
    served.reset()
    np.testing.assert_array_equal(ds["image"][1000:1064, 2000:2064].values, img[1000:1064, 2000:2064])
    assert served.bytes <= 0.02 * len(data)  # lazy: the task's open, then the units of the box
    ds.close()


def test_open_dataset_without_the_options_fails(server: FileServer, served: Served, small) -> None:
    served.files["/s.imi"] = small[1]
    served.required = {"X-Token": "sesame"}
    with pytest.raises(OSError):
        xr.open_dataset(server.url("s.imi"), engine="imi")


def test_open_dataset_chunked_over_http(server: FileServer, served: Served, small) -> None:
    require("dask")
    img, data = small
    served.files["/s.imi"] = data
    served.required = {"X-Token": "sesame"}
    ds = xr.open_dataset(server.url("s.imi"), engine="imi", storage_options=TOKEN, chunks={})
    assert ds["image"].chunks[:2] == ((64,) * 8, (256, 256))  # the file's units
    np.testing.assert_array_equal(ds["image"].values, img)
    ds.close()


def test_open_datatree_over_http(server: FileServer, served: Served, small) -> None:
    img, data = small
    served.files["/s.imi"] = data
    served.required = {"X-Token": "sesame"}
    tree = xr.open_datatree(server.url("s.imi"), engine="imi", storage_options=TOKEN)
    np.testing.assert_array_equal(tree["image"][:64, 256:].values, img[:64, 256:])
    tree.close()


def test_open_dataset_over_s3(s3, large) -> None:
    img, data = large
    url = s3.put("xarray", "big.imi", data)
    ds = xr.open_dataset(url, engine="imi", storage_options=s3.options)
    s3.counts.reset()
    np.testing.assert_array_equal(ds["image"][4000:4064, 100:164].values, img[4000:4064, 100:164])
    assert s3.counts.bytes <= 0.02 * len(data)
    ds.close()
