"""Writer -> decoder round trips over random syntax choices, every sample type and layout."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins.container.header import Header
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.maps import check_maps, forward
from imij_plugins.payload.head import read_lossless_head
from imij_plugins.registry.features import FeatureId as F
from imij_plugins.wire.cursor import Cursor

from .gen import SAMPLES, header_of, random_case
from .syntax_writer import (
    EntropyOptions,
    MapChoice,
    ModelChoice,
    UnitChoice,
    decode_entropy_payload,
    encode_entropy_payload,
    header_for,
)

ALL_SAMPLES = list(SAMPLES)


def _uint(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"<u{a.dtype.itemsize}"))


def roundtrip(image, options=None, reference=None, layout=None) -> tuple[np.ndarray, bytes, Header]:
    enc = encode_entropy_payload(image, options=options, reference=reference)
    hdr = header_for(image, enc, layout if layout is not None else (options.layout if options else None))
    out = decode_entropy_payload(enc.payload, hdr, reference=reference)
    assert out.dtype == np.dtype(hdr.sample_type.dtype) and out.shape == image.shape
    return out, enc.payload, hdr


def check_case(case) -> None:
    enc = encode_entropy_payload(case.image, options=case.options, reference=case.reference)
    hdr = header_of(case, enc.features_used)
    out = decode_entropy_payload(enc.payload, hdr, reference=case.reference)
    a, b = _uint(out), _uint(case.image)
    if case.near is None:
        assert np.array_equal(a, b), case.description
        return
    # 2.6: |v - x| <= delta per sample in coded units; channels with delta 0 exact
    head = read_lossless_head(Cursor(enc.payload), hdr)
    chans = check_maps(hdr, head.maps)
    for c, delta in enumerate(case.near):
        sa = forward(a[:, :, c].astype(np.uint64), chans[c]).astype(np.int64)
        sb = forward(b[:, :, c].astype(np.uint64), chans[c]).astype(np.int64)
        assert int(np.abs(sa - sb).max()) <= delta, case.description


@pytest.mark.parametrize("chunk", range(20))
def test_random_syntax(chunk):
    for seed in range(chunk * 30, chunk * 30 + 30):
        check_case(random_case(seed))


@pytest.mark.parametrize("sample", ALL_SAMPLES)
@pytest.mark.parametrize("layout", range(1, 8))
def test_every_sample_type_and_layout(sample, layout):
    for seed in range(3):
        check_case(random_case(10_000 + 97 * seed + layout, sample=sample, layout=layout, size=(5, 9)))


@pytest.mark.parametrize("sample", ALL_SAMPLES)
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_defaults(sample, channels):
    """The writer's defaults are valid for raw random bits of every sample type."""
    rng = np.random.default_rng(channels)
    dt = np.dtype(SAMPLES[sample].dtype)
    raw = rng.integers(0, 256, size=(6, 11, channels * dt.itemsize), dtype=np.uint8)
    image = raw.view(dt).reshape(6, 11, channels)
    out, _, _ = roundtrip(image)
    assert np.array_equal(_uint(out), _uint(image))


@pytest.mark.parametrize("lanes", range(1, 17))
def test_lanes(lanes):
    rng = np.random.default_rng(lanes)
    image = rng.integers(0, 40, size=(7, 23, 3), dtype=np.uint8)
    out, payload, _ = roundtrip(image, EntropyOptions(lanes=lanes, stripe_rows=3))
    assert payload[1] == lanes
    assert np.array_equal(out, image)


def test_column_groups_and_stripes():
    rng = np.random.default_rng(5)
    image = rng.integers(0, 1 << 16, size=(17, 29, 4), dtype=np.uint16)
    for groups in (1, 2, 7, 28):
        out, _, hdr = roundtrip(image, EntropyOptions(group_cols=groups, stripe_rows=4, lanes=3))
        assert np.array_equal(out, image)


def test_wide_samples_hi_and_lo_words():
    """f64 widened from f32: the lo word codes 3 bits under a Shift map for negative values too (2.1)."""
    rng = np.random.default_rng(0)
    image = (rng.standard_normal((6, 8, 1)).astype(np.float32)).astype(np.float64)
    image[0, 0, 0] = -0.0
    image[0, 1, 0] = np.inf
    maps = [MapChoice(0, 32), MapChoice(1, 3)]
    out, payload, hdr = roundtrip(image, EntropyOptions(maps=maps))
    assert np.array_equal(_uint(out), _uint(image))
    # u64 / i64 with Const lo words and an RGBA alpha whose both words are Const
    img = rng.integers(-(2**62), 2**62, size=(5, 6, 4), dtype=np.int64)
    img[:, :, 3] = 7
    img[:, :, :3] &= ~np.int64(0xFFFFFFFF)
    for data in (img, img.view(np.uint64)):
        out, _, _ = roundtrip(data, EntropyOptions(lanes=2))
        assert np.array_equal(out, data)


def test_value_tables():
    rng = np.random.default_rng(2)
    values = np.array([3, 90, 1000, 40000, 65535], dtype=np.uint16)
    image = values[rng.integers(0, 5, size=(9, 10, 3))]
    maps = [MapChoice(9), MapChoice(9, alias=True), MapChoice(0, 16)]
    out, _, hdr = roundtrip(image, EntropyOptions(maps=maps))
    assert F.VALUE_TABLES in hdr.mask
    assert np.array_equal(out, image)
    halves = np.array([0.5, -0.25, np.inf, np.nan, -0.0], dtype=np.float16)
    image = halves[rng.integers(0, 5, size=(4, 5, 1))]
    out, _, _ = roundtrip(image, EntropyOptions(maps=[MapChoice(9)]))
    assert np.array_equal(_uint(out), _uint(image))


def test_float_shift():
    rng = np.random.default_rng(3)
    f = rng.standard_normal((6, 7, 1)).astype(np.float32) * 100
    f = (f.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)  # BitRound to 16 raw bits
    f[0, 0, 0] = -0.0
    out, _, hdr = roundtrip(f, EntropyOptions(maps=[MapChoice(8, 16)]))
    assert F.FLOAT_SHIFT in hdr.mask
    assert np.array_equal(_uint(out), _uint(f))
    h = (rng.standard_normal((4, 4, 1)).astype(np.float16).view(np.uint16) & np.uint16(0xFFF0)).view(np.float16)
    out, _, _ = roundtrip(h, EntropyOptions(maps=[MapChoice(8, 12)]))
    assert np.array_equal(_uint(out), _uint(h))


def test_f16_in_f32_and_unorm_f32():
    every_half = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        wide = every_half.astype(np.float32)
    # numpy may quiet signaling NaNs: widen NaNs bit-exactly (payload shifted up 13 bits)
    bits = every_half.view(np.uint16).astype(np.uint32)
    nan = (bits & 0x7C00) == 0x7C00
    wide_bits = np.where(nan, ((bits >> 15) << 31) | 0x7F800000 | ((bits & 0x3FF) << 13), wide.view(np.uint32))
    image = wide_bits.astype(np.uint32).view(np.float32).reshape(256, 256, 1)[:32]
    out, _, _ = roundtrip(image, EntropyOptions(maps=[MapChoice(5, 16)], lanes=16))
    assert np.array_equal(_uint(out), _uint(image))
    unorm = (np.arange(256, dtype=np.float32) / np.float32(255)).reshape(16, 16, 1)
    out, _, _ = roundtrip(unorm, EntropyOptions(maps=[MapChoice(6, 8)]))
    assert np.array_equal(_uint(out), _uint(unorm))


def test_offset_map():
    rng = np.random.default_rng(4)
    image = (np.uint32(0xFFFFFF00) + rng.integers(0, 600, size=(5, 5, 1)).astype(np.uint32))  # wraps
    out, _, hdr = roundtrip(image, EntropyOptions(maps=[MapChoice(7, 10, 0xFFFFFF00)]))
    assert F.OFFSET_MAP in hdr.mask
    assert np.array_equal(out, image)


def test_const_alpha():
    rng = np.random.default_rng(6)
    image = rng.integers(0, 256, size=(5, 5, 4), dtype=np.uint8)
    image[:, :, 3] = 200
    enc = encode_entropy_payload(image)
    hdr = header_for(image, enc)
    assert len(prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr)).plan.slots) == 3
    assert np.array_equal(decode_entropy_payload(enc.payload, hdr), image)
    f = np.full((3, 3, 2), -1.5, dtype=np.float16)  # Const values are order-domain (2.1)
    f[:, :, 0] = 0.25
    out, _, _ = roundtrip(f, EntropyOptions(maps=[MapChoice(0, 16), MapChoice(4, 0, 0xBE00 ^ 0x7FFF)]))
    assert np.array_equal(_uint(out), _uint(f))


def test_runs():
    image = np.zeros((40, 50, 1), dtype=np.uint16)
    image[20, 10, 0] = 9
    for runs in (1, 4, None):
        out, payload, _ = roundtrip(image, EntropyOptions(lanes=3, models=[ModelChoice(runs=runs)]))
        assert np.array_equal(out, image)
    big = np.zeros((300, 300, 1), dtype=np.uint8)  # runs longer than 2^15 positions split
    out, payload, _ = roundtrip(big, EntropyOptions(lanes=1, stripe_rows=300))
    assert np.array_equal(out, big)


def test_palette_stripes():
    rng = np.random.default_rng(7)
    colors = rng.integers(0, 256, size=(5, 3), dtype=np.uint8)
    image = colors[rng.integers(0, 5, size=(12, 13))]
    unit = UnitChoice(palette=True, palette_alias=True, palette_seed=3)
    out, payload, _ = roundtrip(image, EntropyOptions(palette=True, unit=unit, stripe_rows=5))
    assert np.array_equal(out, image)
    # mixed: some units palette, some not, with near-lossless bounds (palettes stay exact)
    units = [UnitChoice(palette=True), UnitChoice(palette=False), None]
    out, _, _ = roundtrip(image, EntropyOptions(palette=True, units=units, stripe_rows=5, near=[2, 2, 2]))
    assert np.array_equal(out[:5], image[:5])
    assert np.abs(out.astype(int) - image.astype(int)).max() <= 2


@pytest.mark.parametrize("sample", ["u8", "u16", "u32", "i32"])
def test_near_lossless_bound_holds(sample):
    rng = np.random.default_rng(8)
    dt = np.dtype(SAMPLES[sample].dtype)
    info = np.iinfo(dt)
    image = rng.integers(max(info.min, -(2**20)), min(info.max, 2**20), size=(9, 14, 3), dtype=np.int64).astype(dt)
    image[0, 0] = info.max
    image[0, 1] = info.min
    for decor in range(4):
        opts = EntropyOptions(near=[3, 0, 9], unit=UnitChoice(decor=decor, predictors=[0, 1, 2, 3, 4, 5, 6, 3, 3]), lanes=4)
        out, _, hdr = roundtrip(image, opts)
        assert F.NEAR_LOSSLESS in hdr.mask
        err = np.abs(out.astype(np.int64) - image.astype(np.int64)).max(axis=(0, 1))
        assert err.tolist()[1] == 0 and err[0] <= 3 and err[2] <= 9


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 6, 9, 5, 8, 7])
def test_inter_predictors(mode):
    """Predictors 7-9 against a reference reduced through each map (section 4)."""
    rng = np.random.default_rng(mode)
    if mode in (5, 6, 8, 7):
        f = rng.integers(0, 256, size=(6, 9, 1)).astype(np.float32) / np.float32(255)
        if mode == 5:
            image = f.astype(np.float16).astype(np.float32)
            maps = [MapChoice(5, 16)]
        elif mode == 6:
            image, maps = f, [MapChoice(6, 8)]
        elif mode == 8:
            image = (f.view(np.uint32) & np.uint32(0xFFF00000)).view(np.float32) * -1
            maps = [MapChoice(8, 12)]
        else:
            image = rng.integers(1000, 1200, size=(6, 9, 1)).astype(np.uint32)
            maps = [MapChoice(7, 8, 1000)]
        reference = image.copy()
        noise = rng.random(image.shape) < 0.3
        reference[noise] = rng.permutation(image.reshape(-1))[: noise.sum()]
        reference[0, 0, 0] = np.float32(np.nan) if image.dtype == np.float32 else 5  # reduces to something
    else:
        image = rng.integers(0, 4096, size=(6, 9, 1)).astype(np.uint16) << 4
        maps = [MapChoice(mode, 12 if mode in (1, 2, 3) else None)] if mode != 0 else [MapChoice(0, 16)]
        if mode == 2:
            image = (image >> 4) * 0x1001 >> 0
            image = ((image & 0xFFF) << 4 | (image & 0xFFF) >> 8).astype(np.uint16)
        if mode == 3:
            s = rng.integers(0, 4096, size=(6, 9, 1))
            image = ((s * 65535 + 2047) // 4095).astype(np.uint16)
        reference = (image.astype(np.int64) + rng.integers(-300, 300, size=image.shape)).clip(0, 65535).astype(np.uint16)
    opts = EntropyOptions(maps=maps, lanes=2, unit=UnitChoice(predictors=[7, 7, 8, 9, 8, 9]))
    out, _, _ = roundtrip(image, opts, reference=reference)
    assert np.array_equal(_uint(out), _uint(image))


@pytest.mark.parametrize("table", ["hint", "filled", "empty", "tail", None])
@pytest.mark.parametrize("ordinals", [False, True])
def test_unit_tables_ordinals_side_records(table, ordinals):
    rng = np.random.default_rng(9)
    image = rng.integers(0, 256, size=(10, 6, 2), dtype=np.uint8)
    opts = EntropyOptions(stripe_rows=3, group_cols=4, unit_table=table, ordinals=ordinals, side_records=True,
                          reservation_padding=2, table_width=3, models_padding=3)
    out, _, hdr = roundtrip(image, opts)
    assert (F.UNIT_ORDINALS in hdr.mask) == ordinals
    assert np.array_equal(out, image)


def test_invalid_choices_raise_value_error():
    image = np.zeros((2, 2, 1), dtype=np.uint8)
    bad = [
        EntropyOptions(maps=[MapChoice(1, 0)]),
        EntropyOptions(maps=[MapChoice(4, 0, 0)]),
        EntropyOptions(unit=UnitChoice(decor=1)),
        EntropyOptions(unit=UnitChoice(predictors=[3, 3])),
        EntropyOptions(unit=UnitChoice(predictors=[0, 7])),
        EntropyOptions(unit=UnitChoice(palette=True)),
        EntropyOptions(maps=[MapChoice(0, 8)], models=[ModelChoice(k=8, m=0)]),  # alphabet 528
        EntropyOptions(models=[ModelChoice(cross=True)]),
        EntropyOptions(near=[200]),
        EntropyOptions(lanes=17),
    ]
    for opts in bad:
        with pytest.raises(ValueError):
            encode_entropy_payload(image, options=opts)
    with pytest.raises(ValueError):  # the map cannot represent the samples
        encode_entropy_payload(np.full((2, 2, 1), 3, dtype=np.uint8), options=EntropyOptions(maps=[MapChoice(1, 4)]))
