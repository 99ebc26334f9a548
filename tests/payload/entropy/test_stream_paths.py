"""The stream writer's SIMD path (csrc/encode.c: plain16 builds a step's ops, reverse_phases codes
them, 16 lanes at once) writes the scalar path's bytes (plain_lanes, reverse_ops) on every input:
``lib.imij_entropy_simd(0)`` forces the scalar path, 1 and 2 the SIMD path where the CPU has one
(imij_kernels.h; units of 1024 positions and more). Steps mix symbols, extra bits of up to 16 bits
and above 16 (32-bit residuals), zero runs and lanes inside them, with 1 to 16 lanes and a
narrower last lane, and states next to the renormalization bounds; output buffers too small for
the stream, or just large enough, fail or succeed alike on both paths (the SIMD path's 16-byte
stores need room the scalar one does not, so near the end of a buffer it hands blocks to the
scalar path)."""

from __future__ import annotations

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import stats
from imij_plugins.payload.entropy.modeling import SlotStats, choose_model, effort_of
from imij_plugins.payload.entropy.streams import stream

from .backends import NEEDS_C, both
from .test_kernel_paths import paths, simd_paths  # noqa: F401 - the fixture


@pytest.fixture
def lib(paths):  # noqa: F811 - the fixture imported above
    """The C kernels (once: the test picks its paths); ``paths`` restores the path in use afterwards."""
    return paths


def _residuals(rng: np.random.Generator, h: int, w: int, bits: int) -> np.ndarray:
    """Columns of small values, zero runs and values up to 2^bits; scattered zeros."""
    dtype = np.uint32 if bits > 16 else np.uint16
    u = rng.integers(1, 200, (h, w)).astype(dtype)
    kind = rng.integers(0, 4, w)
    u[:, kind == 1] = 0
    big = kind == 2
    u[:, big] = rng.integers(1024, 1 << bits, (h, int(big.sum())), dtype=np.uint64).astype(dtype)
    u[rng.random((h, w)) < 0.2] = 0
    return u


def _model(u: np.ndarray, u0: np.ndarray, lanes: int, depth: int, effort: int):
    with _backend.use("c"):
        plain, cross = stats(u, u0, lanes, 0, 4)
    return choose_model({False: SlotStats(*plain), True: SlotStats(*cross)}, depth, 0, effort_of(effort)).enc


def _on_paths(lib, fn) -> list:
    """fn's result on the scalar path, then on each SIMD path this CPU has."""
    out = []
    for path in [0, *simd_paths(lib)]:
        lib.imij_entropy_simd(path)
        with _backend.use("c"):
            out.append(fn())
    return out


@NEEDS_C
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lanes", [1, 3, 16])
@pytest.mark.parametrize("bits", [14, 30])
def test_simd_and_scalar_paths_write_the_same_stream(lib, seed, lanes, bits):
    rng = np.random.default_rng(4100 + seed)
    h, w = int(rng.integers(8, 40)), int(rng.integers(128, 300))  # 1024 positions and more: the SIMD path's
    u = _residuals(rng, h, w, bits)
    u0 = rng.integers(0, 300, (h, w)).astype(u.dtype)
    for effort in (1, 5):
        model = _model(u, u0, lanes, 32 if bits > 16 else 16, effort)
        outs = _on_paths(lib, lambda: stream(u, u0, lanes, model))
        assert all(o == outs[0] for o in outs[1:])
        if seed == 0:
            assert both(stream, u, u0, lanes, model)[1] == outs[0]  # and the reference's


@NEEDS_C
@pytest.mark.parametrize("seed", range(8))
def test_states_at_the_renormalization_bounds(lib, seed):
    """Values 2^j - 1 put all-ones extra bits into the states, so symbols of power-of-two
    frequencies f meet states just below f 2^22, where one more would renormalize."""
    rng = np.random.default_rng(5200 + seed)
    h, w = 24, 256
    u = ((np.uint64(1) << rng.integers(1, 29, (h, w)).astype(np.uint64)) - np.uint64(1)).astype(np.uint32)
    u[rng.random((h, w)) < 0.3] = 0
    for effort in (1, 5):
        model = _model(u, np.zeros_like(u), 16, 32, effort)
        outs = _on_paths(lib, lambda: stream(u, None, 16, model))
        assert all(o == outs[0] for o in outs[1:])


@NEEDS_C
@pytest.mark.parametrize("bits", [12, 30])
def test_short_output_buffers_fail_or_fit_alike(lib, bits):
    ffi = _backend.ffi
    rng = np.random.default_rng(77 + bits)
    h, w, lanes = 40, 250, 16
    u = _residuals(rng, h, w, bits)
    u0 = np.zeros_like(u)
    cm = _model(u, u0, lanes, 32 if bits > 16 else 16, 5).cdata()
    scratch = np.zeros(lib.imij_enc_stream_scratch(w, h), np.uint32)
    size = len(_on_paths(lib, lambda: stream(u, u0, lanes, _model(u, u0, lanes, 32 if bits > 16 else 16, 5)))[0])

    def write(cap: int):
        out = np.zeros(cap, np.uint8)
        n = lib.imij_enc_stream(ffi.from_buffer(u), ffi.NULL, u.itemsize, w, h, lanes, cm,
                                ffi.from_buffer("uint32_t[]", scratch), scratch.size,
                                ffi.from_buffer("uint8_t[]", out), cap)
        return n, out[: max(n, 0)].tobytes()

    lib.imij_entropy_simd(0)
    lo, hi = size, 128 + 6 * h * w  # the least cap the scalar path writes the stream into
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if write(mid)[0] > 0 else (mid + 1, hi)
    for cap in range(lo - 24, lo + 40):
        outs = _on_paths(lib, lambda: write(cap))
        assert all(o == outs[0] for o in outs[1:]), cap
        assert (outs[0][0] == size) == (cap >= lo), cap
