/* bilevel.c: bilevel stripes (2.10: layouts 0x81, 0x82) and template palette stripes (2.14:
 * layouts 0x83, 0x84) of one unit, end to end: layout, entries, typical rows, the ten-pixel
 * template with its lane-edge and stripe-top rules, the binary rANS step, the candidate and
 * escape phases in (step, phase, lane) word order, and the entries lookup. Also the encoder's
 * side: outcome counts and the reverse rANS stream of a known plane, without listing its
 * operations (each step's operations are rebuilt from the plane, last step first).
 *
 * Plain C99, no globals, no allocation: the caller passes the output planes and the index
 * scratch. Every read of `body` is bounds-checked; every plane index is below width * height.
 */
#include <string.h>

#include "bilevel.h"

#define LVL_M 1024u
#define LVL_M_BITS 10
#define LVL_STATE_LOW (1u << 16)

typedef struct {
    const uint8_t *s;
    size_t pos, len;
    uint32_t st[16];
} lvl_rans;

/* 3: an initial state per active lane, each >= 2^16, then whole u16 words. */
static int rans_open(lvl_rans *rs, const uint8_t *s, size_t len, uint32_t active)
{
    size_t head = (size_t)4 * active;
    if (len < head)
        return IMIJ_LVL_E_TRUNCATED;
    if ((len - head) & 1)
        return IMIJ_LVL_E_WORDS;
    for (uint32_t l = 0; l < active; l++) {
        uint32_t v = (uint32_t)s[4 * l] | (uint32_t)s[4 * l + 1] << 8 | (uint32_t)s[4 * l + 2] << 16 |
                     (uint32_t)s[4 * l + 3] << 24;
        if (v < LVL_STATE_LOW)
            return IMIJ_LVL_E_STATE;
        rs->st[l] = v;
    }
    rs->s = s;
    rs->pos = head;
    rs->len = len;
    return 0;
}

/* 3.1: a state below 2^16 takes the next word. */
static inline int renorm(lvl_rans *rs, uint32_t l, uint32_t x)
{
    if (x < LVL_STATE_LOW) {
        if (rs->pos + 2 > rs->len)
            return IMIJ_LVL_E_WORDS;
        x = x << 16 | (uint32_t)rs->s[rs->pos] | (uint32_t)rs->s[rs->pos + 1] << 8;
        rs->pos += 2;
    }
    rs->st[l] = x;
    return 0;
}

/* 2.10: t = 1 if slot >= p else 0; x = (t ? M - p : p) * (x >> 10) + slot - (t ? p : 0). */
static inline int binary(lvl_rans *rs, uint32_t l, uint32_t p, uint32_t *t)
{
    uint32_t x = rs->st[l], slot = x & (LVL_M - 1u);
    if (slot >= p) {
        *t = 1;
        x = (LVL_M - p) * (x >> LVL_M_BITS) + slot - p;
    } else {
        *t = 0;
        x = p * (x >> LVL_M_BITS) + slot;
    }
    return renorm(rs, l, x);
}

/* 2.14 escape: a token of the direct-index table (slot lookup, state update, renormalize). */
static inline int token(lvl_rans *rs, uint32_t l, const imij_template_tables *tt, uint32_t *sym)
{
    uint32_t x = rs->st[l], slot = x & (LVL_M - 1u);
    uint32_t s = tt->lookup[slot];
    x = (uint32_t)tt->freq[s] * (x >> LVL_M_BITS) + slot - tt->cum[s];
    *sym = s;
    return renorm(rs, l, x);
}

typedef struct {
    uint32_t lw, active, start[16], width[16];
} lanes_t;

/* 2.3: lane width lw = ceil(gw / L); the active lanes are the non-empty prefix (only the last
 * may be narrower than lw). */
static void lanes_of(lanes_t *ln, uint32_t gw, uint32_t lanes)
{
    ln->lw = (gw + lanes - 1) / lanes;
    ln->active = (gw + ln->lw - 1) / ln->lw;
    for (uint32_t l = 0; l < ln->active; l++) {
        ln->start[l] = l * ln->lw;
        ln->width[l] = (l + 1) * ln->lw <= gw ? ln->lw : gw - l * ln->lw;
    }
}

/* The lanes taking part in step x: all active lanes, or all but the last when it is narrower. */
static inline uint32_t taking(const lanes_t *ln, uint32_t x)
{
    return x < ln->width[ln->active - 1] ? ln->active : ln->active - 1;
}

/* The index plane P is padded: stride S = w + 4, two zero rows above the stripe and two zero
 * columns on each side, so every template read is a plain load: rows above the stripe and
 * columns outside the group read 0 (2.10). Row r's pixel c is P[(r + 2) * S + c + 2]. */

/* 2.10: every pixel's t, step by step, lanes ascending. The context slides along the lane:
 * from (r, c - 1) to (r, c) the rows above shift by one column and take one new pixel each
 * (k 2: (r - 2, c + 1), k 7: (r - 1, c + 2)), and the current row takes the pixel just decoded.
 * At x = 0 the current-row pixels are left of the lane's first column: they read one row up. */
static int decode_binary(lvl_rans *rs, const uint16_t *prob, uint8_t *P, size_t S, uint32_t h, const lanes_t *ln)
{
    uint32_t ctx[16], st[16];
    const uint8_t *s = rs->s;
    size_t pos = rs->pos, len = rs->len;
    memcpy(st, rs->st, sizeof st);
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *row = P + (size_t)(r + 2) * S + 2;
        const uint8_t *up = row - S, *up2 = up - S;
        for (uint32_t x = 0; x < ln->lw; x++) {
            uint32_t la = taking(ln, x);
            for (uint32_t l = 0; l < la; l++) {
                size_t c = (size_t)ln->start[l] + x;
                uint32_t cx;
                if (x == 0)
                    cx = (uint32_t)up2[c - 1] | (uint32_t)up2[c] << 1 | (uint32_t)up2[c + 1] << 2 |
                         (uint32_t)up[c - 2] << 3 | (uint32_t)up[c - 1] << 4 | (uint32_t)up[c] << 5 |
                         (uint32_t)up[c + 1] << 6 | (uint32_t)up[c + 2] << 7 | (uint32_t)up[c - 2] << 8 |
                         (uint32_t)up[c - 1] << 9;
                else {
                    uint32_t prev = ctx[l];
                    cx = ((prev >> 1) & 3u) | (uint32_t)up2[c + 1] << 2 | ((prev >> 4) & 15u) << 3 |
                         (uint32_t)up[c + 2] << 7 | ((prev >> 9) & 1u) << 8 | (uint32_t)row[c - 1] << 9;
                }
                ctx[l] = cx;
                /* t = 1 if slot >= p; x = (t ? M - p : p) * (x >> 10) + slot - (t ? p : 0) */
                uint32_t p = prob[cx], xs = st[l], slot = xs & (LVL_M - 1u), t = slot >= p;
                xs = (t ? LVL_M - p : p) * (xs >> LVL_M_BITS) + slot - (t ? p : 0u);
                if (xs < LVL_STATE_LOW) { /* 3.1: renormalize */
                    if (pos + 2 > len)
                        return IMIJ_LVL_E_WORDS;
                    xs = xs << 16 | (uint32_t)s[pos] | (uint32_t)s[pos + 1] << 8;
                    pos += 2;
                }
                st[l] = xs;
                row[c] = (uint8_t)t;
            }
        }
    }
    return 0;
}

/* 2.14: the candidate order c_j = t_5, t_6, t_4, t_8, t_1 (N, NE, NW, WW, NN). */
static const int cand_k[5] = {5, 6, 4, 8, 1};

/* 2.14 candidate phase j for a pixel whose template is t: the candidate c_j, and its context
 * 8 j + min(count of t_k equal to c_j, 7), or -1 when the phase skips it (c_j equals W or an
 * earlier candidate). */
static inline int candidate(const uint32_t *t, int j, uint32_t *cj)
{
    uint32_t c = t[cand_k[j]], hits = 0;
    *cj = c;
    if (c == t[9])
        return -1;
    for (int e = 0; e < j; e++)
        if (c == t[cand_k[e]])
            return -1;
    for (int k = 0; k < 10; k++)
        hits += t[k] == c;
    return 8 * j + (int)(hits < 7 ? hits : 7u);
}

static int decode_template(lvl_rans *rs, const imij_template_tables *tt, uint32_t n, const uint8_t *rows,
                           uint8_t *P, size_t S, uint32_t h, const lanes_t *ln)
{
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *row = P + (size_t)(r + 2) * S;
        if (rows[r >> 3] >> (r & 7) & 1) { /* a typical row copies the row above (row 0: the zero row) */
            memcpy(row, row - S, S);
            continue;
        }
        row += 2;
        const uint8_t *up = row - S, *up2 = up - S;
        for (uint32_t x = 0; x < ln->lw; x++) {
            uint32_t tk[16][10], open[16], nopen = 0, la = taking(ln, x);
            /* 1. phase 0, every active lane */
            for (uint32_t l = 0; l < la; l++) {
                size_t c = (size_t)ln->start[l] + x;
                uint32_t t0 = up2[c - 1], t1 = up2[c], t2 = up2[c + 1], t3 = up[c - 2], t4 = up[c - 1], t5 = up[c],
                         t6 = up[c + 1], t7 = up[c + 2];
                uint32_t t8 = x >= 2 ? row[c - 2] : up[c - 2]; /* left of the lane's first column: one row up */
                uint32_t W = x >= 1 ? row[c - 1] : up[c - 1];
                uint32_t cx = (uint32_t)(W == 0) << 9 | (uint32_t)(t0 == W) | (uint32_t)(t1 == W) << 1 |
                              (uint32_t)(t2 == W) << 2 | (uint32_t)(t3 == W) << 3 | (uint32_t)(t4 == W) << 4 |
                              (uint32_t)(t5 == W) << 5 | (uint32_t)(t6 == W) << 6 | (uint32_t)(t7 == W) << 7 |
                              (uint32_t)(t8 == W) << 8;
                uint32_t m;
                int err = binary(rs, l, tt->p[cx], &m);
                if (err)
                    return err;
                if (!m)
                    row[c] = (uint8_t)W;
                else if (n <= 2)
                    row[c] = (uint8_t)(1u - W); /* W is 0 or 1 */
                else {
                    uint32_t *t = tk[l];
                    t[0] = t0, t[1] = t1, t[2] = t2, t[3] = t3, t[4] = t4, t[5] = t5, t[6] = t6, t[7] = t7, t[8] = t8;
                    t[9] = W;
                    open[nopen++] = l;
                }
            }
            /* 2. candidate phases j = 0..=4, over the open lanes that take part */
            for (int j = 0; j < 5 && nopen; j++) {
                uint32_t still = 0;
                for (uint32_t i = 0; i < nopen; i++) {
                    uint32_t l = open[i], cj;
                    int cx = candidate(tk[l], j, &cj);
                    if (cx >= 0) {
                        uint32_t b;
                        int err = binary(rs, l, tt->q[cx], &b);
                        if (err)
                            return err;
                        if (!b) {
                            row[ln->start[l] + x] = (uint8_t)cj;
                            continue;
                        }
                    }
                    open[still++] = l;
                }
                nopen = still;
            }
            /* 3. the escape phase, every lane still open */
            for (uint32_t i = 0; i < nopen; i++) {
                uint32_t l = open[i], sym = 0;
                if (tt->escape) {
                    int err = token(rs, l, tt, &sym);
                    if (err)
                        return err;
                }
                row[ln->start[l] + x] = (uint8_t)sym;
            }
        }
    }
    return 0;
}

/* Coded value i of the output planes, stored in out_bytes (1, 2 or 4) bytes. */
static inline void store(void *out, uint32_t out_bytes, size_t i, uint32_t v)
{
    if (out_bytes == 1)
        ((uint8_t *)out)[i] = (uint8_t)v;
    else if (out_bytes == 2)
        ((uint16_t *)out)[i] = (uint16_t)v;
    else
        ((uint32_t *)out)[i] = v;
}

int imij_level_unit_decode(const uint8_t *body, size_t len, const imij_level_unit *u, void *out, uint8_t *index)
{
    uint32_t w = u->width, h = u->height, nslots = u->nslots, ob = u->out_bytes;
    if (w == 0 || h == 0 || u->lanes < 1 || u->lanes > 16 || nslots > 8 || (ob != 1 && ob != 2 && ob != 4))
        return IMIJ_LVL_E_ARGS;
    for (uint32_t s = 0; s < nslots; s++)
        if (u->depth[s] > 8 * ob)
            return IMIJ_LVL_E_ARGS; /* entries (<= 16 bits) must fit the output's width */
    size_t plane = (size_t)w * h, pos = 0;
    if (len < 1)
        return IMIJ_LVL_E_TRUNCATED;
    uint32_t decor = body[pos++];
    if (decor < 0x81 || decor > 0x84)
        return IMIJ_LVL_E_LAYOUT;
    int bilevel = decor <= 0x82;
    if (!(u->features & (bilevel ? 1u : 2u)))
        return IMIJ_LVL_E_FEATURE; /* 0.1: gated syntax */
    if (bilevel ? u->bilevel == NULL : u->tmpl == NULL)
        return IMIJ_LVL_E_RECORD; /* 2.10 / 2.14: corrupt without its head record */
    if (decor == 0x81) {
        if (nslots != 1 || u->depth[0] != 1)
            return IMIJ_LVL_E_SLOT;
    } else {
        for (uint32_t s = 0; s < nslots; s++)
            if (u->depth[s] > 16)
                return IMIJ_LVL_E_DEPTH;
    }
    uint16_t own[256][8];
    const uint16_t(*entries)[8] = (const uint16_t(*)[8])own;
    uint32_t n = 0;
    if (decor == 0x82 || decor == 0x83) {
        if (pos >= len)
            return IMIJ_LVL_E_TRUNCATED;
        n = (uint32_t)body[pos++] + 1u;
        if (decor == 0x82 && n > 2)
            return IMIJ_LVL_E_COUNT;
        for (uint32_t e = 0; e < n; e++) {
            for (uint32_t s = 0; s < nslots; s++) {
                uint32_t bytes = u->depth[s] > 8 ? 2u : 1u;
                if (len - pos < bytes)
                    return IMIJ_LVL_E_TRUNCATED;
                uint32_t v = body[pos];
                if (bytes == 2)
                    v |= (uint32_t)body[pos + 1] << 8;
                pos += bytes;
                if (v >> u->depth[s])
                    return IMIJ_LVL_E_ENTRY; /* 2.5: each entry < 2^n_s */
                own[e][s] = (uint16_t)v;
            }
        }
    } else if (decor == 0x84) {
        if (!u->tmpl->nshared)
            return IMIJ_LVL_E_SHARED;
        n = u->tmpl->nshared;
        entries = u->tmpl->shared;
    }
    const uint8_t *rows = NULL;
    if (!bilevel) { /* 2.14: ceil(rows / 8) bytes of typical-row bits; bits past the last row are 0 */
        size_t nb = ((size_t)h + 7) / 8;
        if (len - pos < nb)
            return IMIJ_LVL_E_TRUNCATED;
        rows = body + pos;
        if (h & 7 && rows[nb - 1] >> (h & 7))
            return IMIJ_LVL_E_ROWS;
        pos += nb;
    }
    lanes_t ln;
    lanes_of(&ln, w, u->lanes);
    lvl_rans rs;
    int err = rans_open(&rs, body + pos, len - pos, ln.active);
    if (err)
        return err;
    size_t S = (size_t)w + 4;
    memset(index, 0, S * ((size_t)h + 2)); /* the zero rows above and the zero side columns */
    if (bilevel)
        err = decode_binary(&rs, u->bilevel->prob, index, S, h, &ln);
    else
        err = decode_template(&rs, u->tmpl, n, rows, index, S, h, &ln);
    if (err)
        return err;
    uint32_t inv = decor <= 0x82 ? (u->bilevel->inv & 1u) : 0u;
    for (uint32_t r = 0; r < h; r++) {
        const uint8_t *src = index + (size_t)(r + 2) * S + 2;
        size_t at = (size_t)r * w;
        if (decor == 0x81) { /* v = t xor inv, the slot's coded value */
            for (uint32_t c = 0; c < w; c++)
                store(out, ob, at + c, src[c] ^ inv);
            continue;
        }
        for (uint32_t c = 0; c < w; c++) {
            uint32_t k = src[c] ^ inv;
            if (k >= n)
                k = 0; /* entry 0 for an index past the last entry */
            for (uint32_t sl = 0; sl < nslots; sl++)
                store(out, ob, sl * plane + at + c, entries[k][sl]);
        }
    }
    return 0;
}

/* ---- the encoder side: the decoder's operations on a known plane ------------------------- */

/* One coding operation: kind 0 a binary decision at a phase-0 context (2.10's t, or 2.14's m),
 * 1 a candidate phase decision (context 0..=39), 2 an escaped index (2.14). */
typedef struct {
    uint8_t kind, bit, lane;
    uint16_t ctx;
} lvl_op;

#define STEP_OPS (7 * 16) /* phase 0, five candidate phases and the escape, per lane */

/* The padded plane of the decoders (two zero rows above, two zero columns each side). */
static void pad_plane(const uint8_t *plane, uint32_t width, uint32_t height, uint8_t *scratch)
{
    size_t S = (size_t)width + 4;
    memset(scratch, 0, 2 * S);
    for (uint32_t r = 0; r < height; r++) {
        uint8_t *row = scratch + (size_t)(r + 2) * S;
        row[0] = row[1] = row[S - 2] = row[S - 1] = 0;
        memcpy(row + 2, plane + (size_t)r * width, width);
    }
}

/* 2.10: the ten template pixels of column c at lane column x (left of the lane's first column
 * the current row reads one row up). */
static inline void template_at(const uint8_t *row, const uint8_t *up, const uint8_t *up2, size_t c, uint32_t x,
                               uint32_t *t)
{
    t[0] = up2[c - 1], t[1] = up2[c], t[2] = up2[c + 1], t[3] = up[c - 2], t[4] = up[c - 1];
    t[5] = up[c], t[6] = up[c + 1], t[7] = up[c + 2];
    t[8] = x >= 2 ? row[c - 2] : up[c - 2];
    t[9] = x >= 1 ? row[c - 1] : up[c - 1];
}

/* 2.10: step x of a row of a bilevel plane, lanes ascending: one decision per lane. */
static int bilevel_step(const uint8_t *row, const uint8_t *up, const uint8_t *up2, const lanes_t *ln, uint32_t x,
                        lvl_op *ops)
{
    uint32_t la = taking(ln, x), t[10];
    for (uint32_t l = 0; l < la; l++) {
        size_t c = (size_t)ln->start[l] + x;
        template_at(row, up, up2, c, x, t);
        uint32_t cx = 0;
        for (int k = 0; k < 10; k++)
            cx |= t[k] << k;
        if (row[c] > 1)
            return IMIJ_LVL_E_ARGS; /* t is 0 or 1 */
        ops[l] = (lvl_op){0, row[c], (uint8_t)l, (uint16_t)cx};
    }
    return (int)la;
}

/* 2.14: step x of a non-typical row of an index plane of n entries, in the decoder's (phase,
 * lane) order: phase 0 for every lane, candidate phases over the lanes still open, escapes. */
static int template_step(const uint8_t *row, const uint8_t *up, const uint8_t *up2, const lanes_t *ln, uint32_t x,
                         uint32_t n, lvl_op *ops)
{
    uint32_t tk[16][10], value[16], open[16], nopen = 0, la = taking(ln, x);
    int count = 0;
    for (uint32_t l = 0; l < la; l++) { /* 1. phase 0 */
        size_t c = (size_t)ln->start[l] + x;
        uint32_t *t = tk[l];
        template_at(row, up, up2, c, x, t);
        uint32_t W = t[9], cx = (uint32_t)(W == 0) << 9, v = row[c];
        for (int k = 0; k < 9; k++)
            cx |= (uint32_t)(t[k] == W) << k;
        ops[count++] = (lvl_op){0, v != W, (uint8_t)l, (uint16_t)cx};
        value[l] = v;
        if (v != W) {
            if (n <= 2) {
                if (v != 1u - W)
                    return IMIJ_LVL_E_ARGS; /* two entries: an index above 1 */
            } else {
                open[nopen++] = l;
            }
        }
    }
    for (int j = 0; j < 5 && nopen; j++) { /* 2. candidate phases */
        uint32_t still = 0;
        for (uint32_t i = 0; i < nopen; i++) {
            uint32_t l = open[i], cj;
            int cx = candidate(tk[l], j, &cj);
            if (cx >= 0) {
                ops[count++] = (lvl_op){1, value[l] != cj, (uint8_t)l, (uint16_t)cx};
                if (value[l] == cj)
                    continue;
            }
            open[still++] = l;
        }
        nopen = still;
    }
    for (uint32_t i = 0; i < nopen; i++) /* 3. the escape phase */
        ops[count++] = (lvl_op){2, 0, (uint8_t)open[i], (uint16_t)value[open[i]]};
    return count;
}

/* The operations of step x of row r (0 for a typical row), or a negative code. */
static int step_ops(const uint8_t *P, size_t S, uint32_t r, uint32_t x, const lanes_t *ln, uint32_t n,
                    const uint8_t *typical, lvl_op *ops)
{
    const uint8_t *row = P + (size_t)(r + 2) * S + 2, *up = row - S, *up2 = up - S;
    if (!typical)
        return bilevel_step(row, up, up2, ln, x, ops);
    return typical[r] ? 0 : template_step(row, up, up2, ln, x, n, ops);
}

static int level_args(uint32_t width, uint32_t height, uint32_t lanes, uint32_t n)
{
    return width == 0 || height == 0 || lanes < 1 || lanes > 16 || n < 1 || n > 256 ||
           (size_t)width * height > ((size_t)-1 - 64) / 16;
}

int imij_level_counts(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                      const uint8_t *typical, uint8_t *scratch, uint32_t *phase0, uint32_t *cand, uint32_t *escape)
{
    if (level_args(width, height, lanes, n))
        return IMIJ_LVL_E_ARGS;
    size_t S = (size_t)width + 4;
    pad_plane(plane, width, height, scratch);
    lanes_t ln;
    lanes_of(&ln, width, lanes);
    lvl_op ops[STEP_OPS];
    for (uint32_t r = 0; r < height; r++)
        for (uint32_t x = 0; x < ln.lw; x++) {
            int count = step_ops(scratch, S, r, x, &ln, n, typical, ops);
            if (count < 0)
                return count;
            for (int i = 0; i < count; i++) {
                const lvl_op *o = &ops[i];
                if (o->kind == 0)
                    phase0[2u * o->ctx + o->bit]++;
                else if (o->kind == 1)
                    cand[2u * o->ctx + o->bit]++;
                else
                    escape[o->ctx]++;
            }
        }
    return 0;
}

/* 3.1 in reverse: code a symbol of frequency f at cum in lane l's state; words go backwards
 * from *wp (read forwards, they come in decode order). */
static inline int put(uint32_t *st, uint32_t l, uint32_t f, uint32_t cum, uint8_t *dst, size_t *wp, size_t floor)
{
    uint32_t x = st[l];
    if ((uint64_t)x >= (uint64_t)f << (32 - LVL_M_BITS)) {
        if (*wp < floor + 2)
            return IMIJ_LVL_E_SPACE;
        *wp -= 2;
        dst[*wp] = (uint8_t)x;
        dst[*wp + 1] = (uint8_t)(x >> 8);
        x >>= 16;
    }
    st[l] = ((x / f) << LVL_M_BITS) + (x % f) + cum;
    return 0;
}

/* The initial states, then the words moved right after them: the stream's length. */
static int64_t close_stream(const uint32_t *st, uint32_t active, uint8_t *dst, size_t dst_cap, size_t wp)
{
    size_t head = (size_t)4 * active;
    for (uint32_t l = 0; l < active; l++) {
        dst[4 * l] = (uint8_t)st[l];
        dst[4 * l + 1] = (uint8_t)(st[l] >> 8);
        dst[4 * l + 2] = (uint8_t)(st[l] >> 16);
        dst[4 * l + 3] = (uint8_t)(st[l] >> 24);
    }
    size_t words = dst_cap - wp;
    memmove(dst + head, dst + wp, words);
    return (int64_t)(head + words);
}

int64_t imij_level_encode(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                          const uint8_t *typical, uint8_t *scratch, const uint16_t *phase0, const uint16_t *cand,
                          const uint16_t *efreq, const uint16_t *ecum, uint8_t *dst, size_t dst_cap)
{
    if (level_args(width, height, lanes, n))
        return IMIJ_LVL_E_ARGS;
    size_t S = (size_t)width + 4;
    pad_plane(plane, width, height, scratch);
    lanes_t ln;
    lanes_of(&ln, width, lanes);
    size_t head = (size_t)4 * ln.active, wp = dst_cap;
    if (dst_cap < head)
        return IMIJ_LVL_E_SPACE;
    uint32_t st[16];
    for (uint32_t l = 0; l < ln.active; l++)
        st[l] = LVL_STATE_LOW;
    lvl_op ops[STEP_OPS];
    for (uint32_t r = height; r-- > 0;)
        for (uint32_t x = ln.lw; x-- > 0;) {
            int count = step_ops(scratch, S, r, x, &ln, n, typical, ops);
            if (count < 0)
                return count;
            for (int i = count; i-- > 0;) {
                const lvl_op *o = &ops[i];
                uint32_t f, cum;
                if (o->kind == 2) {
                    if (!efreq) { /* 2.14: without the direct-index table an escape decodes 0, state unchanged */
                        if (o->ctx)
                            return IMIJ_LVL_E_FREQ;
                        continue;
                    }
                    f = efreq[o->ctx], cum = ecum[o->ctx];
                } else {
                    uint32_t p = o->kind == 0 ? phase0[o->ctx] : cand[o->ctx];
                    f = o->bit ? LVL_M - p : p, cum = o->bit ? p : 0;
                }
                if (f == LVL_M)
                    continue; /* all of M: the decoder's state does not change */
                if (f == 0 || f > LVL_M || cum + f > LVL_M)
                    return IMIJ_LVL_E_FREQ;
                int err = put(st, o->lane, f, cum, dst, &wp, head);
                if (err)
                    return err;
            }
        }
    return close_stream(st, ln.active, dst, dst_cap, wp);
}
