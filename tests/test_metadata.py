"""Metadata through real files: header fields, HDR, origin, kVMD, science records, previews, gain maps."""

import numpy as np
import pytest

import imij_plugins
from imij_plugins.container import metadata as md

IMAGE = np.arange(2 * 3 * 4, dtype=np.uint16).reshape(2, 3, 4)


def test_header_fields_round_trip():
    f = imij_plugins.open(imij_plugins.encode(IMAGE, cicp=(9, 16, 0, 1), orientation=6, sig_bits=(10, 10, 10, 16), alpha_mode=3))
    assert f.metadata["cicp"] == (9, 16, 0, 1) and f.metadata["orientation"] == 6
    assert f.header.effective_sig_bits == (10, 10, 10, 16) and f.header.alpha_mode == 3
    assert "alpha_interpretation" in f.features
    assert np.array_equal(f.read(), IMAGE)  # declarations never change the stored samples


@pytest.mark.parametrize(
    "kwargs",
    [dict(alpha_mode=2, layout=None, image=np.zeros((2, 2, 3), np.uint8)), dict(sig_bits=(17, 1, 1, 1)), dict(orientation=9), dict(cicp=(1, 1, 1, 2))],
)
def test_writer_refuses_headers_a_reader_would_reject(kwargs):
    image = kwargs.pop("image", IMAGE)
    kwargs.pop("layout", None)
    with pytest.raises(ValueError):
        imij_plugins.encode(image, **kwargs)


def test_hdr_origin_and_item_metadata_round_trip():
    mastering = md.MasteringDisplay((35400, 14600), (8500, 39850), (6550, 2300), (15635, 16450), 10_000_000, 50)
    light = md.ContentLightLevel(10_000_000, 4_000_000)
    origin = md.ColorOrigin(provenance=2, authority=1, cicp=(1, 13, 0, 1))
    item = md.ItemMetadata.from_mapping({"exposure": 0.25, "frame": 7, "ok": True}, filename="scan.tif")
    data = imij_plugins.encode(
        IMAGE, mastering_display=mastering, content_light_level=light, diffuse_white=203.0, color_origin=origin, item_metadata=item
    )
    meta = imij_plugins.open(data).metadata
    assert meta["mastering_display"] == mastering and meta["content_light_level"] == light
    assert meta["diffuse_white"].nits == 203.0 and meta["color_origin"] == origin
    assert meta["item_metadata"].as_dict() == {"exposure": 0.25, "frame": 7, "ok": True}


def test_legacy_cll_reads_scaled():
    data = imij_plugins.encode(IMAGE, chunks=[(b"cLLI", bytes([3, 232, 1, 144]), "before")])
    assert imij_plugins.open(data).metadata["content_light_level"] == md.ContentLightLevel(1000 * 10_000, 400 * 10_000)


@pytest.mark.parametrize("payload", [bytes(4) + b"\x00\x00\x00\x00", b"\x7f\x80\x00\x00", b"\xc3\x4b\x00\x00", b"\x43\x4b\x00"])
def test_bad_diffuse_white_is_reported_and_hides_nothing(payload):
    data = imij_plugins.encode(IMAGE, exif=b"II*\x00", chunks=[(b"dWHI", payload, "before")])
    f = imij_plugins.open(data)
    assert np.array_equal(f.read(), IMAGE)
    meta = f.metadata
    assert "diffuse_white" not in meta and meta["malformed"]["diffuse_white"].startswith("Corrupt")
    assert meta["exif"] == b"II*\x00"


def test_science_records_round_trip_and_malformed_never_fail_decode():
    calibration = md.Calibration((md.ChannelCalibration(slope=0.5, offset=-3.0, unit="K"),))
    image = np.arange(6, dtype=np.uint16).reshape(2, 3)
    f = imij_plugins.open(imij_plugins.encode(image, science={"calibration": calibration}))
    assert f.metadata["science"].calibration == calibration
    bad = imij_plugins.encode(image, chunks=[(b"cALB", b"\x01\x05", "before")])  # count 5 != 1 channel
    f = imij_plugins.open(bad)
    assert np.array_equal(f.read()[..., 0], image)
    report = f.metadata["science"].reports[0]
    assert report.status == "malformed" and f.metadata["science"].calibration is None


def test_extra_chunks_carry_through_a_rewrite():
    data = imij_plugins.encode(
        IMAGE, exif=b"II*\x00", chunks=[(b"zzZz", b"app", "before"), (b"cALB", b"\x01\x04" + bytes(8), "before"), (b"qqQq", b"after", "after")]
    )
    f = imij_plugins.open(data)
    extra = f.extra_chunks()
    assert [(t, p) for t, p, _ in extra] == [(b"zzZz", b"app"), (b"cALB", b"\x01\x04" + bytes(8)), (b"qqQq", b"after")]
    again = imij_plugins.open(imij_plugins.encode(f.read(), chunks=extra, exif=f.metadata["exif"]))
    assert again.extra_chunks() == extra
    # pixels changed: only safe-to-copy chunks (lower-case fourth letter) survive (1.1)
    assert [t for t, _, _ in f.extra_chunks(pixels_changed=True)] == [b"zzZz", b"qqQq"]  # cALB is unsafe


def test_previews_and_gain_map_images_decode():
    preview = np.full((1, 2, 4), 9, np.uint16)
    nested = imij_plugins.encode(preview)
    gain = md.GainMap(metadata=b"\x00meta", image=imij_plugins.encode(np.ones((1, 1), np.uint8)))
    data = imij_plugins.encode(IMAGE, chunks=[(b"pRVW", nested, "before"), (b"gMAP", gain.to_bytes(), "before")])
    f = imij_plugins.open(data)
    assert [np.array_equal(p.read(), preview) for p in f.previews()] == [True]
    assert f.metadata["gain_map"].metadata == b"\x00meta"
    assert f.gain_map_image().read().shape == (1, 1, 1)
