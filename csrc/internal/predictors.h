/* internal/predictors.h: section 4's intra predictors 0-6, shared by the decoder (entropy.c) and
 * the encoder (encode.c) so both compute the same prediction. */
#ifndef IMIJ_INTERNAL_PREDICTORS_H
#define IMIJ_INTERNAL_PREDICTORS_H

#include <stdint.h>

/* 3: MED (LOCO-I): min(W, N) when NW >= max, max(W, N) when NW <= min, else W + N - NW. */
static inline uint32_t med(uint32_t w, uint32_t n, uint32_t nw, uint32_t mask)
{
    uint32_t lo = w < n ? w : n, hi = w < n ? n : w, grad = (w + n - nw) & mask;
    uint32_t mid = nw <= lo ? hi : grad;
    return nw >= hi ? lo : mid;
}

/* 5: Paeth, ties prefer W, then N. */
static inline uint32_t paeth(uint32_t w, uint32_t n, uint32_t nw)
{
    int64_t p = (int64_t)w + n - nw;
    int64_t pa = p > w ? p - w : w - p, pb = p > n ? p - n : n - p, pc = p > nw ? p - nw : nw - p;
    uint32_t not_w = pb <= pc ? n : nw;
    return pa <= pb && pa <= pc ? w : not_w;
}

/* Predictor id 0..=6 from lane-local neighbours (the caller applies 2.3's edge rules). */
static inline uint32_t intra_predict(uint32_t id, uint32_t w, uint32_t n, uint32_t nw, uint32_t ne, uint32_t mask)
{
    switch (id) {
    case 0:
        return w;
    case 1:
        return n;
    case 2:
        return (uint32_t)(((uint64_t)w + n) >> 1);
    case 3:
        return med(w, n, nw, mask);
    case 4:
        return (w + n - nw) & mask;
    case 5:
        return paeth(w, n, nw);
    default:
        return (uint32_t)(((uint64_t)w + ne) >> 1);
    }
}

#endif /* IMIJ_INTERNAL_PREDICTORS_H */
