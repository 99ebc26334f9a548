"""Inter frames in the tuned encoder (encode_tuned(reference=...)): section 4's predictors 7-9
against the previous canvas, the C cost kernels against their Python references, and the rules
of 2.4, 2.6 and 4 on where the encoder may write them."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy.encoder import encode_tuned
from imij_plugins.payload.entropy.residuals import residuals
from imij_plugins.payload.entropy.search import INTER_PREDICTORS, UNTRIED, choose, costs
from imij_plugins.payload.entropy.stripe import LAYOUT_PALETTE
from imij_plugins.payload.head import read_lossless_head
from imij_plugins.payload.units import walk_units
from imij_plugins.wire.cursor import Cursor

from .backends import NEEDS_C, both
from .syntax_writer import decode_entropy_payload, header_for


def _pair(rng: np.random.Generator, dtype, h: int, w: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    """A smooth noisy frame and the previous one: the same scene slightly darker and shifted."""
    dt = np.dtype(dtype)
    y, x = np.mgrid[0:h, 0:w]
    top = 200.0 if dt.kind == "f" else float(min(np.iinfo(dt).max, 60000))
    scene = (np.sin(x / 5.0) + np.cos(y / 4.0) + 2) / 4 * top
    cur = np.stack([scene * (0.6 + 0.2 * k) for k in range(c)], -1) + rng.normal(0, top / 100, (h, w, c))
    prev = cur - top / 50
    prev[:, 1:] = prev[:, :-1]
    if dt.kind != "f":
        lo = np.iinfo(dt).min
        cur, prev = cur.clip(max(lo, 0), top), prev.clip(max(lo, 0), top)
    return cur.astype(dt), prev.astype(dt)


def predictors(image: np.ndarray, enc) -> list[tuple[int, list[int]]]:
    """(layout byte, row predictors) of every unit of a tuned payload (2.4, 2.5); other layouts
    (bilevel, template) have no predictors and give []."""
    header = header_for(image, enc)
    head = read_lossless_head(Cursor(enc.payload, 0, len(enc.payload)), header)
    out = []
    for i, unit in enumerate(walk_units(enc.payload, head, len(enc.payload))):
        h = head.geometry.unit_rect(i)[3]
        body = enc.payload[unit.body_start : unit.end]
        layout, pos = body[0], 1
        if layout == LAYOUT_PALETTE:
            depths = [d for d in _slot_depths(header, head)]
            pos = 2 + (body[1] + 1) * sum(1 if d <= 8 else 2 for d in depths)
        elif layout > 3:
            out.append((layout, []))
            continue
        raw = body[pos : pos + (h + 1) // 2]
        out.append((layout, [(raw[r >> 1] >> (4 * (r & 1))) & 15 for r in range(h)]))
    return out


def _slot_depths(header, head) -> list[int]:
    from imij_plugins.payload.entropy.maps import build_slots, check_maps

    return [s.depth for s in build_slots(header, check_maps(header, head.maps))]


@NEEDS_C
@pytest.mark.parametrize("seed", range(6))
def test_inter_kernels_match_their_references(seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        S = int(rng.integers(1, 5))
        h, w = int(rng.integers(1, 9)), int(rng.integers(1, 45))
        n = int(rng.choice([1, 3, 8, 12, 16, 24, 32]))
        depths = [n] * S
        if S > 3:
            depths[3] = int(rng.integers(0, 9))
        top = np.array([1 << d if d else 1 for d in depths], dtype=np.int64)[:, None, None]
        planes = (rng.integers(0, 1 << 32, (S, h, w)) % top).astype(np.uint32)
        refs = ((planes.astype(np.int64) + rng.integers(-2, 3, (S, h, w))) % top).astype(np.uint32)
        lanes = int(rng.integers(1, 17))
        decor = S >= 3 and bool(rng.random() < 0.7)
        pm, rs, cs = int(rng.integers(1, 1024)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        mm = int(rng.integers(1, 16)) if decor else 1
        a, b = both(costs, planes, depths, lanes, decor, pm, mm, rs, cs, refs)
        assert np.array_equal(a, b)
        tried = bool(pm & 0x80) or (rs < h and bool(pm & INTER_PREDICTORS))  # row 0: only 7
        assert (a[:, :, 7:] < UNTRIED).any() == tried
        mode, preds, _ = choose(a, mm)
        assert preds[0] in (0, 7) and all(p == 0 or pm >> p & 1 for p in preds[1:])
        u, ub = both(residuals, planes, depths, lanes, preds, mode, refs)
        assert np.array_equal(u, ub)
        plain, _ = both(costs, planes, depths, lanes, decor, pm, mm, rs, cs)
        assert (plain[:, :, 7:] == UNTRIED).all()  # no reference: 7-9 are never tried


@pytest.mark.parametrize("dtype", ["u1", "<u2", "<f2", "<i2", "<u4", "<f4"])
def test_inter_payloads_round_trip_on_both_backends(dtype):
    rng = np.random.default_rng(7)
    cur, prev = _pair(rng, dtype, 37, 70, 3)
    with _backend.use("python"):
        ref_enc = encode_tuned(cur, reference=prev, threads=1, stripe_rows=16)
    for backend in _backend.available():
        with _backend.use(backend):
            for threads in (1, 3):
                enc = encode_tuned(cur, reference=prev, threads=threads, stripe_rows=16)
                assert enc.payload == ref_enc.payload
            out = decode_entropy_payload(enc.payload, header_for(cur, enc), prev)
            assert np.array_equal(out.view(np.uint8), cur.view(np.uint8))
    used = [p for _, preds in predictors(cur, ref_enc) for p in preds]
    assert any(p >= 7 for p in used), used


def test_inter_is_smaller_for_a_brightened_frame():
    rng = np.random.default_rng(8)
    cur, prev = _pair(rng, "u1", 64, 96, 3)
    prev = np.clip(cur.astype(int) - 2, 0, 255).astype(np.uint8)
    inter, intra = encode_tuned(cur, reference=prev), encode_tuned(cur)
    assert len(inter.payload) < 0.7 * len(intra.payload)
    assert inter.features_used == intra.features_used  # inter prediction needs no feature


def test_rows_follow_2_4_and_4():
    """Row 0 is 0 or 7; 7-9 only with a reference; never in palette stripes."""
    rng = np.random.default_rng(9)
    cur, prev = _pair(rng, "u1", 40, 64, 3)
    for _layout, preds in predictors(cur, encode_tuned(cur, reference=prev, stripe_rows=8)):
        assert preds[0] in (0, 7)
    assert all(p < 7 for _, preds in predictors(cur, encode_tuned(cur)) for p in preds)
    few = rng.integers(0, 4, (40, 64, 1)).astype(np.uint8) * 60  # palette stripes
    back = np.roll(few, 1, axis=0)
    for layout, preds in predictors(few, encode_tuned(few, reference=back, effort=2)):
        if layout == LAYOUT_PALETTE:
            assert all(p < 7 for p in preds)


def test_no_inter_with_near_lossless_bounds_or_64_bit_samples():
    rng = np.random.default_rng(10)
    cur, prev = _pair(rng, "u1", 32, 48, 3)
    enc = encode_tuned(cur, reference=prev, max_error=2)  # 2.6: payloads with bounds never use 7-9
    assert all(p < 7 for _, preds in predictors(cur, enc) for p in preds)
    wide = cur.astype(np.uint64) << np.uint64(20)
    enc = encode_tuned(wide, reference=prev.astype(np.uint64) << np.uint64(20))  # 4: not in 64-bit images
    assert all(p < 7 for _, preds in predictors(wide, enc) for p in preds)
    assert np.array_equal(decode_entropy_payload(enc.payload, header_for(wide, enc)), wide)


def test_reference_must_match_the_image():
    image = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(ValueError, match="reference"):
        encode_tuned(image, reference=np.zeros((4, 6, 3), np.uint8))
