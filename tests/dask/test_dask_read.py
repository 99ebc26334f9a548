"""``imij_plugins.dask`` on the synchronous scheduler: shapes, bands, archives and refusals."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require

dask = require("dask")

import imij_plugins  # noqa: E402
from imij_plugins import imijset  # noqa: E402
from imij_plugins import dask as imij_dask  # noqa: E402


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


def test_files_that_differ_are_refused_naming_one(tmp_path):
    paths = write_stack(tmp_path, [np.zeros((8, 8), np.uint8), np.zeros((8, 9), np.uint8)])
    with pytest.raises(ValueError, match="img001.imi"):
        imij_dask.imread(paths)


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
