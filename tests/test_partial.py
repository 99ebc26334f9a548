"""Partial reads (``open(..., partial=True)``): a truncated or damaged file gives the units
(2.3, 2.7) that decode intact and zeros elsewhere; strict reads of the same bytes are Corrupt."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins.errors import Corrupt, ImijError

ROWS, UNITS = 8, 5  # stripe_rows=8 over 40 rows: five units, one per stripe
SOURCE = np.random.default_rng(7).integers(0, 256, (ROWS * UNITS, 24, 3), dtype=np.uint8)


def encoded(codec: str, **options: object) -> tuple[bytes, list[tuple[int, int]]]:
    """The source as IMI bytes and each unit record's ``(span start, end)`` in the file."""
    data = imij_plugins.encode(SOURCE, stripe_rows=ROWS, codec=codec, **options)
    with imij_plugins.open(data) as f:
        return data, [(u.span_start, u.end) for u in f.payload().units]


def cuts(units: list[tuple[int, int]]) -> list[int]:
    """Every unit boundary, a few offsets inside units, inside the DATA head and before DATA."""
    first = units[0][0]
    inside = [(s + e) // 2 for s, e in units] + [s + 1 for s, _ in units] + [e - 1 for _, e in units]
    return sorted({first - 1, first - 3, *(s for s, _ in units), *(e for _, e in units[:-1]), *inside})


def intact_units(cut: int, units: list[tuple[int, int]]) -> int:
    """How many leading unit records end at or before ``cut``."""
    return sum(1 for _, end in units if end <= cut)


def assert_leading_units(image: np.ndarray, count: int) -> None:
    """The first ``count`` stripes equal the source, every sample after them is zero."""
    np.testing.assert_array_equal(image[: count * ROWS], SOURCE[: count * ROWS])
    assert not image[count * ROWS :].any(), f"nonzero samples after the {count} intact units"


@pytest.mark.parametrize("codec", ["quick", "entropy"])
def test_every_cut_is_corrupt_strict_and_partial_keeps_the_leading_units(codec):
    data, units = encoded(codec)
    for cut in cuts(units):
        with pytest.raises(Corrupt):
            imij_plugins.read(data[:cut])
        with imij_plugins.open(data[:cut], partial=True) as f:
            image = f.read()
            failures = f.failures()
        count = intact_units(cut, units)
        assert_leading_units(image, count)
        assert failures, f"cut at {cut}: an incomplete read reported no failure"
        lost = [x.units for x in failures if x.image == 0 and x.units is not None]
        if cut >= units[0][0]:  # the head parsed: the lost units are named
            assert lost == [range(count, UNITS)], f"cut at {cut}"


@pytest.mark.parametrize("codec", ["quick", "entropy"])
def test_a_complete_file_reads_the_same_in_partial_mode(codec):
    data, _ = encoded(codec, checksum=True, pixel_checksum=True)
    with imij_plugins.open(data, partial=True) as f:
        np.testing.assert_array_equal(f.read(), SOURCE)
        assert f.failures() == []
        assert (f.checksum_status, f.bitmap_status(0)) == ("verified", "verified")


def test_a_header_that_is_gone_is_a_typed_error():
    data, _ = encoded("quick")
    for cut in range(0, 12):
        with pytest.raises(ImijError):
            imij_plugins.open(data[:cut], partial=True)


@pytest.mark.parametrize("codec", ["quick", "entropy"])
def test_checksums_never_verify_a_partial_read(codec):
    data, units = encoded(codec, checksum=True, pixel_checksum=True)
    for cut in (units[2][1], units[3][0] + 2, len(data) - 1):
        with imij_plugins.open(data[:cut], partial=True) as f:
            assert_leading_units(f.read(), intact_units(cut, units))
            assert f.checksum_status == "failed"  # 1.4: covered_len no longer matches
            assert f.bitmap_status(0) == "pending"  # 1.4.1: an incomplete raster is never checked


def test_a_corrupt_unit_leaves_the_others_intact():
    data, units = encoded("quick")
    start, end = units[2]
    mutated = bytearray(data)
    mutated[end - (ROWS * 24 * 3 + 1)] = 9  # unit 2's mode byte: 2.13 mode 9 is not a quick mode
    with pytest.raises(ImijError):
        imij_plugins.read(bytes(mutated))
    with imij_plugins.open(bytes(mutated), partial=True) as f:
        image = f.read()
        assert [(x.image, x.units) for x in f.failures()] == [(0, range(2, 3))]
    expected = SOURCE.copy()
    expected[2 * ROWS : 3 * ROWS] = 0
    np.testing.assert_array_equal(image, expected)


def test_a_corrupt_entropy_unit_leaves_the_others_intact():
    data, units = encoded("entropy")
    start, end = units[2]
    for pos in range(start + 3, end, max(1, (end - start) // 7)):
        mutated = bytearray(data)
        mutated[pos] ^= 0x5A
        with imij_plugins.open(bytes(mutated), partial=True) as f:
            image = f.read()
            failed = {u for x in f.failures() if x.units is not None for u in x.units}
        assert failed <= {2}
        for unit in set(range(UNITS)) - {2}:
            np.testing.assert_array_equal(image[unit * ROWS : (unit + 1) * ROWS], SOURCE[unit * ROWS : (unit + 1) * ROWS])
        if failed:
            assert not image[2 * ROWS : 3 * ROWS].any()


def test_a_checksum_mismatch_zeroes_the_units_under_the_piece():
    data, units = encoded("quick", checksum=True)
    mutated = bytearray(data)
    mutated[(units[2][0] + units[2][1]) // 2] ^= 0x01
    with pytest.raises(Corrupt, match="checksum"):
        imij_plugins.open(bytes(mutated))
    with imij_plugins.open(bytes(mutated), partial=True) as f:
        image = f.read()
        assert f.checksum_status == "failed"
        failed = {u for x in f.failures() if x.units is not None for u in x.units}
    assert 2 in failed  # one piece covers this small file (1.4 Choosing k): every unit under it
    for unit in failed:
        assert not image[unit * ROWS : (unit + 1) * ROWS].any()


def test_a_partial_region_read():
    data, units = encoded("quick")
    with imij_plugins.open(data[: units[1][1] + 5], partial=True) as f:
        np.testing.assert_array_equal(f.read(region=(3, 2, 10, 12)), SOURCE[2:14, 3:13])
        assert not f.read(region=(0, 16, 24, 10)).any()


def test_an_open_data_chunk_cut_short():
    """1.1: an open DATA (length 0) delimits itself; cut short, it runs to the file's end."""
    data, units = encoded("quick")
    tag = data.index(b"DATA")
    with imij_plugins.open(data) as f:
        payload_start = f.container.data.payload_start  # type: ignore[union-attr]
    opened = data[: tag + 4] + b"\x00" + data[payload_start:]  # the same payload, open framing
    cut = units[3][0] - (payload_start - (tag + 5)) + 4  # inside unit 3
    with pytest.raises(Corrupt):
        imij_plugins.read(opened[:cut])
    with imij_plugins.open(opened[:cut], partial=True) as f:
        assert f.container.data.open  # type: ignore[union-attr]
        assert_leading_units(f.read(), 3)


def test_a_file_cut_before_data_is_all_zeros():
    data, units = encoded("quick")
    cut = data.index(b"DATA") + 2
    with imij_plugins.open(data[:cut], partial=True) as f:
        assert not f.read().any()
        assert f.failures()


FRAMES = [np.random.default_rng(seed).integers(0, 256, (ROWS * UNITS, 24, 3), dtype=np.uint8) for seed in range(3)]


@pytest.mark.parametrize("kind", [None, "pages"])
def test_a_later_frame_cut_short_loads_partially(kind):
    options = {"kind": kind} if kind else {"durations": 0.1}
    data = imij_plugins.encode(FRAMES, stripe_rows=ROWS, codec="quick", **options)
    cut = len(data) - 2 * ROWS * 24 * 3 - 7  # inside the last frame's fourth unit
    with pytest.raises(Corrupt):
        imij_plugins.open(data[:cut])
    with imij_plugins.open(data[:cut], partial=True) as f:
        assert f.n_frames == 3
        for index in (0, 1):
            np.testing.assert_array_equal(f.read(index), FRAMES[index])
        last = f.read(2)
        assert f.failures(2)
    np.testing.assert_array_equal(last[: 3 * ROWS], FRAMES[2][: 3 * ROWS])
    assert not last[3 * ROWS + ROWS :].any()


@pytest.mark.parametrize("partial", [None, 0, 1, "yes"])
def test_partial_takes_any_truth_value(partial):
    """``partial`` is read for its truth, as before the open path kept two prepared measurers."""
    image = (np.arange(48 * 64 * 3) % 251).astype(np.uint8).reshape(48, 64, 3)
    with imij_plugins.open(imij_plugins.encode(image), partial=partial) as f:
        np.testing.assert_array_equal(f.read(), image)
