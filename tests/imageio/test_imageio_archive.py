"""IMIJ-Set archives through imageio: index = entry position, iter, metadata, writing."""

import imageio.v3 as iio
import numpy as np
import pytest

import imij_plugins
from imij_plugins import imijset


def test_write_and_read_archive(tmp_path):
    imij_plugins.register_imageio()
    path = tmp_path / "x.imijset"
    images = [np.full((4, 5), i, np.uint16) for i in range(3)]
    iio.imwrite(path, images)
    assert np.array_equal(iio.imread(path, index=1), images[1])
    assert np.array_equal(iio.imread(path), np.stack(images))
    assert [a.tolist() for a in iio.imiter(path)] == [a.tolist() for a in images]
    props = iio.improps(path)
    assert props.shape == (3, 4, 5) and props.dtype == np.uint16 and props.n_images == 3
    assert iio.improps(path, index=2).shape == (4, 5)
    assert iio.immeta(path)["keys"] == [0, 1, 2]


def test_archive_metadata_and_mixed_entries(tmp_path):
    imij_plugins.register_imageio()
    path = tmp_path / "m.imijset"
    with imijset.open(path, "w") as arc:
        arc.append(5, np.zeros((2, 2, 3), np.uint8), filename="a.png", attributes={"label": "cat"})
        arc.append(9, np.ones((3, 3), np.float32))
    meta = iio.immeta(path)
    assert meta["keys"] == [5, 9] and meta["filenames"] == ["a.png", None]
    assert meta["attributes"][0] == {"label": "cat"}
    assert iio.immeta(path, index=0)["filename"] == "a.png"
    assert iio.imread(path, index=1).dtype == np.float32
    with pytest.raises(ValueError, match="iter"):
        iio.imread(path)
    with pytest.raises(IndexError):
        iio.imread(path, index=2)


def test_archive_bytes_round_trip():
    imij_plugins.register_imageio()
    data = iio.imwrite("<bytes>", [np.eye(3, dtype=np.uint8)], extension=".imijset")
    assert np.array_equal(iio.imread(data, extension=".imijset", index=0), np.eye(3, dtype=np.uint8))
