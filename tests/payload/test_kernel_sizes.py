"""Every C entry point that writes into a buffer whose extent it computes takes that buffer's
length and checks it before writing: called through cffi's ``lib`` with a length one element
short, it returns IMIJ_E_SIZE and leaves the whole buffer (a guarded region of a
larger array) as it was; with the exact length it succeeds and writes nothing past it."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from imij_plugins import _backend
from imij_plugins.payload.data import read_data
from imij_plugins.payload.entropy.kernel import CARRIED_ROWS, CModels, Interleaved
from imij_plugins.payload.entropy.levels import ring_bytes
from imij_plugins.payload.entropy.models import PALETTE_DEPTH, _spec_arrays

from .entropy.syntax_writer import EntropyOptions, UnitChoice, encode_entropy_payload, header_for

pytestmark = pytest.mark.skipif(_backend.lib is None, reason="C kernels not built")

GUARD = 64  # elements past the length the call is given
FILL = 0xA5  # every byte of a guarded buffer before the call

# A case runs its entry point once, given a length `short` elements below the exact one; it
# returns the call's code, the buffer the call writes (guarded) and the exact length.
Result = tuple[int, np.ndarray, int]
Run = Callable[[int], Result]


def _guarded(n: int, dtype) -> np.ndarray:
    """n elements of ``dtype`` and GUARD more, every byte FILL."""
    return np.full((n + GUARD) * np.dtype(dtype).itemsize, FILL, np.uint8).view(dtype)


def _intact(a: np.ndarray, start: int = 0) -> bool:
    return bool((a[start:].view(np.uint8) == FILL).all())


def _ptr(a: np.ndarray, ctype: str = "uint8_t[]") -> object:
    return _backend.ffi.from_buffer(ctype, a)


# --- units of 8-bit RGB payloads: one regular (csrc/entropy.c), one template (csrc/bilevel.c) ------


class _Unit:
    """The first unit of an 8-bit RGB image's payload, its plan's kernel structs, and its geometry."""

    def __init__(self, image: np.ndarray, options: EntropyOptions | None = None):
        enc = encode_entropy_payload(image, options=options)
        data = read_data(enc.payload, header_for(image, enc), 0, len(enc.payload))
        unit = data.units[0]
        _, _, self.w, self.h = data.head.geometry.unit_rect(0)
        self.plan = data.decoder.plan
        self.models = CModels(self.plan)
        self.body = np.frombuffer(enc.payload[unit.body_start : unit.end], np.uint8)
        self.row = Interleaved(self.w, self.plan.lanes).row
        self.nslots = len(self.plan.slots)
        self.models_bytes = np.frombuffer(bytes(data.head.models), np.uint8)
        palette = [(PALETTE_DEPTH, False)] if self.plan.palette_model is not None else []
        self.model_specs = tuple([(s.depth, s.cross_allowed) for s in self.plan.slots] + palette)

    def begin(self, has_reference: bool = False) -> object:
        """A state after a successful imij_entropy_begin."""
        ffi, lib = _backend.ffi, _backend.lib
        self.pred_ids = np.empty(self.h, np.uint8)
        state = ffi.new("imij_entropy_state *")
        assert lib.imij_entropy_begin(_ptr(self.body), self.body.size, self.models.regular.unit_of(self.w, self.h),
                                      has_reference, state, _ptr(self.pred_ids), self.pred_ids.size) == 0
        return state

    def scratch_len(self, capacity: int) -> int:
        return max(self.nslots, 1) * (capacity + CARRIED_ROWS) * self.row

    def store(self, out: np.ndarray, out_len: int) -> object:
        """The payload's sample store aimed at ``out``, a contiguous (h, w, 3) uint8 image."""
        st = _backend.ffi.new("imij_sample_store *", self.models.store_struct[0])
        st.out, st.out_len = _backend.ffi.cast("uint8_t *", out.ctypes.data), out_len
        st.row_stride, st.pixel_stride, st.esize = 3 * self.w, 3, 1
        return st


CAPACITY = 4  # rows per block of the row block scratch


@cache
def _unit() -> _Unit:
    """A regular stripe of random samples."""
    return _Unit(np.random.default_rng(2).integers(0, 256, (20, 40, 3), dtype=np.uint8))


@cache
def _level_unit() -> _Unit:
    """A template stripe (2.14, layout 0x83) of five colours in blocks."""
    rng = np.random.default_rng(3)
    index = np.repeat(np.repeat(rng.integers(0, 5, (7, 9)), 3, axis=0), 4, axis=1)[:19, :33]
    image = rng.integers(0, 256, (5, 3), dtype=np.uint8)[index]
    unit = _Unit(image, EntropyOptions(lanes=3, stripe_rows=32, group_cols=0, unit=UnitChoice(layout=0x83)))
    assert unit.body[0] == 0x83 and (unit.w, unit.h) == (33, 19)
    return unit


def _models_fill(short: int) -> Result:
    ffi, lib = _backend.ffi, _backend.lib
    need = 1024  # one model of one table
    entries, structs = _guarded(need, np.uint64), ffi.new("imij_slot_model[]", 1)
    freq = np.zeros((4, 256), np.uint32)
    freq[0, 0] = 1024
    code = lib.imij_models_fill(structs, 1, ffi.from_buffer("uint32_t[]", np.array([8, 8, 0, 0, 0, 0, 1], np.uint32)),
                                ffi.from_buffer("uint8_t[]", np.zeros(16, np.uint8)), ffi.from_buffer("uint32_t[]", freq),
                                _ptr(entries, "uint64_t[]"), need - short)
    assert (structs[0].ent == ffi.NULL) == bool(short)  # refused: the structs are not written either
    return code, entries, need


def _entropy_begin(short: int) -> Result:
    ffi, lib, u = _backend.ffi, _backend.lib, _unit()
    pred_ids = _guarded(u.h, np.uint8)
    code = lib.imij_entropy_begin(_ptr(u.body), u.body.size, u.models.regular.unit_of(u.w, u.h), 0,
                                  ffi.new("imij_entropy_state *"), _ptr(pred_ids), u.h - short)
    return code, pred_ids, u.h


def _entropy_rows(short: int) -> Result:
    u = _unit()
    need = u.scratch_len(CAPACITY)
    planes = _guarded(need, np.uint32)
    code = _backend.lib.imij_entropy_rows(u.begin(), CAPACITY, CAPACITY, _ptr(planes, "uint32_t[]"), need - short,
                                          _backend.ffi.NULL, 0)
    return code, planes, need


def _entropy_rows_reference(short: int) -> Result:
    """An inter unit's reference planes (read) one element short: the planes stay as they were."""
    u = _unit()
    need = u.scratch_len(CAPACITY)
    planes, reference = _guarded(need, np.uint32), np.zeros(u.nslots * (CAPACITY + CARRIED_ROWS) * u.row, np.uint32)
    code = _backend.lib.imij_entropy_rows(u.begin(has_reference=True), CAPACITY, CAPACITY, _ptr(planes, "uint32_t[]"),
                                          need, _ptr(reference, "uint32_t[]"), reference.size - short)
    return code, planes, need


def _entropy_store_planes(short: int) -> Result:
    u = _unit()
    need = u.scratch_len(CAPACITY)
    planes, out = _guarded(need, np.uint32), np.zeros(u.h * u.w * 3, np.uint8)
    code = _backend.lib.imij_entropy_store(u.begin(), CAPACITY, _ptr(planes, "uint32_t[]"), need - short,
                                           u.store(out, out.size))
    return code, planes, need


def _entropy_store_out(short: int) -> Result:
    u = _unit()
    need = u.h * u.w * 3
    out, planes = _guarded(need, np.uint8), np.zeros(u.scratch_len(CAPACITY), np.uint32)
    code = _backend.lib.imij_entropy_store(u.begin(), CAPACITY, _ptr(planes, "uint32_t[]"), planes.size,
                                           u.store(out, need - short))
    return code, out, need


def _read_models(target: str) -> Run:
    """imij_read_models with its heads or its tables (last, weights, freq: 4 per model) short."""
    def run(short: int) -> Result:
        ffi, u = _backend.ffi, _unit()
        count = len(u.model_specs)
        depths, cross_ok, schemes = _spec_arrays(u.model_specs)
        head = ffi.sizeof("imij_model_head")
        heads, weights = _guarded(count * head, np.uint8), _guarded(count * 4 * 256, np.uint32)
        last, freq = np.zeros(count * 4, np.uint32), np.zeros(count * 4 * 256, np.uint32)
        code = _backend.lib.imij_read_models(
            _ptr(u.models_bytes), u.models_bytes.size, ffi.new("uint64_t *"), count, _ptr(depths, "uint32_t[]"),
            _ptr(cross_ok), _ptr(schemes, "uint16_t[]"), ffi.cast("imij_model_head *", _ptr(heads)),
            count - (short if target == "heads" else 0), _ptr(last, "uint32_t[]"), _ptr(weights, "uint32_t[]"),
            _ptr(freq, "uint32_t[]"), 4 * count - (short if target == "tables" else 0))
        return (code, heads, count * head) if target == "heads" else (code, weights, count * 4 * 256)
    run.__name__ = f"_read_models_{target}"
    return run


def _least_index(width: int) -> int:
    """imij_level_unit_decode: the least index scratch the level kernel takes (ring_bytes gives it more)."""
    return 3 * (width + 4) + 16


def _level_decode_out(short: int) -> Result:
    u = _level_unit()
    need, index = u.nslots * u.h * u.w, np.empty(ring_bytes(u.w), np.uint8)
    out = _guarded(need, np.uint8)
    code = _backend.lib.imij_level_unit_decode(_ptr(u.body), u.body.size, u.models.levels.unit_of(u.w, u.h, 1),
                                               _ptr(out), need - short, _ptr(index), index.size)
    return code, out, need


def _level_decode_index(short: int) -> Result:
    u = _level_unit()
    need, out = _least_index(u.w), np.empty(u.nslots * u.h * u.w, np.uint8)
    index = _guarded(need, np.uint8)
    code = _backend.lib.imij_level_unit_decode(_ptr(u.body), u.body.size, u.models.levels.unit_of(u.w, u.h, 1),
                                               _ptr(out), out.size, _ptr(index), need - short)
    return code, index, need


def _level_store_out(short: int) -> Result:
    u = _level_unit()
    need, index = u.h * u.w * 3, np.empty(ring_bytes(u.w), np.uint8)
    out = _guarded(need, np.uint8)
    code = _backend.lib.imij_level_unit_store(_ptr(u.body), u.body.size, u.models.levels.unit_of(u.w, u.h, 0),
                                              u.store(out, need - short), _ptr(index), index.size)
    return code, out, need


def _level_store_index(short: int) -> Result:
    u = _level_unit()
    need, out = _least_index(u.w), np.empty(u.h * u.w * 3, np.uint8)
    index = _guarded(need, np.uint8)
    code = _backend.lib.imij_level_unit_store(_ptr(u.body), u.body.size, u.models.levels.unit_of(u.w, u.h, 0),
                                              u.store(out, out.size), _ptr(index), need - short)
    return code, index, need


LEVEL_PLANE = (9, 14)  # the encoder's (height, width): a bilevel t plane of zeros


def _level_scratch(encode: bool) -> Run:
    """imij_level_encode's or imij_level_counts' padded plane (height + 2) x (width + 4)."""
    def run(short: int) -> Result:
        ffi, lib = _backend.ffi, _backend.lib
        h, w = LEVEL_PLANE
        need, plane = (h + 2) * (w + 4), np.zeros(h * w, np.uint8)
        scratch = _guarded(need, np.uint8)
        if encode:
            probs, dst = np.full(1024, 512, np.uint16), np.empty(4096, np.uint8)
            code = lib.imij_level_encode(_ptr(plane), w, h, 2, 2, ffi.NULL, _ptr(scratch), need - short,
                                         _ptr(probs, "uint16_t[]"), _ptr(probs, "uint16_t[]"), ffi.NULL, ffi.NULL,
                                         _ptr(dst), dst.size)
        else:
            counts = np.zeros(2048 + 80 + 256, np.uint32)
            code = lib.imij_level_counts(_ptr(plane), w, h, 2, 2, ffi.NULL, _ptr(scratch), need - short,
                                         _ptr(counts[:2048], "uint32_t[]"), _ptr(counts[2048:2128], "uint32_t[]"),
                                         _ptr(counts[2128:], "uint32_t[]"))
        return code, scratch, need
    run.__name__ = "_level_encode" if encode else "_level_counts"
    return run


# --- the encoder's kernels (csrc/encode.c) ------------------------------------------------------

S, H, W = 3, 5, 7  # slots, height, width of the encoder's planes
CTYPES = {np.dtype(t): f"{t.__name__}_t[]" for t in (np.uint8, np.uint32, np.int64, np.uint64)}
Buffers = dict[str, tuple[object, int]]  # name -> (cffi pointer, the length the call is given)


def _planes(dtype=np.uint8) -> np.ndarray:
    return (np.arange(S * H * W) * 37 % 251).astype(dtype)


def _depths() -> object:
    return _ptr(np.full(S, 8, np.uint32), "uint32_t[]")


def _stream_model() -> object:
    """A model of 8-bit values whose one table codes only 0 (u of zeros)."""
    model = _backend.ffi.new("imij_enc_model *")
    model.depth, model.k = 8, 8
    model.freq[0][0] = 1024
    return model


# per kernel: its arguments from the written buffers, and each written buffer's (dtype, length)
ENCODER: dict[str, tuple[Callable[[Buffers], tuple], dict[str, tuple[type, int]]]] = {
    "imij_enc_costs": (
        lambda b: (_ptr(_planes()), 1, _backend.ffi.NULL, S, W, H, 2, _depths(), 0, 0x7F, 1, 1, 1, *b["rows"],
                   *b["costs"]),
        {"rows": (np.uint32, 2 * S * W), "costs": (np.int64, 4 * H * 10)}),
    "imij_enc_residuals": (
        lambda b: (_ptr(_planes()), 1, _backend.ffi.NULL, S, W, H, 2, _depths(), _ptr(np.zeros(H, np.uint8)), 0,
                   *b["rows"], *b["u"], 1),
        {"rows": (np.uint32, 3 * S * W), "u": (np.uint8, S * H * W)}),
    "imij_enc_model_preds": (
        lambda b: (_ptr(_planes()), 1, S, W, H, 2, _depths(), 0, 0x7F,
                   _ptr(np.zeros(S * 4 * 640, np.uint32), "uint32_t[]"), S * 4 * 640, _ptr(np.zeros(S * 16, np.uint8)),
                   _ptr(np.zeros(S, np.uint8)), *b["rows"], *b["preds"]),
        {"rows": (np.uint32, (5 * S + 2) * W), "preds": (np.uint8, H)}),
    "imij_enc_near": (
        lambda b: (_ptr(_planes(np.uint32), "uint32_t[]"), S, W, H, 2, _depths(),
                   _ptr(np.ones(S, np.uint32), "uint32_t[]"), 0, 0x7F, 1, 0, *b["preds"],
                   _backend.ffi.new("uint32_t *"), *b["u"], *b["recon"], *b["rows3"]),
        {"preds": (np.uint8, H), "u": (np.uint32, S * H * W), "recon": (np.uint32, S * H * W),
         "rows3": (np.uint32, 3 * S * W + (H + 3) // 4)}),
    "imij_enc_stats": (
        lambda b: (_ptr(_planes()), _backend.ffi.NULL, 1, W, H, 2, 0, 0, 640, *b["rows"],
                   *[_ptr(np.zeros(n, np.uint32), "uint32_t[]") for n in (16 * 640, 16, 16 * 640) * 2]),
        {"rows": (np.uint32, 3 * W)}),
    "imij_enc_palette": (
        lambda b: (_ptr(_planes()), 1, S, H * W, *b["entries"], _ptr(np.empty(H * W, np.uint8))),
        {"entries": (np.uint32, 256 * S)}),
    "imij_enc_histogram": (
        lambda b: (_ptr(_planes()), 1, S * H * W, 1, 8, *b["counts"]),
        {"counts": (np.uint64, 256)}),
    "imij_enc_stream": (
        lambda b: (_ptr(np.zeros(H * W, np.uint8)), _backend.ffi.NULL, 1, W, H, 2, _stream_model(), *b["scratch"],
                   _ptr(np.empty(4096, np.uint8)), 4096),
        {"scratch": (np.uint32, 3 * W + 16 + 3 * W * H)}),  # imij_enc_stream_scratch(W, H): one block
}


def _encoder(kernel: str, target: str) -> Run:
    """``kernel`` with buffer ``target`` given ``short`` elements fewer than it needs."""
    def run(short: int) -> Result:
        args, sizes = ENCODER[kernel]
        arrays = {name: _guarded(n, dtype) for name, (dtype, n) in sizes.items()}
        given = {name: (_ptr(a, CTYPES[a.dtype]), sizes[name][1] - (short if name == target else 0))
                 for name, a in arrays.items()}
        return getattr(_backend.lib, kernel)(*args(given)), arrays[target], sizes[target][1]
    run.__name__ = f"_{kernel.removeprefix('imij_')}_{target}"
    return run


CASES: list[Run] = [
    _models_fill,
    _entropy_begin,
    _entropy_rows,
    _entropy_rows_reference,
    _entropy_store_planes,
    _entropy_store_out,
    _read_models("heads"),
    _read_models("tables"),
    _level_decode_out,
    _level_decode_index,
    _level_store_out,
    _level_store_index,
    _level_scratch(False),
    _level_scratch(True),
    *[_encoder(kernel, target) for kernel, (_, sizes) in ENCODER.items() for target in sizes],
]


@pytest.mark.parametrize("run", CASES, ids=[run.__name__.lstrip("_") for run in CASES])
def test_a_short_buffer_is_refused_and_left_as_it_was(run: Run) -> None:
    code, buf, need = run(1)
    assert code == _backend.lib.IMIJ_E_SIZE
    assert _intact(buf)
    code, buf, need = run(0)
    assert code >= 0
    assert _intact(buf, need)


def test_the_size_error_stays() -> None:
    """A state refused for its scratch keeps the code on every later call (imij_entropy_rows)."""
    u = _unit()
    need = u.scratch_len(CAPACITY)
    state, planes = u.begin(), np.zeros(need, np.uint32)
    lib = _backend.lib
    assert lib.imij_entropy_rows(state, 1, CAPACITY, _ptr(planes, "uint32_t[]"), need - 1, _backend.ffi.NULL, 0) == lib.IMIJ_E_SIZE
    assert lib.imij_entropy_rows(state, 1, CAPACITY, _ptr(planes, "uint32_t[]"), need, _backend.ffi.NULL, 0) == lib.IMIJ_E_SIZE


@pytest.mark.parametrize("row_stride, pixel_stride, out_len, fits", [
    (120, 3, 20 * 120, True),  # the unit's (20, 40, 3) rectangle exactly
    (120, 3, 20 * 120 - 1, False),
    (200, 3, 19 * 200 + 40 * 3, True),  # a rectangle of a wider image: the last row ends early
    (200, 3, 19 * 200 + 40 * 3 - 1, False),
    (-120, 3, 1 << 40, False),  # negative strides are refused whatever the length
    (120, -3, 1 << 40, False),
    (1 << 62, 3, (1 << 64) - 1, False),  # 19 rows of 2^62 bytes overflow
    (3, 1 << 59, (1 << 64) - 1, False),
])
def test_sample_store_fits(row_stride: int, pixel_stride: int, out_len: int, fits: bool) -> None:
    st = _unit().store(np.zeros(1, np.uint8), out_len)
    st.row_stride, st.pixel_stride = row_stride, pixel_stride
    assert _backend.lib.imij_sample_store_fits(st, 40, 20) == fits


def test_sample_store_fits_every_channel() -> None:
    """A Const channel past the slots' widens each pixel's extent."""
    st = _unit().store(np.zeros(1, np.uint8), 20 * 120)
    lib = _backend.lib
    assert lib.imij_sample_store_fits(st, 40, 20)
    st.nconst, st.const_channel[0] = 1, 3
    assert not lib.imij_sample_store_fits(st, 40, 20)
    st.out_len = 19 * 120 + 39 * 3 + 4
    assert lib.imij_sample_store_fits(st, 40, 20)
