/* encode.h: the entropy encoder's kernels (csrc/encode.c): predictor and decorrelation search,
 * residuals, near-lossless closed loop, context statistics, palette detection and the reverse
 * rANS stream writer (2.3-2.6, 3, 4, 5).
 *
 * This file is ALSO part of the cffi cdef (imij_plugins/_build.py strips lines starting with
 * '#'): plain declarations only. Every kernel has a pure-Python reference in
 * imij_plugins/payload/entropy/costs.py that agrees bit for bit.
 *
 * Planes are row-major coded values (2.1's s), nslots planes of width * height back to back, in
 * their narrowest type: esize 1, 2 or 4 bytes per value (uint8, uint16, uint32); residual planes
 * likewise. Kernels widen a few rows at a time into caller scratch (`rows`), so no plane is ever
 * copied whole. None of these functions allocates or keeps state; all may run on many threads.
 */
#ifndef IMIJ_ENCODE_H
#define IMIJ_ENCODE_H

#include <stddef.h>
#include <stdint.h>

/* Return codes of the encoder's kernels (0 = success; imij_enc_palette returns the count,
 * imij_enc_stream the length and the estimators their estimate instead).
 * imij_plugins/payload/kernel_codes.py ENCODER maps each to an error, by name. */
enum {
    IMIJ_ENC_OK = 0,
    IMIJ_ENC_E_ARGS = -1,  /* bad geometry, depths, predictors, model, counts or tokens */
    IMIJ_ENC_E_SPACE = -2, /* imij_enc_stream: the stream does not fit in cap */
    IMIJ_ENC_E_FREQ = -3,  /* imij_enc_stream: a symbol without a frequency in its table */
    IMIJ_ENC_E_MANY = -4,  /* imij_enc_palette: more than 256 distinct tuples */
    IMIJ_ENC_E_VALUE = -5, /* imij_enc_histogram: a value of 2^depth or more */
    IMIJ_ENC_E_SIZE = -6   /* a buffer's length is below what the call writes there (nothing written) */
};

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
 * width uint32; costs: costs_len >= 4 * height * 10 int64. Returns 0, IMIJ_ENC_E_ARGS for bad
 * arguments or IMIJ_ENC_E_SIZE for a short length. */
int imij_enc_costs(const void *planes, uint32_t esize, const uint32_t *refs, uint32_t nslots,
                   uint32_t width, uint32_t height, uint32_t lanes, const uint32_t *depths,
                   uint32_t decor, uint32_t pred_mask, uint32_t mode_mask, uint32_t row_step,
                   uint32_t col_step, uint32_t *rows, size_t rows_len, int64_t *costs, size_t costs_len);

/* The zigzag residuals u (3.1) of every slot for row predictors preds[height] and decorrelation
 * mode `mode` (section 4 run forward), into u (u_len bytes: nslots planes of u_esize bytes per
 * value, which every depth must fit); u may be the planes themselves (esize = u_esize): each row
 * is read before its residuals replace it. Predictors 7..9 (row 0: 7) need refs (as in
 * imij_enc_costs). rows: scratch of rows_len >= 3 * nslots * width uint32. Returns 0,
 * IMIJ_ENC_E_ARGS or IMIJ_ENC_E_SIZE. */
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
 * IMIJ_ENC_E_ARGS or IMIJ_ENC_E_SIZE. */
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
 * * width + (height + 3) / 4 uint32. Returns 0, IMIJ_ENC_E_ARGS or IMIJ_ENC_E_SIZE. */
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
 * largest value and of the longest run a lane allows (else IMIJ_ENC_E_ARGS). rows: scratch of
 * rows_len >= 3 * width uint32. Counts are added to. Returns 0, IMIJ_ENC_E_ARGS or
 * IMIJ_ENC_E_SIZE. */
int imij_enc_stats(const void *u, const void *u0, uint32_t esize, uint32_t width, uint32_t height,
                   uint32_t lanes, uint32_t ctx_shift, uint32_t run_min, uint32_t buckets, uint32_t *rows,
                   size_t rows_len, uint32_t *vh, uint32_t *zr, uint32_t *rh, uint32_t *xvh, uint32_t *xzr,
                   uint32_t *xrh);

/* Palette detection (2.5): at most 256 distinct slot tuples among npix positions. Writes the
 * tuples in order of first appearance to entries[i * nslots + s] (entries_len >= 256 * nslots
 * uint32) and each position's tuple number to index[npix]. Returns the count, IMIJ_ENC_E_MANY
 * when there are more than 256 (index and entries then hold garbage), IMIJ_ENC_E_ARGS or
 * IMIJ_ENC_E_SIZE. */
int imij_enc_palette(const void *planes, uint32_t esize, uint32_t nslots, size_t npix,
                     uint32_t *entries, size_t entries_len, uint8_t *index);

/* dst[i] = lut[src[i]] for n bytes (lut: 256 entries): an index plane through a rank table (2.5,
 * 2.10, 2.14) without numpy's index widening (8 bytes a pixel of temporary). */
void imij_enc_lookup8(const uint8_t *lut, const uint8_t *src, size_t n, uint8_t *dst);

/* What the channel-map choice (2.1, 5) reads of every channel of interleaved words (pixels x
 * channels, esize bytes each, of D bits): per channel c, out[4c .. 4c + 3] = the largest and the
 * smallest ordered value (2.1's order map: kind 0 unsigned, 1 signed, 2 float), the or of the
 * ordered values and the or of the raw words. Returns 0, or IMIJ_ENC_E_ARGS for bad arguments. */
int imij_enc_word_summary(const void *words, uint32_t esize, size_t pixels, uint32_t channels, uint32_t kind,
                          uint32_t depth, uint64_t *out);

/* The model chooser's cost estimate (3.3, 5), in bits * 2^16, exact integers so every backend
 * chooses alike. A row of symbol counts h (width <= 256) costs sum h * (L[M] - L[f]) with f =
 * max(1, floor(h * M / total)) and L[f] = round(log2(f) * 2^16) (log2fix, M + 1 entries, M =
 * 1024); the commonest symbol (the first of the largest f) gives up the excess of sum f over M
 * at its count; plus a rough table size (11 + 6 * used symbols + 2 * (last used + 1)) * 2^16.
 * Empty rows cost 0. imij_enc_row_costs writes rows costs to out; returns 0, or IMIJ_ENC_E_ARGS
 * for bad arguments (a negative count, width > 256). */
int imij_enc_row_costs(const int64_t *h, uint32_t rows, uint32_t width, const int64_t *log2fix, int64_t *out);

/* The cost of one slot's statistics (vh, rh: 16 x buckets value and run token counts per class
 * and bucket, buckets 1 .. 640; zr: 16 positions covered by runs) under one scheme: per bucket
 * its value token, value extra bits, run token and run extra bits (tokens: 4 x buckets, tokens
 * below 256). With runs the run tokens are counted, else every covered position as value token
 * 0. The 16 classes' row costs plus the extra bits * 2^16; IMIJ_ENC_E_ARGS for bad arguments. */
int64_t imij_enc_token_cost(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                            uint32_t buckets, uint32_t runs, const int64_t *log2fix);

/* 3.2: the (16, 256) token counts th of a slot's statistics under one scheme's per-bucket tokens
 * (as imij_enc_token_cost counts them). Returns 0, or IMIJ_ENC_E_ARGS for bad arguments. */
int imij_enc_token_counts(const uint32_t *vh, const uint32_t *rh, const uint32_t *zr, const int64_t *tokens,
                          uint32_t buckets, uint32_t runs, int64_t *th);

/* 5: the exact split of the used classes of th (16 x 256 token counts) into at most
 * 4 runs of neighbouring classes with the fewest estimated bits (row_cost's; the first on ties):
 * ctx_map[16] (3.3's, unused classes as the nearest used one below, else above), *nctx contexts
 * whose summed counts are hists[c * 256 ..] (4 x 256, zero past *width, the last used symbol
 * + 1). Returns the estimate (bits * 2^16), or IMIJ_ENC_E_ARGS for a negative count. */
int64_t imij_enc_partition(const int64_t *th, const int64_t *log2fix, uint8_t *ctx_map, int64_t *hists,
                           uint32_t *nctx, uint32_t *width);

/* 3.3 / 5: per context (ctxs rows of counts H, width <= 256, each count below 2^32, each row
 * with a nonzero count) the precision prec_lo ..= prec_hi (1 ..= 8) whose table costs the fewest
 * table bits (exact) plus data bits (row_cost's normalization with the quantized weights; the
 * first on ties): prec[c], last1[c] (last used symbol + 1), codes[(c * width + s) * 3 ..] =
 * (e, nb, mant) of every symbol below last1[c] and freq[c * width + s] the table the decoder
 * normalizes from their weights (3.3). Returns 0, or IMIJ_ENC_E_ARGS for bad arguments. */
int imij_enc_best_tables(const int64_t *H, uint32_t ctxs, uint32_t width, uint32_t prec_lo, uint32_t prec_hi,
                         const int64_t *log2fix, uint32_t *prec, uint32_t *last1, uint32_t *codes, uint32_t *freq);

/* Counts of every value of count words (esize 1 or 2 bytes, `stride` words apart, values below
 * 2^depth, depth <= 16) into counts[0 .. 2^depth) (counts_len >= 2^depth), which are added to.
 * Returns 0, IMIJ_ENC_E_ARGS for bad arguments, IMIJ_ENC_E_SIZE for a short counts_len, or
 * IMIJ_ENC_E_VALUE for a value of 2^depth or more. */
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
 * IMIJ_ENC_E_SIZE. Writes the stream to out (cap bytes; 128 + 6 * width * height always suffice)
 * and returns its length, IMIJ_ENC_E_ARGS for bad arguments, IMIJ_ENC_E_SPACE when out is too
 * small, IMIJ_ENC_E_FREQ when a symbol has no frequency in its table. */
int64_t imij_enc_stream(const void *u, const void *u0, uint32_t esize, uint32_t width,
                        uint32_t height, uint32_t lanes, const imij_enc_model *model,
                        uint32_t *scratch, size_t scratch_len, uint8_t *out, size_t cap);

#endif /* IMIJ_ENCODE_H */
