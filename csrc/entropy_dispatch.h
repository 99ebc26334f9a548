#ifndef IMIJ_ENTROPY_DISPATCH_H
#define IMIJ_ENTROPY_DISPATCH_H

/* Which path csrc/entropy.c decodes entropy streams (3.1) with. Every path gives identical
 * output and errors on every input; the SIMD paths only change speed. Paths: 0 scalar, 1 AVX2
 * (16 lanes as two vectors), 2 AVX-512 (one vector; stores and bilevel.c use their AVX2 code).
 *
 * mode < 0: query only; mode >= 0: the fastest path this CPU supports up to `mode` (2: the
 * fastest, the default). Returns the path in use afterwards. Until the first call the
 * environment variable IMIJ_ENTROPY_SIMD=0 or =1 (read once) caps the path. Meant for tests and
 * benchmarks: set it before decoding, not while other threads decode. */
int imij_entropy_simd(int mode);

#endif /* IMIJ_ENTROPY_DISPATCH_H */
