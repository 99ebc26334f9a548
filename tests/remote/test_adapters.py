"""The xarray engine and dask.imread over URLs: lazy reads that fetch only the units they need."""

from __future__ import annotations

import numpy as np
from extras import require

import imij_plugins as ip
from remote.images import textured
from remote.server import FileServer, Served

xr = require("xarray")
imij_dask = require("imij_plugins.dask")


def test_xarray_reads_a_url_lazily(server: FileServer, served: Served, large) -> None:
    img, data = large
    served.files["/big.imi"] = data
    ds = xr.open_dataset(server.url("big.imi"), engine="imi")
    served.reset()
    np.testing.assert_array_equal(ds["image"][1000:1064, 2000:2064].values, img[1000:1064, 2000:2064])
    assert served.bytes <= 0.02 * len(data)  # a new open in the task, then the units of the box
    ds.close()


def test_dask_imread_over_a_memory_glob(memfs) -> None:
    images = [textured(128, 160, seed) for seed in range(3)]
    for i, img in enumerate(images):
        memfs.pipe(f"/remote-tests/stack/img{i * 5}.imi", ip.encode(img, stripe_rows=32, unit_table="filled"))
    arr = imij_dask.imread("memory:///remote-tests/stack/img*.imi")
    assert arr.shape == (3, 128, 160, 3)
    np.testing.assert_array_equal(arr.compute(), np.stack(images))


def test_dask_imread_bands_over_http(server: FileServer, served: Served, small) -> None:
    img, data = small
    served.files["/a.imi"] = data
    served.files["/b.imi"] = data
    arr = imij_dask.imread([server.url("a.imi"), server.url("b.imi")], block_bytes=128 * 512 * 3)
    assert arr.chunks[1] == (128,) * 4  # bands of whole stripes, one task each
    np.testing.assert_array_equal(arr[1, 128:256].compute(), img[128:256])
    np.testing.assert_array_equal(arr.compute(), np.stack([img, img]))
