"""Random bilevel and few-colour images with forced or chosen bilevel / template syntax, and a
byte mutator, for the mutation tests (no tests here)."""

from __future__ import annotations

import random

import numpy as np

from imij_plugins.payload.entropy.level_writer import LevelOptions

from .syntax_writer import EntropyOptions, UnitChoice


def CASES(seed: int) -> tuple[np.ndarray, EntropyOptions]:
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    h, w = r.randint(1, 14), r.randint(1, 24)
    k = r.choice([1, 2, 2, 3, 6, 40])
    C = r.choice([1, 1, 3])
    idx = rng.integers(0, k, (h, w))
    if r.random() < 0.6:
        idx = np.repeat(np.repeat(rng.integers(0, k, (h // 2 + 1, w // 3 + 1)), 2, 0), 3, 1)[:h, :w]
    if C == 1 and k <= 2 and r.random() < 0.6:
        image = idx.astype(np.uint8)  # a 1-bit slot
    else:
        image = rng.integers(0, 256, (k, C)).astype(np.uint8)[idx]
        if C == 1:
            image = image[:, :, 0]
    layout = r.choice([None, None, 0x81, 0x82, 0x83, 0x84])
    levels = LevelOptions(prec=r.choice([None, r.randint(0, 7)]), escape=r.choice([None, True]), seed=r.choice([0, seed]),
                          unused=r.random() < 0.7, record25=r.choice([None, None, True]), record35=r.choice([None, None, True]))
    options = EntropyOptions(
        lanes=r.randint(1, 16),
        stripe_rows=r.randint(1, h + 1),
        group_cols=0 if w == 1 or r.random() < 0.6 else r.randint(1, w - 1),
        unit=UnitChoice(layout=layout, typical=r.random() < 0.8, palette_alias=r.random() < 0.3, slack_words=r.choice([0, 0, 1])),
        levels=levels,
        ordinals=r.random() < 0.2,
        unit_table=r.choice(["auto", None, "filled"]),
    )
    return image, options


def mutate(rng: random.Random, data: bytes, keep: int) -> bytes:
    """Random byte changes, bit flips, truncation or insertion (after the first ``keep`` bytes
    for insertions)."""
    buf = bytearray(data)
    if not buf:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 8)))
    kind = rng.random()
    if kind < 0.45:
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif kind < 0.7:
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    elif kind < 0.85:
        del buf[rng.randrange(len(buf)) :]
    else:
        i = rng.randrange(min(keep, len(buf)), len(buf) + 1)
        buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5)))
    return bytes(buf)
