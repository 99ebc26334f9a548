"""The tuned encoder (payload/entropy/encoder.py): round trips over every sample type, layout and
effort, map choice, near-lossless bounds, thread and backend independence, and the C kernels of
csrc/encode.c against their Python references (search, residuals, context_stats, palettes, streams)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import BUCKETS, stat_buckets, stats
from imij_plugins.payload.entropy.encoder import EFFORTS, encode_tuned, entropy_geometry
from imij_plugins.payload.entropy.mapchoice import Channel, word_summary
from imij_plugins.payload.entropy.maps import (
    CONST,
    F16_IN_F32,
    FLOAT_SHIFT,
    LSB,
    OFFSET,
    REPLICATE,
    SCALE,
    SHIFT,
    TABLE,
    UNORM_F32,
    check_maps,
    forward,
)
from imij_plugins.payload.entropy.modeling import SlotStats, choose_model, effort_of
from imij_plugins.payload.entropy.palettes import palette
from imij_plugins.payload.entropy.residuals import near, residuals
from imij_plugins.payload.entropy.search import choose, costs
from imij_plugins.payload.entropy.streams import stream
from imij_plugins.payload.head import REC_NEAR, ChannelMap, read_lossless_head
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire.cursor import Cursor

from .backends import NEEDS_C, both
from .gen import SAMPLES
from .syntax_writer import decode_entropy_payload, header_for

LAYOUT_CHANNELS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 4, 6: 3, 7: 4}


# --- helpers ---------------------------------------------------------------------------------------


def _uint(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"<u{a.dtype.itemsize}"))


def _decode(image, enc, layout=None, backend: str | None = None):
    hdr = header_for(image, enc, layout)
    if backend is None:
        return decode_entropy_payload(enc.payload, hdr), hdr
    with _backend.use(backend):
        return decode_entropy_payload(enc.payload, hdr), hdr


def _head(image, enc, layout=None):
    hdr = header_for(image, enc, layout)
    return read_lossless_head(Cursor(enc.payload), hdr), hdr


def _roundtrip(image, layout=None, **kw):
    """Encode, decode on the active backend and on the Python reference decoder, compare bits."""
    enc = encode_tuned(image, layout=layout, **kw)
    img = image if image.ndim == 3 else image[:, :, None]
    for backend in {_backend.active(), "python"}:
        out, _ = _decode(image, enc, layout, backend)
        assert out.shape == img.shape and out.dtype == img.dtype
        assert np.array_equal(_uint(out), _uint(img)), f"round trip differs (decoder {backend})"
    return enc



def _image(rng: np.random.Generator, dtype, h: int, w: int, c: int) -> np.ndarray:
    """A smooth gradient with noise, a flat patch and a constant last channel where it fits."""
    dt = np.dtype(dtype)
    y, x = np.mgrid[0:h, 0:w]
    if dt.kind == "f":
        base = (x * 0.37 + y * 0.11)[:, :, None] + rng.normal(0, 0.05, (h, w, c))
        img = base.astype(dt)
        img[: h // 2, : w // 2] = dt.type(0.5)
        if h > 2:
            img[1, 1, 0] = -img[1, 1, 0]  # a negative sample
        return img
    bits = dt.itemsize * 8
    top = 1 << min(bits, 20)
    base = (x * 7 + y * 3)[:, :, None] * np.arange(1, c + 1) + rng.integers(0, 5, (h, w, c))
    img = (base % top).astype(np.int64)
    img[: h // 3, : w // 3] = 5
    if dt.kind == "i":
        img -= top // 2
    out = img.astype(dt)
    if c in (2, 4):
        out[:, :, -1] = np.iinfo(dt).max if dt.kind == "u" else np.iinfo(dt).max
    return out


# --- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", list(SAMPLES))
@pytest.mark.parametrize("layout", sorted(LAYOUT_CHANNELS))
def test_every_sample_type_and_layout(sample, layout):
    rng = np.random.default_rng(layout * 31 + len(sample))
    dtype = SAMPLES[sample].dtype
    effort = (1, 5, 9)[(layout + len(sample)) % 3]
    img = _image(rng, dtype, 6, 19, LAYOUT_CHANNELS[layout])
    enc = _roundtrip(img, layout=layout, effort=effort, stripe_rows=4)
    head, hdr = _head(img, enc, layout)
    assert head.lanes >= 1 and head.geometry.stripe_rows == 4


@pytest.mark.parametrize("effort", sorted(EFFORTS))
def test_every_effort(effort):
    rng = np.random.default_rng(effort)
    img = _image(rng, np.uint8, 24, 70, 3)
    img[10:14, 20:60] = rng.integers(0, 255, (4, 40, 3))
    _roundtrip(img, effort=effort, stripe_rows=9)


def test_palette_runs_and_cross():
    """Few colours (palette stripes), long flat areas (run tokens) and correlated colour noise."""
    rng = np.random.default_rng(7)
    img = np.zeros((40, 64, 3), dtype=np.uint8)
    colors = rng.integers(0, 256, (6, 3))
    img[:20] = colors[rng.integers(0, 6, (20, 64))]  # six colours at random: a palette stripe
    img[5:15, 10:50] = (10, 20, 30)  # and a flat patch
    img[20:40] = rng.integers(0, 256, (20, 64, 1)) + np.array([0, 1, 2])[None, None]  # noisy stripe, 3 tuples apart
    enc = _roundtrip(img, effort=5, stripe_rows=20)
    head, _ = _head(img, enc)
    assert head.present & 1  # the first stripe is a palette stripe


@pytest.mark.parametrize("step", [1, 6])
def test_gray_palette_only_for_sparse_levels(step):
    """5: a gray stripe whose 40 levels are 6 apart is smaller as a palette stripe (indices
    6 times smaller); with the levels next to each other it is not (its index plane would be
    the values less the smallest)."""
    rng = np.random.default_rng(step)
    ramp = np.add.outer(np.arange(48), np.arange(64)) // 3 + rng.integers(0, 2, (48, 64))
    img = (np.minimum(ramp, 39) * step).astype(np.uint8)
    enc = _roundtrip(img, effort=5, stripe_rows=48)
    head, _ = _head(img, enc, 1)
    assert bool(head.present & 1) == (step > 1)


def test_all_palette_units_and_one_row():
    img = np.array([[[1, 2, 3], [4, 5, 6], [1, 2, 3]]], dtype=np.uint8)
    _roundtrip(img, effort=5)
    _roundtrip(np.full((3, 5, 4), 9, dtype=np.uint16), effort=9)


@pytest.mark.parametrize("unit_table", ["hint", "none", "filled", "empty", "tail"])
def test_unit_tables_and_ordinals(unit_table):
    rng = np.random.default_rng(3)
    img = _image(rng, np.uint8, 20, 30, 3)
    enc = _roundtrip(img, effort=3, stripe_rows=6, unit_table=unit_table, ordinals=unit_table == "hint")
    assert (F.UNIT_ORDINALS in enc.features_used) == (unit_table == "hint")


def test_column_groups():
    rng = np.random.default_rng(5)
    img = _image(rng, np.uint16, 9, 70, 1)
    enc = _roundtrip(img, effort=5, group_cols=32, stripe_rows=5)
    head, _ = _head(img, enc)
    assert head.geometry.group_cols == 32 and head.geometry.unit_count == 6


def test_geometry_defaults():
    """5: G = 2048 from 8192 pixels wide; units of 2^16 .. 2^17 pixels, stripes of even height
    (no sliver at the bottom); user values kept."""
    assert entropy_geometry(8192, 100, None, None).group_cols == 2048
    assert entropy_geometry(8191, 100, None, None).group_cols == 0
    g = entropy_geometry(512, 512, None, None)
    assert g.stripe_rows == 128 and g.unit_count == 4
    assert entropy_geometry(1280, 800, None, None).stripe_rows == 100  # 8 stripes of 103 rows at most, evened
    assert entropy_geometry(542, 130, None, None).stripe_rows == 65  # not 121 + 9
    assert entropy_geometry(100, 7, None, None).stripe_rows == 7
    assert entropy_geometry(300, 300, 10, 100).unit_count == 30 * 3


@pytest.mark.parametrize("own_sums", [False, True])
def test_threads_do_not_change_the_bytes(monkeypatch, own_sums):
    """Units coded on a pool (forced for these small images: PARALLEL_SAMPLES 0), a bilevel page
    too (the level chooser's pool), give the bytes of one thread, with the statistics summed
    under the lock or per thread (OWN_SUMS_POSITIONS)."""
    from imij_plugins.payload.entropy import encoder

    monkeypatch.setattr(encoder, "PARALLEL_SAMPLES", 0)
    monkeypatch.setattr(encoder, "OWN_SUMS_POSITIONS", 0 if own_sums else 1 << 40)
    rng = np.random.default_rng(11)
    img = _image(rng, np.uint8, 48, 40, 4)
    img[30:] = 7
    page = (rng.random((64, 48)) < 0.1).astype(np.uint8) * 255
    for image in (img, page):
        one = encode_tuned(image, effort=5, threads=1, stripe_rows=8)
        for threads in (2, 3, 8):
            assert encode_tuned(image, effort=5, threads=threads, stripe_rows=8).payload == one.payload


def test_small_images_are_coded_on_one_thread(monkeypatch):
    """Below PARALLEL_SAMPLES the encoder does not hand units to a pool."""
    from imij_plugins.payload.entropy import encoder

    seen = []
    real = encoder.parallel_map
    monkeypatch.setattr(encoder, "parallel_map", lambda fn, count, workers: seen.append(workers) or real(fn, count, workers))
    img = _image(np.random.default_rng(2), np.uint8, 40, 40, 3)
    encode_tuned(img, threads=4, stripe_rows=8)
    assert seen and set(seen) == {1}
    monkeypatch.setattr(encoder, "PARALLEL_SAMPLES", 0)
    seen.clear()
    encode_tuned(img, threads=4, stripe_rows=8)
    assert set(seen) == {4}


@NEEDS_C
def test_backends_write_the_same_bytes():
    rng = np.random.default_rng(12)
    for dtype, c in ((np.uint8, 3), (np.uint16, 1), (np.float32, 2)):
        img = _image(rng, dtype, 12, 33, c)
        for effort in (1, 5, 9):
            a, b = both(encode_tuned, img, effort=effort, stripe_rows=5)
            assert a.payload == b.payload
        a, b = both(encode_tuned, img, effort=5, max_error=2, stripe_rows=5) if dtype != np.float32 else (a, b)
        assert a.payload == b.payload


# --- maps (2.1) and features (0.1) -----------------------------------------------------------------


def _maps(img, layout=None, **kw):
    enc = _roundtrip(img, layout=layout, **kw)
    head, _ = _head(img, enc, layout)
    return [(m.mode, m.bits, m.value) for m in head.maps], enc.features_used


def test_maps_for_deep_content_in_16_bit_containers():
    rng = np.random.default_rng(1)
    v = rng.integers(0, 1024, (8, 16)).astype(np.uint16)
    assert _maps(v << 6)[0] == [(SHIFT, 10, 0)]  # MSB-aligned 10-bit
    assert _maps(v)[0] == [(LSB, 10, 0)]  # LSB-aligned
    rep = (v << 6) | (v >> 4)  # bit-replicated 10-bit
    assert _maps(rep)[0] == [(REPLICATE, 10, 0)]
    w = rng.integers(0, 4096, (8, 16))
    scaled = ((w * 65535 + 2047) // 4095).astype(np.uint16)
    mode, bits, _ = _maps(scaled)[0][0]
    assert (mode, bits) == (SCALE, 12)


def test_alpha_maps():
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, (6, 9, 3), dtype=np.uint8)
    opaque = np.concatenate([rgb, np.full((6, 9, 1), 255, np.uint8)], axis=2)
    maps, _ = _maps(opaque)
    assert maps[3] == (CONST, 0, 255)
    binary = opaque.copy()
    binary[::2, :, 3] = 0
    maps, _ = _maps(binary)
    assert maps[3][1] == 1 and maps[3][0] in (REPLICATE, SCALE)


def test_float_maps():
    rng = np.random.default_rng(4)
    halves = rng.normal(0, 3, (7, 9)).astype(np.float16)
    maps, feats = _maps(halves.astype(np.float32), effort=5)
    assert maps[0][:2] == (F16_IN_F32, 16) and F.FLOAT_SHIFT not in feats
    unorm = (rng.integers(0, 1024, (7, 9)).astype(np.float32) / np.float32(1023))
    maps, _ = _maps(unorm, effort=1)
    assert maps[0][:2] == (UNORM_F32, 10)
    rounded = rng.normal(0, 100, (7, 9)).astype(np.float32)
    rounded = (rounded.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)  # BitRound to 16 bits
    maps, feats = _maps(rounded, effort=1)
    assert maps[0][:2] == (FLOAT_SHIFT, 16) and F.FLOAT_SHIFT in feats
    positive = np.abs(rounded)
    maps, feats = _maps(positive, effort=1)  # 5: all positive: Shift, no float_shift
    assert maps[0][0] == SHIFT and F.FLOAT_SHIFT not in feats


def test_offset_map_and_value_tables():
    rng = np.random.default_rng(6)
    big = (np.uint32(3_000_000_000) + rng.integers(0, 4000, (6, 10))).astype(np.uint32)
    maps, feats = _maps(big, effort=1)
    assert maps[0][:2] == (OFFSET, 12) and F.OFFSET_MAP in feats
    levels = np.array([0, 977, 5000, 40000, 65000], dtype=np.uint16)
    idx = np.minimum((np.add.outer(np.arange(40), np.arange(64)) // 20), 4)
    sparse = levels[idx]
    maps, feats = _maps(sparse, effort=9)
    assert maps[0][:2] == (TABLE, 3) and F.VALUE_TABLES in feats
    maps, feats = _maps(sparse, effort=1)  # low efforts keep the regular maps
    assert maps[0][0] != TABLE and F.VALUE_TABLES not in feats


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.uint32, np.float32])
def test_value_table_coded_values(dtype):
    """2.1 map 9: a word's coded value is its ordered value's index in the table (a lookup
    table up to 16 bits, a binary search above), round trips included."""
    from imij_plugins.payload.entropy.mapchoice import coded
    from imij_plugins.payload.entropy.maps import order_map

    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    D = 8 * np.dtype(dtype).itemsize
    word = rng.integers(0, 1 << D, (7, 9), dtype=np.uint64).astype(f"<u{D // 8}")
    kind = np.dtype(dtype).kind
    ordered = order_map(word, kind, D)
    table = tuple(int(v) for v in np.unique(ordered))
    ch = Channel(0, word, kind, D, 0, np.dtype(dtype).name, False, False)
    got = coded(word, ch, ChannelMap(TABLE, (len(table) - 1).bit_length(), len(table) - 1, table))
    assert np.array_equal(got, np.searchsorted(np.array(table, dtype=np.uint64), ordered))
    _roundtrip(word.view(dtype), effort=9)


def _wide_channel(word: np.ndarray, dtype) -> Channel:
    return Channel(0, word, np.dtype(dtype).kind, 32, 0, np.dtype(dtype).name, False, False)


@pytest.mark.parametrize("dtype", [np.uint32, np.float32])
def test_value_table_candidate_of_wide_words(dtype):
    """5: a table candidate of 32-bit words holds exactly their distinct ordered values, sorted
    (found a chunk of rows at a time); of a channel view of a multi-channel image too."""
    from imij_plugins.payload.entropy.mapchoice import table_candidate
    from imij_plugins.payload.entropy.maps import order_map

    rng = np.random.default_rng(5)
    levels = rng.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32)
    image = levels[rng.integers(0, len(levels), (700, 400, 2))]  # 1,024 rows per chunk: one chunk
    tall = levels[rng.integers(0, len(levels), (2100, 300))]  # three chunks of 873 rows
    for word in (image[:, :, 1], tall):
        cand = table_candidate(_wide_channel(word, dtype), ChannelMap(LSB, 32, 0))
        want = np.unique(order_map(word, np.dtype(dtype).kind, 32))
        assert cand is not None and cand.mode == TABLE and cand.table == tuple(want.tolist())


def test_value_table_candidate_stops_past_its_entries():
    """5: no table of more than 2^14 entries, also where the strided sample sees one value and
    only the rows between its words hold the others."""
    from imij_plugins.payload.entropy.mapchoice import table_candidate

    word = np.zeros((600, 600), dtype=np.uint32)
    flat = word.reshape(-1)
    step = word.size // 65536  # the sample's stride: its words stay 0
    others = np.flatnonzero(np.arange(word.size) % step)
    flat[others] = np.arange(1, len(others) + 1, dtype=np.uint32)
    assert table_candidate(_wide_channel(word, np.uint32), ChannelMap(LSB, 32, 0)) is None
    word[:] = 0
    flat[others[: 1 << 13]] = np.arange(1, (1 << 13) + 1, dtype=np.uint32)  # few values: a table
    assert table_candidate(_wide_channel(word, np.uint32), ChannelMap(LSB, 32, 0)).table[-1] == 1 << 13


def test_strided_sample_views_copies_and_gathers_alike():
    from imij_plugins.payload.entropy.mapchoice import _strided_sample

    rng = np.random.default_rng(2)
    image = rng.integers(0, 1 << 16, (97, 131, 3), dtype=np.uint16)
    for word in (image[:, :, 0], np.ascontiguousarray(image[:, :, 2])):
        for count in (10, 500, 4000, 1 << 16):
            want = np.ascontiguousarray(word).reshape(-1)[:: max(1, word.size // count)]
            assert np.array_equal(_strided_sample(word, count), want)


def test_features_are_exactly_the_used_ones():
    rng = np.random.default_rng(8)
    img = _image(rng, np.uint8, 8, 8, 3)
    assert encode_tuned(img).features_used == frozenset()
    assert encode_tuned(img.astype(np.int8)).features_used == {F.SIGNED_SAMPLES}
    assert encode_tuned(img.astype(np.uint64)).features_used == {F.WIDE_SAMPLES}
    cmyk = _image(rng, np.uint8, 8, 8, 4)
    assert encode_tuned(cmyk, layout=5).features_used == {F.PIXEL_MODELS}


# --- near-lossless (2.6) ---------------------------------------------------------------------------


def _check_bound(img, out, bound):
    diff = np.abs(out.astype(np.int64) - img.reshape(out.shape).astype(np.int64))
    assert int(diff.max()) <= bound


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from([np.uint8, np.uint16, np.uint32, np.int32]),
    channels=st.sampled_from([1, 3, 4]),
    bound=st.integers(0, 40),
    shape=st.tuples(st.integers(1, 9), st.integers(1, 23)),
    shift=st.sampled_from([0, 4]),
    effort=st.sampled_from([1, 5, 9]),
)
def test_near_lossless_bound_holds_for_every_sample(seed, dtype, channels, bound, shape, shift, effort):
    rng = np.random.default_rng(seed)
    h, w = shape
    bits = np.dtype(dtype).itemsize * 8
    hi = 1 << min(bits - 1 if np.dtype(dtype).kind == "i" else bits, 12)
    img = (rng.integers(0, hi, (h, w, channels)) << shift).astype(dtype)
    if rng.random() < 0.5:
        img[:, : w // 2] = img[0, 0]
    enc = encode_tuned(img, max_error=bound, effort=effort, stripe_rows=4)
    out, hdr = _decode(img, enc)
    _check_bound(img, out, bound)
    head, _ = _head(img, enc)
    deltas = None
    rec = head.record(REC_NEAR)
    if rec is not None:
        from imij_plugins.payload.entropy.near import read_bounds

        deltas = read_bounds(rec.payload, hdr, check_maps(hdr, head.maps))
        assert any(deltas) and F.NEAR_LOSSLESS in enc.features_used
    else:
        assert F.NEAR_LOSSLESS not in enc.features_used
    if bound == 0:
        assert rec is None and np.array_equal(out, img)


@NEEDS_C
def test_near_lossless_with_constant_colour_slots_on_both_backends():
    # a symbolic icon: one colour, shapes only in alpha; its colour slots map to depth 0, where
    # the reference's decorrelation mode 3 shifted by depth - 1 (negative) and raised
    img = np.zeros((16, 16, 4), np.uint8)
    img[1, 3:8] = img[3:5, 2:9] = img[7:10, 3:6] = img[6:12, 7:16] = 255
    img[8:11, 9:14] = 0
    img[3, 1], img[5, 6:9, 3], img[14, 9:14, 3] = 197, (250, 121, 27), (180, 240, 255, 240, 180)
    img[..., :3] = 0
    a, b = both(encode_tuned, img, max_error=2)
    assert a.payload == b.payload
    out, _ = _decode(img, a)
    _check_bound(img, out, 2)


def test_near_lossless_declares_only_nonzero_bounds():
    rng = np.random.default_rng(9)
    img = rng.integers(0, 256, (10, 12, 3)).astype(np.uint8)
    enc = encode_tuned(img, max_error=0.5)  # below one sample unit: exact
    assert F.NEAR_LOSSLESS not in enc.features_used
    enc = encode_tuned(img, max_error=3)
    assert F.NEAR_LOSSLESS in enc.features_used
    out, _ = _decode(img, enc)
    _check_bound(img, out, 3)
    shifted = (img.astype(np.uint16) << 8)  # Shift 8: a bound of 200 sample units is 0 coded steps
    enc = encode_tuned(shifted, max_error=200)
    assert F.NEAR_LOSSLESS not in enc.features_used
    out, _ = _decode(shifted, enc)
    assert np.array_equal(out[:, :, :], shifted)
    floats = rng.normal(0, 1, (4, 5)).astype(np.float32)  # floats stay exact
    enc = encode_tuned(floats, max_error=10)
    assert F.NEAR_LOSSLESS not in enc.features_used


def test_near_lossless_replicate_and_offset():
    rng = np.random.default_rng(10)
    v = rng.integers(0, 1024, (9, 14)).astype(np.uint16)
    rep = (v << 6) | (v >> 4)
    enc = encode_tuned(rep, max_error=300)
    out, _ = _decode(rep, enc)
    _check_bound(rep, out, 300)
    big = (np.uint32(0xFFFFF000) + rng.integers(0, 4096, (9, 14))).astype(np.uint32)
    enc = encode_tuned(big, max_error=5)
    out, _ = _decode(big, enc)
    _check_bound(big, out, 5)


# --- kernels: C against the Python references ------------------------------------------------------


def _planes(rng, S, h, w, depths):
    planes = np.stack([rng.integers(0, 1 << d, (h, w)) if d else np.zeros((h, w), np.int64) for d in depths])
    if rng.random() < 0.5:  # smoother content
        planes = np.cumsum(planes % 5, axis=2) % np.array([1 << d if d else 1 for d in depths])[:, None, None]
    return planes.astype(np.uint32)


@NEEDS_C
@pytest.mark.parametrize("seed", range(6))
def test_kernels_match_their_references(seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        S = int(rng.integers(1, 5))
        h, w = int(rng.integers(1, 9)), int(rng.integers(1, 45))
        n = int(rng.choice([1, 3, 8, 12, 16, 24, 32]))
        depths = [n] * S
        if S > 3:
            depths[3] = int(rng.integers(0, 9))
        planes = _planes(rng, S, h, w, depths)
        lanes = int(rng.integers(1, 17))
        decor = S >= 3 and bool(rng.random() < 0.7)
        pm, rs, cs = int(rng.integers(1, 128)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        mm = int(rng.integers(1, 16)) if decor else 1
        a, b = both(costs, planes, depths, lanes, decor, pm, mm, rs, cs)
        assert np.array_equal(a, b)
        mode, preds, _ = choose(a, mm)
        u, ub = both(residuals, planes, depths, lanes, preds, mode)
        assert np.array_equal(u, ub)
        for run_min in (0, 1, 2, 4):
            u0 = u[0] if S > 1 else None
            x, y = both(stats, u[-1], u0, lanes, int(rng.integers(0, 4)), run_min)
            for xa, ya in zip(x, y):
                assert (xa is None) == (ya is None)
                if xa is not None:
                    assert all(np.array_equal(p, q) for p, q in zip(xa, ya))
        deltas = [int(rng.integers(0, 1 << (d - 1))) if d >= 2 else 0 for d in depths]
        x, y = both(near, planes, depths, deltas, lanes, decor, pm, mm)
        assert x[:2] == y[:2] and np.array_equal(x[2], y[2]) and np.array_equal(x[3], y[3])
        if all(d <= 16 for d in depths):
            x, y = both(palette, planes)
            assert (x is None) == (y is None)
            if x is not None:
                assert x[0] == y[0] and np.array_equal(x[1], y[1])


@NEEDS_C
@pytest.mark.parametrize("tuples", [1, 255, 256, 257])
def test_palette_kernel_on_flat_areas(tuples):
    """Repeated tuples (the kernel reuses the position before's) up to and past 256 entries."""
    rng = np.random.default_rng(tuples)
    colors = np.arange(tuples)[:, None] * np.array([1, 3, 7]) % 512
    flat = np.repeat(colors[rng.permutation(tuples)], rng.integers(1, 9, tuples), axis=0)
    planes = np.ascontiguousarray(flat.T.reshape(3, 1, -1)).astype(np.uint16)
    x, y = both(palette, planes)
    assert (x is None) == (y is None) == (tuples > 256)
    if x is not None:
        assert x[0] == y[0] and np.array_equal(x[1], y[1])


@NEEDS_C
@pytest.mark.parametrize("values", [1, 2, 200, 256])
def test_palette_kernel_on_one_byte_slot(values):
    """One slot of bytes (the kernel's direct table): entries, their order and the index plane
    as the reference finds them."""
    rng = np.random.default_rng(values)
    levels = rng.permutation(256)[:values]
    planes = levels[rng.integers(0, values, (1, 37, 53))].astype(np.uint8)
    x, y = both(palette, planes)
    assert x[0] == y[0] == [(int(v),) for v in sorted(levels)] and np.array_equal(x[1], y[1])


@NEEDS_C
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
@pytest.mark.parametrize("kind", ["u", "i", "f"])
def test_word_summary_kernel(dtype, kind):
    """Every channel count and a length past the kernel's blocks (and short of one): extremes and
    ors of the ordered and the raw words, as the reference finds them."""
    rng = np.random.default_rng(len(kind) + np.dtype(dtype).itemsize)
    D = 8 * np.dtype(dtype).itemsize
    for channels in (1, 2, 3, 4, 7, 16):
        for pixels in (1, 63, 200):
            words = rng.integers(0, 1 << D, (pixels, channels), dtype=np.uint64).astype(dtype)
            words[rng.random(words.shape) < 0.3] >>= dtype(3)  # values with the sign bit clear too
            x, y = both(word_summary, words, kind, D)
            assert x == y


@NEEDS_C
def test_kernels_on_wide_rows():
    """Rows wider than the kernels' 256-column chunks and 4096-column class segments."""
    rng = np.random.default_rng(21)
    planes = _planes(rng, 3, 3, 5000, [8, 8, 8])
    for rows, cols in ((2, 2), (1, 3)):  # sampled columns across chunk and lane ends
        a, b = both(costs, planes, [8] * 3, 16, True, 0x7F, 0xF, rows, cols)
        assert np.array_equal(a, b)
    a, b = both(costs, planes, [8] * 3, 16, True, 0x7F, 0xF, 1, 1)
    assert np.array_equal(a, b)
    mode, preds, _ = choose(a, 0xF)
    u, ub = both(residuals, planes, [8] * 3, 16, preds, mode)
    assert np.array_equal(u, ub)
    u[1, :, 100:700] = 0
    u[1, :, 4200:4900] = 0
    x, y = both(stats, u[1], u[0], 16, 0, 4)
    assert all(np.array_equal(p, q) for xa, ya in zip(x, y) for p, q in zip(xa, ya))
    model = choose_model({False: SlotStats(*x[0]), True: SlotStats(*x[1])}, 8, 0, effort_of(9))
    s1, s2 = both(stream, u[1], u[0], 16, model.enc)
    assert s1 == s2


@NEEDS_C
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_runs_across_rows_and_past_the_cap(dtype):
    """3.2: zero runs that go on in a lane's next rows, stop at a lane's or the plane's end, or
    pass the 2^15 cap, found 8 bytes at a time: the kernels' counts and stream are the
    reference's, in every value width."""
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    h, w = 150, 300  # 45,000 positions, 16 lanes of 19 columns
    u = rng.integers(0, 3, (h, w)).astype(dtype)
    u[2:130] = 0  # runs that go on across 128 rows of every lane
    u[:, 19:38] = 0  # one lane zero from top to bottom
    u[140:, :] = 0  # every lane ends in zeros at the plane's end
    u[60, 5] = 1  # a value inside a run, at an odd byte offset
    wide = np.zeros((2, 17000), dtype=dtype)  # one lane, one run of 34,000 positions: past the cap
    for plane, lanes in ((u, 16), (u, 3), (wide, 1)):
        x, y = both(stats, plane, None, lanes, 0, 4)
        assert all(np.array_equal(p, q) for p, q in zip(x[0], y[0]))
        model = choose_model({False: SlotStats(*x[0])}, 8 * np.dtype(dtype).itemsize if dtype != np.uint32 else 20, 0,
                             effort_of(5))
        a, b = both(stream, plane, None, lanes, model.enc)
        assert a == b


@NEEDS_C
@pytest.mark.parametrize("seed", range(4))
def test_stream_kernel_matches_the_writers_coder(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(12):
        h, w = int(rng.integers(1, 12)), int(rng.integers(1, 50))
        n = int(rng.choice([1, 2, 5, 8, 12, 16, 20, 32]))
        lanes = int(rng.integers(1, 17))
        u = rng.integers(0, 1 << min(n, 6), (h, w)).astype(np.uint32)
        u[rng.random((h, w)) < 0.5] = 0
        if n > 8:
            u[rng.random((h, w)) < 0.1] = (1 << n) - 1
        u0 = rng.integers(0, 1 << min(n, 6), (h, w)).astype(np.uint32)
        sh = max(0, n - 16)
        with _backend.use("c"):
            plain, cross = stats(u, u0, lanes, sh, 4)
        model = choose_model({False: SlotStats(*plain), True: SlotStats(*cross)}, n, sh,
                             effort_of(int(rng.choice([1, 5, 9]))))
        a, b = both(stream, u, u0, lanes, model.enc)
        assert a == b


def test_forward_map_agrees_with_the_encoders_coded_values():
    """The encoder's coded values are what maps.forward gives (the decoder expands them back)."""
    from imij_plugins.payload.entropy.mapchoice import Channel, candidate_maps, coded
    from imij_plugins.payload.entropy.maps import CodedChannel

    rng = np.random.default_rng(13)
    for dtype in (np.uint16, np.int16, np.float16, np.float32, np.int32):
        img = _image(rng, dtype, 5, 7, 1)[:, :, 0]
        word = img.view(np.dtype(f"<u{img.dtype.itemsize}"))
        kind = np.dtype(dtype).kind
        D = img.dtype.itemsize * 8
        ch = Channel(0, word, kind, D, 0, np.dtype(dtype).name.replace("float", "f").replace("uint", "u").replace("int", "i"), False, False)
        for cmap in candidate_maps(ch):
            cc = CodedChannel(0, 0, False, False, D, kind, 0, cmap)
            assert np.array_equal(coded(word, ch, cmap).astype(np.uint64), forward(word.astype(np.uint64), cc))


def test_small_and_large_channels_find_the_same_tested_map(monkeypatch):
    """5: a small channel's Replicate / Scale / UnormF32 maps are tested on its distinct values
    at once, a large one's on a strided sample first; both find the same first exact map."""
    from imij_plugins.payload.entropy import mapchoice
    from imij_plugins.payload.entropy.mapchoice import Channel, candidate_maps

    rng = np.random.default_rng(23)
    words = [
        (rng.integers(0, 16, (40, 70)) * 17).astype(np.uint8),  # Replicate 4 bits
        ((rng.integers(0, 8, (40, 70)) * 255 + 3) // 7).astype(np.uint8),  # Scale 3 bits
        (rng.integers(0, 16, (40, 70)) * 4369).astype(np.uint16),  # Replicate 4 bits of 16
        rng.integers(0, 256, (40, 70)).astype(np.uint8),  # no tested map
        (rng.integers(0, 16, (40, 70)) * 17 + (rng.random((40, 70)) < 0.001)).astype(np.uint8),  # nearly
    ]
    for w in words:
        kind, D = "u", w.dtype.itemsize * 8
        ch = lambda: Channel(0, w, kind, D, 0, f"u{D}", False, False)  # noqa: E731  # a fresh summary
        small = candidate_maps(ch())
        monkeypatch.setattr(mapchoice, "SMALL_CHANNEL", 0)
        large = candidate_maps(ch())
        monkeypatch.undo()
        assert small == large


@pytest.mark.parametrize("case", ["two", "few", "one unit many", "one bit"])
def test_image_tuples_from_the_units(case):
    """5: the chooser's image tuples summed over the units (the encoder's way: no whole-image
    copy, non-candidate units looked at one by one) are the whole image's, in the same order."""
    from types import SimpleNamespace

    from imij_plugins.payload.entropy.level_writer import LevelCoder, LevelOptions, UnitChoice
    from imij_plugins.payload.entropy.rans import Lanes

    rng = np.random.default_rng(len(case))
    S = 1 if case == "one bit" else 3
    top = {"two": 2, "few": 40, "one unit many": 40, "one bit": 2}[case]
    colors = rng.integers(0, 256, (top, S))
    if case == "one bit":
        colors = np.array([[0], [1]])
    planes = np.ascontiguousarray(colors[rng.integers(0, top, (48, 30))].transpose(2, 0, 1)).astype(np.uint8)
    if case == "one unit many":
        planes[:, 36:] = rng.integers(0, 256, (S, 12, 30))  # the last unit: more than 256 tuples
    slots = [SimpleNamespace(depth=1 if case == "one bit" else 8)] * S  # what the coder reads of a slot
    unit = lambda i: planes[:, 12 * i : 12 * i + 12]  # noqa: E731  # 4 stripes of 12 rows
    whole = LevelCoder(LevelOptions(), slots, planes, False)
    by_units = LevelCoder(LevelOptions(), slots, (4, unit), False)
    for i in (0, 2):  # candidates the coder holds; units 1 and 3 are looked at on demand
        for coder in (whole, by_units):
            coder.consider(i, UnitChoice(), unit(i), Lanes.of(30, 2))
    a, b = whole.image_tuples(), by_units.image_tuples()
    assert (a is None) == (b is None) == (case == "one unit many")
    if a is not None:
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_bilevel_and_template_stripes_where_they_pay():
    """5: units of few tuples go through the bilevel / template chooser (level_writer), which
    keeps them only when smaller and declares exactly the records it writes."""
    rng = np.random.default_rng(4)
    page = np.zeros((160, 240), np.uint8)
    for _ in range(120):  # strokes of text-like ink
        y, x = int(rng.integers(0, 150)), int(rng.integers(0, 200))
        page[y : y + int(rng.integers(2, 10)), x : x + int(rng.integers(2, 40))] = 255
    enc = _roundtrip(page, effort=5)
    assert enc.features_used <= {F.BILEVEL, F.TEMPLATE_PALETTES}
    two = np.where(page[:, :, None] > 0, np.array([0, 0, 0], np.uint8), np.array([255, 255, 240], np.uint8))
    _roundtrip(two, effort=1)
    grays = (page // 255 * 170 + (page[:, ::-1] // 255) * 85).astype(np.uint8)  # four levels
    grays[0, 0] = 1  # an 8-bit map, so a bound of 3 is 3 coded steps
    near = encode_tuned(grays, max_error=3)  # 5: never with near-lossless bounds
    assert not (F.NEAR_LOSSLESS in near.features_used and near.features_used & {F.BILEVEL, F.TEMPLATE_PALETTES})
    out, _ = _decode(grays, near)
    _check_bound(grays, out, 3)



def test_stat_buckets_cover_every_value_and_run():
    """context_stats.stat_buckets: the first bucket past a depth's largest value and a unit's longest run."""
    assert stat_buckets(8, 1) == 256
    assert stat_buckets(9, 1) == 272  # 511: msb 8, 16 buckets above 256
    assert stat_buckets(17, 4096) == 400
    assert stat_buckets(8, 64 * 64) == 320  # runs of up to 4096 positions: bucket(4095) = 319
    assert stat_buckets(32, 1) == BUCKETS
    assert stat_buckets(8, 1 << 20) == 368  # runs stop at 2^15 positions: bucket(32767) = 367


@NEEDS_C
@pytest.mark.parametrize("seed", range(3))
def test_trimmed_statistics_are_the_full_ones_cut(seed):
    """Statistics of stat_buckets' width are the 640-bucket ones' first columns, on both
    backends, and the models chosen from either are the same."""
    rng = np.random.default_rng(300 + seed)
    depth = int(rng.choice([5, 8, 9, 12]))
    u = rng.integers(0, 1 << depth, (40, 70)).astype(np.uint16)
    u[rng.random(u.shape) < 0.4] = 0
    u[5:9] = 0
    u0 = rng.integers(0, 1 << depth, u.shape).astype(np.uint16)
    width = stat_buckets(depth, u.size)
    full, _ = both(stats, u, u0, 4, 0, 4)
    cut = both(stats, u, u0, 4, 0, 4, width)
    for (plain, cross), (fp, fc) in zip(cut, (full, full)):
        for a, f in zip(plain + cross, fp + fc):
            assert np.array_equal(a, f[:, :width] if f.ndim == 2 else f)
            assert f.ndim == 1 or not f[:, width:].any()
    eff = effort_of(9)
    m1 = choose_model({False: SlotStats(*cut[0][0]), True: SlotStats(*cut[0][1])}, depth, 0, eff)
    m2 = choose_model({False: SlotStats(*full[0]), True: SlotStats(*full[1])}, depth, 0, eff)
    assert m1 == m2


def test_statistics_refuse_values_past_their_buckets():
    """A value or a run past the arrays' buckets is an error on both backends, never a write
    past them."""
    u = np.zeros((4, 8), dtype=np.uint16)
    u[0, 0] = 300  # bucket 258
    for backend in _backend.available():
        with _backend.use(backend):
            with pytest.raises(ValueError):
                stats(u, None, 1, 0, 0, 258)
            stats(u, None, 1, 0, 0, 259)
            with pytest.raises(ValueError):  # runs of up to 32 positions: bucket(31) = 31
                stats(np.zeros((4, 8), np.uint8), None, 1, 0, 4, 31)
            stats(np.zeros((4, 8), np.uint8), None, 1, 0, 4, 32)
