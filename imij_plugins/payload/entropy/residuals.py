"""Section 4's residual rules as the encoders apply them (predictions with lane-local edges,
decorrelation, zigzag), a unit's residuals (C: imij_enc_residuals) and the 2.6 near-lossless
closed loop (C: imij_enc_near). Planes are (S, h, w) arrays of coded values (2.1's s), one per
slot of a unit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.maps import LSB, expand, native_order, to_word
from imij_plugins.payload.entropy.near import quantize
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.scratch import U32, narrow, planes32, ptr, refs_ptr, use_c, value_dtype
from imij_plugins.payload.entropy.stripe import predict
from imij_plugins.payload.kernel_codes import KERNEL_CODES

if TYPE_CHECKING:
    from imij_plugins.payload.entropy.encoder import EncodePlan

PREDICTORS = 10  # 0..9 (section 4; 7-9 only in inter frames, against a reference)


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


def lane_edges(ln: Lanes) -> tuple[np.ndarray, np.ndarray]:
    """Per column: is it a lane's first column, its last (2.3)."""
    first = np.zeros(ln.gw, dtype=bool)
    last = np.zeros(ln.gw, dtype=bool)
    for s, width in zip(ln.starts, ln.widths):
        first[s] = True
        last[s + width - 1] = True
    return first, last


def neighbours(V: np.ndarray, rows: np.ndarray, first: np.ndarray, last: np.ndarray):
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


def row0_prediction(V0: np.ndarray, first: np.ndarray) -> np.ndarray:
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


def prediction(p: int, nb, ref, mask: int) -> np.ndarray:
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
    pred[0] = R[0] if preds[0] == 7 else row0_prediction(V[0], first)  # type: ignore[index]
    if h > 1:
        rows = np.arange(1, h)
        nb = neighbours(V, rows, first, last)
        ref = None
        if R is not None:
            RW, RN = neighbours(R, rows, first, last)[:2]
            ref = (R[rows], RW, RN)
        row_preds = np.asarray(preds[1:h])
        for p in np.unique(row_preds).tolist():
            sel = np.flatnonzero(row_preds == p)
            pred[sel + 1] = prediction(p, nb, ref, mask)[sel]
    return (V - pred) & mask


def residuals(planes: np.ndarray, depths: list[int], lanes: int, preds: list[int], mode: int,
              refs: np.ndarray | None = None, in_place: bool = False) -> np.ndarray:
    """imij_kernels.h imij_enc_residuals: (S, h, w) zigzag residuals u in value_dtype(depths) (``refs``
    as in costs); ``in_place``: into ``planes`` itself (contiguous, of that dtype), returned."""
    S, h, w = planes.shape
    dtype = value_dtype(depths)
    if in_place and not (planes.dtype == dtype and planes.flags.c_contiguous):
        raise ValueError("residuals in place need contiguous planes of the value dtype")
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = narrow(planes)
        u = planes if in_place else np.empty((S, h, w), dtype=dtype)
        pr = np.asarray(preds, dtype=np.uint8)
        rows = np.empty(3 * S * w, dtype=U32)
        code = lib.imij_enc_residuals(ffi.from_buffer(pn), pn.itemsize, refs_ptr(ffi, refs, planes.shape), S, w, h,
                                      lanes, ptr(ffi, "uint32_t[]", np.asarray(depths, dtype=U32)),
                                      ptr(ffi, "uint8_t[]", pr), mode, ptr(ffi, "uint32_t[]", rows, True), rows.size,
                                      ffi.from_buffer(u, require_writable=True), u.nbytes, u.itemsize)
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_residuals", refused=ValueError)
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


def near(planes: np.ndarray, depths: list[int], deltas: list[int], lanes: int, decor: bool, pred_mask: int,
         mode_mask: int, preds: list[int] | None = None, mode: int | None = None):
    """imij_kernels.h imij_enc_near: (preds, mode, u, recon). With preds and mode given, only codes."""
    S, h, w = planes.shape
    fixed = preds is not None
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        p32 = planes32(planes)
        u = np.empty((S, h, w), dtype=U32)
        recon = np.empty((S, h, w), dtype=U32)
        scratch = np.empty(3 * S * w + (h + 3) // 4 + 1, dtype=U32)
        pr = np.asarray(preds if fixed else [0] * h, dtype=np.uint8)
        md = ffi.new("uint32_t *", mode if fixed else 0)
        code = lib.imij_enc_near(ptr(ffi, "uint32_t[]", p32), S, w, h, lanes,
                                 ptr(ffi, "uint32_t[]", np.asarray(depths, dtype=U32)),
                                 ptr(ffi, "uint32_t[]", np.asarray(deltas, dtype=U32)), int(decor), pred_mask,
                                 mode_mask, int(fixed), ptr(ffi, "uint8_t[]", pr, True), pr.size, md,
                                 ptr(ffi, "uint32_t[]", u, True), u.size, ptr(ffi, "uint32_t[]", recon, True),
                                 recon.size, ptr(ffi, "uint32_t[]", scratch, True), scratch.size)
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_near", refused=ValueError)
        return pr.tolist(), int(md[0]), u, recon
    return _near_ref(planes, depths, deltas, lanes, decor, pred_mask, mode_mask, preds, mode)


def closed_loop(plan: EncodePlan, planes: np.ndarray, preds: list[int] | None = None, mode: int | None = None,
                index: int | None = None) -> tuple[list[int], int, np.ndarray, np.ndarray]:
    """2.6: ``near`` of a unit's coded values under ``plan`` (4: decorrelation modes searched only
    where allowed; predictors and mode searched unless given): (preds, mode, u, recon); the
    reconstruction of unit ``index`` also goes into the plan's output samples (put_unit)."""
    out = near(planes, plan.depths, plan.deltas, plan.lanes, plan.decor, plan.eff.preds, 0xF if plan.decor else 1,
               preds, mode)
    if index is not None:
        put_unit(plan, index, out[3])
    return out


def put_unit(plan: EncodePlan, index: int, recon: np.ndarray | None) -> None:
    """Unit ``index`` of the plan's output samples (``plan.recon``, when asked for) as a decoder
    outputs it: each bounded slot's reconstructed coded values (S, h, w) through its channel map
    back to words (4 step 4), or with ``recon`` None (a palette stripe) the source's words."""
    if plan.recon is None:
        return
    x, y, w, h = plan.geo.unit_rect(index)
    out = plan.recon.view(plan.channels[0].word.dtype)  # the samples' words
    for s, slot in enumerate(plan.slots):
        cc = slot.coded  # samples of at most 32 bits: coded channel = container channel
        if not plan.deltas[s]:
            continue
        if recon is None:
            words = plan.channels[cc.channel].word[y : y + h, x : x + w]
        elif cc.map.mode == LSB:  # 2.1: the words are the coded values' order map inverse, in their own type
            words = native_order(recon[s].astype(out.dtype), cc.kind, cc.depth)
        else:
            words = to_word(expand(recon[s], cc), cc)
        out[y : y + h, x : x + w, cc.channel] = words


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

    def sx(v):  # slots of depth 0 (constant maps) hold only 0
        half = 1 << (n - 1) if n else 0
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
