"""``imij_plugins.dask`` on the synchronous scheduler: shapes, bands, archives and refusals."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

dask = require("dask")

import imij_plugins  # noqa: E402
from imij_plugins import dask as imij_dask  # noqa: E402
from imij_plugins import imijset  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def images(n: int, shape: tuple[int, ...], dtype: str = "u2") -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.integers(0, 5000, shape).astype(dtype) for _ in range(n)]


def write_stack(folder, arrays, **options) -> list:
    paths = []
    for i, a in enumerate(arrays):
        paths.append(folder / f"img{i:03d}.imi")
        imij_plugins.write(paths[-1], a, **options)
    return paths


def test_a_pattern_reads_sorted_files_one_task_each(tmp_path):
    arrays = images(4, (30, 20))
    write_stack(tmp_path, arrays)
    x = imij_dask.imread(str(tmp_path / "img*.imi"))
    assert x.shape == (4, 30, 20) and x.dtype == np.uint16
    assert x.numblocks == (4, 1, 1)
    assert np.array_equal(x.compute(), np.stack(arrays))


def test_colour_images_keep_their_channel_axis(tmp_path):
    arrays = images(2, (9, 11, 3), "f4")
    paths = write_stack(tmp_path, arrays)
    x = imij_dask.imread(paths)
    assert x.shape == (2, 9, 11, 3) and x.dtype == np.float32
    assert np.array_equal(x[1].compute(), arrays[1])


def test_large_images_split_into_bands_of_whole_stripes(tmp_path):
    arrays = images(2, (100, 40))
    paths = write_stack(tmp_path, arrays, stripe_rows=16)
    x = imij_dask.imread(paths, block_bytes=40 * 2 * 40)  # 40 rows a band: two stripes of 16
    assert x.chunks[1] == (32, 32, 32, 4)
    assert np.array_equal(x.compute(), np.stack(arrays))
    assert np.array_equal(x[:, 50:70, 3:9].compute(), np.stack(arrays)[:, 50:70, 3:9])


def test_index_reads_a_page(tmp_path):
    a, b = images(2, (12, 13))
    imij_plugins.write(tmp_path / "p.imi", [a, b], kind="pages")
    assert np.array_equal(imij_dask.imread(tmp_path / "p.imi", index=1).compute(), b[None])


def test_a_file_that_differs_fails_its_task_naming_it_and_both_shapes(tmp_path):
    paths = write_stack(tmp_path, [np.zeros((8, 8), np.uint8), np.zeros((8, 9), np.uint16)])
    x = imij_dask.imread(paths)  # the first file's header sets shape and dtype, as in dask-image
    assert x.shape == (2, 8, 8) and x.dtype == np.uint8
    assert not x[0].compute().any()
    with pytest.raises(imij_dask.ImageMismatch, match=r"img001\.imi holds a \(8, 9\) uint16 image.*img000\.imi.*\(8, 8\) uint8"):
        x.compute()
    with pytest.raises(imij_dask.ImageMismatch, match="img001.imi"):
        imij_dask.imread(paths, check=True)  # asked to check: every header now


def test_thousands_of_files_make_a_small_graph_in_natural_order(tmp_path):
    cloudpickle = require("cloudpickle")
    blobs = [imij_plugins.encode(np.full((4, 4), v, np.uint8)) for v in range(64)]
    for i in range(2000):
        (tmp_path / f"img{i}.imi").write_bytes(blobs[i % 64])
    x = imij_dask.imread(str(tmp_path / "img*.imi"))
    assert x.shape == (2000, 4, 4) and x.numblocks == (2000, 1, 1)
    sizes = [len(cloudpickle.dumps(task)) for task in dict(x.__dask_graph__()).values()]
    assert len(sizes) == 2000 and max(sizes) < 4096  # a task carries its own path, not all 2,000
    assert np.array_equal(x[:, 0, 0].compute(), np.arange(2000) % 64)  # img2 before img10


def test_natural_order_compares_numbers_by_value():
    names = ["s10_b.imi", "s2_b10.imi", "s2_b9.imi", "s1.imi", "S3.imi"]
    assert sorted(names, key=imij_dask.natural_key) == ["S3.imi", "s1.imi", "s2_b9.imi", "s2_b10.imi", "s10_b.imi"]


def test_no_match_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        imij_dask.imread(str(tmp_path / "*.imi"))


def test_a_corrupt_file_fails_its_task_with_corrupt(tmp_path):
    paths = write_stack(tmp_path, images(2, (16, 16)))
    data = paths[1].read_bytes()
    x = imij_dask.imread(paths)
    paths[1].write_bytes(data[:-20])
    assert np.array_equal(x[0].compute(), imij_plugins.read(paths[0])[..., 0])
    with pytest.raises(imij_plugins.ImijError):
        x.compute()


def test_archive_as_array_and_bag(tmp_path):
    arrays = images(3, (10, 12, 2), "i2")
    with imijset.open(tmp_path / "a.imijset", "w") as archive:
        for key, a in zip((5, 7, 9), arrays):
            archive.append(key, a, filename=f"k{key}.imi", attributes={"t": key * 10})
        archive.append(11, np.zeros((3, 3), np.uint8))
    x = imij_dask.from_archive(tmp_path / "a.imijset", keys=[5, 7, 9])
    assert x.shape == (3, 10, 12, 2) and x.numblocks[0] == 3
    assert np.array_equal(x.compute(), np.stack(arrays))
    with pytest.raises(ValueError, match="differ"):
        imij_dask.from_archive(tmp_path / "a.imijset")
    records = imij_dask.to_bag(tmp_path / "a.imijset", npartitions=2).compute()
    assert [(r["key"], r["filename"], r["attributes"]) for r in records[:3]] == [
        (5, "k5.imi", {"t": 50}), (7, "k7.imi", {"t": 70}), (9, "k9.imi", {"t": 90})]
    assert records[3]["image"].shape == (3, 3)
    assert np.array_equal(records[1]["image"], arrays[1])
