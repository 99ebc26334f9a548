/* internal/clones.h: IMIJ_CLONES, for plain C loops the compiler vectorizes: an AVX2 copy beside the
 * baseline one, chosen when the library loads (GCC's target_clones, an IFUNC: on x86-64 glibc
 * only, as musl's loader rejects IFUNC relocations; elsewhere the baseline alone). */
#ifndef IMIJ_INTERNAL_CLONES_H
#define IMIJ_INTERNAL_CLONES_H

#include "portable.h" /* and with it a libc header, which defines __GLIBC__ on glibc */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define IMIJ_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define IMIJ_CLONES
#endif

#endif /* IMIJ_INTERNAL_CLONES_H */
