#ifndef IMIJ_ENTROPY_DISPATCH_H
#define IMIJ_ENTROPY_DISPATCH_H

/* Which path csrc/entropy.c decodes entropy streams (3.1) with. Both give identical output and
 * errors on every input; the SIMD path only changes speed.
 *
 * mode < 0: query only; 0: force the scalar path; 1: the fastest path this CPU supports (the
 * default). Returns the path in use afterwards: 0 scalar, 1 AVX2. Until the first call the
 * environment variable IMIJ_ENTROPY_SIMD=0 (read once) selects the scalar path. Meant for tests
 * and benchmarks: set it before decoding, not while other threads decode. */
int imij_entropy_simd(int mode);

#endif /* IMIJ_ENTROPY_DISPATCH_H */
