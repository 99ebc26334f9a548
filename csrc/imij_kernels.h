/* imij_kernels.h: the public declarations of the C kernels in csrc/.
 *
 * This file is ALSO the cffi cdef: imij_plugins/_build.py feeds it to ffibuilder.cdef() with every
 * line that starts with '#' removed. Keep everything between the preprocessor lines plain
 * declarations cffi can parse: no macros, no inline code, enum constants written out as literals.
 */
#ifndef IMIJ_KERNELS_H
#define IMIJ_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "bilevel.h"

/* ---- 2.13 quick-pixel packet streams ------------------------------------------------------- */

/* Return codes of imij_quick_decode / imij_quick_encode (0 = success; the encoder returns the
 * byte count instead). imij_plugins/payload/quick/packets.py QUICK_CODES maps each to an error,
 * by name. */
enum {
    IMIJ_QUICK_OK = 0,
    IMIJ_QUICK_E_ARGS = -1,      /* channels not 1..4 or word_bytes not 1, 2, 4, 8 */
    IMIJ_QUICK_E_SIZE = -2,      /* dst_len / src_len is not npixels*channels*word_bytes, or overflow */
    IMIJ_QUICK_E_TRUNCATED = -3, /* the stream ends before the last pixel (or inside an op) */
    IMIJ_QUICK_E_RUN = -4,       /* a RUN passes the unit's pixel count */
    IMIJ_QUICK_E_TRAILING = -5,  /* bytes follow the last pixel */
    IMIJ_QUICK_E_UNEQUAL = -6,   /* 1/2-channel unit whose three colour components differ */
    IMIJ_QUICK_E_SPACE = -7      /* encoder: the stream does not fit in dst_cap */
};

/* Decode one packet stream src[0..src_len) of exactly npixels pixels into dst, which must hold
 * exactly npixels*channels*word_bytes bytes (row-major, components interleaved, little-endian
 * samples). Returns IMIJ_QUICK_OK or a negative IMIJ_QUICK_E_* code; never reads or writes out
 * of bounds, whatever src holds. */
int imij_quick_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                      size_t npixels, int channels, int word_bytes);

/* Worst-case encoded size of npixels pixels (one literal per pixel), 0 on overflow or bad
 * arguments (a 0-pixel stream is empty, so 0 is also the bound for npixels == 0). */
size_t imij_quick_encode_bound(size_t npixels, int channels, int word_bytes);

/* Encode src (npixels*channels*word_bytes bytes, the decoder's output layout) as one packet
 * stream into dst. Returns the number of bytes written, or a negative IMIJ_QUICK_E_* code. With
 * dst_cap below imij_quick_encode_bound() the encoder stops with IMIJ_QUICK_E_SPACE once fewer
 * than 2 + channels*word_bytes bytes (what one pixel may write) are free: a stream of at most
 * dst_cap - (2 + channels*word_bytes) bytes always fits, a longer one may be refused. */
int64_t imij_quick_encode(const uint8_t *src, size_t src_len, size_t npixels, int channels,
                          int word_bytes, uint8_t *dst, size_t dst_cap);

/* ---- 2.4-2.6, 3, 4: entropy-coded lossless units ------------------------------------------ */

/* Return codes of the entropy kernels below (0 = success).
 * imij_plugins/payload/entropy/kernel.py ENTROPY_CODES maps each to an error, by name. */
enum {
    IMIJ_ENT_OK = 0,
    IMIJ_ENT_E_ARGS = -1,       /* bad unit geometry or slot count */
    IMIJ_ENT_E_TRUNCATED = -2,  /* the record ends inside its layout, entries or a stream's states */
    IMIJ_ENT_E_VARINT = -3,     /* a stream length is not a minimal varint of at most 10 bytes */
    IMIJ_ENT_E_DECOR = -4,      /* 2.4: decorrelation mode > 3 or where it is not allowed */
    IMIJ_ENT_E_PREDICTOR = -5,  /* 2.4 / 4: a row predictor out of range, or row 0 not W (or 7) */
    IMIJ_ENT_E_LENGTHS = -6,    /* stream lengths do not fill the record */
    IMIJ_ENT_E_STATE = -7,      /* 3: an initial state below 2^16 */
    IMIJ_ENT_E_WORDS = -8,      /* 3.1: a stream needs more words than it holds, or an odd byte count */
    IMIJ_ENT_E_VALUE = -10,     /* a value token past 32 bits */
    IMIJ_ENT_E_PALETTE = -11,   /* 2.5: palette stripe not allowed, or an entry >= 2^n */
    IMIJ_ENT_E_GATED = -12,     /* 2.10 / 2.14: bilevel or template layout without its feature */
    IMIJ_ENT_E_SIZE = -13       /* a buffer's length is below what the call writes (or reads) there */
};

/* One slot's model (3.3), prepared once per payload: the context map, the normalized tables as
 * one packed entry per context and slot, each symbol's token base and extra-bit count (3.2).
 * An entry's low half is sym | freq << 8 | (slot - cum) << 19 (a decode step is one load); its
 * high half the token of its symbol for the SIMD step: base | nb << 24, or bit 31 when the
 * scalar path must finish the step (a run token, more than 16 extra bits, a value of 24 bits or
 * more); one 64-bit gather fetches both. imij_models_fill makes them. */
typedef struct {
    uint32_t depth;        /* n_s, coded bits */
    uint32_t nvalue;       /* value tokens; symbols from nvalue on are run tokens */
    uint32_t cross;        /* 3.1: add slot 0's residual to the context sum */
    uint32_t ctx_shift;    /* 3.1: T(v) = min(v >> ctx_shift, 2^16) */
    uint32_t delta;        /* 2.6: near-lossless bound, 0 = exact */
    uint32_t high;         /* some symbol has more than 16 extra bits (the high phase runs) */
    uint8_t ctx_map[16];
    uint32_t ntables;      /* contexts with a table: every ctx_map entry is below it */
    uint64_t *ent;         /* ntables x 1024 entries, the caller's memory */
    uint32_t base[256];
    uint8_t nb[256];
} imij_slot_model;

/* A payload's `count` models (3.3) as structs, out[i] from params[7 i ..] = (depth, k, m, cross,
 * ctx_shift, delta, ntables) of a valid model (3.3's rules already checked; k the clamped kv),
 * its ctx_map at ctx_maps[16 i] and its ntables (1..=4) normalized tables at freq[1024 i + 256 c
 * + sym] (each summing to M = 1024; a larger sum is cut at M): the tokens' base and nb (3.2),
 * nvalue, high, and the entries: each model's min(ntables, 4) x 1024, one model after another
 * from entries[0] (entries_len of them, the caller's memory, which out[i].ent then points at).
 * Returns 0, or IMIJ_ENT_E_SIZE (nothing written) when the entries do not fit entries_len. */
int imij_models_fill(imij_slot_model *out, uint32_t count, const uint32_t *params, const uint8_t *ctx_maps,
                     const uint32_t *freq, uint64_t *entries, size_t entries_len);

/* What a unit decode needs besides its bytes. */
typedef struct {
    uint32_t width, height, lanes, nslots;
    uint32_t decor_allowed;   /* 2.2: RGB/RGBA whose three colour slots have equal depth */
    uint32_t inter_allowed;   /* section 4: predictors 7-9 (inter frame, <= 32-bit, no bounds) */
    const imij_slot_model *slots;
    const imij_slot_model *palette; /* the palette index model, or NULL when palette stripes may not occur */
} imij_unit;

/* 3: one slot stream between row blocks: its bytes in the record, the next word's offset, and
 * each lane's state and pending zero-run count (3.1). */
typedef struct {
    size_t start, len, pos;
    uint32_t st[16];
    uint32_t run[16];
} imij_stream_state;

/* A unit decoding in row blocks: the layout read by imij_entropy_begin and every stream's place. */
typedef struct {
    imij_unit unit;
    const uint8_t *body;      /* the record, which must outlive the decode */
    uint8_t *pred_ids;        /* 2.4: one predictor per stripe row (height bytes, the caller's) */
    uint32_t layout;          /* 2.4: decorrelation mode 0..3, or 0x80 for a palette stripe (2.5) */
    uint32_t inter;           /* section 4: predictors 7-9 allowed (and the reference read) */
    uint32_t count;           /* 2.5: palette entries */
    uint32_t row;             /* the next stripe row to decode */
    int32_t error;            /* the first error; every later call returns it */
    uint16_t entries[8][256]; /* 2.5: per slot, each index's coded value (indices >= count: entry 0's) */
    imij_stream_state streams[8];
} imij_entropy_state;

/* Read one unit record body's layout (2.4, 2.5): decorrelation or palette entries, row predictors,
 * stream lengths, and every stream's initial states, into `state`. `unit->width` and `height` are
 * the unit's; `has_reference`: an inter frame's previous canvas is at hand (predictors 7-9 where
 * unit->inter_allowed). pred_ids (pred_len bytes, at least the unit's height) receives the row
 * predictors, which every later call reads. Returns 0 or a negative IMIJ_ENT_E_* code. */
int imij_entropy_begin(const uint8_t *body, size_t len, const imij_unit *unit, int has_reference,
                       imij_entropy_state *state, uint8_t *pred_ids, size_t pred_len);

/* Decode the next `rows` stripe rows (1..=capacity, not past the unit) of every slot into the row
 * block scratch `planes` (planes_len uint32): max(nslots, 1) planes of (capacity + 2) rows of
 * lw * active uint32 (2.3's lane width times the non-empty lanes), each row lane-interleaved: lane
 * l's column x at x * active + l, the last lane's columns past its width padding. In each plane,
 * rows 0 and 1 carry the residuals and the coded values of the row above the block (kept by the
 * kernel from one call to the next); rows 2..2+rows receive the block's coded values (2.1's s,
 * before the channel maps; plane 0 is a palette stripe's index plane until its entries replace it),
 * which the caller may then overwrite. `reference` (reference_len uint32; when begin saw an inter
 * frame) has nslots planes of the same geometry: row 1 the reduced reference of the row above the
 * block, rows 2.. the block's. Returns 0 or a negative IMIJ_ENT_E_* code (IMIJ_ENT_E_SIZE when a
 * length is below that; the same code on every later call); never reads or writes out of bounds. */
int imij_entropy_rows(imij_entropy_state *state, uint32_t rows, uint32_t capacity, uint32_t *planes,
                      size_t planes_len, const uint32_t *reference, size_t reference_len);

/* Section 4 step 4 in the kernel, so a unit of words of at most 32 bits decodes without returning
 * to Python per block. Slot s's coded value v becomes t = lut[s][v] when lut[s] is set (any map of
 * a narrow slot, tabulated over its 2^n values: the word itself, flips 0), else
 * t = (v << shift[s]) + add[s] mod 2^32 (2.1: Lsb, Shift, Offset); then the word is
 * t ^ flip[s] ^ (bit top[s] of t ? neg_flip[s] : 0) (the order map inverse: flip the sign bit of a
 * signed word, or the other bits of a negative float), stored at out + row * row_stride + column
 * * pixel_stride + channel[s] * esize. Each Const channel gets its word. Every sample a unit
 * stores lies in out[0, out_len) (imij_sample_store_fits, checked once per unit). */
typedef struct {
    uint8_t *out;                 /* the unit's sample (0, 0, 0) */
    size_t out_len;               /* bytes from out that the store may write */
    int64_t row_stride, pixel_stride; /* non-negative */
    uint32_t esize;               /* bytes per sample: 1, 2 or 4 */
    uint32_t nslots, nconst;
    uint32_t channel[8], shift[8], add[8], flip[8], top[8], neg_flip[8];
    const uint32_t *lut[8];       /* 2^n words, or NULL */
    uint32_t const_channel[8], const_word[8];
} imij_sample_store;

/* Decode every remaining stripe row of an intra unit (imij_entropy_rows, blocks of `capacity`
 * rows through `planes`, planes_len uint32) and store each block through `store` before the next.
 * Returns 0 or a negative IMIJ_ENT_E_* code: IMIJ_ENT_E_SIZE, before decoding, when the planes
 * or the store's out_len are too small for the unit. */
int imij_entropy_store(imij_entropy_state *state, uint32_t capacity, uint32_t *planes, size_t planes_len,
                       const imij_sample_store *store);

/* 1 when `store` can be used: esize 1, 2 or 4, at most 8 slots and 8 Const channels, top bits
 * below 32. */
int imij_sample_store_valid(const imij_sample_store *store);

/* 1 when `store` is valid and every sample of a width x height rectangle it stores (each slot's
 * and Const channel's) lies inside out[0, out_len): strides non-negative, no overflow. */
int imij_sample_store_fits(const imij_sample_store *store, uint32_t width, uint32_t height);

/* Section 4 step 4 of slot s's coded value v through `store` (see imij_sample_store). */
uint32_t imij_sample_word(const imij_sample_store *store, uint32_t s, uint32_t v);

/* imij_level_unit_decode (bilevel.h), each decoded row's samples stored through `store` (valid,
 * store->nslots == unit->nslots; a table of a slot covers its 2^depth values) instead of into
 * coded planes, so a level unit decodes straight into its rectangle of the image;
 * IMIJ_LVL_E_SIZE, before decoding, when the unit's samples do not fit the store's out_len or
 * index_len is short. */
int imij_level_unit_store(const uint8_t *body, size_t len, const imij_level_unit *unit, const imij_sample_store *store,
                          uint8_t *index, size_t index_len);

#endif /* IMIJ_KERNELS_H */
