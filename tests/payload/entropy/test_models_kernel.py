"""csrc/models.c against the Python reference of 3.3's table reading: same tables, same bit
positions, same accept / reject on valid, mutated and random bit streams."""

from __future__ import annotations

import random

import pytest

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy import models
from imij_plugins.payload.entropy.models import smallest_table, write_model, write_table
from imij_plugins.payload.entropy.tokens import checked_scheme, valid_parameters
from imij_plugins.wire.bits import BitReader, BitWriter

pytestmark = pytest.mark.skipif("c" not in _backend.available(), reason="C kernels not built")


def _read(backend: str, data: bytes, scheme, bitpos: int = 0):
    """(table, bit position after it) or the Corrupt class, on one backend."""
    br = BitReader(data, "models", bitpos)
    with _backend.use(backend):
        try:
            table = models.read_table(br, scheme)
        except Corrupt:
            return Corrupt
    return table, br.bitpos


def _schemes(rng: random.Random, count: int):
    for _ in range(count):
        n = rng.choice([1, 2, 5, 8, 10, 12, 16, 20, 24, 32])
        k, m = rng.choice(valid_parameters(n))
        yield checked_scheme(k, m, n)


def _table_bytes(rng: random.Random, scheme, lead: int) -> bytes:
    """``lead`` filler bits, then a valid table of random counts (some huge, some zero)."""
    size = rng.randint(1, scheme.alphabet)
    counts = [rng.choice([0, 0, 1, 2, rng.randint(1, 1 << 20), rng.randint(1, 1 << 40)]) for _ in range(size)]
    counts = [c if s < scheme.first_capped_run else 0 for s, c in enumerate(counts)]
    bw = BitWriter()
    bw.write(rng.getrandbits(lead), lead)
    write_table(bw, smallest_table(counts, rng.choice([None, 1, 8])))
    return bw.getvalue()


def test_valid_tables_agree() -> None:
    rng = random.Random(5)
    for scheme in _schemes(rng, 300):
        lead = rng.randint(0, 13)
        data = _table_bytes(rng, scheme, lead)
        c = _read("c", data, scheme, lead)
        assert c is not Corrupt
        assert c == _read("python", data, scheme, lead)


def test_mutated_and_cut_tables_agree() -> None:
    rng = random.Random(7)
    rejected = 0
    for scheme in _schemes(rng, 300):
        data = bytearray(_table_bytes(rng, scheme, 0))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        data = bytes(data[: rng.randint(0, len(data))]) if rng.random() < 0.3 else bytes(data)
        c = _read("c", data, scheme)
        assert c == _read("python", data, scheme)
        rejected += c is Corrupt
    assert 0 < rejected < 300  # both outcomes were exercised


def test_random_bytes_agree() -> None:
    rng = random.Random(11)
    for scheme in _schemes(rng, 500):
        data = rng.randbytes(rng.randint(0, 40))
        assert _read("c", data, scheme) == _read("python", data, scheme)


@pytest.mark.parametrize(
    "bits, rule",
    [
        ("", "runs past"),  # no bits at all
        ("0" * 8 + "000" + "0" * 25 + "1", "24 leading zero"),
        ("1" * 8 + "000" + "1", "at or past the alphabet"),
        ("0" * 8 + "000" + "1", "no nonzero weight"),  # e = 0
    ],
)
def test_kernel_rejections_name_the_rule(bits: str, rule: str) -> None:
    """Each kernel error code is re-explained by the reference's message."""
    scheme = checked_scheme(0, 0, 4)  # alphabet 16 + 24 run tokens
    bw = BitWriter()
    for b in bits:
        bw.write(int(b), 1)
    with _backend.use("c"), pytest.raises(Corrupt, match=rule):
        models.read_table(BitReader(bw.getvalue(), "models"), scheme)


def test_used_values_agree() -> None:
    """Records 25 / 35's used-bit value lists (2.10, 2.14): csrc/models.c and the reference loop."""
    from imij_plugins.payload.entropy.bilevel import read_used_values

    rng = random.Random(3)
    for _ in range(200):
        data, count, bits, lead = rng.randbytes(rng.randint(0, 300)), rng.randint(1, 1100), rng.randint(4, 11), rng.randint(0, 7)
        outcomes = []
        for backend in ("c", "python"):
            br = BitReader(data, "record", lead if lead <= 8 * len(data) else 0)
            with _backend.use(backend):
                try:
                    values, used = read_used_values(br, count, bits)
                    outcomes.append((values.tolist(), used.tolist(), br.bitpos))
                except Corrupt:
                    outcomes.append(Corrupt)
        assert outcomes[0] == outcomes[1]


def _read_many(backend: str, data: bytes, scheme, count: int):
    """read_tables' (weights, freq, lasts, bit position after them) or (Corrupt, message) on one backend."""
    br = BitReader(data, "models")
    with _backend.use(backend):
        try:
            weights, freq, lasts = models.read_tables(br, scheme, count)
        except Corrupt as exc:
            return Corrupt, str(exc)
    for row, n in zip(freq, lasts):  # normalized to M, zeros past the last symbol
        assert int(row.sum()) == models.M and not row[n + 1 :].any()
    return weights.tolist(), freq.tolist(), lasts, br.bitpos


def test_a_models_tables_in_one_call_agree() -> None:
    """read_tables (csrc/models.c imij_read_tables): up to four tables back to back, valid and
    mutated; a rejection carries the reference's message for the first bad table."""
    rng = random.Random(13)
    rejected = 0
    for scheme in _schemes(rng, 150):
        count = rng.randint(1, 4)
        bw = BitWriter()
        for _ in range(count):
            size = rng.randint(1, scheme.alphabet)
            counts = [rng.choice([0, 1, rng.randint(1, 1 << 20)]) if s < scheme.first_capped_run else 0
                      for s in range(size)]
            write_table(bw, smallest_table(counts or [1], None))
        data = bytearray(bw.getvalue())
        if rng.random() < 0.5:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        c = _read_many("c", bytes(data), scheme, count)
        assert c == _read_many("python", bytes(data), scheme, count)  # same tables, or the same message
        rejected += c[0] is Corrupt
    assert 0 < rejected < 150


def _read_all(backend: str, data: bytes, specs: list[tuple[int, bool]], palette: bool):
    """The decoder's models (read_model_set) as plain values, the palette model last, or
    (Corrupt, message), on one backend."""
    with _backend.use(backend):
        try:
            model_set = models.read_model_set(data, specs, palette)
        except Corrupt as exc:
            return Corrupt, str(exc)
        return [(m.scheme, m.cross, m.ctx_shift, m.ctx_map, m.weights.tolist(), m.freq.tolist(), m.lasts)
                for m in model_set.models]


def test_every_model_in_one_call_agrees() -> None:
    """read_model_set (csrc/models.c imij_read_models): a payload's models back to back (slots of
    random depths, cross allowed or not, an optional palette model), valid, mutated and cut; a
    rejection carries the reference's message (k, m, cross, ctx_shift and every table rule)."""
    rng = random.Random(17)
    rejected = 0
    for _ in range(120):
        specs = [(rng.choice([1, 2, 5, 8, 10, 16, 17, 20, 24, 32]), rng.random() < 0.5) for _ in range(rng.randint(1, 8))]
        palette = rng.random() < 0.3
        bw = BitWriter()
        for depth, cross_ok in [*specs, *([(8, False)] if palette else [])]:
            k, m = rng.choice(valid_parameters(depth))
            scheme = checked_scheme(k, m, depth)
            ctx_map = tuple(rng.randint(0, 3) for _ in range(16))
            tables = [smallest_table([rng.choice([0, 1, rng.randint(1, 1 << 20)]) if s < scheme.first_capped_run else 0
                                      for s in range(rng.randint(1, scheme.alphabet))] or [1], None)
                      for _ in range(max(ctx_map) + 1)]
            tables = [t if any(t.weights) else smallest_table([1], None) for t in tables]
            write_model(bw, scheme, cross_ok and rng.random() < 0.7, rng.randint(0, 31), ctx_map, tables)
        data = bytearray(bw.getvalue())
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        c = _read_all("c", bytes(data), specs, palette)
        assert c == _read_all("python", bytes(data), specs, palette)
        rejected += c[0] is Corrupt
    assert 20 < rejected < 100


@pytest.mark.parametrize(
    "head, rule",
    [
        ("10001" + "000", "k 17"),  # k = 17 > 16
        ("00000" + "101", "m 5"),  # m = 5 > 4
        ("00100" + "000" + "1", "cross context"),  # k = 4, m = 0 at depth 8, cross in a slot without it
        ("00100" + "000" + "0" + "1" * 10, "past"),  # the ctx_map runs past the end
    ],
)
def test_model_kernel_rejections_name_the_rule(head: str, rule: str) -> None:
    bw = BitWriter()
    for b in head:
        bw.write(int(b), 1)
    with _backend.use("c"), pytest.raises(Corrupt, match=rule):
        models.read_model_set(bw.getvalue(), [(8, False)], False)


def test_model_structs_carry_the_tokens_of_3_2() -> None:
    """imij_models_fill's token tables: each symbol's base and extra-bit count are the reference's
    (Scheme.tokens: value tokens, then run tokens), zeros past the alphabet, for every (k, m)
    a model may carry at every depth."""
    import numpy as np

    ffi, lib = _backend.ffi, _backend.lib
    for depth in range(1, 33):
        for k, m in valid_parameters(depth):
            scheme = checked_scheme(k, m, depth)
            s = ffi.new("imij_slot_model[]", 1)
            freq = np.zeros((4, 256), np.uint32)
            freq[0, 0] = 1024
            entries = np.empty((4, 1024), np.uint64)
            assert lib.imij_models_fill(s, 1, ffi.from_buffer("uint32_t[]", np.array([depth, k, m, 0, 0, 0, 1], np.uint32)),
                                        ffi.from_buffer("uint8_t[]", np.zeros(16, np.uint8)),
                                        ffi.from_buffer("uint32_t[]", freq),
                                        ffi.from_buffer("uint64_t[]", entries, require_writable=True), entries.size) == 0
            want = [(b, n) for _, b, n in scheme.tokens] + [(0, 0)] * (256 - scheme.alphabet)
            assert s[0].nvalue == scheme.value_tokens
            assert list(zip(s[0].base, s[0].nb)) == want, (depth, k, m)


def test_read_models_keep_only_their_tables() -> None:
    """A model read by the kernel owns arrays of its own tables only (views of the call's
    four-table scratch kept all of it alive: 8 KiB per model, a tenth of a small page's output)."""
    bw = BitWriter()
    write_model(bw, checked_scheme(0, 0, 8), False, 0, (0,) * 16, [smallest_table([5, 1, 1], None)])
    with _backend.use("c"):
        (model,) = models.read_model_set(bw.getvalue(), [(8, False)], False).slot_models
    assert model.freq.shape == model.weights.shape == (1, 256)
    assert model.freq.base is None and model.weights.base is None


def test_refused_arguments_are_args_not_truncation() -> None:
    """A table alphabet above 256 (3.3) or a value width outside 1..=16 (2.10, 2.14) is the
    caller's mistake: IMIJ_E_ARGS with nothing read, even where the bytes would do."""
    import numpy as np

    ffi, lib = _backend.ffi, _backend.lib
    data = ffi.from_buffer("uint8_t[]", b"\xff" * 64)
    pos, last = ffi.new("uint64_t *", 0), ffi.new("uint32_t *")
    weights, freq = np.zeros(256, np.uint32), np.zeros(256, np.uint32)
    w, f = ffi.from_buffer("uint32_t[]", weights, require_writable=True), ffi.from_buffer("uint32_t[]", freq, require_writable=True)
    assert lib.imij_read_table(data, 64, pos, 257, 257, last, w, f) == lib.IMIJ_E_ARGS
    assert lib.imij_read_table(data, 64, pos, 256, 256, last, w, f) != lib.IMIJ_E_ARGS
    pos[0] = 0
    values, used = np.zeros(4, np.uint16), np.zeros(4, np.uint8)
    v, u = ffi.from_buffer("uint16_t[]", values, require_writable=True), ffi.from_buffer("uint8_t[]", used, require_writable=True)
    for bits in (0, 17):
        assert lib.imij_read_used_values(data, 64, pos, 4, bits, v, u) == lib.IMIJ_E_ARGS and pos[0] == 0
    assert lib.imij_read_used_values(data, 64, pos, 4, 16, v, u) == 0 and pos[0] == 4 * 17


def test_a_refused_table_read_is_the_decoders_runtime_error() -> None:
    """kernel_codes: a decoder's refused kernel call is RuntimeError (never Corrupt: the bytes are
    fine), the model readers' included."""

    class TooWide:  # no scheme of 3.3 has more than 256 symbols
        alphabet = first_capped_run = 257

    bw = BitWriter()
    write_table(bw, smallest_table([3, 1], None))
    with _backend.use("c"), pytest.raises(RuntimeError, match="kernel refused"):
        models.read_table(BitReader(bw.getvalue(), "models"), TooWide)
    with _backend.use("c"), pytest.raises(RuntimeError, match="kernel refused"):
        models.read_tables(BitReader(bw.getvalue(), "models"), TooWide, 1)
