/* internal/rans_avx2.h: what the AVX2 paths of entropy.c (3.1) and bilevel.c (2.10, 2.14) share:
 * renormalizing eight interleaved rANS lanes at once. */
#ifndef IMIJ_INTERNAL_RANS_AVX2_H
#define IMIJ_INTERNAL_RANS_AVX2_H

#include "simd.h"

#if IMIJ_ENT_AVX2
/* 3.1 renormalize 8 lanes: those of `live` below 2^16 take the next words at *w, in lane order.
 * Reads 16 bytes at *w (the caller guarantees them); advances *w past the words taken. */
static inline AVX2_FN __m256i simd_renorm(__m256i xs, __m256i live, const uint8_t **w)
{
    __m256i need = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_srli_epi32(xs, 16), _mm256_setzero_si256()), live);
    uint32_t mask = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(need));
    if (!mask)
        return xs;
    /* lane i's word: popcount(mask & ((1 << i) - 1)), a nibble-table popcount of < 2^7 */
    const __m256i nib = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3,
                                         1, 2, 2, 3, 2, 3, 3, 4);
    __m256i below = _mm256_and_si256(_mm256_set1_epi32((int)mask), _mm256_setr_epi32(0, 1, 3, 7, 15, 31, 63, 127));
    __m256i idx = _mm256_add_epi32(_mm256_shuffle_epi8(nib, _mm256_and_si256(below, _mm256_set1_epi32(15))),
                                   _mm256_shuffle_epi8(nib, _mm256_srli_epi32(below, 4)));
    __m256i words = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)*w)); /* little-endian u16 */
    __m256i taken = _mm256_or_si256(_mm256_slli_epi32(xs, 16), _mm256_permutevar8x32_epi32(words, idx));
    *w += 2 * imij_popcnt32(mask);
    return _mm256_blendv_epi8(xs, taken, need);
}
#endif

#endif /* IMIJ_INTERNAL_RANS_AVX2_H */
