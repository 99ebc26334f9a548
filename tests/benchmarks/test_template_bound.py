"""benchmarks/template_bound.py: its template contexts are 2.14's (worked by hand from the
specification's table on a 4x8 stripe, and equal to the package's reference coder's and kernel's
on many stripes), its code lengths are the empirical conditional entropy, and its byte
attribution adds up to the written file."""

from __future__ import annotations

import numpy as np
import pytest
from bench_scripts import load_script

import imij_plugins
from imij_plugins import _backend
from imij_plugins.payload.entropy.bilevel import level_counts, step_positions
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.template import template_ops_py

# a 4x8 stripe in two lanes of 4 columns; rows 1 and 3 repeat the row above (typical)
HAND = np.array([
    [0, 0, 1, 1, 2, 2, 0, 0],
    [0, 0, 1, 1, 2, 2, 0, 0],
    [0, 1, 1, 2, 2, 0, 0, 1],
    [0, 1, 1, 2, 2, 0, 0, 1],
], np.uint8)
# phase 0 contexts of the coded rows 0 and 2, worked out from the template table of 2.10 and the
# context of 2.14: e.g. row 2 column 4 (lane 1, lane column 0) reads t_8 and t_9 from row 1
# (columns 2 and 3: 1 and 1), so W = 1 and the bits are k = 0, 3, 4, 8: 281
HAND_CTX = {0: [1023, 1023, 1023, 0, 1023, 0, 256, 767], 2: [895, 827, 102, 307, 281, 51, 742, 1015]}
HAND_DIFFERS = {0: [0, 0, 1, 0, 1, 0, 1, 0], 2: [0, 1, 0, 1, 1, 1, 0, 1]}
# candidate phases (context 8 j + min(count, 7), outcome): row 0 column 6 matches N (j = 0,
# eight zeros around); row 2 columns 1, 3 and 5 match NE (j = 1, three equal pixels), column 4
# matches N (j = 0, four); escapes: row 0 columns 2 and 4 (indices 1, 2), row 2 column 7 (1)
HAND_CANDIDATES = [(7, 0), (11, 0), (11, 0), (4, 0), (11, 0)]
HAND_ESCAPES = [1, 2, 1]


def _module():
    return load_script("template_bound")


def test_hand_worked_stripe():
    tb = _module()
    assert tb.typical_rows(HAND).tolist() == [False, True, False, True]
    ctx = tb.phase0_contexts(tb.template_pixels(HAND, 2))
    for r, want in HAND_CTX.items():
        assert ctx[r].tolist() == want, r
    counts = tb.template_counts(HAND, 3, 2)
    want0 = np.zeros((1024, 2), np.int64)
    for r in HAND_CTX:
        for c, m in zip(HAND_CTX[r], HAND_DIFFERS[r]):
            want0[c, m] += 1
    assert np.array_equal(counts.phase0, want0)
    want_q = np.zeros((40, 2), np.int64)
    for c, b in HAND_CANDIDATES:
        want_q[c, b] += 1
    assert np.array_equal(counts.cand, want_q)
    assert np.array_equal(counts.escape, np.bincount(HAND_ESCAPES, minlength=256))


def test_lanes_change_only_the_current_row_left_of_a_lane():
    tb = _module()
    one, two = tb.template_pixels(HAND, 1), tb.template_pixels(HAND, 2)
    differs = np.argwhere((one != two).any(axis=0))
    # t_8 and t_9 of lane 1's first two columns read row r - 1 with two lanes
    assert {(int(r), int(c)) for r, c in differs} <= {(r, c) for r in range(4) for c in (4, 5)}
    assert one[9, 2, 4] == HAND[2, 3] and two[9, 2, 4] == HAND[1, 3]


def _planes(seed: int):
    """Index planes with runs, repeated rows and few-entry areas, and assorted lane counts."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        h, w = int(rng.integers(1, 14)), int(rng.integers(1, 90))
        n = int(rng.integers(1, 40))
        plane = rng.integers(0, n, (h, w))
        runs = rng.random((h, w)) < 0.6
        for c in range(1, w):
            plane[:, c] = np.where(runs[:, c], plane[:, c - 1], plane[:, c])
        for r in range(1, h):
            if rng.random() < 0.3:
                plane[r] = plane[r - 1]
        yield plane.astype(np.uint8), max(n, int(plane.max()) + 1), int(rng.integers(1, 17))


def test_contexts_and_counts_match_the_package_coder():
    tb = _module()
    for plane, n, lane_count in _planes(7):
        h, w = plane.shape
        lanes = Lanes.of(w, lane_count)
        typical = tb.typical_rows(plane)
        ops = template_ops_py(plane, n, typical, lanes)
        pos, _, _ = step_positions(h, lanes)
        pos = pos[~typical[pos // w]]
        mine = tb.phase0_contexts(tb.template_pixels(plane, lane_count)).ravel()[pos]
        assert np.array_equal(ops.ctx[ops.kind == 0], mine)  # every phase 0 context, in decode order
        counts = tb.template_counts(plane, n, lane_count)
        for got, ref in zip((counts.phase0, counts.cand, counts.escape), ops.counts()):
            assert np.array_equal(got, ref)
        if _backend.active() == "c":
            for got, ref in zip((counts.phase0, counts.cand, counts.escape), level_counts(plane, n, typical, lanes)):
                assert np.array_equal(got, ref)


def test_code_length_is_the_conditional_entropy():
    tb = _module()
    c = tb.Counts()
    c.phase0[5] = (3, 1)  # 4 * H(3/4)
    c.phase0[9] = (7, 0)  # certain: 0 bits
    c.cand[2] = (1, 1)  # 2 bits
    c.escape[[3, 4]] = (2, 2)  # 4 bits
    h34 = -(0.75 * np.log2(0.75) + 0.25 * np.log2(0.25))
    assert c.bits() == pytest.approx(4 * h34 + 2 + 4)


def test_palette_order_and_eligibility():
    tb = _module()
    keys = np.array([[5, 5, 9], [9, 5, 7]], np.uint64)
    index, n = tb.palette_index(keys)
    assert n == 3 and index.tolist() == [[0, 0, 1], [1, 0, 2]]  # most frequent first, ties by tuple
    assert tb.palette_index(np.arange(257, dtype=np.uint64)[None, :]) is None
    rgb = np.zeros((2, 2, 3), np.uint8)
    rgb[0, 0] = (1, 0, 0)
    rgb[0, 1] = (0, 1, 0)
    assert len(np.unique(tb.tuple_keys(rgb))) == 3


def test_report_attributes_every_unit_byte():
    tb = _module()
    rng = np.random.default_rng(3)
    image = np.zeros((80, 96, 3), np.uint8)
    image[:, :, 0] = rng.integers(0, 4, (80, 96)) * 60  # few tuples: eligible stripes
    image[40:64] = rng.integers(0, 256, (24, 96, 3))  # many tuples: rows 32..63 are not
    rep = tb.image_report("t", "graphics", image, variants=(("e5", 5, None, False), ("e5/32", 5, 32, False)))
    assert rep["stripes"] == 3 and rep["eligible_stripes"] == 2
    assert rep["eligible_share"] == pytest.approx(48 / 80) and rep["over256_share"] == pytest.approx(32 / 80)
    v = rep["variants"]["e5/32"]
    data = imij_plugins.encode(image, effort=5, stripe_rows=32)
    units, head_bytes, rows = tb.file_units(data)
    assert rows == 32 and len(units) == 3
    container_overhead = len(data) - sum(u.span for u in units) - head_bytes
    assert 0 < container_overhead < 100  # signature, header, chunk framing
    assert sum(v["per_stripe_bytes"]) == sum(u.span for u in units)
    assert v["eligible_same_pixels"] and v["over256_same_pixels"]
    eligible = 8 * (v["per_stripe_bytes"][0] + v["per_stripe_bytes"][2]) / (48 * 96)
    assert v["eligible_bpp"] == pytest.approx(eligible)
    assert rep["est_bpp"] < rep["est_fixed_bpp"]


def test_main_writes_the_tables_and_json(tmp_path):
    tb = _module()
    corpus = load_script("corpus")
    rng = np.random.default_rng(5)
    page = np.full((70, 90, 3), 255, np.uint8)
    page[8:60:6, 5:80] = rng.integers(0, 3, (9, 75, 1)) * 40  # text-like lines of a few grays
    corpus.write_corpus(tmp_path / "c", [corpus.Entry("page", "screenshot", "generated", "none", "lines", page)])
    out = tmp_path / "bound.json"
    reports = tb.main(["--corpus", str(tmp_path / "c"), "--json", str(out), "--markdown", str(tmp_path / "b.md")])
    assert [r["image"] for r in reports] == ["page"] and reports[0]["eligible_share"] == 1.0
    text = (tmp_path / "b.md").read_text()
    assert "| page | 90x70 |" in text and text.count("| **median** |") == 2
    assert "e9s/32" in reports[0]["variants"] and out.exists()
