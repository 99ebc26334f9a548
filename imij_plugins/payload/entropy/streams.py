"""One slot's rANS stream as the encoder writes it (3, 3.1; C: imij_enc_stream)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.rans import Lanes, encode_stream, tokenize
from imij_plugins.payload.entropy.scratch import U32, pair, ptr, thread_buffer, use_c
from imij_plugins.payload.entropy.tokens import Scheme
from imij_plugins.payload.kernel_codes import KERNEL_CODES


@dataclass(frozen=True)
class EncModel:
    """One model as the stream writer codes with it (imij_kernels.h imij_enc_model)."""

    depth: int
    k: int
    m: int
    cross: bool
    ctx_shift: int
    run_min: int  # 0: no run tokens
    ctx_map: tuple[int, ...]
    freqs: tuple[tuple[int, ...], ...]  # per context, normalized to M (3.3)
    cums: tuple[tuple[int, ...], ...]
    # freqs and cums as the struct holds them, (2, 4, 256) uint16 zero past each table, where the
    # chooser made them: copied in one step each (cffi converts a list an element at a time)
    tables: np.ndarray | None = field(default=None, compare=False, repr=False)

    def cdata(self):
        ffi = _backend.ffi
        s = ffi.new("imij_enc_model *")
        s.depth, s.k, s.m, s.cross, s.ctx_shift, s.run_min = self.depth, self.k, self.m, int(self.cross), self.ctx_shift, self.run_min
        s.ctx_map = list(self.ctx_map)
        if self.tables is not None:
            ffi.memmove(s.freq, self.tables[0], ffi.sizeof(s.freq))
            ffi.memmove(s.cum, self.tables[1], ffi.sizeof(s.cum))
            return s
        for c, (f, cu) in enumerate(zip(self.freqs, self.cums)):
            s.freq[c][0 : len(f)] = list(f)
            s.cum[c][0 : len(cu)] = list(cu)
        return s


def stream(u: np.ndarray, u0: np.ndarray | None, lanes: int, model: EncModel, cmodel=None) -> bytes:
    """imij_kernels.h imij_enc_stream: one slot's rANS stream (3, 3.1) for zigzag residuals u (h, w)."""
    h, w = u.shape
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        uu, u00 = pair(u, u0 if model.cross else None)
        scratch = thread_buffer("ops", lib.imij_enc_stream_scratch(w, h), U32)
        cm = cmodel if cmodel is not None else model.cdata()
        p0 = ffi.from_buffer(u00) if u00 is not None else ffi.NULL
        for cap in _stream_caps(h * w, uu.itemsize):
            out = thread_buffer("out", cap, np.uint8)
            n = lib.imij_enc_stream(ffi.from_buffer(uu), p0, uu.itemsize, w, h, lanes, cm,
                                    ptr(ffi, "uint32_t[]", scratch, True), scratch.size,
                                    ptr(ffi, "uint8_t[]", out, True), cap)
            if n != lib.IMIJ_E_SPACE:
                break
        if n < 0:
            raise KERNEL_CODES.error(n, kernel="imij_enc_stream", refused=ValueError)
        return out[:n].tobytes()
    ln = Lanes.of(w, lanes)
    scheme = Scheme(model.depth, model.k, model.m)
    steps = tokenize(u.astype(np.int64).tolist(), scheme, model.cross, model.ctx_shift, model.ctx_map, ln,
                     u0.astype(np.int64).tolist() if (model.cross and u0 is not None) else None,
                     model.run_min or None)
    return encode_stream(steps, list(model.freqs), list(model.cums), ln.active)


def _stream_caps(positions: int, esize: int) -> tuple[int, int]:
    """Output buffers for a stream: the raw plane's size and an eighth (enough unless the data
    does not compress), then imij_kernels.h's bound for any input."""
    return 4096 + esize * positions + positions // 8, 128 + 6 * positions
