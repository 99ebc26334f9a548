"""Random syntax choices and images for the entropy payload round trips.

Images are built from random coded values through a scalar, literal re-implementation of the
expansions of 2.1 (independent of imij_plugins.payload.entropy.maps), so a round trip checks the
decoder's step 4 against this file as well as the writer against the decoder.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import numpy as np

from imij_plugins.container.header import Header
from imij_plugins.payload.entropy.tokens import valid_parameters
from imij_plugins.registry.samples import LAYOUTS, SAMPLE_TYPES

from .syntax_writer import EntropyOptions, MapChoice, ModelChoice, UnitChoice

SAMPLES = {s.name: s for s in SAMPLE_TYPES.values()}


def order(v: int, kind: str, D: int) -> int:
    """2.1's order maps, scalar."""
    if kind == "i":
        return v ^ (1 << (D - 1))
    if kind == "f":
        return v ^ ((v >> (D - 1)) * ((1 << (D - 1)) - 1))
    return v


def order_n(t: int, n: int) -> int:
    return t ^ ((t >> (n - 1)) * ((1 << (n - 1)) - 1))


def widen(h: int) -> int:
    """An f16 bit pattern widened exactly to f32 bits (NaN payload shifted up 13 bits)."""
    sign, exp, man = h >> 15, (h >> 10) & 31, h & 0x3FF
    if exp == 31:
        return (sign << 31) | 0x7F800000 | (man << 13)
    if exp == 0 and man == 0:
        return sign << 31
    f = struct.unpack("<e", struct.pack("<H", h))[0]
    return struct.unpack("<I", struct.pack("<f", f))[0]


def replicate(s: int, n: int, D: int) -> int:
    x, shift = 0, D - n
    while shift > -n:
        x |= s << shift if shift >= 0 else s >> -shift
        shift -= n
    return x & ((1 << D) - 1)


def expand_raw(s: int, mode: int, bits: int, value: int, table: tuple[int, ...], kind: str, D: int) -> int:
    """Coded value -> raw word, literally from 2.1 and section 4 step 4."""
    if mode == 5:  # F16InF32: s is an ordered f16
        return widen(order(s, "f", 16))
    if mode == 6:  # UnormF32
        f = np.float32(s) / np.float32((1 << bits) - 1)
        return int(np.array([f], dtype=np.float32).view(np.uint32)[0])
    if mode == 8:  # FloatShift: the decoder's sample is order_n(s) << (D - n)
        return order_n(s, bits) << (D - bits)
    if mode == 0:
        o = s
    elif mode == 1:
        o = s << (D - bits)
    elif mode == 2:
        o = replicate(s, bits, D)
    elif mode == 3:
        o = (s * ((1 << D) - 1) + ((1 << bits) - 1) // 2) // ((1 << bits) - 1)
    elif mode == 4:
        o = value
    elif mode == 7:
        o = (value + s) % (1 << 32)
    elif mode == 9:
        o = table[min(s, value)]
    else:
        raise AssertionError(mode)
    return order(o, kind, D)


@dataclass
class Case:
    image: np.ndarray
    options: EntropyOptions
    layout: int
    reference: np.ndarray | None
    near: list[int] | None
    description: str


def _coded_values(rng: random.Random, h: int, w: int, limit: int) -> list[list[int]]:
    """Random coded values in [0, limit): noise, smooth ramps, zero runs or constants."""
    style = rng.choice(["noise", "smooth", "zeros", "const", "few"])
    if limit <= 1:
        return [[0] * w for _ in range(h)]
    if style == "noise":
        return [[rng.randrange(limit) for _ in range(w)] for _ in range(h)]
    if style == "const":
        c = rng.randrange(limit)
        return [[c] * w for _ in range(h)]
    if style == "few":
        vals = [rng.randrange(limit) for _ in range(rng.randint(1, 4))]
        return [[rng.choice(vals) for _ in range(w)] for _ in range(h)]
    if style == "zeros":
        return [[0 if rng.random() < 0.85 else rng.randrange(limit) for _ in range(w)] for _ in range(h)]
    base = rng.randrange(limit)
    amp = max(1, limit // 64)
    return [[(base + (x + y) * amp // 3 + rng.randrange(amp + 1)) % limit for x in range(w)] for y in range(h)]


def _random_map(rng: random.Random, st, kind: str, D: int, alpha_or_lo: bool) -> tuple[int, int, int, tuple[int, ...]]:
    modes = [0, 0, 1, 2, 3, 9]
    if alpha_or_lo:
        modes += [4, 4]
    if st.name == "f32":
        modes += [5, 6]
    if st.bits >= 32:
        modes += [7]
    if st.name in ("f16", "f32"):
        modes += [8]
    mode = rng.choice(modes)
    value, table = 0, ()
    if mode == 0:
        bits = rng.choice([0, 1, rng.randint(0, D), D, D])
    elif mode == 1:
        bits = rng.randint(1, D)
    elif mode in (2, 3):
        bits = rng.randint(1, min(D, 16))
    elif mode == 4:
        bits = rng.randint(0, D)
        value = rng.randrange(1 << D)
    elif mode == 5:
        bits = 16
    elif mode == 6:
        bits = rng.randint(1, 16)
    elif mode == 7:
        bits = rng.randint(0, 32)
        value = rng.randrange(1 << 32)
    elif mode == 8:
        bits = rng.randint(1, D - 1)
    else:
        count = rng.randint(1, min(300, 1 << D))
        table = tuple(sorted(rng.sample(range(1 << D), count))) if D <= 16 else tuple(sorted({rng.randrange(1 << D) for _ in range(count)}))
        value = len(table) - 1
        bits = value.bit_length()
    return mode, bits, value, table


def random_case(seed: int, *, sample: str | None = None, layout: int | None = None, size: tuple[int, int] | None = None) -> Case:
    rng = random.Random(seed)
    st = SAMPLES[sample] if sample else rng.choice(list(SAMPLES.values()))
    layout = layout or rng.randint(1, 7)
    C = LAYOUTS[layout].channels
    has_alpha = LAYOUTS[layout].has_alpha
    h, w = size if size else (rng.randint(1, 10), rng.randint(1, 18))
    D = min(st.bits, 32)
    wide = st.bits == 64
    coded = 2 * C if wide else C
    maps = []
    raws = []
    same_color = rng.random() < 0.6
    first_color = (0, 0, 0, ())
    for i in range(coded):
        lo = wide and i >= C
        ch = i - C if lo else i
        kind = "u" if lo else st.kind
        alpha = has_alpha and ch == C - 1
        mode, bits, value, table = _random_map(rng, st, kind, D, alpha or lo)
        if layout in (3, 4) and 0 < i < 3 and same_color and not lo:  # equal depths: decorrelation
            mode, bits, value, table = first_color
        if i == 0:
            first_color = (mode, bits, value, table)
        limit = value + 1 if mode == 9 else 1 << bits
        if mode == 4:
            s = [[0] * w for _ in range(h)]
        else:
            s = _coded_values(rng, h, w, limit)
        raws.append([[expand_raw(v, mode, bits, value, table, kind, D) for v in row] for row in s])
        alias = mode == 9 and rng.random() < 0.3
        maps.append(MapChoice(mode, bits, value, table if mode == 9 else None, alias))
    if wide:
        data = [[[(raws[c][y][x] << 32) | raws[C + c][y][x] for c in range(C)] for x in range(w)] for y in range(h)]
    else:
        data = [[[raws[c][y][x] for c in range(C)] for x in range(w)] for y in range(h)]
    image = np.array(data, dtype=np.dtype(f"<u{st.bits // 8}")).view(np.dtype(st.dtype)).reshape(h, w, C)

    depths = {i: maps[i].bits for i in range(coded)}
    # near-lossless bounds (2.6): u8, u16, u32, i32; not on Const / Table maps; delta <= 2^(n-1) - 1
    near = None
    if st.name in ("u8", "u16", "u32", "i32") and rng.random() < 0.25:
        near = []
        for c in range(C):
            n = depths[c]
            ok = maps[c].mode not in (4, 9) and n >= 2
            near.append(rng.randint(0, min((1 << (n - 1)) - 1, 40)) if ok and rng.random() < 0.7 else 0)
        if not any(near):
            near = None
    reference = None
    if st.bits <= 32 and near is None and rng.random() < 0.3:
        ref_raw = np.array([[[rng.getrandbits(st.bits) for _ in range(C)] for _ in range(w)] for _ in range(h)], dtype=np.dtype(f"<u{st.bits // 8}"))
        reference = ref_raw.view(np.dtype(st.dtype))
        if rng.random() < 0.5:  # a reference close to the image, so predictors 7-9 matter
            mix = np.array([[[rng.random() < 0.7] * C for _ in range(w)] for _ in range(h)])
            reference = np.where(mix, image, reference)

    # slot list, as 2.2 orders them, to know which model choices make sense
    from imij_plugins.payload.entropy.maps import SLOT_ORDER

    order_ = list(SLOT_ORDER[layout]) + ([C + c for c in SLOT_ORDER[layout]] if wide else [])
    slot_coded = [i for i in order_ if maps[i].mode != 4]
    ncolor = C - (1 if has_alpha else 0)
    palette_head = rng.random() < 0.4
    palette_ok = palette_head and all(depths[i] <= 16 for i in slot_coded)
    models = []
    for idx, ci in enumerate(slot_coded):
        n = depths[ci]
        color = not (wide and ci >= C) and not (has_alpha and ci % C == C - 1 and not (wide and ci >= C)) and ci < ncolor
        cross_ok = color and idx >= 1 and ncolor > 1
        models.append(_random_model(rng, n, cross_ok))
    decor_ok = layout in (3, 4) and len({depths[slot_coded[i]] for i in range(3)}) == 1
    geo_rows = rng.randint(1, h + 2)
    groups = 0 if w == 1 or rng.random() < 0.5 else rng.randint(1, w - 1)
    units = []
    stripes = -(-h // geo_rows)
    ngroups = -(-w // groups) if groups else 1
    for u in range(stripes * ngroups):
        rows = min(geo_rows, h - (u // ngroups) * geo_rows)
        preds = [0] + [rng.randint(0, 6) for _ in range(rows - 1)]
        if reference is not None and rng.random() < 0.7:
            preds = [rng.choice([0, 7])] + [rng.randint(0, 9) for _ in range(rows - 1)]
        palette = None
        if palette_ok:
            palette = rng.random() < 0.5 and not any(p >= 7 for p in preds)
            if palette:
                gw = min(groups, w - (u % ngroups) * groups) if groups else w
                # the writer refuses more than 256 tuples when forced; let it decide then
                palette = None if rows * gw > 256 else True
        units.append(UnitChoice(
            decor=rng.randint(0, 3) if decor_ok else 0,
            predictors=preds,
            palette=palette if palette is not None else (False if not palette_ok else None),
            palette_seed=rng.choice([0, 0, rng.randint(1, 99)]),
            palette_alias=rng.random() < 0.3,
            slack_words=rng.choice([0, 0, 0, 1, 3]),
        ))
    options = EntropyOptions(
        layout=layout,
        lanes=rng.randint(1, 16),
        stripe_rows=geo_rows,
        group_cols=groups,
        maps=maps,
        models=models,
        palette=palette_head,
        palette_model=_random_model(rng, 8, False),
        units=units,
        near=near,
        unit_table=rng.choice(["auto", "hint", "filled", "empty", "tail", None]),
        table_width=rng.randint(2, 8),
        reservation_padding=rng.randint(0, 3),
        ordinals=rng.random() < 0.3,
        side_records=rng.random() < 0.2,
        models_padding=rng.choice([0, 0, 1, 5]),
    )
    desc = f"seed {seed}: {st.name} {LAYOUTS[layout].name} {w}x{h} maps {[(m.mode, m.bits) for m in maps]} near {near} ref {reference is not None}"
    return Case(image, options, layout, reference, near, desc)


def _random_model(rng: random.Random, n: int, cross_ok: bool) -> ModelChoice | None:
    if rng.random() < 0.2:
        return None
    k, m = rng.choice(valid_parameters(n))
    ctx_map = [rng.randint(0, 3) for _ in range(16)] if rng.random() < 0.6 else None
    return ModelChoice(
        k=k,
        m=m,
        cross=(rng.random() < 0.6) if cross_ok else False,
        ctx_shift=rng.randint(0, 31) if n > 16 else None,
        ctx_map=ctx_map,
        prec=rng.choice([None, rng.randint(1, 8)]),
        runs=rng.choice([None, 1, 2, 4, 8]),
        extra_weights=rng.choice([0, 0, rng.randint(1, 1000)]),
    )


def header_of(case: Case, features) -> Header:
    from imij_plugins.pixels.dtypes import sample_code

    h, w, _ = case.image.shape
    return Header(w, h, sample=sample_code(case.image.dtype), channels=case.layout, mask=frozenset(features))
