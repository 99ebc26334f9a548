/* encode.c: the entropy encoder's kernels (declarations and contracts in imij_kernels.h).
 *
 * Plain C99, no globals, no allocation: the caller passes every buffer. The pure-Python
 * references (imij_plugins/payload/entropy/costs.py) define the results bit for bit.
 */
#include <string.h>

#include "imij_kernels.h"
#include "internal/clones.h"
#include "internal/portable.h"
#include "internal/predictors.h"
#include "internal/runs.h"
#include "internal/simd.h"

#define M_BITS 10
#define RUN_CAP 32768u
#define UNTRIED_P 7

static inline uint32_t mask_of(uint32_t n) { return n >= 32 ? 0xffffffffu : ((1u << n) - 1u); }

/* Planes and residuals come in their narrowest type: esize 1, 2 or 4 bytes per value. */
static inline int esize_ok(uint32_t esize) { return esize == 1 || esize == 2 || esize == 4; }

/* Value i of an esize-byte array. */
static inline uint32_t ld(const void *p, size_t i, uint32_t esize)
{
    if (esize == 1)
        return ((const uint8_t *)p)[i];
    if (esize == 2)
        return ((const uint16_t *)p)[i];
    return ((const uint32_t *)p)[i];
}

/* Values at .. at + count of an esize-byte array as uint32: the array itself when esize is 4,
 * else widened into buf. */
static const uint32_t *widen(uint32_t *restrict buf, const void *src, size_t at, size_t count, uint32_t esize)
{
    size_t i;
    if (esize == 4)
        return (const uint32_t *)src + at;
    if (esize == 1)
        for (i = 0; i < count; i++)
            buf[i] = ((const uint8_t *)src)[at + i];
    else
        for (i = 0; i < count; i++)
            buf[i] = ((const uint16_t *)src)[at + i];
    return buf;
}

/* count uint32 values (each below 2^(8 esize)) stored at .. at + count of an esize-byte array */
static void narrow(void *dst, size_t at, const uint32_t *restrict src, size_t count, uint32_t esize)
{
    size_t i;
    if (esize == 1)
        for (i = 0; i < count; i++)
            ((uint8_t *)dst)[at + i] = (uint8_t)src[i];
    else if (esize == 2)
        for (i = 0; i < count; i++)
            ((uint16_t *)dst)[at + i] = (uint16_t)src[i];
    else
        memcpy((uint32_t *)dst + at, src, count * sizeof(uint32_t));
}

/* Row r of every slot (and row r - 1 when r > 0) as uint32: cur[s][c], with cur[s] - width the
 * row above. buf: 2 * width uint32 per slot (unused when esize is 4). */
static void slot_rows(const void *planes, uint32_t esize, uint32_t nslots, uint32_t width, size_t plane, uint32_t r,
                      uint32_t *buf, const uint32_t **cur)
{
    for (uint32_t s = 0; s < nslots; s++) {
        size_t at = s * plane + (size_t)r * width;
        if (esize == 4) {
            cur[s] = (const uint32_t *)planes + at;
            continue;
        }
        uint32_t *b = buf + (size_t)s * 2 * width;
        if (r)
            widen(b, planes, at - width, width, esize);
        widen(b + width, planes, at, width, esize);
        cur[s] = b + width;
    }
}

/* slot_rows for rows taken in order from 0: row r - 1 is carried over from the previous call's
 * copy of row r, not read again, so the caller may overwrite rows as it goes (residuals in place). */
static void carried_rows(const void *planes, uint32_t esize, uint32_t nslots, uint32_t width, size_t plane,
                         uint32_t r, uint32_t *buf, const uint32_t **cur)
{
    for (uint32_t s = 0; s < nslots; s++) {
        uint32_t *b = buf + (size_t)s * 2 * width;
        if (r)
            memcpy(b, b + width, (size_t)width * sizeof *b);
        const uint32_t *row = widen(b + width, planes, s * plane + (size_t)r * width, width, esize);
        if (row != b + width) /* 32-bit words: widen points at them */
            memcpy(b + width, row, (size_t)width * sizeof *b);
        cur[s] = b + width;
    }
}

/* Do len elements hold a * b * c of them (each at least 1)? Without overflow. */
static inline int holds(size_t len, size_t a, size_t b, size_t c) { return len / a / b >= c; }

/* Do the values of depths[0..nslots) fit esize bytes? */
static int depths_fit(const uint32_t *depths, uint32_t nslots, uint32_t esize)
{
    for (uint32_t s = 0; s < nslots; s++)
        if (depths[s] > 8 * esize)
            return 0;
    return 1;
}

/* sext_n of an n-bit value d (n >= 1), as int64 */
static inline int64_t sx(uint32_t d, uint32_t n)
{
    if (n == 0)
        return 0;
    int64_t h = (int64_t)1 << (n - 1);
    return ((int64_t)d ^ h) - h;
}

/* zigzag of sext_n(d): u = 2s or -2s-1 (< 2^n) */
static inline uint32_t zz(uint32_t d, uint32_t n)
{
    int64_t s = sx(d & mask_of(n), n);
    return (uint32_t)(s >= 0 ? 2 * s : -2 * s - 1);
}

/* The forward decorrelation of residuals (dg, dr, db) -> (r', b') for mode (4 step 2 undone). */
static inline void decor_fwd(uint32_t mode, uint32_t dg, uint32_t dr, uint32_t db, uint32_t n, uint32_t *ro,
                             uint32_t *bo)
{
    uint32_t mask = mask_of(n);
    if (mode == 0) {
        *ro = dr;
        *bo = db;
        return;
    }
    *ro = (dr - dg) & mask;
    if (mode == 1)
        *bo = (db - dg) & mask;
    else if (mode == 2)
        *bo = (db - dr) & mask;
    else {
        int64_t half = (sx(dr, n) + sx(dg, n)) >> 1; /* floor */
        *bo = (uint32_t)((int64_t)db - half) & mask;
    }
}

typedef struct {
    uint32_t w, n, nw, ne;
} nbrs;

/* Neighbours of (r, c) in a plane with lane-local rules; r >= 1. */
static inline nbrs nb_of(const uint32_t *row, const uint32_t *prev, uint32_t c, int first, int last)
{
    nbrs q;
    q.n = prev[c];
    q.w = first ? q.n : row[c - 1];
    q.nw = first ? q.n : prev[c - 1];
    q.ne = last ? q.n : prev[c + 1];
    return q;
}

/* Is predictor p searched on row r? Row 0: 0, or 7 in inter frames; 7..9 only with a reference (2.4, 4). */
static inline int pred_tried(uint32_t p, uint32_t r, uint32_t pred_mask, int inter)
{
    if (p >= 7 && !inter)
        return 0;
    if (r == 0)
        return p == 0 || (p == 7 && (pred_mask >> 7 & 1));
    return (int)(pred_mask >> p & 1);
}

/* Section 4's inter predictors 7..9 from R, RW, RN (edge rules applied by the caller). */
static inline uint32_t pred_ref(uint32_t p, uint32_t w, uint32_t n, uint32_t r, uint32_t rw, uint32_t rn, uint32_t mask)
{
    if (p == 7)
        return r;
    return ((p == 8 ? w : n) + r - (p == 8 ? rw : rn)) & mask;
}


/* ---- the search's fast path: every slot 1..16 bits deep, int32 chunks the compiler vectorizes ---- */

#define CHUNK 256
#define SEG 4096 /* columns whose classes are computed at once */


/* bit_length(zigzag(s)) for |s| < 2^16: the float exponent is exact */
static inline int32_t bl_zz(int32_t s)
{
    uint32_t z = ((uint32_t)s << 1) ^ (uint32_t)(s >> 31);
    union {
        float f;
        uint32_t u;
    } cv;
    cv.f = (float)(int32_t)z;
    int32_t e = (int32_t)(cv.u >> 23) - 126;
    return e > 0 ? e : 0;
}

/* sext_n of an int32 difference, 1 <= n <= 16 */
static inline int32_t sx16(int32_t v, uint32_t sh) { return (int32_t)((uint32_t)v << sh) >> sh; }

/* The differences d[i] = sext(a[i] - b[i]) (sh = 32 - n) of a chunk into d (NULL: not kept) and
 * the sum of their bit_length(zigzag(d)), in one pass. */
static inline int32_t diff_bits(const int32_t *a, const int32_t *b, uint32_t sh, int32_t *d, int count)
{
    int32_t acc = 0;
    if (d)
        for (int i = 0; i < count; i++) {
            d[i] = sx16(a[i] - b[i], sh);
            acc += bl_zz(d[i]);
        }
    else
        for (int i = 0; i < count; i++)
            acc += bl_zz(sx16(a[i] - b[i], sh));
    return acc;
}

/* predictor p over a chunk of neighbour arrays into pr */
static inline void pred_chunk(uint32_t p, const int32_t *w, const int32_t *n, const int32_t *nw, const int32_t *ne,
                              int32_t mask, int32_t *pr, int count)
{
    int i;
    switch (p) {
    case 0:
        for (i = 0; i < count; i++)
            pr[i] = w[i];
        break;
    case 1:
        for (i = 0; i < count; i++)
            pr[i] = n[i];
        break;
    case 2:
        for (i = 0; i < count; i++)
            pr[i] = (w[i] + n[i]) >> 1;
        break;
    case 3:
        for (i = 0; i < count; i++) {
            int32_t lo = w[i] < n[i] ? w[i] : n[i], hi = w[i] < n[i] ? n[i] : w[i];
            int32_t g = w[i] + n[i] - nw[i];
            pr[i] = nw[i] >= hi ? lo : nw[i] <= lo ? hi : g;
        }
        break;
    case 4:
        for (i = 0; i < count; i++)
            pr[i] = (w[i] + n[i] - nw[i]) & mask;
        break;
    case 5:
        for (i = 0; i < count; i++) {
            int32_t b = w[i] + n[i] - nw[i];
            int32_t pa = b - w[i], pb = b - n[i], pc = b - nw[i];
            pa = pa < 0 ? -pa : pa;
            pb = pb < 0 ? -pb : pb;
            pc = pc < 0 ? -pc : pc;
            pr[i] = (pa <= pb && pa <= pc) ? w[i] : pb <= pc ? n[i] : nw[i];
        }
        break;
    default:
        for (i = 0; i < count; i++)
            pr[i] = (w[i] + ne[i]) >> 1;
        break;
    }
}

typedef struct {
    int32_t x[CHUNK], w[CHUNK], n[CHUNK], nw[CHUNK], ne[CHUNK];
} chunk_nb;

/* The columns c = c_first + j * step (j < count) of a row and the row above, with neighbours read
 * as if the row had no lanes (W at c - 1, NE at c + 1, the image's last column's NE is N); the
 * lane edges are mended after. STEP is a constant at each call, so the copies vectorize. */
static inline void gather_plain(const uint32_t *row, const uint32_t *prev, uint32_t c_first, uint32_t step, int count,
                                uint32_t width, chunk_nb *g)
{
    const uint32_t *xr = row + c_first, *nr = prev + c_first;
    int i = 0;
    if (c_first == 0) { /* column 0: no W (the lane-start mend sets it) */
        g->x[0] = (int32_t)xr[0];
        g->n[0] = g->w[0] = g->nw[0] = (int32_t)nr[0];
        i = 1;
    }
    for (int j = i; j < count; j++) {
        size_t o = (size_t)j * step;
        g->x[j] = (int32_t)xr[o];
        g->n[j] = (int32_t)nr[o];
        g->w[j] = (int32_t)xr[o - 1];
        g->nw[j] = (int32_t)nr[o - 1];
    }
    int last_in = c_first + (uint32_t)(count - 1) * step + 1 >= width; /* the chunk ends at the last column */
    int inner = count - last_in;
    for (int j = 0; j < inner; j++)
        g->ne[j] = (int32_t)nr[(size_t)j * step + 1];
    if (last_in)
        g->ne[count - 1] = g->n[count - 1];
}

/* Gather a chunk of sampled columns c = c_first + i * step (i < count) of row r >= 1 of a plane,
 * with 4's lane-local neighbours: at a lane's first column W = NW = N, at its last NE = N. */
static void gather(const uint32_t *row, const uint32_t *prev, uint32_t c_first, uint32_t step, int count, uint32_t lw,
                   uint32_t width, chunk_nb *g)
{
    if (step == 1)
        gather_plain(row, prev, c_first, 1, count, width, g);
    else if (step == 2)
        gather_plain(row, prev, c_first, 2, count, width, g);
    else
        gather_plain(row, prev, c_first, step, count, width, g);
    uint32_t last = c_first + (uint32_t)(count - 1) * step; /* the chunk's last column */
    for (uint32_t c = (c_first + lw - 1) / lw * lw; c <= last; c += lw) /* lane starts */
        if ((c - c_first) % step == 0) {
            uint32_t j = (c - c_first) / step;
            g->w[j] = g->nw[j] = g->n[j];
        }
    for (uint32_t c = (c_first / lw + 1) * lw - 1; c <= last; c += lw) /* lane ends (the last: above) */
        if ((c - c_first) % step == 0)
            g->ne[(c - c_first) / step] = g->n[(c - c_first) / step];
}

/* predictors 7..9 over a chunk: g holds W and N, gr the reference's R, RW and RN (row 0: R only) */
static inline void pred_chunk_ref(uint32_t p, const chunk_nb *g, const chunk_nb *gr, int32_t mask, int32_t *pr, int count)
{
    int i;
    if (p == 7)
        for (i = 0; i < count; i++)
            pr[i] = gr->x[i];
    else if (p == 8)
        for (i = 0; i < count; i++)
            pr[i] = (g->w[i] + gr->x[i] - gr->w[i]) & mask;
    else
        for (i = 0; i < count; i++)
            pr[i] = (g->n[i] + gr->x[i] - gr->n[i]) & mask;
}

IMIJ_CLONES
static void costs_fast(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots, uint32_t width,
                       uint32_t height, uint32_t lanes, const uint32_t *depths, uint32_t decor, uint32_t pred_mask,
                       uint32_t mode_mask, uint32_t row_step, uint32_t col_step, uint32_t *rows, int64_t *costs)
{
    const uint32_t *cur[8];
    size_t plane = (size_t)width * height;
    uint32_t lw = (width + lanes - 1) / lanes;
    uint32_t nc = decor ? 3 : 0;
    int inter = refs != NULL;
    chunk_nb g[8], gr[8]; /* gr: the reference's R (x), RW (w), RN (n) */
    int32_t d[8][CHUNK], t[CHUNK], slot_bits[3] = {0};
    uint32_t sh[8];
    int32_t mk[8];
    for (uint32_t s = 0; s < nslots; s++) {
        sh[s] = 32u - depths[s];
        mk[s] = (int32_t)mask_of(depths[s]);
    }
    uint32_t shc = sh[0];
    for (uint32_t r = 0; r < height; r += row_step) {
        int64_t acc[4][IMIJ_ENC_PREDICTORS];
        memset(acc, 0, sizeof acc);
        slot_rows(planes, esize, nslots, width, plane, r, rows, cur);
        for (uint32_t c_first = 0; c_first < width; c_first += (uint32_t)CHUNK * col_step) {
            uint32_t rest = (width - c_first + col_step - 1) / col_step;
            int count = rest < CHUNK ? (int)rest : CHUNK;
            for (uint32_t s = 0; s < nslots; s++) {
                const uint32_t *row = cur[s];
                const uint32_t *rrow = inter ? refs + s * plane + (size_t)r * width : NULL;
                if (r) {
                    gather(row, row - width, c_first, col_step, count, lw, width, &g[s]);
                    if (inter) /* RW and RN follow W's and N's edge rules (4) */
                        gather(rrow, rrow - width, c_first, col_step, count, lw, width, &gr[s]);
                } else
                    for (int i = 0; i < count; i++) { /* row 0: W with W = 0 at a lane's first column */
                        uint32_t c = c_first + (uint32_t)i * col_step;
                        g[s].x[i] = (int32_t)row[c];
                        g[s].w[i] = c % lw ? (int32_t)row[c - 1] : 0;
                        if (inter)
                            gr[s].x[i] = (int32_t)rrow[c];
                    }
            }
            for (uint32_t p = 0; p < IMIJ_ENC_PREDICTORS; p++) {
                if (!pred_tried(p, r, pred_mask, inter))
                    continue;
                int64_t common = 0;
                for (uint32_t s = 0; s < nslots; s++) {
                    int32_t *ds = d[s];
                    if (p >= 7)
                        pred_chunk_ref(p, &g[s], &gr[s], mk[s], t, count);
                    else if (r)
                        pred_chunk(p, g[s].w, g[s].n, g[s].nw, g[s].ne, mk[s], t, count);
                    else
                        memcpy(t, g[s].w, (size_t)count * sizeof(int32_t));
                    int32_t bits = diff_bits(g[s].x, t, sh[s], ds, count);
                    if (s == 0 || s >= nc)
                        common += bits;
                    else
                        slot_bits[s] = bits; /* what mode 0 adds (the others code differences) */
                }
                if (!nc) {
                    acc[0][p] += common;
                    continue;
                }
                if (mode_mask & 1)
                    acc[0][p] += common + slot_bits[1] + slot_bits[2];
                if (mode_mask & 14) {
                    int64_t rg = common + diff_bits(d[1], d[0], shc, NULL, count);
                    if (mode_mask & 2)
                        acc[1][p] += rg + diff_bits(d[2], d[0], shc, NULL, count);
                    if (mode_mask & 4)
                        acc[2][p] += rg + diff_bits(d[2], d[1], shc, NULL, count);
                    if (mode_mask & 8) {
                        for (int i = 0; i < count; i++)
                            t[i] = (d[1][i] + d[0][i]) >> 1;
                        acc[3][p] += rg + diff_bits(d[2], t, shc, NULL, count);
                    }
                }
            }
        }
        for (uint32_t mode = 0; mode < 4; mode++) {
            if (!(mode_mask >> mode & 1))
                continue;
            for (uint32_t p = 0; p < IMIJ_ENC_PREDICTORS; p++)
                if (pred_tried(p, r, pred_mask, inter))
                    costs[((size_t)mode * height + r) * IMIJ_ENC_PREDICTORS + p] = acc[mode][p];
        }
    }
}

/* R, RW, RN of (r, c) in a reference plane, with W's and N's edge rules (4) */
static inline void ref_of(const uint32_t *ref, uint32_t width, uint32_t r, uint32_t c, int first, uint32_t *rr,
                          uint32_t *rw, uint32_t *rn)
{
    const uint32_t *row = ref + (size_t)r * width;
    *rr = row[c];
    *rn = r ? (row - width)[c] : *rr;
    *rw = first ? *rn : row[c - 1];
}

static void costs_generic(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots, uint32_t width,
                          uint32_t height, uint32_t lanes, const uint32_t *depths, uint32_t decor, uint32_t pred_mask,
                          uint32_t mode_mask, uint32_t row_step, uint32_t col_step, uint32_t *rows, int64_t *costs)
{
    const uint32_t *cur[8];
    int inter = refs != NULL;
    size_t plane = (size_t)width * height;
    uint32_t lw = (width + lanes - 1) / lanes;
    uint32_t masks[8];
    for (uint32_t s = 0; s < nslots; s++)
        masks[s] = mask_of(depths[s]);
    uint32_t nc = decor ? 3 : 0; /* slots handled as the colour triple */
    for (uint32_t r = 0; r < height; r += row_step) {
        slot_rows(planes, esize, nslots, width, plane, r, rows, cur);
        for (uint32_t p = 0; p < IMIJ_ENC_PREDICTORS; p++) {
            if (!pred_tried(p, r, pred_mask, inter))
                continue;
            /* per mode cost: G + other slots common; R, B per mode */
            uint64_t common = 0, cr0 = 0, cb0 = 0, crg = 0, cbg = 0, cbr = 0, cba = 0;
            for (uint32_t c = 0; c < width; c += col_step) {
                uint32_t l = c / lw, x = c - l * lw;
                uint32_t lane_w = (l + 1) * lw <= width ? lw : width - l * lw;
                int first = x == 0, last = x + 1 == lane_w;
                uint32_t d[8];
                for (uint32_t s = 0; s < nslots; s++) {
                    const uint32_t *row = cur[s];
                    uint32_t pr;
                    if (p >= 7) {
                        const uint32_t *ref = refs + s * plane;
                        uint32_t rr, rw, rn;
                        ref_of(ref, width, r, c, first, &rr, &rw, &rn);
                        uint32_t pn = r ? (row - width)[c] : 0;
                        pr = pred_ref(p, first ? pn : row[c - 1], pn, rr, rw, rn, masks[s]);
                    } else if (r == 0)
                        pr = first ? 0 : row[c - 1];
                    else {
                        nbrs q = nb_of(row, row - width, c, first, last);
                        pr = intra_predict(p, q.w, q.n, q.nw, q.ne, masks[s]);
                    }
                    d[s] = (row[c] - pr) & masks[s];
                    if (s >= nc || s == 0)
                        common += imij_bitlen32(zz(d[s], depths[s]));
                }
                if (nc) {
                    uint32_t n = depths[0], mk = masks[0];
                    if (mode_mask & 1) {
                        cr0 += imij_bitlen32(zz(d[1], n));
                        cb0 += imij_bitlen32(zz(d[2], n));
                    }
                    if (mode_mask & 14) {
                        crg += imij_bitlen32(zz((d[1] - d[0]) & mk, n));
                        if (mode_mask & 2)
                            cbg += imij_bitlen32(zz((d[2] - d[0]) & mk, n));
                        if (mode_mask & 4)
                            cbr += imij_bitlen32(zz((d[2] - d[1]) & mk, n));
                        if (mode_mask & 8) {
                            int64_t half = (sx(d[1], n) + sx(d[0], n)) >> 1;
                            cba += imij_bitlen32(zz((uint32_t)((int64_t)d[2] - half) & mk, n));
                        }
                    }
                }
            }
            uint64_t per[4] = {common + cr0 + cb0, common + crg + cbg, common + crg + cbr, common + crg + cba};
            for (uint32_t mode = 0; mode < 4; mode++)
                if (mode_mask >> mode & 1)
                    costs[((size_t)mode * height + r) * IMIJ_ENC_PREDICTORS + p] = (int64_t)per[mode];
        }
    }
}

int imij_enc_costs(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots, uint32_t width,
                   uint32_t height, uint32_t lanes, const uint32_t *depths, uint32_t decor, uint32_t pred_mask,
                   uint32_t mode_mask, uint32_t row_step, uint32_t col_step, uint32_t *rows, size_t rows_len,
                   int64_t *costs, size_t costs_len)
{
    if (!width || !height || lanes < 1 || lanes > 16 || nslots < 1 || nslots > 8 || !row_step || !col_step ||
        !esize_ok(esize))
        return IMIJ_E_ARGS;
    if (decor && (nslots < 3 || depths[0] != depths[1] || depths[0] != depths[2]))
        return IMIJ_E_ARGS;
    if (!holds(rows_len, 2, nslots, width) || !holds(costs_len, 4, IMIJ_ENC_PREDICTORS, height))
        return IMIJ_E_SIZE;
    if (!decor)
        mode_mask &= 1u;
    int fast = 1;
    for (uint32_t s = 0; s < nslots; s++)
        if (depths[s] < 1 || depths[s] > 16)
            fast = 0;
    if (fast)
        costs_fast(planes, esize, refs, nslots, width, height, lanes, depths, decor, pred_mask, mode_mask, row_step,
                   col_step, rows, costs);
    else
        costs_generic(planes, esize, refs, nslots, width, height, lanes, depths, decor, pred_mask, mode_mask, row_step,
                      col_step, rows, costs);
    return 0;
}

/* One row of residuals of every slot (depths above 16), section 4 run forward, into d (nslots
 * rows of width): prediction, the mode's decorrelation, zigzag. */
static void residual_row_generic(const uint32_t *const *cur, const uint32_t *refs, uint32_t nslots, uint32_t width,
                                 size_t plane, uint32_t r, uint32_t lanes, const uint32_t *depths, uint32_t p,
                                 uint32_t mode, uint32_t *d)
{
    uint32_t lw = (width + lanes - 1) / lanes;
    for (uint32_t s = 0; s < nslots; s++) {
        const uint32_t *row = cur[s];
        uint32_t *out = d + (size_t)s * width;
        uint32_t mask = mask_of(depths[s]);
        for (uint32_t c0 = 0; c0 < width; c0 += lw) {
            uint32_t lane_w = c0 + lw <= width ? lw : width - c0;
            if (p >= 7) {
                const uint32_t *ref = refs + s * plane;
                for (uint32_t x = 0; x < lane_w; x++) {
                    uint32_t c = c0 + x, rr, rw, rn;
                    ref_of(ref, width, r, c, x == 0, &rr, &rw, &rn);
                    uint32_t pn = r ? (row - width)[c] : 0;
                    out[c] = (row[c] - pred_ref(p, x ? row[c - 1] : pn, pn, rr, rw, rn, mask)) & mask;
                }
                continue;
            }
            if (r == 0) {
                out[c0] = row[c0] & mask;
                for (uint32_t x = 1; x < lane_w; x++)
                    out[c0 + x] = (row[c0 + x] - row[c0 + x - 1]) & mask;
                continue;
            }
            const uint32_t *prev = row - width;
            for (uint32_t x = 0; x < lane_w; x++) {
                uint32_t c = c0 + x;
                nbrs q = nb_of(row, prev, c, x == 0, x + 1 == lane_w);
                out[c] = (row[c] - intra_predict(p, q.w, q.n, q.nw, q.ne, mask)) & mask;
            }
        }
    }
    if (mode)
        for (uint32_t c = 0; c < width; c++)
            decor_fwd(mode, d[c], d[width + c], d[2 * (size_t)width + c], depths[0], &d[width + c],
                      &d[2 * (size_t)width + c]);
    for (uint32_t s = 0; s < nslots; s++)
        for (uint32_t c = 0; c < width; c++)
            d[(size_t)s * width + c] = zz(d[(size_t)s * width + c], depths[s]);
}

/* Residuals d (before decorrelation) of columns c_first .. c_first + count of row r >= 1 under
 * intra predictor p (0..6): predicted straight from the rows as if they had no lanes, then the
 * lane edges (4: W = NW = N at a lane's first column, NE = N at its last) predicted again. */
static inline void residual_chunk(const uint32_t *row, const uint32_t *prev, uint32_t c_first, int count, uint32_t lw,
                                  uint32_t width, uint32_t p, int32_t mk, int32_t *t, int32_t *d)
{
    const int32_t *xr = (const int32_t *)row + c_first, *nr = (const int32_t *)prev + c_first;
    int i0 = c_first == 0;                           /* column 0 has no W: mended below */
    int i1 = count - (c_first + (uint32_t)count == width); /* the last column has no NE: mended below */
    if (i1 > i0)
        pred_chunk(p, xr - 1 + i0, nr + i0, nr - 1 + i0, nr + 1 + i0, mk, t + i0, i1 - i0);
    for (int i = i0; i < i1; i++)
        d[i] = (xr[i] - t[i]) & mk;
    uint32_t end = c_first + (uint32_t)count;
    for (uint32_t l0 = c_first / lw * lw; l0 < end; l0 += lw) { /* the lanes meeting the chunk */
        uint32_t lane_end = l0 + lw < width ? l0 + lw : width; /* exclusive */
        uint32_t edge[2] = {l0, lane_end - 1};
        for (int e = 0; e < 2; e++) {
            uint32_t c = edge[e];
            if (c < c_first || c >= end)
                continue;
            nbrs q = nb_of(row, prev, c, c == l0, c + 1 == lane_end);
            d[c - c_first] = (int32_t)((row[c] - intra_predict(p, q.w, q.n, q.nw, q.ne, (uint32_t)mk)) & (uint32_t)mk);
        }
    }
}

/* One row of residuals of every slot (depths 1..16) with int32 chunks, into out as residual_row_generic. */
IMIJ_CLONES
static void residual_row_fast(const uint32_t *const *cur, const uint32_t *refs, uint32_t nslots, uint32_t width,
                              size_t plane, uint32_t r, uint32_t lanes, const uint32_t *depths, uint32_t p,
                              uint32_t mode, uint32_t *out)
{
    uint32_t lw = (width + lanes - 1) / lanes;
    chunk_nb g, gr;
    int32_t d[8][CHUNK], t[CHUNK];
    for (uint32_t c_first = 0; c_first < width; c_first += CHUNK) {
        int count = width - c_first < CHUNK ? (int)(width - c_first) : CHUNK;
        for (uint32_t s = 0; s < nslots; s++) {
            const uint32_t *row = cur[s];
            int32_t mk = (int32_t)mask_of(depths[s]);
            if (p >= 7) {
                const uint32_t *rrow = refs + s * plane + (size_t)r * width;
                if (r) {
                    gather(row, row - width, c_first, 1, count, lw, width, &g);
                    gather(rrow, rrow - width, c_first, 1, count, lw, width, &gr);
                } else
                    for (int i = 0; i < count; i++) {
                        g.x[i] = (int32_t)row[c_first + (uint32_t)i];
                        gr.x[i] = (int32_t)rrow[c_first + (uint32_t)i];
                    }
                pred_chunk_ref(p, &g, &gr, mk, t, count);
                for (int i = 0; i < count; i++)
                    d[s][i] = (g.x[i] - t[i]) & mk;
            } else if (r) {
                residual_chunk(row, row - width, c_first, count, lw, width, p, mk, t, d[s]);
            } else {
                for (int i = 0; i < count; i++) {
                    uint32_t c = c_first + (uint32_t)i;
                    d[s][i] = (int32_t)((row[c] - (c % lw ? row[c - 1] : 0u)) & (uint32_t)mk);
                }
            }
        }
        if (mode) {
            uint32_t sh = 32u - depths[0];
            int32_t mk = (int32_t)mask_of(depths[0]);
            for (int i = 0; i < count; i++) {
                int32_t g0 = d[0][i], r0 = d[1][i], b0 = d[2][i];
                d[1][i] = (r0 - g0) & mk;
                if (mode == 1)
                    d[2][i] = (b0 - g0) & mk;
                else if (mode == 2)
                    d[2][i] = (b0 - r0) & mk;
                else
                    d[2][i] = (b0 - ((sx16(r0, sh) + sx16(g0, sh)) >> 1)) & mk;
            }
        }
        for (uint32_t s = 0; s < nslots; s++) {
            uint32_t sh = 32u - depths[s];
            uint32_t *o = out + (size_t)s * width + c_first;
            for (int i = 0; i < count; i++) {
                int32_t v = sx16(d[s][i], sh);
                o[i] = ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
            }
        }
    }
}

int imij_enc_residuals(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots, uint32_t width,
                       uint32_t height, uint32_t lanes, const uint32_t *depths, const uint8_t *preds, uint32_t mode,
                       uint32_t *rows, size_t rows_len, void *u, size_t u_len, uint32_t u_esize)
{
    if (!width || !height || lanes < 1 || lanes > 16 || nslots < 1 || nslots > 8 || mode > 3 || !esize_ok(esize) ||
        !esize_ok(u_esize) || !depths_fit(depths, nslots, u_esize))
        return IMIJ_E_ARGS;
    if (mode && (nslots < 3 || depths[0] != depths[1] || depths[0] != depths[2]))
        return IMIJ_E_ARGS;
    for (uint32_t r = 0; r < height; r++) /* 2.4 / 4: 0..6, 7..9 with a reference; row 0: 0 or 7 */
        if (preds[r] > (refs ? 9 : 6) || (r == 0 && preds[r] != 0 && preds[r] != 7))
            return IMIJ_E_ARGS;
    if (!holds(rows_len, 3, nslots, width) || !holds(u_len / u_esize, nslots, width, height))
        return IMIJ_E_SIZE;
    int fast = 1;
    for (uint32_t s = 0; s < nslots; s++)
        if (depths[s] < 1 || depths[s] > 16)
            fast = 0;
    size_t plane = (size_t)width * height;
    const uint32_t *cur[8];
    uint32_t *d = rows + 2 * (size_t)nslots * width;
    for (uint32_t r = 0; r < height; r++) {
        carried_rows(planes, esize, nslots, width, plane, r, rows, cur); /* u may be the planes */
        if (fast)
            residual_row_fast(cur, refs, nslots, width, plane, r, lanes, depths, preds[r], mode, d);
        else
            residual_row_generic(cur, refs, nslots, width, plane, r, lanes, depths, preds[r], mode, d);
        for (uint32_t s = 0; s < nslots; s++)
            narrow(u, s * plane + (size_t)r * width, d + (size_t)s * width, width, u_esize);
    }
    return 0;
}

/* 2.6: q = sign(e) * floor((|e| + delta) / (2 delta + 1)) */
static inline int64_t quantize(int64_t e, int64_t delta)
{
    int64_t q = ((e < 0 ? -e : e) + delta) / (2 * delta + 1);
    return e < 0 ? -q : q;
}

/* One row of every slot reconstructed with predictor p: rec (nslots * width) and the residual d
 * (mod 2^n) per slot. prev: the reconstructed row above (NULL on row 0). */
static void near_row(const uint32_t *planes, size_t plane, uint32_t nslots, uint32_t width, uint32_t r, uint32_t lw,
                     const uint32_t *depths, const uint32_t *deltas, uint32_t p, const uint32_t *recon,
                     uint32_t *rec, uint32_t *d)
{
    for (uint32_t s = 0; s < nslots; s++) {
        const uint32_t *src = planes + s * plane + (size_t)r * width;
        const uint32_t *prev = r ? recon + s * plane + (size_t)(r - 1) * width : NULL;
        uint32_t *row = rec + (size_t)s * width, *dd = d + (size_t)s * width;
        uint32_t mask = mask_of(depths[s]);
        int64_t delta = deltas[s], step = 2 * delta + 1, top = mask;
        for (uint32_t c0 = 0; c0 < width; c0 += lw) {
            uint32_t lane_w = c0 + lw <= width ? lw : width - c0;
            for (uint32_t x = 0; x < lane_w; x++) {
                uint32_t c = c0 + x, pr;
                if (!prev)
                    pr = x ? row[c - 1] : 0;
                else {
                    nbrs q = nb_of(row, prev, c, x == 0, x + 1 == lane_w);
                    pr = intra_predict(p, q.w, q.n, q.nw, q.ne, mask);
                }
                if (delta) {
                    int64_t q = quantize((int64_t)src[c] - pr, delta);
                    int64_t v = (int64_t)pr + q * step;
                    row[c] = (uint32_t)(v < 0 ? 0 : v > top ? top : v);
                    dd[c] = (uint32_t)q & mask;
                } else {
                    row[c] = src[c];
                    dd[c] = (src[c] - pr) & mask;
                }
            }
        }
    }
}

static uint64_t near_cost(const uint32_t *d, uint32_t nslots, uint32_t width, const uint32_t *depths, uint32_t decor,
                          uint32_t mode)
{
    uint64_t cost = 0;
    for (uint32_t c = 0; c < width; c++) {
        for (uint32_t s = 0; s < nslots; s++) {
            uint32_t v = d[(size_t)s * width + c];
            if (decor && mode && (s == 1 || s == 2)) {
                uint32_t ro, bo;
                decor_fwd(mode, d[c], d[width + c], d[2 * (size_t)width + c], depths[0], &ro, &bo);
                v = s == 1 ? ro : bo;
            }
            cost += imij_bitlen32(zz(v, depths[s]));
        }
    }
    return cost;
}

int imij_enc_near(const uint32_t *planes, uint32_t nslots, uint32_t width, uint32_t height, uint32_t lanes,
                  const uint32_t *depths, const uint32_t *deltas, uint32_t decor, uint32_t pred_mask,
                  uint32_t mode_mask, uint32_t fixed, uint8_t *preds, size_t preds_len, uint32_t *mode, uint32_t *u,
                  size_t u_len, uint32_t *recon, size_t recon_len, uint32_t *rows3, size_t rows3_len)
{
    if (!width || !height || lanes < 1 || lanes > 16 || nslots < 1 || nslots > 8)
        return IMIJ_E_ARGS;
    if (decor && (nslots < 3 || depths[0] != depths[1] || depths[0] != depths[2]))
        return IMIJ_E_ARGS;
    if (preds_len < height || !holds(u_len, nslots, width, height) || !holds(recon_len, nslots, width, height) ||
        (uint64_t)rows3_len < 3 * (uint64_t)nslots * width + ((uint64_t)height + 3) / 4)
        return IMIJ_E_SIZE;
    if (!decor)
        mode_mask &= 1u;
    size_t plane = (size_t)width * height, row = (size_t)nslots * width;
    uint32_t lw = (width + lanes - 1) / lanes;
    uint32_t *cand_rec = rows3, *cand_d = rows3 + row, *best_rec = rows3 + 2 * row;
    if (!fixed) {
        uint64_t best_total = 0;
        int have = 0;
        uint8_t *choice = (uint8_t *)(rows3 + 3 * row); /* height bytes after the rows */
        for (uint32_t md = 0; md < 4; md++) {
            if (!(mode_mask >> md & 1))
                continue;
            uint64_t total = 0;
            for (uint32_t r = 0; r < height; r++) {
                uint64_t best = 0;
                uint32_t bp = 0;
                int found = 0;
                for (uint32_t p = 0; p < 7; p++) {
                    if (r == 0 ? p != 0 : !(pred_mask >> p & 1))
                        continue;
                    near_row(planes, plane, nslots, width, r, lw, depths, deltas, p, recon, cand_rec, cand_d);
                    uint64_t cost = near_cost(cand_d, nslots, width, depths, decor, md);
                    if (!found || cost < best) {
                        found = 1;
                        best = cost;
                        bp = p;
                        memcpy(best_rec, cand_rec, row * sizeof(uint32_t));
                    }
                }
                if (!found)
                    return IMIJ_E_ARGS;
                total += best;
                choice[r] = (uint8_t)bp;
                for (uint32_t s = 0; s < nslots; s++)
                    memcpy(recon + s * plane + (size_t)r * width, best_rec + (size_t)s * width,
                           width * sizeof(uint32_t));
            }
            if (!have || total < best_total) {
                have = 1;
                best_total = total;
                *mode = md;
                memcpy(preds, choice, height);
            }
        }
        if (!have)
            return IMIJ_E_ARGS;
    }
    if (*mode > 3 || (*mode && !decor))
        return IMIJ_E_ARGS;
    for (uint32_t r = 0; r < height; r++) {
        if (preds[r] > 6 || (r == 0 && preds[r] != 0))
            return IMIJ_E_ARGS;
        near_row(planes, plane, nslots, width, r, lw, depths, deltas, preds[r], recon, cand_rec, cand_d);
        for (uint32_t s = 0; s < nslots; s++) {
            memcpy(recon + s * plane + (size_t)r * width, cand_rec + (size_t)s * width, width * sizeof(uint32_t));
            for (uint32_t c = 0; c < width; c++) {
                uint32_t v = cand_d[(size_t)s * width + c];
                if (*mode && (s == 1 || s == 2)) {
                    uint32_t ro, bo;
                    decor_fwd(*mode, cand_d[c], cand_d[width + c], cand_d[2 * (size_t)width + c], depths[0], &ro, &bo);
                    v = s == 1 ? ro : bo;
                }
                u[s * plane + (size_t)r * width + c] = zz(v, depths[s]);
            }
        }
    }
    return 0;
}

static inline uint32_t bucket(uint32_t u)
{
    if (u < 256)
        return u;
    uint32_t msb = 31u - imij_clz32(u);
    return 256u + (msb - 8u) * 16u + ((u >> (msb - 4u)) & 15u);
}

static inline uint32_t tval(uint32_t v, uint32_t shift)
{
    uint32_t t = v >> shift;
    return t > 65536u ? 65536u : t;
}

/* 3.2: may the position ur_c (lane column x) start a run token of at least run_min (0: no runs)
 * zeros, judged within its row? Its value and the next run_min - 1 are 0, or every value to the
 * lane's end is (zeros_ahead then decides across rows). The values are ORed without branching on
 * each, so the token loops branch only on the rare candidates. */
static inline int run_candidate(const uint32_t *ur_c, uint32_t x, uint32_t lane_w, uint32_t run_min)
{
    if (!run_min || ur_c[0])
        return 0;
    if (run_min == 4 && x + 4 <= lane_w) /* the encoder's run_min, unrolled */
        return !(ur_c[1] | ur_c[2] | ur_c[3]);
    uint32_t span = x + run_min <= lane_w ? run_min : lane_w - x, acc = 0;
    for (uint32_t j = 1; j < span; j++)
        acc |= ur_c[j];
    return acc == 0;
}

/* Zero values from index at on among the next n of an esize-byte array: 8 bytes at a time. */
static uint32_t zero_span(const void *u, uint32_t esize, size_t at, uint32_t n)
{
    const uint8_t *p = (const uint8_t *)u + at * esize;
    size_t bytes = (size_t)n * esize, i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w)
            break;
    }
    while (i < bytes && !p[i])
        i++;
    return (uint32_t)(i >> (esize >> 1)); /* esize 1, 2, 4: shifts 0, 1, 2 */
}

/* Zero positions from (r, x) on in lane order within the lane (columns c0 .. c0 + lane_w), at
 * most `limit`. Out of line: only run candidates need it, and the token loops keep their
 * registers. */
static IMIJ_NOINLINE uint32_t zeros_ahead(const void *u, uint32_t esize, uint32_t width, uint32_t height,
                                                      uint32_t c0, uint32_t lane_w, uint32_t r, uint32_t x, uint32_t limit)
{
    uint32_t count = 0;
    while (count < limit) { /* the rest of the lane's row, then the lane's next rows */
        uint32_t n = lane_w - x < limit - count ? lane_w - x : limit - count;
        uint32_t z = zero_span(u, esize, (size_t)r * width + c0 + x, n);
        count += z;
        if (z < n || count == limit || ++r == height)
            break;
        x = 0;
    }
    return count;
}

static inline uint32_t cls_of(uint64_t sum)
{
    uint32_t c = imij_bitlen64(sum);
    return c > 15 ? 15 : c;
}

/* min(bit_length(sum), 15) of each of count sums below 2^31: the float exponent is exact */
static inline void float_classes(const uint32_t *restrict sums, uint32_t count, uint8_t *restrict cls)
{
    for (uint32_t i = 0; i < count; i++) {
        union {
            float f;
            uint32_t u;
        } cv;
        cv.f = (float)(int32_t)sums[i];
        int32_t e = (int32_t)(cv.u >> 23) - 126;
        e = e < 0 ? 0 : e;
        cls[i] = (uint8_t)(e > 15 ? 15 : e);
    }
}

#if IMIJ_ENT_AVX2
/* float_classes of 32 sums (four vectors of eight): their float exponents less 126, packed to
 * bytes with saturation (a sum of 0 gives 0) and capped at 15, in order. */
static inline AVX2_FN __m256i classes32(__m256i s0, __m256i s1, __m256i s2, __m256i s3)
{
    const __m256i bias = _mm256_set1_epi16(126), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i e0 = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(s0)), 23);
    __m256i e1 = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(s1)), 23);
    __m256i e2 = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(s2)), 23);
    __m256i e3 = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(s3)), 23);
    __m256i lo = _mm256_sub_epi16(_mm256_packus_epi32(e0, e1), bias);
    __m256i hi = _mm256_sub_epi16(_mm256_packus_epi32(e2, e3), bias);
    __m256i b = _mm256_min_epu8(_mm256_packus_epi16(lo, hi), _mm256_set1_epi8(15));
    return _mm256_permutevar8x32_epi32(b, order); /* the packs interleave the 128-bit halves */
}

/* row_classes' fast path for positions i .. i + 32: the sums w + n (below 2^18), their classes into
 * plain (NULL: not wanted), then with u0 added (u0 NULL: none) into cls. */
static inline AVX2_FN void classes_at(const uint32_t *w, const uint32_t *n, const uint32_t *u0, uint32_t i,
                                      uint8_t *cls, uint8_t *plain)
{
    __m256i s[4];
    for (int k = 0; k < 4; k++)
        s[k] = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(w + i + 8 * k)),
                                _mm256_loadu_si256((const __m256i *)(n + i + 8 * k)));
    if (plain)
        _mm256_storeu_si256((__m256i *)(plain + i), classes32(s[0], s[1], s[2], s[3]));
    if (u0)
        for (int k = 0; k < 4; k++)
            s[k] = _mm256_add_epi32(s[k], _mm256_loadu_si256((const __m256i *)(u0 + i + 8 * k)));
    _mm256_storeu_si256((__m256i *)(cls + i), classes32(s[0], s[1], s[2], s[3]));
}

/* classes_at over positions 0 .. count (at least 32), 32 at a time, the last 32 again where count
 * is not a multiple (the same classes: rewriting them is harmless). */
static IMIJ_NOINLINE AVX2_FN void fast_classes_avx2(const uint32_t *w, const uint32_t *n, const uint32_t *u0,
                                                    uint32_t count, uint8_t *cls, uint8_t *plain)
{
    for (uint32_t i = 0; i + 32 <= count; i += 32)
        classes_at(w, n, u0, i, cls, plain);
    if (count % 32)
        classes_at(w, n, u0, count - 32, cls, plain);
}
#endif

/* 3.1: the class of columns c_first .. c_first + count of row r (lane-local neighbours), plus
 * slot 0's T(u0) when u0r != NULL, into cls[0..count); plain (NULL: not wanted) receives the
 * classes without T(u0) (the statistics count both). fast: ctx_shift 0 and every u below 2^16
 * (so T(v) = v and the sums are exact floats). */
IMIJ_CLONES
static void row_classes(const uint32_t *restrict ur, const uint32_t *restrict up, const uint32_t *restrict u0r,
                        uint32_t r, uint32_t c_first, uint32_t count, uint32_t lw, uint32_t width, uint32_t sh, int fast,
                        uint8_t *restrict cls, uint8_t *restrict plain, uint32_t *restrict tmp)
{
    uint32_t first_lane = (c_first + lw - 1) / lw * lw; /* the first lane start at or after c_first */
#if IMIJ_ENT_AVX2
    if (fast && count >= (c_first == 0) + 32u && imij_entropy_simd(-1) >= 1) {
        /* every column from its west and north neighbours (row 0: twice the west), then the lane
         * starts (column 0 among them) apart; fewer than 32 columns take the scalar path below */
        uint32_t i = c_first == 0, last = c_first + count;
        const uint32_t *w = ur + c_first - 1, *n = r ? up + c_first : w, *u0 = u0r ? u0r + c_first : NULL;
        fast_classes_avx2(w + i, n + i, u0 ? u0 + i : NULL, count - i, cls + i, plain ? plain + i : NULL);
        for (uint32_t c = first_lane; c < last; c += lw) {
            uint32_t sum = r ? 2 * up[c] : 0;
            if (plain)
                plain[c - c_first] = (uint8_t)cls_of(sum);
            sum += u0r ? u0r[c] : 0;
            cls[c - c_first] = (uint8_t)cls_of(sum);
        }
        return;
    }
#endif
    if (fast) {
        const uint32_t *w = ur + c_first - 1, *n = up + c_first;
        uint32_t i = 0;
        if (c_first == 0) { /* column 0 starts lane 0 */
            tmp[0] = r ? 2 * n[0] : 0;
            i = 1;
        }
        if (r)
            for (; i < count; i++)
                tmp[i] = w[i] + n[i];
        else
            for (; i < count; i++)
                tmp[i] = 2 * w[i];
        for (uint32_t c = first_lane; c < c_first + count; c += lw)
            tmp[c - c_first] = r ? 2 * up[c] : 0;
        if (plain)
            float_classes(tmp, count, plain);
        if (u0r)
            for (i = 0; i < count; i++)
                tmp[i] += u0r[c_first + i];
        float_classes(tmp, count, cls);
        return;
    }
    (void)width;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t c = c_first + i, x = c % lw;
        uint64_t sum;
        if (x && r)
            sum = (uint64_t)tval(ur[c - 1], sh) + tval(up[c], sh);
        else if (x)
            sum = 2 * (uint64_t)tval(ur[c - 1], sh);
        else if (r)
            sum = 2 * (uint64_t)tval(up[c], sh);
        else
            sum = 0;
        if (plain)
            plain[i] = (uint8_t)cls_of(sum);
        if (u0r)
            sum += tval(u0r[c], sh);
        cls[i] = (uint8_t)cls_of(sum);
    }
}

/* The model cost of one candidate row r >= 1 of every slot (imij_enc_model_preds): each
 * position's bucket cost in its context, classes from the row and the chosen row above. */
IMIJ_CLONES
static uint64_t row_model_cost(const uint32_t *cand, const uint32_t *up, uint32_t nslots, uint32_t width, uint32_t lw,
                               const uint32_t *bucket_costs, const uint8_t *ctx_maps, const uint8_t *cross,
                               uint32_t *tmp, uint8_t *cls)
{
    uint64_t total = 0;
    for (uint32_t s = 0; s < nslots; s++) {
        const uint32_t *ur = cand + (size_t)s * width;
        row_classes(ur, up + (size_t)s * width, cross[s] ? cand : NULL, 1, 0, width, lw, width, 0, 1, cls, NULL, tmp);
        const uint8_t *cm = ctx_maps + (size_t)s * IMIJ_ENC_CLASSES;
        const uint32_t *bc = bucket_costs + (size_t)s * 4 * IMIJ_ENC_BUCKETS;
        for (uint32_t c = 0; c < width; c++)
            total += bc[(size_t)cm[cls[c]] * IMIJ_ENC_BUCKETS + bucket(ur[c])];
    }
    return total;
}

int imij_enc_model_preds(const void *planes, uint32_t esize, uint32_t nslots, uint32_t width, uint32_t height,
                         uint32_t lanes, const uint32_t *depths, uint32_t mode, uint32_t pred_mask,
                         const uint32_t *bucket_costs, size_t costs_len, const uint8_t *ctx_maps, const uint8_t *cross,
                         uint32_t *rows, size_t rows_len, uint8_t *preds, size_t preds_len)
{
    if (!width || !height || lanes < 1 || lanes > 16 || nslots < 1 || nslots > 8 || mode > 3 || !esize_ok(esize) ||
        !(pred_mask & 0x7F) || (pred_mask & ~0x7Fu))
        return IMIJ_E_ARGS;
    if (mode && (nslots < 3 || depths[0] != depths[1] || depths[0] != depths[2]))
        return IMIJ_E_ARGS;
    for (uint32_t s = 0; s < nslots; s++) {
        if (depths[s] < 1 || depths[s] > 16 || cross[s] > 1)
            return IMIJ_E_ARGS;
        for (uint32_t k = 0; k < IMIJ_ENC_CLASSES; k++)
            if (ctx_maps[s * IMIJ_ENC_CLASSES + k] > 3)
                return IMIJ_E_ARGS;
    }
    if (!holds(rows_len, 5 * nslots + 2, width, 1) || !holds(costs_len, nslots, 4, IMIJ_ENC_BUCKETS) ||
        preds_len < height)
        return IMIJ_E_SIZE;
    size_t plane = (size_t)width * height, row = (size_t)nslots * width;
    uint32_t lw = (width + lanes - 1) / lanes;
    const uint32_t *cur[8];
    uint32_t *up = rows + 2 * row, *cand = up + row, *best = cand + row, *tmp = best + row;
    uint8_t *cls = (uint8_t *)(tmp + width);
    slot_rows(planes, esize, nslots, width, plane, 0, rows, cur);
    residual_row_fast(cur, NULL, nslots, width, plane, 0, lanes, depths, 0, mode, up); /* 2.4: row 0 is W */
    preds[0] = 0;
    for (uint32_t r = 1; r < height; r++) {
        slot_rows(planes, esize, nslots, width, plane, r, rows, cur);
        uint64_t low = UINT64_MAX;
        uint32_t chosen = 0;
        for (uint32_t p = 0; p < 7; p++) {
            if (!(pred_mask >> p & 1))
                continue;
            residual_row_fast(cur, NULL, nslots, width, plane, r, lanes, depths, p, mode, cand);
            uint64_t cost = row_model_cost(cand, up, nslots, width, lw, bucket_costs, ctx_maps, cross, tmp, cls);
            if (cost < low) { /* ties: the lowest id */
                uint32_t *t = best;
                best = cand;
                cand = t;
                low = cost;
                chosen = p;
            }
        }
        preds[r] = (uint8_t)chosen;
        uint32_t *t = up;
        up = best;
        best = t;
    }
    return 0;
}

/* every value of an esize-byte array (NULL: none) below 2^16 */
static int below16(const void *u, size_t count, uint32_t esize)
{
    if (!u || esize < 4)
        return 1;
    uint32_t acc = 0;
    for (size_t i = 0; i < count; i++)
        acc |= ((const uint32_t *)u)[i];
    return acc < (1u << 16);
}

/* Row r of residuals u (ur), row r - 1 (up, when r > 0) and row r of u0 (u0r, NULL without) as
 * uint32, for rows taken in order from r_first: the rows go to two row buffers in turn, so row
 * r - 1 is still in the other one (widened again only at r_first). buf: 3 * width uint32. */
static void residual_rows(const void *u, const void *u0, uint32_t esize, uint32_t width, uint32_t r, uint32_t r_first,
                          uint32_t *buf, const uint32_t **ur, const uint32_t **up, const uint32_t **u0r)
{
    size_t at = (size_t)r * width;
    if (esize == 4) {
        *ur = (const uint32_t *)u + at;
        *up = *ur - width;
    } else {
        uint32_t *cur = buf + (r & 1u) * (size_t)width, *prev = buf + (~r & 1u) * (size_t)width;
        if (r && r == r_first)
            widen(prev, u, at - width, width, esize);
        *ur = widen(cur, u, at, width, esize);
        *up = prev;
    }
    *u0r = u0 ? widen(buf + 2 * (size_t)width, u0, at, width, esize) : NULL;
}

/* Count the classes of n positions into four partial counts (by position): eight positions of
 * class 0 (a flat area) at once. */
static void count_classes(const uint8_t *cls, uint32_t n, uint32_t (*part)[IMIJ_ENC_CLASSES])
{
    uint32_t j = 0;
    for (; j + 8 <= n; j += 8) {
        uint64_t w;
        memcpy(&w, cls + j, 8);
        if (!w) {
            part[0][0] += 8;
            continue;
        }
        for (uint32_t k = 0; k < 8; k++)
            part[k & 3][cls[j + k]]++;
    }
    for (; j < n; j++)
        part[j & 3][cls[j]]++;
}

/* Positions inside a run: each counts into zr of its class (cls) and cross class (xcls, NULL
 * without). Kept out of line: the statistics loop stays small for the positions that take
 * tokens. */
static IMIJ_NOINLINE void count_run(const uint8_t *cls, const uint8_t *xcls, uint32_t n,
                                                uint32_t (*zpart)[IMIJ_ENC_CLASSES], uint32_t (*xzpart)[IMIJ_ENC_CLASSES])
{
    count_classes(cls, n, zpart);
    if (xcls)
        count_classes(xcls, n, xzpart);
}

/* The largest of count esize-byte values. */
static uint32_t plane_max(const void *u, size_t count, uint32_t esize)
{
    uint32_t m = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t v = ld(u, i, esize);
        m = v > m ? v : m;
    }
    return m;
}

int imij_enc_stats(const void *u, const void *u0, uint32_t esize, uint32_t width, uint32_t height, uint32_t lanes,
                   uint32_t ctx_shift, uint32_t run_min, uint32_t buckets, uint32_t *rows, size_t rows_len,
                   uint32_t *vh, uint32_t *zr, uint32_t *rh, uint32_t *xvh, uint32_t *xzr, uint32_t *xrh)
{
    if (!width || !height || lanes < 1 || lanes > 16 || ctx_shift > 31 || !esize_ok(esize) || !buckets ||
        buckets > IMIJ_ENC_BUCKETS)
        return IMIJ_E_ARGS;
    if (!holds(rows_len, 3, width, 1))
        return IMIJ_E_SIZE;
    uint32_t lw = (width + lanes - 1) / lanes;
    size_t plane = (size_t)width * height;
    /* every bucket counted lies below buckets: the largest value's, the longest run's (a run
     * stays in its lane: at most lw * height positions, and RUN_CAP) */
    size_t longest = (size_t)lw * height < RUN_CAP ? (size_t)lw * height : RUN_CAP;
    if (bucket(plane_max(u, plane, esize)) >= buckets || (run_min && bucket((uint32_t)longest - 1) >= buckets))
        return IMIJ_E_ARGS;
    int fast = ctx_shift == 0 && below16(u, plane, esize) && below16(u0, plane, esize);
    uint8_t cls[SEG], xcls[SEG];
    uint32_t tmp[SEG];
    uint32_t skip[16] = {0};
    /* positions inside runs count into four partial zr (by position), added at the end: a flat
     * area's positions, all of one class, do not wait on one counter */
    uint32_t zpart[4][IMIJ_ENC_CLASSES] = {{0}}, xzpart[4][IMIJ_ENC_CLASSES] = {{0}};
    for (uint32_t r = 0; r < height; r++) {
        const uint32_t *ur, *up, *u0r;
        residual_rows(u, u0, esize, width, r, 0, rows, &ur, &up, &u0r);
        uint32_t l = 0, x = 0, c0 = 0, lane_w = lw < width ? lw : width;
        for (uint32_t c_first = 0; c_first < width; c_first += SEG) {
            uint32_t count = width - c_first < SEG ? width - c_first : SEG;
            row_classes(ur, up, u0r, r, c_first, count, lw, width, ctx_shift, fast, u0r ? xcls : cls, u0r ? cls : NULL,
                        tmp);
            for (uint32_t i = 0; i < count; i++) {
                uint32_t c = c_first + i, k = cls[i], xk = u0r ? xcls[i] : 0;
                if (x == lane_w) { /* the next lane */
                    l++;
                    x = 0;
                    c0 = l * lw;
                    lane_w = c0 + lw <= width ? lw : width - c0;
                }
                uint32_t xx = x++;
                if (skip[l]) { /* inside a run: the positions up to the lane's or the segment's end at once */
                    uint32_t n = skip[l] < lane_w - xx ? skip[l] : lane_w - xx;
                    n = n < count - i ? n : count - i;
                    count_run(cls + i, u0r ? xcls + i : NULL, n, zpart, xzpart);
                    skip[l] -= n;
                    x = xx + n;
                    i += n - 1;
                    continue;
                }
                uint32_t v = ur[c];
                if (run_candidate(ur + c, xx, lane_w, run_min)) {
                    uint32_t zeros = zeros_ahead(u, esize, width, height, c0, lane_w, r, xx, RUN_CAP);
                    if (zeros >= run_min) {
                        uint32_t b = bucket(zeros - 1);
                        rh[k * buckets + b]++;
                        zr[k]++;
                        if (u0r) {
                            xrh[xk * buckets + b]++;
                            xzr[xk]++;
                        }
                        skip[l] = zeros - 1;
                        continue;
                    }
                }
                uint32_t b = v < 256 ? v : bucket(v);
                vh[k * buckets + b]++;
                if (u0r)
                    xvh[xk * buckets + b]++;
            }
        }
    }
    for (uint32_t k = 0; k < IMIJ_ENC_CLASSES; k++) {
        zr[k] += zpart[0][k] + zpart[1][k] + zpart[2][k] + zpart[3][k];
        if (u0)
            xzr[k] += xzpart[0][k] + xzpart[1][k] + xzpart[2][k] + xzpart[3][k];
    }
    return 0;
}

/* imij_enc_word_summary's pass over words of type T: position j of a block of 64 pixels keeps
 * its own accumulators, of type T (j belongs to channel j % channels), so the loop vectorizes
 * over the interleaved words; 2.1's order map as w ^ (flip ^ (sign bit set ? fmul : 0)). */
#define SUMMARY_BLOCK 64u
#define SUMMARY_PASS(T)                                                                                       \
    {                                                                                                         \
        const T *p = (const T *)words;                                                                        \
        T hi[16 * SUMMARY_BLOCK], lo[16 * SUMMARY_BLOCK], ors[16 * SUMMARY_BLOCK], raw[16 * SUMMARY_BLOCK];   \
        T tf = (T)flip, tm = (T)fmul, ts = (T)sign;                                                           \
        memset(hi, 0, sizeof hi);                                                                             \
        memset(lo, 0xff, sizeof lo);                                                                          \
        memset(ors, 0, sizeof ors);                                                                           \
        memset(raw, 0, sizeof raw);                                                                           \
        size_t total = pixels * channels;                                                                     \
        for (size_t i = 0; i < total; i += block) {                                                           \
            size_t n = total - i < block ? total - i : block;                                                 \
            const T *q = p + i;                                                                               \
            for (size_t j = 0; j < n; j++) {                                                                  \
                T w = q[j], o = (T)(w ^ (tf ^ ((w & ts) ? tm : (T)0)));                                      \
                hi[j] = o > hi[j] ? o : hi[j];                                                                \
                lo[j] = o < lo[j] ? o : lo[j];                                                                \
                ors[j] |= o;                                                                                  \
                raw[j] |= w;                                                                                  \
            }                                                                                                 \
        }                                                                                                     \
        for (uint32_t c = 0; c < channels; c++) {                                                             \
            T h = 0, l = (T)~(T)0, o = 0, r = 0;                                                              \
            for (uint32_t j = c; j < block; j += channels) {                                                  \
                h = hi[j] > h ? hi[j] : h;                                                                    \
                l = lo[j] < l ? lo[j] : l;                                                                    \
                o |= ors[j];                                                                                  \
                r |= raw[j];                                                                                  \
            }                                                                                                 \
            out[4 * c] = h;                                                                                   \
            out[4 * c + 1] = l;                                                                               \
            out[4 * c + 2] = o;                                                                               \
            out[4 * c + 3] = r;                                                                               \
        }                                                                                                     \
    }

IMIJ_CLONES int imij_enc_word_summary(const void *words, uint32_t esize, size_t pixels, uint32_t channels,
                                      uint32_t kind, uint32_t depth, uint64_t *out)
{
    if (!esize_ok(esize) || !pixels || channels < 1 || channels > 16 || kind > 2 || depth < 1 || depth > 8 * esize)
        return IMIJ_E_ARGS;
    uint32_t block = channels * SUMMARY_BLOCK, sign = 1u << (depth - 1);
    uint32_t flip = kind == 1 ? sign : 0u, fmul = kind == 2 ? sign - 1u : 0u;
    if (esize == 1)
        SUMMARY_PASS(uint8_t)
    else if (esize == 2)
        SUMMARY_PASS(uint16_t)
    else
        SUMMARY_PASS(uint32_t)
    return 0;
}

int imij_enc_histogram(const void *words, uint32_t esize, size_t count, size_t stride, uint32_t depth,
                       uint64_t *counts, size_t counts_len)
{
    if ((esize != 1 && esize != 2) || depth < 1 || depth > 16 || depth > 8 * esize)
        return IMIJ_E_ARGS;
    if (counts_len < (size_t)1 << depth)
        return IMIJ_E_SIZE;
    uint32_t limit = 1u << depth, bad = 0;
    if (esize == 1) { /* four partial counts: runs of one value do not wait on one counter */
        const uint8_t *p = (const uint8_t *)words;
        for (size_t at = 0; at < count; at += (size_t)1 << 30) {
            uint32_t part[4][256] = {{0}};
            size_t n = count - at < ((size_t)1 << 30) ? count - at : (size_t)1 << 30, i = 0;
            const uint8_t *q = p + at * stride;
            for (; i + 4 <= n; i += 4, q += 4 * stride) {
                part[0][q[0]]++;
                part[1][q[stride]]++;
                part[2][q[2 * stride]]++;
                part[3][q[3 * stride]]++;
            }
            for (; i < n; i++, q += stride)
                part[0][q[0]]++;
            for (uint32_t v = 0; v < 256; v++) {
                uint64_t c = (uint64_t)part[0][v] + part[1][v] + part[2][v] + part[3][v];
                bad |= c && v >= limit;
                counts[v & (limit - 1)] += v < limit ? c : 0;
            }
        }
    } else {
        const uint16_t *p = (const uint16_t *)words;
        for (size_t i = 0; i < count; i++) {
            uint16_t w = p[i * stride];
            bad |= w >= limit;
            counts[w & (limit - 1)]++;
        }
    }
    return bad ? IMIJ_E_RANGE : 0;
}

void imij_enc_lookup8(const uint8_t *lut, const uint8_t *src, size_t n, uint8_t *dst)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = lut[src[i]];
}

/* imij_enc_palette for one slot of bytes: entries in the order of first appearance. */
static int byte_palette(const uint8_t *p, size_t npix, uint32_t *entries, uint8_t *index)
{
    int16_t at[256];
    for (int v = 0; v < 256; v++)
        at[v] = -1;
    int count = 0;
    for (size_t i = 0; i < npix; i++) {
        uint8_t v = p[i];
        if (at[v] < 0) {
            entries[count] = v;
            at[v] = (int16_t)count++;
        }
        index[i] = (uint8_t)at[v];
    }
    return count;
}

/* imij_enc_palette for tuples that fit 64 bits (up to 8 byte or 4 two-byte slots): each tuple as
 * one integer key, hashed by a multiply, compared as one word. NS: the slot count (a constant for
 * 3 and 4 byte slots, so their key is built without a loop). */
#define PACKED_PALETTE(T, NS)                                                                                 \
    {                                                                                                         \
        const T *p = (const T *)planes;                                                                       \
        for (size_t i = 0; i < npix; i++) {                                                                   \
            uint64_t key = 0;                                                                                 \
            for (uint32_t s = 0; s < (NS); s++)                                                               \
                key |= (uint64_t)p[s * npix + i] << (s * 8 * sizeof(T));                                      \
            if (i && key == prev) { /* the tuple of the position before: flat areas skip the hash */          \
                index[i] = index[i - 1];                                                                      \
                continue;                                                                                     \
            }                                                                                                 \
            prev = key;                                                                                       \
            uint32_t slot = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 54);                                  \
            while (table[slot] >= 0 && keys[slot] != key)                                                     \
                slot = (slot + 1) & 1023u;                                                                    \
            if (table[slot] < 0) {                                                                            \
                if (count == 256)                                                                             \
                    return IMIJ_E_MANY;                                                                   \
                table[slot] = (int16_t)count;                                                                 \
                keys[slot] = key;                                                                             \
                for (uint32_t s = 0; s < (NS); s++)                                                           \
                    entries[(size_t)count * (NS) + s] = p[s * npix + i];                                      \
                count++;                                                                                      \
            }                                                                                                 \
            index[i] = (uint8_t)table[slot];                                                                  \
        }                                                                                                     \
    }

static int packed_palette(const void *planes, uint32_t esize, uint32_t nslots, size_t npix, uint32_t *entries,
                          uint8_t *index)
{
    int16_t table[1024];
    uint64_t keys[1024], prev = 0;
    int count = 0;
    for (int i = 0; i < 1024; i++)
        table[i] = -1;
    if (esize == 1 && nslots == 3)
        PACKED_PALETTE(uint8_t, 3)
    else if (esize == 1 && nslots == 4)
        PACKED_PALETTE(uint8_t, 4)
    else if (esize == 1)
        PACKED_PALETTE(uint8_t, nslots)
    else
        PACKED_PALETTE(uint16_t, nslots)
    return count;
}

int imij_enc_palette(const void *planes, uint32_t esize, uint32_t nslots, size_t npix, uint32_t *entries,
                     size_t entries_len, uint8_t *index)
{
    if (nslots < 1 || nslots > 8 || !esize_ok(esize))
        return IMIJ_E_ARGS;
    if (!holds(entries_len, 256, nslots, 1))
        return IMIJ_E_SIZE;
    if (nslots == 1 && esize == 1) /* one byte-wide slot: its values index the table directly */
        return byte_palette((const uint8_t *)planes, npix, entries, index);
    if (esize <= 2 && nslots * esize <= 8)
        return packed_palette(planes, esize, nslots, npix, entries, index);
    int16_t table[1024];
    for (int i = 0; i < 1024; i++)
        table[i] = -1;
    int count = 0;
    uint32_t prev[8] = {0};
    for (size_t i = 0; i < npix; i++) {
        uint32_t key[8], same = i > 0;
        for (uint32_t s = 0; s < nslots; s++) {
            key[s] = ld(planes, s * npix + i, esize);
            same &= key[s] == prev[s];
        }
        if (same) { /* the tuple of the position before: flat areas skip the hash */
            index[i] = index[i - 1];
            continue;
        }
        memcpy(prev, key, sizeof key);
        uint32_t h = 2166136261u;
        for (uint32_t s = 0; s < nslots; s++)
            h = (h ^ key[s]) * 16777619u;
        h ^= h >> 15;
        uint32_t slot = h & 1023u;
        for (;;) {
            int e = table[slot];
            if (e < 0) {
                if (count == 256)
                    return IMIJ_E_MANY;
                table[slot] = (int16_t)count;
                memcpy(entries + (size_t)count * nslots, key, nslots * sizeof(uint32_t));
                index[i] = (uint8_t)count;
                count++;
                break;
            }
            if (!memcmp(entries + (size_t)e * nslots, key, nslots * sizeof(uint32_t))) {
                index[i] = (uint8_t)e;
                break;
            }
            slot = (slot + 1) & 1023u;
        }
    }
    return count;
}

/* 3.2: join_token: the token of value v in a scheme with (k', m), its extra-bit count and bits. */
static inline void join_token(uint32_t v, uint32_t kp, uint32_t m, uint32_t *t, uint32_t *nb, uint32_t *e)
{
    if (v < (1u << kp)) {
        *t = v;
        *nb = 0;
        *e = 0;
        return;
    }
    uint32_t msb = 31u - imij_clz32(v);
    uint32_t n = msb - m;
    uint32_t top = v >> n;
    *t = (1u << kp) + ((msb - kp) << m) + (top - (1u << m));
    *nb = n;
    *e = v & mask_of(n);
}

#define OP_BITS 0x80000000u

/* The op of nb (1 .. 16) extra bits e of lane l (see block_ops). */
static inline uint32_t bits_op(uint32_t l, uint32_t nb, uint32_t e)
{
    return OP_BITS | (l << 27) | (nb << 16) | (e & ((1u << nb) - 1u));
}

/* 3.2: the token of v in a scheme with (k', m); its extra bits go to lane l's ops: the low 16 to
 * xops[*nx], any above them to hops[*nh] (each op holds at most 16 bits). */
static inline uint32_t long_token(uint32_t v, uint32_t kp, uint32_t m, uint32_t l, uint32_t *xops, uint32_t *nx,
                                  uint32_t *hops, uint32_t *nh)
{
    uint32_t t, nb, e;
    join_token(v, kp, m, &t, &nb, &e);
    if (nb)
        xops[(*nx)++] = bits_op(l, nb < 16 ? nb : 16, e);
    if (nb > 16)
        hops[(*nh)++] = bits_op(l, nb - 16, e >> 16);
    return t;
}
/* The lanes of ops[0..n) (bits 27-30). */
static inline uint32_t lane_mask(const uint32_t *ops, uint32_t n)
{
    uint32_t mask = 0;
    for (uint32_t j = 0; j < n; j++)
        mask |= 1u << ((ops[j] >> 27) & 15u);
    return mask;
}

#define SIMD_MIN 1024u /* positions of a unit from which the stream writer takes its SIMD path */
#define BLOCK_SAMPLES 4096u /* positions per block of rows the stream writer codes at once (3 op words each: 48 KiB of scratch) */

/* Rows per block of the stream writer: about BLOCK_SAMPLES positions, at least one row, at most
 * the unit's (a small unit's scratch is its own size). */
static uint32_t block_rows(uint32_t width, uint32_t height)
{
    uint32_t rows = width >= BLOCK_SAMPLES ? 1u : BLOCK_SAMPLES / width;
    return rows < height ? rows : height;
}

size_t imij_enc_stream_scratch(uint32_t width, uint32_t height)
{
    size_t rows = block_rows(width, height), blocks = (height + rows - 1) / rows;
    return 3 * (size_t)width + 16 * blocks + 3 * (size_t)width * rows;
}

#if IMIJ_ENT_AVX2
/* The stream writer's SIMD lookups, per 8-bit lane mask m of a half (lanes 0-7 or 8-15):
 * expand[m][j], the op of lane j among m's ops in lane order (popcount of m's lanes below j);
 * pack[m], m's lanes in order (plain16); words[m], a byte shuffle that puts m's lanes' 16-bit
 * words last, in lane order (0x80: a zero byte); and rcp[f], 1 / f rounded up (see phase_half). */
typedef struct {
    uint8_t expand[256][8];
    uint8_t pack[256][8];
    uint8_t words[256][16];
    double rcp[(1u << M_BITS) + 1];
} phase_tables;

static void phase_tables_init(phase_tables *t)
{
    /* 1 / f (1 + 2^-50): the quotient and the product each round by at most 2^-53; a symbol op's f
     * is at most M (model_ok) */
    t->rcp[0] = 0.0;
    for (uint32_t f = 1; f <= 1u << M_BITS; f++)
        t->rcp[f] = 1.0 / f * (1.0 + 1.0 / 1125899906842624.0);
    for (uint32_t m = 0; m < 256; m++) {
        uint32_t k = 0, n = 0;
        for (uint32_t j = 0; j < 8; j++)
            n += m >> j & 1u;
        memset(t->words[m], 0x80, 16);
        memset(t->pack[m], 0, 8);
        for (uint32_t j = 0; j < 8; j++) {
            t->expand[m][j] = (uint8_t)k; /* m's lanes below j */
            if (m >> j & 1u) {
                t->pack[m][k] = (uint8_t)j;
                t->words[m][2 * (8 - n + k)] = (uint8_t)(2 * j);
                t->words[m][2 * (8 - n + k) + 1] = (uint8_t)(2 * j + 1);
                k++;
            }
        }
    }
}

#endif

/* The stream writer's fixed state: the model's tables as ops, the token lookup, the lanes. */
typedef struct {
    const imij_enc_model *model;
    uint32_t width, height, lw, active, esize, fast;
    uint32_t k, m, rk, nvalue, run_min;
    const void *u, *x0; /* residuals; slot 0's for the cross context, else NULL */
    uint32_t lane_w[16];
    uint32_t packed[4][256]; /* per context and symbol: its symbol_op */
    const uint32_t *class_ops[IMIJ_ENC_CLASSES]; /* per class: its context's row of packed (3.3's ctx_map) */
    uint8_t tok[1024];       /* value tokens of small values (255: none) */
    uint32_t xop[1024];      /* their extra bits' ops without the lane (0: no extra bits) */
    uint32_t vops[4][1024];  /* per context and small value: its token's symbol_op; 0 for value 0 where runs exist */
    const uint32_t *class_vops[IMIJ_ENC_CLASSES]; /* per class: its context's row of vops */
#if IMIJ_ENT_AVX2
    const phase_tables *simd; /* the SIMD path's lookups; NULL: the scalar path */
    uint8_t class_ctx[32]; /* per class: its context (3.3's ctx_map), twice: a byte shuffle's table */
#endif
} stream_ctx;

/* Does lane l's column x (c) of row ur (row r) start a run token? Its length, else 0 (3.2). */
static inline uint32_t run_at(const stream_ctx *sc, const uint32_t *ur, uint32_t c, uint32_t l, uint32_t r, uint32_t x)
{
    if (!run_candidate(ur + c, x, sc->lane_w[l], sc->run_min))
        return 0;
    uint32_t zeros = zeros_ahead(sc->u, sc->esize, sc->width, sc->height, l * sc->lw, sc->lane_w[l], r, x, RUN_CAP);
    return zeros >= sc->run_min ? zeros : 0;
}

/* Advance every lane's run skip over row r, as block_ops codes it (the checkpoints of the blocks). */
static void skip_row(const stream_ctx *sc, const uint32_t *ur, uint32_t r, uint32_t *skip)
{
    for (uint32_t l = 0; l < sc->active; l++) {
        uint32_t lane_w = sc->lane_w[l], x = 0;
        if (skip[l] >= lane_w) {
            skip[l] -= lane_w;
            continue;
        }
        x = skip[l];
        skip[l] = 0;
        while (x < lane_w) {
            uint32_t c = l * sc->lw + x, zeros = run_at(sc, ur, c, l, r, x);
            if (!zeros) {
                x++;
                continue;
            }
            if (zeros > lane_w - x) {
                skip[l] = zeros - (lane_w - x);
                break;
            }
            x += zeros;
        }
    }
}

/* 3.1: the classes of row r (up: row r - 1) into clsr (for the step order: lane l's column x at
 * l * stride + x - x_first), for lane columns x_first .. x_first + xn; whole: the row at once
 * (stride lw). */
static void row_contexts(const stream_ctx *sc, const uint32_t *ur, const uint32_t *up, const uint32_t *u0r, uint32_t r,
                         int whole, uint32_t x_first, uint32_t xn, uint8_t *clsr, uint32_t *tmp)
{
    if (whole) {
        row_classes(ur, up, u0r, r, 0, sc->width, sc->lw, sc->width, sc->model->ctx_shift, sc->fast, clsr, NULL, tmp);
        return;
    }
    for (uint32_t l = 0; l < sc->active; l++) {
        if (x_first >= sc->lane_w[l])
            continue;
        uint32_t cnt = sc->lane_w[l] - x_first < xn ? sc->lane_w[l] - x_first : xn;
        row_classes(ur, up, u0r, r, l * sc->lw + x_first, cnt, sc->lw, sc->width, sc->model->ctx_shift, sc->fast,
                    clsr + l * xn, NULL, tmp);
    }
}

/* Lane l's position (r, x; class cls) where it is not inside a run: its symbol op into ops, its
 * extra bits' ops into xops / hops; a run token sets *skip to the positions the run covers after
 * this one and marks the lane in *busy. 0, or IMIJ_E_FREQ when the symbol has no frequency. */
static inline int lane_op(const stream_ctx *sc, const uint32_t *ur, uint32_t r, uint32_t x, uint32_t l, uint32_t cls,
                          uint32_t *skip, uint32_t *busy, uint32_t *ops, size_t *nops, uint32_t *xops, uint32_t *nx,
                          uint32_t *hops, uint32_t *nh)
{
    uint32_t c = l * sc->lw + x, v = ur[c], op, zeros;
    if (!v && (zeros = run_at(sc, ur, c, l, r, x)) != 0) {
        uint32_t t = long_token(zeros - 1, sc->rk, sc->m, l, xops, nx, hops, nh) + sc->nvalue;
        op = t < 256 ? sc->class_ops[cls][t] : 0;
        *skip = zeros - 1;
        *busy |= (uint32_t)(zeros > 1) << l;
    } else if (v < 1024) {
        uint32_t xop = sc->xop[v]; /* at most 10 extra bits: one op, or none */
        op = sc->class_ops[cls][sc->tok[v]];
        xops[*nx] = xop | (l << 27);
        *nx += xop != 0;
    } else {
        uint32_t t = long_token(v, sc->k, sc->m, l, xops, nx, hops, nh);
        op = t < 256 ? sc->class_ops[cls][t] : 0;
    }
    if (!op)
        return IMIJ_E_FREQ;
    ops[(*nops)++] = (l << 27) | op;
    return 0;
}

/* Lanes l .. here of a step where none is inside a run, while each one's value has an entry in
 * vops that is not 0 (below 1024, with a frequency, not a 0 that may start a run): their symbol
 * ops into ops, their extra bits' ops into xops. pv and pc point at lane l's value and class, the
 * lanes lw and stride apart. Returns the first lane left to lane_op (here: none). */
static inline uint32_t plain_lanes(const stream_ctx *sc, const uint32_t *pv, const uint8_t *pc, uint32_t l,
                                   uint32_t here, uint32_t stride, uint32_t *restrict ops, size_t *nops,
                                   uint32_t *restrict xops, uint32_t *nx)
{
    const uint32_t *xopt = sc->xop, *const *class_vops = sc->class_vops;
    size_t lw = sc->lw, n = *nops;
    uint32_t k = *nx;
    for (; l < here; l++, pv += lw, pc += stride) {
        uint32_t v = *pv;
        if (v >= 1024)
            break;
        uint32_t op = class_vops[*pc][v], xop = xopt[v];
        if (!op)
            break;
        xops[k] = xop | (l << 27);
        k += xop != 0;
        ops[n++] = op | (l << 27);
    }
    *nops = n;
    *nx = k;
    return l;
}

#if IMIJ_ENT_AVX2
/* plain_lanes for all 16 lanes of a step at once: lane l's value at pv[l lw], its class at
 * pc[l stride]. Where every value has a vops entry that is not 0, the 16 symbol ops, then the
 * extra bits' ops, go to ops; returns their count << 16 | the extra bits' lanes. Else -1, and
 * nothing written. Reads a class's 3 bytes above it (the caller's array holds them; masked off). */
static IMIJ_NOINLINE AVX2_FN int32_t plain16(const stream_ctx *sc, const uint32_t *pv, const uint8_t *pc,
                                             uint32_t stride, uint32_t *ops)
{
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), eight = _mm256_set1_epi32(8);
    __m256i at0 = _mm256_mullo_epi32(iota, _mm256_set1_epi32((int)sc->lw));
    __m256i at1 = _mm256_add_epi32(at0, _mm256_slli_epi32(_mm256_set1_epi32((int)sc->lw), 3));
    __m256i v0 = _mm256_i32gather_epi32((const int *)pv, at0, 4), v1 = _mm256_i32gather_epi32((const int *)pv, at1, 4);
    __m256i big = _mm256_srli_epi32(_mm256_or_si256(v0, v1), 10);
    if (!_mm256_testz_si256(big, big)) /* a value of 1024 or more */
        return -1;
    __m256i ct0 = _mm256_mullo_epi32(iota, _mm256_set1_epi32((int)stride));
    __m256i ct1 = _mm256_add_epi32(ct0, _mm256_slli_epi32(_mm256_set1_epi32((int)stride), 3));
    const __m256i low = _mm256_set1_epi32(255);
    __m256i c0 = _mm256_and_si256(_mm256_i32gather_epi32((const int *)pc, ct0, 1), low);
    __m256i c1 = _mm256_and_si256(_mm256_i32gather_epi32((const int *)pc, ct1, 1), low);
    /* the classes' contexts (classes are below 16: a byte shuffle), as offsets into vops */
    const __m256i ctx = _mm256_loadu_si256((const __m256i *)sc->class_ctx);
    __m256i b0 = _mm256_slli_epi32(_mm256_and_si256(_mm256_shuffle_epi8(ctx, c0), low), 10);
    __m256i b1 = _mm256_slli_epi32(_mm256_and_si256(_mm256_shuffle_epi8(ctx, c1), low), 10);
    const int *vops = (const int *)sc->vops[0];
    __m256i op0 = _mm256_i32gather_epi32(vops, _mm256_add_epi32(b0, v0), 4);
    __m256i op1 = _mm256_i32gather_epi32(vops, _mm256_add_epi32(b1, v1), 4);
    __m256i none = _mm256_or_si256(_mm256_cmpeq_epi32(op0, _mm256_setzero_si256()),
                                   _mm256_cmpeq_epi32(op1, _mm256_setzero_si256()));
    if (!_mm256_testz_si256(none, none)) /* no frequency, or a 0 that may start a run */
        return -1;
    __m256i lb0 = _mm256_slli_epi32(iota, 27), lb1 = _mm256_slli_epi32(_mm256_add_epi32(iota, eight), 27);
    _mm256_storeu_si256((__m256i *)ops, _mm256_or_si256(op0, lb0));
    _mm256_storeu_si256((__m256i *)(ops + 8), _mm256_or_si256(op1, lb1));
    __m256i x0 = _mm256_i32gather_epi32((const int *)sc->xop, v0, 4), x1 = _mm256_i32gather_epi32((const int *)sc->xop, v1, 4);
    uint32_t m0 = ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x0, _mm256_setzero_si256()))) & 0xffu;
    uint32_t m1 = ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x1, _mm256_setzero_si256()))) & 0xffu;
    uint32_t n0 = imij_popcnt32(m0), n1 = imij_popcnt32(m1);
    const phase_tables *t = sc->simd;
    __m256i p0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)t->pack[m0]));
    __m256i p1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)t->pack[m1]));
    /* 8 words each, the first n0 / n1 of them the ops (the caller has room for 32) */
    _mm256_storeu_si256((__m256i *)(ops + 16), _mm256_permutevar8x32_epi32(_mm256_or_si256(x0, lb0), p0));
    _mm256_storeu_si256((__m256i *)(ops + 16 + n0), _mm256_permutevar8x32_epi32(_mm256_or_si256(x1, lb1), p1));
    return (int32_t)((16 + n0 + n1) << 16 | m1 << 8 | m0);
}
#endif

/* The ops of rows r0 .. r1 in decode order (3: step, phase, lane) into ops, from the lanes' run
 * skips at r0 (updated to r1): a symbol op (lane << 27 | symbol_op) per token, then its
 * extra bits (OP_BITS | lane << 27 | count << 16 | bits, at most 16 bits per op). rows: 3 *
 * width scratch, ops cap words. The ops of a step come in up to three phases (symbols, extra
 * bits, extra bits above 16), each of one kind with every lane at most once, in lane order: their
 * lane masks (never 0) go downwards from the end of ops (the k-th at ops[cap - 1 - k]; *nph of
 * them, or 0 when the ops leave them too little room or the writer has no SIMD path;
 * reverse_phases codes a phase's lanes at once). Returns the op count, or IMIJ_E_FREQ when a symbol has no frequency in its table. Steps where no
 * lane is inside a run (busy: a bit per lane whose skip is not 0) take a loop without the skip
 * tests, or plain16 on the SIMD path. Out of line, as reverse_ops. */
static IMIJ_NOINLINE int64_t block_ops(const stream_ctx *sc, uint32_t r0, uint32_t r1, uint32_t *skip,
                                                   uint32_t *rows, uint32_t *ops, size_t cap, size_t *nph)
{
    uint32_t width = sc->width, lw = sc->lw, active = sc->active, busy = 0;
    uint8_t clsr[SEG + 3]; /* plain16 reads 4 bytes at a class */
    uint32_t tmp[SEG];
    size_t nops = 0, np = 0; /* np masks while there is room above the ops */
#if IMIJ_ENT_AVX2
    size_t room = sc->simd ? cap : 0; /* only reverse_phases, the SIMD path, reads the masks */
#else
    size_t room = 0;
#endif
    uint32_t *top = ops + cap - 1;
    int whole = width <= SEG; /* classes for the whole row when it fits, else per block of lane columns */
    uint32_t block = whole ? lw : SEG / 16;
    for (uint32_t l = 0; l < active; l++)
        busy |= (uint32_t)(skip[l] != 0) << l;
    for (uint32_t r = r0; r < r1; r++) {
        const uint32_t *ur, *up, *u0r;
        residual_rows(sc->u, sc->x0, sc->esize, width, r, r0, rows, &ur, &up, &u0r);
        if (whole)
            row_contexts(sc, ur, up, u0r, r, 1, 0, lw, clsr, tmp);
        for (uint32_t x_first = 0; x_first < lw; x_first += block) {
            uint32_t xn = lw - x_first < block ? lw - x_first : block;
            if (!whole)
                row_contexts(sc, ur, up, u0r, r, 0, x_first, xn, clsr, tmp);
            uint32_t stride = whole ? lw : xn;
            for (uint32_t i = 0; i < xn; i++) {
                uint32_t x = x_first + i;
                uint32_t xops[16], hops[16], nx = 0, nh = 0;
                uint32_t here = active - (x >= sc->lane_w[active - 1]); /* only the last lane is narrower */
                const uint8_t *cx = clsr + i;
                uint32_t lanes = (2u << (here - 1)) - 1u, xm = 0;
#if IMIJ_ENT_AVX2
                int32_t got;
                if (here == 16 && sc->simd && !(busy & lanes) && (got = plain16(sc, ur + x, cx, stride, ops + nops)) >= 0) {
                    nops += (uint32_t)got >> 16; /* the step's symbols and extra bits */
                    xm = (uint32_t)got & 0xffffu;
                } else
#endif
                if (!(busy & lanes)) { /* no lane here inside a run */
                    uint32_t l = 0;
                    while ((l = plain_lanes(sc, ur + (size_t)l * lw + x, cx + (size_t)l * stride, l, here, stride, ops,
                                            &nops, xops, &nx)) < here) {
                        if (lane_op(sc, ur, r, x, l, cx[l * stride], &skip[l], &busy, ops, &nops, xops, &nx, hops, &nh))
                            return IMIJ_E_FREQ;
                        l++;
                    }
                } else {
                    if (skip[0]) { /* every lane inside its run: the steps until the shortest ends code nothing */
                        uint32_t edge = x < sc->lane_w[active - 1] ? sc->lane_w[active - 1] : lw; /* `here` holds */
                        uint32_t span = all_runs(skip, here, (edge - x < xn - i ? edge - x : xn - i));
                        if (span) {
                            for (uint32_t l = 0; l < here; l++) {
                                skip[l] -= span;
                                busy &= ~((uint32_t)(skip[l] == 0) << l);
                            }
                            i += span - 1;
                            continue;
                        }
                    }
                    lanes &= ~busy; /* the lanes that take a token */
                    for (uint32_t l = 0; l < here; l++) {
                        if (skip[l]) {
                            busy &= ~((uint32_t)(--skip[l] == 0) << l);
                            continue;
                        }
                        if (lane_op(sc, ur, r, x, l, cx[l * stride], &skip[l], &busy, ops, &nops, xops, &nx, hops, &nh))
                            return IMIJ_E_FREQ;
                    }
                }
                for (uint32_t j = 0; j < nx; j++)
                    ops[nops++] = xops[j];
                for (uint32_t j = 0; j < nh; j++)
                    ops[nops++] = hops[j];
                if (np + 3 + nops + 48 > room) /* this step's 3 masks, and the next step's 48 ops below them */
                    room = 0;
                else {
                    top[-(ptrdiff_t)np++] = lanes;
                    xm |= nx ? lane_mask(xops, nx) : 0;
                    if (xm)
                        top[-(ptrdiff_t)np++] = xm;
                    if (nh)
                        top[-(ptrdiff_t)np++] = lane_mask(hops, nh);
                }
            }
        }
    }
    *nph = room ? np : 0;
    return (int64_t)nops;
}

/* The quotient q of the reverse pass's x' = x + bias + q * (M - f) (see reverse_ops): x / f for
 * f >= 2, x - 1 for f = 1 (whose bias adds M - 1: x M + cum either way). Where 128-bit products
 * exist, the high half of x * rcp[f], rcp[f] = ceil(2^64 / f) (f = 1: 2^64 - 1): exact for
 * 0 < x < 2^32 and 2 <= f <= 1024, as x * rcp / 2^64 = x / f + e with 0 <= e < 2^-32 and x / f
 * is at most 1 - 1/f past its floor; states are never 0 (at least 2^6 f when divided). */
typedef struct {
#if IMIJ_HAVE_MULHI64
    uint64_t rcp[1025];
#else
    int unused;
#endif
} divider;

static void divider_init(divider *dv)
{
#if IMIJ_HAVE_MULHI64
    dv->rcp[0] = 0;
    dv->rcp[1] = ~(uint64_t)0;
    for (uint32_t f = 2; f <= 1024; f++)
        dv->rcp[f] = ~(uint64_t)0 / f + 1; /* ceil(2^64 / f), powers of two included */
#else
    (void)dv;
#endif
}

static inline uint32_t divide(const divider *dv, uint32_t x, uint32_t f)
{
#if IMIJ_HAVE_MULHI64
    return (uint32_t)imij_mulhi64(x, dv->rcp[f]);
#else
    (void)dv;
    return x / f - (f == 1);
#endif
}

/* A symbol op's low bits (3.3's rANS step, reverse_ops): freq << 11 | bias, bias = cum, plus M - 1
 * when freq is 1 (divide's quotient is then x - 1). 0: no frequency. */
static inline uint32_t symbol_op(uint32_t freq, uint32_t cum)
{
    return freq ? (freq << 11) | (cum + (freq == 1 ? (1u << M_BITS) - 1u : 0u)) : 0u;
}

/* The low 16 bits of x at p, least significant byte first (3.1's words): one store where the
 * machine is little-endian. */
static inline void store_word(uint8_t *p, uint32_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t w = (uint16_t)x;
    memcpy(p, &w, 2);
#else
    p[0] = (uint8_t)x;
    p[1] = (uint8_t)(x >> 8);
#endif
}

/* Reverse rANS over ops[0..nops) last first: words come out last-read first, so they are written
 * backwards from *wp. One branchless step codes both kinds of op: extra bits are a symbol of
 * frequency 1 and cum = the bits in a table of 2^count (x -> x << count | bits), a symbol op one
 * of frequency f in M = 2^10. Renormalization stores the word either way and moves the pointer
 * only when it is emitted. The caller keeps 2 * nops + 2 bytes free below *wp. Out of line: the
 * loop keeps its state in registers. */
static IMIJ_NOINLINE void reverse_ops(const uint32_t *ops, size_t nops, const divider *dv, uint32_t *st,
                                                  uint8_t **wpp)
{
    uint8_t *wp = *wpp;
    for (size_t i = nops; i-- > 0;) {
        uint32_t op = ops[i];
        uint32_t l = (op >> 27) & 15u;
        uint32_t xs = st[l];
        uint32_t emit;
        if (op & OP_BITS) {
            uint32_t nbits = (op >> 16) & 31u, v = op & 0xffffu;
            emit = (uint64_t)xs >= ((uint64_t)1 << (32 - nbits));
            store_word(wp - 2, xs);
            wp -= 2 * emit;
            xs >>= 16 * emit;
            xs = (xs << nbits) | v;
        } else {
            uint32_t f = (op >> 11) & 2047u, bias = op & 2047u;
            emit = (xs >> 1) >= f << (32 - M_BITS - 1); /* x >= f * 2^22, in 32 bits */
            store_word(wp - 2, xs);
            wp -= 2 * emit;
            xs >>= 16 * emit;
            xs += bias + divide(dv, xs, f) * ((1u << M_BITS) - f); /* (x / f) M + x % f + cum */
        }
        st[l] = xs;
    }
    *wpp = wp;
}

#if IMIJ_ENT_AVX2
/* Lanes 8h .. 8h + 7 of a phase: the n ops at p (lanes m, in lane order) spread to their lanes;
 * the other lanes get `idle`, an op of the phase's kind that leaves a state as it is and emits
 * nothing (extra bits: none; a symbol: f = M, cum = 0). */
static inline AVX2_FN __m256i phase_ops(const uint32_t *p, uint32_t n, uint32_t m, uint32_t idle, const phase_tables *t)
{
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i v = _mm256_maskload_epi32((const int *)p, in); /* reads the n ops only */
    __m128i idx = _mm_loadl_epi64((const __m128i *)t->expand[m]);
    __m256i live = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)m), lane), lane);
    return _mm256_blendv_epi8(_mm256_set1_epi32((int)idle), _mm256_permutevar8x32_epi32(v, _mm256_cvtepu8_epi32(idx)),
                              live);
}

/* One phase of reverse_ops on 8 lanes x (ops v): the new states (3: x -> (x / f) * M + x mod f
 * + cum, after 3.1's renormalization: at most one word per lane, states kept at 2^16 and above);
 * the words the lanes emit go to *wp - 2 .. backwards (lane order in memory), with a 16-byte
 * store ending at *wp. Branch-free but for the op kind, and short from state to state (the
 * phases of a block form one chain). */
static inline AVX2_FN __m256i phase_half(__m256i x, __m256i v, int bits, const phase_tables *t, uint8_t **wp)
{
    const __m256i one = _mm256_set1_epi32(1);
    __m256i stay, f, nb; /* stay: lanes that emit no word */
    if (bits) { /* emit when x >= 2^(32 - nb) */
        nb = _mm256_and_si256(_mm256_srli_epi32(v, 16), _mm256_set1_epi32(31));
        stay = _mm256_cmpeq_epi32(_mm256_srlv_epi32(x, _mm256_sub_epi32(_mm256_set1_epi32(32), nb)),
                                  _mm256_setzero_si256());
    } else { /* emit when x >= f 2^22: stay when f 2^20 > x / 4 (both below 2^31) */
        f = _mm256_and_si256(_mm256_srli_epi32(v, 11), _mm256_set1_epi32(2047));
        stay = _mm256_cmpgt_epi32(_mm256_slli_epi32(f, 20), _mm256_srli_epi32(x, 2));
    }
    uint32_t e = ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(stay)) & 0xffu;
    __m256i w = _mm256_and_si256(x, _mm256_set1_epi32(0xffff));
    w = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08); /* the 8 words in the low half */
    __m128i out = _mm_shuffle_epi8(_mm256_castsi256_si128(w), _mm_loadu_si128((const __m128i *)t->words[e]));
    _mm_storeu_si128((__m128i *)(*wp - 16), out);
    *wp -= 2 * imij_popcnt32(e);
    x = _mm256_blendv_epi8(_mm256_srli_epi32(x, 16), x, stay);
    if (bits) /* x << nb | the bits */
        return _mm256_or_si256(_mm256_sllv_epi32(x, nb), _mm256_and_si256(v, _mm256_set1_epi32(0xffff)));
    /* x + cum + q (M - f), q = x / f, in 64-bit lanes (the states are below 2^32 before and after).
     * rcp[f] >= 1 / f (1 + 2^-51), at most 1 / f (1 + 2^-49): x rcp rounded is above x / f and below
     * its next integer by more than 1/2^11, as x / f (below 2^22) is at most 1 - 1/f past its floor;
     * so (x rcp - 1/2) + 2^52, rounded to nearest, is q + 2^52 (reverse_phases' caller checks the
     * rounding mode). cum: bias less the M - 1 it holds for f = 1 (see symbol_op). */
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000); /* 2^52 as a double, and + x */
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0), round = _mm256_set1_pd(4503599627370495.5);
    __m256i cum = _mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(2047)),
                                   _mm256_and_si256(_mm256_cmpeq_epi32(f, one), _mm256_set1_epi32(1 - (1 << M_BITS))));
    __m256i mf = _mm256_sub_epi32(_mm256_set1_epi32(1 << M_BITS), f);
    __m256i y[2];
    for (int h = 0; h < 2; h++) {
        __m128i xh = h ? _mm256_extracti128_si256(x, 1) : _mm256_castsi256_si128(x);
        __m128i fh = h ? _mm256_extracti128_si256(f, 1) : _mm256_castsi256_si128(f);
        __m128i ch = h ? _mm256_extracti128_si256(cum, 1) : _mm256_castsi256_si128(cum);
        __m128i mh = h ? _mm256_extracti128_si256(mf, 1) : _mm256_castsi256_si128(mf);
        __m256i x64 = _mm256_cvtepu32_epi64(xh);
        __m256d xd = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x64, magic)), two52);
        __m256d qd = _mm256_add_pd(_mm256_mul_pd(xd, _mm256_i32gather_pd(t->rcp, fh, 8)), round);
        __m256i qm = _mm256_mul_epu32(_mm256_castpd_si256(qd), _mm256_cvtepu32_epi64(mh)); /* q's low 32 bits */
        y[h] = _mm256_add_epi64(_mm256_add_epi64(x64, _mm256_cvtepu32_epi64(ch)), qm);
    }
    /* the low halves of y's 64-bit lanes, in order */
    __m256i lo = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(y[0]), _mm256_castsi256_ps(y[1]), 0x88));
    return _mm256_permute4x64_epi64(lo, 0xd8);
}

/* Whether SSE arithmetic rounds to nearest (MXCSR's rounding control), as phase_half's needs. */
static AVX2_FN int rounds_to_nearest(void) { return (_mm_getcsr() & 0x6000u) == 0; }

/* 3.1: reverse_ops a phase at a time, words in (step, phase, lane) order (block_ops' phases:
 * nph lane masks, the k-th at top[-k], over ops[0..nops), each phase's ops one per lane, in lane
 * order, all of one kind): the same states and words, its lanes in two vectors. Stores 16 bytes
 * ending where a half's words end: the caller keeps 2 * nops + 16 bytes free below *wp (the bytes
 * below the last word are written over or never read). */
static IMIJ_NOINLINE AVX2_FN void reverse_phases(const uint32_t *ops, size_t nops, const uint32_t *top, size_t nph,
                                                 const phase_tables *t, uint32_t *st, uint8_t **wpp)
{
    uint8_t *wp = *wpp;
    __m256i s0 = _mm256_loadu_si256((const __m256i *)st), s1 = _mm256_loadu_si256((const __m256i *)(st + 8));
    size_t end = nops;
    for (size_t k = nph; k-- > 0;) {
        uint32_t m = top[-(ptrdiff_t)k], m0 = m & 0xffu, m1 = m >> 8, n0 = imij_popcnt32(m0), n1 = imij_popcnt32(m1);
        const uint32_t *p = ops + (end -= n0 + n1);
        int bits = (p[0] & OP_BITS) != 0;
        uint32_t idle = bits ? OP_BITS : (1u << M_BITS) << 11;
        if (m1) /* the upper lanes' words come later in the stream: written first */
            s1 = phase_half(s1, phase_ops(p + n0, n1, m1, idle, t), bits, t, &wp);
        if (m0)
            s0 = phase_half(s0, phase_ops(p, n0, m0, idle, t), bits, t, &wp);
    }
    _mm256_storeu_si256((__m256i *)st, s0);
    _mm256_storeu_si256((__m256i *)(st + 8), s1);
    *wpp = wp;
}
#endif

static void stream_init(stream_ctx *sc, const void *u, const void *u0, uint32_t esize, uint32_t width,
                        uint32_t height, uint32_t lanes, const imij_enc_model *model)
{
    uint32_t n = model->depth, k = model->k, m = model->m;
    size_t plane = (size_t)width * height;
    sc->model = model;
    sc->u = u;
    sc->x0 = model->cross ? u0 : NULL;
    sc->esize = esize;
    sc->width = width;
    sc->height = height;
    sc->lw = (width + lanes - 1) / lanes;
    sc->active = (width + sc->lw - 1) / sc->lw;
    sc->k = k;
    sc->m = m;
    sc->rk = k > m ? k : m;
    sc->nvalue = k >= n ? (n >= 32 ? 0 : 1u << n) : (1u << k) + (n - k) * (1u << m);
    sc->run_min = model->run_min;
#if IMIJ_ENT_AVX2
    sc->simd = NULL;
    for (uint32_t k = 0; k < 32; k++)
        sc->class_ctx[k] = (uint8_t)model->ctx_map[k % IMIJ_ENC_CLASSES];
#endif
    sc->fast = model->ctx_shift == 0 && below16(u, plane, esize) && below16(sc->x0, plane, esize);
    for (uint32_t l = 0; l < sc->active; l++)
        sc->lane_w[l] = (l + 1) * sc->lw <= width ? sc->lw : width - l * sc->lw;
    for (uint32_t c = 0; c < 4; c++)
        for (uint32_t t = 0; t < 256; t++)
            sc->packed[c][t] = symbol_op(model->freq[c][t], model->cum[c][t]);
    for (uint32_t k = 0; k < IMIJ_ENC_CLASSES; k++) {
        sc->class_ops[k] = sc->packed[model->ctx_map[k]];
        sc->class_vops[k] = sc->vops[model->ctx_map[k]];
    }
    for (uint32_t v = 0; v < 1024; v++) {
        uint32_t t = 255, nb = 0, e = 0;
        if (n >= 32 || !(v >> n)) /* else no such value: with n < m, join_token would shift by msb - m < 0 */
            join_token(v, k, m, &t, &nb, &e);
        sc->tok[v] = (uint8_t)(t > 255 ? 255 : t);
        for (uint32_t c = 0; c < 4; c++) /* value 0 may start a run: plain_lanes leaves it to lane_op */
            sc->vops[c][v] = v || !sc->run_min ? sc->packed[c][sc->tok[v]] : 0;
        sc->xop[v] = nb ? bits_op(0, nb, e) : 0;
    }
}

/* 3.3: every class maps to one of the 4 contexts, every symbol's cum + freq is at most M */
static int model_ok(const imij_enc_model *model)
{
    for (uint32_t k = 0; k < IMIJ_ENC_CLASSES; k++)
        if (model->ctx_map[k] > 3)
            return 0;
    for (uint32_t c = 0; c < 4; c++)
        for (uint32_t t = 0; t < 256; t++)
            if ((uint32_t)model->cum[c][t] + model->freq[c][t] > (1u << M_BITS))
                return 0;
    return 1;
}

int64_t imij_enc_stream(const void *u, const void *u0, uint32_t esize, uint32_t width, uint32_t height,
                        uint32_t lanes, const imij_enc_model *model, uint32_t *scratch, size_t scratch_len,
                        uint8_t *out, size_t cap)
{
    if (!width || !height || lanes < 1 || lanes > 16 || model->ctx_shift > 31 || model->depth > 32 ||
        model->depth > 8 * esize || !esize_ok(esize) || (model->cross && !u0) || !model_ok(model))
        return IMIJ_E_ARGS;
    if (scratch_len < imij_enc_stream_scratch(width, height))
        return IMIJ_E_SIZE;
    stream_ctx sc;
    divider dv;
    stream_init(&sc, u, u0, esize, width, height, lanes, model);
    divider_init(&dv);
    uint32_t rows = block_rows(width, height), blocks = (height + rows - 1) / rows;
    uint32_t *rowbuf = scratch, *checkpoints = scratch + 3 * (size_t)width;
    uint32_t *ops = checkpoints + 16 * (size_t)blocks;
    /* the lanes' run skips at the start of every block, so blocks can be coded last first */
    uint32_t skip[16] = {0};
    for (uint32_t b = 0; b < blocks; b++) {
        memcpy(checkpoints + 16 * (size_t)b, skip, sizeof skip);
        for (uint32_t r = b * rows; sc.run_min && b + 1 < blocks && r < (b + 1) * rows; r++) { /* no runs: no skips */
            const uint32_t *ur, *up, *u0r;
            residual_rows(u, NULL, esize, width, r, 0, rowbuf, &ur, &up, &u0r);
            skip_row(&sc, ur, r, skip);
        }
    }
    uint32_t st[16];
    for (uint32_t l = 0; l < 16; l++)
        st[l] = 1u << 16;
#if IMIJ_ENT_AVX2
    phase_tables tables;
    /* the SIMD path where the CPU has AVX2, for units of SIMD_MIN positions and more (its tables
     * take about as long to make as the scalar path takes on a quarter of that) */
    int simd = (size_t)width * height >= SIMD_MIN && imij_entropy_simd(-1) >= 1 && rounds_to_nearest();
    if (simd) {
        phase_tables_init(&tables);
        sc.simd = &tables;
    }
#endif
    size_t head = (size_t)4 * sc.active;
    uint8_t *wp = out + cap;
    for (uint32_t b = blocks; b-- > 0;) {
        uint32_t r0 = b * rows, r1 = r0 + rows < height ? r0 + rows : height;
        memcpy(skip, checkpoints + 16 * (size_t)b, sizeof skip);
        size_t cap_ops = 3 * (size_t)width * rows, nph;
        int64_t nops = block_ops(&sc, r0, r1, skip, rowbuf, ops, cap_ops, &nph);
        if (nops < 0)
            return nops;
        if ((size_t)(wp - out) < head + 2 * (size_t)nops + 2)
            return IMIJ_E_SPACE; /* at most one word per op, plus the unconditional store's slot */
#if IMIJ_ENT_AVX2
        if (simd && nph && (size_t)(wp - out) >= 2 * (size_t)nops + 16) { /* room for its 16-byte stores */
            reverse_phases(ops, (size_t)nops, ops + cap_ops - 1, nph, &tables, st, &wp);
            continue;
        }
#endif
        reverse_ops(ops, (size_t)nops, &dv, st, &wp);
    }
    for (uint32_t l = 0; l < sc.active; l++) {
        uint32_t v = st[l];
        out[4 * l] = (uint8_t)v;
        out[4 * l + 1] = (uint8_t)(v >> 8);
        out[4 * l + 2] = (uint8_t)(v >> 16);
        out[4 * l + 3] = (uint8_t)(v >> 24);
    }
    size_t words = (size_t)(out + cap - wp);
    memmove(out + head, wp, words);
    return (int64_t)(head + words);
}

/* ---- the model chooser's cost estimate (3.3, 5) ---- */

#define COST_M 1024
#define COST_FIX 16

/* h: the counts of `width` symbols, at[i] the symbol of h[i] (NULL: i), ascending. */
static int64_t row_cost(const int64_t *h, uint32_t width, const uint32_t *at, const int64_t *L)
{
    int64_t tot = 0, bits = 0, fsum = 0, fmax = 0, ctop = 0;
    uint32_t used = 0, last1 = 0;
    for (uint32_t i = 0; i < width; i++)
        tot += h[i];
    if (!tot)
        return 0;
    for (uint32_t i = 0; i < width; i++) {
        if (!h[i])
            continue;
        int64_t f = h[i] * COST_M / tot;
        f = f < 1 ? 1 : f;
        fsum += f;
        if (f > fmax) {
            fmax = f;
            ctop = h[i];
        }
        bits += h[i] * (L[COST_M] - L[f]);
        used++;
        last1 = (at ? at[i] : i) + 1;
    }
    int64_t excess = fsum > COST_M ? fsum - COST_M : 0, rest = fmax - excess < 1 ? 1 : fmax - excess;
    return bits + ctop * (L[fmax] - L[rest]) + ((int64_t)(11 + 6 * used + 2 * last1) << COST_FIX);
}

int imij_enc_row_costs(const int64_t *h, uint32_t rows, uint32_t width, const int64_t *log2fix, int64_t *out)
{
    if (width > 256)
        return IMIJ_E_ARGS;
    for (size_t i = 0; i < (size_t)rows * width; i++)
        if (h[i] < 0)
            return IMIJ_E_ARGS;
    for (uint32_t r = 0; r < rows; r++)
        out[r] = row_cost(h + (size_t)r * width, width, NULL, log2fix);
    return 0;
}

/* 5: the split of the used classes of th (16 x 256), in class order, into at most 4 runs of
 * neighbouring classes with the lowest summed row_cost, exactly over every split (the first
 * fewest contexts and the first split start on ties, as modeling.partition_classes). */
int64_t imij_enc_partition(const int64_t *th, const int64_t *log2fix, uint8_t *ctx_map, int64_t *hists,
                           uint32_t *nctx, uint32_t *width)
{
    const int64_t INF = (int64_t)1 << 61;
    uint32_t used[16], g = 0, w = 0;
    for (uint32_t c = 0; c < 16; c++) {
        const int64_t *r = th + c * 256;
        uint64_t bits = 0; /* every count or'ed: its sign a negative count, zero an unused class */
        for (uint32_t s = 0; s < 256; s++)
            bits |= (uint64_t)r[s];
        if (bits >> 63)
            return IMIJ_E_ARGS;
        if (!bits)
            continue;
        uint32_t last1 = 256;
        while (!r[last1 - 1])
            last1--;
        used[g++] = c;
        w = last1 > w ? last1 : w;
    }
    memset(hists, 0, 4 * 256 * sizeof *hists);
    if (!g) { /* nothing coded: one context of one symbol */
        memset(ctx_map, 0, 16);
        hists[0] = 1;
        *nctx = 1;
        *width = 256;
        return 0;
    }
    /* sym[0 .. ns): the symbols any used class counts (only these cost); cum[q]: the first q
     * used classes summed at them; cost[i][j]: classes i .. j - 1 as one context */
    uint32_t sym[256], ns = 0;
    for (uint32_t s = 0; s < w; s++) {
        int64_t any = 0;
        for (uint32_t q = 0; q < g; q++)
            any |= th[used[q] * 256 + s];
        if (any)
            sym[ns++] = s;
    }
    int64_t cum[17][256], cost[17][17], row[256], best[5][17];
    uint32_t back[5][17];
    memset(cum[0], 0, sizeof cum[0]);
    for (uint32_t q = 0; q < g; q++)
        for (uint32_t s = 0; s < ns; s++)
            cum[q + 1][s] = cum[q][s] + th[used[q] * 256 + sym[s]];
    for (uint32_t i = 0; i <= g; i++)
        for (uint32_t j = 0; j <= g; j++) {
            if (i >= j) {
                cost[i][j] = INF;
                continue;
            }
            for (uint32_t s = 0; s < ns; s++)
                row[s] = cum[j][s] - cum[i][s];
            cost[i][j] = row_cost(row, ns, sym, log2fix);
        }
    for (uint32_t j = 0; j <= g; j++)
        best[0][j] = j ? INF : 0;
    for (uint32_t k = 1; k <= 4; k++)
        for (uint32_t j = 0; j <= g; j++) {
            int64_t low = INF;
            uint32_t at = 0;
            for (uint32_t i = 0; i <= g; i++) {
                int64_t t = best[k - 1][i] + cost[i][j];
                t = t < INF ? t : INF;
                if (i == 0 || t < low) {
                    low = t;
                    at = i;
                }
            }
            best[k][j] = low;
            back[k][j] = at;
        }
    uint32_t k = 1;
    for (uint32_t kk = 2; kk <= 4; kk++)
        k = best[kk][g] < best[k][g] ? kk : k;
    uint32_t start[4], end[4], j = g, ctx_of[16];
    for (uint32_t kk = k; kk > 0; kk--) {
        start[kk - 1] = back[kk][j];
        end[kk - 1] = j;
        j = back[kk][j];
    }
    for (uint32_t ctx = 0; ctx < k; ctx++) {
        for (uint32_t q = start[ctx]; q < end[ctx]; q++)
            ctx_of[q] = ctx;
        for (uint32_t s = 0; s < ns; s++)
            hists[ctx * 256 + sym[s]] = cum[end[ctx]][s] - cum[start[ctx]][s];
    }
    /* 3.3's ctx_map: an unused class takes the context of the nearest used class below it
     * (above it when none is below) */
    for (uint32_t c = 0, q = 0; c < 16; c++) {
        while (q + 1 < g && used[q + 1] <= c)
            q++;
        ctx_map[c] = (uint8_t)ctx_of[q];
    }
    *nctx = k;
    *width = w;
    return best[k][g];
}

/* One class's counts in the listed buckets (cols, ncols of them) as token counts th (and their
 * extra bits), *width raised past every token counted. */
static void add_tokens(const uint32_t *counts, const int64_t *tok, const int64_t *nbits, const uint32_t *cols,
                       uint32_t ncols, int64_t *th, int64_t *extra, uint32_t *width)
{
    for (uint32_t i = 0; i < ncols; i++) {
        uint32_t b = cols[i];
        if (counts[b]) {
            th[tok[b]] += counts[b];
            *extra += (int64_t)counts[b] * nbits[b];
            *width = (uint32_t)tok[b] >= *width ? (uint32_t)tok[b] + 1 : *width;
        }
    }
}

/* Class c's token counts added to th[256] (zero on entry) and its extra bits to *extra: its
 * value tokens, then its run tokens or, without runs, every covered position as value token 0;
 * only the listed buckets of its rows (`buckets` apart) read. Returns the width past its last
 * counted token (th is zero from there). */
static uint32_t class_tokens(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                             uint32_t buckets, const uint32_t *cols, uint32_t ncols, uint32_t runs, uint32_t c,
                             int64_t *th, int64_t *extra)
{
    const int64_t *vt = tokens, *vn = tokens + buckets, *rt = tokens + 2 * buckets, *rn = tokens + 3 * buckets;
    uint32_t width = 0;
    add_tokens(vh + (size_t)c * buckets, vt, vn, cols, ncols, th, extra, &width);
    if (runs) {
        add_tokens(rh + (size_t)c * buckets, rt, rn, cols, ncols, th, extra, &width);
        return width;
    }
    th[0] += zr[c];
    return zr[c] && !width ? 1 : width;
}

/* Every token of the table in range (each bucket's test without a branch), and the buckets
 * to read ascending and below `buckets`. */
static int tokens_ok(const int64_t *tokens, uint32_t buckets, const uint32_t *cols, uint32_t ncols)
{
    if (!buckets || buckets > IMIJ_ENC_BUCKETS || ncols > buckets)
        return 0;
    for (uint32_t i = 0; i < ncols; i++)
        if (cols[i] >= buckets || (i && cols[i] <= cols[i - 1]))
            return 0;
    const int64_t *vt = tokens, *vn = tokens + buckets, *rt = tokens + 2 * buckets, *rn = tokens + 3 * buckets;
    uint64_t bad = 0;
    for (uint32_t b = 0; b < buckets; b++)
        bad |= ((uint64_t)vt[b] | (uint64_t)rt[b]) >> 8 | ((uint64_t)vn[b] | (uint64_t)rn[b]) >> 63;
    return !bad;
}

int64_t imij_enc_token_cost(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                            uint32_t buckets, const uint32_t *cols, uint32_t ncols, uint32_t runs,
                            const int64_t *log2fix)
{
    if (!tokens_ok(tokens, buckets, cols, ncols))
        return IMIJ_E_ARGS;
    int64_t total = 0, extra = 0, th[256];
    memset(th, 0, sizeof th);
    for (uint32_t c = 0; c < 16; c++) {
        uint32_t width = class_tokens(vh, rh, zr, tokens, buckets, cols, ncols, runs, c, th, &extra);
        total += row_cost(th, width, NULL, log2fix); /* the same cost: no count past width */
        for (uint32_t s = 0; s < width; s++)   /* zero again for the next class */
            th[s] = 0;
    }
    return total + (extra << COST_FIX);
}

int imij_enc_token_counts(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                          uint32_t buckets, const uint32_t *cols, uint32_t ncols, uint32_t runs, int64_t *th)
{
    if (!tokens_ok(tokens, buckets, cols, ncols))
        return IMIJ_E_ARGS;
    int64_t extra = 0;
    for (uint32_t c = 0; c < 16; c++) {
        memset(th + (size_t)c * 256, 0, 256 * sizeof *th);
        class_tokens(vh, rh, zr, tokens, buckets, cols, ncols, runs, c, th + (size_t)c * 256, &extra);
    }
    return 0;
}

/* 3.3: a count's weight at precision prec: exponent e = bit length, nb mantissa bits below the
 * leading one, the mantissa, and the weight they code (the count's top bits). */
static inline int64_t quantized(int64_t h, uint32_t e, uint32_t prec, uint32_t *nb, uint32_t *mant)
{
    *nb = 0;
    *mant = 0;
    if (e <= 1)
        return e;
    uint32_t n = e - 1 < prec - 1 ? e - 1 : prec - 1, sh = e - 1 - n;
    *nb = n;
    *mant = (uint32_t)((h >> sh) & (((int64_t)1 << n) - 1));
    return ((((int64_t)1 << n) | *mant) << sh);
}

int imij_enc_best_tables(const int64_t *H, uint32_t ctxs, uint32_t width, uint32_t prec_lo, uint32_t prec_hi,
                         const int64_t *log2fix, uint32_t *prec, uint32_t *last1, uint32_t *codes, uint32_t *freq)
{
    if (width < 1 || width > 256 || prec_lo < 1 || prec_hi > 8 || prec_lo > prec_hi)
        return IMIJ_E_ARGS;
    const int64_t *L = log2fix;
    for (uint32_t c = 0; c < ctxs; c++) {
        const int64_t *h = H + (size_t)c * width;
        uint32_t n = 0, e[256], nb, mant, top = 0, best_p = prec_lo;
        int64_t gamma = 0, best = INT64_MAX, w[256], f[256];
        for (uint32_t s = 0; s < width; s++) {
            if (h[s] < 0 || h[s] >= ((int64_t)1 << 32))
                return IMIJ_E_ARGS;
            n = h[s] ? s + 1 : n;
        }
        if (!n)
            return IMIJ_E_ARGS;
        for (uint32_t s = 0, prev = 0; s < n; s++) { /* the exponents' gamma codes (3.3) */
            e[s] = imij_bitlen64((uint64_t)h[s]);
            int32_t d = (int32_t)e[s] - (int32_t)prev;
            uint32_t z = (uint32_t)(d >= 0 ? 2 * d : -2 * d - 1) + 1;
            gamma += 2 * imij_bitlen32(z) - 1;
            prev = e[s];
        }
        for (uint32_t p = prec_lo; p <= prec_hi; p++) {
            int64_t tot = 0, nbits = 0, wmax = 0, fsum = 0, data = 0;
            for (uint32_t s = 0; s < n; s++) {
                w[s] = quantized(h[s], e[s], p, &nb, &mant);
                tot += w[s];
                nbits += nb;
                if (w[s] > wmax) {
                    wmax = w[s];
                    top = s;
                }
            }
            for (uint32_t s = 0; s < n; s++) {
                f[s] = w[s] ? w[s] * COST_M / tot : 0;
                f[s] = w[s] && f[s] < 1 ? 1 : f[s];
                fsum += f[s];
            }
            int64_t excess = fsum > COST_M ? fsum - COST_M : 0;
            f[top] = f[top] - excess < 1 ? 1 : f[top] - excess;
            for (uint32_t s = 0; s < n; s++)
                data += h[s] ? h[s] * (L[COST_M] - L[f[s]]) : 0;
            int64_t total = ((11 + gamma + nbits) << COST_FIX) + data;
            if (total < best) {
                best = total;
                best_p = p;
            }
        }
        prec[c] = best_p;
        last1[c] = n;
        uint32_t weights[256];
        for (uint32_t s = 0; s < n; s++) {
            weights[s] = (uint32_t)quantized(h[s], e[s], best_p, &nb, &mant); /* below 2^32: at most h[s] */
            uint32_t *code = codes + ((size_t)c * width + s) * 3;
            code[0] = e[s];
            code[1] = nb;
            code[2] = mant;
        }
        if (imij_normalize_table(weights, n, freq + (size_t)c * width)) /* 3.3, as the decoder reads it */
            return IMIJ_E_ARGS;
    }
    return 0;
}
