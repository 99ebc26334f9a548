"""Bad input: random and mutated payloads, heads and unit bodies raise only ImijError subclasses."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from imij_plugins.errors import ImijError
from imij_plugins.payload.entropy.decoder import prepare
from imij_plugins.payload.head import ChannelMap
from imij_plugins.registry.features import FeatureId as F

from .gen import header_of, random_case
from .handmade import head, header
from .syntax_writer import decode_entropy_payload, encode_entropy_payload


def _mutate(rng: random.Random, data: bytes, head_len: int) -> bytes:
    buf = bytearray(data)
    kind = rng.random()
    if kind < 0.45:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(buf))
            buf[i] = rng.randrange(256)
    elif kind < 0.65:
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    elif kind < 0.8:
        del buf[rng.randrange(len(buf)):]
    else:
        i = rng.randrange(head_len, len(buf)) if len(buf) > head_len else 0
        buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5)))
    return bytes(buf)


@pytest.mark.parametrize("chunk", range(6))
def test_mutated_payloads(chunk):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(chunk * 12, chunk * 12 + 12):
            case = random_case(50_000 + seed)
            enc = encode_entropy_payload(case.image, options=case.options, reference=case.reference)
            hdr = header_of(case, enc.features_used)
            rng = random.Random(seed)
            for _ in range(15):
                bad = _mutate(rng, enc.payload, enc.head_len)
                try:
                    decode_entropy_payload(bad, hdr, reference=case.reference)
                except ImijError:
                    pass


PLANS = [
    ("u8", 3, 1, False),
    ("u8", 1, 1, True),  # palette model
    ("u32", 1, 1, False),
    ("f16", 4, 4, True),
    ("u64", 2, 16, False),
]


@pytest.mark.parametrize("sample,channels,lanes,palette", PLANS)
def test_random_unit_bodies(sample, channels, lanes, palette):
    """Random bodies and structurally plausible ones against plans with random valid models."""
    rng = random.Random(f"{sample}-{channels}")
    for trial in range(12):
        # a random valid payload head from the writer, for its models
        case = random_case(70_000 + trial, sample=sample, layout=channels, size=(4, 6))
        case.options.palette = palette
        try:
            enc = encode_entropy_payload(case.image, options=case.options, reference=None)
        except ValueError:
            continue
        hdr = header_of(case, enc.features_used)
        from imij_plugins.payload.head import read_lossless_head
        from imij_plugins.wire.cursor import Cursor

        payload = prepare(hdr, read_lossless_head(Cursor(enc.payload), hdr))
        nslots = len(payload.plan.slots)
        ref = np.zeros((3, 5, hdr.channel_count), dtype=payload.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(60):
                if rng.random() < 0.3:
                    body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 60)))
                else:
                    decor = rng.choice([0, 0, 1, 2, 3, 0x80, rng.randrange(256)])
                    body = bytearray([decor])
                    if decor == 0x80:
                        body += bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
                    body += bytes(rng.choice([0, 0x10, 0x77, 0x93, rng.randrange(256)]) for _ in range(2))
                    streams = [bytes(rng.randrange(256) for _ in range(rng.choice([4 * lanes, 4 * lanes + 2, rng.randint(0, 40)]))) for _ in range(nslots)]
                    body += bytes(len(s) for s in streams) + b"".join(streams)
                for w, h in ((5, 3), (1, 1)):
                    try:
                        payload.decode_unit(bytes(body), w, h, ref if (w, h) == (5, 3) and rng.random() < 0.5 else None)
                    except ImijError:
                        pass


def test_random_models_and_maps():
    rng = random.Random(1)
    feats = {F.OFFSET_MAP, F.FLOAT_SHIFT, F.VALUE_TABLES, F.WIDE_SAMPLES, F.SIGNED_SAMPLES, F.NEAR_LOSSLESS, F.PIXEL_MODELS}
    samples = ["u8", "u16", "f16", "u32", "i32", "f32", "i8", "i16", "u64", "i64", "f64"]
    for _ in range(1500):
        sample = rng.choice(samples)
        channels = rng.randint(1, 7)
        hdr = header(sample, channels, 3, 2, feats)
        n = hdr.channel_count * (2 if sample in ("u64", "i64", "f64") else 1)
        maps = []
        for _ in range(n):
            mode = rng.randrange(11)
            value = rng.randrange(1 << 16)
            table = tuple(sorted(rng.sample(range(300), rng.randint(1, 5)))) if mode == 9 else ()
            maps.append(ChannelMap(mode, rng.randrange(40), len(table) - 1 if table else value, table))
        models = bytes(rng.randrange(256) for _ in range(rng.randint(0, 80)))
        try:
            payload = prepare(hdr, head(hdr, maps, models, present=rng.randrange(2)))
        except ImijError:
            continue
        try:
            payload.decode_unit(bytes(rng.randrange(256) for _ in range(30)), 3, 2)
        except ImijError:
            pass
