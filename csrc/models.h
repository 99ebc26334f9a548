/* models.h: tables read from head bit streams: a table of the models bit stream (3.3), read and
 * normalized, and the used-bit value lists of records 25 and 35 (2.10, 2.14).
 *
 * Part of the cffi cdef (imij_plugins/_build.py strips the lines starting with '#'): plain
 * declarations only, enum constants written out as literals.
 */
#ifndef IMIJ_MODELS_H
#define IMIJ_MODELS_H

#include <stddef.h>
#include <stdint.h>

/* Return codes of the readers below (0 = success). imij_plugins/payload/entropy/models.py
 * TABLE_CODES maps each to an error, by name. */
enum {
    IMIJ_TBL_OK = 0,
    IMIJ_TBL_E_END = -1,      /* the table runs past the models' bytes */
    IMIJ_TBL_E_LAST = -2,     /* 3.3: last symbol at or past the alphabet */
    IMIJ_TBL_E_GAMMA = -3,    /* 3.3: a gamma code with more than 24 leading zero bits */
    IMIJ_TBL_E_EXPONENT = -4, /* 3.3: a weight exponent outside 0..=32 */
    IMIJ_TBL_E_CAP = -5,      /* 3.3 / 3.2: a weight on a run token past the run cap */
    IMIJ_TBL_E_EMPTY = -6,    /* 3.3: no nonzero weight */
    IMIJ_TBL_E_ARGS = -7,     /* imij_normalize_table: count 0 or above 256 */
    IMIJ_TBL_E_SCHEME = -8,   /* 3.3: k and m that the slot's depth does not allow */
    IMIJ_TBL_E_CROSS = -9,    /* 3.3 / 2.2: a cross context in a slot that may not use it */
    IMIJ_TBL_E_SIZE = -10     /* a buffer's length is below what the call writes there */
};

/* One model's fields before its tables (3.3); ntables = max(ctx_map) + 1. */
typedef struct {
    uint32_t k, m, cross, ctx_shift, ntables;
    uint8_t ctx_map[16];
} imij_model_head;

/* Read one table (3.3) starting at bit *bitpos of buf[0..len) (LSB-first, section 0) for an
 * alphabet of `alphabet` symbols (<= 256) whose symbols from `first_capped` on are run tokens past
 * the cap. On success: *last, weights[0..=last] and freq[0..=last] (normalized to sum 1024 as 3.3
 * specifies), *bitpos just past the table; weights and freq hold 256 entries. Never reads out of
 * bounds. */
int imij_read_table(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t alphabet, uint32_t first_capped,
                    uint32_t *last, uint32_t *weights, uint32_t *freq);

/* `count` consecutive tables (a model's, 3.3) as imij_read_table, table c into last[c] and the
 * 256 entries of weights and freq at c * 256; stops at the first table rejected, returning its code. */
int imij_read_tables(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t alphabet, uint32_t first_capped,
                     uint32_t count, uint32_t *last, uint32_t *weights, uint32_t *freq);

/* `count` consecutive models (3.3) from bit *bitpos: model i of a slot depth_i bits deep (above
 * 16: it has a ctx_shift field) that may use the cross context when cross_ok[i].
 * schemes[512 i + 2 (8 k + m)] and the entry after it are the alphabet and the first run symbol
 * past the cap of parameters (k, m) at depth_i, the alphabet 0 where 3.3 rejects them. Model i's
 * fields go to heads[i] (heads_len records), its tables as imij_read_tables to last[4 i ..] and
 * the 256-entry rows of weights and freq from 1024 i (last, weights and freq each hold tables_len
 * tables: entries of last, rows of the others). Returns 0 (with *bitpos past the last model),
 * IMIJ_TBL_E_SIZE (nothing read or written) when heads_len < count or tables_len < 4 count, or
 * the code of the first rule broken. */
int imij_read_models(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t count, const uint32_t *depths,
                     const uint8_t *cross_ok, const uint16_t *schemes, imij_model_head *heads, size_t heads_len,
                     uint32_t *last, uint32_t *weights, uint32_t *freq, size_t tables_len);

/* 3.3's normalization of weights[0..count) (count <= 256, weights below 2^32) into freq, as
 * imij_read_table does it (writers code with the decoder's frequencies). Returns 0, or
 * IMIJ_TBL_E_EMPTY when no weight is nonzero, IMIJ_TBL_E_ARGS when count is 0 or above 256. */
int imij_normalize_table(const uint32_t *weights, uint32_t count, uint32_t *freq);

/* 2.10 / 2.14: `count` entries, each a used bit and, when set, a value of `bits` (1..=16) bits,
 * from bit *bitpos of buf[0..len): values[i] (0 when unused) and used[i]. Returns 0 and moves
 * *bitpos past them, or IMIJ_TBL_E_END. */
int imij_read_used_values(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t count, uint32_t bits,
                          uint16_t *values, uint8_t *used);

#endif
