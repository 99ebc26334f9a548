"""Past one process: a two-worker ``distributed.LocalCluster`` reads IMI files and an IMIJ-Set lazily
and writes a zarr array with the IMI codec (the same code runs on a cluster given its address)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from extras import require

distributed = require("distributed")
zarr = require("zarr")
da = require("dask.array")

import imij_plugins  # noqa: E402
from imij_plugins import dask as imij_dask  # noqa: E402
from imij_plugins import imijset  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
        yield c


def stack(n: int = 6) -> np.ndarray:
    rng = np.random.default_rng(11)
    return rng.integers(0, 1 << 12, (n, 40, 56), dtype=np.uint16)


def test_a_stack_of_files_reduces_like_numpy_on_two_worker_processes(client, tmp_path):
    data = stack()
    for i, a in enumerate(data):
        imij_plugins.write(tmp_path / f"f{i}.imi", a, stripe_rows=8)
    x = imij_dask.imread(str(tmp_path / "f*.imi"), block_bytes=20 * 56 * 2)  # bands of 16 rows too
    assert x.npartitions == 6 * 3
    total, per_pixel_max = client.compute([x.sum(dtype=np.uint64), x.max(axis=0)], sync=True)
    assert int(total) == int(data.sum(dtype=np.uint64))
    assert np.array_equal(per_pixel_max, data.max(axis=0))
    workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2


def test_an_archive_as_array_and_bag_on_the_cluster(client, tmp_path):
    data = stack(4)
    with imijset.open(tmp_path / "s.imijset", "w") as archive:
        for key, a in enumerate(data):
            archive.append(key, a, filename=f"{key}.imi")
    x = imij_dask.from_archive(tmp_path / "s.imijset")
    assert np.array_equal(client.compute(x.mean(axis=0), sync=True), data.mean(axis=0))
    sums = imij_dask.to_bag(tmp_path / "s.imijset").map(lambda r: (r["filename"], int(r["image"].sum())))
    assert sorted(client.compute(sums, sync=True)) == sorted((f"{k}.imi", int(a.sum())) for k, a in enumerate(data))


def test_dask_writes_a_zarr_array_with_the_imi_codec(client, tmp_path):
    data = stack()
    for i, a in enumerate(data):
        imij_plugins.write(tmp_path / f"g{i}.imi", a)
    x = imij_dask.imread(str(tmp_path / "g*.imi"))
    z = zarr.create_array(store=tmp_path / "out.zarr", shape=x.shape, dtype=x.dtype, chunks=(2, 40, 56),
                          serializer={"name": "imij.imi"}, compressors=None)
    da.store(x.rechunk(z.chunks), z, lock=False, compute=True)
    back = zarr.open_array(tmp_path / "out.zarr", mode="r")
    assert back.metadata.codecs[0].to_dict()["name"] == "imij.imi"
    assert np.array_equal(back[...], data)
