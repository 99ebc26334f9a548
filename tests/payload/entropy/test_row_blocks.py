"""The C kernel decodes units in row blocks (kernel.decode_unit_c): block boundaries change nothing.

Every stream keeps its place between blocks (lane states, read position, zero runs that continue
past a row or block end), the contexts of a block's first row read the residuals of the row above
(3.1), its predictors the coded values of that row (4), and inter frames the reduced reference of
that row. Blocks of 1, 2 and 3 rows, on both kernel paths, must decode exactly what the Python
reference decodes whole, on valid and mutated payloads of every syntax; and a whole read keeps
only a few rows besides its output (tracemalloc).
"""

from __future__ import annotations

import random
import tracemalloc
import warnings

import numpy as np
import pytest

import imij_plugins
from imij_plugins import _backend
from imij_plugins.errors import ImijError
from imij_plugins.payload.entropy import kernel

from .gen import header_of, random_case
from .syntax_writer import EntropyOptions, ModelChoice, UnitChoice, decode_entropy_payload, encode_entropy_payload
from .test_entropy_mutation import _mutate
from .test_kernel_paths import _photo, _screen, paths  # noqa: F401 - the fixture

BLOCKS = (1, 2, 3)


@pytest.fixture
def c_kernel(paths):  # noqa: F811 - the fixture imported above
    """The C backend only (the Python reference decodes units whole); ``paths`` restores the SIMD path."""
    return paths


def _outcome(fn) -> tuple:
    """("ok", the array's bytes) or ("error", the error's class name)."""
    try:
        return ("ok", np.ascontiguousarray(fn()).view(np.uint8).tobytes())
    except ImijError as exc:
        return ("error", type(exc).__name__)


def _blocks_agree(lib, monkeypatch, decode) -> tuple:
    """``decode`` under the Python reference, then in blocks of 1-3 rows on both C paths: all equal."""
    with _backend.use("python"):
        expected = _outcome(decode)
    for rows in BLOCKS:
        monkeypatch.setattr(kernel, "block_rows", lambda planes, width, height, rows=rows: min(rows, height))
        for simd in (0, 1, 2):
            lib.imij_entropy_simd(simd)
            assert _outcome(decode) == expected, (rows, simd)
    return expected


@pytest.mark.parametrize("chunk", range(4))
def test_random_syntax_in_row_blocks(c_kernel, monkeypatch, chunk):
    """Random samples, maps, lanes 1-16, groups, cross and ctx_shift, runs, palettes, near-lossless
    bounds and inter frames, in units taller than a block; then mutations of each payload."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(chunk * 8, chunk * 8 + 8):
            rng = random.Random(31_000 + seed)
            case = random_case(31_000 + seed, size=(rng.randint(4, 20), rng.randint(1, 37)))
            try:
                enc = encode_entropy_payload(case.image, options=case.options, reference=case.reference)
            except ValueError:
                continue
            hdr = header_of(case, enc.features_used)
            ok = _blocks_agree(c_kernel, monkeypatch, lambda: decode_entropy_payload(enc.payload, hdr, case.reference))
            assert ok[0] == "ok", case.description
            for _ in range(6):
                bad = _mutate(rng, enc.payload, enc.head_len)
                _blocks_agree(c_kernel, monkeypatch, lambda: decode_entropy_payload(bad, hdr, case.reference))


def _payload(image: np.ndarray, reference: np.ndarray | None = None, **options) -> tuple[bytes, object]:
    """An entropy payload of ``image`` with the given syntax choices, and its header."""
    from .gen import Case

    opts = EntropyOptions(**options)
    enc = encode_entropy_payload(image, options=opts, reference=reference)
    return enc.payload, header_of(Case(image, opts, opts.layout, reference, None, ""), enc.features_used)


@pytest.mark.parametrize("lanes", [1, 2, 3, 7, 16])
@pytest.mark.parametrize("width", [1, 5, 33, 97])
def test_runs_cross_row_and_block_ends(c_kernel, monkeypatch, lanes, width):
    """Screen content codes long zero runs; in narrow lanes they continue over many rows and blocks."""
    image = _screen(np.random.default_rng(width * 31 + lanes), 40, max(width, 13))[:, :width].copy()
    model = ModelChoice(runs=1, cross=True)
    payload, hdr = _payload(image, layout=3, lanes=lanes, stripe_rows=40, models=[ModelChoice(runs=1), model, model])
    decoded = _blocks_agree(c_kernel, monkeypatch, lambda: decode_entropy_payload(payload, hdr))
    assert decoded == ("ok", image.tobytes())


@pytest.mark.parametrize("decor", [0, 1, 2, 3])
def test_cross_context_and_decorrelation(c_kernel, monkeypatch, decor):
    """Slots 1 and 2 read slot 0's residuals at the same position (3.1) in every block."""
    image = _photo(np.random.default_rng(decor), 23, 61)
    model = ModelChoice(cross=True, ctx_map=[c % 4 for c in range(16)])
    unit = UnitChoice(decor=decor, predictors=[0] + [r % 7 for r in range(1, 23)])
    payload, hdr = _payload(image, layout=3, lanes=5, stripe_rows=23, models=[None, model, model], unit=unit)
    assert _blocks_agree(c_kernel, monkeypatch, lambda: decode_entropy_payload(payload, hdr)) == ("ok", image.tobytes())


@pytest.mark.parametrize("lanes", [1, 4, 16])
def test_palette_stripes(c_kernel, monkeypatch, lanes):
    """A palette stripe's index plane keeps its own row above; entries fill every slot per block."""
    rng = np.random.default_rng(lanes)
    colors = rng.integers(0, 256, (9, 3), dtype=np.uint8)
    image = colors[(np.add.outer(np.arange(29) // 3, np.arange(45) // 5) + rng.integers(0, 2, (29, 45))) % 9]
    unit = UnitChoice(palette=True, predictors=[0] + [r % 7 for r in range(1, 29)])
    payload, hdr = _payload(image, layout=3, lanes=lanes, stripe_rows=29, palette=True, unit=unit)
    assert _blocks_agree(c_kernel, monkeypatch, lambda: decode_entropy_payload(payload, hdr)) == ("ok", image.tobytes())


@pytest.mark.parametrize("first", [0, 7])
def test_inter_predictors(c_kernel, monkeypatch, first):
    """Predictors 7-9 read the reference of a block's rows and (8, 9) the reduced row above it."""
    rng = np.random.default_rng(first)
    reference = _photo(rng, 26, 40)
    image = reference.copy()
    image[5:20, 8:30] = rng.integers(0, 256, (15, 22, 3), dtype=np.uint8)
    unit = UnitChoice(predictors=[first] + [(7, 8, 9, 2)[r % 4] for r in range(1, 26)])
    payload, hdr = _payload(image, reference, layout=3, lanes=3, stripe_rows=26, unit=unit)
    decoded = _blocks_agree(c_kernel, monkeypatch, lambda: decode_entropy_payload(payload, hdr, reference))
    assert decoded == ("ok", image.tobytes())


def test_default_blocks_in_tall_units(c_kernel):
    """Units of 300 rows, several default blocks each, decode the image on both paths."""
    image = _photo(np.random.default_rng(5), 300, 150)
    payload, hdr = _payload(image, layout=3, lanes=16, stripe_rows=300)
    assert kernel.block_rows(3, 150, 300) < 300
    for simd in (0, 1, 2):
        c_kernel.imij_entropy_simd(simd)
        assert np.array_equal(decode_entropy_payload(payload, hdr), image)


@pytest.mark.parametrize("threads", [1, 2])
def test_decode_peak_memory(c_kernel, threads):
    """A read of an entropy-coded 512 x 512 RGB u8 image peaks at <= 1.3x its output (tracemalloc
    is exact here: the kernels write into numpy buffers)."""
    image = _photo(np.random.default_rng(1), 512, 512)
    data = imij_plugins.encode(image)
    imij_plugins.read(data, threads=threads)  # models and modules settled outside the measurement
    tracemalloc.start()
    try:
        out = imij_plugins.read(data, threads=threads)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(out, image)
    assert peak <= 1.3 * image.nbytes, peak / image.nbytes
