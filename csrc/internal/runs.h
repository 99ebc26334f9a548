/* internal/runs.h: 3.1's zero runs as the lanes of one step see them, shared by the decoder
 * (entropy.c) and the encoder's stream writer (encode.c), so both skip the same steps. */
#ifndef IMIJ_INTERNAL_RUNS_H
#define IMIJ_INTERNAL_RUNS_H

#include <stdint.h>

/* The steps every one of lanes 0..nl-1 spends inside its zero run, at most `limit`: the shortest
 * run left, or 0 when some lane takes a token at this step (a step of such lanes reads and
 * writes no symbol, so it needs no state). */
static inline uint32_t all_runs(const uint32_t *run, uint32_t nl, uint32_t limit)
{
    uint32_t k = limit;
    for (uint32_t l = 0; l < nl; l++)
        k = run[l] < k ? run[l] : k;
    return k;
}

#endif /* IMIJ_INTERNAL_RUNS_H */
