/* entropy.c: one entropy-coded lossless unit (a stripe of one column group), end to end:
 * stripe layout (2.4, 2.5), interleaved 16-lane rANS with token, extra-bits and high extra-bits
 * phases (3.1), hybrid-integer tokens and zero runs (3.2), contexts with cross context and
 * ctx_shift (3.1), and reconstruction: unzigzag, decorrelation, predictors 0-9, near-lossless
 * (2.6, section 4). The output is the coded value of every slot (before the channel maps of
 * 2.1, which the caller applies vectorized).
 *
 * Plain C99, no globals, no allocation: the caller passes the output and scratch planes. Every
 * read of `body` is bounds-checked; every plane index is below width * height.
 */
#include <string.h>

#include "imij_kernels.h"

#define M_BITS 10
#define M_SLOTS (1u << M_BITS)
#define STATE_LOW (1u << 16)

typedef struct {
    const uint8_t *p;
    size_t pos, end;
} reader;

static int rd_u8(reader *r, uint32_t *v)
{
    if (r->pos >= r->end)
        return IMIJ_ENT_E_TRUNCATED;
    *v = r->p[r->pos++];
    return 0;
}

/* 0: LEB128, minimal, at most 10 bytes; lengths here must also fit size_t. */
static int rd_varint(reader *r, uint64_t *v)
{
    uint64_t value = 0;
    for (int i = 0; i < 10; i++) {
        if (r->pos >= r->end)
            return IMIJ_ENT_E_TRUNCATED;
        uint8_t b = r->p[r->pos++];
        if (i == 9 && b > 1)
            return IMIJ_ENT_E_VARINT;
        value |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0)
                return IMIJ_ENT_E_VARINT;
            *v = value;
            return 0;
        }
    }
    return IMIJ_ENT_E_VARINT;
}

static inline uint32_t mask_of(uint32_t n) { return n >= 32 ? 0xffffffffu : ((1u << n) - 1u); }

/* The bit length of a context sum (< 2^18). */
static inline uint32_t bit_length(uint32_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return v ? 32u - (uint32_t)__builtin_clz(v) : 0u;
#else
    uint32_t n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
#endif
}

/* 3.1: T(v) = min(v >> ctx_shift, 2^16). */
static inline uint32_t ctx_term(uint32_t v, uint32_t shift)
{
    v >>= shift;
    return v > 65536u ? 65536u : v;
}

/* sext_n: an n-bit two's-complement value (2.6, section 4). */
static inline int64_t sext(uint32_t v, uint32_t n)
{
    if (n == 0)
        return 0;
    uint32_t sign = 1u << (n - 1); /* n <= 32 */
    return (int64_t)(v & mask_of(n)) - (int64_t)((uint64_t)(v & sign) << 1);
}

/* floor(v / 2) for a signed v, without relying on the shift of a negative number. */
static inline int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* 3.1: a state below 2^16 takes the next word of the stream (at most one per lane and phase). */
#define RENORM(x)                                                                                  \
    do {                                                                                           \
        if ((x) < STATE_LOW) {                                                                     \
            if (wpos + 2 > slen)                                                                   \
                return IMIJ_ENT_E_WORDS;                                                           \
            (x) = (x) << 16 | (uint32_t)s[wpos] | (uint32_t)s[wpos + 1] << 8;                      \
            wpos += 2;                                                                             \
        }                                                                                          \
    } while (0)

/* 3.1 / 3.2: a token's value, or a zero run of len - 1 = base + e more positions of the lane. */
#define PUT_VALUE(i)                                                                               \
    do {                                                                                           \
        uint32_t l_ = lane_of[i], at_ = l_ * lw + x;                                               \
        uint64_t value_ = (uint64_t)m->base[sym_of[i]] + e_of[i];                                  \
        if (sym_of[i] >= nvalue) {                                                                 \
            /* positions past the unit's last one are never visited: the excess is ignored, as a  \
             * region decode stopping above them would (2.7) */                                    \
            uint32_t lane_w_ = l_ + 1 < active ? lw : last_w;                                      \
            uint64_t left_ = (uint64_t)(lane_w_ - 1 - x) + (uint64_t)(height - 1 - r) * lane_w_;   \
            run[l_] = (uint32_t)(value_ < left_ ? value_ : left_);                                 \
            row[at_] = 0;                                                                          \
        } else {                                                                                   \
            if (value_ > 0xffffffffu)                                                              \
                return IMIJ_ENT_E_VALUE;                                                           \
            row[at_] = (uint32_t)value_;                                                           \
        }                                                                                          \
    } while (0)

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define ALWAYS_INLINE inline
#endif

/* 3.1: one slot's stream of a unit: lanes decode in (step, phase, lane) order into u. `narrow`
 * (a constant at each call) says ctx_shift is 0 and this slot's residuals are below 2^16 (its
 * value tokens end below 2^n, 3.2), so T(v) = min(v >> ctx_shift, 2^16) is v itself for them;
 * `cross` adds slot 0's term. Every term is at most 2^16, so sums stay below 2^18. */
static ALWAYS_INLINE int decode_stream_as(const uint8_t *s, size_t slen, const imij_slot_model *m, uint32_t width,
                                          uint32_t height, uint32_t lanes, uint32_t *u, const uint32_t *u0,
                                          const int narrow, const int cross)
{
    uint32_t lw = (width + lanes - 1) / lanes; /* 2.3: lane width */
    uint32_t active = (width + lw - 1) / lw;   /* the non-empty prefix */
    uint32_t last_w = width - (active - 1) * lw; /* every lane but the last is lw wide */
    uint32_t st[16], run[16];
    size_t wpos = (size_t)4 * active;
    if (slen < wpos)
        return IMIJ_ENT_E_TRUNCATED;
    if ((slen - wpos) & 1)
        return IMIJ_ENT_E_WORDS; /* 3: after the states, a sequence of u16 words */
    for (uint32_t l = 0; l < active; l++) {
        st[l] = (uint32_t)s[4 * l] | (uint32_t)s[4 * l + 1] << 8 | (uint32_t)s[4 * l + 2] << 16 |
                (uint32_t)s[4 * l + 3] << 24;
        if (st[l] < STATE_LOW) /* 3: each initial state >= 2^16 */
            return IMIJ_ENT_E_STATE;
        run[l] = 0;
    }
    const uint32_t shift = m->ctx_shift, nvalue = m->nvalue;
    const uint8_t *nbits = m->nb;
    const uint32_t *table_of[33]; /* the table of each context sum's bit length (any 32-bit sum) */
    for (uint32_t c = 0; c < 33; c++)
        table_of[c] = m->dec[m->ctx_map[c > 15 ? 15 : c]];
    for (uint32_t r = 0; r < height; r++) {
        uint32_t *row = u + (size_t)r * width;
        const uint32_t *up = r ? row - width : row;
        const uint32_t *c0 = cross ? u0 + (size_t)r * width : row;
        for (uint32_t x = 0; x < lw; x++) {
            uint32_t nl = x < last_w ? active : active - 1; /* lanes with a position at x */
            uint32_t sym_of[16], e_of[16], lane_of[16], n = 0;
            /* token phase */
            for (uint32_t l = 0; l < nl; l++) {
                uint32_t at = l * lw + x;
                if (run[l]) { /* 3.1: inside a zero run: skip the step, output 0 */
                    run[l]--;
                    row[at] = 0;
                    continue;
                }
#define TERM(v) (narrow ? (v) : ctx_term((v), shift))
                uint32_t sum;
                if (r)
                    sum = x ? TERM(row[at - 1]) + TERM(up[at]) : 2 * TERM(up[at]);
                else
                    sum = x ? 2 * TERM(row[at - 1]) : 0;
                if (cross) /* slot 0 may be deeper than this slot: its term is always clamped */
                    sum += ctx_term(c0[at], shift);
#undef TERM
                uint32_t e = table_of[bit_length(sum)][st[l] & (M_SLOTS - 1)];
                uint32_t xs = (e >> 8 & 0x7ffu) * (st[l] >> M_BITS) + (e >> 19);
                RENORM(xs);
                st[l] = xs;
                sym_of[n] = e & 0xffu;
                e_of[n] = 0;
                lane_of[n++] = l;
            }
            /* extra-bits phase: n1 = min(nb, 16) bits from the state (nb = 0 takes none and the
             * state, already >= 2^16, reads no word) */
            for (uint32_t i = 0; i < n; i++) {
                uint32_t nb = nbits[sym_of[i]];
                if (nb) {
                    uint32_t l = lane_of[i], n1 = nb < 16 ? nb : 16, xs = st[l];
                    e_of[i] = xs & mask_of(n1);
                    xs >>= n1;
                    RENORM(xs);
                    st[l] = xs;
                }
            }
            if (m->high) { /* high extra-bits phase: nb - 16 more bits (samples_32) */
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t nb = nbits[sym_of[i]];
                    uint32_t l = lane_of[i], n2 = nb > 16 ? nb - 16u : 0, xs = st[l];
                    e_of[i] |= (xs & mask_of(n2)) << 16;
                    xs >>= n2;
                    RENORM(xs);
                    st[l] = xs;
                }
            }
            for (uint32_t i = 0; i < n; i++)
                PUT_VALUE(i);
        }
    }
    return 0;
}

static int decode_stream(const uint8_t *s, size_t slen, const imij_slot_model *m, uint32_t width,
                         uint32_t height, uint32_t lanes, uint32_t *u, const uint32_t *u0)
{
    int narrow = m->ctx_shift == 0 && m->depth <= 16; /* zigzag residuals of n <= 16 bits are < 2^16 */
    if (narrow)
        return m->cross ? decode_stream_as(s, slen, m, width, height, lanes, u, u0, 1, 1)
                        : decode_stream_as(s, slen, m, width, height, lanes, u, u0, 1, 0);
    return m->cross ? decode_stream_as(s, slen, m, width, height, lanes, u, u0, 0, 1)
                    : decode_stream_as(s, slen, m, width, height, lanes, u, u0, 0, 0);
}

static inline uint32_t med(uint32_t w, uint32_t n, uint32_t nw, uint32_t mask)
{
    uint32_t lo = w < n ? w : n, hi = w < n ? n : w, grad = (w + n - nw) & mask;
    uint32_t mid = nw <= lo ? hi : grad;
    return nw >= hi ? lo : mid;
}

static inline uint32_t paeth(uint32_t w, uint32_t n, uint32_t nw)
{
    int64_t p = (int64_t)w + n - nw; /* ties prefer W, then N */
    int64_t pa = p > w ? p - w : w - p, pb = p > n ? p - n : n - p, pc = p > nw ? p - nw : nw - p;
    uint32_t not_w = pb <= pc ? n : nw;
    return pa <= pb && pa <= pc ? w : not_w;
}

/* Section 4: the predictor of a position from lane-local neighbours of reconstructed values. */
static inline uint32_t predict(uint32_t id, const uint32_t *v, const uint32_t *ref, size_t at, uint32_t width,
                               uint32_t r, uint32_t x, uint32_t lane_w, uint32_t mask)
{
    if (r == 0) { /* stripe row 0: W with W = 0 at x = 0, or 7 in inter frames */
        if (id == 7)
            return ref[at];
        return x > 0 ? v[at - 1] : 0;
    }
    uint32_t n = v[at - width];
    uint32_t w = x > 0 ? v[at - 1] : n;
    uint32_t nw = x > 0 ? v[at - width - 1] : n;
    uint32_t ne = x + 1 < lane_w ? v[at - width + 1] : n;
    switch (id) {
    case 0:
        return w;
    case 1:
        return n;
    case 2:
        return (uint32_t)(((uint64_t)w + n) >> 1);
    case 3: /* MED (LOCO-I) */
        return med(w, n, nw, mask);
    case 4:
        return (w + n - nw) & mask;
    case 5: /* Paeth, ties prefer W, then N */
        return paeth(w, n, nw);
    case 6:
        return (uint32_t)(((uint64_t)w + ne) >> 1);
    case 7:
        return ref[at];
    case 8: { /* (W + R - RW): RW with W's edge rules; at x = 0 RW = RN */
        uint32_t rn = ref[at - width];
        uint32_t rw = x > 0 ? ref[at - 1] : rn;
        return (w + ref[at] - rw) & mask;
    }
    default: { /* 9: (N + R - RN) */
        return (n + ref[at] - ref[at - width]) & mask;
    }
    }
}

/* Section 4, predictors 0-6 on one lane of one row (r > 0, exact): v = (pred + d) & mask, with
 * the lane-local edges of 2.3 (W, NW = N at x = 0; NE = N at the lane's last column). */
#define INTRA_LANE(EXPR)                                                                           \
    do {                                                                                           \
        for (uint32_t x = 0; x < lane_w; x++) {                                                    \
            uint32_t n = up[x], w = x ? cur[x - 1] : n, nw = x ? up[x - 1] : n;                    \
            uint32_t ne = x + 1 < lane_w ? up[x + 1] : n;                                          \
            (void)w, (void)nw, (void)ne;                                                           \
            cur[x] = ((EXPR) + dd[x]) & mask;                                                      \
        }                                                                                          \
    } while (0)

/* One lane of one row with an intra predictor, the predictor chosen once per lane. */
static void intra_lane(uint32_t id, uint32_t *cur, const uint32_t *up, const uint32_t *dd, uint32_t lane_w,
                       uint32_t mask)
{
    switch (id) {
    case 0:
        INTRA_LANE(w);
        break;
    case 1:
        INTRA_LANE(n);
        break;
    case 2:
        INTRA_LANE((uint32_t)(((uint64_t)w + n) >> 1));
        break;
    case 3:
        INTRA_LANE(med(w, n, nw, mask));
        break;
    case 4:
        INTRA_LANE(w + n - nw);
        break;
    case 5:
        INTRA_LANE(paeth(w, n, nw));
        break;
    default: /* 6 */
        INTRA_LANE((uint32_t)(((uint64_t)w + ne) >> 1));
        break;
    }
}

/* Reconstruct one slot plane in place of its residual plane d (section 4 step 3). */
static void reconstruct(uint32_t *v, const uint32_t *d, const uint8_t *pred_ids, const uint32_t *ref,
                        uint32_t width, uint32_t height, uint32_t lanes, uint32_t depth, uint32_t delta)
{
    uint32_t lw = (width + lanes - 1) / lanes;
    uint32_t mask = mask_of(depth);
    int64_t step = 2 * (int64_t)delta + 1, top = (int64_t)mask;
    for (uint32_t r = 0; r < height; r++) {
        uint32_t id = pred_ids[r];
        for (uint32_t c0 = 0; c0 < width; c0 += lw) {
            uint32_t lane_w = c0 + lw <= width ? lw : width - c0;
            size_t at0 = (size_t)r * width + c0;
            if (r > 0 && id <= 6 && !delta) { /* the common case, one predictor per lane row */
                intra_lane(id, v + at0, v + at0 - width, d + at0, lane_w, mask);
                continue;
            }
            for (uint32_t x = 0; x < lane_w; x++) {
                size_t at = at0 + x;
                uint32_t p = predict(id, v, ref, at, width, r, x, lane_w, mask);
                if (delta) { /* 2.6: v = clamp(pred + sext_n(d) (2 delta + 1), 0, 2^n - 1) */
                    int64_t q = sext(d[at], depth) * step + (int64_t)p;
                    v[at] = (uint32_t)(q < 0 ? 0 : q > top ? top : q);
                } else {
                    v[at] = (p + d[at]) & mask;
                }
            }
        }
    }
}

static int read_predictors(reader *rd, uint32_t height, int inter, uint8_t *ids)
{
    size_t count = ((size_t)height + 1) / 2;
    if (rd->end - rd->pos < count)
        return IMIJ_ENT_E_TRUNCATED;
    for (uint32_t r = 0; r < height; r++) {
        uint32_t id = (rd->p[rd->pos + r / 2] >> (4 * (r & 1))) & 15u;
        if (id > (inter ? 9u : 6u))
            return IMIJ_ENT_E_PREDICTOR; /* 2.4: 0..=6, 0..=9 in inter frames */
        if (r == 0 && id != 0 && !(inter && id == 7))
            return IMIJ_ENT_E_PREDICTOR; /* 2.4: row 0 must be W, or 7 in inter frames */
        ids[r] = (uint8_t)id;
    }
    rd->pos += count;
    return 0;
}

/* 4 step 1: unzigzag(u) mod 2^n. */
static inline uint32_t unzigzag(uint32_t u, uint32_t mask) { return ((u >> 1) ^ (0u - (u & 1u))) & mask; }

int imij_entropy_unit(const uint8_t *body, size_t len, const imij_unit *unit, const uint32_t *reference,
                      uint32_t *out, uint32_t *scratch, uint8_t *pred_ids)
{
    uint32_t width = unit->width, height = unit->height, nslots = unit->nslots;
    size_t plane = (size_t)width * height;
    if (width == 0 || height == 0 || unit->lanes < 1 || unit->lanes > 16 || nslots > 8)
        return IMIJ_ENT_E_ARGS;
    reader rd = {body, 0, len};
    uint32_t decor;
    int err = rd_u8(&rd, &decor);
    if (err)
        return err;
    int inter = reference != NULL && unit->inter_allowed;
    if (decor == 0x80) { /* 2.5: a palette stripe */
        const imij_slot_model *pm = unit->palette;
        if (!pm)
            return IMIJ_ENT_E_PALETTE; /* needs head present bit 0 and slots of depth <= 16 */
        uint32_t count;
        if ((err = rd_u8(&rd, &count)))
            return err;
        count += 1;
        uint16_t entries[256][8];
        for (uint32_t e = 0; e < count; e++) {
            for (uint32_t s = 0; s < nslots; s++) {
                const imij_slot_model *m = &unit->slots[s];
                uint32_t v, hi = 0;
                if ((err = rd_u8(&rd, &v)))
                    return err;
                if (m->depth > 8 && (err = rd_u8(&rd, &hi)))
                    return err;
                v |= hi << 8;
                if (v > mask_of(m->depth))
                    return IMIJ_ENT_E_PALETTE; /* 2.5: each entry < 2^n_s */
                entries[e][s] = (uint16_t)v;
            }
        }
        if ((err = read_predictors(&rd, height, 0, pred_ids)))
            return err;
        uint64_t slen;
        if ((err = rd_varint(&rd, &slen)))
            return err;
        if (slen != rd.end - rd.pos)
            return IMIJ_ENT_E_LENGTHS;
        uint32_t *u = scratch, *idx = scratch + plane;
        if ((err = decode_stream(body + rd.pos, (size_t)slen, pm, width, height, unit->lanes, u, NULL)))
            return err;
        for (size_t i = 0; i < plane; i++)
            u[i] = unzigzag(u[i], 0xffu);
        reconstruct(idx, u, pred_ids, NULL, width, height, unit->lanes, 8, 0);
        for (uint32_t s = 0; s < nslots; s++)
            for (size_t i = 0; i < plane; i++)
                out[s * plane + i] = entries[idx[i] < count ? idx[i] : 0][s]; /* entry 0 when i >= n */
        return 0;
    }
    if (decor >= 0x81 && decor <= 0x84)
        return IMIJ_ENT_E_GATED; /* 2.10, 2.14: bilevel and template stripes need their features */
    if (decor > 3 || (decor && !unit->decor_allowed))
        return IMIJ_ENT_E_DECOR; /* 2.4 */
    if ((err = read_predictors(&rd, height, inter, pred_ids)))
        return err;
    uint64_t lens[8], total = 0;
    for (uint32_t s = 0; s < nslots; s++) {
        if ((err = rd_varint(&rd, &lens[s])))
            return err;
        if (lens[s] > rd.end)
            return IMIJ_ENT_E_LENGTHS;
        total += lens[s];
    }
    if (total != rd.end - rd.pos)
        return IMIJ_ENT_E_LENGTHS; /* the streams fill the record */
    size_t at = rd.pos;
    for (uint32_t s = 0; s < nslots; s++) {
        const imij_slot_model *m = &unit->slots[s];
        if ((err = decode_stream(body + at, (size_t)lens[s], m, width, height, unit->lanes, scratch + s * plane,
                                 scratch)))
            return err;
        at += (size_t)lens[s];
    }
    for (uint32_t s = 0; s < nslots; s++) { /* 4 step 1 */
        uint32_t mask = mask_of(unit->slots[s].depth);
        uint32_t *u = scratch + s * plane;
        for (size_t i = 0; i < plane; i++)
            u[i] = unzigzag(u[i], mask);
    }
    if (decor) { /* 4 step 2: undo decorrelation on (G, R, B) residuals */
        uint32_t n = unit->slots[0].depth, mask = mask_of(n);
        uint32_t *g = scratch, *rr = scratch + plane, *b = scratch + 2 * plane;
        for (size_t i = 0; i < plane; i++)
            rr[i] = (rr[i] + g[i]) & mask;
        if (decor == 1) {
            for (size_t i = 0; i < plane; i++)
                b[i] = (b[i] + g[i]) & mask;
        } else if (decor == 2) {
            for (size_t i = 0; i < plane; i++)
                b[i] = (b[i] + rr[i]) & mask;
        } else {
            for (size_t i = 0; i < plane; i++) { /* floor((sext(R) + sext(G)) / 2) */
                int64_t sum = sext(rr[i], n) + sext(g[i], n);
                b[i] = (uint32_t)((int64_t)b[i] + floor_half(sum)) & mask;
            }
        }
    }
    for (uint32_t s = 0; s < nslots; s++) /* 4 step 3 */
        reconstruct(out + s * plane, scratch + s * plane, pred_ids, inter ? reference + s * plane : NULL, width,
                    height, unit->lanes, unit->slots[s].depth, unit->slots[s].delta);
    return 0;
}
