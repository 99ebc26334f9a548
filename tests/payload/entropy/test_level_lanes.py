"""Bilevel and template palette stripes (2.10, 2.14) at the lane geometries where the C kernel's
SIMD path (csrc/bilevel.c: a lane-major ring of 16 lanes with halo columns) changes its way of
working, decoded on the scalar path and on every SIMD path the CPU has: identical samples or
identical errors, the image itself when intact.

Lane widths 1 (scalar only), 2 (the narrowest halo), 3 to 15 (rows leave the ring column by
column) and 16 or more (16-column blocks, the last overlapping), past the widest ring on the
stack (512: scalar again, unless the index scratch holds the ring); 1, 5 and 16 lanes, a narrower last lane; two entries (phase 0 only), a
few and many entries (candidate and escape phases), 1-bit slots (layout 0x81); gray images,
whose rows go out as bytes (at most 16 entries: by a 16-byte table), and RGB images.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from imij_plugins.payload.entropy import levels
from imij_plugins.payload.entropy.level_writer import LevelOptions

from .syntax_writer import EntropyOptions, UnitChoice, decode_entropy_payload, encode_entropy_payload, header_for
from .test_bilevel_mutation_cases import mutate
from .test_kernel_paths import _both, _same, paths  # noqa: F401 - the fixture

#: (width, lanes): lane widths 1, 2, 3, 15, 16, 17 and 33 with a narrower last lane, 512, 513, 1025.
GEOMETRIES = [(16, 16), (32, 16), (47, 16), (240, 16), (256, 16), (270, 16), (523, 16), (61, 5), (40, 1),
              (512, 1), (513, 1), (1025, 1)]


def _image(seed: int, width: int, entries: int, layout: int, channels: int) -> np.ndarray:
    """Blocks of `entries` colours with scattered changes, 12 rows."""
    rng = np.random.default_rng(seed)
    idx = np.repeat(np.repeat(rng.integers(0, entries, (5, width // 3 + 1)), 3, 0), 3, 1)[:12, :width]
    idx = np.where(rng.random(idx.shape) < 0.08, rng.integers(0, entries, idx.shape), idx)
    idx[4] = idx[3]  # a typical row
    if layout == 0x81:
        return idx.astype(np.uint8)
    colours = rng.choice(256 ** channels, entries, replace=False)
    return np.stack([(colours >> (8 * c)) & 255 for c in range(channels)], -1).astype(np.uint8)[idx]


@pytest.mark.parametrize("scratch", ["room for the ring", "three rows"])
@pytest.mark.parametrize("width, lanes", GEOMETRIES)
@pytest.mark.parametrize("layout, entries, channels", [(0x81, 2, 1), (0x83, 2, 1), (0x83, 2, 3), (0x83, 7, 1),
                                                       (0x83, 7, 3), (0x84, 60, 1), (0x84, 60, 3)])
def test_lane_geometries(paths, monkeypatch, scratch, width, lanes, layout, entries, channels):  # noqa: F811
    if scratch == "three rows":  # the least imij_level_unit_decode takes: the ring goes on the stack (or scalar)
        monkeypatch.setattr(levels, "ring_bytes", lambda w: 3 * (w + 4) + 16)
    image = _image(width * 31 + lanes, width, entries, layout, channels)
    options = EntropyOptions(lanes=lanes, stripe_rows=12,
                             unit=UnitChoice(layout=layout, typical=layout != 0x81),
                             levels=LevelOptions(escape=True if entries > 2 else None))
    enc = encode_entropy_payload(image, options=options)
    hdr = header_for(image, enc)
    scalar, simd = _both(paths, lambda: decode_entropy_payload(enc.payload, hdr))
    assert scalar[0] == "ok" and _same(scalar, simd)
    assert np.array_equal(np.asarray(simd[1]).reshape(image.shape), image)
    rng = random.Random(width * lanes + entries)
    for _ in range(12):
        bad = mutate(rng, enc.payload, enc.head_len)
        scalar, simd = _both(paths, lambda: decode_entropy_payload(bad, hdr))
        assert _same(scalar, simd), (scalar[0], simd[0])
