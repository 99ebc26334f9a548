"""The C kernels' SIMD and scalar paths agree on every input (imij_entropy_simd, csrc/imij_kernels.h): entropy
stripes (csrc/entropy.c) and bilevel and template stripes (csrc/bilevel.c).

``lib.imij_entropy_simd(p)`` selects the fastest path up to ``p``: 0 scalar, 1 AVX2, 2 AVX-512
(``IMIJ_ENTROPY_SIMD=0`` in the environment selects the scalar path at start-up). Each payload
decodes on the scalar path and on every SIMD path the CPU has; the outputs, or the errors, must
be identical, including for random-byte-mutated payloads whose errors arise deep inside the
streams.

The SIMD path takes steps with x > 0 and r > 0, lanes inside zero runs masked, and reads a
stream's last 64 bytes from a zero-padded copy, so the cases here are wide and tall enough for it
to run for many steps, and include nearly constant images whose streams are shorter than 64 bytes;
on a CPU without AVX2 every run takes the scalar path and the test still holds.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import imij_plugins
from imij_plugins import _backend
from imij_plugins.errors import ImijError
from imij_plugins.payload.data import read_data
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.level_writer import LevelOptions

from .gen import header_of, random_case
from .syntax_writer import (
    EntropyOptions,
    ModelChoice,
    UnitChoice,
    decode_entropy_payload,
    encode_entropy_payload,
    header_for,
)
from .test_bilevel_mutation_cases import mutate
from .test_entropy_mutation import _mutate


@pytest.fixture
def paths(backend):
    """Only meaningful on the C backend; restores the default path afterwards."""
    if backend != "c" or not hasattr(_backend.lib, "imij_entropy_simd"):
        pytest.skip("the C kernel's paths")
    lib = _backend.lib
    before = lib.imij_entropy_simd(-1)
    yield lib
    lib.imij_entropy_simd(before)


def _outcome(fn):
    try:
        result = fn()
    except ImijError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", result)


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a == b
    x, y = a[1], b[1]
    return type(x) is type(y) and np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(
        np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8)
    )


def simd_paths(lib) -> list[int]:
    """The SIMD paths this CPU has (imij_entropy_simd, csrc/imij_kernels.h); restores the path in use."""
    before = lib.imij_entropy_simd(-1)
    paths = sorted({lib.imij_entropy_simd(p) for p in (1, 2)} - {0})
    lib.imij_entropy_simd(before)
    return paths


def _both(lib, fn):
    """The scalar path's outcome, and the one SIMD outcome every SIMD path agrees on."""
    lib.imij_entropy_simd(0)
    scalar = _outcome(fn)
    simd = scalar
    for i, path in enumerate(simd_paths(lib)):
        lib.imij_entropy_simd(path)
        got = _outcome(fn)
        assert i == 0 or _same(got, simd), (path, got[0], simd[0])
        simd = got
    return scalar, simd


@pytest.mark.parametrize("chunk", range(4))
def test_random_payloads_and_mutations(paths, chunk):
    """Random syntax (samples, lanes, models with ctx_shift and cross, runs, palettes, inter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(chunk * 6, chunk * 6 + 6):
            rng = random.Random(90_000 + seed)
            case = random_case(90_000 + seed, size=(rng.randint(6, 24), rng.randint(48, 160)))
            try:
                enc = encode_entropy_payload(case.image, options=case.options, reference=case.reference)
            except ValueError:
                continue
            hdr = header_of(case, enc.features_used)
            payloads = [enc.payload] + [_mutate(rng, enc.payload, enc.head_len) for _ in range(12)]
            for data in payloads:
                scalar, simd = _both(paths, lambda: decode_entropy_payload(data, hdr, reference=case.reference))
                assert _same(scalar, simd), (seed, scalar[0], simd[0])
            ok = _outcome(lambda: decode_entropy_payload(enc.payload, hdr, reference=case.reference))
            assert ok[0] == "ok"


def _photo(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A smooth image with noise: long value-token streams (the SIMD path's common case)."""
    y, x = np.mgrid[0:h, 0:w]
    base = 128 + 60 * np.sin(x / 17.0)[..., None] * np.cos(y / 11.0)[..., None] * np.array([1.0, 0.8, 0.6])
    return np.clip(base + rng.normal(0, 6, (h, w, 3)), 0, 255).astype(np.uint8)


def _screen(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Flat areas and text-like detail: zero runs interleaved with value tokens."""
    img = np.full((h, w, 3), 250, np.uint8)
    for _ in range(40):
        y0, x0 = rng.integers(0, h - 4), rng.integers(0, w - 12)
        img[y0 : y0 + rng.integers(1, 4), x0 : x0 + rng.integers(2, 12)] = rng.integers(0, 256, 3)
    return img


def _sparse(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A flat image with a few changed samples: streams of a few words, lanes mostly in zero runs."""
    img = np.full((h, w, 3), 17, np.uint8)
    img[rng.integers(0, h, 30), rng.integers(0, w, 30), rng.integers(0, 3, 30)] = rng.integers(0, 256, 30)
    return img


def _text(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Gray glyph-like strokes on a flat background."""
    img = np.zeros((h, w), np.uint8)
    for _ in range(300):
        y0, x0 = rng.integers(0, h - 3), rng.integers(0, w - 6)
        img[y0 : y0 + rng.integers(1, 3), x0 : x0 + rng.integers(1, 6)] = rng.integers(60, 256)
    return img


def _levels(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Twelve colours in blocks with scattered noise: template palette stripes (2.14) whose steps
    leave many lanes open after phase 0 (the candidate phases' vector path)."""
    idx = np.repeat(np.repeat(rng.integers(0, 12, (h // 2, w // 4)), 2, 0), 4, 1)
    idx = np.where(rng.random(idx.shape) < 0.15, rng.integers(0, 12, idx.shape), idx)
    return rng.integers(0, 256, (12, 3), dtype=np.uint8)[idx]


@pytest.mark.parametrize("kind", ["photo", "screen", "sparse", "gray16", "levels"])
def test_files_and_byte_mutations(paths, kind):
    rng = np.random.default_rng(7)
    if kind == "photo":
        img = _photo(rng, 96, 400)
    elif kind == "screen":
        img = _screen(rng, 96, 400)
    elif kind == "sparse":
        img = _sparse(rng, 96, 400)
    elif kind == "levels":
        img = _levels(rng, 96, 400)
    else:
        img = (_photo(rng, 64, 300)[..., 0].astype(np.uint16) * 257 + rng.integers(0, 64, (64, 300))).astype(np.uint16)
    data = imij_plugins.encode(img)
    scalar, simd = _both(paths, lambda: imij_plugins.read(data, threads=1))
    assert scalar[0] == "ok" and _same(scalar, simd)
    assert np.array_equal(np.asarray(simd[1]).reshape(img.shape), img)
    prng = random.Random(kind)
    for _ in range(40):
        buf = bytearray(data)
        for _ in range(prng.randint(1, 3)):  # mostly inside the streams: the file's bulk
            i = prng.randrange(len(buf) // 4, len(buf))
            buf[i] = prng.randrange(256)
        bad = bytes(buf)
        scalar, simd = _both(paths, lambda: imij_plugins.read(bad, threads=1))
        assert _same(scalar, simd), (scalar[0], simd[0], scalar[1:] if scalar[0] == "error" else None)


@pytest.mark.parametrize("lanes, runs", [(16, 1), (16, 4), (11, 4), (5, 2)])
def test_run_tokens_and_mutations(paths, lanes, runs):
    """Run tokens (3.1, 3.2) in most steps, taken by the SIMD steps: the runs they start, those
    reaching past a lane's or the unit's last position (mutations), lanes of a step inside runs."""
    img = _text(np.random.default_rng(lanes), 96, 400)
    options = EntropyOptions(lanes=lanes, models=[ModelChoice(k=6, m=2, runs=runs)], unit=UnitChoice(palette=False))
    enc = encode_entropy_payload(img, options=options)
    hdr = header_for(img, enc)
    data = read_data(enc.payload, hdr, 0, len(enc.payload))
    model = prepare(hdr, data.head).plan.models[0]
    assert max(model.lasts) >= (1 << 6) + 2 * (1 << 2)  # run tokens past the 72 value tokens
    scalar, simd = _both(paths, lambda: decode_entropy_payload(enc.payload, hdr))
    assert scalar[0] == "ok" and _same(scalar, simd)
    assert np.array_equal(np.asarray(simd[1]).reshape(img.shape), img)
    rng = random.Random(lanes * 10 + runs)
    for _ in range(40):
        bad = _mutate(rng, enc.payload, enc.head_len)
        scalar, simd = _both(paths, lambda: decode_entropy_payload(bad, hdr))
        assert _same(scalar, simd), (scalar[0], simd[0])


def _level_case(seed: int):
    """A few-colour image of some hundred columns with a forced bilevel or template layout (2.10,
    2.14): long SIMD phase-0 runs, typical rows, candidate and escape phases, short stream tails."""
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    h, w = r.randint(8, 40), r.randint(40, 320)
    layout = [0x81, 0x82, 0x83, 0x84][seed % 4]
    k = 2 if layout <= 0x82 else r.choice([3, 6, 40])
    idx = np.repeat(np.repeat(rng.integers(0, k, (h // 3 + 1, w // 5 + 1)), 3, 0), 5, 1)[:h, :w]
    idx[rng.random((h, w)) < 0.02] = rng.integers(0, k)
    if layout == 0x81:
        image = idx.astype(np.uint8)
    else:
        image = rng.integers(0, 256, (k, 3)).astype(np.uint8)[idx]
    options = EntropyOptions(lanes=r.randint(1, 16), unit=UnitChoice(layout=layout, typical=r.random() < 0.7),
                             levels=LevelOptions(escape=r.choice([None, True])))
    return image, options


@pytest.mark.parametrize("seed", range(8))
def test_level_stripes_and_mutations(paths, seed):
    image, options = _level_case(seed)
    enc = encode_entropy_payload(image, options=options)
    hdr = header_for(image, enc)
    scalar, simd = _both(paths, lambda: decode_entropy_payload(enc.payload, hdr))
    assert scalar[0] == "ok" and _same(scalar, simd)
    assert np.array_equal(np.asarray(simd[1]).reshape(image.shape), image)
    rng = random.Random(seed)
    for _ in range(30):
        bad = mutate(rng, enc.payload, enc.head_len)
        scalar, simd = _both(paths, lambda: decode_entropy_payload(bad, hdr))
        assert _same(scalar, simd), (scalar[0], simd[0])


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_plain_byte_stores(paths, channels):
    """The SIMD store of plain 8-bit samples (16 lanes, 1, 3 or 4 channels, every channel its
    coded value; csrc/entropy.c store_plain_bytes): lane widths that are and are not multiples of
    16, a narrower last lane, column groups (rows of a wider image); both paths give the image."""
    rng = np.random.default_rng(channels)
    for width, group in [(256, None), (300, None), (513, None), (1000, None), (1000, 400), (700, 272)]:
        img = _photo(rng, 20, width)[..., :channels] if channels <= 3 else \
            np.concatenate([_photo(rng, 20, width), rng.integers(0, 256, (20, width, 1), dtype=np.uint8)], axis=2)
        img[:, : width // 3] //= 7  # flat and noisy stretches
        data = imij_plugins.encode(img, group_cols=group)
        scalar, simd = _both(paths, lambda: imij_plugins.read(data, threads=1))
        assert scalar[0] == "ok" and _same(scalar, simd), (width, group)
        assert np.array_equal(np.asarray(simd[1]).reshape(img.shape), img), (width, group)


@pytest.mark.parametrize("predictor", range(7))
def test_intra_predictors(paths, predictor):
    """Section 4's predictors 0-6 on every row (csrc/entropy.c intra_row: all full lanes as one
    vector on the AVX-512 path) at 8, 12 and 16 bits: 16 lanes of equal width, a narrower last
    lane, 5 lanes, 2 lanes; values of a few levels, so Paeth and MED meet their ties often."""
    rng = np.random.default_rng(predictor)
    for dtype, top in [(np.uint8, 255), (np.uint16, 4095), (np.uint16, 65535)]:
        for width, lanes in [(16 * 9, 16), (16 * 9 - 5, 16), (53, 5), (9, 2)]:
            levels = rng.integers(0, 4, (24, width, 1)) * (top // 3)
            img = np.where(rng.random(levels.shape) < 0.2, rng.integers(0, top + 1, levels.shape), levels).astype(dtype)
            enc = encode_entropy_payload(img, options=EntropyOptions(lanes=lanes, unit=UnitChoice(predictors=predictor)))
            hdr = header_for(img, enc)
            scalar, simd = _both(paths, lambda: decode_entropy_payload(enc.payload, hdr))
            assert scalar[0] == "ok" and _same(scalar, simd), (dtype, width, lanes)
            assert np.array_equal(np.asarray(simd[1]).reshape(img.shape), img), (dtype, width, lanes)


@pytest.mark.parametrize("kind", ["u16", "u12", "u12 shifted", "i16"])
def test_plain_word_stores(paths, kind):
    """The SIMD store of 16-bit gray samples (16 lanes; Lsb and Shift maps, the signed sign flip;
    csrc/entropy.c store_plain_words) at the lane widths and column groups of the byte test."""
    rng = np.random.default_rng(len(kind))
    for width, group in [(256, None), (300, None), (513, None), (1000, None), (1000, 400), (700, 272)]:
        ramp = np.cumsum(rng.integers(-3, 4, (20, width)), axis=1)
        ramp[:, : width // 3] = ramp[:, : width // 3] // 7 * 7  # flat and noisy stretches
        if kind == "u16":
            img = (ramp + 40000).astype(np.uint16)
        elif kind == "u12":
            img = np.clip(ramp + 2000, 0, 4095).astype(np.uint16)
        elif kind == "u12 shifted":
            img = (np.clip(ramp + 2000, 0, 4095) << 4).astype(np.uint16)
        else:
            img = (ramp - 100).astype(np.int16)
        data = imij_plugins.encode(img, group_cols=group)
        scalar, simd = _both(paths, lambda: imij_plugins.read(data, threads=1))
        assert scalar[0] == "ok" and _same(scalar, simd), (width, group)
        assert np.array_equal(np.asarray(simd[1]).reshape(img.shape), img), (width, group)


def test_path_selection(paths):
    """A mode selects the fastest path up to it: 0 scalar, 1 AVX2, 2 AVX-512 (imij_entropy_simd, csrc/imij_kernels.h)."""
    best = paths.imij_entropy_simd(2)
    assert best in (0, 1, 2)
    assert paths.imij_entropy_simd(0) == 0 and paths.imij_entropy_simd(-1) == 0
    assert paths.imij_entropy_simd(1) == min(1, best)
    assert paths.imij_entropy_simd(7) == best
