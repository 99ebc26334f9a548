"""Remote reads through fsspec's memory and local filesystems: the same pixels and errors as local reads."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins as ip
from imij_plugins.errors import Corrupt
from remote.images import textured


def put(fs, name: str, data: bytes) -> str:  # noqa: ANN001 - an fsspec filesystem
    fs.pipe(f"/remote-tests/{name}", data)
    return f"memory:///remote-tests/{name}"


def test_region_and_full_read_equal_local(memfs, small) -> None:
    img, data = small
    url = put(memfs, "a.imi", data)
    with ip.open(url) as f:
        assert f.shape == img.shape
        np.testing.assert_array_equal(f.read(region=(300, 100, 64, 64)), img[100:164, 300:364])
        np.testing.assert_array_equal(f.read(), img)


def test_fsspec_file_object(memfs, small) -> None:
    img, data = small
    put(memfs, "b.imi", data)
    with memfs.open("/remote-tests/b.imi", "rb") as fobj, ip.open(fobj) as f:
        np.testing.assert_array_equal(f.read(region=(0, 0, 10, 10)), img[:10, :10])


def test_file_url(tmp_path, small) -> None:
    img, data = small
    path = tmp_path / "c.imi"
    path.write_bytes(data)
    np.testing.assert_array_equal(ip.read(path.as_uri(), region=(500, 500, 12, 12)), img[500:, 500:])


@pytest.mark.parametrize(
    "options",
    [
        {"unit_table": "none"},  # no table: DATA fetched whole and walked
        {"unit_table": "hint"},
        {"unit_table": "tail"},  # check tail: the trailing index after DATA
        {"group_cols": 0, "unit_table": "filled"},  # full-width stripes
        {"ordinals": True, "unit_table": "filled"},
        {"checksum": True, "unit_table": "filled"},
        {"checksum": True, "pixel_checksum": True, "unit_table": "hint"},
    ],
)
def test_layouts_read_equal_local(memfs, options) -> None:
    img = textured(300, 700, 3)
    data = ip.encode(img, stripe_rows=32, group_cols=options.pop("group_cols", 128), **options)
    url = put(memfs, "d.imi", data)
    with ip.open(url) as f:
        np.testing.assert_array_equal(f.read(region=(250, 40, 100, 50)), img[40:90, 250:350])
        np.testing.assert_array_equal(f.read(), img)
    with ip.open(url) as f, ip.open(data) as local:
        assert f.checksum_status in (local.checksum_status, "pieces")
        f.read()
        assert f.checksum_status == local.checksum_status  # a full read fetched every piece


def test_checksum_pieces_checked_as_fetched(memfs) -> None:
    """A flipped byte in a unit fails the read over it (its cSUM piece), not the open."""
    img = textured(1024, 1024, 4)
    data = bytearray(ip.encode(img, stripe_rows=64, group_cols=256, unit_table="filled", checksum=True))
    with ip.open(bytes(data)) as f:
        payload = f.payload()
        unit = payload.units[-1]
    data[(unit.body_start + unit.end) // 2] ^= 0x40
    url = put(memfs, "e.imi", bytes(data))
    with ip.open(url) as f:
        np.testing.assert_array_equal(f.read(region=(0, 0, 64, 64)), img[:64, :64])
        with pytest.raises(Corrupt, match="checksum"):
            f.read(region=(1000, 1000, 10, 10))


def test_forged_span_is_corrupt(memfs, small) -> None:
    """A unit table entry that moves a unit's span fails when that unit is fetched."""
    img, data = small
    with ip.open(data) as f:
        head = f.payload().head
        rec = head.record(12)
        width = rec.payload[1]
    table = bytes(rec.payload)
    first, second = int.from_bytes(table[2 : 2 + width], "little"), int.from_bytes(table[2 + width : 2 + 2 * width], "little")
    forged = table[:2] + (first + 1).to_bytes(width, "little") + (second - 1).to_bytes(width, "little") + table[2 + 2 * width :]
    url = put(memfs, "f.imi", data.replace(table, forged, 1))
    with ip.open(url) as f:
        with pytest.raises(Corrupt, match="unit"):
            f.read(region=(300, 0, 10, 10))


def test_partial_over_fsspec(memfs, small) -> None:
    img, data = small
    url = put(memfs, "g.imi", data[: len(data) * 3 // 4])
    with ip.open(url, partial=True) as f:
        out = f.read()
        assert f.failures(0)
        np.testing.assert_array_equal(out[:64], img[:64])


def test_storage_options_need_a_url(tmp_path, small) -> None:
    path = tmp_path / "h.imi"
    path.write_bytes(small[1])
    with pytest.raises(ValueError, match="storage_options"):
        ip.open(path, storage_options={"anon": True})


def test_missing_url(memfs) -> None:
    with pytest.raises(FileNotFoundError):
        ip.open("memory:///remote-tests/none.imi")


def test_concurrent_region_reads(memfs, small) -> None:
    """Reads from many threads share one file's fetched bytes and agree with local reads."""
    from concurrent.futures import ThreadPoolExecutor

    img, data = small
    url = put(memfs, "i.imi", data)
    boxes = [(x, y, 70, 70) for x in range(0, 440, 110) for y in range(0, 440, 110)]
    with ip.open(url) as f, ThreadPoolExecutor(4) as pool:
        for (x, y, w, h), out in zip(boxes, pool.map(lambda box: f.read(region=box), boxes)):
            np.testing.assert_array_equal(out, img[y : y + h, x : x + w])


def test_large_metadata_and_trailing_chunks(memfs) -> None:
    """Chunks beyond the first request are fetched as the framing walk reaches them."""
    img = textured(256, 512, 5)
    xmp = b"<x:xmpmeta>" + b"a" * 300_000 + b"</x:xmpmeta>"
    after = (b"zTRl", b"t" * 200_000, "after")
    data = ip.encode(img, stripe_rows=32, group_cols=128, unit_table="filled", xmp=xmp, chunks=[after])
    url = put(memfs, "j.imi", data)
    with ip.open(url) as f:
        assert f.metadata["xmp"] == xmp
        assert f.extra_chunks() == [after]
        np.testing.assert_array_equal(f.read(region=(130, 40, 100, 20)), img[40:60, 130:230])
