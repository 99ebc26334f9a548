"""Model choice from context statistics (3.2, 3.3, 5): per slot the run tokens, the cross
context, k and m, the greedy merge of the 16 context classes into up to 4 contexts and each
table's precision, all minimizing estimated table plus data bits.

Input is what ``context_stats.stats`` counts over every unit of a payload: value tokens per (class,
bucket), run tokens per (class, bucket of len - 1) and the positions runs cover per class. The
buckets keep the exact value below 256 and the leading one plus 4 bits above, so the token of
every (k, m) a model may carry (k <= 7 whenever k < n, m <= 4) follows from the bucket.
Estimates are integers (bits * 2^16, estimate.row_costs / token_cost, C kernels with a numpy
reference), so every backend and thread count builds the same models.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import accumulate

import numpy as np

from imij_plugins.payload.entropy.context_stats import BUCKETS, CLASSES
from imij_plugins.payload.entropy.estimate import (
    COST_FIX,
    LOG2_FIX,
    Prepared,
    TokenTable,
    best_precisions,
    partition,
    row_costs,
)
from imij_plugins.payload.entropy.models import M, TableCode
from imij_plugins.payload.entropy.streams import EncModel
from imij_plugins.payload.entropy.tokens import Scheme, join_token, valid_parameters

MAX_CONTEXTS = 4
SMALL_SLOT = 1 << 16  # positions below which choose_model searches less


class SlotStats:
    """Summed statistics of one slot (or the palette index plane) under one context variant; the
    column sums and the kernels' view made on first use (plain slots: a cached_property takes a
    lock per read, and the chooser reads them often)."""

    __slots__ = ("vh", "zr", "rh", "_vcol", "_rcol", "_prepared")

    def __init__(self, vh: np.ndarray, zr: np.ndarray, rh: np.ndarray):
        self.vh = vh  # (16, buckets) value tokens (context_stats.stat_buckets: up to 640)
        self.zr = zr  # (16,) positions covered by run tokens
        self.rh = rh  # (16, buckets) run tokens
        self._vcol: np.ndarray | None = None
        self._rcol: np.ndarray | None = None
        self._prepared: Prepared | None = None

    @property
    def vcol(self) -> np.ndarray:
        if self._vcol is None:
            self._vcol = self.vh.sum(axis=0, dtype=np.int64)
        return self._vcol

    @property
    def rcol(self) -> np.ndarray:
        if self._rcol is None:
            self._rcol = self.rh.sum(axis=0, dtype=np.int64)
        return self._rcol

    @property
    def prepared(self) -> Prepared:
        """The counts as the estimate kernels read them (converted and pointed at once)."""
        if self._prepared is None:
            self._prepared = Prepared(self.vh, self.rh, self.zr)
        return self._prepared


@dataclass(frozen=True)
class ModelPlan:
    """A chosen model: what write_model writes and what the stream writer codes with."""

    scheme: Scheme
    cross: bool
    ctx_shift: int
    ctx_map: tuple[int, ...]
    codes: tuple[TableCode, ...]
    enc: EncModel
    estimate: int = 0  # estimated bits * 2^16 of the tokens, extra bits and tables it was chosen for


def _bucket_values() -> np.ndarray:
    b = np.arange(BUCKETS)
    msb = 8 + (b - 256) // 16
    top = (b - 256) % 16
    big = (16 + top) << np.maximum(msb - 4, 0)
    return np.where(b < 256, b, big)


_REPR = [int(v) for v in _bucket_values()]


@cache
def bucket_tokens(n: int, k: int, m: int) -> np.ndarray:
    """(4, 640) int64, per bucket: the value token and its extra bits, the run token and its
    extra bits (3.2); buckets no residual of depth n can reach map to token 0."""
    sch = Scheme(n, k, m)
    out = np.zeros((4, BUCKETS), dtype=np.int64)
    limit = 1 << n
    for b, u in enumerate(_REPR):
        if u < limit:
            t, nb, _ = join_token(u, sch.k, sch.m)
            out[0, b], out[1, b] = t, nb
        if u < (1 << 15):
            t, nb, _ = join_token(u, sch.rk, sch.m)
            out[2, b], out[3, b] = sch.value_tokens + t, nb
    out.flags.writeable = False
    return out


ABSENT_BITS = 24  # bucket_costs: a token without a frequency, as if it took this many bits


def bucket_costs(model: ModelPlan) -> np.ndarray:
    """(4, 640) uint32: per context and residual bucket, the bits * 2^16 of its value token under
    the model's tables, log2(M / f) plus the extra bits (3.2, 3.3), for search.model_preds. A
    token the tables leave without a frequency costs ABSENT_BITS: the models are chosen again
    from the residuals the costs pick, so it gets one. Zero runs are costed as value tokens."""
    sch = model.scheme
    tok = bucket_tokens(sch.n, sch.k, sch.m)
    out = np.empty((MAX_CONTEXTS, BUCKETS), dtype=np.uint32)
    fix = 1 << COST_FIX
    freqs = model.enc.freqs
    for c in range(MAX_CONTEXTS):
        f = np.zeros(int(tok[0].max()) + 1, dtype=np.int64)
        table = freqs[min(c, len(freqs) - 1)]  # contexts past the tables are never selected
        f[: len(table)] = table[: f.size]
        ft = f[tok[0]]
        bits = np.where(ft > 0, LOG2_FIX[M] - LOG2_FIX[ft], ABSENT_BITS * fix)
        out[c] = bits + tok[1] * fix
    return out


@cache
def _token_table(n: int, k: int, m: int, buckets: int) -> TokenTable:
    """bucket_tokens(n, k, m) cut to statistics of ``buckets`` buckets, with its C pointer."""
    return TokenTable(bucket_tokens(n, k, m), buckets)


def _multi_cost(items: list[tuple[SlotStats, int, int, bool]], n: int) -> list[int]:
    """Estimated bits * 2^16 (estimate.token_cost: 16 classes' coded size, rough tables and extra
    bits) of each (stats, k, m, runs) item."""
    return [st.prepared.cost(_token_table(n, k, m, st.vh.shape[1]), runs) for st, k, m, runs in items]


def partition_classes(th: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray] | np.ndarray, int]:
    """Up to 4 contexts from the 16 classes (5): the split of the used classes, in class order,
    into at most 4 runs of neighbouring classes with the lowest estimated bits (ideal entropy
    plus a rough table size), found exactly over every split. Returns (ctx_map, per-context
    histograms, estimated bits * 2^16). estimate.partition on the C backend, this the reference."""
    fast = partition(th)
    if fast is not None:
        return fast
    used = np.flatnonzero(th.any(axis=1)).tolist()
    if not used:
        h0 = np.zeros(th.shape[1], dtype=np.int64)
        h0[0] = 1
        return (0,) * CLASSES, [h0], 0
    g = len(used)
    H = th[used].astype(np.int64)
    H = H[:, : int(np.flatnonzero(H.any(axis=0))[-1]) + 1]  # up to the last used symbol
    cum = np.vstack([np.zeros(H.shape[1], dtype=np.int64), np.cumsum(H, axis=0)])
    I, J = _ranges(g)
    INF = np.int64(1 << 61)  # above any estimate (integers: the same choice on every backend)
    cost = np.full((g + 1, g + 1), INF, dtype=np.int64)
    cost[I, J] = row_costs(cum[J] - cum[I])
    # best[k][j]: the first j used classes in k ranges; back[k][j]: where the last range starts
    # (the first such i on ties); sums of two estimates stay below 2^63
    best = np.full((MAX_CONTEXTS + 1, g + 1), INF, dtype=np.int64)
    back = np.zeros((MAX_CONTEXTS + 1, g + 1), dtype=np.int64)
    best[0, 0] = 0
    for k in range(1, MAX_CONTEXTS + 1):
        total = np.minimum(best[k - 1][:, None] + cost, INF)  # (i, j)
        back[k] = np.argmin(total, axis=0)
        best[k] = total[back[k], np.arange(g + 1)]
    k = 1 + int(np.argmin(best[1:, g]))
    bounds, j = [], g
    for kk in range(k, 0, -1):
        i = int(back[kk][j])
        bounds.append((i, j))
        j = i
    bounds.reverse()
    ctx_of_used = {}
    hists = []
    for ctx, (i, j) in enumerate(bounds):
        for q in range(i, j):
            ctx_of_used[used[q]] = ctx
        hists.append(cum[j] - cum[i])
    return _ctx_map(used, ctx_of_used), hists, int(best[k][g])


@cache
def _ranges(g: int) -> tuple[np.ndarray, np.ndarray]:
    """Every range [i, j) of g used classes, 0 <= i < j <= g (partition_classes' cost rows)."""
    I, J = np.triu_indices(g + 1, 1)
    I.flags.writeable = J.flags.writeable = False
    return I, J


def merge_classes(th: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray], int]:
    """5: greedy merging of any two groups of classes (not only neighbours) while more than 4
    groups remain, then while a merge saves bits. Returns what partition_classes returns."""
    used = [c for c in range(CLASSES) if th[c].sum() > 0]
    if not used:
        return partition_classes(th)
    groups = [[c] for c in used]
    hists = list(th[used].astype(np.int64))
    cost = row_costs(np.array(hists)).tolist()
    while len(groups) > 1:
        g = len(groups)
        I, J = np.triu_indices(g, 1)
        Hs = np.array(hists)
        merged = Hs[I] + Hs[J]
        mc = row_costs(merged)
        delta = mc - np.array(cost)[I] - np.array(cost)[J]
        best = int(np.argmin(delta))
        if g <= MAX_CONTEXTS and delta[best] >= 0:
            break
        i, j = int(I[best]), int(J[best])
        groups[i] = sorted(groups[i] + groups[j])
        hists[i], cost[i] = merged[best], int(mc[best])
        del groups[j], hists[j], cost[j]
    order = sorted(range(len(groups)), key=lambda q: groups[q][0])
    ctx_of = {c: ctx for ctx, q in enumerate(order) for c in groups[q]}
    return _ctx_map(used, ctx_of), [hists[q] for q in order], sum(cost)


def _ctx_map(used: list[int], ctx_of: dict[int, int]) -> tuple[int, ...]:
    """3.3's ctx_map: each used class's context; an unused class takes that of the nearest used
    class below it (above it when none is below)."""
    ctx_map, j = [], 0
    for c in range(CLASSES):
        while j + 1 < len(used) and used[j + 1] <= c:
            j += 1
        ctx_map.append(ctx_of[used[j]])  # used[j] <= c, or used[0] when no used class is below c
    return tuple(ctx_map)


def best_tables(hists: list[np.ndarray], precs: range) -> list[TableCode]:
    """Per context the precision (3.3) with the fewest table plus data bits (coded_tables')."""
    return [code for code, _, _ in coded_tables(hists, precs)]


def coded_tables(hists: list[np.ndarray] | np.ndarray, precs: range,
                 ) -> list[tuple[TableCode, tuple[int, ...], tuple[int, ...]]]:
    """Per context the precision (3.3) with the fewest table plus data bits, all contexts and
    precisions at once, as (code, freq, cum): freq the decoder's normalization of the code's
    weights (3.3). Data bits use 3.3's normalization approximately (floor, at least 1, the
    excess taken from the commonest symbol); the table bits are exact. ``hists``: rows of
    counts (a list, or partition's 2-D array)."""
    if isinstance(hists, np.ndarray) and hists.ndim == 2:
        H = np.array(hists, dtype=np.int64)  # a copy: the rows are changed below
    else:
        H = np.zeros((len(hists), max(1, max(len(h) for h in hists))), dtype=np.int64)
        for i, h in enumerate(hists):
            H[i, : len(h)] = h
    if not H[:, -1].any():  # up to the last symbol any context uses (partition's end there)
        used = np.flatnonzero(H.any(axis=0))
        H = H[:, : int(used[-1]) + 1 if used.size else 1]
    tops = H.max(axis=1).tolist()  # counts are >= 0: a row's top is 0 only when it is unused
    if 0 in tops:
        H[[i for i, t in enumerate(tops) if t == 0], 0] = 1
    big = max(tops)
    if big >= 1 << 32:  # 3.3: exponents up to 32
        shift = big.bit_length() - 32
        H = np.where(H > 0, np.maximum(1, H >> shift), 0)
    prec, last1, codes, freq = best_precisions(H, precs.start, precs.stop - 1)
    out = []
    for c, (p, n) in enumerate(zip(prec.tolist(), last1.tolist())):
        f = freq[c, :n].tolist()
        cum = list(accumulate(f[:-1], initial=0))  # exclusive prefix sums (3.3's cumulative frequencies)
        out.append((TableCode(p, tuple(zip(*codes[c, :n].T.tolist()))), tuple(f), tuple(cum)))  # (e, nb, mant) rows
    return out


def model_bits(plans: list[ModelPlan]) -> bytes:
    """The models bit stream (3.3) of ``plans`` in order, byte for byte models.write_model's,
    padded with zero bits to a whole byte. Each 64 bits leave the accumulator as they fill: an
    integer as long as the stream would make every field's or cost its length."""
    out = bytearray()
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
            acc |= ((len(code.codes) - 1) | (code.prec - 1) << 8) << pos
            pos += 11
            e_prev = 0
            for e, nb, mant in code.codes:
                gv, gw = _GAMMA[e - e_prev]
                e_prev = e
                if e > 1:  # the mantissa's nb bits follow the gamma code
                    acc |= (gv | mant << gw) << pos
                    pos += gw + nb
                else:
                    acc |= gv << pos
                    pos += gw
                if pos >= 64:
                    out += (acc & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
                    acc >>= 64
                    pos -= 64
    return bytes(out + acc.to_bytes((pos + 7) // 8, "little"))


def _gamma(d: int) -> tuple[int, int]:
    """3.3: an exponent step d as gamma(zigzag(d) + 1), (bits, width): z zero bits, a one, then
    the low z bits of g."""
    g = (2 * d if d >= 0 else -2 * d - 1) + 1
    z = g.bit_length() - 1
    return (1 | ((g & ((1 << z) - 1)) << 1)) << z, 2 * z + 1


_GAMMA = {d: _gamma(d) for d in range(-64, 65)}  # exponents are 0 ..= 32 (3.3)


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


@cache
def _valid(n: int) -> tuple[tuple[int, int], ...]:
    return tuple(valid_parameters(n))


def _km_candidates(st: SlotStats, n: int, full: bool) -> list[tuple[int, int]]:
    if full:
        return list(_valid(n))
    # around the bit length of the mean value
    counts = st.vcol
    tot = counts.sum()
    mean = float((counts * _REPR_A[: counts.size]).sum() / tot) if tot else 0.0
    return list(_near(n, max(0, min(n, int(mean).bit_length() + 1))))


@cache
def _near(n: int, k0: int) -> tuple[tuple[int, int], ...]:
    """The valid (k, m) of depth n with k within 1 of k0 and m <= 2 (all of them when none is)."""
    return tuple((k, m) for k, m in _valid(n) if abs(k - k0) <= 1 and m <= 2) or _valid(n)


def small_slot(positions: int, eff: ModelEffort) -> bool:
    """Whether choose_model searches a slot of ``positions`` positions narrowly: under SMALL_SLOT
    below the full search, one m and no cross context (its time would not pay)."""
    return positions < SMALL_SLOT and not eff.km_all


def choose_model(variants: dict[bool, SlotStats], n: int, ctx_shift: int, eff: ModelEffort,
                 run_min: int = 4) -> ModelPlan:
    """The model with the fewest estimated bits for a slot of depth n; ``variants`` maps cross
    (False, and True where the slot may use it) to its statistics."""
    base = variants[False]
    small = small_slot(int(base.vcol.sum() + base.zr.sum()), eff)
    cands = _km_candidates(base, n, eff.km_all)
    if small:
        cands = [km for km in cands if km[1] == 1] or cands[:1]
    known = {}  # costs weighed already, by (cross, runs): the chosen (k, m)'s, plain with runs
    if len(cands) > 1:  # (one candidate: no cost to weigh)
        kc = _multi_cost([(base, k, m, True) for k, m in cands], n)
        best = kc.index(min(kc))  # the first of the smallest, as argmin
        k, m = cands[best]
        known[False, True] = kc[best]
    else:
        k, m = cands[0]
    items = []
    crosses = sorted(variants) if eff.variants and not small else [False]
    for cross in crosses:
        for runs in ((True, False) if eff.variants else (True,)):
            if runs and not variants[cross].rh.any() and eff.variants:
                continue  # no run would be coded: the same tokens as without runs
            items.append((variants[cross], k, m, runs, cross))
    vc = [0]
    if len(items) > 1:
        vc = [known[it[4], it[3]] if (it[4], it[3]) in known else _multi_cost([it[:4]], n)[0] for it in items]
    st, _, _, runs, cross = items[vc.index(min(vc))]
    th = st.prepared.counts(_token_table(n, k, m, st.vh.shape[1]), runs)
    ctx_map, hists, est = partition_classes(th)
    if eff.greedy_any:
        alt = merge_classes(th)
        if alt[2] < est:
            ctx_map, hists, est = alt
    tables = coded_tables(hists, eff.precs)
    scheme = Scheme(n, k, m)
    enc = EncModel(n, k, m, cross, ctx_shift, run_min if runs else 0, ctx_map,
                   tuple(t[1] for t in tables), tuple(t[2] for t in tables))
    tok = bucket_tokens(n, k, m)
    extra = int(st.vcol @ tok[1, : st.vcol.size]) + (int(st.rcol @ tok[3, : st.rcol.size]) if runs else 0)
    return ModelPlan(scheme, cross, ctx_shift, ctx_map, tuple(t[0] for t in tables), enc,
                     int(est) + (extra << COST_FIX))


def estimate_bits(st: SlotStats) -> float:
    """A unit's bits under its own 16-class statistics (bucket entropy plus extra bits), used to
    compare a palette stripe with the slots it replaces (5); on the nonzero counts only (no
    float copies of the 16 x 640 arrays), in few numpy calls (a small image asks it per slot)."""
    return _estimate_alike([st])[0]


def estimate_bits_each(stats: list[SlotStats]) -> list[float]:
    """estimate_bits of each slot of a unit, the same floats, in numpy calls the slots share when
    their statistics have one width and type."""
    buckets, dtype = stats[0].vh.shape[1], stats[0].vh.dtype
    if any(a.shape[1] != buckets or a.dtype != dtype for st in stats for a in (st.vh, st.rh)):
        return [estimate_bits(st) for st in stats]
    return _estimate_alike(stats)


def _estimate_alike(stats: list[SlotStats]) -> list[float]:
    """estimate_bits of slots whose statistics share one width and type: each sum runs over that
    slot's values alone, contiguous, so each float is the one slot's own."""
    buckets = stats[0].vh.shape[1]
    S = len(stats)
    both = np.concatenate([a for st in stats for a in (st.vh, st.rh)], axis=None)  # per slot: vh then rh
    counts = np.count_nonzero(both.reshape(S, -1), axis=1).tolist()
    used = both[both != 0].astype(np.float64)
    ulog = used * np.log2(used)
    rows = both.reshape(S, 2, CLASSES, buckets).sum(axis=3)
    tot = (rows[:, 0] + rows[:, 1]).astype(np.float64)
    tlog = tot * np.log2(np.maximum(tot, 1))
    extra = [0] * S
    if buckets > 256:  # values below 256 carry no extra bits
        extra = (both.reshape(S, 2 * CLASSES, buckets).sum(axis=1, dtype=np.int64) @ _EXTRA_BITS[:buckets]).tolist()
    out, start = [], 0
    for s, count in enumerate(counts):
        ent = float(tlog[s].sum() - ulog[start : start + count].sum())
        out.append(ent + float(extra[s]) if buckets > 256 else ent)
        start += count
    return out


# extra bits of a value in each bucket beyond the bucket's 4 leading bits (0 below 256)
_EXTRA_BITS = np.where(np.arange(BUCKETS) < 256, 0, np.maximum(np.frexp(_REPR_A)[1] - 1, 0) - 4).astype(np.int64)


__all__ = ["ModelEffort", "ModelPlan", "SlotStats", "best_tables", "choose_model", "coded_tables", "effort_of", "estimate_bits",
           "estimate_bits_each", "merge_classes", "model_bits", "partition_classes", "small_slot"]
