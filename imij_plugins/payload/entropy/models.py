"""Models (3.3): the models bit stream, tables of quantized weights and their normalization.

One model per slot in slot order, then (head present bit 0) the palette index model of depth 8.
Every validity rule of 3.3 is checked as the model is read, before any unit decodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from itertools import accumulate

import numpy as np

from imij_plugins import _backend
from imij_plugins.errors import Corrupt
from imij_plugins.payload.entropy.tokens import Scheme, checked_scheme
from imij_plugins.payload.kernel_codes import KERNEL_CODES
from imij_plugins.wire.bits import BitReader, BitWriter

M_BITS = 10
M = 1 << M_BITS  # 3: tables have M = 2^10 slots
CLASSES = 16  # 3.1: class = min(bit_length(sum), 15)
MAX_GAMMA_ZEROS = 24  # 3.3
MAX_EXPONENT = 32  # 3.3
PALETTE_DEPTH = 8  # 2.5 / 3.3: the palette index model has depth 8
HEAD_WORDS = 9  # csrc's imij_model_head in 32-bit words: 5 uint32 fields, then uint8 ctx_map[16]


@dataclass(frozen=True)
class Table:
    """One context's table: the coded weights and the normalized frequencies (3.3)."""

    weights: tuple[int, ...]  # symbols 0 ..= last
    freq: tuple[int, ...]  # normalized, sum M

    @classmethod
    def from_weights(cls, weights: list[int] | tuple[int, ...]) -> Table:
        return cls.normalized(tuple(weights), tuple(normalize(weights)))

    @classmethod
    def normalized(cls, weights: tuple[int, ...], freq: tuple[int, ...]) -> Table:
        """The table of ``weights`` whose normalized frequencies (3.3) are ``freq``."""
        return cls(weights, freq)

    @cached_property
    def cum(self) -> tuple[int, ...]:
        """Prefix sums of freq (made on first use: the C kernel needs only freq)."""
        return (0, *accumulate(self.freq[:-1]))

    @cached_property
    def lut(self) -> bytes:
        """Slot (0 .. M-1) -> symbol: cum[sym] <= slot < cum[sym] + freq[sym]."""
        return np.repeat(np.arange(len(self.freq), dtype=np.uint8), self.freq).tobytes()  # symbols < 256 (3.3)


@dataclass(frozen=True, eq=False)
class Model:
    """One slot's model (3.3): its tables as arrays, one row per context 0 ..= max(ctx_map) (what
    the C kernel's structs take); ``tables`` as Table objects are made on first use (the Python
    reference decoder's)."""

    scheme: Scheme
    cross: bool
    ctx_shift: int
    ctx_map: tuple[int, ...]  # 16 classes -> context 0..=3
    weights: np.ndarray  # (tables, 256) uint32, the coded weights
    freq: np.ndarray  # (tables, 256) uint32, normalized (3.3), zeros past each table's last symbol
    lasts: tuple[int, ...]  # each table's last symbol

    @cached_property
    def tables(self) -> tuple[Table, ...]:
        return tuple(Table.normalized(tuple(w[: n + 1].tolist()), tuple(f[: n + 1].tolist()))
                     for w, f, n in zip(self.weights, self.freq, self.lasts))

    @property
    def depth(self) -> int:
        return self.scheme.n


# --- normalization (3.3) -------------------------------------------------------------------


def normalize(weights: list[int] | tuple[int, ...]) -> list[int]:
    """3.3: normalize quantized weights to frequencies summing to M, exactly as specified.

    f = max(1, floor(weight * M / W)) for each nonzero weight; symbols ordered by weight
    descending, then index ascending; add 1 cycling from the first while sum(f) < M, else
    subtract 1 cycling from the first over symbols whose f > 1 while sum(f) > M.
    """
    total = sum(weights)
    if total == 0:
        raise Corrupt("table has no nonzero weight")  # 3.3
    freq = [max(1, w * M // total) if w else 0 for w in weights]
    order = sorted((s for s, w in enumerate(weights) if w), key=lambda s: (-weights[s], s))
    fsum = sum(freq)
    if fsum < M:
        deficit = M - fsum
        count = len(order)
        for i, sym in enumerate(order):  # the cycling adds, all rounds at once
            freq[sym] += deficit // count + (1 if i < deficit % count else 0)
    elif fsum > M:
        i = 0
        count = len(order)
        while fsum > M:  # at most 255 excess (each f = max(1, .) adds < 1 per symbol)
            sym = order[i % count]
            if freq[sym] > 1:
                freq[sym] -= 1
                fsum -= 1
            i += 1
    return freq


# --- exponent / mantissa weight coding (3.3) -----------------------------------------------


def weight_of(e: int, nb: int, mant: int) -> int:
    """3.3: weight = 0 if e == 0; 1 if e == 1; else ((1 << nb) | mant) << (e - 1 - nb)."""
    if e == 0:
        return 0
    if e == 1:
        return 1
    return ((1 << nb) | mant) << (e - 1 - nb)


def quantize_weight(count: int, prec: int) -> tuple[int, int, int]:
    """(e, nb, mant) of the largest representable weight <= count at precision prec (writers)."""
    if count <= 0:
        return 0, 0, 0
    e = count.bit_length()
    if e == 1:
        return 1, 0, 0
    nb = min(e - 1, prec - 1)
    mant = (count >> (e - 1 - nb)) & ((1 << nb) - 1)
    return e, nb, mant


def _zigzag(v: int) -> int:
    return 2 * v if v >= 0 else -2 * v - 1


def _unzigzag(z: int) -> int:
    return (z >> 1) ^ -(z & 1)


def _split_gamma(window: int) -> tuple[int, int]:
    """3.3: gamma(v) at the start of a peeked window: (v, bits used); z zero bits, a one bit,
    then the low z bits of v, z = floor(log2 v)."""
    if not window & ((1 << (MAX_GAMMA_ZEROS + 1)) - 1):  # 3.3: more than 24 leading zero bits
        raise Corrupt("models: gamma code with more than 24 leading zero bits, or past the end")
    zeros = (window & -window).bit_length() - 1
    return (1 << zeros) | ((window >> (zeros + 1)) & ((1 << zeros) - 1)), 2 * zeros + 1


def _write_gamma(bw: BitWriter, v: int) -> None:
    z = v.bit_length() - 1
    bw.write(0, z)
    bw.write(1, 1)
    bw.write(v & ((1 << z) - 1), z)


# --- reading ---------------------------------------------------------------------------------


def read_table(br: BitReader, scheme: Scheme) -> Table:
    """One table (3.3) with every validity rule of its scheme (csrc/models.c, or the reference)."""
    if _backend.active() != "c":
        return read_table_py(br, scheme)
    ffi, lib = _backend.ffi, _backend.lib
    pos, last = ffi.new("uint64_t *", br.bitpos), ffi.new("uint32_t *")
    weights, freq = np.empty(256, np.uint32), np.empty(256, np.uint32)
    code = lib.imij_read_table(
        ffi.from_buffer("uint8_t[]", br.buf), len(br.buf), pos, scheme.alphabet, scheme.first_capped_run, last,
        ffi.from_buffer("uint32_t[]", weights, require_writable=True),
        ffi.from_buffer("uint32_t[]", freq, require_writable=True),
    )
    if code:  # the reference names the exact rule (csrc/imij_kernels.h lists the codes)
        read_table_py(BitReader(br.buf, br.what, br.bitpos), scheme)
        raise KERNEL_CODES.error(code, kernel="models")
    br.bitpos = pos[0]
    count = last[0] + 1
    return Table.normalized(tuple(weights[:count].tolist()), tuple(freq[:count].tolist()))


def read_tables(br: BitReader, scheme: Scheme, count: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """A model's ``count`` tables (3.3), in one kernel call on the C backend: their weights and
    freq as (count, 256) arrays and each one's last symbol."""
    weights, freq = np.zeros((count, 256), np.uint32), np.zeros((count, 256), np.uint32)
    if _backend.active() != "c":
        lasts = []
        for c in range(count):
            table = read_table_py(br, scheme)
            weights[c, : len(table.weights)] = table.weights
            freq[c, : len(table.freq)] = table.freq
            lasts.append(len(table.freq) - 1)
        return weights, freq, tuple(lasts)
    ffi, lib = _backend.ffi, _backend.lib
    pos, last = ffi.new("uint64_t *", br.bitpos), np.zeros(count, np.uint32)
    code = lib.imij_read_tables(
        ffi.from_buffer("uint8_t[]", br.buf), len(br.buf), pos, scheme.alphabet, scheme.first_capped_run, count,
        ffi.from_buffer("uint32_t[]", last, require_writable=True),
        ffi.from_buffer("uint32_t[]", weights, require_writable=True),
        ffi.from_buffer("uint32_t[]", freq, require_writable=True),
    )
    if code:  # the reference names the exact rule
        again = BitReader(br.buf, br.what, br.bitpos)
        for _ in range(count):
            read_table_py(again, scheme)
        raise KERNEL_CODES.error(code, kernel="models")
    br.bitpos = pos[0]
    return weights, freq, tuple(last.tolist())


def read_table_py(br: BitReader, scheme: Scheme) -> Table:
    """The Python reference of ``read_table``."""
    last = br.read(8)
    if last >= scheme.alphabet:  # 3.3: last at or past the alphabet
        raise Corrupt(f"models: table's last symbol {last} at or past the alphabet of {scheme.alphabet}")
    prec = br.read(3) + 1  # 3.3: mantissa precision 1..=8
    weights = []
    e_prev = 0
    for _ in range(last + 1):  # one peek per symbol: its gamma (<= 49 bits) and mantissa (<= 7)
        window = br.peek(2 * MAX_GAMMA_ZEROS + 1 + 7)
        g, used = _split_gamma(window)
        e = e_prev + _unzigzag(g - 1)  # 3.3: gamma(zigzag(e - e_prev) + 1)
        if not 0 <= e <= MAX_EXPONENT:  # 3.3
            raise Corrupt(f"models: weight exponent {e} outside 0..=32")
        e_prev = e
        nb = min(e - 1, prec - 1) if e > 1 else 0
        weights.append(weight_of(e, nb, (window >> used) & ((1 << nb) - 1)))
        br.skip(used + nb)  # past the end: Corrupt
    capped = scheme.first_capped_run
    if any(weights[capped:]):  # 3.3 / 3.2: run cap
        sym = capped + next(i for i, w in enumerate(weights[capped:]) if w)
        raise Corrupt(f"models: weight on run token {sym} past the run cap of 2^15")
    if not any(weights):  # 3.3: no nonzero weight
        raise Corrupt("models: table has no nonzero weight")
    return Table.from_weights(weights)


def read_model(br: BitReader, depth: int, cross_allowed: bool) -> Model:
    """One model of a slot of depth n (3.3)."""
    k = br.read(5)
    m = br.read(3)
    scheme = checked_scheme(k, m, depth)  # 3.3: k <= 16, m <= 4, k == kv, alphabet <= 256
    cross = br.read(1)
    if cross and not cross_allowed:  # 3.3 / 2.2 / ruling R1
        raise Corrupt("models: cross context in a slot that may not use it")
    ctx_shift = br.read(5) if depth > 16 else 0  # 3.3: present only when n > 16
    packed = br.read(2 * CLASSES)  # 3.3: 2 bits per class, class 0 first (LSB-first: the low bits)
    ctx_map = tuple((packed >> (2 * c)) & 3 for c in range(CLASSES))
    return Model(scheme, bool(cross), ctx_shift, ctx_map, *read_tables(br, scheme, max(ctx_map) + 1))


def read_model_set(data: bytes | memoryview, slots: Sequence[tuple[int, bool]], palette: bool) -> ModelSet:
    """The models bit stream (2, 3.3), ``slots`` giving each slot's (depth, cross allowed): every
    rule of 3.3 checked now, the C kernel's packed form kept (on the C backend no Model object is
    made until one is asked for).

    Reading past models_len bytes is Corrupt (BitReader); what follows the last model is
    ignored (3.3 padding). On the C backend one kernel call reads every model
    (csrc/models.c imij_read_models); the reference names the rule of a rejected stream.
    """
    specs = _specs(slots, palette)
    if _backend.active() == "c" and specs:
        heads, _, _, freq = _read_c(data, specs)
        return ModelSet(data, specs, palette, packed=(heads, freq))
    return ModelSet(data, specs, palette, models=_read_all(data, specs))


def _specs(slots: Sequence[tuple[int, bool]], palette: bool) -> tuple[tuple[int, bool], ...]:
    """Every model's (depth, cross allowed): the slots', then the palette model's (3.3: depth 8, no cross)."""
    return (*slots, (PALETTE_DEPTH, False)) if palette else tuple(slots)


class ModelSet:
    """A payload's models (3.3), read and checked: the kernel's packed form (``packed``) and the
    Model objects (``models``), each made on first use from the other or from the bytes."""

    def __init__(self, data: bytes | memoryview, specs: tuple[tuple[int, bool], ...], palette: bool,
                 models: tuple[Model, ...] | None = None, packed: tuple[np.ndarray, np.ndarray] | None = None):
        self.data, self.specs, self.palette = data, specs, palette
        if models is not None:
            self.__dict__["models"] = models
        if packed is not None:
            self.__dict__["packed"] = packed

    @cached_property
    def models(self) -> tuple[Model, ...]:
        """Every model, the palette model last: read again (the bytes passed every check already)."""
        return _read_all(self.data, self.specs)

    @cached_property
    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """imij_read_models' output: heads (count, HEAD_WORDS) uint32 (imij_model_head: k, m,
        cross, ctx_shift, ntables, then ctx_map's 16 bytes) and freq (count, 4, 256) uint32."""
        count = len(self.models)
        heads, freq = np.zeros((count, HEAD_WORDS), np.uint32), np.zeros((count, 4, 256), np.uint32)
        for i, m in enumerate(self.models):
            heads[i, :5] = m.scheme.k, m.scheme.m, m.cross, m.ctx_shift, len(m.freq)
            heads[i, 5:] = np.frombuffer(bytes(m.ctx_map), np.uint32)
            freq[i, : len(m.freq)] = m.freq
        return heads, freq

    @property
    def slot_models(self) -> tuple[Model, ...]:
        return self.models[: len(self.specs) - self.palette]

    @property
    def palette_model(self) -> Model | None:
        return self.models[-1] if self.palette else None


def _read_all(data: bytes | memoryview, specs: tuple[tuple[int, bool], ...]) -> tuple[Model, ...]:
    """Every model of ``specs`` as Model objects, on the active backend."""
    if _backend.active() == "c" and specs:
        return _models_of(specs, *_read_c(data, specs))
    br = BitReader(data, "models")
    return tuple(read_model(br, depth, cross_ok) for depth, cross_ok in specs)


def _read_c(data: bytes | memoryview, specs: tuple[tuple[int, bool], ...]):
    """One imij_read_models call for ``specs`` (palette model included): heads (count, HEAD_WORDS),
    lasts (count, 4), weights and freq (count, 4, 256), all uint32, zeros past each model's tables
    and each table's last symbol."""
    ffi, lib = _backend.ffi, _backend.lib
    count = len(specs)
    heads, lasts = np.zeros((count, HEAD_WORDS), np.uint32), np.zeros((count, 4), np.uint32)
    weights, freq = np.zeros((count, 4, 256), np.uint32), np.zeros((count, 4, 256), np.uint32)  # apart: a plan keeps freq
    depths, cross_ok, schemes = _spec_arrays(specs)
    code = lib.imij_read_models(
        ffi.from_buffer("uint8_t[]", data), len(data), ffi.new("uint64_t *", 0), count,
        ffi.from_buffer("uint32_t[]", depths), ffi.from_buffer("uint8_t[]", cross_ok),
        ffi.from_buffer("uint16_t[]", schemes), ffi.from_buffer("imij_model_head[]", heads, require_writable=True), count,
        ffi.from_buffer("uint32_t[]", lasts, require_writable=True),
        ffi.from_buffer("uint32_t[]", weights, require_writable=True),
        ffi.from_buffer("uint32_t[]", freq, require_writable=True),
        count * 4,
    )
    if code:  # the reference names the exact rule (csrc/imij_kernels.h lists the codes)
        br = BitReader(data, "models")
        for depth, cross_ok_i in specs:
            read_model(br, depth, bool(cross_ok_i))
        raise KERNEL_CODES.error(code, kernel="models")
    return heads, lasts, weights, freq


def _models_of(specs: tuple[tuple[int, bool], ...], heads: np.ndarray, lasts: np.ndarray, weights: np.ndarray,
               freq: np.ndarray) -> tuple[Model, ...]:
    """``_read_c``'s output as Model objects (3.3's rules were checked by the kernel)."""
    ctx_maps = np.ascontiguousarray(heads[:, 5:]).view(np.uint8).tolist()
    models = []
    for (depth, _), (k, m, cross, ctx_shift, n, *_), ctx_map, last, w, f in zip(
            specs, heads.tolist(), ctx_maps, lasts.tolist(), weights, freq):
        # copies of the tables a model has: views would keep all four of every model alive
        models.append(Model(checked_scheme(k, m, depth), bool(cross), ctx_shift, tuple(ctx_map),
                            w[:n].copy(), f[:n].copy(), tuple(last[:n])))
    return tuple(models)


@lru_cache(maxsize=64)
def _spec_arrays(specs: tuple[tuple[int, bool], ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The model reader's inputs for ``specs``, made once per distinct slot list (read only)."""
    arrays = (np.array([d for d, _ in specs], np.uint32), np.array([c for _, c in specs], np.uint8),
              np.concatenate([_scheme_table(d) for d, _ in specs]))
    for a in arrays:
        a.flags.writeable = False
    return arrays


@cache
def _scheme_table(depth: int) -> np.ndarray:
    """For the C model reader: per 5-bit k and 3-bit m, the alphabet and first capped run symbol
    of their scheme at slot depth ``depth``, alphabet 0 where 3.3 rejects them (checked_scheme)."""
    table = np.zeros((32, 8, 2), np.uint16)
    for k in range(32):
        for m in range(8):
            try:
                scheme = checked_scheme(k, m, depth)
            except Corrupt:
                continue
            table[k, m] = scheme.alphabet, scheme.first_capped_run
    table.flags.writeable = False  # shared by every read at this depth
    return table


# --- writing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableCode:
    """A table as a writer codes it: per-symbol (e, nb, mant) at a precision."""

    prec: int
    codes: tuple[tuple[int, int, int], ...]

    @property
    def weights(self) -> list[int]:
        return [weight_of(*c) for c in self.codes]


def table_code(counts: list[int], prec: int) -> TableCode:
    """Quantize symbol counts (trailing zeros dropped by the caller) at precision prec."""
    codes = [quantize_weight(c, prec) for c in counts]
    while len(codes) > 1 and codes[-1][0] == 0:
        codes.pop()
    return TableCode(prec, tuple(codes))


def write_table(bw: BitWriter, code: TableCode) -> None:
    last = len(code.codes) - 1
    bw.write(last, 8)
    bw.write(code.prec - 1, 3)
    e_prev = 0
    for e, nb, mant in code.codes:
        _write_gamma(bw, _zigzag(e - e_prev) + 1)
        e_prev = e
        if e > 1:
            if nb != min(e - 1, code.prec - 1):
                raise ValueError("mantissa width does not match the precision")
            bw.write(mant, nb)


def table_bits(code: TableCode) -> int:
    """The exact bit count write_table emits for ``code``."""
    bits = 8 + 3
    e_prev = 0
    for e, nb, _ in code.codes:
        bits += 2 * (_zigzag(e - e_prev) + 1).bit_length() - 1 + (nb if e > 1 else 0)
        e_prev = e
    return bits


def write_model(bw: BitWriter, scheme: Scheme, cross: bool, ctx_shift: int, ctx_map: tuple[int, ...], tables: list[TableCode]) -> None:
    bw.write(scheme.k, 5)
    bw.write(scheme.m, 3)
    bw.write(1 if cross else 0, 1)
    if scheme.n > 16:
        bw.write(ctx_shift, 5)
    for c in ctx_map:
        bw.write(c, 2)
    if len(tables) != max(ctx_map) + 1:
        raise ValueError("one table per context 0 ..= max(ctx_map)")
    for t in tables:
        write_table(bw, t)


def smallest_table(counts: Sequence[int], prec: int | None) -> TableCode:
    """3.3: the table code of ``counts`` (precision ``prec``, or the one of 1..=8 with the fewest
    table plus data bits)."""
    counts = [int(c) for c in counts]
    while len(counts) > 1 and counts[-1] == 0:
        counts.pop()
    if not any(counts):
        counts = [1]
    # weights must fit e <= 32 (3.3): scale huge counts down, keeping every used symbol
    big = max(counts)
    if big >= 1 << 32:
        shift = big.bit_length() - 32
        counts = [max(1, c >> shift) if c else 0 for c in counts]
    options = [prec] if prec is not None else range(1, 9)
    best: tuple[float, TableCode] | None = None
    for p in options:
        code = table_code(counts, p)
        freq = Table.from_weights(code.weights).freq
        cost = table_bits(code) + sum(c * math.log2(M / freq[s]) for s, c in enumerate(counts) if c)
        if best is None or cost < best[0]:
            best = (cost, code)
    assert best is not None
    return best[1]
