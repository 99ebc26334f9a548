/* imij_kernels.h: the public declarations of every C kernel in csrc/, and the cffi cdef.
 *
 * imij_plugins/_build.py feeds this one file to ffibuilder.cdef() with every line that starts with
 * '#' removed. Keep everything between the preprocessor lines plain declarations cffi can parse:
 * no macros, no inline code, enum constants written out as literals. What the kernels share
 * privately (SIMD targets, predictors, zero runs, portability) is in csrc/internal/.
 */
#ifndef IMIJ_KERNELS_H
#define IMIJ_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* ---- status codes (status.c) ---------------------------------------------------------------- */

/* What every kernel below returns: IMIJ_OK (0), or one of these negative codes (the kernels that
 * return a count or a length return it instead of IMIJ_OK). One code has one meaning in every
 * kernel; imij_strerror names it. imij_plugins/payload/kernel_codes.py maps each to an error. */
enum imij_status {
    IMIJ_OK = 0,
    /* calls a kernel refuses, and the encoders' outcomes: never the input's fault */
    IMIJ_E_ARGS = -1,       /* bad geometry, slot count, depths, model structs, sample store, plane or counts */
    IMIJ_E_SIZE = -2,       /* a buffer's length is below what the call writes (or reads) there; nothing written */
    IMIJ_E_SPACE = -3,      /* encoders: the output does not fit the capacity given */
    IMIJ_E_FREQ = -4,       /* encoders: a symbol or outcome its table gives no probability */
    IMIJ_E_MANY = -5,       /* imij_enc_palette: more than 256 distinct tuples */
    IMIJ_E_RANGE = -6,      /* imij_enc_histogram: a value of 2^depth or more */
    IMIJ_E_LAYOUT = -7,     /* level kernels: a layout byte other than 0x81-0x84 */
    /* rules of the spec that the input breaks */
    IMIJ_E_TRUNCATED = -8,  /* a record, stream or table ends early (the bits or bytes run out) */
    IMIJ_E_VARINT = -9,     /* 0: a stream length that is not a minimal varint of at most 10 bytes */
    IMIJ_E_FEATURE = -10,   /* 0.1 / 2.10 / 2.14: layout 0x81-0x84 without feature bilevel / template_palettes */
    IMIJ_E_DECOR = -11,     /* 2.4: decorrelation mode > 3 or where it is not allowed */
    IMIJ_E_PREDICTOR = -12, /* 2.4 / 4: a row predictor out of range, or row 0 not W (or 7) */
    IMIJ_E_LENGTHS = -13,   /* 2.4: stream lengths that do not fill the record */
    IMIJ_E_PALETTE = -14,   /* 2.5: a palette stripe (0x80) without head present bit 0 */
    IMIJ_E_ENTRY = -15,     /* 2.5: a palette entry >= 2^n_s */
    IMIJ_E_DEPTH = -16,     /* 2.5: palette entries (0x80, 0x82-0x84) of a slot deeper than 16 bits */
    IMIJ_E_RECORD = -17,    /* 2.10 / 2.14: layout 0x81-0x84 without head record 25 / 35 */
    IMIJ_E_SLOT = -18,      /* 2.10: 0x81 where the payload's only slot is not 1 bit deep */
    IMIJ_E_COUNT = -19,     /* 2.10: 0x82 with more than two entries */
    IMIJ_E_SHARED = -20,    /* 2.14: 0x84 while record 35 has no shared entries */
    IMIJ_E_ROWS = -21,      /* 2.14: a typical-row bit past the last row */
    IMIJ_E_RUN = -22,       /* 2.13: a RUN passes the unit's pixel count */
    IMIJ_E_TRAILING = -23,  /* 2.13: bytes follow the last pixel */
    IMIJ_E_UNEQUAL = -24,   /* 2.13: a 1/2-channel unit whose three colour components differ */
    IMIJ_E_STATE = -25,     /* 3: an initial state below 2^16 */
    IMIJ_E_WORDS = -26,     /* 3.1: a stream needs more words than it holds, or an odd byte count */
    IMIJ_E_VALUE = -27,     /* 3.2: a value token past 32 bits */
    IMIJ_E_LAST = -28,      /* 3.3: a table's last symbol at or past the alphabet */
    IMIJ_E_GAMMA = -29,     /* 3.3: a gamma code with more than 24 leading zero bits */
    IMIJ_E_EXPONENT = -30,  /* 3.3: a weight exponent outside 0..=32 */
    IMIJ_E_CAP = -31,       /* 3.3 / 3.2: a weight on a run token past the run cap */
    IMIJ_E_EMPTY = -32,     /* 3.3: a table without a nonzero weight */
    IMIJ_E_SCHEME = -33,    /* 3.3: k and m that the slot's depth does not allow */
    IMIJ_E_CROSS = -34      /* 3.3 / 2.2: a cross context in a slot that may not use it */
};

/* A fixed, non-empty text for every status above (no trailing period), "unknown status" for any
 * other value. The returned string is static: never freed, safe from any thread. */
const char *imij_strerror(int status);

/* ---- tables read from head bit streams: a table of the models bit stream (3.3), read and
 * normalized, and the used-bit value lists of records 25 and 35 (2.10, 2.14) (models.c) ---- */

/* One model's fields before its tables (3.3); ntables = max(ctx_map) + 1. */
typedef struct {
    uint32_t k, m, cross, ctx_shift, ntables;
    uint8_t ctx_map[16];
} imij_model_head;

/* Read one table (3.3) starting at bit *bitpos of buf[0..len) (LSB-first, section 0) for an
 * alphabet of `alphabet` symbols (<= 256) whose symbols from `first_capped` on are run tokens past
 * the cap. On success: *last, weights[0..=last] and freq[0..=last] (normalized to sum 1024 as 3.3
 * specifies), *bitpos just past the table; weights and freq hold 256 entries. Never reads out of
 * bounds. Returns 0, IMIJ_E_ARGS (nothing read) when alphabet is above 256, or the code of the
 * first rule broken. */
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
 * IMIJ_E_SIZE (nothing read or written) when heads_len < count or tables_len < 4 count, or
 * the code of the first rule broken. */
int imij_read_models(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t count, const uint32_t *depths,
                     const uint8_t *cross_ok, const uint16_t *schemes, imij_model_head *heads, size_t heads_len,
                     uint32_t *last, uint32_t *weights, uint32_t *freq, size_t tables_len);

/* 3.3's normalization of weights[0..count) (count <= 256, weights below 2^32) into freq, as
 * imij_read_table does it (writers code with the decoder's frequencies). Returns 0, or
 * IMIJ_E_EMPTY when no weight is nonzero, IMIJ_E_ARGS when count is 0 or above 256. */
int imij_normalize_table(const uint32_t *weights, uint32_t count, uint32_t *freq);

/* 2.10 / 2.14: `count` entries, each a used bit and, when set, a value of `bits` (1..=16) bits,
 * from bit *bitpos of buf[0..len): values[i] (0 when unused) and used[i]. Returns 0 and moves
 * *bitpos past them, IMIJ_E_ARGS (nothing read) when bits is outside 1..=16, or IMIJ_E_TRUNCATED. */
int imij_read_used_values(const uint8_t *buf, size_t len, uint64_t *bitpos, uint32_t count, uint32_t bits,
                          uint16_t *values, uint8_t *used);

/* ---- bilevel stripes (2.10) and template palette stripes (2.14) (bilevel.c) ---- */

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
 * after an error `out` holds the rows decoded before it. Returns 0 or a negative IMIJ_E_*
 * code (IMIJ_E_SIZE, before decoding, when a length is short); never reads or writes out of
 * bounds. */
int imij_level_unit_decode(const uint8_t *body, size_t len, const imij_level_unit *unit, void *out, size_t out_len,
                           uint8_t *index, size_t index_len);

/* The encoder's side of a unit whose plane is known: `plane` is height*width bytes, a bilevel t
 * plane (2.10: values 0 or 1; `typical` NULL) or a template stripe's index plane of n entries
 * (2.14: indices < 256, `typical` one byte per row, 1 = a typical row, which codes nothing).
 * `scratch` holds scratch_len >= (height + 2) * (width + 4) bytes (the decoder's padded plane),
 * else IMIJ_E_SIZE. */

/* Adds the outcome counts of every operation: phase0[2 * context + outcome] (1024 contexts),
 * cand[2 * context + outcome] (40 candidate contexts, templates only), escape[index] (256).
 * Returns 0 or IMIJ_E_ARGS (bad geometry, a t above 1, or with n <= 2 an index above 1). */
int imij_level_counts(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                      const uint8_t *typical, uint8_t *scratch, size_t scratch_len, uint32_t *phase0, uint32_t *cand,
                      uint32_t *escape);

/* The unit's rANS stream (3.1; the initial states, then the words in reading order) with the
 * probabilities of t = 0 / "equals W" per phase-0 context (phase0, 1024) and of "equals the
 * candidate" (cand, 40), and the direct-index table (efreq / ecum, 256 each; NULL when absent:
 * escapes must then be index 0). Returns the stream's length, IMIJ_E_FREQ when an outcome
 * has no probability, IMIJ_E_SPACE when dst_cap is too small (4 * active lanes + 2 bytes per
 * operation always suffice), or IMIJ_E_ARGS. */
int64_t imij_level_encode(const uint8_t *plane, uint32_t width, uint32_t height, uint32_t lanes, uint32_t n,
                          const uint8_t *typical, uint8_t *scratch, size_t scratch_len, const uint16_t *phase0,
                          const uint16_t *cand, const uint16_t *efreq, const uint16_t *ecum, uint8_t *dst,
                          size_t dst_cap);

/* ---- 2.13 quick-pixel packet streams ------------------------------------------------------- */

/* Decode one packet stream src[0..src_len) of exactly npixels pixels into dst, which must hold
 * exactly npixels*channels*word_bytes bytes (row-major, components interleaved, little-endian
 * samples). Returns IMIJ_OK or a negative IMIJ_E_* status; never reads or writes out
 * of bounds, whatever src holds. */
int imij_quick_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                      size_t npixels, int channels, int word_bytes);

/* Worst-case encoded size of npixels pixels (one literal per pixel), 0 on overflow or bad
 * arguments (a 0-pixel stream is empty, so 0 is also the bound for npixels == 0). */
size_t imij_quick_encode_bound(size_t npixels, int channels, int word_bytes);

/* Encode src (npixels*channels*word_bytes bytes, the decoder's output layout) as one packet
 * stream into dst. Returns the number of bytes written, or a negative IMIJ_E_* status. With
 * dst_cap below imij_quick_encode_bound() the encoder stops with IMIJ_E_SPACE once fewer
 * than 2 + channels*word_bytes bytes (what one pixel may write) are free: a stream of at most
 * dst_cap - (2 + channels*word_bytes) bytes always fits, a longer one may be refused. */
int64_t imij_quick_encode(const uint8_t *src, size_t src_len, size_t npixels, int channels,
                          int word_bytes, uint8_t *dst, size_t dst_cap);

/* ---- 2.4-2.6, 3, 4: entropy-coded lossless units ------------------------------------------ */

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
 * Returns 0, or IMIJ_E_SIZE (nothing written) when the entries do not fit entries_len. */
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
 * predictors, which every later call reads. Returns 0 or a negative IMIJ_E_* status. */
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
 * block, rows 2.. the block's. Returns 0 or a negative IMIJ_E_* status (IMIJ_E_SIZE when a
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
 * Returns 0 or a negative IMIJ_E_* status: IMIJ_E_SIZE, before decoding, when the planes
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

/* imij_level_unit_decode (above), each decoded row's samples stored through `store` (valid,
 * store->nslots == unit->nslots; a table of a slot covers its 2^depth values) instead of into
 * coded planes, so a level unit decodes straight into its rectangle of the image;
 * IMIJ_E_SIZE, before decoding, when the unit's samples do not fit the store's out_len or
 * index_len is short. */
int imij_level_unit_store(const uint8_t *body, size_t len, const imij_level_unit *unit, const imij_sample_store *store,
                          uint8_t *index, size_t index_len);

/* ---- the entropy coders' SIMD path (entropy.c, bilevel.c, encode.c) ---- */

/* Which path csrc/entropy.c decodes entropy streams (3.1) with. Every path gives identical
 * output and errors on every input; the SIMD paths only change speed. Paths: 0 scalar, 1 AVX2
 * (16 lanes as two vectors), 2 AVX-512 (one vector; stores and bilevel.c use their AVX2 code).
 * imij_enc_stream (encode.c) writes a unit of 1024 positions or more with its AVX2 code on paths
 * 1 and 2, identical bytes.
 *
 * mode < 0: query only; mode >= 0: the fastest path this CPU supports up to `mode` (2: the
 * fastest, the default). Returns the path in use afterwards. Until the first call the
 * environment variable IMIJ_ENTROPY_SIMD=0 or =1 (read once) caps the path. Meant for tests and
 * benchmarks: set it before decoding, not while other threads decode. */
int imij_entropy_simd(int mode);

/* ---- the entropy encoder's kernels (csrc/encode.c): predictor and decorrelation search,
 * residuals, near-lossless closed loop, context statistics, palette detection and the reverse
 * rANS stream writer (2.3-2.6, 3, 4, 5). Every kernel has a pure-Python reference in
 * imij_plugins/payload/entropy/ that agrees bit for bit.
 *
 * Planes are row-major coded values (2.1's s), nslots planes of width * height back to back, in
 * their narrowest type: esize 1, 2 or 4 bytes per value (uint8, uint16, uint32); residual planes
 * likewise. Kernels widen a few rows at a time into caller scratch (`rows`), so no plane is ever
 * copied whole. None of these functions allocates or keeps state; all may run on many threads.
 */

/* Bucket of a residual u (or of a run's len - 1) in the statistics: u itself below 256, else
 * 256 + (msb - 8) * 16 + the 4 bits below the leading one (msb = bit_length(u) - 1). */
enum { IMIJ_ENC_BUCKETS = 640, IMIJ_ENC_CLASSES = 16, IMIJ_ENC_UNTRIED = -1, IMIJ_ENC_PREDICTORS = 10 };

/* Search costs (5): for every mode in mode_mask (bit i: decorrelation mode i; only mode 0 unless
 * decor), every row r with r % row_step == 0 and every predictor p in pred_mask (bit p, 0..9;
 * 7..9 only when refs != NULL; row 0 only predictor 0, or 0 and 7 with refs and bit 7),
 * costs[(mode * height + r) * 10 + p] = the sum over the columns c with c % col_step == 0 and
 * over the slots of bit_length(zigzag(sext_n(d))), d the slot's residual mod 2^n after the
 * mode's forward decorrelation (slots 1 and 2). refs: NULL, or the reference R of an inter frame
 * (section 4), nslots uint32 planes of coded values laid out like planes. Everything else is
 * left as it is (the caller fills it with a sentinel). rows: scratch of rows_len >= 2 * nslots *
 * width uint32; costs: costs_len >= 4 * height * 10 int64. Returns 0, IMIJ_E_ARGS for bad
 * arguments or IMIJ_E_SIZE for a short length. */
int imij_enc_costs(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots,
                   uint32_t width, uint32_t height, uint32_t lanes, const uint32_t *depths,
                   uint32_t decor, uint32_t pred_mask, uint32_t mode_mask, uint32_t row_step,
                   uint32_t col_step, uint32_t *rows, size_t rows_len, int64_t *costs, size_t costs_len);

/* The zigzag residuals u (3.1) of every slot for row predictors preds[height] and decorrelation
 * mode `mode` (section 4 run forward), into u (u_len bytes: nslots planes of u_esize bytes per
 * value, which every depth must fit); u may be the planes themselves (esize = u_esize): each row
 * is read before its residuals replace it. Predictors 7..9 (row 0: 7) need refs (as in
 * imij_enc_costs). rows: scratch of rows_len >= 3 * nslots * width uint32. Returns 0,
 * IMIJ_E_ARGS or IMIJ_E_SIZE. */
int imij_enc_residuals(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots,
                       uint32_t width, uint32_t height, uint32_t lanes, const uint32_t *depths,
                       const uint8_t *preds, uint32_t mode, uint32_t *rows, size_t rows_len, void *u,
                       size_t u_len, uint32_t u_esize);

/* Row predictors by the models' costs (5; the highest efforts, after a first choice of models):
 * rows are chosen one after the other. Row 0 takes predictor 0 (2.4); for r >= 1 every
 * predictor p (0..6) in pred_mask gives the row's zigzag residuals under decorrelation mode
 * `mode`, as imij_enc_residuals, and each position costs
 * bucket_costs[(s * 4 + ctx) * 640 + bucket(u)] with ctx = ctx_maps[s * 16 + class], the class
 * (3.1, ctx_shift 0) taken from the row itself and the row chosen above it, plus slot 0's u in
 * slots with cross[s] = 1. The lowest sum over the slots wins (ties: the lowest id) and goes to
 * preds[r]. Depths 1..16 only (ctx_shift is 0 there). costs_len >= nslots * 4 * 640; rows:
 * scratch of rows_len >= (5 * nslots + 2) * width uint32; preds_len >= height. Returns 0,
 * IMIJ_E_ARGS or IMIJ_E_SIZE. */
int imij_enc_model_preds(const void *planes, uint32_t esize, uint32_t nslots, uint32_t width,
                         uint32_t height, uint32_t lanes, const uint32_t *depths, uint32_t mode,
                         uint32_t pred_mask, const uint32_t *bucket_costs, size_t costs_len,
                         const uint8_t *ctx_maps, const uint8_t *cross, uint32_t *rows,
                         size_t rows_len, uint8_t *preds, size_t preds_len);

/* Near-lossless closed loop (2.6, 5). deltas[s] is slot s's bound (0 = exact). With
 * fixed != 0, preds[] and *mode are given; otherwise, for every mode in mode_mask, rows are
 * chosen one after the other: each predictor in pred_mask reconstructs the row from the
 * reconstructed rows above (left to right per lane) and the one with the lowest bit-length
 * proxy (ties: the lowest id) is kept; the mode with the lowest total wins (ties: the lowest),
 * and its predictors are written to preds (preds_len >= height bytes) and the mode to *mode.
 * Either way u and recon (u_len and recon_len uint32, each nslots planes) receive the coded
 * zigzag residuals and the decoder's reconstruction. rows3 is scratch of rows3_len >= 3 * nslots
 * * width + (height + 3) / 4 uint32. Returns 0, IMIJ_E_ARGS or IMIJ_E_SIZE. */
int imij_enc_near(const uint32_t *planes, uint32_t nslots, uint32_t width, uint32_t height,
                  uint32_t lanes, const uint32_t *depths, const uint32_t *deltas, uint32_t decor,
                  uint32_t pred_mask, uint32_t mode_mask, uint32_t fixed, uint8_t *preds, size_t preds_len,
                  uint32_t *mode, uint32_t *u, size_t u_len, uint32_t *recon, size_t recon_len, uint32_t *rows3,
                  size_t rows3_len);

/* Statistics of one slot's stream as rANS would code it (3.1, 3.2): positions in decode order,
 * class = min(bit_length(sum), 15) of the T'd neighbours, zero runs of at least run_min
 * positions of a lane (lane order, across rows; 0 = no runs) as run tokens of at most 2^15
 * positions. vh[class * buckets + bucket(u)] counts value tokens, rh[class * buckets +
 * bucket(len - 1)] run tokens (at the class of their first position), and zr[class] every
 * position a run token covers, at its own class. When u0 != NULL, xvh / xzr / xrh receive the
 * same counts with the cross context's class (slot 0's T(u0) added to the sum). u and u0 are
 * esize bytes per value. buckets (1 .. 640): the arrays' row length, above the bucket of the
 * largest value and of the longest run a lane allows (else IMIJ_E_ARGS). rows: scratch of
 * rows_len >= 3 * width uint32. Counts are added to. Returns 0, IMIJ_E_ARGS or
 * IMIJ_E_SIZE. */
int imij_enc_stats(const void *u, const void *u0, uint32_t esize, uint32_t width, uint32_t height,
                   uint32_t lanes, uint32_t ctx_shift, uint32_t run_min, uint32_t buckets, uint32_t *rows,
                   size_t rows_len, uint32_t *vh, uint32_t *zr, uint32_t *rh, uint32_t *xvh, uint32_t *xzr,
                   uint32_t *xrh);

/* Palette detection (2.5): at most 256 distinct slot tuples among npix positions. Writes the
 * tuples in order of first appearance to entries[i * nslots + s] (entries_len >= 256 * nslots
 * uint32) and each position's tuple number to index[npix]. Returns the count, IMIJ_E_MANY
 * when there are more than 256 (index and entries then hold garbage), IMIJ_E_ARGS or
 * IMIJ_E_SIZE. */
int imij_enc_palette(const void *planes, uint32_t esize, uint32_t nslots, size_t npix,
                     uint32_t *entries, size_t entries_len, uint8_t *index);

/* dst[i] = lut[src[i]] for n bytes (lut: 256 entries): an index plane through a rank table (2.5,
 * 2.10, 2.14) without numpy's index widening (8 bytes a pixel of temporary). */
void imij_enc_lookup8(const uint8_t *lut, const uint8_t *src, size_t n, uint8_t *dst);

/* What the channel-map choice (2.1, 5) reads of every channel of interleaved words (pixels x
 * channels, esize bytes each, of D bits): per channel c, out[4c .. 4c + 3] = the largest and the
 * smallest ordered value (2.1's order map: kind 0 unsigned, 1 signed, 2 float), the or of the
 * ordered values and the or of the raw words. Returns 0, or IMIJ_E_ARGS for bad arguments. */
int imij_enc_word_summary(const void *words, uint32_t esize, size_t pixels, uint32_t channels, uint32_t kind,
                          uint32_t depth, uint64_t *out);

/* The model chooser's cost estimate (3.3, 5), in bits * 2^16, exact integers so every backend
 * chooses alike. A row of symbol counts h (width <= 256) costs sum h * (L[M] - L[f]) with f =
 * max(1, floor(h * M / total)) and L[f] = round(log2(f) * 2^16) (log2fix, M + 1 entries, M =
 * 1024); the commonest symbol (the first of the largest f) gives up the excess of sum f over M
 * at its count; plus a rough table size (11 + 6 * used symbols + 2 * (last used + 1)) * 2^16.
 * Empty rows cost 0. imij_enc_row_costs writes rows costs to out; returns 0, or IMIJ_E_ARGS
 * for bad arguments (a negative count, width > 256). */
int imij_enc_row_costs(const int64_t *h, uint32_t rows, uint32_t width, const int64_t *log2fix, int64_t *out);

/* The cost of one slot's statistics (vh, rh: 16 x buckets value and run token counts per class
 * and bucket, buckets 1 .. 640; zr: 16 positions covered by runs) under one scheme: per bucket
 * its value token, value extra bits, run token and run extra bits (tokens: 4 x buckets, tokens
 * below 256). Only the ncols buckets listed in cols (ascending, below buckets) are read, the
 * others' counts taken as zero: the caller lists those with a count, few on a small image.
 * With runs the run tokens are counted, else every covered position as value token 0. The 16
 * classes' row costs plus the extra bits * 2^16; IMIJ_E_ARGS for bad arguments. */
int64_t imij_enc_token_cost(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                            uint32_t buckets, const uint32_t *cols, uint32_t ncols, uint32_t runs,
                            const int64_t *log2fix);

/* 3.2: the (16, 256) token counts th of a slot's statistics under one scheme's per-bucket tokens
 * (as imij_enc_token_cost counts them, the listed buckets read). Returns 0, or IMIJ_E_ARGS for
 * bad arguments. */
int imij_enc_token_counts(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                          uint32_t buckets, const uint32_t *cols, uint32_t ncols, uint32_t runs, int64_t *th);

/* 5: the exact split of the used classes of th (16 x 256 token counts) into at most
 * 4 runs of neighbouring classes with the fewest estimated bits (row_cost's; the first on ties):
 * ctx_map[16] (3.3's, unused classes as the nearest used one below, else above), *nctx contexts
 * whose summed counts are hists[c * 256 ..] (4 x 256, zero past *width, the last used symbol
 * + 1). Returns the estimate (bits * 2^16), or IMIJ_E_ARGS for a negative count. */
int64_t imij_enc_partition(const int64_t *th, const int64_t *log2fix, uint8_t *ctx_map, int64_t *hists,
                           uint32_t *nctx, uint32_t *width);

/* 3.3 / 5: per context (ctxs rows of counts H, width <= 256, each count below 2^32, each row
 * with a nonzero count) the precision prec_lo ..= prec_hi (1 ..= 8) whose table costs the fewest
 * table bits (exact) plus data bits (row_cost's normalization with the quantized weights; the
 * first on ties): prec[c], last1[c] (last used symbol + 1), codes[(c * width + s) * 3 ..] =
 * (e, nb, mant) of every symbol below last1[c] and freq[c * width + s] the table the decoder
 * normalizes from their weights (3.3). Returns 0, or IMIJ_E_ARGS for bad arguments. */
int imij_enc_best_tables(const int64_t *H, uint32_t ctxs, uint32_t width, uint32_t prec_lo, uint32_t prec_hi,
                         const int64_t *log2fix, uint32_t *prec, uint32_t *last1, uint32_t *codes, uint32_t *freq);

/* Counts of every value of count words (esize 1 or 2 bytes, `stride` words apart, values below
 * 2^depth, depth <= 16) into counts[0 .. 2^depth) (counts_len >= 2^depth), which are added to.
 * Returns 0, IMIJ_E_ARGS for bad arguments, IMIJ_E_SIZE for a short counts_len, or
 * IMIJ_E_RANGE for a value of 2^depth or more. */
int imij_enc_histogram(const void *words, uint32_t esize, size_t count, size_t stride, uint32_t depth,
                       uint64_t *counts, size_t counts_len);

/* One model as the stream writer codes with it (3.2, 3.3). */
typedef struct {
    uint32_t depth;       /* n */
    uint32_t k, m;        /* the scheme: kv and m (3.2) */
    uint32_t cross;       /* add T(u0) to the context sum */
    uint32_t ctx_shift;
    uint32_t run_min;     /* 0: no run tokens */
    uint8_t ctx_map[16];
    uint16_t freq[4][256]; /* the decoder's normalized tables (3.3) */
    uint16_t cum[4][256];
} imij_enc_model;

/* The scratch imij_enc_stream needs, in uint32: three rows, the run state at every block of
 * rows and one block's ops. */
size_t imij_enc_stream_scratch(uint32_t width, uint32_t height);

/* The stream of one slot (3): u as the decoder reads it, words in (step, phase, lane) order,
 * reverse-encoded one block of rows at a time, the last block first, so only one block's ops
 * are held. u and u0 (slot 0's residuals, read only with model->cross) are esize bytes per
 * value. scratch holds scratch_len >= imij_enc_stream_scratch(width, height) uint32, else
 * IMIJ_E_SIZE. Writes the stream to out (cap bytes; 128 + 6 * width * height always suffice)
 * and returns its length, IMIJ_E_ARGS for bad arguments, IMIJ_E_SPACE when out is too
 * small, IMIJ_E_FREQ when a symbol has no frequency in its table. */
int64_t imij_enc_stream(const void *u, const void *u0, uint32_t esize, uint32_t width,
                        uint32_t height, uint32_t lanes, const imij_enc_model *model,
                        uint32_t *scratch, size_t scratch_len, uint8_t *out, size_t cap);

#endif /* IMIJ_KERNELS_H */
