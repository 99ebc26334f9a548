/* internal/simd.h: the x86 SIMD targets of the entropy and level decoders (entropy.c 3.1,
 * bilevel.c 2.10 / 2.14): AVX2_FN and AVX512_FN mark functions built for those instruction sets,
 * wherever the compiler can (IMIJ_X86_SIMD; else only the scalar paths are built). Which path runs
 * is chosen at run time (imij_entropy_simd); every path gives identical output and errors. */
#ifndef IMIJ_INTERNAL_SIMD_H
#define IMIJ_INTERNAL_SIMD_H

#include "portable.h"

#define IMIJ_ENT_AVX2 IMIJ_X86_SIMD
#define IMIJ_ENT_AVX512 IMIJ_X86_SIMD
#if IMIJ_ENT_AVX2
#include <immintrin.h>
#define AVX512_FN IMIJ_TARGET("avx512f,avx512cd,avx512bw,avx512dq,avx512vl,avx2,popcnt")
#define AVX2_FN IMIJ_TARGET("avx2,popcnt")
#endif

#endif /* IMIJ_INTERNAL_SIMD_H */
