"""models.read_model_set: the decoder's models (3.3), the C kernel's packed form and the Model
objects, made from each other on first use, agree on both backends."""

from __future__ import annotations

import random

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy import models
from imij_plugins.payload.entropy.models import smallest_table, write_model
from imij_plugins.payload.entropy.tokens import checked_scheme, valid_parameters
from imij_plugins.wire.bits import BitWriter


def _stream(rng: random.Random, specs: list[tuple[int, bool]]) -> bytes:
    """A valid models bit stream for ``specs`` (3.3), random parameters and tables."""
    bw = BitWriter()
    for depth, cross_ok in specs:
        k, m = rng.choice(valid_parameters(depth))
        scheme = checked_scheme(k, m, depth)
        ctx_map = tuple(rng.randint(0, 3) for _ in range(16))
        tables = [smallest_table([rng.randint(1, 1 << 20) if s == 0 else rng.choice([0, 1, rng.randint(1, 1 << 20)])
                                  for s in range(rng.randint(1, scheme.first_capped_run))], None)
                  for _ in range(max(ctx_map) + 1)]
        write_model(bw, scheme, cross_ok and rng.random() < 0.7, rng.randint(0, 31), ctx_map, tables)
    return bw.getvalue()


def _plain(ms: models.ModelSet):
    return [(m.scheme, m.cross, m.ctx_shift, m.ctx_map, m.weights.tolist(), m.freq.tolist(), m.lasts) for m in ms.models]


@pytest.mark.parametrize("seed", range(20))
def test_packed_and_models_agree_across_backends(seed: int) -> None:
    """The kernel's packed heads and tables (kept by a C read) equal the ones packed from the
    reference's Model objects, and the Models a C read makes on first use equal the reference's."""
    rng = random.Random(seed)
    specs = [(rng.choice([1, 5, 8, 12, 16, 20, 32]), rng.random() < 0.5) for _ in range(rng.randint(1, 6))]
    palette = rng.random() < 0.5
    data = _stream(rng, [*specs, *([(8, False)] if palette else [])])
    with _backend.use("c"):
        fast = models.read_model_set(data, specs, palette)
        assert "models" not in fast.__dict__  # nothing made until asked for
        heads, freq = fast.packed
    with _backend.use("python"):
        ref = models.read_model_set(data, specs, palette)
        ref_heads, ref_freq = ref.packed
    assert np.array_equal(heads, ref_heads) and np.array_equal(freq, ref_freq)
    with _backend.use("c"):
        assert _plain(fast) == _plain(ref)
    assert len(fast.slot_models) == len(specs)
    assert (fast.palette_model is not None) == palette


@pytest.mark.parametrize("backend", ["c", "python"])
def test_a_bad_stream_is_refused_when_read(backend: str) -> None:
    """Every rule of 3.3 is checked by read_model_set itself, not when the Models are first made."""
    bw = BitWriter()
    bw.write(17, 5)  # k = 17 > 16 (3.3)
    bw.write(0, 3)
    with _backend.use(backend), pytest.raises(Corrupt, match="k 17"):
        models.read_model_set(bw.getvalue(), [(8, False)], False)
