/* bilevel.h: bilevel stripes (2.10) and template palette stripes (2.14).
 *
 * Part of the cffi cdef (imij_plugins/_build.py strips the lines starting with '#'): plain
 * declarations only, enum constants written out as literals.
 */
#ifndef IMIJ_BILEVEL_H
#define IMIJ_BILEVEL_H

#include <stddef.h>
#include <stdint.h>

/* Return codes of imij_level_unit_decode and the encoder's kernels (0 = success).
 * imij_plugins/payload/entropy/bilevel.py LEVEL_CODES maps each to an error, by name. */
enum {
    IMIJ_LVL_OK = 0,
    IMIJ_LVL_E_ARGS = -1,      /* bad unit geometry, slot count or encoder operation */
    IMIJ_LVL_E_TRUNCATED = -2, /* the record ends inside its layout, count, entries, rows or states */
    IMIJ_LVL_E_FEATURE = -3,   /* 0.1: layout 0x81-0x84 without feature bilevel / template_palettes */
    IMIJ_LVL_E_RECORD = -4,    /* 2.10 / 2.14: layout without head record 25 / 35 */
    IMIJ_LVL_E_SLOT = -5,      /* 2.10: 0x81 where the payload's only slot is not 1 bit deep */
    IMIJ_LVL_E_DEPTH = -6,     /* 2.5: entries of a slot deeper than 16 bits */
    IMIJ_LVL_E_COUNT = -7,     /* 2.10: 0x82 with more than two entries */
    IMIJ_LVL_E_ENTRY = -8,     /* 2.5: an entry >= 2^n_s */
    IMIJ_LVL_E_SHARED = -9,    /* 2.14: 0x84 while record 35 has no shared entries */
    IMIJ_LVL_E_ROWS = -10,     /* 2.14: a typical-row bit past the last row */
    IMIJ_LVL_E_STATE = -11,    /* 3: an initial state below 2^16 */
    IMIJ_LVL_E_WORDS = -12,    /* 3.1: the stream needs more words than it holds, or an odd byte count */
    IMIJ_LVL_E_LAYOUT = -13,   /* not a layout byte 0x81-0x84 */
    IMIJ_LVL_E_SPACE = -14,    /* encoder: dst_cap too small */
    IMIJ_LVL_E_FREQ = -15,     /* encoder: an outcome the tables give no probability */
    IMIJ_LVL_E_SIZE = -16      /* a buffer's length is below what the call writes there */
};

/* Head record 25 (2.10), parsed once per payload. */
typedef struct {
    uint32_t inv;
    uint16_t prob[1024]; /* probability of t = 0 in 1/1024, 0..=1024 (unused contexts 512) */
} imij_bilevel_table;

/* Head record 35 (2.14), parsed once per payload. */
typedef struct {
    uint16_t p[1024];        /* phase 0: probability that the pixel equals W */
    uint16_t q[40];          /* candidate phases: probability that it equals the candidate */
    uint32_t escape;         /* 1 when the direct-index table is present */
    uint16_t freq[256];      /* the direct-index table, normalized (3.3) */
    uint16_t cum[256];
    uint8_t lookup[1024];    /* slot -> symbol */
    uint32_t nshared;        /* shared entries, 0 = none */
    uint16_t shared[256][8]; /* per entry, per slot in slot order */
} imij_template_tables;

/* What a bilevel / template unit decode needs besides its bytes. */
typedef struct {
    uint32_t width, height, lanes, nslots;
    uint32_t depth[8];                 /* slot depths n_s in slot order */
    uint32_t out_bytes;                /* bytes per coded value of the output planes: 1, 2 or 4 */
    uint32_t features;                 /* bit 0: bilevel, bit 1: template_palettes */
    const imij_bilevel_table *bilevel; /* NULL without head record 25 */
    const imij_template_tables *tmpl;  /* NULL without head record 35 */
} imij_level_unit;

/* Decode one unit record body whose layout byte is 0x81-0x84 into `out` (out_len bytes): nslots
 * planes of width*height coded values (before the channel maps), each out_bytes wide (entries of
 * up to 16 bits need at least as many). `index` is scratch of index_len >= 3 * (width + 4) + 16
 * bytes (the index plane's last three rows, zero-padded); with 51 * (width + 4) + 16 bytes the
 * SIMD path keeps its lane-major ring there for lanes of any width (else on the stack for lanes
 * of at most 512 columns, the scalar path for wider ones). Rows reach `out` as they decode, so
 * after an error `out` holds the rows decoded before it. Returns 0 or a negative IMIJ_LVL_E_*
 * code (IMIJ_LVL_E_SIZE, before decoding, when a length is short); never reads or writes out of
 * bounds. */
int imij_level_unit_decode(const uint8_t *body, size_t len, const imij_level_unit *unit, void *out, size_t out_len,
                           uint8_t *index, size_t index_len);

/* The encoder's side of a unit whose plane is known: `plane` is height*width bytes, a bilevel t
 * plane (2.10: values 0 or 1; `typical` NULL) or a template stripe's index plane of n entries
 * (2.14: indices < 256, `typical` one byte per row, 1 = a typical row, which codes nothing).
 * `scratch` holds scratch_len >= (height + 2) * (width + 4) bytes (the decoder's padded plane),
 * else IMIJ_LVL_E_SIZE. */

/* Adds the outcome counts of every operation: phase0[2 * context + outcome] (1024 contexts),
 * cand[2 * context + outcome] (40 candidate contexts, templates only), escape[index] (256).
 * Returns 0 or IMIJ_LVL_E_ARGS (bad geometry, a t above 1, or with n <= 2 an index above 1). */
int imij_level_counts(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                      const uint8_t *typical, uint8_t *scratch, size_t scratch_len, uint32_t *phase0, uint32_t *cand,
                      uint32_t *escape);

/* The unit's rANS stream (3.1; the initial states, then the words in reading order) with the
 * probabilities of t = 0 / "equals W" per phase-0 context (phase0, 1024) and of "equals the
 * candidate" (cand, 40), and the direct-index table (efreq / ecum, 256 each; NULL when absent:
 * escapes must then be index 0). Returns the stream's length, IMIJ_LVL_E_FREQ when an outcome
 * has no probability, IMIJ_LVL_E_SPACE when dst_cap is too small (4 * active lanes + 2 bytes per
 * operation always suffice), or IMIJ_LVL_E_ARGS. */
int64_t imij_level_encode(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                          const uint8_t *typical, uint8_t *scratch, size_t scratch_len, const uint16_t *phase0,
                          const uint16_t *cand, const uint16_t *efreq, const uint16_t *ecum, uint8_t *dst,
                          size_t dst_cap);

#endif /* IMIJ_BILEVEL_H */
