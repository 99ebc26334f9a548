"""Record 35's shared entries for an image of more than 256 colours (2.14, section 5's notes;
payload/entropy/shared_entries.py): stripes of few colours from a common set are written as
layout 0x84 over a subset of the shared entries, and the file decodes exactly."""

from __future__ import annotations

import numpy as np
import pytest

import imij_plugins
from imij_plugins.container.file import read_container
from imij_plugins.payload.data import read_data
from imij_plugins.payload.entropy.shared_entries import common_entries
from imij_plugins.payload.entropy.template import read_template_record
from imij_plugins.registry.features import FeatureId as F

from .syntax_writer import decode_entropy_payload

ROWS = 16  # stripe rows: stripes 0-6 hold few colours, stripe 7 a gradient of 1,024
COLOURS = np.array([(255, 255, 255), (0, 0, 0), (200, 30, 30), (30, 120, 200), (90, 90, 90), (0, 150, 60)], np.uint8)


def _page() -> tuple[np.ndarray, set[tuple[int, ...]]]:
    """128 x 64 RGB: seven 16-row stripes of white with 6% dots of black and two of four accents
    (three to four colours each), then a gradient stripe of 1,024 colours; and the colours of the
    seven stripes as slot tuples (2.2: G, R, B)."""
    rng = np.random.default_rng(39)
    index = np.zeros((8 * ROWS, 64), np.int64)
    for s in range(7):
        band = index[s * ROWS : (s + 1) * ROWS]
        dots = rng.random(band.shape) < 0.06
        band[dots] = rng.choice(np.r_[1, rng.choice(np.arange(2, 6), 2, replace=False)], int(dots.sum()))
    img = COLOURS[index]
    y, x = np.mgrid[0:ROWS, 0:64]
    img[7 * ROWS :] = np.stack([x * 4 + y % 4, y * 16, 255 - x], axis=-1).astype(np.uint8)
    used = {(int(g), int(r), int(b)) for r, g, b in np.unique(img[: 7 * ROWS].reshape(-1, 3), axis=0)}
    return img, used


def _payload(data: bytes) -> tuple[bytes, object]:
    """The DATA payload of an IMI file and its header."""
    container = read_container(data)
    return bytes(container.payload(container.data)), container.header


@pytest.mark.parametrize("effort", [5, 9])
def test_stripes_of_few_colours_share_entries(backend, effort):
    img, used = _page()
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 256
    data = imij_plugins.encode(img, effort=effort, stripe_rows=ROWS)
    assert np.array_equal(np.asarray(imij_plugins.read(data)), img)
    payload, header = _payload(data)
    assert F.TEMPLATE_PALETTES in header.features
    assert np.array_equal(decode_entropy_payload(payload, header), img)  # the syntax reader's checks
    found = read_data(payload, header, 0, len(payload))
    layouts = [payload[u.body_start] for u in found.units]
    assert layouts[:7] == [0x84] * 7 and layouts[7] < 0x80  # the gradient stays a regular stripe
    shared = read_template_record(found.head.record(35).payload, [8, 8, 8]).shared.tolist()
    assert {tuple(e) for e in shared} == used and shared[0] == [255, 255, 255]  # white: the commonest first
    assert len(shared) == 6  # each stripe uses three or four of them


def test_both_backends_write_the_same_file():
    img, _ = _page()
    from imij_plugins import _backend

    if "c" not in _backend.available():
        pytest.skip("the C backend is not built")
    files = {}
    for name in ("c", "python"):
        with _backend.use(name):
            files[name] = imij_plugins.encode(img, stripe_rows=ROWS)
    assert files["c"] == files["python"]


def test_common_entries_by_hand():
    """8-bit gray: a unit of k >= 3 tuples saves 8 (1 + k) bits of own entries; record 35 pays
    8 + 8 n bits for n shared entries."""
    def unit(values, counts):
        return np.array(values, np.int64).reshape(-1, 1), np.array(counts, np.int64)

    # one unit of three tuples: 32 bits saved against 32 paid, not strictly less: none
    assert common_entries([unit([5, 6, 7], [9, 1, 1])], [8]) is None
    # three such units: 96 against 32; the commonest over them first (7: 30 pixels, 5: 12, 6: 3)
    three = [unit([5, 6, 7], [4, 1, 10])] * 3
    assert common_entries(three, [8]) == [(7,), (5,), (6,)]
    # units of two tuples keep their own entries (phase 0's two-entry rule): left out
    assert common_entries([unit([1, 2], [5, 5])] * 9, [8]) is None
    # a unit of three tuples found nowhere else: shared, its three entries cost 24 bits, its own
    # 32 (the count byte besides), so it joins, after the others (fewest pixels)
    alone = unit([40, 41, 42], [1, 2, 1])
    assert common_entries(three + [alone], [8]) == [(7,), (5,), (6,), (41,), (40,), (42,)]


def test_more_than_256_common_tuples_take_the_commonest_units():
    """300 units of three tuples each, two shared by all and one their own: at most 256 entries,
    so 254 units are covered (2 + 254 tuples)."""
    units = [(np.array([[0], [1], [2 + i]], np.int64), np.array([50, 20, 1], np.int64)) for i in range(300)]
    shared = common_entries(units, [16])
    assert shared is not None and len(shared) == 256 and shared[:2] == [(0,), (1,)]


@pytest.mark.parametrize("seed", range(6))
def test_renumbered_counts_equal_a_recount(backend, seed):
    """A stripe of four own entries among six shared ones, own entry 0 being shared entry 0: its
    outcome counts with own entries follow from those with shared entries (escapes renumbered)."""
    from imij_plugins.payload.entropy.rans import Lanes
    from imij_plugins.payload.entropy.shared_entries import renumbered_counts
    from imij_plugins.payload.entropy.template import template_counts, typical_rows

    rng = np.random.default_rng(seed)
    own = np.where(rng.random((12, 40)) < 0.8, 0, rng.integers(0, 4, (12, 40))).astype(np.uint8)
    own[6:9] = own[5]  # typical rows
    lanes = Lanes.of(40, 1 + seed)
    shared_of = [0, 5, 2, 3]  # own entry i is shared entry shared_of[i]
    plane = np.array(shared_of, np.uint8)[own]
    with_shared = (*template_counts(plane, 6, typical_rows(plane), lanes), typical_rows(plane))
    want = (*template_counts(own, 4, typical_rows(own), lanes), typical_rows(own))
    got = renumbered_counts(with_shared, shared_of)
    assert got is not None and all(np.array_equal(g, w) for g, w in zip(got, want))
    assert renumbered_counts(with_shared, [5, 0, 2, 3]) is None  # own entry 0 is not shared entry 0


def test_record_length_without_writing():
    from imij_plugins.payload.entropy.modeling import best_tables
    from imij_plugins.payload.entropy.template import template_record, template_record_len

    rng = np.random.default_rng(3)
    for prec in (0, 3, 7):
        vmax = 1024 if prec == 7 else (1 << (4 + prec)) - 1
        values = [int(v) if rng.random() < 0.4 else None for v in rng.integers(0, vmax + 1, 1064)]
        for code in (None, best_tables([rng.integers(0, 9, 256)], range(1, 9))[0]):
            for shared in (None, [(1, 2, 3)] * 7):
                data = template_record(prec, values[:1024], values[1024:], code, shared, [8, 8, 8])
                assert template_record_len(prec, values, code, len(shared or ()), [8, 8, 8]) == len(data)
