"""The encoder's kernels: predictor / decorrelation search, residuals, the near-lossless closed
loop, context statistics, palette detection and the stream writer (2.3-2.6, 3, 4, 5).

Each function runs the C kernel of csrc/encode.c when ``_backend.active() == "c"`` (with the GIL
released, so units encode in parallel on threads) and otherwise its pure-Python reference here;
both give the same result bit for bit (tests/payload/entropy/test_encoder.py).

Planes are (S, h, w) arrays of coded values (2.1's s, below 2^n_s), one per slot of a unit, and
residuals u likewise, each in its narrowest unsigned type (``value_dtype``): the C kernels read
uint8, uint16 and uint32 arrays as they are, a few rows at a time, so no plane is widened whole.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.maps import native_order
from imij_plugins.payload.entropy.models import M, normalize
from imij_plugins.payload.entropy.near import quantize
from imij_plugins.payload.entropy.rans import Lanes, encode_stream, tokenize
from imij_plugins.payload.entropy.stripe import predict
from imij_plugins.payload.entropy.tokens import RUN_CAP, Scheme
from imij_plugins.payload.kernel_codes import ENCODER

BUCKETS = 640  # encode.h IMIJ_ENC_BUCKETS: u below 256 exact, then (msb, 4 bits below it)
CLASSES = 16
PREDICTORS = 10  # 0..9 (section 4; 7-9 only in inter frames, against a reference)
INTER_PREDICTORS = 0x380  # bits 7, 8, 9 of a predictor mask
UNTRIED = 1 << 62  # costs of (mode, row, predictor) combinations not evaluated

U32 = np.uint32


_local = threading.local()


def _scratch(name: str, size: int, dtype) -> np.ndarray:
    """A per-thread buffer of at least ``size`` elements, reused across calls (a payload's units
    are of about one size; sized to the call, so a small image's stay small)."""
    buf = getattr(_local, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        setattr(_local, name, buf)
    return buf[:size]


def release_scratch() -> None:
    """Drop this thread's buffers (the encoder calls it when a payload is done)."""
    for name in ("ops", "out"):
        if hasattr(_local, name):
            delattr(_local, name)


def _c() -> bool:
    return _backend.active() == "c"


def _ptr(ffi, ctype: str, a: np.ndarray, writable: bool = False):
    return ffi.from_buffer(ctype, a, require_writable=writable)


def _planes32(planes: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(planes, dtype=U32)


NARROW = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(U32))


def value_dtype(depths: list[int]) -> np.dtype:
    """The narrowest unsigned type holding values of every depth (2.1: n <= 32)."""
    top = max(depths, default=0)
    return NARROW[0] if top <= 8 else NARROW[1] if top <= 16 else NARROW[2]


def _narrow(a: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """``a`` contiguous in ``dtype`` (default: its own type when uint8, uint16 or uint32, else
    uint32), as the C kernels read it (their esize is its itemsize)."""
    if dtype is None:
        dtype = a.dtype if a.dtype in NARROW else np.dtype(U32)
    return np.ascontiguousarray(a, dtype=dtype)


def _pair(u: np.ndarray, u0: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """A slot's residuals and slot 0's in one narrow type (the kernels take one esize)."""
    if u0 is None:
        return _narrow(u), None
    common = max(_narrow(u[:0]).dtype, _narrow(u0[:0]).dtype, key=lambda d: d.itemsize)
    return _narrow(u, common), _narrow(u0, common)


# --- shared numpy helpers ----------------------------------------------------------------------


def bit_length(z: np.ndarray) -> np.ndarray:
    """Exact bit_length of non-negative integers below 2^53 (frexp's exponent)."""
    return np.frexp(z.astype(np.float64))[1].astype(np.int64)


def zigzag(d: np.ndarray, n: int) -> np.ndarray:
    """u = zigzag(sext_n(d)) for d mod 2^n (the residual whose unzigzag mod 2^n is d)."""
    if n == 0:
        return np.zeros(d.shape, dtype=np.int64)
    d = d.astype(np.int64) & ((1 << n) - 1)
    half = 1 << (n - 1)
    s = (d ^ half) - half
    return np.where(s >= 0, 2 * s, -2 * s - 1)


def sext(d: np.ndarray, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros(d.shape, dtype=np.int64)
    half = 1 << (n - 1)
    return (d.astype(np.int64) ^ half) - half


def bucket_of(u: np.ndarray) -> np.ndarray:
    """encode.h's bucket: u below 256, else 256 + (msb - 8) * 16 + the 4 bits below the msb."""
    u = np.asarray(u, dtype=np.int64)
    msb = bit_length(u) - 1
    sh = np.maximum(msb - 4, 0)
    big = 256 + (msb - 8) * 16 + ((u >> sh) & 15)
    return np.where(u < 256, u, big)


def lane_edges(ln: Lanes) -> tuple[np.ndarray, np.ndarray]:
    """Per column: is it a lane's first column, its last (2.3)."""
    first = np.zeros(ln.gw, dtype=bool)
    last = np.zeros(ln.gw, dtype=bool)
    for s, width in zip(ln.starts, ln.widths):
        first[s] = True
        last[s + width - 1] = True
    return first, last


def _neighbours(V: np.ndarray, rows: np.ndarray, first: np.ndarray, last: np.ndarray):
    """W, N, NW, NE (int64) of rows ``rows`` (all >= 1) of plane V with lane-local rules."""
    N = V[rows - 1]
    W = np.empty_like(N)
    W[:, 1:] = V[rows, :-1]
    W[:, first] = N[:, first]
    NW = np.empty_like(N)
    NW[:, 1:] = V[rows - 1, :-1]
    NW[:, first] = N[:, first]
    NE = np.empty_like(N)
    NE[:, :-1] = V[rows - 1, 1:]
    NE[:, last] = N[:, last]
    return W, N, NW, NE


def predict_rows(p: int, W, N, NW, NE, mask: int) -> np.ndarray:
    """Section 4's predictor p (0..6) on neighbour arrays."""
    if p == 0:
        return W
    if p == 1:
        return N
    if p == 2:
        return (W + N) >> 1
    if p == 3:
        lo, hi = np.minimum(W, N), np.maximum(W, N)
        return np.where(NW >= hi, lo, np.where(NW <= lo, hi, W + N - NW))
    if p == 4:
        return (W + N - NW) & mask
    if p == 5:
        b = W + N - NW
        pa, pb, pc = np.abs(b - W), np.abs(b - N), np.abs(b - NW)
        return np.where((pa <= pb) & (pa <= pc), W, np.where(pb <= pc, N, NW))
    return (W + NE) >> 1


def _row0_pred(V0: np.ndarray, first: np.ndarray) -> np.ndarray:
    p = np.zeros_like(V0)
    p[1:] = V0[:-1]
    p[first] = 0
    return p


def decor_forward(d0, d1, d2, mode: int, n: int):
    """The forward decorrelation of residuals mod 2^n (4 step 2 undone): (r', b')."""
    mask = (1 << n) - 1
    if mode == 0:
        return d1, d2
    r = (d1 - d0) & mask
    if mode == 1:
        b = (d2 - d0) & mask
    elif mode == 2:
        b = (d2 - d1) & mask
    else:
        b = (d2 - ((sext(d1, n) + sext(d0, n)) >> 1)) & mask
    return r, b


# --- search costs --------------------------------------------------------------------------------


def costs(planes: np.ndarray, depths: list[int], lanes: int, decor: bool, pred_mask: int, mode_mask: int,
          row_step: int = 1, col_step: int = 1, refs: np.ndarray | None = None) -> np.ndarray:
    """encode.h imij_enc_costs: (4, h, 10) int64 bit-length costs, UNTRIED where not evaluated.
    ``refs``: an inter frame's reference R per slot (S, h, w), which lets predictors 7-9 in."""
    S, h, w = planes.shape
    out = np.full((4, h, PREDICTORS), UNTRIED, dtype=np.int64)
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = _narrow(planes)
        dep = np.asarray(depths, dtype=U32)
        rows = np.empty(2 * S * w, dtype=U32)
        code = lib.imij_enc_costs(ffi.from_buffer(pn), pn.itemsize, _refs_ptr(ffi, refs, planes.shape), S, w, h,
                                  lanes, _ptr(ffi, "uint32_t[]", dep), int(decor), pred_mask, mode_mask, row_step,
                                  col_step, _ptr(ffi, "uint32_t[]", rows, True), rows.size,
                                  _ptr(ffi, "int64_t[]", out, True), out.size)
        if code:
            raise ENCODER.error(code, "imij_enc_costs")
        return out
    return _costs_ref(planes, depths, lanes, decor, pred_mask, mode_mask, row_step, col_step, out, refs)


def _refs_ptr(ffi, refs: np.ndarray | None, shape: tuple[int, ...]):
    """The reference planes for the C kernels (NULL without a reference)."""
    if refs is None:
        return ffi.NULL
    if refs.shape != shape:
        raise ValueError(f"reference planes of shape {refs.shape}, expected {shape}")
    return _ptr(ffi, "uint32_t[]", _planes32(refs))


def _mode_costs(ds: list[np.ndarray], depths: list[int], decor: bool, mode_mask: int) -> dict[int, np.ndarray]:
    """Per mode, the summed bit lengths over the last axis of residual arrays ds (one per slot)."""
    def bl(d, n):
        return bit_length(zigzag(d, n)).sum(axis=-1)

    common = 0
    for s, (d, n) in enumerate(zip(ds, depths)):
        if not decor or s == 0 or s >= 3:
            common = common + bl(d, n)
    out = {}
    if not decor:
        if mode_mask & 1:
            out[0] = common
        return out
    n = depths[0]
    for mode in range(4):
        if mode_mask >> mode & 1:
            r, b = decor_forward(ds[0], ds[1], ds[2], mode, n)
            out[mode] = common + bl(r, n) + bl(b, n)
    return out


def _costs_ref(planes, depths, lanes, decor, pred_mask, mode_mask, row_step, col_step, out, refs=None):
    S, h, w = planes.shape
    if not decor:
        mode_mask &= 1
    if refs is None:
        pred_mask &= ~INTER_PREDICTORS
    V = planes.astype(np.int64)
    R = None if refs is None else refs.astype(np.int64)
    first, last = lane_edges(Lanes.of(w, lanes))
    cols = np.arange(0, w, col_step)
    rows = np.arange(0, h, row_step)
    masks = [(1 << n) - 1 for n in depths]
    # row 0: predictor 0 only, W = 0 at a lane's first column
    ds = [((V[s, 0] - _row0_pred(V[s, 0], first)) & masks[s])[cols] for s in range(S)]
    for mode, c in _mode_costs(ds, depths, decor, mode_mask).items():
        out[mode, 0, 0] = c
    if R is not None and pred_mask >> 7 & 1:  # 2.4 / 4: row 0 may use 7 (R) in inter frames
        ds = [((V[s, 0] - R[s, 0]) & masks[s])[cols] for s in range(S)]
        for mode, c in _mode_costs(ds, depths, decor, mode_mask).items():
            out[mode, 0, 7] = c
    rows = rows[rows > 0]
    if rows.size:
        nb = [_neighbours(V[s], rows, first, last) for s in range(S)]
        rnb = [_neighbours(R[s], rows, first, last) for s in range(S)] if R is not None else None
        for p in range(PREDICTORS):
            if not pred_mask >> p & 1:
                continue
            ds = []
            for s in range(S):
                ref = (R[s][rows], rnb[s][0], rnb[s][1]) if rnb is not None else None
                ds.append(((V[s][rows] - _predict(p, nb[s], ref, masks[s])) & masks[s])[:, cols])
            for mode, c in _mode_costs(ds, depths, decor, mode_mask).items():
                out[mode, rows, p] = c
    return out


def _predict(p: int, nb, ref, mask: int) -> np.ndarray:
    """Section 4's predictor p on neighbour arrays (W, N, NW, NE) and, for 7-9, the reference's
    (R, RW, RN) with the same edge rules."""
    if p < 7:
        return predict_rows(p, *nb, mask)
    R, RW, RN = ref
    if p == 7:
        return R
    if p == 8:
        return (nb[0] + R - RW) & mask
    return (nb[1] + R - RN) & mask


def plane_residuals(V: np.ndarray, R: np.ndarray | None, preds, edges: tuple[np.ndarray, np.ndarray],
                    mask: int) -> np.ndarray:
    """Section 4's residuals (V - prediction) mod 2^n of one int64 plane with row predictors
    ``preds`` (7-9 against the int64 reference plane R); edges: lane_edges."""
    first, last = edges
    h, w = V.shape
    pred = np.zeros((h, w), dtype=np.int64)
    pred[0] = R[0] if preds[0] == 7 else _row0_pred(V[0], first)  # type: ignore[index]
    if h > 1:
        rows = np.arange(1, h)
        nb = _neighbours(V, rows, first, last)
        ref = None
        if R is not None:
            RW, RN = _neighbours(R, rows, first, last)[:2]
            ref = (R[rows], RW, RN)
        row_preds = np.asarray(preds[1:h])
        for p in np.unique(row_preds).tolist():
            sel = np.flatnonzero(row_preds == p)
            pred[sel + 1] = _predict(p, nb, ref, mask)[sel]
    return (V - pred) & mask


def choose(cost: np.ndarray, mode_mask: int) -> tuple[int, list[int], int]:
    """The stripe's mode (lowest total of per-row minima, ties: lowest mode) and per-row
    predictors (ties: lowest id) from a (4, h, 7) cost array; returns (mode, preds, total)."""
    best = None
    for mode in range(4):
        if not mode_mask >> mode & 1 or cost[mode, 0, 0] >= UNTRIED:
            continue
        total = int(cost[mode].min(axis=1).sum())
        if best is None or total < best[0]:
            best = (total, mode)
    assert best is not None
    total, mode = best
    preds = cost[mode].argmin(axis=1).astype(np.uint8)  # row 0 has only 0 (and 7 with a reference)
    return mode, preds.tolist(), total


# --- residuals -----------------------------------------------------------------------------------


def residuals(planes: np.ndarray, depths: list[int], lanes: int, preds: list[int], mode: int,
              refs: np.ndarray | None = None, in_place: bool = False) -> np.ndarray:
    """encode.h imij_enc_residuals: (S, h, w) zigzag residuals u in value_dtype(depths) (``refs``
    as in costs); ``in_place``: into ``planes`` itself (contiguous, of that dtype), returned."""
    S, h, w = planes.shape
    dtype = value_dtype(depths)
    if in_place and not (planes.dtype == dtype and planes.flags.c_contiguous):
        raise ValueError("residuals in place need contiguous planes of the value dtype")
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = _narrow(planes)
        u = planes if in_place else np.empty((S, h, w), dtype=dtype)
        pr = np.asarray(preds, dtype=np.uint8)
        rows = np.empty(3 * S * w, dtype=U32)
        code = lib.imij_enc_residuals(ffi.from_buffer(pn), pn.itemsize, _refs_ptr(ffi, refs, planes.shape), S, w, h,
                                      lanes, _ptr(ffi, "uint32_t[]", np.asarray(depths, dtype=U32)),
                                      _ptr(ffi, "uint8_t[]", pr), mode, _ptr(ffi, "uint32_t[]", rows, True), rows.size,
                                      ffi.from_buffer(u, require_writable=True), u.nbytes, u.itemsize)
        if code:
            raise ENCODER.error(code, "imij_enc_residuals")
        return u
    if refs is None and any(p >= 7 for p in preds):
        raise ValueError("imij_enc_residuals: bad arguments")
    V = planes.astype(np.int64)
    R = None if refs is None else refs.astype(np.int64)
    edges = lane_edges(Lanes.of(w, lanes))
    ds = [plane_residuals(V[s], None if R is None else R[s], preds, edges, (1 << depths[s]) - 1) for s in range(S)]
    if mode:
        ds[1], ds[2] = decor_forward(ds[0], ds[1], ds[2], mode, depths[0])
    u = np.stack([zigzag(d, n) for d, n in zip(ds, depths)]).astype(dtype)
    if in_place:
        planes[...] = u
        return planes
    return u


# --- row predictors by model cost ----------------------------------------------------------------


def model_preds(planes: np.ndarray, depths: list[int], lanes: int, mode: int, pred_mask: int,
                bucket_costs: np.ndarray, ctx_maps: np.ndarray, cross: list[bool]) -> list[int]:
    """encode.h imij_enc_model_preds: per-row predictors (0..6) chosen one row after the other by
    the models' costs: ``bucket_costs`` (S, 4, 640) uint32 per context and residual bucket,
    ``ctx_maps`` (S, 16) uint8 (3.3), ``cross`` per slot; depths 1..16."""
    S, h, w = planes.shape
    costs_ = np.ascontiguousarray(bucket_costs, dtype=U32)
    maps = np.ascontiguousarray(ctx_maps, dtype=np.uint8)
    if costs_.shape != (S, 4, BUCKETS) or maps.shape != (S, CLASSES):
        raise ValueError("model_preds: bucket_costs (S, 4, 640) and ctx_maps (S, 16)")
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = _narrow(planes)
        rows = _scratch("model_preds", (5 * S + 2) * w, U32)
        preds = np.zeros(h, dtype=np.uint8)
        code = lib.imij_enc_model_preds(ffi.from_buffer(pn), pn.itemsize, S, w, h, lanes,
                                        _ptr(ffi, "uint32_t[]", np.asarray(depths, dtype=U32)), mode, pred_mask,
                                        _ptr(ffi, "uint32_t[]", costs_), costs_.size, _ptr(ffi, "uint8_t[]", maps),
                                        _ptr(ffi, "uint8_t[]", np.asarray(cross, dtype=np.uint8)),
                                        _ptr(ffi, "uint32_t[]", rows, True), rows.size,
                                        _ptr(ffi, "uint8_t[]", preds, True), preds.size)
        if code:
            raise ENCODER.error(code, "imij_enc_model_preds")
        return preds.tolist()
    return _model_preds_ref(planes, depths, lanes, mode, pred_mask, costs_, maps, cross)


def _model_preds_ref(planes, depths, lanes, mode, pred_mask, bucket_costs, ctx_maps, cross) -> list[int]:
    S, h, w = planes.shape
    bad_mode = mode > 3 or (mode and (S < 3 or len(set(depths[:3])) > 1))
    if (not 0 < pred_mask < 0x80 or not all(1 <= n <= 16 for n in depths) or int(ctx_maps.max()) > 3 or bad_mode
            or not 1 <= lanes <= 16 or not 1 <= S <= 8):
        raise ValueError("imij_enc_model_preds: bad arguments")
    tried = [p for p in range(7) if pred_mask >> p & 1]
    U = {p: residuals(planes, depths, lanes, [0] + [p] * (h - 1), mode).astype(np.int64) for p in tried}
    B = {p: bucket_of(u) for p, u in U.items()}
    first, _ = lane_edges(Lanes.of(w, lanes))
    preds, up = [0], U[tried[0]][:, 0]  # 2.4: row 0 is W under every predictor
    for r in range(1, h):
        best = None
        for p in tried:
            row = U[p][:, r]
            total = 0
            for s in range(S):
                tw = np.zeros(w, dtype=np.int64)
                tw[1:] = row[s, :-1]
                sums = np.where(first, 2 * up[s], tw + up[s]) + (row[0] if cross[s] else 0)
                ctx = ctx_maps[s][np.minimum(bit_length(sums), 15)]
                total += int(bucket_costs[s, ctx, B[p][s, r]].astype(np.int64).sum())
            if best is None or total < best[0]:
                best = (total, p)
        preds.append(best[1])  # type: ignore[index]
        up = U[best[1]][:, r]  # type: ignore[index]
    return preds


# --- near-lossless closed loop -------------------------------------------------------------------


def near(planes: np.ndarray, depths: list[int], deltas: list[int], lanes: int, decor: bool, pred_mask: int,
         mode_mask: int, preds: list[int] | None = None, mode: int | None = None):
    """encode.h imij_enc_near: (preds, mode, u, recon). With preds and mode given, only codes."""
    S, h, w = planes.shape
    fixed = preds is not None
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        p32 = _planes32(planes)
        u = np.empty((S, h, w), dtype=U32)
        recon = np.empty((S, h, w), dtype=U32)
        scratch = np.empty(3 * S * w + (h + 3) // 4 + 1, dtype=U32)
        pr = np.asarray(preds if fixed else [0] * h, dtype=np.uint8)
        md = ffi.new("uint32_t *", mode if fixed else 0)
        code = lib.imij_enc_near(_ptr(ffi, "uint32_t[]", p32), S, w, h, lanes,
                                 _ptr(ffi, "uint32_t[]", np.asarray(depths, dtype=U32)),
                                 _ptr(ffi, "uint32_t[]", np.asarray(deltas, dtype=U32)), int(decor), pred_mask,
                                 mode_mask, int(fixed), _ptr(ffi, "uint8_t[]", pr, True), pr.size, md,
                                 _ptr(ffi, "uint32_t[]", u, True), u.size, _ptr(ffi, "uint32_t[]", recon, True),
                                 recon.size, _ptr(ffi, "uint32_t[]", scratch, True), scratch.size)
        if code:
            raise ENCODER.error(code, "imij_enc_near")
        return pr.tolist(), int(md[0]), u, recon
    return _near_ref(planes, depths, deltas, lanes, decor, pred_mask, mode_mask, preds, mode)


def near_row(src, recon, r, p, depths, deltas, ln: Lanes):
    """2.6 closed loop, one row r of every slot with predictor p (of src, lists of rows per slot,
    above the reconstructed rows recon): (reconstructed rows, residuals mod 2^n) as lists."""
    recs, ds = [], []
    for s, n in enumerate(depths):
        mask = (1 << n) - 1
        delta = deltas[s]
        step = 2 * delta + 1
        srow = src[s][r]
        prev = recon[s][r - 1] if r else None
        row = [0] * ln.gw
        d = [0] * ln.gw
        for c0, width in zip(ln.starts, ln.widths):
            for x in range(width):
                c = c0 + x
                if prev is None:
                    pr = row[c - 1] if x else 0
                else:
                    N = prev[c]
                    W, NW = (row[c - 1], prev[c - 1]) if x else (N, N)
                    NE = prev[c + 1] if x + 1 < width else N
                    pr = predict(p, W, N, NW, NE, 0, 0, 0, mask)
                if delta:
                    q = quantize(srow[c] - pr, delta)
                    row[c] = min(max(pr + q * step, 0), mask)
                    d[c] = q & mask
                else:
                    row[c] = srow[c]
                    d[c] = (srow[c] - pr) & mask
        recs.append(row)
        ds.append(d)
    return recs, ds


def _zz1(d: int, n: int) -> int:
    if n == 0:
        return 0
    half = 1 << (n - 1)
    s = ((d & ((1 << n) - 1)) ^ half) - half
    return 2 * s if s >= 0 else -2 * s - 1


def _decor1(mode: int, g: int, r: int, b: int, n: int) -> tuple[int, int]:
    mask = (1 << n) - 1
    if mode == 0:
        return r, b
    ro = (r - g) & mask
    if mode == 1:
        return ro, (b - g) & mask
    if mode == 2:
        return ro, (b - r) & mask

    def sx(v):
        half = 1 << (n - 1)
        return (v ^ half) - half
    return ro, (b - ((sx(r) + sx(g)) >> 1)) & mask


def _coded_rows(ds, depths, mode):
    """The rows' zigzag residuals after the mode's decorrelation."""
    out = [list(d) for d in ds]
    if mode:
        for c in range(len(ds[0])):
            out[1][c], out[2][c] = _decor1(mode, ds[0][c], ds[1][c], ds[2][c], depths[0])
    return [[_zz1(v, n) for v in row] for row, n in zip(out, depths)]


def _near_ref(planes, depths, deltas, lanes, decor, pred_mask, mode_mask, preds, mode):
    S, h, w = planes.shape
    src = [planes[s].astype(np.int64).tolist() for s in range(S)]
    ln = Lanes.of(w, lanes)
    if not decor:
        mode_mask &= 1
    if preds is None:
        best = None
        for md in range(4):
            if not mode_mask >> md & 1:
                continue
            recon = [[None] * h for _ in range(S)]
            choice, total = [], 0
            for r in range(h):
                found = None
                for p in range(PREDICTORS):
                    if (p != 0) if r == 0 else not pred_mask >> p & 1:
                        continue
                    recs, ds = near_row(src, recon, r, p, depths, deltas, ln)
                    cost = sum(int(v).bit_length() for row in _coded_rows(ds, depths, md) for v in row)
                    if found is None or cost < found[0]:
                        found = (cost, p, recs)
                assert found is not None
                total += found[0]
                choice.append(found[1])
                for s in range(S):
                    recon[s][r] = found[2][s]
            if best is None or total < best[0]:
                best = (total, md, choice)
        assert best is not None
        _, mode, preds = best
    recon = [[None] * h for _ in range(S)]
    u = np.zeros((S, h, w), dtype=U32)
    for r in range(h):
        recs, ds = near_row(src, recon, r, preds[r], depths, deltas, ln)
        for s in range(S):
            recon[s][r] = recs[s]
        u[:, r, :] = np.array(_coded_rows(ds, depths, mode), dtype=U32)
    return list(preds), mode, u, np.array(recon, dtype=U32).reshape(S, h, w)


# --- statistics ----------------------------------------------------------------------------------


def stats(u: np.ndarray, u0: np.ndarray | None, lanes: int, ctx_shift: int, run_min: int, buckets: int = BUCKETS):
    """encode.h imij_enc_stats on one slot plane: (vh (16, buckets), zr (16,), rh (16, buckets))
    uint32 without the cross context, and with u0 given a second triple with it (else None)."""
    plain = new_counts(buckets=buckets)
    cross = new_counts(buckets=buckets) if u0 is not None else None
    add_stats(plain, cross, u, u0, lanes, ctx_shift, run_min)
    return plain, cross


Counts = tuple[np.ndarray, np.ndarray, np.ndarray]  # vh (16, buckets), zr (16,), rh (16, buckets)


def new_counts(dtype=U32, buckets: int = BUCKETS) -> Counts:
    """Zeroed statistics arrays (vh, zr, rh) in ``dtype`` (uint32: the kernel adds to them in
    place), rows of ``buckets`` (stat_buckets': the first that a slot's values and runs reach)."""
    return (np.zeros((CLASSES, buckets), dtype=dtype), np.zeros(CLASSES, dtype=dtype),
            np.zeros((CLASSES, buckets), dtype=dtype))


def stat_buckets(depth: int, run_positions: int) -> int:
    """Buckets a slot's statistics reach: those of values below 2^depth (depth <= 32) and of runs
    of at most min(2^15, run_positions) positions (3.2), so that its arrays hold no column that
    can only stay zero (16 x 640 uint32 is 40 KiB; a small image's counts fill a fraction)."""
    top = int(bucket_of(np.array((1 << min(depth, 32)) - 1)))
    run = int(bucket_of(np.array(min(RUN_CAP, run_positions) - 1))) if run_positions > 1 else 0
    return max(top, run) + 1


def add_stats(plain: Counts, cross: Counts | None, u: np.ndarray, u0: np.ndarray | None, lanes: int, ctx_shift: int,
              run_min: int) -> None:
    """encode.h imij_enc_stats: add one slot plane's counts to ``plain`` and, with u0 given, the
    cross context's to ``cross``; the kernel adds in place to uint32 arrays. ValueError when a
    value or a run falls past the arrays' buckets."""
    h, w = u.shape
    buckets = plain[0].shape[1]
    if cross is None:
        u0 = None
    if _c() and all(a.dtype == U32 and a.flags.c_contiguous for a in plain + (cross or ())):
        ffi, lib = _backend.ffi, _backend.lib
        uu, u00 = _pair(u, u0)
        rows = np.empty(3 * w, dtype=U32)
        ptrs = [_ptr(ffi, "uint32_t[]", a, True) for a in plain + (cross if cross is not None else plain)]
        p0 = ffi.from_buffer(u00) if u00 is not None else ffi.NULL
        code = lib.imij_enc_stats(ffi.from_buffer(uu), p0, uu.itemsize, w, h, lanes, ctx_shift, run_min, buckets,
                                  _ptr(ffi, "uint32_t[]", rows, True), rows.size, *ptrs)
        if code:
            raise ENCODER.error(code, "imij_enc_stats")
        return
    if _c():  # wider accumulators: count in uint32, then add
        tmp = new_counts(buckets=buckets)
        xtmp = new_counts(buckets=buckets) if cross is not None else None
        add_stats(tmp, xtmp, u, u0, lanes, ctx_shift, run_min)
    else:
        tmp = _stats_ref(u, None, lanes, ctx_shift, run_min, buckets)
        xtmp = _stats_ref(u, u0, lanes, ctx_shift, run_min, buckets) if u0 is not None else None
    for acc, add in ((plain, tmp), (cross, xtmp)):
        if acc is not None and add is not None:
            for a, b in zip(acc, add):
                a += b.astype(a.dtype)


def _classes_ref(u: np.ndarray, u0: np.ndarray | None, lanes: int, shift: int) -> np.ndarray:
    """3.1's class of every position (vectorized)."""
    h, w = u.shape
    t = np.minimum(u.astype(np.int64) >> shift, 1 << 16)
    first, _ = lane_edges(Lanes.of(w, lanes))
    tw = np.zeros((h, w), dtype=np.int64)
    tw[:, 1:] = t[:, :-1]
    tn = np.zeros((h, w), dtype=np.int64)
    tn[1:] = t[:-1]
    hasw = np.broadcast_to(~first, (h, w))
    hasn = np.zeros((h, w), dtype=bool)
    hasn[1:] = True
    s = np.where(hasw & hasn, tw + tn, np.where(hasw, 2 * tw, np.where(hasn, 2 * tn, 0)))
    if u0 is not None:
        s = s + np.minimum(u0.astype(np.int64) >> shift, 1 << 16)
    return np.minimum(bit_length(s), 15)


def _stats_ref(u, u0, lanes, shift, run_min, buckets):
    vh, zr, rh = _stats_full_ref(u, u0, lanes, shift, run_min)
    h, w = u.shape
    longest = min(RUN_CAP, -(-w // lanes) * h)
    top = int(bucket_of(np.array(u.max() if u.size else 0)))
    if top >= buckets or (run_min and int(bucket_of(np.array(longest - 1))) >= buckets):
        raise ValueError(f"statistics of {buckets} buckets cannot hold these residuals")
    return vh[:, :buckets].copy(), zr, rh[:, :buckets].copy()


def _stats_full_ref(u, u0, lanes, shift, run_min):
    h, w = u.shape
    cls = _classes_ref(u, u0, lanes, shift)
    vh = np.zeros((CLASSES, BUCKETS), dtype=np.int64)
    rh = np.zeros((CLASSES, BUCKETS), dtype=np.int64)
    zr = np.zeros(CLASSES, dtype=np.int64)
    if not run_min:
        np.add.at(vh, (cls.ravel(), bucket_of(u.ravel())), 1)
        return vh, zr, rh
    ln = Lanes.of(w, lanes)
    uu = u.tolist()
    cc = cls.tolist()
    for c0, width in zip(ln.starts, ln.widths):
        seq = [(r, c0 + x) for r in range(h) for x in range(width)]
        vals = [uu[r][c] for r, c in seq]
        ahead = [0] * (len(seq) + 1)
        for i in range(len(seq) - 1, -1, -1):
            ahead[i] = ahead[i + 1] + 1 if vals[i] == 0 else 0
        skip = 0
        for i, (r, c) in enumerate(seq):
            k = cc[r][c]
            if skip:
                skip -= 1
                zr[k] += 1
                continue
            zeros = min(ahead[i], RUN_CAP)
            if zeros >= run_min:
                rh[k, int(bucket_of(np.array(zeros - 1)))] += 1
                zr[k] += 1
                skip = zeros - 1
                continue
            vh[k, int(bucket_of(np.array(vals[i])))] += 1
    return vh, zr, rh


# --- the model chooser's estimate (3.3, 5) -------------------------------------------------------

COST_FIX = 16  # estimates are bits * 2^16, exact integers: every backend chooses the same models
LOG2_FIX = np.array([0] + [round(math.log2(f) * (1 << COST_FIX)) for f in range(1, M + 1)], dtype=np.int64)


def row_costs(h: np.ndarray) -> np.ndarray:
    """encode.h imij_enc_row_costs: the estimated bits * 2^16 of coding each row of symbol counts
    h (rows, width <= 256) with a table normalized to M (3.3), plus a rough table size."""
    h = np.ascontiguousarray(h, dtype=np.int64)
    rows, width = h.shape
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        out = np.empty(rows, dtype=np.int64)
        code = lib.imij_enc_row_costs(_ptr(ffi, "int64_t[]", h), rows, width, _ptr(ffi, "int64_t[]", LOG2_FIX),
                                      _ptr(ffi, "int64_t[]", out, True))
        if code:
            raise ENCODER.error(code, "imij_enc_row_costs")
        return out
    if rows == 0:
        return np.zeros(0, dtype=np.int64)
    tot = h.sum(axis=1)
    f = np.where(h > 0, np.maximum(1, (h * M) // np.maximum(tot, 1)[:, None]), 0)
    at = np.arange(rows)
    top = np.argmax(f, axis=1)  # the first of the largest
    fmax, ctop = f[at, top], h[at, top]
    excess = np.maximum(f.sum(axis=1) - M, 0)
    bits = (h * (LOG2_FIX[M] - LOG2_FIX[f])).sum(axis=1)
    bits += ctop * (LOG2_FIX[fmax] - LOG2_FIX[np.maximum(1, fmax - excess)])
    nz = h > 0
    last1 = width - np.argmax(nz[:, ::-1], axis=1)
    return bits + np.where(tot > 0, (11 + 6 * nz.sum(axis=1) + 2 * last1) << COST_FIX, 0)


def counts32(a: np.ndarray) -> np.ndarray:
    """Statistics as the chooser's kernels read them: contiguous uint32 (no copy when they are);
    ValueError for counts outside 0 .. 2^32 - 1."""
    if a.dtype != U32:
        if a.size and (a.min() < 0 or a.max() >= 1 << 32):
            raise ValueError("statistics counts outside 0 .. 2^32 - 1")
        a = a.astype(U32)
    return np.ascontiguousarray(a)


def _tokens_for(tokens: np.ndarray, vh: np.ndarray) -> np.ndarray:
    """A scheme's (4, 640) per-bucket tokens cut to the statistics' buckets, contiguous."""
    return np.ascontiguousarray(tokens[:, : vh.shape[1]])


def token_cost(vh: np.ndarray, rh: np.ndarray, zr: np.ndarray, tokens: np.ndarray, runs: bool) -> int:
    """encode.h imij_enc_token_cost: a slot's statistics (counts32 vh, rh (16, buckets), zr (16,))
    under one scheme's per-bucket tokens (4, 640: value token, its extra bits, run token, its
    extra bits; the first buckets read): the 16 classes' row_costs plus the extra bits, * 2^16."""
    vh, rh, zr = counts32(vh), counts32(rh), counts32(zr)
    tokens = _tokens_for(tokens, vh)
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        cost = lib.imij_enc_token_cost(_ptr(ffi, "uint32_t[]", vh), _ptr(ffi, "uint32_t[]", rh),
                                       _ptr(ffi, "uint32_t[]", zr), _ptr(ffi, "int64_t[]", tokens), vh.shape[1],
                                       int(runs), _ptr(ffi, "int64_t[]", LOG2_FIX))
        if cost < 0:
            raise ENCODER.error(cost, "imij_enc_token_cost")
        return int(cost)
    th = token_counts(vh, rh, zr, tokens, runs)
    extra = int((tokens[1] * vh.sum(axis=0, dtype=np.int64)).sum())
    if runs:
        extra += int((tokens[3] * rh.sum(axis=0, dtype=np.int64)).sum())
    return int(row_costs(th).sum()) + (extra << COST_FIX)


def partition(th: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray], int] | None:
    """encode.h imij_enc_partition: modeling.partition_classes' split of the 16 classes of token
    counts th (16, 256) into at most 4 contexts (ctx_map, per-context counts, estimate); None
    without the C backend (the caller's reference then)."""
    if not _c():
        return None
    ffi, lib = _backend.ffi, _backend.lib
    th = np.ascontiguousarray(th, dtype=np.int64)
    ctx_map, hists = np.empty(CLASSES, np.uint8), np.empty((4, 256), np.int64)
    nctx, width = ffi.new("uint32_t *"), ffi.new("uint32_t *")
    est = lib.imij_enc_partition(_ptr(ffi, "int64_t[]", th), _ptr(ffi, "int64_t[]", LOG2_FIX),
                                 _ptr(ffi, "uint8_t[]", ctx_map, True), _ptr(ffi, "int64_t[]", hists, True), nctx, width)
    if est < 0:
        raise ENCODER.error(est, "imij_enc_partition")
    return tuple(ctx_map.tolist()), list(hists[: nctx[0], : width[0]]), int(est)


def best_precisions(H: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """encode.h imij_enc_best_tables: per row of counts H (ctxs, width <= 256; below 2^32, each
    row with a nonzero count) the precision lo ..= hi with the fewest table plus data bits, the
    last used symbol + 1, every symbol's (e, nb, mant) at that precision and the table the
    decoder normalizes from their weights (3.3; zero past the last used symbol)."""
    H = np.ascontiguousarray(H, dtype=np.int64)
    ctxs, width = H.shape
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        prec, last1 = np.empty(ctxs, dtype=U32), np.empty(ctxs, dtype=U32)
        codes, freq = np.zeros((ctxs, width, 3), dtype=U32), np.zeros((ctxs, width), dtype=U32)
        code = lib.imij_enc_best_tables(_ptr(ffi, "int64_t[]", H), ctxs, width, lo, hi, _ptr(ffi, "int64_t[]", LOG2_FIX),
                                        _ptr(ffi, "uint32_t[]", prec, True), _ptr(ffi, "uint32_t[]", last1, True),
                                        _ptr(ffi, "uint32_t[]", codes, True), _ptr(ffi, "uint32_t[]", freq, True))
        if code:
            raise ENCODER.error(code, "imij_enc_best_tables")
        return prec, last1, codes, freq
    nz = H > 0
    last1 = (nz * np.arange(1, width + 1)).max(axis=1)  # per row: last used symbol + 1
    inside = np.arange(width)[None, :] < last1[:, None]
    e = np.frexp(H.astype(np.float64))[1].astype(np.int64)  # bit_length
    dz = np.diff(np.concatenate([np.zeros((ctxs, 1), dtype=np.int64), e], axis=1), axis=1)
    z = np.where(dz >= 0, 2 * dz, -2 * dz - 1) + 1
    gamma = ((2 * np.frexp(z.astype(np.float64))[1] - 1) * inside).sum(axis=1)
    P = np.arange(lo, hi + 1)[None, :, None]  # (1, precs, 1)
    E = e[:, None, :]
    nb = np.where(E > 1, np.minimum(E - 1, P - 1), 0)  # (ctx, precs, symbols)
    sh = np.maximum(E - 1 - nb, 0)
    Hx = H[:, None, :]
    mant = np.where(E > 1, (Hx >> sh) & ((1 << nb) - 1), 0)
    w = np.where(E == 0, 0, np.where(E == 1, 1, ((1 << nb) | mant) << sh))
    tbits = 11 + gamma[:, None] + (nb * inside[:, None, :]).sum(axis=2)
    tot = w.sum(axis=2, keepdims=True)
    f = np.where(w > 0, np.maximum(1, (w * M) // np.maximum(tot, 1)), 1)
    top = np.argmax(w, axis=2)
    excess = np.maximum(np.where(w > 0, f, 0).sum(axis=2) - M, 0)
    fi = np.take_along_axis(f, top[:, :, None], axis=2)[:, :, 0]
    np.put_along_axis(f, top[:, :, None], np.maximum(1, fi - excess)[:, :, None], axis=2)
    data = (Hx * (LOG2_FIX[M] - LOG2_FIX[f])).sum(axis=2)  # bits * 2^16, as row_costs
    best = np.argmin((tbits << COST_FIX) + data, axis=1)
    at = np.arange(ctxs)
    codes = np.stack([e, nb[at, best], mant[at, best]], axis=2) * inside[:, :, None]
    freq = np.zeros((ctxs, width), dtype=np.int64)
    for c in range(ctxs):
        freq[c, : last1[c]] = normalize(w[c, best[c], : last1[c]].tolist())
    return best + lo, last1, codes, freq


def token_counts(vh: np.ndarray, rh: np.ndarray, zr: np.ndarray, tokens: np.ndarray, runs: bool) -> np.ndarray:
    """(16, 256) token counts per class of a slot's statistics under per-bucket tokens (3.2), a
    class at a time (float sums of integers below 2^53: exact; no whole-array float copies);
    encode.h imij_enc_token_counts on the C backend."""
    th = np.zeros((CLASSES, 256), dtype=np.int64)
    vh, rh, zr = counts32(vh), counts32(rh), counts32(zr)
    tokens = _tokens_for(tokens, vh)
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        code = lib.imij_enc_token_counts(_ptr(ffi, "uint32_t[]", vh), _ptr(ffi, "uint32_t[]", rh),
                                         _ptr(ffi, "uint32_t[]", zr), _ptr(ffi, "int64_t[]", tokens), vh.shape[1],
                                         int(runs), _ptr(ffi, "int64_t[]", th, True))
        if code:
            raise ENCODER.error(code, "imij_enc_token_counts")
        return th
    for c in range(CLASSES):
        row = np.bincount(tokens[0], weights=vh[c], minlength=256)
        if runs:
            row += np.bincount(tokens[2], weights=rh[c], minlength=256)
        th[c] = row
    if not runs:
        th[:, 0] += zr.astype(np.int64)
    return th


# --- channel maps ------------------------------------------------------------------------------

KINDS = {"u": 0, "i": 1, "f": 2}


def word_summary(words: np.ndarray, kind: str, D: int) -> list[tuple[int, int, int, int]]:
    """encode.h imij_enc_word_summary: per channel (the last axis) of contiguous uint8 / 16 / 32
    words of D bits, the largest and smallest ordered value (2.1), the or of the ordered values
    and the or of the raw words; one pass over interleaved channels."""
    C = words.shape[-1]
    flat = words.reshape(-1, C)
    if _c() and flat.dtype in NARROW and flat.flags.c_contiguous and flat.shape[0] and C <= 16:
        ffi, lib = _backend.ffi, _backend.lib
        out = np.empty(4 * C, dtype=np.uint64)
        if lib.imij_enc_word_summary(ffi.from_buffer(flat), flat.itemsize, flat.shape[0], C, KINDS[kind], D,
                                     _ptr(ffi, "uint64_t[]", out, True)) == 0:
            return [tuple(q) for q in out.reshape(C, 4).tolist()]
    res = []
    for c in range(C):
        w = flat[:, c]
        o = native_order(w, kind, D)
        res.append((int(o.max()), int(o.min()), int(np.bitwise_or.reduce(o)), int(np.bitwise_or.reduce(w))))
    return res


# --- palettes ------------------------------------------------------------------------------------


def palette(planes: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray] | None:
    """2.5 / 5: at most 256 distinct slot tuples: the entries ordered by the sum of their slot
    values (then the tuple) and the (h, w) uint8 index plane; None when there are more."""
    S, h, w = planes.shape
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = _narrow(planes)
        entries = np.empty(256 * S, dtype=U32)
        index = np.empty(h * w, dtype=np.uint8)
        n = lib.imij_enc_palette(ffi.from_buffer(pn), pn.itemsize, S, index.size, _ptr(ffi, "uint32_t[]", entries, True),
                                 entries.size, _ptr(ffi, "uint8_t[]", index, True))
        if n == ENCODER.code("E_MANY"):
            return None
        if n < 0:
            raise ENCODER.error(n, "imij_enc_palette")
        tuples = entries[: n * S].reshape(n, S).astype(np.int64)
    else:
        flat = planes.reshape(S, -1).T.astype(np.int64)
        tuples, inverse = np.unique(flat, axis=0, return_inverse=True)
        if len(tuples) > 256:
            return None
        index = inverse.reshape(-1).astype(np.uint8)
        n = len(tuples)
    tuples = np.asarray(tuples, dtype=np.int64)
    # by sum, then the tuple (lexsort's last key is the primary one; the tuples are distinct)
    order = np.lexsort([tuples[:, s] for s in range(S - 1, -1, -1)] + [tuples.sum(axis=1)])
    rank = np.empty(n, dtype=np.uint8)
    rank[order] = np.arange(n, dtype=np.uint8)
    return [tuple(t) for t in tuples[order].tolist()], lookup8(rank, index).reshape(h, w)


def lookup8(lut: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """``lut[plane]`` for a uint8 plane and a table of at most 256 uint8 entries covering its
    values (encode.h imij_enc_lookup8: numpy's indexing widens the plane to intp first, eight
    bytes a pixel of temporary)."""
    if not _c():
        return lut[plane]
    table = np.zeros(256, dtype=np.uint8)
    table[: len(lut)] = lut
    src = np.ascontiguousarray(plane, dtype=np.uint8)
    out = np.empty(src.shape, dtype=np.uint8)
    _backend.lib.imij_enc_lookup8(_backend.ffi.from_buffer(table), _backend.ffi.from_buffer(src), src.size,
                                  _backend.ffi.from_buffer(out, require_writable=True))
    return out


# --- streams -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncModel:
    """One model as the stream writer codes with it (encode.h imij_enc_model)."""

    depth: int
    k: int
    m: int
    cross: bool
    ctx_shift: int
    run_min: int  # 0: no run tokens
    ctx_map: tuple[int, ...]
    freqs: tuple[tuple[int, ...], ...]  # per context, normalized to M (3.3)
    cums: tuple[tuple[int, ...], ...]

    def cdata(self):
        ffi = _backend.ffi
        s = ffi.new("imij_enc_model *")
        s.depth, s.k, s.m, s.cross, s.ctx_shift, s.run_min = self.depth, self.k, self.m, int(self.cross), self.ctx_shift, self.run_min
        s.ctx_map = list(self.ctx_map)
        for c, (f, cu) in enumerate(zip(self.freqs, self.cums)):
            s.freq[c][0 : len(f)] = list(f)
            s.cum[c][0 : len(cu)] = list(cu)
        return s


def stream(u: np.ndarray, u0: np.ndarray | None, lanes: int, model: EncModel, cmodel=None) -> bytes:
    """encode.h imij_enc_stream: one slot's rANS stream (3, 3.1) for zigzag residuals u (h, w)."""
    h, w = u.shape
    if _c():
        ffi, lib = _backend.ffi, _backend.lib
        uu, u00 = _pair(u, u0 if model.cross else None)
        scratch = _scratch("ops", lib.imij_enc_stream_scratch(w, h), U32)
        cm = cmodel if cmodel is not None else model.cdata()
        p0 = ffi.from_buffer(u00) if u00 is not None else ffi.NULL
        for cap in _stream_caps(h * w, uu.itemsize):
            out = _scratch("out", cap, np.uint8)
            n = lib.imij_enc_stream(ffi.from_buffer(uu), p0, uu.itemsize, w, h, lanes, cm,
                                    _ptr(ffi, "uint32_t[]", scratch, True), scratch.size,
                                    _ptr(ffi, "uint8_t[]", out, True), cap)
            if n != ENCODER.code("E_SPACE"):
                break
        if n < 0:
            raise ENCODER.error(n, "imij_enc_stream")
        return out[:n].tobytes()
    ln = Lanes.of(w, lanes)
    scheme = Scheme(model.depth, model.k, model.m)
    steps = tokenize(u.astype(np.int64).tolist(), scheme, model.cross, model.ctx_shift, model.ctx_map, ln,
                     u0.astype(np.int64).tolist() if (model.cross and u0 is not None) else None,
                     model.run_min or None)
    return encode_stream(steps, list(model.freqs), list(model.cums), ln.active)


def _stream_caps(positions: int, esize: int) -> tuple[int, int]:
    """Output buffers for a stream: the raw plane's size and an eighth (enough unless the data
    does not compress), then encode.h's bound for any input."""
    return 4096 + esize * positions + positions // 8, 128 + 6 * positions


__all__ = ["BUCKETS", "CLASSES", "EncModel", "M", "add_stats", "best_precisions", "bucket_of", "choose", "counts32", "costs", "lookup8", "near",
           "new_counts", "palette", "residuals", "row_costs", "stat_buckets", "stats", "stream", "token_cost", "token_counts",
           "value_dtype", "word_summary"]
