/* bilevel.c: bilevel stripes (2.10: layouts 0x81, 0x82) and template palette stripes (2.14:
 * layouts 0x83, 0x84) of one unit, end to end: layout, entries, typical rows, the ten-pixel
 * template with its lane-edge and stripe-top rules, the binary rANS step, the candidate and
 * escape phases in (step, phase, lane) word order, and the entries lookup. Also the encoder's
 * side: outcome counts and the reverse rANS stream of a known plane, without listing its
 * operations (each step's operations are rebuilt from the plane, last step first).
 *
 * Plain C99, no globals, no allocation: the caller passes the output planes and the index
 * scratch (the SIMD path's lane-major ring goes there when it fits, else on the stack, at most
 * 25 KiB). Every read of `body` is bounds-checked; every plane index is below width * height.
 */
#include <string.h>

#include "imij_kernels.h"
#include "internal/portable.h"
#include "internal/rans_avx2.h"

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
        return IMIJ_E_TRUNCATED;
    if ((len - head) & 1)
        return IMIJ_E_WORDS;
    for (uint32_t l = 0; l < active; l++) {
        uint32_t v = (uint32_t)s[4 * l] | (uint32_t)s[4 * l + 1] << 8 | (uint32_t)s[4 * l + 2] << 16 |
                     (uint32_t)s[4 * l + 3] << 24;
        if (v < LVL_STATE_LOW)
            return IMIJ_E_STATE;
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
            return IMIJ_E_WORDS;
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

/* The scalar decoders' index plane is a ring of three padded rows (stride S = w + 4, two zero
 * columns on each side, so every template read is a plain load: rows above the stripe and
 * columns outside the group read 0, 2.10): row r and the two above it, which are all a template
 * reads; rows above the stripe are the ring's zero rows at the start. The caller's scratch keeps
 * RING_SLACK bytes past the ring (imij_level_unit_decode); the SIMD path uses it for one row-major row and the
 * 16-byte stores of the last lane's last block (up to lanes * lw < 2 w bytes). (The encoder's
 * side pads the whole known plane the same way: pad_plane.) */
#define RING_SLACK 16

static inline uint8_t *ring_row(uint8_t *P, size_t S, uint32_t r2) { return P + (size_t)(r2 % 3) * S + 2; } /* r2 = r + 2 */

/* Where each decoded row goes: coded planes (section 4 step 4 left to the caller), or the samples
 * through a store; word[s][k] is slot s's coded value, or sample word, of index byte k. */
typedef struct {
    uint32_t w, nslots, ob;
    size_t plane;                      /* w * h */
    void *out;                         /* the coded planes when store is NULL */
    const imij_sample_store *store;
    uint32_t word[8][256];
    int packed;          /* bytes, 3 or 4 channels all slots', a pixel's channels adjacent: pixel[k] */
    uint32_t pixel[256]; /* index byte k's pixel as little-endian bytes (channel c at byte c) */
    uint8_t *bytes;      /* one byte per pixel, row r at bytes + r * stride (else NULL): byte[k] */
    int64_t stride;
    uint32_t slices;     /* index bytes from 16 * slices give index 0's byte (n entries or t in 0..=1) */
    uint8_t byte[256];
} row_sink;

/* Whether rows go out as one byte per pixel (row_sink.bytes): one slot into 8-bit coded planes,
 * or stored as 8-bit samples of one channel, nothing else in the pixel; fills k->byte. */
static void byte_rows(row_sink *k)
{
    const imij_sample_store *st = k->store;
    k->bytes = NULL;
    if (k->nslots != 1)
        return;
    if (!st && k->ob == 1)
        k->bytes = (uint8_t *)k->out, k->stride = k->w;
    else if (st && st->esize == 1 && !st->nconst && st->pixel_stride == 1)
        k->bytes = st->out + st->channel[0], k->stride = st->row_stride;
    for (uint32_t i = 0; i < 256; i++)
        k->byte[i] = (uint8_t)k->word[0][i];
}

/* A row of bytes through a 256-entry table. */
static void map_bytes(uint8_t *o, const uint8_t *src, uint32_t w, const uint8_t *byte)
{
    uint32_t c = 0;
    for (; c + 4 <= w; c += 4) {
        uint8_t a = byte[src[c]], b = byte[src[c + 1]], d = byte[src[c + 2]], e = byte[src[c + 3]];
        o[c] = a, o[c + 1] = b, o[c + 2] = d, o[c + 3] = e;
    }
    for (; c < w; c++)
        o[c] = byte[src[c]];
}

/* One row of coded values from its index bytes into out_bytes (1, 2 or 4) per value at `at`. */
static void store_row(void *out, uint32_t out_bytes, size_t at, const uint8_t *src, uint32_t w, const uint32_t *word)
{
    if (out_bytes == 1) {
        uint8_t *o = (uint8_t *)out + at;
        for (uint32_t c = 0; c < w; c++)
            o[c] = (uint8_t)word[src[c]];
    } else if (out_bytes == 2) {
        uint16_t *o = (uint16_t *)out + at;
        for (uint32_t c = 0; c < w; c++)
            o[c] = (uint16_t)word[src[c]];
    } else {
        uint32_t *o = (uint32_t *)out + at;
        for (uint32_t c = 0; c < w; c++)
            o[c] = word[src[c]];
    }
}

/* The samples of row r through the store: each pixel's slot words and Const channels (locals:
 * the stores go through byte pointers, which may alias the store struct). */
#define SINK_SAMPLES(T)                                                                            \
    for (uint32_t c = 0; c < w; c++) {                                                             \
        T *px = (T *)(row + (int64_t)c * pixel_stride);                                            \
        for (uint32_t s = 0; s < nslots; s++)                                                      \
            px[ch[s]] = (T)k->word[s][src[c]];                                                     \
        for (uint32_t i = 0; i < nconst; i++)                                                      \
            px[cch[i]] = (T)cword[i];                                                              \
    }

/* Whether rows can go out as packed pixels (row_sink.packed; little-endian hosts), filling
 * k->pixel: 8-bit samples, 3 or 4 channels one pixel_stride apart, each one slot's. */
static int packed_pixels(row_sink *k)
{
    const imij_sample_store *st = k->store;
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    if (!st || !first || st->esize != 1 || st->nconst || (k->nslots != 3 && k->nslots != 4) ||
        st->pixel_stride != (int64_t)k->nslots)
        return 0;
    uint32_t seen = 0;
    for (uint32_t s = 0; s < k->nslots; s++)
        seen |= st->channel[s] < k->nslots ? 1u << st->channel[s] : 0u;
    if (seen != (1u << k->nslots) - 1u) /* every channel one slot's */
        return 0;
    for (uint32_t i = 0; i < 256; i++) {
        k->pixel[i] = 0;
        for (uint32_t s = 0; s < k->nslots; s++)
            k->pixel[i] |= (k->word[s][i] & 0xffu) << (8 * st->channel[s]);
    }
    return 1;
}

static void sink_row(const row_sink *k, uint32_t r, const uint8_t *src)
{
    const imij_sample_store *st = k->store;
    uint32_t w = k->w, nslots = k->nslots;
    if (k->bytes) {
        map_bytes(k->bytes + (int64_t)r * k->stride, src, w, k->byte);
        return;
    }
    if (!st) {
        for (uint32_t s = 0; s < nslots; s++)
            store_row(k->out, k->ob, s * k->plane + (size_t)r * w, src, w, k->word[s]);
        return;
    }
    uint8_t *row = st->out + (int64_t)r * st->row_stride;
    int64_t pixel_stride = st->pixel_stride;
    uint32_t nconst = st->nconst, ch[8], cch[8], cword[8];
    memcpy(ch, st->channel, sizeof ch);
    memcpy(cch, st->const_channel, sizeof cch);
    memcpy(cword, st->const_word, sizeof cword);
    if (nslots == 1 && !nconst && pixel_stride == st->esize) { /* one channel: a row of words */
        store_row(row + (size_t)ch[0] * st->esize, st->esize, 0, src, w, k->word[0]);
        return;
    }
    if (k->packed) { /* a pixel's bytes in one store, the last pixel's alone (its 4th byte is past it) */
        const uint32_t *pixel = k->pixel;
        uint32_t c = 0;
        for (; c + 1 < w; c++)
            memcpy(row + (size_t)c * pixel_stride, &pixel[src[c]], 4);
        memcpy(row + (size_t)c * pixel_stride, &pixel[src[c]], (size_t)pixel_stride);
        return;
    }
    if (st->esize == 1) {
        SINK_SAMPLES(uint8_t)
    } else if (st->esize == 2) {
        SINK_SAMPLES(uint16_t)
    } else {
        SINK_SAMPLES(uint32_t)
    }
}
#undef SINK_SAMPLES

/* 2.10: every pixel's t, step by step, lanes ascending (the scalar path). The context slides
 * along the lane: from (r, c - 1) to (r, c) the rows above shift by one column and take one new
 * pixel each (k 2: (r - 2, c + 1), k 7: (r - 1, c + 2)), and the current row takes the pixel
 * just decoded. At x = 0 the current-row pixels are left of the lane's first column: they read
 * one row up. */
static int decode_binary(lvl_rans *rs, const uint16_t *prob, uint8_t *P, size_t S, uint32_t h, const lanes_t *ln,
                         const row_sink *sink)
{
    uint32_t ctx[16] = {0}, last[16] = {0};
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *row = ring_row(P, S, r + 2);
        const uint8_t *up = ring_row(P, S, r + 1), *up2 = ring_row(P, S, r);
        for (uint32_t x = 0; x < ln->lw; x++) {
            uint32_t la = taking(ln, x);
            for (uint32_t l = 0; l < la; l++) {
                ptrdiff_t c = (ptrdiff_t)ln->start[l] + x; /* signed: c - 2 and c - 1 reach the zero padding */
                uint32_t cx, t;
                if (x == 0)
                    cx = (uint32_t)up2[c - 1] | (uint32_t)up2[c] << 1 | (uint32_t)up2[c + 1] << 2 |
                         (uint32_t)up[c - 2] << 3 | (uint32_t)up[c - 1] << 4 | (uint32_t)up[c] << 5 |
                         (uint32_t)up[c + 1] << 6 | (uint32_t)up[c + 2] << 7 | (uint32_t)up[c - 2] << 8 |
                         (uint32_t)up[c - 1] << 9;
                else
                    cx = ((ctx[l] >> 1) & 0x17bu) | (uint32_t)up2[c + 1] << 2 | (uint32_t)up[c + 2] << 7 |
                         last[l] << 9;
                int err = binary(rs, l, prob[cx], &t);
                if (err)
                    return err;
                ctx[l] = cx;
                last[l] = t;
                row[c] = (uint8_t)t;
            }
        }
        sink_row(sink, r, row);
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

/* 2.14: every pixel's index, step by step (the scalar path): phase 0 over the lanes, then the
 * candidate and escape phases over the lanes phase 0 left open. */
static int decode_template(lvl_rans *rs, const imij_template_tables *tt, uint32_t n, const uint8_t *rows,
                           uint8_t *P, size_t S, uint32_t h, const lanes_t *ln, const row_sink *sink)
{
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *row = ring_row(P, S, r + 2);
        const uint8_t *up = ring_row(P, S, r + 1), *up2 = ring_row(P, S, r);
        if (rows[r >> 3] >> (r & 7) & 1) { /* a typical row copies the row above (row 0: the zero row) */
            memcpy(row, up, S - 4);
            sink_row(sink, r, row);
            continue;
        }
        for (uint32_t x = 0; x < ln->lw; x++) {
            uint32_t tk[16][10], open[16], nopen = 0, la = taking(ln, x);
            /* 1. phase 0, every active lane */
            for (uint32_t l = 0; l < la; l++) {
                ptrdiff_t c = (ptrdiff_t)ln->start[l] + x; /* signed: c - 2 and c - 1 reach the zero padding */
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
        sink_row(sink, r, row);
    }
    return 0;
}


#if IMIJ_ENT_AVX2
/* ---- the SIMD path: a lane-major ring ------------------------------------------------------
 * The SIMD decoders keep the ring's three rows lane-major: lane column x of all 16 lanes in 16
 * bytes (byte l: lane l's pixel), so a step's ten template pixels are ten plain loads and every
 * lane of a step decodes at once. Columns -2, -1, lw and lw + 1 are each row's halo, the pixels
 * a lane's template reads across its edges in the rows above (2.10): lane l - 1's last two
 * columns and lane l + 1's first two, 0 outside the group; the inactive lanes' bytes and the
 * narrower last lane's past its width stay 0. While a row decodes, its columns -2 and -1 hold
 * the row above's: left of a lane's first column the current row reads one row up (2.10). The
 * rows reach the sink row-major (lm_row_out). */

#define LM_STACK_LW 512u /* the widest lanes of a ring on the stack (3 * (lw + 4) * 16 bytes) */

/* Where the SIMD path keeps its ring of lanes lw wide: in the index scratch after the row-major
 * row (lanes * lw bytes, the last lane's 16-byte blocks included), 16-byte aligned, when the
 * scratch holds both; else NULL (then a ring on the stack, when lw <= LM_STACK_LW). */
static uint8_t *lm_ring_in(uint8_t *index, size_t index_len, const lanes_t *ln)
{
    size_t row = (size_t)ln->active * ln->lw, ring = (size_t)48 * ((size_t)ln->lw + 4);
    if (index_len < row || index_len - row < ring + 15)
        return NULL;
    uint8_t *R = index + row;
    return R + ((16u - ((uintptr_t)R & 15u)) & 15u);
}

/* A phase reads at most 16 words (one per lane), 32 bytes: the SIMD steps read the stream in place
 * while 32 bytes are left, then from a zero-padded copy of its last 32 bytes; a step that took
 * words past the end is the stream running short, as the scalar path's first missing word is. */
#define LVL_TAIL 32

typedef struct {
    size_t at;                    /* where the copy starts in the stream */
    uint8_t bytes[2 * LVL_TAIL];  /* the stream's last LVL_TAIL bytes, then zeros */
} lvl_tail;

static void tail_of(lvl_tail *tl, const lvl_rans *rs)
{
    tl->at = rs->len > LVL_TAIL ? rs->len - LVL_TAIL : 0;
    memset(tl->bytes, 0, sizeof tl->bytes);
    memcpy(tl->bytes, rs->s + tl->at, rs->len - tl->at);
}

/* The word pointer of a SIMD phase: in place, or in the tail copy near the end. */
static inline const uint8_t *words_at(const lvl_rans *rs, const lvl_tail *tl)
{
    return rs->len - rs->pos >= LVL_TAIL ? rs->s + rs->pos : tl->bytes + (rs->pos - tl->at);
}

/* 3.1 after a SIMD phase that read from `from` up to `to`: advance, or E_WORDS past the end. */
static inline int words_taken(lvl_rans *rs, const uint8_t *from, const uint8_t *to)
{
    rs->pos += (size_t)(to - from);
    return rs->pos > rs->len ? IMIJ_E_WORDS : 0;
}

/* Bits 0-15 (lane l: bit l) as bytes 0xff / 0. */
static inline AVX2_FN __m128i lm_bytes(uint32_t bits)
{
    const __m128i sel = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    __m128i v = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)bits), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1,
                                                                                 1, 1, 1));
    return _mm_cmpeq_epi8(_mm_and_si128(v, sel), sel);
}

/* One binary decision of 8 lanes (2.10: t = 1 if slot >= p, the state update, 3.1's
 * renormalization of the `live` lanes); the states stay in *x. Returns t as masks. */
static inline AVX2_FN __m256i lm_step8(__m256i *x, __m256i p, __m256i live, const uint8_t **w)
{
    __m256i slot = _mm256_and_si256(*x, _mm256_set1_epi32(LVL_M - 1u));
    __m256i t = _mm256_cmpgt_epi32(slot, _mm256_sub_epi32(p, _mm256_set1_epi32(1))); /* slot >= p */
    __m256i freq = _mm256_blendv_epi8(p, _mm256_sub_epi32(_mm256_set1_epi32(LVL_M), p), t);
    __m256i y = _mm256_sub_epi32(_mm256_add_epi32(_mm256_mullo_epi32(freq, _mm256_srli_epi32(*x, LVL_M_BITS)), slot),
                                 _mm256_and_si256(p, t));
    *x = _mm256_blendv_epi8(*x, simd_renorm(y, live, w), live);
    return _mm256_and_si256(t, live);
}

/* 2.10 / 2.14: the binary decisions of the 8 lanes of states *x in `part` (bits 0-7); returns
 * the lanes whose t is 1. */
static inline AVX2_FN uint32_t lm_half(__m256i *x, __m256i p, uint32_t part, const uint8_t **w)
{
    const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i live = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)part), sel), sel);
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(lm_step8(x, p, live, w)));
}

/* The phase-0 probabilities of 16 lanes whose context bytes (lane l: byte l) are lo (bits 0-7)
 * and hi (bits 8-9), from the 1024 32-bit entries of p32: lanes 0-7 in p[0], 8-15 in p[1] (when
 * two). */
static inline AVX2_FN void lm_probs(const uint32_t *p32, __m128i lo, __m128i hi, int two, __m256i *p)
{
    p[0] = _mm256_i32gather_epi32((const int *)p32, _mm256_cvtepu16_epi32(_mm_unpacklo_epi8(lo, hi)), 4);
    if (two)
        p[1] = _mm256_i32gather_epi32((const int *)p32, _mm256_cvtepu16_epi32(_mm_unpackhi_epi8(lo, hi)), 4);
}

/* The binary decisions of the lanes in `part` (bits 0-15; states s[0], s[1], probabilities p[0],
 * p[1]): one phase, its words taken. *ones: the lanes whose t is 1. */
static inline AVX2_FN int lm_phase(lvl_rans *rs, const lvl_tail *tl, __m256i *s, const __m256i *p, uint32_t part,
                                   uint32_t *ones)
{
    const uint8_t *from = words_at(rs, tl), *w = from;
    uint32_t t = 0;
    if (part & 0xffu)
        t = lm_half(&s[0], p[0], part & 0xffu, &w);
    if (part >> 8)
        t |= lm_half(&s[1], p[1], part >> 8, &w) << 8;
    *ones = t;
    return words_taken(rs, from, w);
}

/* Row r2's (r + 2's) lane column 0 in the ring R of lanes lw wide. */
static inline uint8_t *lm_row(uint8_t *R, uint32_t lw, uint32_t r2)
{
    return R + ((size_t)(r2 % 3) * (lw + 4) + 2) * 16;
}

/* A row of the ring decoded: its halo from its own columns, for the rows below. */
static inline AVX2_FN void lm_halo(uint8_t *C, uint32_t lw)
{
    __m128i a = _mm_load_si128((const __m128i *)(C + (size_t)(lw - 2) * 16));
    __m128i b = _mm_load_si128((const __m128i *)(C + (size_t)(lw - 1) * 16));
    __m128i c = _mm_load_si128((const __m128i *)C), d = _mm_load_si128((const __m128i *)(C + 16));
    _mm_store_si128((__m128i *)(C - 32), _mm_slli_si128(a, 1)); /* lane l: lane l - 1's columns */
    _mm_store_si128((__m128i *)(C - 16), _mm_slli_si128(b, 1));
    _mm_store_si128((__m128i *)(C + (size_t)lw * 16), _mm_srli_si128(c, 1)); /* lane l: lane l + 1's */
    _mm_store_si128((__m128i *)(C + (size_t)(lw + 1) * 16), _mm_srli_si128(d, 1));
}

/* 16 lane columns from x (16 bytes each) as 16 bytes of each lane in out[l]. */
static inline AVX2_FN void lm_transpose(const uint8_t *C, __m128i *out)
{
    __m128i a[16], b[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm_load_si128((const __m128i *)(C + 16 * i));
    for (int i = 0; i < 8; i++) { /* b[i]: lanes 0-7, b[8 + i]: lanes 8-15, columns 2i, 2i + 1 */
        b[i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
        b[8 + i] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
    }
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < 4; i++) { /* a[8g + i]: lanes 8g..8g+3, a[8g + 4 + i]: 8g+4..8g+7; columns 4i..4i+3 */
            a[8 * g + i] = _mm_unpacklo_epi16(b[8 * g + 2 * i], b[8 * g + 2 * i + 1]);
            a[8 * g + 4 + i] = _mm_unpackhi_epi16(b[8 * g + 2 * i], b[8 * g + 2 * i + 1]);
        }
    for (int q = 0; q < 4; q++) { /* lanes 4q..4q+3: b[4q] lanes +0,+1 and b[4q + 1] +2,+3 of columns 0-7, b[4q + 2], b[4q + 3] of 8-15 */
        b[4 * q] = _mm_unpacklo_epi32(a[4 * q], a[4 * q + 1]);
        b[4 * q + 1] = _mm_unpackhi_epi32(a[4 * q], a[4 * q + 1]);
        b[4 * q + 2] = _mm_unpacklo_epi32(a[4 * q + 2], a[4 * q + 3]);
        b[4 * q + 3] = _mm_unpackhi_epi32(a[4 * q + 2], a[4 * q + 3]);
    }
    for (int q = 0; q < 4; q++) {
        out[4 * q] = _mm_unpacklo_epi64(b[4 * q], b[4 * q + 2]);
        out[4 * q + 1] = _mm_unpackhi_epi64(b[4 * q], b[4 * q + 2]);
        out[4 * q + 2] = _mm_unpacklo_epi64(b[4 * q + 1], b[4 * q + 3]);
        out[4 * q + 3] = _mm_unpackhi_epi64(b[4 * q + 1], b[4 * q + 3]);
    }
}

/* The byte table's first 16 * slices entries (slices 1..=8) as vectors, for lm_map. */
typedef struct {
    __m128i tab[8], last;
    uint32_t slices;
} lm_bytemap;

/* 16 index bytes through a lm_bytemap (an index past its entries reads entry 0, as the table
 * does past the stripe's entries). */
static inline AVX2_FN __m128i lm_map(__m128i v, const lm_bytemap *bm)
{
    v = _mm_and_si128(v, _mm_cmpeq_epi8(_mm_min_epu8(v, bm->last), v)); /* past: 0 */
    if (bm->slices == 1)
        return _mm_shuffle_epi8(bm->tab[0], v);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15)), out = _mm_shuffle_epi8(bm->tab[0], v);
    out = _mm_and_si128(out, _mm_cmpeq_epi8(hi, _mm_setzero_si128()));
    for (uint32_t s = 1; s < bm->slices; s++) {
        __m128i in = _mm_cmpeq_epi8(hi, _mm_set1_epi8((char)s));
        out = _mm_or_si128(out, _mm_and_si128(in, _mm_shuffle_epi8(bm->tab[s], v)));
    }
    return out;
}

/* A decoded ring row C, row-major into `row` (the unit's width, and room up to lanes * lw), then
 * to the sink. */
static AVX2_FN void lm_row_out(const uint8_t *C, const lanes_t *ln, uint8_t *row, const row_sink *sink, uint32_t r)
{
    uint32_t lw = ln->lw, la = ln->active;
    if (sink->bytes && sink->slices <= 8 && lw >= 16) { /* straight to the row, by 16-entry tables */
        uint8_t *dst = sink->bytes + (int64_t)r * sink->stride;
        lm_bytemap bm;
        bm.slices = sink->slices;
        bm.last = _mm_set1_epi8((char)(16 * bm.slices - 1));
        for (uint32_t s = 0; s < bm.slices; s++)
            bm.tab[s] = _mm_loadu_si128((const __m128i *)(sink->byte + 16 * s));
        uint32_t wl = ln->width[la - 1], x = 0;
        for (;; x += 16) {
            if (x > lw - 16)
                x = lw - 16;
            __m128i out[16];
            lm_transpose(C + (size_t)x * 16, out);
            uint32_t full = x + 16 > wl ? la - 1 : la; /* the last lane's tail: below */
            for (uint32_t l = 0; l < full; l++)
                _mm_storeu_si128((__m128i *)(dst + ln->start[l] + x), lm_map(out[l], &bm));
            if (x == lw - 16)
                break;
        }
        uint32_t x0 = wl >= 16 ? wl & ~15u : 0, s = ln->start[la - 1], top = 16 * bm.slices;
        for (x = x0; x < wl; x++) {
            uint32_t v = C[(size_t)x * 16 + la - 1];
            dst[s + x] = sink->byte[v < top ? v : 0];
        }
        return;
    }
    if (lw >= 16) { /* blocks of 16 columns, the last one ending at lw (overlapping the one before) */
        for (uint32_t x = 0;; x += 16) {
            if (x > lw - 16)
                x = lw - 16;
            __m128i out[16];
            lm_transpose(C + (size_t)x * 16, out);
            for (uint32_t l = 0; l < la; l++)
                _mm_storeu_si128((__m128i *)(row + ln->start[l] + x), out[l]);
            if (x == lw - 16)
                break;
        }
    } else {
        for (uint32_t l = 0; l < la; l++)
            for (uint32_t x = 0; x < ln->width[l]; x++)
                row[ln->start[l] + x] = C[(size_t)x * 16 + l];
    }
    sink_row(sink, r, row);
}

/* The lanes decoding step x (bits). */
static inline uint32_t lm_live(const lanes_t *ln, uint32_t x)
{
    return (1u << taking(ln, x)) - 1u;
}

/* Lanes 0-7 / 8-15 of a 16-bit-per-lane vector (lane l: element l) as 32-bit lanes. */
static inline AVX2_FN __m256i lm_lo32(__m128i lo8, __m128i hi8) { return _mm256_cvtepu16_epi32(_mm_unpacklo_epi8(lo8, hi8)); }
static inline AVX2_FN __m256i lm_hi32(__m128i lo8, __m128i hi8) { return _mm256_cvtepu16_epi32(_mm_unpackhi_epi8(lo8, hi8)); }

/* Two vectors of 8 lanes' masks as 16 bytes (lane l: byte l). */
static inline AVX2_FN __m128i lm_pack(__m256i a, __m256i b)
{
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
    return _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

/* 2.10 / 2.14 with two values on the lane-major ring. The pixels of the rows above and t_8 give
 * 9 bits R = sum of t_k << k (k < 9) and the probability is tab[W * 512 + R] (2.10: prob[R |
 * W << 9]; 2.14: p of the context of the values, a bijection of R and W). Each step gathers both
 * of the next step's probabilities before it decides, so its decision only picks one: the
 * probability look-up leaves the chain from one step's outcome to the next. flip: the decision
 * is m, the value m xor W (2.14); else the value itself (2.10). rows: typical rows (2.14) or NULL. */
static AVX2_FN int lm_twovalue(lvl_rans *rs, const uint32_t *tab, int flip, const uint8_t *rows, uint8_t *R,
                               uint8_t *rowbuf, uint32_t h, const lanes_t *ln, const row_sink *sink)
{
    uint32_t lw = ln->lw, wl = ln->width[ln->active - 1], last = ln->active - (wl < lw ? 1u : 0u);
    lvl_tail tl;
    tail_of(&tl, rs);
    const __m256i lane_no = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m128i one = _mm_set1_epi8(1), zero = _mm_setzero_si128();
    /* the live lanes before and from the last lane's width */
    __m256i live_lo[2], live_hi[2];
    for (int k = 0; k < 2; k++) {
        int la = (int)(k ? last : ln->active);
        live_lo[k] = _mm256_cmpgt_epi32(_mm256_set1_epi32(la), lane_no);
        live_hi[k] = _mm256_cmpgt_epi32(_mm256_set1_epi32(la - 8), lane_no);
    }
    int two = ln->active > 8;
    __m256i s0 = _mm256_loadu_si256((const __m256i *)rs->st), s1 = _mm256_loadu_si256((const __m256i *)(rs->st + 8));
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *C = lm_row(R, lw, r + 2);
        const uint8_t *U1 = lm_row(R, lw, r + 1), *U2 = lm_row(R, lw, r);
        if (rows && rows[r >> 3] >> (r & 7) & 1) { /* a typical row copies the row above, halo and all */
            memcpy(C - 32, U1 - 32, ((size_t)lw + 4) * 16);
            lm_row_out(C, ln, rowbuf, sink, r);
            continue;
        }
        memcpy(C - 32, U1 - 32, 32); /* left of the lanes' first columns: one row up */
        __m128i W = _mm_load_si128((const __m128i *)(C - 16)), t8 = _mm_load_si128((const __m128i *)(C - 32));
        __m256i Wlo = lm_lo32(_mm_cmpeq_epi8(W, one), zero), Whi = lm_hi32(_mm_cmpeq_epi8(W, one), zero);
        Wlo = _mm256_cmpgt_epi32(Wlo, _mm256_setzero_si256()), Whi = _mm256_cmpgt_epi32(Whi, _mm256_setzero_si256());
        __m256i p0 = _mm256_setzero_si256(), p1 = p0, a0 = p0, a1 = p0, b0 = p0, b1 = p0;
        for (uint32_t x = 0;; x++) {
            if (x < lw) { /* R of step x (t8: the value two steps back), both probabilities */
                const uint8_t *u2 = U2 + (size_t)x * 16, *u1 = U1 + (size_t)x * 16;
                __m128i lo = _mm_load_si128((const __m128i *)(u2 - 16));
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)u2), 1)); /* bytes 0 / 1 */
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)(u2 + 16)), 2));
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)(u1 - 32)), 3));
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)(u1 - 16)), 4));
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)u1), 5));
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)(u1 + 16)), 6));
                lo = _mm_or_si128(lo, _mm_slli_epi16(_mm_load_si128((const __m128i *)(u1 + 32)), 7));
                __m256i rlo = lm_lo32(lo, t8);
                a0 = _mm256_i32gather_epi32((const int *)tab, rlo, 4);
                a1 = _mm256_i32gather_epi32((const int *)(tab + 512), rlo, 4);
                if (two) {
                    __m256i rhi = lm_hi32(lo, t8);
                    b0 = _mm256_i32gather_epi32((const int *)tab, rhi, 4);
                    b1 = _mm256_i32gather_epi32((const int *)(tab + 512), rhi, 4);
                }
            }
            if (x) { /* step x - 1 decides with its probabilities, p0 / p1 */
                uint32_t k = x - 1 >= wl;
                const uint8_t *from = words_at(rs, &tl), *w = from;
                __m256i vlo = lm_step8(&s0, p0, live_lo[k], &w), vhi = _mm256_setzero_si256();
                if (two)
                    vhi = lm_step8(&s1, p1, live_hi[k], &w);
                int err = words_taken(rs, from, w);
                if (err)
                    return err;
                if (flip)
                    vlo = _mm256_and_si256(_mm256_xor_si256(vlo, Wlo), live_lo[k]),
                    vhi = _mm256_and_si256(_mm256_xor_si256(vhi, Whi), live_hi[k]);
                Wlo = vlo, Whi = vhi;
                W = _mm_and_si128(lm_pack(vlo, vhi), one);
                _mm_store_si128((__m128i *)(C + (size_t)(x - 1) * 16), W);
                if (x == lw)
                    break;
            }
            p0 = _mm256_blendv_epi8(a0, a1, Wlo), p1 = _mm256_blendv_epi8(b0, b1, Whi);
            t8 = W; /* the value of step x - 1: t_8 of step x + 1 */
        }
        lm_halo(C, lw);
        lm_row_out(C, ln, rowbuf, sink, r);
    }
    _mm256_storeu_si256((__m256i *)rs->st, s0);
    _mm256_storeu_si256((__m256i *)(rs->st + 8), s1);
    return 0;
}

/* 2.14 candidate phases j = 0..=4 and the escape phase of a step over the lanes phase 0 left
 * open (bits of `open`): t the ten template pixels, *val the step's values (lane l: byte l),
 * which the lanes settled here change; the escapes' indices go to esc (the caller stores them
 * after the vector). Returns 0 or an error; *open: the lanes that escaped. */
static inline AVX2_FN int lm_candidates(lvl_rans *rs, const lvl_tail *tl, __m256i *s, const imij_template_tables *tt,
                                        const __m256i *qv, const __m128i *t, __m128i *val, uint32_t *open,
                                        uint8_t *esc)
{
    const __m128i W = t[9], seven = _mm_set1_epi8(7);
    uint32_t left = *open;
    for (int j = 0; j < 5 && left; j++) {
        __m128i cj = t[cand_k[j]], sk = _mm_cmpeq_epi8(cj, W);
        for (int e = 0; e < j; e++)
            sk = _mm_or_si128(sk, _mm_cmpeq_epi8(cj, t[cand_k[e]]));
        uint32_t part = left & ~(uint32_t)_mm_movemask_epi8(sk);
        if (!part)
            continue;
        __m128i hits = _mm_setzero_si128(); /* count of k with t_k == c_j, at most 7 */
        for (int k = 0; k < 10; k++)
            hits = _mm_sub_epi8(hits, _mm_cmpeq_epi8(t[k], cj));
        hits = _mm_min_epu8(hits, seven);
        uint32_t b = 0;
        const uint8_t *from = words_at(rs, tl), *w = from;
        if (part & 0xffu)
            b = lm_half(&s[0], _mm256_permutevar8x32_epi32(qv[j], _mm256_cvtepu8_epi32(hits)), part & 0xffu, &w);
        if (part >> 8)
            b |= lm_half(&s[1], _mm256_permutevar8x32_epi32(qv[j], _mm256_cvtepu8_epi32(_mm_srli_si128(hits, 8))),
                         part >> 8, &w)
                 << 8;
        int err = words_taken(rs, from, w);
        if (err)
            return err;
        uint32_t done = part & ~b; /* b = 0: the candidate */
        if (done) {
            *val = _mm_blendv_epi8(*val, cj, lm_bytes(done));
            left &= ~done;
        }
    }
    if (left && tt->escape) /* the scalar escapes work on rs->st */
        _mm256_storeu_si256((__m256i *)rs->st, s[0]), _mm256_storeu_si256((__m256i *)(rs->st + 8), s[1]);
    for (uint32_t e = left; e; e &= e - 1) { /* 3. the escape phase, lanes ascending */
        uint32_t l = imij_ctz32(e), sym = 0;
        if (tt->escape) {
            int err = token(rs, l, tt, &sym);
            if (err)
                return err;
        }
        esc[l] = (uint8_t)sym;
    }
    if (left && tt->escape)
        s[0] = _mm256_loadu_si256((const __m256i *)rs->st), s[1] = _mm256_loadu_si256((const __m256i *)(rs->st + 8));
    *open = left;
    return 0;
}

/* 2.14 phase 0's context of 16 lanes from their ten template pixels (t_8 = t8, W = t_9 = W):
 * (W == 0) << 9 | sum of (t_k == W) << k, bits 0-7 in *lo, 8-9 in *hi (lane l: byte l). */
static inline AVX2_FN void lm_context(const __m128i *t, __m128i t8, __m128i W, __m128i *lo, __m128i *hi)
{
    const __m128i one = _mm_set1_epi8(1);
    __m128i b = _mm_and_si128(_mm_cmpeq_epi8(t[0], W), one);
    for (int k = 1; k < 8; k++)
        b = _mm_or_si128(b, _mm_and_si128(_mm_cmpeq_epi8(t[k], W), _mm_set1_epi8((char)(1 << k))));
    *lo = b;
    *hi = _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(t8, W), one),
                       _mm_and_si128(_mm_cmpeq_epi8(W, _mm_setzero_si128()), _mm_set1_epi8(2)));
}

/* The eight template pixels of the rows above of lane column x (t_0 .. t_7). */
static inline AVX2_FN void lm_above(const uint8_t *U2, const uint8_t *U1, uint32_t x, __m128i *t)
{
    const uint8_t *u2 = U2 + (size_t)x * 16, *u1 = U1 + (size_t)x * 16;
    t[0] = _mm_load_si128((const __m128i *)(u2 - 16)), t[1] = _mm_load_si128((const __m128i *)u2);
    t[2] = _mm_load_si128((const __m128i *)(u2 + 16)), t[3] = _mm_load_si128((const __m128i *)(u1 - 32));
    t[4] = _mm_load_si128((const __m128i *)(u1 - 16)), t[5] = _mm_load_si128((const __m128i *)u1);
    t[6] = _mm_load_si128((const __m128i *)(u1 + 16)), t[7] = _mm_load_si128((const __m128i *)(u1 + 32));
}

/* 2.14 with three or more entries on the lane-major ring: phase 0 for all lanes at once (the ten
 * t_k == W as bits), the candidate phases' decisions in vectors, the escapes one by one. */
static AVX2_FN int lm_template(lvl_rans *rs, const imij_template_tables *tt, const uint8_t *rows,
                               uint8_t *R, uint8_t *rowbuf, uint32_t h, const lanes_t *ln, const row_sink *sink)
{
    uint32_t p32[1024], lw = ln->lw;
    __m256i qv[5];
    lvl_tail tl;
    tail_of(&tl, rs);
    for (uint32_t i = 0; i < 1024; i++) /* 32-bit entries: a gather reads 4 bytes */
        p32[i] = tt->p[i];
    for (int j = 0; j < 5; j++) /* phase j's eight probabilities, by hits */
        qv[j] = _mm256_setr_epi32(tt->q[8 * j], tt->q[8 * j + 1], tt->q[8 * j + 2], tt->q[8 * j + 3], tt->q[8 * j + 4],
                                  tt->q[8 * j + 5], tt->q[8 * j + 6], tt->q[8 * j + 7]);
    int two = ln->active > 8;
    __m256i s[2] = {_mm256_loadu_si256((const __m256i *)rs->st), _mm256_loadu_si256((const __m256i *)(rs->st + 8))};
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *C = lm_row(R, lw, r + 2);
        const uint8_t *U1 = lm_row(R, lw, r + 1), *U2 = lm_row(R, lw, r);
        if (rows[r >> 3] >> (r & 7) & 1) { /* a typical row copies the row above, halo and all */
            memcpy(C - 32, U1 - 32, ((size_t)lw + 4) * 16);
            lm_row_out(C, ln, rowbuf, sink, r);
            continue;
        }
        memcpy(C - 32, U1 - 32, 32); /* left of the lanes' first columns: one row up */
        __m128i W = _mm_load_si128((const __m128i *)(C - 16)), t8 = _mm_load_si128((const __m128i *)(C - 32));
        __m256i p[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()}, q[2] = {p[0], p[1]};
        int ahead = 0, flat = 0; /* p holds this step's probabilities; the step before kept every W */
        for (uint32_t x = 0; x < lw; x++) {
            uint8_t *c = C + (size_t)x * 16;
            __m128i t[10], lo, hi;
            lm_above(U2, U1, x, t);
            t[8] = t8, t[9] = W;
            if (!ahead) {
                lm_context(t, t8, W, &lo, &hi);
                lm_probs(p32, lo, hi, two, p);
            }
            /* in a run of steps keeping every W, guess this one does too: the next step's
             * probabilities (its t_8 and W both this W) before this one decides */
            int guess = flat && x + 1 < lw;
            if (guess) {
                __m128i n[8];
                lm_above(U2, U1, x + 1, n);
                lm_context(n, W, W, &lo, &hi);
                lm_probs(p32, lo, hi, two, q);
            }
            uint32_t live = lm_live(ln, x), m;
            int err = lm_phase(rs, &tl, s, p, live, &m);
            if (err)
                return err;
            flat = !m, ahead = guess && !m;
            if (ahead)
                p[0] = q[0], p[1] = q[1];
            __m128i val = _mm_andnot_si128(lm_bytes(m), W); /* m = 0: W */
            uint8_t esc[16];
            if (m) {
                err = lm_candidates(rs, &tl, s, tt, qv, t, &val, &m, esc);
                if (err)
                    return err;
            }
            val = _mm_and_si128(val, lm_bytes(live));
            _mm_store_si128((__m128i *)c, val);
            t8 = W, W = val; /* the next step's t_8 and W */
            if (m) {
                for (; m; m &= m - 1)
                    c[imij_ctz32(m)] = esc[imij_ctz32(m)];
                W = _mm_load_si128((const __m128i *)c);
            }
        }
        lm_halo(C, lw);
        lm_row_out(C, ln, rowbuf, sink, r);
    }
    return 0;
}
#endif

#if IMIJ_ENT_AVX2
/* 2.10 / 2.14 on the SIMD path (lw >= 2): the lane-major ring at `ring` or on the stack, zero
 * (the rows above the stripe), the inactive lanes' states unused but defined. */
static AVX2_FN int lm_decode(lvl_rans *rs, const imij_level_unit *u, int bilevel, uint32_t n, const uint8_t *rows,
                             const lanes_t *ln, uint8_t *rowbuf, uint8_t *ring, const row_sink *sink)
{
    __m128i stack[3 * (LM_STACK_LW + 4)];
    uint8_t *R = ring ? ring : (uint8_t *)stack;
    memset(R, 0, (size_t)3 * (ln->lw + 4) * 16);
    for (uint32_t l = ln->active; l < 16; l++)
        rs->st[l] = LVL_STATE_LOW;
    if (bilevel || n <= 2) { /* tab[W * 512 + R] (lm_twovalue) */
        uint32_t tab[1024];
        for (uint32_t i = 0; i < 1024; i++) {
            uint32_t W = i >> 9, Rb = i & 511u; /* 2.14: the bits t_k == W, and W == 0 */
            tab[i] = bilevel ? u->bilevel->prob[i] : u->tmpl->p[W ? Rb : (~Rb & 511u) | 512u];
        }
        return lm_twovalue(rs, tab, !bilevel, bilevel ? NULL : rows, R, rowbuf, u->height, ln, sink);
    }
    return lm_template(rs, u->tmpl, rows, R, rowbuf, u->height, ln, sink);
}
#endif

/* 2.10 / 2.14: one unit whose layout is 0x81-0x84, each row into `out` (coded planes) or through
 * `store` as it decodes. */
static int level_decode(const uint8_t *body, size_t len, const imij_level_unit *u, void *out, size_t out_len,
                        const imij_sample_store *store, uint8_t *index, size_t index_len)
{
    uint32_t w = u->width, h = u->height, nslots = u->nslots, ob = u->out_bytes;
    if (w == 0 || h == 0 || u->lanes < 1 || u->lanes > 16 || nslots > 8)
        return IMIJ_E_ARGS;
    if ((uint64_t)index_len < 3 * ((uint64_t)w + 4) + RING_SLACK)
        return IMIJ_E_SIZE;
    if (store) {
        if (!imij_sample_store_valid(store) || store->nslots != nslots)
            return IMIJ_E_ARGS;
        if (!imij_sample_store_fits(store, w, h))
            return IMIJ_E_SIZE;
    } else {
        if (ob != 1 && ob != 2 && ob != 4)
            return IMIJ_E_ARGS;
        for (uint32_t s = 0; s < nslots; s++)
            if (u->depth[s] > 8 * ob)
                return IMIJ_E_ARGS; /* entries (<= 16 bits) must fit the output's width */
        if (out_len / ob / w / h < nslots) /* nslots planes of w * h values of ob bytes */
            return IMIJ_E_SIZE;
    }
    size_t pos = 0;
    if (len < 1)
        return IMIJ_E_TRUNCATED;
    uint32_t decor = body[pos++];
    if (decor < 0x81 || decor > 0x84)
        return IMIJ_E_LAYOUT;
    int bilevel = decor <= 0x82;
    if (!(u->features & (bilevel ? 1u : 2u)))
        return IMIJ_E_FEATURE; /* 0.1: gated syntax */
    if (bilevel ? u->bilevel == NULL : u->tmpl == NULL)
        return IMIJ_E_RECORD; /* 2.10 / 2.14: corrupt without its head record */
    if (decor == 0x81) {
        if (nslots != 1 || u->depth[0] != 1)
            return IMIJ_E_SLOT;
    } else {
        for (uint32_t s = 0; s < nslots; s++)
            if (u->depth[s] > 16)
                return IMIJ_E_DEPTH;
    }
    uint16_t own[256][8];
    const uint16_t(*entries)[8] = (const uint16_t(*)[8])own;
    uint32_t n = 0;
    if (decor == 0x82 || decor == 0x83) {
        if (pos >= len)
            return IMIJ_E_TRUNCATED;
        n = (uint32_t)body[pos++] + 1u;
        if (decor == 0x82 && n > 2)
            return IMIJ_E_COUNT;
        for (uint32_t e = 0; e < n; e++) {
            for (uint32_t s = 0; s < nslots; s++) {
                uint32_t bytes = u->depth[s] > 8 ? 2u : 1u;
                if (len - pos < bytes)
                    return IMIJ_E_TRUNCATED;
                uint32_t v = body[pos];
                if (bytes == 2)
                    v |= (uint32_t)body[pos + 1] << 8;
                pos += bytes;
                if (v >> u->depth[s])
                    return IMIJ_E_ENTRY; /* 2.5: each entry < 2^n_s */
                own[e][s] = (uint16_t)v;
            }
        }
    } else if (decor == 0x84) {
        if (!u->tmpl->nshared)
            return IMIJ_E_SHARED;
        n = u->tmpl->nshared;
        entries = u->tmpl->shared;
    }
    const uint8_t *rows = NULL;
    if (!bilevel) { /* 2.14: ceil(rows / 8) bytes of typical-row bits; bits past the last row are 0 */
        size_t nb = ((size_t)h + 7) / 8;
        if (len - pos < nb)
            return IMIJ_E_TRUNCATED;
        rows = body + pos;
        if (h & 7 && rows[nb - 1] >> (h & 7))
            return IMIJ_E_ROWS;
        pos += nb;
    }
    lanes_t ln;
    lanes_of(&ln, w, u->lanes);
    lvl_rans rs;
    int err = rans_open(&rs, body + pos, len - pos, ln.active);
    if (err)
        return err;
    /* each slot's coded value of every index byte (0x81: v = t xor inv; else entry (t xor inv),
     * entry 0 for an index past the last entry), or its sample word through the store */
    row_sink sink;
    sink.w = w, sink.nslots = nslots, sink.ob = ob, sink.plane = (size_t)w * h, sink.out = out, sink.store = store;
    uint32_t inv = decor <= 0x82 ? (u->bilevel->inv & 1u) : 0u;
    for (uint32_t k = 0; k < 256; k++) {
        uint32_t e = (k ^ inv) < n ? k ^ inv : 0;
        for (uint32_t sl = 0; sl < nslots; sl++) {
            uint32_t v = decor == 0x81 ? (k ^ inv) & 1u : entries[e][sl];
            sink.word[sl][k] = store ? imij_sample_word(store, sl, v) : v;
        }
    }
    sink.packed = packed_pixels(&sink);
    byte_rows(&sink);
    sink.slices = bilevel ? 1u : (n + 15) / 16;
#if IMIJ_ENT_AVX2
    uint8_t *ring = lm_ring_in(index, index_len, &ln);
    if (ln.lw >= 2 && (ring || ln.lw <= LM_STACK_LW) && imij_entropy_simd(-1) >= 1)
        return lm_decode(&rs, u, bilevel, n, rows, &ln, index, ring, &sink);
#endif
    size_t S = (size_t)w + 4;
    memset(index, 0, 3 * S + RING_SLACK); /* the zero rows above and the zero side columns */
    if (bilevel)
        return decode_binary(&rs, u->bilevel->prob, index, S, h, &ln, &sink);
    return decode_template(&rs, u->tmpl, n, rows, index, S, h, &ln, &sink);
}

int imij_level_unit_decode(const uint8_t *body, size_t len, const imij_level_unit *u, void *out, size_t out_len,
                           uint8_t *index, size_t index_len)
{
    return level_decode(body, len, u, out, out_len, NULL, index, index_len);
}

int imij_level_unit_store(const uint8_t *body, size_t len, const imij_level_unit *u, const imij_sample_store *store,
                          uint8_t *index, size_t index_len)
{
    return level_decode(body, len, u, NULL, 0, store, index, index_len);
}



/* ---- the encoder side: the decoder's operations on a known plane ------------------------- */

/* One coding operation: kind 0 a binary decision at a phase-0 context (2.10's t, or 2.14's m),
 * 1 a candidate phase decision (context 0..=39), 2 an escaped index (2.14). */
typedef struct {
    uint8_t kind, bit, lane;
    uint16_t ctx;
} lvl_op;

#define STEP_OPS (7 * 16) /* phase 0, five candidate phases and the escape, per lane */

/* The whole plane padded as the decoders' ring rows are (two zero rows above, two zero columns
 * each side): row r's pixel c at (r + 2) * S + c + 2. */
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
static inline void template_at(const uint8_t *row, const uint8_t *up, const uint8_t *up2, ptrdiff_t c, uint32_t x,
                               uint32_t *t)
{
    t[0] = up2[c - 1], t[1] = up2[c], t[2] = up2[c + 1], t[3] = up[c - 2], t[4] = up[c - 1];
    t[5] = up[c], t[6] = up[c + 1], t[7] = up[c + 2];
    t[8] = x >= 2 ? row[c - 2] : up[c - 2];
    t[9] = x >= 1 ? row[c - 1] : up[c - 1];
}

#define P0_COLS 256 /* lane columns per block of phase-0 words (16 lanes: 8 KiB of stack) */
#define P0_BIT 10     /* a phase-0 word: its context (10 bits), then its outcome */

/* The phase-0 words of columns c .. c + count of a row (lane columns x .. x + count): a bilevel
 * plane's context t (2.10) and outcome t (values 0 or 1: bilevel_plane), a template row's context
 * m (2.14: bit k for t_k == W, bit 9 for W == 0) and outcome v != W. Column by column, so the
 * compiler vectorizes it; a lane's first two columns read the row above (template_at). */
static void phase0_words(const uint8_t *row, const uint8_t *up, const uint8_t *up2, ptrdiff_t c, uint32_t x,
                        uint32_t count, int bilevel, uint16_t *restrict out)
{
    uint32_t h = 0, t[10];
    for (; h < count && x + h < 2; h++) {
        template_at(row, up, up2, c + h, x + h, t);
        uint32_t W = t[9], v = row[c + h], cx = 0;
        if (bilevel) {
            for (int k = 0; k < 10; k++)
                cx |= t[k] << k;
            out[h] = (uint16_t)(cx | v << P0_BIT);
        } else {
            cx = (uint32_t)(W == 0) << 9;
            for (int k = 0; k < 9; k++)
                cx |= (uint32_t)(t[k] == W) << k;
            out[h] = (uint16_t)(cx | (uint32_t)(v != W) << P0_BIT);
        }
    }
    const uint8_t *R = row + c, *U = up + c, *U2 = up2 + c;
    ptrdiff_t j = h, end = count; /* signed: j - 2 and j - 1 reach the columns left of the block */
    if (bilevel) {
        for (ptrdiff_t i = j; i < end; i++)
            out[i] = (uint16_t)(U2[i - 1] | U2[i] << 1 | U2[i + 1] << 2 | U[i - 2] << 3 | U[i - 1] << 4 | U[i] << 5 |
                                U[i + 1] << 6 | U[i + 2] << 7 | R[i - 2] << 8 | R[i - 1] << 9 | R[i] << P0_BIT);
        return;
    }
    for (ptrdiff_t i = j; i < end; i++) {
        uint8_t W = R[i - 1];
        out[i] = (uint16_t)((U2[i - 1] == W) | (U2[i] == W) << 1 | (U2[i + 1] == W) << 2 | (U[i - 2] == W) << 3 |
                            (U[i - 1] == W) << 4 | (U[i] == W) << 5 | (U[i + 1] == W) << 6 | (U[i + 2] == W) << 7 |
                            (R[i - 2] == W) << 8 | (W == 0) << 9 | (R[i] != W) << P0_BIT);
    }
}

/* How far apart the lanes' phase-0 words are: lw when a whole row's fit (lanes side by side, as
 * in the row), else P0_COLS. */
static uint32_t words_stride(const lanes_t *ln) { return ln->lw <= P0_COLS ? ln->lw : P0_COLS; }

/* The phase-0 words of lane columns x .. x + xn of row r, lane l's at words[l * stride + x - x_first]
 * (words_stride). With stride lw the block is the whole row, its columns in one run. */
static void block_words(const uint8_t *P, size_t S, uint32_t r, const lanes_t *ln, uint32_t x, uint32_t xn,
                        int bilevel, uint16_t *words)
{
    const uint8_t *row = P + (size_t)(r + 2) * S + 2, *up = row - S, *up2 = up - S;
    if (words_stride(ln) == ln->lw) { /* x 0, xn lw: lane l's column x at words[start + x] */
        uint32_t last = ln->active - 1;
        phase0_words(row, up, up2, 0, 2, ln->start[last] + ln->width[last], bilevel, words); /* as inside a lane */
        for (uint32_t l = 0; l < ln->active; l++) /* then each lane's first two columns */
            phase0_words(row, up, up2, ln->start[l], 0, ln->width[l] < 2 ? ln->width[l] : 2, bilevel,
                         words + ln->start[l]);
        return;
    }
    for (uint32_t l = 0; l < ln->active && x < ln->width[l]; l++) {
        uint32_t cnt = ln->width[l] - x < xn ? ln->width[l] - x : xn;
        phase0_words(row, up, up2, (ptrdiff_t)ln->start[l] + x, x, cnt, bilevel, words + (size_t)l * P0_COLS);
    }
}

/* 2.10: is every value of a bilevel plane 0 or 1? (Checked before any context is formed, so a
 * context never exceeds its 10 bits.) */
static int bilevel_plane(const uint8_t *plane, size_t count)
{
    uint8_t any = 0;
    for (size_t i = 0; i < count; i++)
        any |= plane[i];
    return any <= 1;
}

/* 2.10: step x of a row of a bilevel plane, lanes ascending: one decision per lane, from the
 * lanes' phase-0 words w[l * stride]. */
static int bilevel_step(const lanes_t *ln, uint32_t x, const uint16_t *w, uint32_t stride, lvl_op *ops)
{
    uint32_t la = taking(ln, x);
    for (uint32_t l = 0; l < la; l++) {
        uint32_t word = w[(size_t)l * stride];
        ops[l] = (lvl_op){0, (uint8_t)(word >> P0_BIT), (uint8_t)l, (uint16_t)(word & 1023u)};
    }
    return (int)la;
}

/* 2.14: step x of a non-typical row of an index plane of n entries, in the decoder's (phase,
 * lane) order: phase 0 for every lane (its words w[l * stride]), candidate phases over the
 * lanes still open, escapes. */
static int template_step(const uint8_t *row, const uint8_t *up, const uint8_t *up2, const lanes_t *ln, uint32_t x,
                         uint32_t n, const uint16_t *w, uint32_t stride, lvl_op *ops)
{
    uint32_t tk[16][10], open[16], nopen = 0, la = taking(ln, x);
    int count = 0;
    for (uint32_t l = 0; l < la; l++) { /* 1. phase 0 */
        uint32_t word = w[(size_t)l * stride], miss = word >> P0_BIT;
        ops[count++] = (lvl_op){0, (uint8_t)miss, (uint8_t)l, (uint16_t)(word & 1023u)};
        if (miss)
            open[nopen++] = l;
    }
    if (!nopen)
        return count;
    if (n <= 2) { /* two entries: a miss is the other index */
        for (uint32_t i = 0; i < nopen; i++) {
            ptrdiff_t c = (ptrdiff_t)ln->start[open[i]] + x;
            uint32_t W = x >= 1 ? row[c - 1] : up[c - 1];
            if (row[c] != 1u - W)
                return IMIJ_E_ARGS; /* an index above 1 */
        }
        return count;
    }
    for (uint32_t i = 0; i < nopen; i++) /* the templates of the open lanes only */
        template_at(row, up, up2, (ptrdiff_t)ln->start[open[i]] + x, x, tk[open[i]]);
    for (int j = 0; j < 5 && nopen; j++) { /* 2. candidate phases */
        uint32_t still = 0;
        for (uint32_t i = 0; i < nopen; i++) {
            uint32_t l = open[i], cj, v = row[ln->start[l] + x];
            int cx = candidate(tk[l], j, &cj);
            if (cx >= 0) {
                ops[count++] = (lvl_op){1, v != cj, (uint8_t)l, (uint16_t)cx};
                if (v == cj)
                    continue;
            }
            open[still++] = l;
        }
        nopen = still;
    }
    for (uint32_t i = 0; i < nopen; i++) /* 3. the escape phase */
        ops[count++] = (lvl_op){2, 0, (uint8_t)open[i], (uint16_t)row[ln->start[open[i]] + x]};
    return count;
}

/* The operations of step x of row r (a non-typical row when typical is given) from the lanes'
 * phase-0 words w[l * words_stride], or a negative code. */
static int step_ops(const uint8_t *P, size_t S, uint32_t r, uint32_t x, const lanes_t *ln, uint32_t n,
                    const uint8_t *typical, const uint16_t *w, lvl_op *ops)
{
    const uint8_t *row = P + (size_t)(r + 2) * S + 2, *up = row - S, *up2 = up - S;
    if (!typical)
        return bilevel_step(ln, x, w, words_stride(ln), ops);
    return template_step(row, up, up2, ln, x, n, w, words_stride(ln), ops);
}

/* The encoder's arguments: IMIJ_E_ARGS for a bad geometry or entry count, IMIJ_E_SIZE
 * for a scratch below the padded plane's (height + 2) * (width + 4) bytes, else 0. */
static int level_args(uint32_t width, uint32_t height, uint32_t lanes, uint32_t n, size_t scratch_len)
{
    if (width == 0 || height == 0 || lanes < 1 || lanes > 16 || n < 1 || n > 256 ||
        (size_t)width * height > ((size_t)-1 - 64) / 16)
        return IMIJ_E_ARGS;
    return scratch_len / ((size_t)width + 4) < (size_t)height + 2 ? IMIJ_E_SIZE : 0;
}

int imij_level_counts(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                      const uint8_t *typical, uint8_t *scratch, size_t scratch_len, uint32_t *phase0, uint32_t *cand,
                      uint32_t *escape)
{
    int err = level_args(width, height, lanes, n, scratch_len);
    if (err)
        return err;
    if (!typical && !bilevel_plane(plane, (size_t)width * height))
        return IMIJ_E_ARGS; /* a t above 1 */
    size_t S = (size_t)width + 4;
    pad_plane(plane, width, height, scratch);
    lanes_t ln;
    lanes_of(&ln, width, lanes);
    lvl_op ops[STEP_OPS];
    uint16_t words[16 * P0_COLS];
    for (uint32_t r = 0; r < height; r++) {
        if (typical && typical[r])
            continue; /* a typical row codes nothing */
        for (uint32_t x0 = 0; x0 < ln.lw; x0 += P0_COLS) {
            uint32_t xn = ln.lw - x0 < P0_COLS ? ln.lw - x0 : P0_COLS;
            block_words(scratch, S, r, &ln, x0, xn, !typical, words);
            for (uint32_t i = 0; i < xn; i++) {
                int count = step_ops(scratch, S, r, x0 + i, &ln, n, typical, words + i, ops);
                if (count < 0)
                    return count;
                for (int k = 0; k < count; k++) {
                    const lvl_op *o = &ops[k];
                    if (o->kind == 0)
                        phase0[2u * o->ctx + o->bit]++;
                    else if (o->kind == 1)
                        cand[2u * o->ctx + o->bit]++;
                    else
                        escape[o->ctx]++;
                }
            }
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
            return IMIJ_E_SPACE;
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
                          const uint8_t *typical, uint8_t *scratch, size_t scratch_len, const uint16_t *phase0,
                          const uint16_t *cand, const uint16_t *efreq, const uint16_t *ecum, uint8_t *dst,
                          size_t dst_cap)
{
    int err = level_args(width, height, lanes, n, scratch_len);
    if (err)
        return err;
    if (!typical && !bilevel_plane(plane, (size_t)width * height))
        return IMIJ_E_ARGS; /* a t above 1 */
    size_t S = (size_t)width + 4;
    pad_plane(plane, width, height, scratch);
    lanes_t ln;
    lanes_of(&ln, width, lanes);
    size_t head = (size_t)4 * ln.active, wp = dst_cap;
    if (dst_cap < head)
        return IMIJ_E_SPACE;
    uint32_t st[16];
    for (uint32_t l = 0; l < ln.active; l++)
        st[l] = LVL_STATE_LOW;
    lvl_op ops[STEP_OPS];
    uint16_t words[16 * P0_COLS];
    for (uint32_t r = height; r-- > 0;) {
        if (typical && typical[r])
            continue; /* a typical row codes nothing */
        for (uint32_t x0 = (ln.lw - 1) / P0_COLS * P0_COLS;; x0 -= P0_COLS) {
            uint32_t xn = ln.lw - x0 < P0_COLS ? ln.lw - x0 : P0_COLS;
            block_words(scratch, S, r, &ln, x0, xn, !typical, words);
            for (uint32_t i = xn; i-- > 0;) {
                int count = step_ops(scratch, S, r, x0 + i, &ln, n, typical, words + i, ops);
                if (count < 0)
                    return count;
                for (int k = count; k-- > 0;) {
                    const lvl_op *o = &ops[k];
                    uint32_t f, cum;
                    if (o->kind == 2) {
                        if (!efreq) { /* 2.14: without the direct-index table an escape decodes 0, state unchanged */
                            if (o->ctx)
                                return IMIJ_E_FREQ;
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
                        return IMIJ_E_FREQ;
                    err = put(st, o->lane, f, cum, dst, &wp, head);
                    if (err)
                        return err;
                }
            }
            if (!x0)
                break;
        }
    }
    return close_stream(st, ln.active, dst, dst_cap, wp);
}
