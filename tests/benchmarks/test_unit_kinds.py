"""benchmarks/unit_kinds.py: the bytes per unit kind add up to the payload, and each kind is
named from its stripe layout byte (2.4, 2.5, 2.10, 2.14)."""

from __future__ import annotations

import numpy as np
from bench_scripts import load_script

from imij_plugins.payload.entropy.encoder import encode_tuned


def _module():
    return load_script("unit_kinds")


def test_kinds_from_the_layout_byte():
    kind_of = _module().kind_of
    assert [kind_of(b) for b in (0, 3, 0x80, 0x81, 0x82, 0x83, 0x84)] == [
        "regular", "regular", "palette", "bilevel", "bilevel", "template", "template"]


def test_bytes_per_kind_add_up_to_the_payload():
    bench = _module()
    rng = np.random.default_rng(4)
    noise = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)  # regular stripes only
    flat = np.zeros((40, 60, 3), np.uint8)
    flat[10:30, 5:50] = (200, 30, 90)  # two tuples: a level or palette stripe
    for image in (noise, flat):
        sizes, counts = bench.payload_bytes(image, 5)
        assert sum(sizes.values()) == len(encode_tuned(image, effort=5).payload)
        assert sum(counts.values()) >= 1
    sizes, counts = bench.payload_bytes(noise, 5)
    assert set(counts) == {"regular"}
    sizes, counts = bench.payload_bytes(flat, 5)
    assert "regular" not in counts
