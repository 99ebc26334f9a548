/* models.c: tables read from head bit streams: one table of the models bit stream (3.3), read and
 * normalized, and the used-bit value lists of records 25 / 35 (2.10, 2.14). The Python
 * references are models.py (read_table, normalize) and bilevel.py (read_used_values). */
#include "imij_kernels.h"
#include "internal/portable.h"

#define TABLE_M 1024u     /* 3: M = 2^10 */
#define MAX_ZEROS 24u     /* 3.3: gamma codes have at most 24 leading zero bits */
#define MAX_EXPONENT 32u  /* 3.3 */

typedef struct {
    const uint8_t *buf;
    uint64_t pos, end; /* in bits */
} bitbuf;

/* The next n <= 57 bits without consuming them; bits past the end read as 0. */
static uint64_t peek(const bitbuf *b, uint32_t n)
{
    uint64_t v = 0;
    uint64_t first = b->pos >> 3, stop = (b->pos + n + 7) >> 3, have = (b->end + 7) >> 3;
    for (uint64_t i = first; i < stop && i < have; i++)
        v |= (uint64_t)b->buf[i] << (8 * (i - first));
    v >>= b->pos & 7;
    uint64_t avail = b->end - b->pos;
    if (avail < n)
        n = (uint32_t)avail;
    return n >= 64 ? v : v & ((UINT64_C(1) << n) - 1);
}

static int take(bitbuf *b, uint32_t n, uint64_t *v)
{
    if (b->end - b->pos < n)
        return IMIJ_E_TRUNCATED;
    *v = peek(b, n);
    b->pos += n;
    return 0;
}

/* 3.3: order = symbols with a nonzero weight by weight descending, then index ascending. */
static uint32_t weight_order(const uint32_t *w, uint32_t count, uint8_t *order)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < count; s++) {
        if (!w[s])
            continue;
        uint32_t i = n++;
        while (i > 0 && w[order[i - 1]] < w[s]) { /* stable: equal weights keep index order */
            order[i] = order[i - 1];
            i--;
        }
        order[i] = (uint8_t)s;
    }
    return n;
}

/* 3.3: f = max(1, floor(w * M / W)), then add or subtract 1 cycling over the order. */
static void normalize(const uint32_t *w, uint32_t count, uint64_t total, uint32_t *freq)
{
    uint8_t order[256];
    uint32_t n = weight_order(w, count, order);
    uint64_t fsum = 0;
    for (uint32_t s = 0; s < count; s++) {
        uint64_t f = w[s] ? ((uint64_t)w[s] * TABLE_M) / total : 0;
        freq[s] = w[s] && f == 0 ? 1u : (uint32_t)f;
        fsum += freq[s];
    }
    if (fsum < TABLE_M) {
        uint32_t deficit = (uint32_t)(TABLE_M - fsum);
        for (uint32_t i = 0; i < n; i++)
            freq[order[i]] += deficit / n + (i < deficit % n ? 1u : 0u);
    } else {
        for (uint32_t i = 0; fsum > TABLE_M; i = (i + 1) % n) {
            if (freq[order[i]] > 1) {
                freq[order[i]]--;
                fsum--;
            }
        }
    }
}

int imij_normalize_table(const uint32_t *weights, uint32_t count, uint32_t *freq)
{
    if (count == 0 || count > 256)
        return IMIJ_E_ARGS;
    uint64_t total = 0;
    for (uint32_t s = 0; s < count; s++)
        total += weights[s];
    if (!total)
        return IMIJ_E_EMPTY;
    normalize(weights, count, total, freq);
    return 0;
}

int imij_read_table(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t alphabet, uint32_t first_capped,
                    uint32_t *last, uint32_t *weights, uint32_t *freq)
{
    bitbuf b = {buf, *bitpos, (uint64_t)len * 8};
    if (alphabet > 256)
        return IMIJ_E_ARGS; /* 3.3: symbols are below 256 (the caller's scheme, not the input) */
    if (b.pos > b.end)
        return IMIJ_E_TRUNCATED;
    uint64_t v, prec;
    int err;
    if ((err = take(&b, 8, &v)))
        return err;
    if (v >= alphabet)
        return IMIJ_E_LAST;
    uint32_t count = (uint32_t)v + 1;
    if ((err = take(&b, 3, &prec)))
        return err;
    prec += 1; /* 3.3: mantissa precision 1..=8 */
    int64_t e_prev = 0;
    uint64_t total = 0;
    for (uint32_t s = 0; s < count; s++) {
        uint64_t window = peek(&b, MAX_ZEROS + 1);
        if (!window)
            return b.end - b.pos > MAX_ZEROS ? IMIJ_E_GAMMA : IMIJ_E_TRUNCATED;
        uint32_t zeros = imij_ctz64(window);
        uint64_t low;
        b.pos += zeros + 1;
        if ((err = take(&b, zeros, &low)))
            return err;
        uint64_t g = (UINT64_C(1) << zeros) | low; /* 3.3: gamma(zigzag(e - e_prev) + 1) */
        uint64_t z = g - 1;
        int64_t e = e_prev + (int64_t)((z >> 1) ^ (0 - (z & 1)));
        if (e < 0 || e > (int64_t)MAX_EXPONENT)
            return IMIJ_E_EXPONENT;
        e_prev = e;
        uint32_t nb = e > 1 ? ((uint32_t)e - 1 < prec - 1 ? (uint32_t)e - 1 : (uint32_t)prec - 1) : 0;
        uint64_t mant = 0;
        if (nb && (err = take(&b, nb, &mant)))
            return err;
        uint32_t w = e == 0 ? 0 : e == 1 ? 1 : (uint32_t)(((UINT64_C(1) << nb) | mant) << (e - 1 - nb));
        if (w && s >= first_capped)
            return IMIJ_E_CAP; /* 3.3 / 3.2: run cap */
        weights[s] = w;
        total += w;
    }
    if (!total)
        return IMIJ_E_EMPTY;
    normalize(weights, count, total, freq);
    *last = count - 1;
    *bitpos = b.pos;
    return 0;
}

int imij_read_used_values(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t count, uint32_t bits,
                          uint16_t *values, uint8_t *used)
{
    bitbuf b = {buf, *bitpos, (uint64_t)len * 8};
    if (bits < 1 || bits > 16)
        return IMIJ_E_ARGS; /* 2.10 / 2.14: values of 11 or 4..=11 bits (the caller's width, not the input) */
    if (b.pos > b.end)
        return IMIJ_E_TRUNCATED;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t flag, v = 0;
        int err = take(&b, 1, &flag);
        if (!err && flag)
            err = take(&b, bits, &v);
        if (err)
            return err;
        used[i] = (uint8_t)flag;
        values[i] = (uint16_t)v;
    }
    *bitpos = b.pos;
    return 0;
}

int imij_read_tables(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t alphabet, uint32_t first_capped,
                     uint32_t count, uint32_t *last, uint32_t *weights, uint32_t *freq)
{
    for (uint32_t c = 0; c < count; c++) {
        int err = imij_read_table(buf, len, bitpos, alphabet, first_capped, last + c, weights + 256 * (size_t)c,
                                  freq + 256 * (size_t)c);
        if (err)
            return err;
    }
    return 0;
}

int imij_read_models(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t count, const uint32_t *depths,
                     const uint8_t *cross_ok, const uint16_t *schemes, imij_model_head *heads, size_t heads_len,
                     uint32_t *last, uint32_t *weights, uint32_t *freq, size_t tables_len)
{
    if (heads_len < count || tables_len / 4 < count)
        return IMIJ_E_SIZE;
    bitbuf b = {buf, *bitpos, (uint64_t)len * 8};
    if (b.pos > b.end)
        return IMIJ_E_TRUNCATED;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t k, m, cross, shift = 0, packed;
        int err;
        if ((err = take(&b, 5, &k)) || (err = take(&b, 3, &m)))
            return err;
        const uint16_t *scheme = schemes + 512 * (size_t)i + 2 * (8 * k + m);
        if (!scheme[0])
            return IMIJ_E_SCHEME; /* 3.3: k <= 16, m <= 4, k == kv, alphabet <= 256 */
        if ((err = take(&b, 1, &cross)))
            return err;
        if (cross && !cross_ok[i])
            return IMIJ_E_CROSS; /* 3.3 / 2.2 / ruling R1 */
        if (depths[i] > 16 && (err = take(&b, 5, &shift)))
            return err; /* 3.3: ctx_shift only when n > 16 */
        if ((err = take(&b, 32, &packed)))
            return err; /* 3.3: ctx_map, 2 bits per class, class 0 in the low bits */
        imij_model_head *h = heads + i;
        h->k = (uint32_t)k, h->m = (uint32_t)m, h->cross = (uint32_t)cross, h->ctx_shift = (uint32_t)shift;
        h->ntables = 0;
        for (uint32_t c = 0; c < 16; c++) {
            h->ctx_map[c] = (uint8_t)(packed >> (2 * c) & 3u);
            if (h->ctx_map[c] + 1u > h->ntables)
                h->ntables = h->ctx_map[c] + 1u;
        }
        if ((err = imij_read_tables(buf, len, &b.pos, scheme[0], scheme[1], h->ntables, last + 4 * (size_t)i,
                                    weights + 1024 * (size_t)i, freq + 1024 * (size_t)i)))
            return err;
    }
    *bitpos = b.pos;
    return 0;
}
