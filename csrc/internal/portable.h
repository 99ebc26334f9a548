/* portable.h: one spelling, for GCC, Clang, clang-cl and MSVC, of what C99 leaves to the compiler:
 * bit scans, inlining control, the high half of a 64-bit product, per-function SIMD targets and
 * the x86 feature registers. csrc's own code uses these and never a compiler's extension directly
 * (tests/test_csrc_portability.py preprocesses csrc/ as MSVC sees it and checks that).
 *
 * Private to csrc: kept out of the headers in csrc/ itself, which imij_plugins/_build.py feeds to
 * cffi's cdef. */
#ifndef IMIJ_PORTABLE_H
#define IMIJ_PORTABLE_H

#include <stdint.h>
#include <string.h> /* a libc header first: glibc's defines __GLIBC__ (clones.h tests it) */

#if defined(__GNUC__) || defined(__clang__) /* GCC, Clang, clang-cl */
#define IMIJ_GNU 1
#else
#define IMIJ_GNU 0
#endif
#if defined(_MSC_VER) && !IMIJ_GNU
#include <intrin.h>
#endif

#if IMIJ_GNU
#define IMIJ_NOINLINE __attribute__((noinline))
#define IMIJ_ALWAYS_INLINE __attribute__((always_inline)) inline
#elif defined(_MSC_VER)
#define IMIJ_NOINLINE __declspec(noinline)
#define IMIJ_ALWAYS_INLINE __forceinline
#else
#define IMIJ_NOINLINE
#define IMIJ_ALWAYS_INLINE inline
#endif

/* ---- bit scans; x != 0 for clz and ctz ---- */

static inline uint32_t imij_clz32(uint32_t x)
{
#if IMIJ_GNU
    return (uint32_t)__builtin_clz(x);
#elif defined(_MSC_VER)
    unsigned long i;
    _BitScanReverse(&i, x);
    return 31u - (uint32_t)i;
#else
    uint32_t n = 0;
    for (; !(x & 0x80000000u); x <<= 1)
        n++;
    return n;
#endif
}

static inline uint32_t imij_clz64(uint64_t x)
{
#if IMIJ_GNU
    return (uint32_t)__builtin_clzll(x);
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long i;
    _BitScanReverse64(&i, x);
    return 63u - (uint32_t)i;
#else
    return x >> 32 ? imij_clz32((uint32_t)(x >> 32)) : 32u + imij_clz32((uint32_t)x);
#endif
}

static inline uint32_t imij_ctz32(uint32_t x)
{
#if IMIJ_GNU
    return (uint32_t)__builtin_ctz(x);
#elif defined(_MSC_VER)
    unsigned long i;
    _BitScanForward(&i, x);
    return (uint32_t)i;
#else
    uint32_t n = 0;
    for (; !(x & 1u); x >>= 1)
        n++;
    return n;
#endif
}

static inline uint32_t imij_ctz64(uint64_t x)
{
#if IMIJ_GNU
    return (uint32_t)__builtin_ctzll(x);
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long i;
    _BitScanForward64(&i, x);
    return (uint32_t)i;
#else
    return (uint32_t)x ? imij_ctz32((uint32_t)x) : 32u + imij_ctz32((uint32_t)(x >> 32));
#endif
}

/* Python's int.bit_length: 0 for 0. */
static inline uint32_t imij_bitlen32(uint32_t x) { return x ? 32u - imij_clz32(x) : 0u; }
static inline uint32_t imij_bitlen64(uint64_t x) { return x ? 64u - imij_clz64(x) : 0u; }

/* The set bits of x. On MSVC the POPCNT instruction: only for the x86 SIMD paths, whose run-time
 * check (imij_entropy_simd) requires POPCNT. */
#if IMIJ_GNU
#define imij_popcnt32(x) ((uint32_t)__builtin_popcount(x))
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#define imij_popcnt32(x) ((uint32_t)__popcnt(x))
#endif

/* ---- the high 64 bits of a 64 x 64-bit product, where the target has a cheap one ---- */

#if IMIJ_GNU && defined(__SIZEOF_INT128__)
#define IMIJ_HAVE_MULHI64 1
__extension__ typedef unsigned __int128 imij_u128;
static inline uint64_t imij_mulhi64(uint64_t a, uint64_t b) { return (uint64_t)(((imij_u128)a * b) >> 64); }
#elif defined(_MSC_VER) && !IMIJ_GNU && (defined(_M_X64) || defined(_M_ARM64))
#define IMIJ_HAVE_MULHI64 1
static inline uint64_t imij_mulhi64(uint64_t a, uint64_t b) { return __umulh(a, b); }
#else
#define IMIJ_HAVE_MULHI64 0
#endif

/* ---- x86 SIMD: functions compiled for AVX2 / AVX-512 beside baseline ones, chosen at run time ----
 *
 * IMIJ_X86_SIMD: this compiler builds such functions. GCC and Clang need the target on each one
 * (IMIJ_TARGET); MSVC compiles the intrinsics anywhere. ARM64EC defines _M_X64 but has no AVX2. */
#if IMIJ_GNU && (defined(__x86_64__) || defined(__i386__))
#define IMIJ_X86_SIMD 1
#define IMIJ_TARGET(features) __attribute__((target(features)))
#elif defined(_MSC_VER) && !IMIJ_GNU && defined(_M_X64) && !defined(_M_ARM64EC)
#define IMIJ_X86_SIMD 1
#define IMIJ_TARGET(features)
#else
#define IMIJ_X86_SIMD 0
#endif

#if IMIJ_X86_SIMD
#if defined(_MSC_VER)
#include <intrin.h> /* __cpuidex, _xgetbv (clang-cl declares _xgetbv there without a target) */
#else
#include <cpuid.h>
#endif

/* CPUID leaf `leaf`, subleaf `sub`: r = eax, ebx, ecx, edx (the caller checks the leaf exists). */
static inline void imij_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
#if defined(_MSC_VER)
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    for (int i = 0; i < 4; i++)
        r[i] = (uint32_t)v[i];
#else
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
#endif
}

/* XCR0, the register states the OS saves (call only when CPUID.1:ECX.OSXSAVE is set). */
static inline uint64_t imij_xgetbv0(void)
{
#if defined(_MSC_VER)
    return (uint64_t)_xgetbv(0);
#else
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0)); /* xgetbv */
    return (uint64_t)hi << 32 | lo;
#endif
}
#endif

#endif /* IMIJ_PORTABLE_H */
