"""Bad input for bilevel (2.10) and template palette (2.14) stripes: mutated payloads, records and
files raise only ImijError subclasses, and the C kernel agrees with the Python reference on every
body, good or bad (same pixels, or both Corrupt)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import imij_plugins
from imij_plugins import _backend
from imij_plugins.errors import ImijError
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.entropy.level_writer import LevelOptions
from imij_plugins.payload.head import read_lossless_head
from imij_plugins.wire.cursor import Cursor

from .syntax_writer import EntropyOptions, decode_entropy_payload, encode_entropy_payload, header_for
from .test_bilevel_mutation_cases import CASES, mutate


def _cases(seed0: int, count: int):
    for seed in range(seed0, seed0 + count):
        image, options = CASES(seed)
        try:
            enc = encode_entropy_payload(image, options=options)
        except ValueError:
            continue
        yield seed, image, enc, header_for(image, enc)


@pytest.mark.parametrize("chunk", range(4))
def test_mutated_payloads(backend, chunk):
    """Through the C path (the Python backend runs a quarter of them)."""
    count = 15 if backend == "c" else 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed, _image, enc, hdr in _cases(1000 + 15 * chunk, count):
            rng = random.Random(seed)
            for _ in range(60 if backend == "c" else 8):
                bad = mutate(rng, enc.payload, enc.head_len)
                try:
                    decode_entropy_payload(bad, hdr)
                except ImijError:
                    pass


def test_c_kernel_agrees_with_the_reference_on_mutated_bodies(backend):
    if backend != "c":
        pytest.skip("compares both backends itself")
    rng = random.Random(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed, image, enc, hdr in _cases(2000, 25):
            payload = prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr))
            from imij_plugins.payload.data import read_data

            data = read_data(enc.payload, hdr, 0, len(enc.payload))
            for i, unit in enumerate(data.units):
                x, y, w, h = data.head.geometry.unit_rect(i)
                body = enc.payload[unit.body_start : unit.end]
                for trial in range(12):
                    bad = body if trial == 0 else mutate(rng, body, 1)
                    outcome = []
                    for name in ("c", "python"):
                        with _backend.use(name):
                            try:
                                outcome.append(payload.decode_unit(bad, w, h).tobytes())
                            except ImijError:
                                outcome.append("error")
                    assert outcome[0] == outcome[1], (seed, i, trial)
                    if trial == 0:
                        assert outcome[0] == np.ascontiguousarray(image.reshape(hdr.height, hdr.width, -1)[y : y + h, x : x + w]).tobytes()


def test_random_bodies_against_random_records(backend):
    """Structurally plausible bodies of every layout against plans with records 25 and 35."""
    rng = random.Random(backend)
    image = np.array([[0, 1, 2, 3, 4, 5]] * 4, dtype=np.uint8)
    opts = EntropyOptions(lanes=3, levels=LevelOptions(choose=False, record25=True, record35=True, shared=True, escape=True, seed=4))
    enc = encode_entropy_payload(image, options=opts)
    hdr = header_for(image, enc)
    payload = prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(300 if backend == "c" else 60):
            decor = rng.choice([0x81, 0x82, 0x83, 0x84])
            body = bytearray([decor])
            if decor in (0x82, 0x83):
                n = rng.choice([1, 2, 3, rng.randint(1, 256)])
                body += bytes([n - 1]) + bytes(rng.randrange(8) for _ in range(rng.choice([n, n, rng.randint(0, n)])))
            if decor >= 0x83:
                body += bytes([rng.choice([0, 0, rng.randrange(256)])])
            body += bytes(rng.randrange(256) for _ in range(rng.choice([4, 8, 12, 14, rng.randint(0, 60)])))
            for w, h in ((6, 4), (1, 1), (17, 3)):
                try:
                    payload.decode_unit(bytes(body), w, h)
                except ImijError:
                    pass


def test_mutated_files():
    rng = np.random.default_rng(3)
    page = rng.random((48, 64)) < 0.1
    shot = np.array([[10, 20, 30], [200, 100, 0], [0, 0, 0]], np.uint8)[rng.integers(0, 3, (30, 40))]
    files = [imij_plugins.encode(page, codec="entropy"), imij_plugins.encode(shot, codec="entropy", stripe_rows=8)]
    r = random.Random(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for data in files:
            assert imij_plugins.read(data) is not None
            for _ in range(60):
                bad = mutate(r, data, 20)
                try:
                    imij_plugins.read(bad)
                except ImijError:
                    pass
