"""properties, metadata, index rules, regions, damaged input and closing."""

from __future__ import annotations

import os

import imageio.v3 as iio
import numpy as np
import pytest

import imij_plugins
from imij_plugins import reader
from imij_plugins.imageio import ImiPlugin
from imij_plugins.payload.data import DataPayload


@pytest.fixture
def decodes(monkeypatch) -> list[str]:
    """Every DATA parse and unit decode the core does, by name."""
    calls: list[str] = []
    read_data, decode_into, decode_unit = reader.read_data, DataPayload.decode_into, DataPayload._decode_unit

    def counting(name, fn):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(reader, "read_data", counting("read_data", read_data))
    monkeypatch.setattr(DataPayload, "decode_into", counting("decode_into", decode_into))
    monkeypatch.setattr(DataPayload, "_decode_unit", counting("unit", decode_unit))
    return calls


def ramp(shape: tuple[int, ...], dtype=np.uint8) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 251).astype(dtype).reshape(shape)


# --- properties and metadata from headers -----------------------------------------------


def test_improps_and_immeta_decode_no_pixels(registered, tmp_path, decodes):
    path = tmp_path / "big.imi"
    path.write_bytes(imij_plugins.encode(ramp((3000, 2000, 3), np.uint16)))  # 36 MB of samples
    pages = tmp_path / "pages.imi"
    pages.write_bytes(imij_plugins.encode([ramp((600, 500)), ramp((300, 200, 4), np.float32)], kind="pages"))
    decodes.clear()
    props = iio.improps(path)
    assert (props.shape, props.dtype) == ((3000, 2000, 3), np.uint16)
    assert iio.immeta(path)["width"] == 2000
    assert iio.improps(pages, index=1).shape == (300, 200, 4)
    assert iio.immeta(pages, index=1)["header"]["sample"] == "f32"
    assert decodes == []
    iio.imread(path)
    assert "decode_into" in decodes  # the counters do see a decode


def test_metadata_file_level(registered, tmp_path):
    path = tmp_path / "m.imi"
    iio.imwrite(path, ramp((4, 5, 4)), icc_profile=b"icc!", exif=b"Exif\0\0MM", xmp=b"<x:xmpmeta/>", checksum=True)
    meta = iio.immeta(path)
    assert meta["icc_profile"] == b"icc!" and meta["exif"] == b"Exif\0\0MM" and meta["xmp"] == b"<x:xmpmeta/>"
    assert meta["checksum"] == "verified"
    assert (meta["kind"], meta["n_images"], meta["layout"], meta["sample"]) == (None, 1, "RGBA", "u8")
    assert meta["cicp"] == (1, 13, 0, 1) and meta["sig_bits"] == (8, 8, 8, 8) and meta["orientation"] == 1
    assert list(meta["features"]) == list(imij_plugins.open(path).features) and meta["profiles"]
    assert iio.immeta(path, index=...) == meta
    assert iio.immeta(path, exclude_applied=False) == meta  # read applies nothing


def test_metadata_lists_unknown_ancillary_chunks(registered, tmp_path):
    path = tmp_path / "u.imi"
    path.write_bytes(imij_plugins.encode(ramp((3, 3)), chunks=[(b"qaSt", b"hello", "after")]))
    meta = iio.immeta(path)
    assert meta["unknown_chunks"] == ["qaSt"] and meta["checksum"] == "absent"


def test_metadata_per_frame(registered, tmp_path):
    path = tmp_path / "f.imi"
    a = ramp((8, 8, 3))
    b = a.copy()
    b[2:4, 5:7] = 0
    iio.imwrite(path, [a, b], durations=[0.5, 0.125])
    first, second = iio.immeta(path, index=0), iio.immeta(path, index=1)
    assert (first["x"], first["y"], first["width"], first["height"], first["uses_previous"]) == (0, 0, 8, 8, False)
    assert (second["x"], second["y"], second["width"], second["height"]) == (5, 2, 2, 2)
    assert second["uses_previous"] and second["duration"] == 0.125
    assert second["header"]["width"] == 2 and second["header"]["layout"] == "RGB"


def test_science_records_in_immeta(registered, tmp_path):
    from imij_plugins.container.metadata import Calibration, ChannelCalibration

    path = tmp_path / "s.imi"
    calibration = Calibration((ChannelCalibration(slope=0.5, offset=1.0, unit="K"),))
    iio.imwrite(path, ramp((2, 2)), science={"calibration": calibration})
    science = iio.immeta(path)["science"]
    assert science["calibration"]["channels"][0]["unit"] == "K"
    assert science["calibration"]["channels"][0]["slope"] == 0.5
    assert science["reports"] == [{"tag": "cALB", "status": "parsed", "reason": ""}]


# --- index rules -------------------------------------------------------------------------


def test_index_out_of_range(registered, tmp_path):
    path = tmp_path / "p.imi"
    iio.imwrite(path, [ramp((2, 2)), ramp((2, 2))], pages=True)
    for index in (2, -3):
        with pytest.raises(IndexError, match="out of range"):
            iio.imread(path, index=index)
        with pytest.raises(ValueError, match="out of range"):  # PluginV3.read documents ValueError
            iio.improps(path, index=index)
    with pytest.raises(TypeError):
        iio.imread(path, index="0")
    with pytest.raises(TypeError):
        iio.imread(path, index=True)


def test_still_image_index_rules(registered, tmp_path):
    path = tmp_path / "s.imi"
    a = ramp((3, 4, 2))
    iio.imwrite(path, a)
    assert iio.imread(path).shape == (3, 4, 2)
    assert np.array_equal(iio.imread(path, index=...), a[None])
    props = iio.improps(path, index=...)
    assert (props.shape, props.n_images, props.is_batch) == ((1, 3, 4, 2), 1, True)


# --- regions -------------------------------------------------------------------------------


def test_region_decodes_only_overlapped_units(registered, tmp_path, decodes):
    a = ramp((100, 64, 3), np.uint16)
    path = tmp_path / "r.imi"
    path.write_bytes(imij_plugins.encode(a, stripe_rows=16))  # 7 stripes
    decodes.clear()
    np.testing.assert_array_equal(iio.imread(path), a)
    whole = decodes.count("unit")
    decodes.clear()
    part = iio.imread(path, region=(10, 20, 30, 8))
    np.testing.assert_array_equal(part, a[20:28, 10:40])
    assert 0 < decodes.count("unit") < whole


def test_region_of_gray_and_of_every_frame(registered, tmp_path):
    seq = [ramp((12, 9)) + i for i in range(3)]
    path = tmp_path / "g.imi"
    iio.imwrite(path, seq)
    stack = iio.imread(path, region=(1, 2, 5, 4))
    np.testing.assert_array_equal(stack, np.stack(seq)[:, 2:6, 1:6])
    np.testing.assert_array_equal(iio.imread(path, index=1, region=(0, 0, 9, 1)), seq[1][:1])
    with pytest.raises(ValueError, match="not inside"):
        iio.imread(path, index=0, region=(5, 0, 9, 1))


# --- damaged input ---------------------------------------------------------------------------


def test_truncated_file_raises_corrupt(registered, tmp_path):
    data = imij_plugins.encode(ramp((40, 40, 3)), checksum=True)
    path = tmp_path / "t.imi"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(imij_plugins.Corrupt):
        iio.imread(path)
    with pytest.raises(imij_plugins.Corrupt):  # the typed error, not imopen's "can not handle"
        iio.imread(path, plugin=ImiPlugin)


def test_checksum_mismatch_and_verify_false(registered, tmp_path):
    a = ramp((64, 100, 3))
    data = bytearray(imij_plugins.encode(a, checksum=True))
    data[-1] ^= 0x10  # a sample byte in DATA
    path = tmp_path / "c.imi"
    path.write_bytes(bytes(data))
    with pytest.raises(imij_plugins.Corrupt, match="checksum"):
        iio.imread(path)
    with pytest.raises(imij_plugins.Corrupt, match="checksum"):
        iio.immeta(path)
    assert iio.imread(path, verify=False).shape == a.shape
    assert iio.improps(path).shape == a.shape  # headers only: no checksum pass


def test_unknown_header_version_is_unsupported(registered):
    data = bytearray(imij_plugins.encode(ramp((2, 2))))
    assert data[9] == 2  # signature, a one-byte header_len, then the header version (spec 1.0)
    data[9] = 3
    with pytest.raises(imij_plugins.Unsupported, match="version 3"):
        iio.imread(bytes(data), extension=".imi")
    with pytest.raises(imij_plugins.Unsupported, match="version 3"):
        iio.improps(bytes(data), plugin=ImiPlugin)


# --- lifetime and write options --------------------------------------------------------------


def test_imopen_context_manager_closes(registered, tmp_path):
    path = tmp_path / "c.imi"
    iio.imwrite(path, ramp((3, 3)))
    with iio.imopen(path, "r") as f:
        assert isinstance(f, ImiPlugin)
        handle = f.request.get_file()
        f.read()
    assert handle.closed
    with pytest.raises(ValueError, match="closed"):
        f.read()


def test_one_write_per_open_target(registered, tmp_path):
    path = tmp_path / "w.imi"
    with iio.imopen(path, "w") as f:
        f.write(ramp((3, 3)))
        with pytest.raises(RuntimeError, match="one write"):
            f.write(ramp((3, 3)))
    np.testing.assert_array_equal(iio.imread(path), ramp((3, 3)))


def test_failed_encode_leaves_the_target_alone(registered, tmp_path):
    path = tmp_path / "keep.imi"
    iio.imwrite(path, ramp((3, 3)))
    before = path.read_bytes()
    with pytest.raises(TypeError, match="cannot store"):
        iio.imwrite(path, np.zeros((2, 2), np.complex64))
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_error": 2, "codec": "quick"}, ValueError, "max_error"),
        ({"duration": 100}, TypeError, "seconds"),
    ],
)
def test_write_options_not_available(registered, tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        iio.imwrite(tmp_path / "x.imi", ramp((2, 2)), **kwargs)
    assert not (tmp_path / "x.imi").exists()


def test_wrong_direction(registered, tmp_path):
    path = tmp_path / "d.imi"
    with iio.imopen(path, "w") as f:
        with pytest.raises(ValueError, match="opened for writing"):
            f.read()
        f.write(ramp((2, 2)))
    with iio.imopen(path, "r") as f:
        with pytest.raises(ValueError, match="opened for reading"):
            f.write(ramp((2, 2)))


def _bytes_read() -> int:
    """Bytes this process has read through read() calls so far (/proc/self/io rchar)."""
    with open("/proc/self/io") as io_stats:
        return int(next(line for line in io_stats if line.startswith("rchar")).split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs /proc/self/io")
def test_properties_and_metadata_of_a_large_file_read_only_its_framing(registered, tmp_path):
    """A local file is memory-mapped: improps/immeta read its header and chunk framing, not 50 MB."""
    path = tmp_path / "big.imi"
    a = np.random.default_rng(0).integers(0, 256, (4096, 4096, 3), dtype=np.uint8)
    imij_plugins.write(path, a, codec="quick", effort=1)
    assert path.stat().st_size > 50_000_000
    before = _bytes_read()
    props = iio.improps(path)
    meta = iio.immeta(path)
    read = _bytes_read() - before
    assert props.shape == a.shape and meta["width"] == 4096
    assert read < 256 * 1024, read
