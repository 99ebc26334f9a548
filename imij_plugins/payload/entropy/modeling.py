"""Model choice from context statistics (3.2, 3.3, 5): per slot the run tokens, the cross
context, k and m, the greedy merge of the 16 context classes into up to 4 contexts and each
table's precision, all minimizing estimated table plus data bits.

Input is what ``costs.stats`` counts over every unit of a payload: value tokens per (class,
bucket), run tokens per (class, bucket of len - 1) and the positions runs cover per class. The
buckets keep the exact value below 256 and the leading one plus 4 bits above, so the token of
every (k, m) a model may carry (k <= 7 whenever k < n, m <= 4) follows from the bucket. Pure
Python and numpy on small arrays; deterministic, so every backend and thread count builds the
same models.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from imij_plugins.payload.entropy.costs import BUCKETS, CLASSES, EncModel
from imij_plugins.payload.entropy.models import M, TableCode
from imij_plugins.payload.entropy.tokens import Scheme, join_token, valid_parameters

MAX_CONTEXTS = 4
SMALL_SLOT = 1 << 16  # positions below which choose_model searches less


@dataclass(frozen=True, eq=False)
class SlotStats:
    """Summed statistics of one slot (or the palette index plane) under one context variant."""

    vh: np.ndarray  # (16, 640) value tokens
    zr: np.ndarray  # (16,) positions covered by run tokens
    rh: np.ndarray  # (16, 640) run tokens

    def __add__(self, other: "SlotStats") -> "SlotStats":
        return SlotStats(self.vh + other.vh, self.zr + other.zr, self.rh + other.rh)

    @cached_property
    def nz_v(self) -> np.ndarray:
        return np.flatnonzero(self.vh)

    @cached_property
    def nz_r(self) -> np.ndarray:
        return np.flatnonzero(self.rh)

    @cached_property
    def vw(self) -> np.ndarray:
        return self.vh.ravel()[self.nz_v].astype(np.float64)

    @cached_property
    def rw(self) -> np.ndarray:
        return self.rh.ravel()[self.nz_r].astype(np.float64)

    @cached_property
    def vcol(self) -> np.ndarray:
        return self.vh.sum(axis=0)

    @cached_property
    def rcol(self) -> np.ndarray:
        return self.rh.sum(axis=0)


@dataclass(frozen=True)
class ModelPlan:
    """A chosen model: what write_model writes and what the stream writer codes with."""

    scheme: Scheme
    cross: bool
    ctx_shift: int
    ctx_map: tuple[int, ...]
    codes: tuple[TableCode, ...]
    enc: EncModel
    est_bits: float


def _bucket_values() -> np.ndarray:
    b = np.arange(BUCKETS)
    msb = 8 + (b - 256) // 16
    top = (b - 256) % 16
    big = (16 + top) << np.maximum(msb - 4, 0)
    return np.where(b < 256, b, big)


_REPR = [int(v) for v in _bucket_values()]


@lru_cache(maxsize=None)
def token_maps(n: int, k: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Per bucket: the value token and its extra bits, the run token and its extra bits (3.2);
    buckets no residual of depth n can reach map to token 0. Also the alphabet size. The token
    arrays are returned as flat (class, token) indices for all 16 classes."""
    sch = Scheme(n, k, m)
    vt = np.zeros(BUCKETS, dtype=np.int64)
    vn = np.zeros(BUCKETS, dtype=np.int64)
    rt = np.zeros(BUCKETS, dtype=np.int64)
    rn = np.zeros(BUCKETS, dtype=np.int64)
    limit = 1 << n
    for b, u in enumerate(_REPR):
        if u < limit:
            t, nb, _ = join_token(u, sch.k, sch.m)
            vt[b], vn[b] = t, nb
        if u < (1 << 15):
            t, nb, _ = join_token(u, sch.rk, sch.m)
            rt[b], rn[b] = sch.value_tokens + t, nb
    A = sch.alphabet
    base = (np.arange(CLASSES) * A)[:, None]
    return (base + vt).ravel(), vn, (base + rt).ravel(), rn, A


def token_hist(st: SlotStats, n: int, k: int, m: int, runs: bool) -> tuple[np.ndarray, int]:
    """(16, alphabet) token counts per class and the total extra bits."""
    vidx, vn, ridx, rn, A = token_maps(n, k, m)
    vnz = st.nz_v
    th = np.bincount(vidx[vnz], weights=st.vh.ravel()[vnz], minlength=CLASSES * A).reshape(CLASSES, A).astype(np.float64)
    extra = int(st.vcol @ vn)
    if runs:
        rnz = st.nz_r
        th += np.bincount(ridx[rnz], weights=st.rh.ravel()[rnz], minlength=CLASSES * A).reshape(CLASSES, A)
        extra += int(st.rcol @ rn)
    else:
        th[:, 0] += st.zr  # every covered position is a zero value token (token 0)
    return th, extra


def _flat256(n: int, k: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """token_maps' flat indices with a row stride of 256 (class * 256 + token)."""
    return _flat256_cached(n, k, m)


@lru_cache(maxsize=None)
def _flat256_cached(n: int, k: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    vidx, _, ridx, _, A = token_maps(n, k, m)
    cls = np.repeat(np.arange(CLASSES), BUCKETS)
    return cls * 256 + (vidx - cls * A), cls * 256 + (ridx - cls * A)


def _sparse_cost_rows(dense: np.ndarray) -> np.ndarray:
    """Per row of a (rows, 256) count array: the bits of coding the row with a table normalized
    to M = 1024 (3.3: every used symbol at least 1/M, the excess taken from the commonest, which
    caps its probability) plus the rough table size of _table_est; on the nonzero entries only."""
    rows = dense.shape[0]
    flat = dense.ravel()
    nz = np.flatnonzero(flat)
    if nz.size == 0:
        return np.zeros(rows)
    v = flat[nz]
    r = nz >> 8
    tot = np.bincount(r, weights=v, minlength=rows)
    f = np.maximum(1.0, v * (M / tot[r]))
    starts, ends = _row_spans(r)
    rr = r[starts]
    fsum = np.add.reduceat(f, starts)
    fmax = np.maximum.reduceat(f, starts)
    bits = np.bincount(r, weights=v * (M_LOG - np.log2(f)), minlength=rows)
    # the commonest symbol gives up the excess: its count is fmax * tot / M
    excess = np.maximum(fsum - M, 0.0)
    vmax = fmax * tot[rr] / M
    bits[rr] += vmax * (np.log2(fmax) - np.log2(np.maximum(1.0, fmax - excess)))
    used = ends - starts
    last1 = (nz[ends - 1] & 255) + 1
    out = bits
    out[rr] += 11 + 6 * used + 2 * last1
    return out


M_LOG = float(np.log2(M))


def _row_spans(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal values of a sorted, non-empty array starts and ends (exclusive)."""
    change = np.empty(r.size, dtype=bool)
    change[0] = True
    np.not_equal(r[1:], r[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = r.size
    return starts, ends


@lru_cache(maxsize=256)
def _stacked(n: int, kms: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For candidates kms: flat (candidate, class, token) indices of every (class, bucket) for
    value and run tokens, and the extra bits of every bucket, stacked."""
    v = np.stack([_flat256(n, k, m)[0] + j * CLASSES * 256 for j, (k, m) in enumerate(kms)])
    r = np.stack([_flat256(n, k, m)[1] + j * CLASSES * 256 for j, (k, m) in enumerate(kms)])
    vn = np.stack([token_maps(n, k, m)[1] for k, m in kms]).astype(np.float64)
    rn = np.stack([token_maps(n, k, m)[3] for k, m in kms]).astype(np.float64)
    return v, r, vn, rn


COST_BATCH = 4  # (k, m) candidates whose token counts _multi_cost builds at once (16 x 256 each)


def _multi_cost(items: list[tuple["SlotStats", int, int, bool]], n: int) -> np.ndarray:
    """Estimated bits (16 classes: coded size + rough tables + extra bits) of each (stats, k, m,
    runs) item; items sharing one stats object are costed a few candidates per pass (small
    temporaries)."""
    out = np.zeros(len(items))
    groups: dict[tuple[int, bool], list[int]] = {}
    for j, (st, k, m, runs) in enumerate(items):
        groups.setdefault((id(st), runs), []).append(j)
    for (_, runs), group in groups.items():
        st = items[group[0]][0]
        for at in range(0, len(group), COST_BATCH):
            js = group[at : at + COST_BATCH]
            out[js] = _batch_cost(st, tuple((items[j][1], items[j][2]) for j in js), n, runs)
    return out


def _dot_rows(a: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """a @ counts without BLAS (whose threads spin on such small products); the values are
    integers well below 2^53, so the sums are exact in any order."""
    return (a * counts).sum(axis=1)


def _batch_cost(st: "SlotStats", kms: tuple[tuple[int, int], ...], n: int, runs: bool) -> np.ndarray:
    """_multi_cost of one stats object under candidates kms, in one pass."""
    v, r, vn, rn = _stacked(n, kms)
    J = len(kms)
    idx = [v[:, st.nz_v].ravel()]
    wts = [np.tile(st.vw, J)]
    extra = _dot_rows(vn, st.vcol)
    if runs:
        idx.append(r[:, st.nz_r].ravel())
        wts.append(np.tile(st.rw, J))
        extra = extra + _dot_rows(rn, st.rcol)
    else:
        zc = np.flatnonzero(st.zr)
        idx.append((np.arange(J)[:, None] * CLASSES * 256 + zc[None, :] * 256).ravel())
        wts.append(np.tile(st.zr[zc].astype(np.float64), J))
    dense = np.bincount(np.concatenate(idx), weights=np.concatenate(wts), minlength=J * CLASSES * 256)
    return _sparse_cost_rows(dense.reshape(-1, 256)).reshape(J, CLASSES).sum(axis=1) + extra


def _cost_rows(h: np.ndarray) -> np.ndarray:
    """_sparse_cost_rows for rows of any width up to 256."""
    if h.shape[-1] < 256:
        wide = np.zeros((h.shape[0], 256))
        wide[:, : h.shape[-1]] = h
        h = wide
    return _sparse_cost_rows(h)


def partition_classes(th: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray], float]:
    """Up to 4 contexts from the 16 classes (5): the split of the used classes, in class order,
    into at most 4 runs of neighbouring classes with the lowest estimated bits (ideal entropy
    plus a rough table size), found exactly over every split. Returns (ctx_map, per-context
    histograms, estimated bits)."""
    used = [c for c in range(CLASSES) if th[c].sum() > 0]
    if not used:
        h0 = np.zeros(th.shape[1])
        h0[0] = 1
        return (0,) * CLASSES, [h0], 0.0
    g = len(used)
    H = th[used].astype(np.float64)
    cum = np.vstack([np.zeros(H.shape[1]), np.cumsum(H, axis=0)])
    I, J = np.triu_indices(g + 1, 1)  # range [i, j) of used classes
    rc = _cost_rows(cum[J] - cum[I])
    cost = dict(zip(zip(I.tolist(), J.tolist()), rc.tolist()))
    INF = float("inf")
    # best[k][j]: the first j used classes in k ranges
    best = [[INF] * (g + 1) for _ in range(MAX_CONTEXTS + 1)]
    back = [[0] * (g + 1) for _ in range(MAX_CONTEXTS + 1)]
    best[0][0] = 0.0
    for k in range(1, MAX_CONTEXTS + 1):
        for j in range(1, g + 1):
            for i in range(k - 1, j):
                c = best[k - 1][i] + cost[(i, j)]
                if c < best[k][j]:
                    best[k][j], back[k][j] = c, i
    k = min(range(1, MAX_CONTEXTS + 1), key=lambda kk: (best[kk][g], kk))
    bounds, j = [], g
    for kk in range(k, 0, -1):
        i = back[kk][j]
        bounds.append((i, j))
        j = i
    bounds.reverse()
    ctx_of_used = {}
    hists = []
    for ctx, (i, j) in enumerate(bounds):
        for q in range(i, j):
            ctx_of_used[used[q]] = ctx
        hists.append(cum[j] - cum[i])
    ctx_map = []
    for c in range(CLASSES):
        below = [d for d in used if d <= c]
        ctx_map.append(ctx_of_used[below[-1] if below else used[0]])
    return tuple(ctx_map), hists, best[k][g]


def merge_classes(th: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray], float]:
    """5: greedy merging of any two groups of classes (not only neighbours) while more than 4
    groups remain, then while a merge saves bits. Returns what partition_classes returns."""
    used = [c for c in range(CLASSES) if th[c].sum() > 0]
    if not used:
        return partition_classes(th)
    groups = [[c] for c in used]
    hists = list(th[used].astype(np.float64))
    cost = list(_cost_rows(np.array(hists)))
    while len(groups) > 1:
        g = len(groups)
        I, J = np.triu_indices(g, 1)
        Hs = np.array(hists)
        merged = Hs[I] + Hs[J]
        mc = _cost_rows(merged)
        delta = mc - np.array(cost)[I] - np.array(cost)[J]
        best = int(np.argmin(delta))
        if g <= MAX_CONTEXTS and delta[best] >= 0:
            break
        i, j = int(I[best]), int(J[best])
        groups[i] = sorted(groups[i] + groups[j])
        hists[i], cost[i] = merged[best], float(mc[best])
        del groups[j], hists[j], cost[j]
    order = sorted(range(len(groups)), key=lambda q: groups[q][0])
    ctx_of = {c: ctx for ctx, q in enumerate(order) for c in groups[q]}
    ctx_map = []
    for c in range(CLASSES):
        below = [d for d in used if d <= c]
        ctx_map.append(ctx_of[below[-1] if below else used[0]])
    return tuple(ctx_map), [hists[q] for q in order], float(sum(cost))


_PRECS = np.arange(1, 9)


def best_tables(hists: list[np.ndarray], precs: range) -> list[TableCode]:
    """Per context the precision (3.3) with the fewest table plus data bits, all contexts and
    precisions at once. Data bits use 3.3's normalization approximately (floor, at least 1, the
    excess taken from the commonest symbol); the table bits are exact."""
    width = max(1, max(int(np.flatnonzero(h)[-1]) + 1 if np.any(h) else 1 for h in hists))
    H = np.zeros((len(hists), width), dtype=np.int64)
    for i, h in enumerate(hists):
        hh = np.asarray(h, dtype=np.int64)[:width]
        H[i, : len(hh)] = hh
        if not H[i].any():
            H[i, 0] = 1
    big = int(H.max())
    if big >= 1 << 32:  # 3.3: exponents up to 32
        shift = big.bit_length() - 32
        H = np.where(H > 0, np.maximum(1, H >> shift), 0)
    nz = H > 0
    last1 = (nz * np.arange(1, width + 1)).max(axis=1)  # per row: last used symbol + 1
    inside = np.arange(width)[None, :] < last1[:, None]
    e = np.frexp(H.astype(np.float64))[1].astype(np.int64)  # bit_length
    dz = np.diff(np.concatenate([np.zeros((len(hists), 1), dtype=np.int64), e], axis=1), axis=1)
    z = np.where(dz >= 0, 2 * dz, -2 * dz - 1) + 1
    gamma = ((2 * np.frexp(z.astype(np.float64))[1] - 1) * inside).sum(axis=1)
    P = _PRECS[precs.start - 1 : precs.stop - 1][None, :, None]  # (1, precs, 1)
    E = e[:, None, :]
    nb = np.where(E > 1, np.minimum(E - 1, P - 1), 0)  # (ctx, precs, symbols)
    sh = np.maximum(E - 1 - nb, 0)
    Hx = H[:, None, :]
    w = np.where(E == 0, 0, np.where(E == 1, 1, ((1 << nb) | ((Hx >> sh) & ((1 << nb) - 1))) << sh))
    tbits = 11 + gamma[:, None] + (nb * inside[:, None, :]).sum(axis=2)
    tot = w.sum(axis=2, keepdims=True)
    f = np.where(w > 0, np.maximum(1, (w * M) // np.maximum(tot, 1)), 1).astype(np.float64)
    top = np.argmax(w, axis=2)
    excess = np.maximum(np.where(w > 0, f, 0).sum(axis=2) - M, 0)
    fi = np.take_along_axis(f, top[:, :, None], axis=2)[:, :, 0]
    np.put_along_axis(f, top[:, :, None], np.maximum(1.0, fi - excess)[:, :, None], axis=2)
    data = (Hx * (M_LOG - np.log2(f))).sum(axis=2)
    best = np.argmin(tbits + data, axis=1)
    codes = []
    for i in range(len(hists)):
        b = int(best[i])
        n = int(last1[i])
        ee, nn = e[i, :n], nb[i, b, :n]
        mant = np.where(ee > 1, (H[i, :n] >> sh[i, b, :n]) & ((1 << nn) - 1), 0)
        codes.append(TableCode(int(_PRECS[precs.start - 1 + b]), tuple(zip(ee.tolist(), nn.tolist(), mant.tolist()))))
    return codes


def normalize_fast(weights: tuple[int, ...] | list[int]) -> list[int]:
    """models.normalize (3.3) with numpy: the same frequencies for every input."""
    w = np.asarray(weights, dtype=np.int64)
    total = int(w.sum())
    f = np.where(w > 0, np.maximum(1, (w * M) // total), 0)
    used = np.flatnonzero(w)
    order = used[np.lexsort((used, -w[used]))]  # weight descending, then index ascending
    fsum = int(f.sum())
    count = len(order)
    if fsum < M:
        deficit = M - fsum
        f[order] += deficit // count
        f[order[: deficit % count]] += 1
    elif fsum > M:
        fl = f.tolist()
        i = 0
        while fsum > M:
            sym = int(order[i % count])
            if fl[sym] > 1:
                fl[sym] -= 1
                fsum -= 1
            i += 1
        return fl
    return f.tolist()


def table_of(code: TableCode) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(freq, cum) of a coded table, the decoder's normalization (3.3)."""
    freq = normalize_fast(code.weights)
    cum = np.concatenate([[0], np.cumsum(freq)[:-1]]).tolist() if freq else []
    return tuple(freq), tuple(int(c) for c in cum)


def model_bits(plans: list["ModelPlan"]) -> bytes:
    """The models bit stream (3.3) of ``plans`` in order, byte for byte models.write_model's,
    padded with zero bits to a whole byte."""
    acc = 0
    pos = 0
    for mp in plans:
        fields = [(mp.scheme.k, 5), (mp.scheme.m, 3), (1 if mp.cross else 0, 1)]
        if mp.scheme.n > 16:
            fields.append((mp.ctx_shift, 5))
        fields += [(c, 2) for c in mp.ctx_map]
        for v, wdt in fields:
            acc |= v << pos
            pos += wdt
        for code in mp.codes:
            acc |= (len(code.codes) - 1) << pos
            acc |= (code.prec - 1) << (pos + 8)
            pos += 11
            e_prev = 0
            for e, nb, mant in code.codes:
                d = e - e_prev
                g = (2 * d if d >= 0 else -2 * d - 1) + 1
                z = g.bit_length() - 1
                # gamma(g): z zero bits, a one, then the low z bits of g
                acc |= (1 | ((g & ((1 << z) - 1)) << 1)) << (pos + z)
                pos += 2 * z + 1
                e_prev = e
                if e > 1:
                    acc |= mant << pos
                    pos += nb
    return acc.to_bytes((pos + 7) // 8, "little")


# --- the model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelEffort:
    km_all: bool  # search every valid (k, m); else a neighbourhood of the mean's guess
    variants: bool  # compare runs on / off and cross on / off
    greedy_any: bool  # also try greedy merging of any two groups; keep the smaller
    precs: range


def effort_of(effort: int) -> ModelEffort:
    if effort <= 2:
        return ModelEffort(False, False, False, range(3, 8))
    if effort <= 6:
        return ModelEffort(False, True, False, range(1, 9))
    return ModelEffort(True, True, True, range(1, 9))


_REPR_A = np.array(_REPR, dtype=np.float64)


@lru_cache(maxsize=None)
def _valid(n: int) -> tuple[tuple[int, int], ...]:
    return tuple(valid_parameters(n))


def _km_candidates(st: SlotStats, n: int, full: bool) -> list[tuple[int, int]]:
    cands = list(_valid(n))
    if full:
        return cands
    # around the bit length of the mean value
    counts = st.vcol
    tot = counts.sum()
    mean = float((counts * _REPR_A).sum() / tot) if tot else 0.0
    k0 = max(0, min(n, int(mean).bit_length() + 1))
    near = [(k, m) for k, m in cands if abs(k - k0) <= 1 and m <= 2]
    return near or cands


def choose_model(variants: dict[bool, SlotStats], n: int, ctx_shift: int, eff: ModelEffort,
                 run_min: int = 4) -> ModelPlan:
    """The model with the fewest estimated bits for a slot of depth n; ``variants`` maps cross
    (False, and True where the slot may use it) to its statistics."""
    base = variants[False]
    # small slots (under 2^16 positions): a narrower search, its time would not pay
    small = int(base.vcol.sum() + base.zr.sum()) < SMALL_SLOT and not eff.km_all
    cands = _km_candidates(base, n, eff.km_all)
    if small:
        cands = [km for km in cands if km[1] == 1] or cands[:1]
    kc = _multi_cost([(base, k, m, True) for k, m in cands], n)
    k, m = cands[int(np.argmin(kc))]
    items = []
    crosses = sorted(variants) if eff.variants and not small else [False]
    for cross in crosses:
        for runs in ((True, False) if eff.variants else (True,)):
            if runs and not variants[cross].rh.any() and eff.variants:
                continue  # no run would be coded: the same tokens as without runs
            items.append((variants[cross], k, m, runs, cross))
    vc = _multi_cost([it[:4] for it in items], n) if len(items) > 1 else [0.0]
    st, _, _, runs, cross = items[int(np.argmin(vc))]
    th, extra = token_hist(st, n, k, m, runs)
    ctx_map, hists, est = partition_classes(th)
    if eff.greedy_any:
        alt = merge_classes(th)
        if alt[2] < est:
            ctx_map, hists, est = alt
    codes = best_tables(hists, eff.precs)
    tables = [table_of(code) for code in codes]
    scheme = Scheme(n, k, m)
    enc = EncModel(n, k, m, cross, ctx_shift, run_min if runs else 0, ctx_map,
                   tuple(t[0] for t in tables), tuple(t[1] for t in tables))
    return ModelPlan(scheme, cross, ctx_shift, ctx_map, tuple(codes), enc, float(est + extra))


def estimate_bits(st: SlotStats) -> float:
    """A unit's bits under its own 16-class statistics (bucket entropy plus extra bits), used to
    compare a palette stripe with the slots it replaces (5)."""
    h = st.vh.astype(np.float64)
    both = np.concatenate([h, st.rh.astype(np.float64)], axis=1)
    tot = both.sum(axis=1)
    ent = float((tot * np.log2(np.maximum(tot, 1))).sum() - (both * np.log2(np.maximum(both, 1))).sum())
    msb = np.maximum(np.frexp(np.array(_REPR, dtype=np.float64))[1] - 1, 0)
    extra = np.where(np.arange(BUCKETS) < 256, 0, msb - 4)
    return ent + float((h * extra).sum() + (st.rh * extra).sum())


__all__ = ["ModelEffort", "ModelPlan", "SlotStats", "best_tables", "choose_model", "effort_of", "estimate_bits",
           "merge_classes", "model_bits", "normalize_fast", "partition_classes"]
