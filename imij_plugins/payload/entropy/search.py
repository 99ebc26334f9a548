"""Section 5's predictor and decorrelation search (C: imij_enc_costs, imij_enc_model_preds): bit
lengths per mode, row and predictor, the stripe's choice, and row predictors by the models' costs."""

from __future__ import annotations

import numpy as np

from imij_plugins import _backend
from imij_plugins.payload.entropy.context_stats import BUCKETS, CLASSES, bucket_of
from imij_plugins.payload.entropy.rans import Lanes
from imij_plugins.payload.entropy.residuals import (
    PREDICTORS,
    bit_length,
    decor_forward,
    lane_edges,
    neighbours,
    prediction,
    residuals,
    row0_prediction,
    zigzag,
)
from imij_plugins.payload.entropy.scratch import U32, narrow, ptr, refs_ptr, thread_buffer, use_c
from imij_plugins.payload.kernel_codes import KERNEL_CODES

INTER_PREDICTORS = 0x380  # bits 7, 8, 9 of a predictor mask


UNTRIED = 1 << 62  # costs of (mode, row, predictor) combinations not evaluated


def costs(planes: np.ndarray, depths: list[int], lanes: int, decor: bool, pred_mask: int, mode_mask: int,
          row_step: int = 1, col_step: int = 1, refs: np.ndarray | None = None) -> np.ndarray:
    """imij_kernels.h imij_enc_costs: (4, h, 10) int64 bit-length costs, UNTRIED where not evaluated.
    ``refs``: an inter frame's reference R per slot (S, h, w), which lets predictors 7-9 in."""
    S, h, w = planes.shape
    out = np.full((4, h, PREDICTORS), UNTRIED, dtype=np.int64)
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = narrow(planes)
        dep = np.asarray(depths, dtype=U32)
        rows = np.empty(2 * S * w, dtype=U32)
        code = lib.imij_enc_costs(ffi.from_buffer(pn), pn.itemsize, refs_ptr(ffi, refs, planes.shape), S, w, h,
                                  lanes, ptr(ffi, "uint32_t[]", dep), int(decor), pred_mask, mode_mask, row_step,
                                  col_step, ptr(ffi, "uint32_t[]", rows, True), rows.size,
                                  ptr(ffi, "int64_t[]", out, True), out.size)
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_costs", refused=ValueError)
        return out
    return _costs_ref(planes, depths, lanes, decor, pred_mask, mode_mask, row_step, col_step, out, refs)


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
    ds = [((V[s, 0] - row0_prediction(V[s, 0], first)) & masks[s])[cols] for s in range(S)]
    for mode, c in _mode_costs(ds, depths, decor, mode_mask).items():
        out[mode, 0, 0] = c
    if R is not None and pred_mask >> 7 & 1:  # 2.4 / 4: row 0 may use 7 (R) in inter frames
        ds = [((V[s, 0] - R[s, 0]) & masks[s])[cols] for s in range(S)]
        for mode, c in _mode_costs(ds, depths, decor, mode_mask).items():
            out[mode, 0, 7] = c
    rows = rows[rows > 0]
    if rows.size:
        nb = [neighbours(V[s], rows, first, last) for s in range(S)]
        rnb = [neighbours(R[s], rows, first, last) for s in range(S)] if R is not None else None
        for p in range(PREDICTORS):
            if not pred_mask >> p & 1:
                continue
            ds = []
            for s in range(S):
                ref = (R[s][rows], rnb[s][0], rnb[s][1]) if rnb is not None else None
                ds.append(((V[s][rows] - prediction(p, nb[s], ref, masks[s])) & masks[s])[:, cols])
            for mode, c in _mode_costs(ds, depths, decor, mode_mask).items():
                out[mode, rows, p] = c
    return out


def choose(cost: np.ndarray, mode_mask: int) -> tuple[int, list[int], int]:
    """The stripe's mode (lowest total of per-row minima, ties: lowest mode) and per-row
    predictors (ties: lowest id) from a (4, h, 7) cost array; returns (mode, preds, total)."""
    best = None
    tried = [mode for mode in range(4) if mode_mask >> mode & 1 and cost[mode, 0, 0] < UNTRIED]
    if len(tried) == 1:
        best = (int(cost[tried[0]].min(axis=1).sum()), tried[0])
    else:  # every mode's total in one reduction (an untried mode's may wrap: it is not read)
        totals = cost.min(axis=2).sum(axis=1).tolist()
        for mode in tried:
            if best is None or totals[mode] < best[0]:
                best = (totals[mode], mode)
    assert best is not None
    total, mode = best
    preds = cost[mode].argmin(axis=1).tolist()  # row 0 has only 0 (and 7 with a reference)
    return mode, preds, total


def model_preds(planes: np.ndarray, depths: list[int], lanes: int, mode: int, pred_mask: int,
                bucket_costs: np.ndarray, ctx_maps: np.ndarray, cross: list[bool]) -> list[int]:
    """imij_kernels.h imij_enc_model_preds: per-row predictors (0..6) chosen one row after the other by
    the models' costs: ``bucket_costs`` (S, 4, 640) uint32 per context and residual bucket,
    ``ctx_maps`` (S, 16) uint8 (3.3), ``cross`` per slot; depths 1..16."""
    S, h, w = planes.shape
    costs_ = np.ascontiguousarray(bucket_costs, dtype=U32)
    maps = np.ascontiguousarray(ctx_maps, dtype=np.uint8)
    if costs_.shape != (S, 4, BUCKETS) or maps.shape != (S, CLASSES):
        raise ValueError("model_preds: bucket_costs (S, 4, 640) and ctx_maps (S, 16)")
    if use_c():
        ffi, lib = _backend.ffi, _backend.lib
        pn = narrow(planes)
        rows = thread_buffer("model_preds", (5 * S + 2) * w, U32)
        preds = np.zeros(h, dtype=np.uint8)
        code = lib.imij_enc_model_preds(ffi.from_buffer(pn), pn.itemsize, S, w, h, lanes,
                                        ptr(ffi, "uint32_t[]", np.asarray(depths, dtype=U32)), mode, pred_mask,
                                        ptr(ffi, "uint32_t[]", costs_), costs_.size, ptr(ffi, "uint8_t[]", maps),
                                        ptr(ffi, "uint8_t[]", np.asarray(cross, dtype=np.uint8)),
                                        ptr(ffi, "uint32_t[]", rows, True), rows.size,
                                        ptr(ffi, "uint8_t[]", preds, True), preds.size)
        if code:
            raise KERNEL_CODES.error(code, kernel="imij_enc_model_preds", refused=ValueError)
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
