/* entropy.c: one entropy-coded lossless unit (a stripe of one column group), end to end:
 * stripe layout (2.4, 2.5), interleaved 16-lane rANS with token, extra-bits and high extra-bits
 * phases (3.1), hybrid-integer tokens and zero runs (3.2), contexts with cross context and
 * ctx_shift (3.1), and reconstruction: unzigzag, decorrelation, predictors 0-9, near-lossless
 * (2.6, section 4). The output is the coded value of every slot (before the channel maps of
 * 2.1, which the caller applies vectorized).
 *
 * Plain C99, no allocation. A unit decodes in row blocks: imij_entropy_begin reads the layout
 * and opens every stream, and each imij_entropy_rows call resumes the streams (lane states, read
 * position, zero runs: imij_stream_state) for the next rows into the caller's scratch of a few rows
 * per slot, which hold the residuals and then, in place, the coded values; the row above the block
 * is carried in the scratch (its residuals for the contexts of 3.1, its coded values for the
 * predictors of 4). Every read of `body` is bounds-checked; every scratch index is below its
 * plane. The one global is the path choice of imij_entropy_simd (imij_kernels.h): on x86 with GCC/Clang, streams
 * decode with an AVX2 step (3.1 over the 16 lanes at once) where the CPU has AVX2, falling back to
 * the scalar step wherever that one is needed (row and column 0, zero runs, run tokens, the last
 * 64 bytes); both give identical output and errors (tests/payload/entropy/test_kernel_paths.py).
 */
#include <stdlib.h>
#include <string.h>

#include "imij_kernels.h"
#include "internal/portable.h"
#include "internal/clones.h"
#include "internal/predictors.h"
#include "internal/runs.h"

#include "internal/rans_avx2.h"

#define M_BITS 10
#define M_SLOTS (1u << M_BITS)
#define STATE_LOW (1u << 16)

typedef struct {
    const uint8_t *p;
    size_t pos, end;
} reader;

static int rd_u8(reader *r, uint32_t *v)
{
    if (r->pos >= r->end)
        return IMIJ_E_TRUNCATED;
    *v = r->p[r->pos++];
    return 0;
}

/* 0: LEB128, minimal, at most 10 bytes; lengths here must also fit size_t. */
static int rd_varint(reader *r, uint64_t *v)
{
    uint64_t value = 0;
    for (int i = 0; i < 10; i++) {
        if (r->pos >= r->end)
            return IMIJ_E_TRUNCATED;
        uint8_t b = r->p[r->pos++];
        if (i == 9 && b > 1)
            return IMIJ_E_VARINT;
        value |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0)
                return IMIJ_E_VARINT;
            *v = value;
            return 0;
        }
    }
    return IMIJ_E_VARINT;
}

static inline uint32_t mask_of(uint32_t n) { return n >= 32 ? 0xffffffffu : ((1u << n) - 1u); }

/* 3.1: T(v) = min(v >> ctx_shift, 2^16). */
static inline uint32_t ctx_term(uint32_t v, uint32_t shift)
{
    v >>= shift;
    return v > 65536u ? 65536u : v;
}

/* sext_n: an n-bit two's-complement value (2.6, section 4). */
static inline int64_t sext(uint32_t v, uint32_t n)
{
    if (n == 0)
        return 0;
    uint32_t sign = 1u << (n - 1); /* n <= 32 */
    return (int64_t)(v & mask_of(n)) - (int64_t)((uint64_t)(v & sign) << 1);
}

/* floor(v / 2) for a signed v, without relying on the shift of a negative number. */
static inline int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* 3.2: token t of a scheme with parameters (k', m): base and nb. */
static void split_token(uint32_t t, uint32_t kp, uint32_t m, uint32_t *base, uint8_t *nb)
{
    if (t < (1u << kp)) {
        *base = t, *nb = 0;
        return;
    }
    uint32_t q = t - (1u << kp), bits = kp + (q >> m) - m; /* msb - m */
    *nb = (uint8_t)bits;
    *base = ((1u << m) | (q & ((1u << m) - 1u))) << bits;
}

/* 3.2: the value tokens, then the run tokens (scheme (rk, m), rk = max(kv, m)), of a model with
 * the clamped kv = k at depth n; zeros past the alphabet (at most 256 symbols, 3.3). */
static void model_tokens(imij_slot_model *m, uint32_t n, uint32_t k, uint32_t mm)
{
    uint64_t nvalue = k >= n ? (uint64_t)1 << n : ((uint64_t)1 << k) + (uint64_t)(n - k) * (1u << mm);
    uint32_t rk = k > mm ? k : mm, nrun = (1u << rk) + (24u - rk) * (1u << mm);
    m->nvalue = (uint32_t)nvalue;
    for (uint32_t t = 0; t < 256; t++) {
        m->base[t] = 0, m->nb[t] = 0;
        if (t < nvalue)
            split_token(t, k, mm, &m->base[t], &m->nb[t]);
        else if (t - nvalue < nrun)
            split_token(t - (uint32_t)nvalue, rk, mm, &m->base[t], &m->nb[t]);
    }
}

/* The SIMD token of a symbol (the high half of its table entries): base | nb << 24, TOK_RUN for a
 * run token (its value is the run's len - 1), or TOK_SCALAR for one the scalar path decodes
 * (nb > 16, or values of 2^24 and more). */
#define TOK_SCALAR 0x80000000u
#define TOK_RUN 0x40000000u

/* 3.3: set m->ntables and fill m->ent (ntables x 1024 entries) from `ntables` (1..=4) normalized
 * tables, freq[c * 256 + sym], and m->high from m->nb. */
static void model_tables(imij_slot_model *m, const uint32_t *freq, uint32_t ntables)
{
    uint32_t tok[256];
    uint8_t high = 0;
    for (uint32_t t = 0; t < 256; t++) {
        int scalar = m->nb[t] > 16 || (uint64_t)m->base[t] + (1u << m->nb[t]) - 1 >= (1u << 24); /* its largest value */
        tok[t] = scalar ? TOK_SCALAR : m->base[t] | (uint32_t)m->nb[t] << 24 | (t >= m->nvalue ? TOK_RUN : 0);
        high |= m->nb[t] > 16;
    }
    m->high = high;
    m->ntables = ntables < 4 ? ntables : 4;
    for (uint32_t c = 0; c < m->ntables; c++) {
        uint32_t cum = 0;
        for (uint32_t sym = 0; sym < 256 && cum < M_SLOTS; sym++) {
            uint32_t f = freq[c * 256 + sym];
            for (uint32_t k = 0; k < f && cum < M_SLOTS; k++, cum++) { /* 3.1: slot - cum = k */
                m->ent[(size_t)c * M_SLOTS + cum] = (sym | f << 8 | k << 19) | (uint64_t)tok[sym] << 32;
            }
        }
    }
}

int imij_models_fill(imij_slot_model *out, uint32_t count, const uint32_t *params, const uint8_t *ctx_maps,
                     const uint32_t *freq, uint64_t *entries, size_t entries_len)
{
    size_t at = 0, tables = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t n = params[7 * (size_t)i + 6];
        tables += n < 4 ? n : 4;
    }
    if (tables > entries_len / M_SLOTS)
        return IMIJ_E_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        const uint32_t *p = params + 7 * (size_t)i;
        imij_slot_model *m = out + i;
        m->depth = p[0], m->cross = p[3], m->ctx_shift = p[4], m->delta = p[5];
        memcpy(m->ctx_map, ctx_maps + 16 * (size_t)i, 16);
        model_tokens(m, p[0], p[1], p[2]);
        m->ent = entries + at;
        model_tables(m, freq + 1024 * (size_t)i, p[6]);
        at += (size_t)m->ntables * M_SLOTS; /* the next model's tables follow this one's */
    }
    return 0;
}

/* 2.3: a unit's lanes, and the row of a lane-interleaved plane: lane l's column x at x * active + l
 * (the kernel's scratch layout, so one step's lanes are adjacent; the last lane's columns past
 * its width are padding). */
typedef struct {
    uint32_t lw;     /* lane width */
    uint32_t active; /* the non-empty prefix of lanes */
    uint32_t last_w; /* the last active lane's width; every other is lw wide */
    size_t row;      /* lw * active */
} lane_geo;

static lane_geo geometry(uint32_t width, uint32_t lanes)
{
    lane_geo g;
    g.lw = (width + lanes - 1) / lanes;
    g.active = (width + g.lw - 1) / g.lw;
    g.last_w = width - (g.active - 1) * g.lw;
    g.row = (size_t)g.lw * g.active;
    return g;
}

/* 3.1: a state below 2^16 takes the next word of the stream (at most one per lane and phase). */
#define RENORM(x)                                                                                  \
    do {                                                                                           \
        if ((x) < STATE_LOW) {                                                                     \
            if (wpos + 2 > slen)                                                                   \
                return IMIJ_E_WORDS;                                                           \
            (x) = (x) << 16 | (uint32_t)s[wpos] | (uint32_t)s[wpos + 1] << 8;                      \
            wpos += 2;                                                                             \
        }                                                                                          \
    } while (0)

/* 3.1: the zero run that a run token of value `len1` (len - 1) starts at lane l's column x of
 * stripe row r: the positions it covers after this one. Positions past the unit's last one are
 * never visited: the excess is ignored, as a region decode stopping above them would (2.7). */
static inline uint32_t run_length(uint64_t len1, uint32_t l, uint32_t x, uint32_t r, uint32_t height,
                                  const lane_geo *g)
{
    uint32_t lane_w = l + 1 < g->active ? g->lw : g->last_w;
    uint64_t left = (uint64_t)(lane_w - 1 - x) + (uint64_t)(height - 1 - r) * lane_w;
    return (uint32_t)(len1 < left ? len1 : left);
}

/* 3.1 / 3.2: a token's value, or a zero run of len - 1 = base + e more positions of the lane. */
#define PUT_VALUE(i)                                                                               \
    do {                                                                                           \
        uint32_t l_ = lane_of[i];                                                                  \
        size_t at_ = (size_t)x * active + l_;                                                      \
        uint64_t value_ = (uint64_t)m->base[sym_of[i]] + e_of[i];                                  \
        if (sym_of[i] >= nvalue) {                                                                 \
            run[l_] = run_length(value_, l_, x, r, height, &g);                                    \
            row[at_] = 0;                                                                          \
        } else {                                                                                   \
            if (value_ > 0xffffffffu)                                                              \
                return IMIJ_E_VALUE;                                                           \
            row[at_] = (uint32_t)value_;                                                           \
        }                                                                                          \
    } while (0)

/* `span` steps of lanes 0..nl-1 inside their zero runs, from `at` (lane-interleaved, `active`
 * lanes per step): every value 0, every run counted down (3.1). */
static inline void zero_steps(uint32_t *at, uint32_t active, uint32_t nl, uint32_t span, uint32_t *run)
{
    if (nl == active)
        memset(at, 0, (size_t)span * active * sizeof *at);
    else
        for (uint32_t j = 0; j < span; j++)
            memset(at + (size_t)j * active, 0, (size_t)nl * sizeof *at);
    for (uint32_t l = 0; l < nl; l++)
        run[l] -= span;
}

/* ---- 3.1 with AVX2: the 16 lanes of one step as two vectors of 8 u32 ----
 *
 * Taken for a step when both neighbours exist (x > 0 and r > 0). A step reads at most 16 words
 * per phase, 64 bytes in all: it reads the stream in place while 64 bytes are left, then from a
 * zero-padded copy of the stream's last 64 bytes; a step that took words past the stream's end is
 * the stream running short (3.1), as the scalar path's first missing word would be. Lanes
 * l >= nl (past their width at this x) and lanes inside a zero run are masked out of every
 * gather and renormalization.
 *
 * Renormalization (3.1, words in lane order within a phase): the lanes needing a word form a
 * mask; lane i takes word popcount(mask & ((1 << i) - 1)) of the next popcount(mask) words. */
#if IMIJ_ENT_AVX2

/* 3.1 T(v) = min(v >> ctx_shift, 2^16) (v itself when narrow). */
static inline AVX2_FN __m256i simd_term(__m256i v, __m256i shift, int narrow)
{
    if (narrow)
        return v;
    return _mm256_min_epu32(_mm256_srlv_epi32(v, shift), _mm256_set1_epi32(65536));
}

/* 3.1 ctx = ctx_map[min(bit_length(sum), 15)] for sums below 2^24 (exact as floats). */
static inline AVX2_FN __m256i simd_context(__m256i sum, __m256i ctx_map)
{
    __m256i expo = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(sum)), 23); /* 0 or 126 + bl */
    __m256i cls = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(expo, _mm256_set1_epi32(126)),
                                                    _mm256_setzero_si256()),
                                   _mm256_set1_epi32(15));
    return _mm256_and_si256(_mm256_shuffle_epi8(ctx_map, cls), _mm256_set1_epi32(0xff));
}

/* The entries of 8 lanes' slots (every slot is inside the tables: ctx_map entries are below
 * ntables) as two 64-bit gathers: their low halves into *e, their high halves (the tokens) into
 * *tok; tokens are 0 for lanes not `live` (their entries are read but not used). */
static inline AVX2_FN void simd_entries(const uint64_t *ent, __m256i slot, __m256i live, __m256i *e, __m256i *tok)
{
    const long long *base = (const long long *)ent;
    __m256 g0 = _mm256_castsi256_ps(_mm256_i32gather_epi64(base, _mm256_castsi256_si128(slot), 8)); /* e0 t0 e1 t1 | e2 t2 e3 t3 */
    __m256 g1 = _mm256_castsi256_ps(_mm256_i32gather_epi64(base, _mm256_extracti128_si256(slot, 1), 8));
    /* 0x88 takes the even dwords (e0 e1 e4 e5 | e2 e3 e6 e7), 0xDD the odd; 0xD8 puts the 64-bit pairs in order */
    *e = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(g0, g1, 0x88)), 0xD8);
    *tok = _mm256_and_si256(_mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(g0, g1, 0xDD)), 0xD8), live);
}

/* One step (r > 0, x > 0) of lanes 0..nl-1, reading words at *w (>= 64 bytes there): `at`, `up`
 * and `c0` point at column x of the step's row, the row above and slot 0's row, lane-interleaved
 * (lane l at +l), `wat` at column x - 1. Lanes inside a zero run (3.1) take no token and output
 * 0. `halves`: 1 when at most 8 lanes are active. Returns 1 when the step is complete (values at
 * `at` and in w_prev, runs counted down; *started: the lanes whose token was a run token, their
 * value its len - 1, for the caller to turn into runs), 0 when only the token phase ran (st and
 * sym_of, by lane, hold its result for the lanes outside runs; the scalar path finishes the step). */
static inline AVX2_FN int simd_step(const imij_slot_model *m, uint32_t *st, uint32_t *run,
                                    uint32_t nl, int halves, uint32_t *at, const uint32_t *wat, const uint32_t *up,
                                    const uint32_t *c0, uint32_t *w_prev, int w_valid, const uint8_t **w,
                                    uint32_t *sym_of, uint32_t *started, const int narrow, const int cross)
{
    const __m256i lane_no = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i ctx_map = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)m->ctx_map));
    const __m256i shift = _mm256_set1_epi32((int)m->ctx_shift);
    __m256i in_step[2], live[2], xs[2], sym[2], tok[2], runs[2];
    uint32_t scalar = 0;
    for (int h = 0; h < halves; h++) { /* token phase */
        in_step[h] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)nl - 8 * h), lane_no);
        runs[h] = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(run + 8 * h)), in_step[h]);
        live[h] = _mm256_and_si256(_mm256_cmpeq_epi32(runs[h], _mm256_setzero_si256()), in_step[h]); /* no run */
        __m256i wv = w_valid ? _mm256_loadu_si256((const __m256i *)(w_prev + 8 * h))
                             : _mm256_maskload_epi32((const int *)(wat + 8 * h), live[h]);
        __m256i nv = _mm256_maskload_epi32((const int *)(up + 8 * h), live[h]);
        __m256i sum = _mm256_add_epi32(simd_term(wv, shift, narrow), simd_term(nv, shift, narrow));
        if (cross) /* slot 0's term, always clamped */
            sum = _mm256_add_epi32(sum, simd_term(_mm256_maskload_epi32((const int *)(c0 + 8 * h), live[h]), shift, 0));
        __m256i s0 = _mm256_loadu_si256((const __m256i *)(st + 8 * h));
        __m256i slot = _mm256_or_si256(_mm256_slli_epi32(simd_context(sum, ctx_map), M_BITS),
                                       _mm256_and_si256(s0, _mm256_set1_epi32(M_SLOTS - 1)));
        __m256i e;
        simd_entries(m->ent, slot, live[h], &e, &tok[h]);
        __m256i freq = _mm256_and_si256(_mm256_srli_epi32(e, 8), _mm256_set1_epi32(0x7ff));
        __m256i x1 = _mm256_add_epi32(_mm256_mullo_epi32(freq, _mm256_srli_epi32(s0, M_BITS)),
                                      _mm256_srli_epi32(e, 19));
        xs[h] = _mm256_blendv_epi8(s0, simd_renorm(x1, live[h], w), live[h]);
        sym[h] = _mm256_and_si256(e, _mm256_set1_epi32(0xff));
        scalar |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(tok[h])) << 8 * h;
    }
    if (scalar) {
        for (int h = 0; h < halves; h++) {
            _mm256_storeu_si256((__m256i *)(st + 8 * h), xs[h]);
            _mm256_storeu_si256((__m256i *)(sym_of + 8 * h), sym[h]);
        }
        return 0;
    }
    /* extra-bits phase (lanes with nb > 0 only, as the scalar path). Every nb <= 16 here and every
     * state is >= 2^16 after it, so the high phase (n2 = 0) changes nothing and reads no word. */
    uint32_t runs_started = 0;
    for (int h = 0; h < halves; h++) {
        __m256i nb = _mm256_and_si256(_mm256_srli_epi32(tok[h], 24), _mm256_set1_epi32(31));
        __m256i ex = _mm256_andnot_si256(_mm256_sllv_epi32(_mm256_set1_epi32(-1), nb), xs[h]);
        __m256i some = _mm256_andnot_si256(_mm256_cmpeq_epi32(nb, _mm256_setzero_si256()), live[h]); /* nb > 0 */
        xs[h] = simd_renorm(_mm256_srlv_epi32(xs[h], nb), some, w);
        _mm256_storeu_si256((__m256i *)(st + 8 * h), xs[h]);
        /* a lane inside a run: tok and ex are 0, so its value is 0; its run counts down */
        __m256i counting = _mm256_xor_si256(_mm256_cmpeq_epi32(runs[h], _mm256_setzero_si256()), _mm256_set1_epi32(-1));
        _mm256_storeu_si256((__m256i *)(run + 8 * h), _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(run + 8 * h)), counting));
        __m256i val = _mm256_add_epi32(_mm256_and_si256(tok[h], _mm256_set1_epi32(0xffffff)), ex);
        _mm256_storeu_si256((__m256i *)(w_prev + 8 * h), val);
        _mm256_maskstore_epi32((int *)(at + 8 * h), in_step[h], val);
        runs_started |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(tok[h], 1))) << 8 * h;
    }
    *started = runs_started;
    return 1;
}
#endif

#if IMIJ_ENT_AVX512
/* ---- 3.1 with AVX-512: the 16 lanes of one step as one vector ----
 *
 * simd_step's contract and order of work, on one 16-lane vector with mask registers: the same
 * words read, states, values and runs. Renormalization expands the next popcount(need) words
 * into the lanes that need one, in lane order (3.1); it reads 32 bytes at *w, without a branch
 * (whether a lane needs a word is data, which the branch predictor misses often). */
static inline AVX512_FN __m512i simd16_renorm(__m512i xs, __mmask16 live, const uint8_t **w)
{
    __mmask16 need = _mm512_mask_cmplt_epu32_mask(live, xs, _mm512_set1_epi32((int)STATE_LOW));
    __m512i words = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)*w)); /* little-endian u16 */
    *w += 2 * imij_popcnt32(need);
    return _mm512_mask_or_epi32(xs, need, _mm512_slli_epi32(xs, 16), _mm512_maskz_expand_epi32(need, words));
}

/* run_length for 16 lanes at once, from the lanes' widths (`lane_w`) and the positions of the rows
 * below stripe row r (`rows_left`, of simd16_rows_left): the positions after column x left to each
 * lane, capped at 2^25, above every len - 1 a SIMD token carries (< 2^24), so min(len - 1, this) is
 * run_length's value. */
static inline AVX512_FN __m512i simd16_left(__m512i lane_w, __m512i rows_left, uint32_t x)
{
    __m512i cols = _mm512_sub_epi32(lane_w, _mm512_set1_epi32((int)x + 1)); /* x < lane_w in a step */
    return _mm512_add_epi32(_mm512_min_epu32(cols, _mm512_set1_epi32(1 << 25)), rows_left);
}

/* A value per lane: `full` in every lane but the last active one, which takes `last`; each capped
 * at 2^25 (simd16_left). Lane widths: (lw, last_w); rows_left: (rows lw, rows last_w). */
static inline AVX512_FN __m512i simd16_per_lane(const lane_geo *g, uint64_t full, uint64_t last)
{
    uint64_t cap = (uint64_t)1 << 25;
    return _mm512_mask_mov_epi32(_mm512_set1_epi32((int)(full < cap ? full : cap)), (__mmask16)(1u << (g->active - 1)),
                                 _mm512_set1_epi32((int)(last < cap ? last : cap)));
}

/* 3.1 T(v) = min(v >> ctx_shift, 2^16) (v itself when narrow). */
static inline AVX512_FN __m512i simd16_term(__m512i v, __m512i shift, int narrow)
{
    if (narrow)
        return v;
    return _mm512_min_epu32(_mm512_srlv_epi32(v, shift), _mm512_set1_epi32(65536));
}

/* 3.1 token phase of one step for the lanes in `live` (among the step's first nl): the context sum of W (`wv`), N (at up + ax;
 * row 0, has_up 0: W again, 2 T(W)) and, with `cross`, slot 0's term (at c0 + ax, always clamped);
 * each lane's 64-bit entry (`ctx_at`: the slot's ctx_map as table offsets); the state decoded and
 * renormalised, reading at *w. Lanes not live keep `xs`. *e: the decode entries; *tok: the entries'
 * SIMD tokens, 0 off `live`. */
static IMIJ_ALWAYS_INLINE AVX512_FN __m512i simd16_token(const imij_slot_model *m, __m512i ctx_at, __m512i shift,
                                                         __m512i xs, __m512i wv, const uint32_t *up, const uint32_t *c0,
                                                         size_t ax, uint32_t nl, __mmask16 live, int has_up, int cross,
                                                         const int narrow, const uint8_t **w, __m512i *e, __m512i *tok)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const int *ent = (const int *)m->ent; /* 64-bit entries: the decode entry, then the SIMD token */
    __m512i tw = simd16_term(wv, shift, narrow);
    __m512i sum = _mm512_add_epi32(tw, has_up ? simd16_term(_mm512_maskz_loadu_epi32(live, up + ax), shift, narrow) : tw);
    if (cross)
        sum = _mm512_add_epi32(sum, simd16_term(_mm512_maskz_loadu_epi32(live, c0 + ax), shift, 0));
    /* 3.1 ctx = ctx_map[min(bit_length(sum), 15)] */
    __m512i cls =
        _mm512_min_epu32(_mm512_sub_epi32(_mm512_set1_epi32(32), _mm512_lzcnt_epi32(sum)), _mm512_set1_epi32(15));
    __m512i slot = _mm512_or_si512(_mm512_permutexvar_epi32(cls, ctx_at),
                                   _mm512_and_si512(xs, _mm512_set1_epi32(M_SLOTS - 1)));
    /* each lane's 64-bit entry by 8-lane gathers (half the elements of two 16-lane 32-bit
     * gathers), only as many as the step's nl lanes need (a gather loads every element it
     * names: a narrow unit's 4 lanes would load 16), then the decode entries and the tokens each
     * into one vector; the elements of lanes >= nl are 0, never live */
    __m512i lo, hi = _mm512_setzero_si512();
    if (nl <= 4)
        lo = _mm512_zextsi256_si512(_mm256_i32gather_epi64((const long long *)ent, _mm512_castsi512_si128(slot), 8));
    else
        lo = _mm512_i32gather_epi64(_mm512_castsi512_si256(slot), ent, 8);
    if (nl > 8)
        hi = _mm512_i32gather_epi64(_mm512_extracti64x4_epi64(slot, 1), ent, 8);
    *e = _mm512_permutex2var_epi32(lo, even, hi);
    *tok = _mm512_maskz_permutex2var_epi32(live, lo, odd, hi);
    __m512i freq = _mm512_and_si512(_mm512_srli_epi32(*e, 8), _mm512_set1_epi32(0x7ff));
    __m512i x1 = _mm512_add_epi32(_mm512_mullo_epi32(freq, _mm512_srli_epi32(xs, M_BITS)), _mm512_srli_epi32(*e, 19));
    return _mm512_mask_mov_epi32(xs, live, simd16_renorm(x1, live, w));
}

/* The slot's ctx_map as table offsets (simd16_token's `ctx_at`). */
static inline AVX512_FN __m512i simd16_ctx_at(const imij_slot_model *m)
{
    return _mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)m->ctx_map)), M_BITS);
}

/* 3.1 extra-bits phase of one step, after simd16_token gave `xt` and `tok` (no token the scalar
 * path finishes): lanes with nb > 0 take their extra bits and renormalise (every nb <= 16, so the
 * high phase reads nothing), reading at *w, into *xs; lanes inside a run count it down (their value
 * is 0); run tokens start their runs (PUT_VALUE: the value is len - 1, capped by `left`,
 * simd16_left). Stores the in_step lanes' values at `out` and returns them (the next step's W). */
static IMIJ_ALWAYS_INLINE AVX512_FN __m512i simd16_extra(__m512i xt, __m512i tok, __mmask16 live, __mmask16 in_step,
                                                         __m512i left, __m512i *xs, __m512i *runs, uint32_t *out,
                                                         const uint8_t **w)
{
    __m512i nb = _mm512_and_si512(_mm512_srli_epi32(tok, 24), _mm512_set1_epi32(31));
    __m512i ex = _mm512_andnot_si512(_mm512_sllv_epi32(_mm512_set1_epi32(-1), nb), xt);
    *xs = simd16_renorm(_mm512_srlv_epi32(xt, nb), _mm512_mask_cmpneq_epu32_mask(live, nb, _mm512_setzero_si512()), w);
    __m512i r = _mm512_mask_sub_epi32(*runs, in_step & ~live, *runs, _mm512_set1_epi32(1));
    __m512i val = _mm512_add_epi32(_mm512_and_si512(tok, _mm512_set1_epi32(0xffffff)), ex);
    __mmask16 started = _mm512_test_epi32_mask(tok, _mm512_set1_epi32((int)TOK_RUN));
    *runs = _mm512_mask_min_epu32(r, started, val, left);
    val = _mm512_maskz_mov_epi32((__mmask16)~started, val);
    _mm512_mask_storeu_epi32(out, in_step, val);
    return val;
}

/* Steps x .. x_end - 1 of stripe row r (the same nl lanes at each), each as simd_step's, with the
 * lanes' states, runs and previous values kept in registers from one step to the next; the
 * contexts of row 0 and column 0 as 3.1 has them (the sum 2 T(W), 2 T(N), or 0 at both); a
 * stream's last 64 bytes are read from `tail` (a zero-padded copy from tail_at), as there.
 * Returns the steps completed (run tokens have started their runs), stopping early at a step where
 * every lane is inside a zero run (the caller passes over those at once) or after the token phase
 * of a step with a token only the scalar path finishes (*half = 1: st and sym_of, by lane, hold
 * its result, runs as before it); IMIJ_E_WORDS when the stream runs short. */
static inline AVX512_FN int64_t simd16_steps(const imij_slot_model *m, uint32_t *st, uint32_t *run, uint32_t nl,
                                             uint32_t *row, const uint32_t *up, const uint32_t *c0, uint32_t x,
                                             uint32_t x_end, uint32_t *w_prev, int w_valid, const uint8_t *s,
                                             size_t slen, size_t *wpos, const uint8_t *tail, size_t tail_at,
                                             uint32_t *sym_of, int *half, uint32_t r, uint32_t height,
                                             const lane_geo *g, const int narrow, const int cross)
{
    const __m512i zero = _mm512_setzero_si512();
    const __m512i shift = _mm512_set1_epi32((int)m->ctx_shift), ctx_at = simd16_ctx_at(m);
    const size_t active = g->active;
    const uint64_t rows = height - 1 - r;
    const __m512i lane_w = simd16_per_lane(g, g->lw, g->last_w), rows_left = simd16_per_lane(g, rows * g->lw, rows * g->last_w);
    const __mmask16 in_step = (__mmask16)((1u << nl) - 1u);
    __m512i runs = _mm512_maskz_loadu_epi32(in_step, run), xs = _mm512_loadu_si512(st);
    __m512i wv = !x ? (r ? _mm512_maskz_loadu_epi32(in_step, up) /* column 0: W taken as N, 2 T(N) */
                         : zero)                                     /* row 0, column 0: the sum 0 */
                 : w_valid ? _mm512_loadu_si512(w_prev)
                           : _mm512_maskz_loadu_epi32(in_step, row + (x - 1) * active);
    size_t pos = *wpos;
    uint32_t x0 = x;
    *half = 0;
    for (; x < x_end; x++) {
        __mmask16 live = _mm512_mask_cmpeq_epu32_mask(in_step, runs, zero); /* no run */
        if (!live)
            break;
        const uint8_t *from = slen - pos >= 64 ? s + pos : tail + (pos - tail_at), *w = from;
        size_t ax = (size_t)x * active;
        __m512i e, tok;
        __m512i xt = simd16_token(m, ctx_at, shift, xs, wv, up, c0, ax, nl, live, r != 0, cross, narrow, &w, &e, &tok);
        if (_mm512_movepi32_mask(tok)) { /* a token the scalar path finishes */
            _mm512_storeu_si512(st, xt);
            _mm512_storeu_si512(sym_of, _mm512_and_si512(e, _mm512_set1_epi32(0xff)));
            *half = 1;
            pos += (size_t)(w - from);
            break;
        }
        wv = simd16_extra(xt, tok, live, in_step, simd16_left(lane_w, rows_left, x), &xs, &runs, row + ax, &w);
        pos += (size_t)(w - from);
        if (pos > slen)
            return IMIJ_E_WORDS;
    }
    if (pos > slen)
        return IMIJ_E_WORDS;
    if (!*half)
        _mm512_storeu_si512(st, xs);
    _mm512_mask_storeu_epi32(run, in_step, runs);
    _mm512_storeu_si512(w_prev, wv);
    *wpos = pos;
    return (int64_t)(x - x0);
}
#endif

/* 3.1: rows [r0, r0 + rows) of one slot's stream, steps xb .. xe - 1 of each, resumed from `ss` and
 * saved back to it: lanes decode in (step, phase, lane) order into u, the block's rows (contiguous,
 * lane-interleaved). `up0` holds the
 * residuals of row r0 - 1 (read when r0 > 0), `u0` slot 0's residuals of the block's rows (the
 * cross context). A zero run's counter carries over row and block ends (3.1: "continuing across
 * rows"). `narrow` (a constant at each call) says ctx_shift is 0 and this slot's residuals are
 * below 2^16 (its value tokens end below 2^n, 3.2), so T(v) = min(v >> ctx_shift, 2^16) is v
 * itself for them; `cross` adds slot 0's term. Every term is at most 2^16, so sums stay below 2^18. */
static IMIJ_ALWAYS_INLINE int decode_rows_as(imij_stream_state *ss, const uint8_t *body, const imij_slot_model *m,
                                             uint32_t width, uint32_t height, uint32_t lanes, uint32_t r0,
                                             uint32_t rows, uint32_t *u, const uint32_t *up0, const uint32_t *u0,
                                             uint32_t xb, uint32_t xe, const int narrow, const int cross, const int simd)
{
    lane_geo g = geometry(width, lanes);
    const uint32_t lw = g.lw, active = g.active, last_w = g.last_w;
    const uint8_t *s = body + ss->start;
    size_t slen = ss->len, wpos = ss->pos;
    uint32_t st[16], run[16];
    memcpy(st, ss->st, sizeof st);
    memcpy(run, ss->run, sizeof run);
    const uint32_t shift = m->ctx_shift, nvalue = m->nvalue;
    const uint8_t *nbits = m->nb;
    const uint64_t *table_of[33]; /* the table of each context sum's bit length (any 32-bit sum) */
    for (uint32_t c = 0; c < 33; c++)
        table_of[c] = m->ent + (size_t)m->ctx_map[c > 15 ? 15 : c] * M_SLOTS;
#if IMIJ_ENT_AVX2
    uint32_t w_prev[16] = {0};
    int w_valid = 0; /* w_prev holds the previous step's values (it was a complete SIMD step) */
    size_t tail_at = slen > 64 ? slen - 64 : 0; /* the stream's last 64 bytes, then zeros */
    uint8_t tail[128] = {0};
    if (simd)
        memcpy(tail, s + tail_at, slen - tail_at);
#else
    (void)simd;
#endif
    for (uint32_t i = 0; i < rows; i++) {
        uint32_t r = r0 + i; /* the stripe row */
        uint32_t *row = u + (size_t)i * g.row;
        const uint32_t *up = i ? row - g.row : up0;
        const uint32_t *c0 = cross ? u0 + (size_t)i * g.row : row;
        for (uint32_t x = xb; x < xe; x++) {
            uint32_t nl = x < last_w ? active : active - 1; /* lanes with a position at x */
            uint32_t x_end = x < last_w ? last_w : lw; /* the steps of nl lanes, within the window */
            x_end = x_end < xe ? x_end : xe;
            if (run[0]) { /* 3.1: while every lane of the step is inside a zero run, steps read nothing */
                uint32_t span = all_runs(run, nl, x_end - x);
                if (span) {
                    zero_steps(row + (size_t)x * active, active, nl, span, run);
                    x += span - 1;
#if IMIJ_ENT_AVX2
                    w_valid = 0;
#endif
                    continue;
                }
            }
            uint32_t sym_of[16], e_of[16], lane_of[16], n = 0;
            int tokens_done = 0;
#if IMIJ_ENT_AVX2
            if (simd) {
                int taken = -1;
                uint32_t started = 0;
#if IMIJ_ENT_AVX512
                if (simd == 2) { /* steps in registers until one needs the caller */
                    int half = 0;
                    int64_t done = simd16_steps(m, st, run, nl, row, up, c0, x, x_end, w_prev,
                                                w_valid, s, slen, &wpos, tail, tail_at, sym_of, &half, r, height, &g,
                                                narrow, cross);
                    if (done < 0)
                        return (int)done;
                    x += (uint32_t)done;
                    if (done && !half) {
                        w_valid = 1;
                        x--;
                        continue;
                    }
                    taken = half ? 0 : -1;
                } else
#endif
                if (r && x) {
                    const uint8_t *from = slen - wpos >= 64 ? s + wpos : tail + (wpos - tail_at), *wp = from;
                    size_t ax = (size_t)x * active;
                    taken = simd_step(m, st, run, nl, active > 8 ? 2 : 1, row + ax, row + ax - active, up + ax,
                                      c0 + ax, w_prev, w_valid, &wp, sym_of, &started, narrow, cross);
                    wpos += (size_t)(wp - from);
                    if (wpos > slen)
                        return IMIJ_E_WORDS;
                }
                w_valid = taken == 1;
                if (taken == 1) {
                    for (; started; started &= started - 1) { /* run tokens start their runs (PUT_VALUE) */
                        uint32_t l = imij_ctz32(started);
                        run[l] = run_length(w_prev[l], l, x, r, height, &g);
                        w_prev[l] = 0;
                        row[(size_t)x * active + l] = 0;
                    }
                    continue;
                }
                if (taken == 0) { /* the token phase ran: the scalar phases finish the step */
                    for (uint32_t l = 0; l < nl; l++) {
                        if (run[l]) { /* 3.1: inside a zero run */
                            run[l]--;
                            row[(size_t)x * active + l] = 0;
                            continue;
                        }
                        sym_of[n] = sym_of[l];
                        e_of[n] = 0;
                        lane_of[n++] = l;
                    }
                    tokens_done = 1;
                }
            }
#endif
            /* token phase */
            for (uint32_t l = 0; l < nl && !tokens_done; l++) {
                size_t at = (size_t)x * active + l;
                if (run[l]) { /* 3.1: inside a zero run: skip the step, output 0 */
                    run[l]--;
                    row[at] = 0;
                    continue;
                }
#define TERM(v) (narrow ? (v) : ctx_term((v), shift))
                uint32_t sum;
                if (r)
                    sum = x ? TERM(row[at - active]) + TERM(up[at]) : 2 * TERM(up[at]);
                else
                    sum = x ? 2 * TERM(row[at - active]) : 0;
                if (cross) /* slot 0 may be deeper than this slot: its term is always clamped */
                    sum += ctx_term(c0[at], shift);
#undef TERM
                uint32_t e = (uint32_t)table_of[imij_bitlen32(sum)][st[l] & (M_SLOTS - 1)]; /* the low half */
                uint32_t xs = (e >> 8 & 0x7ffu) * (st[l] >> M_BITS) + (e >> 19);
                RENORM(xs);
                st[l] = xs;
                sym_of[n] = e & 0xffu;
                e_of[n] = 0;
                lane_of[n++] = l;
            }
            /* extra-bits phase: n1 = min(nb, 16) bits from the state (nb = 0 takes none and the
             * state, already >= 2^16, reads no word) */
            for (uint32_t i = 0; i < n; i++) {
                uint32_t nb = nbits[sym_of[i]];
                if (nb) {
                    uint32_t l = lane_of[i], n1 = nb < 16 ? nb : 16, xs = st[l];
                    e_of[i] = xs & mask_of(n1);
                    xs >>= n1;
                    RENORM(xs);
                    st[l] = xs;
                }
            }
            if (m->high) { /* high extra-bits phase: nb - 16 more bits (samples_32) */
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t nb = nbits[sym_of[i]];
                    uint32_t l = lane_of[i], n2 = nb > 16 ? nb - 16u : 0, xs = st[l];
                    e_of[i] |= (xs & mask_of(n2)) << 16;
                    xs >>= n2;
                    RENORM(xs);
                    st[l] = xs;
                }
            }
            for (uint32_t i = 0; i < n; i++)
                PUT_VALUE(i);
        }
    }
    memcpy(ss->st, st, sizeof st);
    memcpy(ss->run, run, sizeof run);
    ss->pos = wpos;
    return 0;
}

/* The arguments of decode_rows_as before its three constant flags. */
#define ROWS_ARGS ss, body, m, width, height, lanes, r0, rows, u, up0, u0, xb, xe

/* decode_rows_as's `narrow`: ctx_shift 0 and residuals of n <= 16 bits (< 2^16). */
static inline int narrow_model(const imij_slot_model *m) { return m->ctx_shift == 0 && m->depth <= 16; }

/* The four specializations of decode_rows_as on one path (SIMD or not). */
#define DECODE_ROWS_AS(SIMD)                                                                       \
    do {                                                                                           \
        if (narrow_model(m))                                                                       \
            return m->cross ? decode_rows_as(ROWS_ARGS, 1, 1, SIMD) : decode_rows_as(ROWS_ARGS, 1, 0, SIMD); \
        return m->cross ? decode_rows_as(ROWS_ARGS, 0, 1, SIMD) : decode_rows_as(ROWS_ARGS, 0, 0, SIMD);     \
    } while (0)

#define ROWS_PARAMS                                                                                \
    imij_stream_state *ss, const uint8_t *body, const imij_slot_model *m, uint32_t width, uint32_t height, \
        uint32_t lanes, uint32_t r0, uint32_t rows, uint32_t *u, const uint32_t *up0, const uint32_t *u0,       \
        uint32_t xb, uint32_t xe

static int decode_rows_scalar(ROWS_PARAMS) { DECODE_ROWS_AS(0); }

#if IMIJ_ENT_AVX2
static AVX2_FN int decode_rows_avx2(ROWS_PARAMS) { DECODE_ROWS_AS(1); }
#endif
#if IMIJ_ENT_AVX512
static AVX512_FN int decode_rows_avx512(ROWS_PARAMS) { DECODE_ROWS_AS(2); }
#endif

/* The path in use (imij_entropy_simd): -1 until chosen, then 0 scalar, 1 AVX2 or 2 AVX-512. */
static int simd_path = -1;

/* The fastest path this CPU (and its OS, which must save the vector registers) supports. */
static int simd_supported(void)
{
#if IMIJ_ENT_AVX2
    uint32_t r[4];
    imij_cpuid(0, 0, r);
    uint32_t top = r[0];
    if (top < 7)
        return 0;
    imij_cpuid(1, 0, r);
    /* ECX: OSXSAVE (27), AVX (28), POPCNT (23) */
    if ((r[2] & (1u << 27 | 1u << 28 | 1u << 23)) != (1u << 27 | 1u << 28 | 1u << 23))
        return 0;
    uint64_t xcr0 = imij_xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* the OS saves the XMM and YMM registers */
        return 0;
    imij_cpuid(7, 0, r);
    if (!(r[1] & 1u << 5)) /* EBX: AVX2 */
        return 0;
    /* EBX: AVX512F (16), DQ (17), CD (28), BW (30), VL (31); the OS saves opmask and ZMM (XCR0 7:5) */
    uint32_t avx512 = 1u << 16 | 1u << 17 | 1u << 28 | 1u << 30 | 1u << 31;
    return (r[1] & avx512) == avx512 && (xcr0 & 0xe0) == 0xe0 ? 2 : 1;
#else
    return 0;
#endif
}

int imij_entropy_simd(int mode)
{
    if (mode < 0 && simd_path < 0) {
        const char *env = getenv("IMIJ_ENTROPY_SIMD");
        mode = env && env[0] >= '0' && env[0] <= '1' ? env[0] - '0' : 2;
    }
    if (mode >= 0) {
        int best = simd_supported();
        simd_path = mode < best ? mode : best;
    }
    return simd_path;
}

/* decode_rows_as on the path in use. */
static int decode_rows(ROWS_PARAMS)
{
#if IMIJ_ENT_AVX2
    int path = simd_path < 0 ? imij_entropy_simd(-1) : simd_path;
#if IMIJ_ENT_AVX512
    if (path == 2)
        return decode_rows_avx512(ROWS_ARGS);
#endif
    if (path == 1)
        return decode_rows_avx2(ROWS_ARGS);
#endif
    return decode_rows_scalar(ROWS_ARGS);
}

#if IMIJ_ENT_AVX512
/* ---- 3.1 for several slots at once: their streams interleaved step by step ----
 *
 * A step's work on one stream is a chain (state -> table entry -> state, and value -> context ->
 * entry), so one stream alone leaves the core waiting on its gathers. The slots' streams are
 * independent but for the cross context (slots 1.. read slot 0's residuals at their own position),
 * so decode_group runs a block's slots side by side, a step of every slot before the next step,
 * with slot 0 a row ahead of the others when some slot reads it: each stream reads the same words
 * into the same states, values and runs as when the slots go one by one. */

#define GROUP_MAX 4 /* slots decoded side by side */

/* One stream of a group: its place, model (with or without the cross context), stream bytes, block
 * rows, the row above the block, the block row it decodes, and its last 64 bytes zero-padded from
 * tail_at (as decode_rows_as keeps them). */
typedef struct {
    imij_stream_state *ss;
    const imij_slot_model *m;
    int cross;
    const uint8_t *s;
    uint32_t *u;
    const uint32_t *up0;
    uint32_t i;
    size_t tail_at;
    uint8_t tail[128];
} group_stream;

/* simd16_steps for the K streams of `gs` at once: steps x .. x_end - 1 of each one's block row (in
 * the block of stripe rows from r0), every stream's step before the next step; u0 is slot 0's
 * block rows (the cross context). A stream with every
 * lane inside a zero run takes the step without reading; while every stream's are, the steps are
 * passed over at once. Stops before a step where some stream's token is one the scalar path
 * finishes (no stream has taken that step). Returns the steps taken, or IMIJ_E_WORDS. */
static IMIJ_ALWAYS_INLINE AVX512_FN int64_t simd16_group(group_stream *gs, const int K, uint32_t nl, const uint32_t *u0,
                                                         uint32_t x, uint32_t x_end, uint32_t r0, uint32_t height,
                                                         const lane_geo *g, const int narrow)
{
    const __m512i zero = _mm512_setzero_si512();
    const size_t active = g->active;
    const __mmask16 in_step = (__mmask16)((1u << nl) - 1u);
    __m512i runs[GROUP_MAX], xs[GROUP_MAX], wv[GROUP_MAX], ctx_at[GROUP_MAX], shift[GROUP_MAX], rows_left[GROUP_MAX];
    const __m512i lane_w = simd16_per_lane(g, g->lw, g->last_w);
    size_t pos[GROUP_MAX];
    uint32_t *row[GROUP_MAX], r[GROUP_MAX];
    const uint32_t *up[GROUP_MAX], *c0[GROUP_MAX];
    for (int k = 0; k < K; k++) {
        row[k] = gs[k].u + (size_t)gs[k].i * g->row;
        up[k] = gs[k].i ? row[k] - g->row : gs[k].up0;
        c0[k] = u0 + (size_t)gs[k].i * g->row;
        r[k] = r0 + gs[k].i;
        uint64_t rows = height - 1 - r[k];
        rows_left[k] = simd16_per_lane(g, rows * g->lw, rows * g->last_w);
        runs[k] = _mm512_maskz_loadu_epi32(in_step, gs[k].ss->run);
        xs[k] = _mm512_loadu_si512(gs[k].ss->st);
        wv[k] = !x ? (r[k] ? _mm512_maskz_loadu_epi32(in_step, up[k]) : zero) /* as simd16_steps */
                   : _mm512_maskz_loadu_epi32(in_step, row[k] + (x - 1) * active);
        pos[k] = gs[k].ss->pos;
        ctx_at[k] = simd16_ctx_at(gs[k].m);
        shift[k] = _mm512_set1_epi32((int)gs[k].m->ctx_shift);
    }
    uint32_t x0 = x;
    while (x < x_end) {
        __mmask16 live[GROUP_MAX], any = 0;
        for (int k = 0; k < K; k++) {
            live[k] = _mm512_mask_cmpeq_epu32_mask(in_step, runs[k], zero); /* no run */
            any |= live[k];
        }
        if (!any) { /* 3.1: every lane of every stream inside a zero run: the steps read nothing */
            uint32_t span = x_end - x, left[16];
            for (int k = 0; k < K; k++) {
                _mm512_storeu_si512(left, runs[k]);
                span = all_runs(left, nl, span);
            }
            for (int k = 0; k < K; k++) {
                runs[k] = _mm512_mask_sub_epi32(runs[k], in_step, runs[k], _mm512_set1_epi32((int)span));
                for (uint32_t j = 0; j < span; j++)
                    _mm512_mask_storeu_epi32(row[k] + (size_t)(x + j) * active, in_step, zero);
                wv[k] = zero;
            }
            x += span;
            continue;
        }
        size_t ax = (size_t)x * active;
        const uint8_t *from[GROUP_MAX], *w[GROUP_MAX];
        __m512i xt[GROUP_MAX], tok[GROUP_MAX];
        __mmask16 scalar = 0;
        for (int k = 0; k < K; k++) { /* token phase; nothing kept until no stream needs the scalar path */
            size_t slen = gs[k].ss->len;
            from[k] = w[k] = slen - pos[k] >= 64 ? gs[k].s + pos[k] : gs[k].tail + (pos[k] - gs[k].tail_at);
            __m512i e;
            xt[k] = simd16_token(gs[k].m, ctx_at[k], shift[k], xs[k], wv[k], up[k], c0[k], ax, nl, live[k], r[k] != 0,
                                 gs[k].cross, narrow, &w[k], &e, &tok[k]);
            scalar |= _mm512_movepi32_mask(tok[k]);
        }
        if (scalar)
            break;
        for (int k = 0; k < K; k++) { /* extra-bits phase */
            wv[k] = simd16_extra(xt[k], tok[k], live[k], in_step, simd16_left(lane_w, rows_left[k], x), &xs[k], &runs[k],
                                 row[k] + ax, &w[k]);
            pos[k] += (size_t)(w[k] - from[k]);
            if (pos[k] > gs[k].ss->len)
                return IMIJ_E_WORDS;
        }
        x++;
    }
    for (int k = 0; k < K; k++) {
        _mm512_storeu_si512(gs[k].ss->st, xs[k]);
        _mm512_mask_storeu_epi32(gs[k].ss->run, in_step, runs[k]);
        gs[k].ss->pos = pos[k];
    }
    return (int64_t)(x - x0);
}

/* One row of each of the K streams of `gs` side by side (each at its block row i, in the block of
 * stripe rows from r0; u0: slot 0's block rows): simd16_group, and where it stops, that step stream
 * by stream on decode_rows' path. */
static IMIJ_ALWAYS_INLINE AVX512_FN int group_row_as(group_stream *gs, const int K, const uint8_t *body, uint32_t width,
                                                     uint32_t height, uint32_t lanes, uint32_t r0, const uint32_t *u0,
                                                     const int narrow)
{
    lane_geo g = geometry(width, lanes);
    for (uint32_t x = 0; x < g.lw;) {
        uint32_t nl = x < g.last_w ? g.active : g.active - 1, x_end = x < g.last_w ? g.last_w : g.lw;
        int64_t done = simd16_group(gs, K, nl, u0, x, x_end, r0, height, &g, narrow);
        if (done < 0)
            return (int)done;
        x += (uint32_t)done;
        if (x == x_end)
            continue;
        for (int k = 0; k < K; k++) { /* a token the scalar path finishes: this step slot by slot */
            uint32_t i = gs[k].i, *row = gs[k].u + (size_t)i * g.row;
            int err = decode_rows(gs[k].ss, body, gs[k].m, width, height, lanes, r0 + i, 1, row,
                                  i ? row - g.row : gs[k].up0, u0 + (size_t)i * g.row, x, x + 1);
            if (err)
                return err;
        }
        x++;
    }
    return 0;
}

/* group_row_as for n streams (1..GROUP_MAX), with narrow (every model's alike) constant. */
static AVX512_FN int group_row(group_stream *gs, int n, const uint8_t *body, uint32_t width, uint32_t height,
                               uint32_t lanes, uint32_t r0, const uint32_t *u0, int narrow)
{
    if (n == 1) {
        size_t row = geometry(width, lanes).row;
        uint32_t i = gs->i, *u = gs->u + (size_t)i * row;
        return decode_rows(gs->ss, body, gs->m, width, height, lanes, r0 + i, 1, u, i ? u - row : gs->up0,
                           u0 + (size_t)i * row, 0, geometry(width, lanes).lw);
    }
#define GROUP_AS(KK) \
    (narrow ? group_row_as(gs, KK, body, width, height, lanes, r0, u0, 1) \
            : group_row_as(gs, KK, body, width, height, lanes, r0, u0, 0))
    return n == 2 ? GROUP_AS(2) : n == 3 ? GROUP_AS(3) : GROUP_AS(4);
#undef GROUP_AS
}

/* Block rows [r0, r0 + rows) of the K streams of `gs` (slots 0.., u0: slot 0's block rows) side by
 * side; `skew`: slot 0 goes a row ahead of the others, whose cross context reads its row (slot 0
 * alone on the block's first row, the others alone on its last). On an error the streams' places
 * are left anywhere: the caller decodes the block again slot by slot, for the error that order
 * meets first. */
static AVX512_FN int decode_group(group_stream *gs, int K, const uint8_t *body, uint32_t width, uint32_t height,
                                  uint32_t lanes, uint32_t r0, uint32_t rows, const uint32_t *u0, int narrow, int skew)
{
    for (uint32_t t = 0; t < rows + (uint32_t)skew; t++) {
        int first = skew && t == rows, n = skew && t == 0 ? 1 : K - first;
        for (int k = 0; k < K; k++)
            gs[k].i = k && skew ? t - 1 : t; /* t - 1 is not used at t = 0 */
        int err = group_row(gs + first, n, body, width, height, lanes, r0, u0, narrow);
        if (err)
            return err;
    }
    return 0;
}
#endif

/* Section 4: the predictor of lane l's column x (at = x * L + l in the lane-interleaved rows of
 * `g`, L = g->active) from lane-local neighbours of reconstructed values: W at at - L, N at
 * at - g->row. */
static inline uint32_t predict(uint32_t id, const uint32_t *v, const uint32_t *ref, size_t at, const lane_geo *g,
                               uint32_t r, uint32_t x, uint32_t lane_w, uint32_t mask)
{
    size_t L = g->active, R = g->row;
    if (r == 0) { /* stripe row 0: W with W = 0 at x = 0, or 7 in inter frames */
        if (id == 7)
            return ref[at];
        return x > 0 ? v[at - L] : 0;
    }
    /* the rows above through their own pointers: at - R wraps below zero for at < R */
    const uint32_t *up = v - R, *ref_up = ref ? ref - R : NULL;
    uint32_t n = up[at];
    uint32_t w = x > 0 ? v[at - L] : n;
    uint32_t nw = x > 0 ? up[at - L] : n;
    uint32_t ne = x + 1 < lane_w ? up[at + L] : n;
    if (id <= 6)
        return intra_predict(id, w, n, nw, ne, mask);
    switch (id) {
    case 7:
        return ref[at];
    case 8: { /* (W + R - RW): RW with W's edge rules; at x = 0 RW = RN */
        uint32_t rn = ref_up[at];
        uint32_t rw = x > 0 ? ref[at - L] : rn;
        return (w + ref[at] - rw) & mask;
    }
    default: { /* 9: (N + R - RN) */
        return (n + ref[at] - ref_up[at]) & mask;
    }
    }
}

/* Predictors 0-6 (section 4) as expressions of w, n, nw, ne, each in its own copy of LOOP so the
 * predictor is chosen once per lane or column, not per sample. AVG, MED, GRAD and PAETH name the
 * operations on the caller's values (scalars, or vectors of lanes). */
#define INTRA_SWITCH(LOOP, AVG, MED, GRAD, PAETH)                                                  \
    switch (id) {                                                                                  \
    case 0:                                                                                        \
        LOOP(w);                                                                                   \
        break;                                                                                     \
    case 1:                                                                                        \
        LOOP(n);                                                                                   \
        break;                                                                                     \
    case 2:                                                                                        \
        LOOP(AVG(w, n));                                                                           \
        break;                                                                                     \
    case 3:                                                                                        \
        LOOP(MED(w, n, nw));                                                                       \
        break;                                                                                     \
    case 4:                                                                                        \
        LOOP(GRAD(w, n, nw));                                                                      \
        break;                                                                                     \
    case 5:                                                                                        \
        LOOP(PAETH(w, n, nw));                                                                     \
        break;                                                                                     \
    default: /* 6 */                                                                               \
        LOOP(AVG(w, ne));                                                                          \
        break;                                                                                     \
    }
#define AVG32(a, b) (((a) & (b)) + (((a) ^ (b)) >> 1)) /* floor((a + b) / 2) without overflow */
#define MED32(w, n, nw) med(w, n, nw, mask)
#define GRAD32(w, n, nw) ((w) + (n) - (nw))

/* Section 4, predictors 0-6 on one lane of one row (r > 0, exact): v = (pred + d) & mask, with
 * the lane-local edges of 2.3 (W, NW = N at x = 0; NE = N at the lane's last column); the lane's
 * columns are L apart. In place: cur[x L] holds d on entry and v on exit; the predictor reads only
 * cur[(x - 1) L] (already v) and the row above (all v). */
#define INTRA_LANE(EXPR)                                                                           \
    do {                                                                                           \
        for (uint32_t x = 0; x < lane_w; x++) {                                                    \
            size_t c = (size_t)x * L;                                                              \
            uint32_t n = up[c], w = x ? cur[c - L] : n, nw = x ? up[c - L] : n;                    \
            uint32_t ne = x + 1 < lane_w ? up[c + L] : n;                                          \
            (void)w, (void)nw, (void)ne;                                                           \
            cur[c] = ((EXPR) + cur[c]) & mask;                                                     \
        }                                                                                          \
    } while (0)

static void intra_lane(uint32_t id, uint32_t *cur, const uint32_t *up, uint32_t lane_w, size_t L, uint32_t mask)
{
    INTRA_SWITCH(INTRA_LANE, AVG32, MED32, GRAD32, paeth)
}

/* Paeth (section 4) for samples below 2^16, in 32-bit arithmetic, so a column vectorizes. */
static inline uint32_t paeth16(uint32_t w, uint32_t n, uint32_t nw)
{
    int32_t p = (int32_t)w + (int32_t)n - (int32_t)nw;
    int32_t pa = abs(p - (int32_t)w), pb = abs(p - (int32_t)n), pc = abs(p - (int32_t)nw);
    uint32_t not_w = pb <= pc ? n : nw;
    return pa <= pb && pa <= pc ? w : not_w;
}

/* One inner column (0 < x < lw - 1) of `full` lanes, adjacent in the lane-interleaved row: cur and
 * wcur are columns x and x - 1 of the row, n, nw and ne columns x, x - 1 and x + 1 of the row
 * above. No lane reads another's samples (2.3), so the lanes are independent vector elements. */
#define INTRA_COLUMN(EXPR)                                                                         \
    do {                                                                                           \
        for (uint32_t l = 0; l < full; l++) {                                                      \
            uint32_t n = nrow[l], w = wcur[l], nw = nwrow[l], ne = nerow[l];                       \
            (void)n, (void)w, (void)nw, (void)ne;                                                  \
            cur[l] = ((EXPR) + cur[l]) & mask;                                                     \
        }                                                                                          \
    } while (0)

#define INTRA_COLUMN_FN(NAME, ATTR)                                                                \
    static ATTR void NAME(uint32_t id, uint32_t *restrict cur, const uint32_t *restrict wcur,     \
                          const uint32_t *restrict nrow, const uint32_t *restrict nwrow,          \
                          const uint32_t *restrict nerow, uint32_t full, uint32_t mask)           \
    {                                                                                              \
        if (mask <= 0xffffu) {                                                                     \
            INTRA_SWITCH(INTRA_COLUMN, AVG32, MED32, GRAD32, paeth16)                              \
        } else {                                                                                   \
            INTRA_SWITCH(INTRA_COLUMN, AVG32, MED32, GRAD32, paeth)                                \
        }                                                                                          \
    }

typedef void (*intra_column_fn)(uint32_t, uint32_t *restrict, const uint32_t *restrict, const uint32_t *restrict,
                                const uint32_t *restrict, const uint32_t *restrict, uint32_t, uint32_t);
INTRA_COLUMN_FN(intra_column, )
#if IMIJ_ENT_AVX2
INTRA_COLUMN_FN(intra_column_avx2, AVX2_FN)
#endif

#if IMIJ_ENT_AVX512
/* Section 4 predictors 0-6 of 16 lanes at once (INTRA_SWITCH's operations; Paeth below 2^16). */
#define AVG16(a, b) _mm512_add_epi32(_mm512_and_si512(a, b), _mm512_srli_epi32(_mm512_xor_si512(a, b), 1))
#define GRAD16(w, n, nw) _mm512_sub_epi32(_mm512_add_epi32(w, n), nw)

/* MED of 16 lanes: min(W, N) when NW >= max, max(W, N) when NW <= min, else W + N - NW. */
static inline AVX512_FN __m512i med16(__m512i w, __m512i n, __m512i nw)
{
    __m512i lo = _mm512_min_epu32(w, n), hi = _mm512_max_epu32(w, n);
    __m512i mid = _mm512_mask_blend_epi32(_mm512_cmple_epu32_mask(nw, lo), _mm512_sub_epi32(_mm512_add_epi32(w, n), nw), hi);
    return _mm512_mask_blend_epi32(_mm512_cmpge_epu32_mask(nw, hi), mid, lo);
}

/* Paeth of 16 lanes below 2^16 (paeth16): ties prefer W, then N. */
static inline AVX512_FN __m512i paeth16v(__m512i w, __m512i n, __m512i nw)
{
    __m512i pa = _mm512_abs_epi32(_mm512_sub_epi32(n, nw)), pb = _mm512_abs_epi32(_mm512_sub_epi32(w, nw));
    __m512i pc = _mm512_abs_epi32(_mm512_sub_epi32(_mm512_add_epi32(w, n), _mm512_add_epi32(nw, nw)));
    __m512i not_w = _mm512_mask_blend_epi32(_mm512_cmple_epi32_mask(pb, pc), nw, n);
    __mmask16 take_w = _mm512_cmple_epi32_mask(pa, pb) & _mm512_cmple_epi32_mask(pa, pc);
    return _mm512_mask_blend_epi32(take_w, not_w, w);
}

/* Column x's d (cur[x L + l], the lanes of mask k), 0 past the row's last column. */
static inline AVX512_FN __m512i intra16_d(const uint32_t *cur, size_t L, uint32_t x, uint32_t lw, uint32_t last_w,
                                          __mmask16 all, __mmask16 full)
{
    return x < lw ? _mm512_maskz_loadu_epi32(x < last_w ? all : full, cur + L * (size_t)x) : _mm512_setzero_si512();
}

/* One column of every lane per step (a vector: lane l at column x is cur[x L + l]), the row's
 * columns in order with W kept in a register: column 0 takes W = NW = N, a lane's last NE = N
 * (2.3); a narrower last lane drops out of the vector past its width. cur holds d on entry, v on
 * exit. Each column's d is loaded 4 columns ahead and each v stored by a vector of at most
 * 2 L lanes: a load that overlaps an earlier masked store's vector (a narrow unit's row of
 * 4 lanes has 4 columns in 64 bytes) waits until that store is written, a stall per column. */
#define INTRA16_LOOP(EXPR)                                                                         \
    do {                                                                                           \
        __m512i n = _mm512_maskz_loadu_epi32(all, up), nw = n, w = n;                               \
        __m512i d0 = intra16_d(cur, L, 0, lw, last_w, all, full), d1 = intra16_d(cur, L, 1, lw, last_w, all, full); \
        __m512i d2 = intra16_d(cur, L, 2, lw, last_w, all, full), d3 = intra16_d(cur, L, 3, lw, last_w, all, full); \
        for (uint32_t x = 0; x < lw; x++) {                                                        \
            __mmask16 k = x < last_w ? all : full;                                                 \
            __m512i ne = x + 1 < lw ? _mm512_maskz_loadu_epi32(k, up + L * ((size_t)x + 1)) : n;    \
            if (x + 1 == last_w) /* the narrower last lane's last column */                        \
                ne = _mm512_mask_mov_epi32(ne, all & ~full, n);                                    \
            uint32_t *c = cur + L * (size_t)x;                                                     \
            (void)nw, (void)ne;                                                                    \
            __m512i d = d0;                                                                        \
            d0 = d1, d1 = d2, d2 = d3, d3 = intra16_d(cur, L, x + 4, lw, last_w, all, full);       \
            w = _mm512_and_si512(_mm512_add_epi32(EXPR, d), m);                                    \
            if (L <= 8)                                                                            \
                _mm256_mask_storeu_epi32(c, (__mmask8)k, _mm512_castsi512_si256(w));               \
            else                                                                                   \
                _mm512_mask_storeu_epi32(c, k, w);                                                 \
            nw = n, n = ne;                                                                        \
        }                                                                                          \
    } while (0)

/* intra_row's lanes (the row's L, at most 16, the last last_w wide), all in one vector. */
static AVX512_FN void intra_lanes16(uint32_t id, uint32_t *cur, const uint32_t *up, const lane_geo *g, uint32_t mask)
{
    const __m512i m = _mm512_set1_epi32((int)mask);
    const size_t L = g->active;
    const uint32_t lw = g->lw, last_w = g->last_w;
    const __mmask16 all = (__mmask16)((1u << L) - 1u); /* the lanes of the columns below last_w */
    const __mmask16 full = last_w == lw ? all : (__mmask16)(all >> 1); /* of the columns from last_w on */
    INTRA_SWITCH(INTRA16_LOOP, AVG16, med16, GRAD16, paeth16v)
}
#endif

/* One row of one slot with an intra predictor (r > 0, exact), every lane, lane-interleaved: the
 * lanes of full width column by column (their first and last columns with 2.3's edge rules), a
 * narrower last lane on its own. */
static void intra_row(uint32_t id, uint32_t *cur, const uint32_t *up, const lane_geo *g, uint32_t mask)
{
    size_t L = g->active;
    uint32_t lw = g->lw, full = g->last_w == lw ? (uint32_t)L : (uint32_t)L - 1;
#if IMIJ_ENT_AVX512
    if (simd_path >= 2 && L >= 2 && (id != 5 || mask <= 0xffffu)) { /* every lane: one vector a column */
        intra_lanes16(id, cur, up, g, mask);
        return;
    }
#endif
    if (lw < 3 || full < 4) { /* few lanes or columns: one lane at a time */
        for (size_t l = 0; l < L; l++)
            intra_lane(id, cur + l, up + l, l + 1 < L ? lw : g->last_w, L, mask);
        return;
    }
    intra_column_fn column = intra_column;
#if IMIJ_ENT_AVX2
    if (simd_path >= 1)
        column = intra_column_avx2;
#endif
    for (uint32_t l = 0; l < full; l++) /* column 0: W = NW = N */
        cur[l] = (intra_predict(id, up[l], up[l], up[l], up[L + l], mask) + cur[l]) & mask;
    for (uint32_t x = 1; x + 1 < lw; x++) {
        size_t c = (size_t)x * L;
        column(id, cur + c, cur + c - L, up + c, up + c - L, up + c + L, full, mask);
    }
    for (uint32_t l = 0; l < full; l++) { /* the last column: NE = N */
        size_t c = (size_t)(lw - 1) * L + l;
        cur[c] = (intra_predict(id, cur[c - L], up[c], up[c - L], up[c], mask) + cur[c]) & mask;
    }
    if (full < L)
        intra_lane(id, cur + L - 1, up + L - 1, g->last_w, L, mask);
}

/* Reconstruct stripe row r of one slot in place (section 4 step 3): `v` points at the row
 * (lane-interleaved, geometry g), which holds the residuals d on entry, with the row above
 * (reconstructed) right before it; `ref` likewise at the reference row (inter frames) or NULL.
 * Each v is written right after its own d is read, and the predictors read only positions before
 * it in its lane (W, NW, N, NE), so one row serves. */
static void reconstruct(uint32_t *v, const uint8_t *pred_ids, const uint32_t *ref, const lane_geo *g, uint32_t r,
                        uint32_t depth, uint32_t delta)
{
    uint32_t mask = mask_of(depth);
    int64_t step = 2 * (int64_t)delta + 1, top = (int64_t)mask;
    uint32_t id = pred_ids[r];
    if (r > 0 && id <= 6 && !delta) { /* the common case: one intra predictor for the row */
        intra_row(id, v, v - g->row, g, mask);
        return;
    }
    for (uint32_t l = 0; l < g->active; l++) {
        uint32_t lane_w = l + 1 < g->active ? g->lw : g->last_w;
        for (uint32_t x = 0; x < lane_w; x++) {
            size_t at = (size_t)x * g->active + l;
            uint32_t p = predict(id, v, ref, at, g, r, x, lane_w, mask);
            if (delta) { /* 2.6: v = clamp(pred + sext_n(d) (2 delta + 1), 0, 2^n - 1) */
                int64_t q = sext(v[at], depth) * step + (int64_t)p;
                v[at] = (uint32_t)(q < 0 ? 0 : q > top ? top : q);
            } else {
                v[at] = (p + v[at]) & mask;
            }
        }
    }
}

static int read_predictors(reader *rd, uint32_t height, int inter, uint8_t *ids)
{
    size_t count = ((size_t)height + 1) / 2;
    if (rd->end - rd->pos < count)
        return IMIJ_E_TRUNCATED;
    for (uint32_t r = 0; r < height; r++) {
        uint32_t id = (rd->p[rd->pos + r / 2] >> (4 * (r & 1))) & 15u;
        if (id > (inter ? 9u : 6u))
            return IMIJ_E_PREDICTOR; /* 2.4: 0..=6, 0..=9 in inter frames */
        if (r == 0 && id != 0 && !(inter && id == 7))
            return IMIJ_E_PREDICTOR; /* 2.4: row 0 must be W, or 7 in inter frames */
        ids[r] = (uint8_t)id;
    }
    rd->pos += count;
    return 0;
}

/* 4 step 1: unzigzag(u) mod 2^n. */
static inline uint32_t unzigzag(uint32_t u, uint32_t mask) { return ((u >> 1) ^ (0u - (u & 1u))) & mask; }

IMIJ_CLONES
static void unzigzag_run(uint32_t *u, size_t count, uint32_t mask)
{
    for (size_t i = 0; i < count; i++)
        u[i] = unzigzag(u[i], mask);
}

/* 4 step 2: undo decorrelation on n-bit (G, R, B) residuals, all modulo 2^n. */
IMIJ_CLONES
static void undo_decor(const uint32_t *g, uint32_t *rr, uint32_t *b, size_t count, uint32_t n, uint32_t decor)
{
    uint32_t mask = mask_of(n);
    for (size_t i = 0; i < count; i++)
        rr[i] = (rr[i] + g[i]) & mask;
    if (decor == 1) {
        for (size_t i = 0; i < count; i++)
            b[i] = (b[i] + g[i]) & mask;
    } else if (decor == 2) {
        for (size_t i = 0; i < count; i++)
            b[i] = (b[i] + rr[i]) & mask;
    } else if (n && n < 32) {
        /* floor((sext(R) + sext(G)) / 2): with the sign bit flipped, v ^ sign = sext(v) + 2^(n-1), so
         * the biased sum is sext(R) + sext(G) + 2^n in [0, 2^(n+1)), and halving it floors the signed
         * sum's half plus 2^(n-1) (2^n is even) */
        uint32_t sign = 1u << (n - 1);
        for (size_t i = 0; i < count; i++)
            b[i] = (b[i] + (((rr[i] ^ sign) + (g[i] ^ sign)) >> 1) - sign) & mask;
    } else {
        for (size_t i = 0; i < count; i++) {
            int64_t sum = sext(rr[i], n) + sext(g[i], n);
            b[i] = (uint32_t)((int64_t)b[i] + floor_half(sum)) & mask;
        }
    }
}

/* 3: one slot stream's opening, checked before any row decodes: an initial state >= 2^16 per
 * active lane, then whole u16 words; the stream resumes from there (`ss`). */
static int open_stream(imij_stream_state *ss, const uint8_t *body, size_t start, size_t len, uint32_t width,
                       uint32_t lanes)
{
    uint32_t active = geometry(width, lanes).active;
    const uint8_t *s = body + start;
    memset(ss, 0, sizeof *ss);
    ss->start = start;
    ss->len = len;
    ss->pos = (size_t)4 * active;
    if (len < ss->pos)
        return IMIJ_E_TRUNCATED;
    if ((len - ss->pos) & 1)
        return IMIJ_E_WORDS; /* 3: after the states, a sequence of u16 words */
    for (uint32_t l = 0; l < active; l++) {
        ss->st[l] = (uint32_t)s[4 * l] | (uint32_t)s[4 * l + 1] << 8 | (uint32_t)s[4 * l + 2] << 16 |
                    (uint32_t)s[4 * l + 3] << 24;
        if (ss->st[l] < STATE_LOW) /* 3: each initial state >= 2^16 */
            return IMIJ_E_STATE;
    }
    return 0;
}

/* 2.5: a palette stripe's count, entries (each < 2^n_s), predictors and its one stream. */
static int begin_palette(imij_entropy_state *state, reader *rd)
{
    const imij_unit *unit = &state->unit;
    uint32_t count;
    uint64_t slen;
    int err;
    if (!unit->palette) { /* 2.5: allowed only with head present bit 0 and every slot depth <= 16 */
        for (uint32_t s = 0; s < unit->nslots; s++)
            if (unit->slots[s].depth > 16)
                return IMIJ_E_DEPTH; /* as the level kernel's palette stripes (bilevel.c) */
        return IMIJ_E_PALETTE;
    }
    if ((err = rd_u8(rd, &count)))
        return err;
    state->count = count + 1;
    for (uint32_t e = 0; e < state->count; e++) {
        for (uint32_t s = 0; s < unit->nslots; s++) {
            uint32_t v, hi = 0;
            if ((err = rd_u8(rd, &v)))
                return err;
            if (unit->slots[s].depth > 8 && (err = rd_u8(rd, &hi)))
                return err;
            v |= hi << 8;
            if (v > mask_of(unit->slots[s].depth))
                return IMIJ_E_ENTRY; /* 2.5: each entry < 2^n_s */
            state->entries[s][e] = (uint16_t)v;
        }
    }
    for (uint32_t s = 0; s < unit->nslots; s++) /* 2.5: an index >= n takes entry 0 */
        for (uint32_t e = state->count; e < 256; e++)
            state->entries[s][e] = state->entries[s][0];
    if ((err = read_predictors(rd, unit->height, 0, state->pred_ids)))
        return err;
    if ((err = rd_varint(rd, &slen)))
        return err;
    if (slen != rd->end - rd->pos)
        return IMIJ_E_LENGTHS;
    return open_stream(&state->streams[0], rd->p, rd->pos, (size_t)slen, unit->width, unit->lanes);
}

/* 2.4: a slot stripe's predictors, stream lengths (filling the record) and streams. */
static int begin_slots(imij_entropy_state *state, reader *rd)
{
    const imij_unit *unit = &state->unit;
    uint64_t lens[8], total = 0;
    int err;
    if ((err = read_predictors(rd, unit->height, (int)state->inter, state->pred_ids)))
        return err;
    for (uint32_t s = 0; s < unit->nslots; s++) {
        if ((err = rd_varint(rd, &lens[s])))
            return err;
        if (lens[s] > rd->end)
            return IMIJ_E_LENGTHS;
        total += lens[s];
    }
    if (total != rd->end - rd->pos)
        return IMIJ_E_LENGTHS; /* the streams fill the record */
    size_t at = rd->pos;
    for (uint32_t s = 0; s < unit->nslots; s++) {
        if ((err = open_stream(&state->streams[s], rd->p, at, (size_t)lens[s], unit->width, unit->lanes)))
            return err;
        at += (size_t)lens[s];
    }
    return 0;
}

/* A model whose tables cover its context map (its ent holds ntables x M entries). */
static int model_ok(const imij_slot_model *m)
{
    if (!m->ent || m->ntables < 1 || m->ntables > 4)
        return 0;
    for (int c = 0; c < 16; c++)
        if (m->ctx_map[c] >= m->ntables)
            return 0;
    return 1;
}

static int begin(imij_entropy_state *state, const uint8_t *body, size_t len, size_t pred_len)
{
    const imij_unit *unit = &state->unit;
    if (unit->width == 0 || unit->height == 0 || unit->lanes < 1 || unit->lanes > 16 || unit->nslots > 8)
        return IMIJ_E_ARGS;
    if (pred_len < unit->height)
        return IMIJ_E_SIZE;
    for (uint32_t s = 0; s < unit->nslots; s++)
        if (!model_ok(&unit->slots[s]))
            return IMIJ_E_ARGS;
    if (unit->palette && !model_ok(unit->palette))
        return IMIJ_E_ARGS;
    reader rd = {body, 0, len};
    int err = rd_u8(&rd, &state->layout);
    if (err)
        return err;
    if (state->layout == 0x80) /* 2.5 */
        return begin_palette(state, &rd);
    if (state->layout >= 0x81 && state->layout <= 0x84)
        return IMIJ_E_FEATURE; /* 2.10, 2.14: bilevel and template stripes need their features */
    if (state->layout > 3 || (state->layout && !unit->decor_allowed))
        return IMIJ_E_DECOR; /* 2.4 */
    return begin_slots(state, &rd);
}

int imij_entropy_begin(const uint8_t *body, size_t len, const imij_unit *unit, int has_reference,
                       imij_entropy_state *state, uint8_t *pred_ids, size_t pred_len)
{
    memset(state, 0, sizeof *state);
    state->unit = *unit;
    state->body = body;
    state->pred_ids = pred_ids;
    state->inter = has_reference && unit->inter_allowed;
    state->error = begin(state, body, len, pred_len);
    return state->error;
}

/* The next row block's first row in each plane of the scratch (imij_kernels.h): rows 0 and 1
 * carry the residuals and the coded values of the row above the block. */
#define CARRY_U ((size_t)0)
#define CARRY_V ((size_t)1)
#define FIRST_ROW ((size_t)2)

/* 2.5: a block of the index plane (plane 0), then each index's entry in every slot plane. */
static int palette_rows(imij_entropy_state *state, uint32_t rows, size_t stride, uint32_t *planes)
{
    const imij_unit *unit = &state->unit;
    lane_geo g = geometry(unit->width, unit->lanes);
    uint32_t r0 = state->row;
    size_t first = FIRST_ROW * g.row, last = first + (rows - 1) * g.row, count = rows * g.row;
    uint32_t *idx = planes;
    int err = decode_rows(&state->streams[0], state->body, unit->palette, unit->width, unit->height, unit->lanes, r0,
                          rows, idx + first, idx + CARRY_U * g.row, NULL, 0, g.lw);
    if (err)
        return err;
    memcpy(idx + CARRY_U * g.row, idx + last, g.row * sizeof *idx);
    for (uint32_t i = 0; i < rows; i++) { /* 4 steps 1 and 3 on the 8-bit index slot */
        uint32_t *row = idx + first + i * g.row;
        unzigzag_run(row, g.row, 0xffu);
        reconstruct(row, state->pred_ids, NULL, &g, r0 + i, 8, 0);
    }
    memcpy(idx + CARRY_V * g.row, idx + last, g.row * sizeof *idx);
    for (uint32_t s = unit->nslots; s-- > 0;) { /* plane 0 last: it holds the indices (each < 2^8) */
        const uint16_t *entry = state->entries[s];
        uint32_t *plane = planes + s * stride;
        for (size_t i = first; i < first + count; i++)
            plane[i] = entry[idx[i]];
    }
    return 0;
}

/* Whether a block's slots decode side by side (decode_group): on the AVX-512 path, 2..GROUP_MAX
 * slots of the same narrow flag, slot 0 without the cross context (2.2 allows it only later). */
static int group_ok(const imij_unit *unit)
{
#if IMIJ_ENT_AVX512
    if (simd_path != 2 || unit->nslots < 2 || unit->nslots > GROUP_MAX || unit->slots[0].cross)
        return 0;
    for (uint32_t s = 1; s < unit->nslots; s++)
        if (narrow_model(&unit->slots[s]) != narrow_model(&unit->slots[0]))
            return 0;
    return 1;
#else
    (void)unit;
    return 0;
#endif
}

/* A block of every slot's stream side by side (decode_group, where group_ok). Returns 1 when they
 * are decoded; 0 when the caller decodes them slot by slot: also after an error, from their places
 * at the block's start, for the error that order meets first. */
static int group_rows(imij_entropy_state *state, uint32_t rows, size_t stride, uint32_t *planes)
{
#if IMIJ_ENT_AVX512
    const imij_unit *unit = &state->unit;
    uint32_t count = unit->nslots;
    size_t row = geometry(unit->width, unit->lanes).row;
    group_stream gs[GROUP_MAX];
    imij_stream_state saved[GROUP_MAX];
    int skew = 0;
    for (uint32_t k = 0; k < count; k++) {
        group_stream *q = &gs[k];
        q->ss = &state->streams[k];
        q->m = &unit->slots[k];
        q->cross = q->m->cross != 0;
        skew |= q->cross;
        q->s = state->body + q->ss->start;
        q->u = planes + k * stride + FIRST_ROW * row;
        q->up0 = planes + k * stride + CARRY_U * row;
        q->tail_at = q->ss->len > 64 ? q->ss->len - 64 : 0;
        memset(q->tail, 0, sizeof q->tail);
        memcpy(q->tail, q->s + q->tail_at, q->ss->len - q->tail_at);
        saved[k] = *q->ss;
    }
    if (!decode_group(gs, (int)count, state->body, unit->width, unit->height, unit->lanes, state->row, rows,
                      planes + FIRST_ROW * row, narrow_model(gs[0].m), skew))
        return 1;
    for (uint32_t k = 0; k < count; k++)
        state->streams[k] = saved[k];
#else
    (void)state, (void)rows, (void)stride, (void)planes;
#endif
    return 0;
}

/* 2.4: a block of every slot's stream (slot 0 first: the cross context of 3.1 reads its residuals),
 * then section 4 steps 1-3 row by row, in place. */
static int slot_rows(imij_entropy_state *state, uint32_t rows, size_t stride, uint32_t *planes,
                     const uint32_t *reference)
{
    const imij_unit *unit = &state->unit;
    lane_geo g = geometry(unit->width, unit->lanes);
    uint32_t r0 = state->row, nslots = unit->nslots, decor = state->layout;
    size_t first = FIRST_ROW * g.row, last = first + (rows - 1) * g.row, row_bytes = g.row * sizeof *planes;
    int grouped = group_ok(unit) && group_rows(state, rows, stride, planes);
    for (uint32_t s = 0; s < nslots && !grouped; s++) {
        uint32_t *p = planes + s * stride;
        int err = decode_rows(&state->streams[s], state->body, &unit->slots[s], unit->width, unit->height,
                              unit->lanes, r0, rows, p + first, p + CARRY_U * g.row, planes + first, 0, g.lw);
        if (err)
            return err;
    }
    for (uint32_t s = 0; s < nslots; s++) /* residuals of the next block's row above (3.1) */
        memcpy(planes + s * stride + CARRY_U * g.row, planes + s * stride + last, row_bytes);
    for (uint32_t i = 0; i < rows; i++) {
        size_t at = first + i * g.row;
        for (uint32_t s = 0; s < nslots; s++) /* 4 step 1 */
            unzigzag_run(planes + s * stride + at, g.row, mask_of(unit->slots[s].depth));
        if (decor) /* 4 step 2 */
            undo_decor(planes + at, planes + stride + at, planes + 2 * stride + at, g.row, unit->slots[0].depth,
                       decor);
        for (uint32_t s = 0; s < nslots; s++) /* 4 step 3 */
            reconstruct(planes + s * stride + at, state->pred_ids, state->inter ? reference + s * stride + at : NULL,
                        &g, r0 + i, unit->slots[s].depth, unit->slots[s].delta);
    }
    for (uint32_t s = 0; s < nslots; s++) /* coded values of the next block's row above (4) */
        memcpy(planes + s * stride + CARRY_V * g.row, planes + s * stride + last, row_bytes);
    return 0;
}

/* Whether `len` uint32 hold `planes` planes of the row block scratch: (capacity + 2) rows of the
 * unit's interleaved rows each (state's unit: begin checked its geometry). */
static int scratch_fits(const imij_entropy_state *state, uint32_t planes, uint32_t capacity, size_t len)
{
    size_t row = geometry(state->unit.width, state->unit.lanes).row;
    return planes == 0 || (size_t)capacity + FIRST_ROW <= len / row / planes;
}

/* The planes of the row block scratch: a palette stripe's index plane when there is no slot. */
static uint32_t scratch_planes(const imij_entropy_state *state)
{
    return state->unit.nslots ? state->unit.nslots : 1u;
}

int imij_entropy_rows(imij_entropy_state *state, uint32_t rows, uint32_t capacity, uint32_t *planes,
                      size_t planes_len, const uint32_t *reference, size_t reference_len)
{
    if (state->error)
        return state->error;
    if (rows == 0 || rows > capacity || rows > state->unit.height - state->row || (state->inter && !reference))
        return state->error = IMIJ_E_ARGS;
    if (!scratch_fits(state, scratch_planes(state), capacity, planes_len) ||
        (state->inter && !scratch_fits(state, state->unit.nslots, capacity, reference_len)))
        return state->error = IMIJ_E_SIZE;
    size_t stride = ((size_t)capacity + FIRST_ROW) * geometry(state->unit.width, state->unit.lanes).row;
    int err = state->layout == 0x80 ? palette_rows(state, rows, stride, planes)
                                    : slot_rows(state, rows, stride, planes, reference);
    if (err)
        return state->error = err;
    state->row += rows;
    return 0;
}

/* One block's rows of every slot (scratch rows FIRST_ROW.., lane-interleaved) into the samples,
 * and the Const channels' words (4 step 4): lane by lane, pixel by pixel, so each pixel's samples
 * are written together; NS slots (a constant where the compiler can unroll, else st->nslots), each
 * slot's word WORD(s, v). */
#define STORE_ROWS(T, NS, WORD)                                                                           \
    for (uint32_t i = 0; i < rows; i++) {                                                                 \
        uint8_t *row = out + (int64_t)(r0 + i) * row_stride;                                              \
        for (uint32_t l = 0; l < g.active; l++) {                                                         \
            const uint32_t *v = planes + (FIRST_ROW + i) * g.row + l;                                     \
            uint8_t *lane = row + (int64_t)l * g.lw * pixel_stride;                                       \
            uint32_t lane_w = l + 1 < g.active ? g.lw : g.last_w;                                         \
            for (uint32_t x = 0; x < lane_w; x++) {                                                       \
                T *px = (T *)(lane + (int64_t)x * pixel_stride);                                          \
                size_t at = (size_t)x * g.active;                                                         \
                for (uint32_t s = 0; s < (NS); s++)                                                       \
                    px[ch[s]] = (T)WORD(s, v[s * stride + at]);                                           \
                for (uint32_t k = 0; k < nconst; k++)                                                     \
                    px[cch[k]] = (T)cword[k];                                                             \
            }                                                                                             \
        }                                                                                                 \
    }

/* Lsb or Shift with a signed word's flip: the common case, without tables or float flips. */
#define SHIFTED(s, v) (((v) << sh[s]) ^ fl[s])

static inline uint32_t mapped(const imij_sample_store *st, uint32_t s, uint32_t v)
{
    uint32_t t = st->lut[s] ? st->lut[s][v] : (v << st->shift[s]) + st->add[s];
    return t ^ st->flip[s] ^ ((t >> st->top[s] & 1u) ? st->neg_flip[s] : 0u);
}
#define MAPPED(s, v) mapped(st, s, v)

#define STORE_SLOTS(T, WORD)                                                                              \
    switch (st->nslots) {                                                                                 \
    case 1:                                                                                               \
        STORE_ROWS(T, 1, WORD)                                                                            \
        break;                                                                                            \
    case 3:                                                                                               \
        STORE_ROWS(T, 3, WORD)                                                                            \
        break;                                                                                            \
    case 4:                                                                                               \
        STORE_ROWS(T, 4, WORD)                                                                            \
        break;                                                                                            \
    default:                                                                                              \
        STORE_ROWS(T, nslots, WORD)                                                                       \
        break;                                                                                            \
    }

#define STORE_SIZES(WORD)                                                                                 \
    if (st->esize == 1)                                                                                   \
        STORE_SLOTS(uint8_t, WORD)                                                                        \
    else if (st->esize == 2)                                                                              \
        STORE_SLOTS(uint16_t, WORD)                                                                       \
    else                                                                                                  \
        STORE_SLOTS(uint32_t, WORD)

#if IMIJ_ENT_AVX2
/* The plain store of bytes (4 step 4 of Lsb maps): one byte per sample equal to its coded
 * value, a pixel's samples adjacent (pixel stride = channels = 1, 3 or 4, each a slot's or a
 * Const channel's, at least one slot). `of` gets each channel's slot, or nslots + k for Const
 * channel k. */
static int plain_bytes(const imij_sample_store *st, uint32_t *of)
{
    uint32_t seen = 0, nch = st->nslots + st->nconst;
    if (st->esize != 1 || !st->nslots || st->pixel_stride != (int64_t)nch || (nch != 1 && nch != 3 && nch != 4))
        return 0;
    for (uint32_t s = 0; s < st->nslots; s++) {
        if (st->channel[s] >= nch || st->shift[s] || st->flip[s] || st->add[s] || st->neg_flip[s] || st->lut[s])
            return 0;
        seen |= 1u << st->channel[s];
        of[st->channel[s]] = s;
    }
    for (uint32_t k = 0; k < st->nconst; k++) {
        if (st->const_channel[k] >= nch)
            return 0;
        seen |= 1u << st->const_channel[k];
        of[st->const_channel[k]] = st->nslots + k;
    }
    return seen == (1u << nch) - 1u; /* every channel once */
}

/* 16 rows of 16 bytes, transposed in place (row k, byte l -> row l, byte k). */
static inline AVX2_FN void transpose16(__m128i *m)
{
    __m128i t[16];
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi8(m[2 * i], m[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi8(m[2 * i], m[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        for (int h = 0; h < 2; h++) {
            m[8 * h + i] = _mm_unpacklo_epi16(t[8 * h + 2 * i], t[8 * h + 2 * i + 1]);
            m[8 * h + i + 4] = _mm_unpackhi_epi16(t[8 * h + 2 * i], t[8 * h + 2 * i + 1]);
        }
    }
    for (int i = 0; i < 2; i++) {
        for (int q = 0; q < 4; q++) {
            t[4 * q + i] = _mm_unpacklo_epi32(m[4 * q + 2 * i], m[4 * q + 2 * i + 1]);
            t[4 * q + i + 2] = _mm_unpackhi_epi32(m[4 * q + 2 * i], m[4 * q + 2 * i + 1]);
        }
    }
    /* t[2 p] and t[2 p + 1]: lanes 2 p and 2 p + 1 as 8-byte halves, rows 0-7 and rows 8-15 */
    for (int p = 0; p < 8; p++) {
        m[2 * p] = _mm_unpacklo_epi64(t[2 * p], t[2 * p + 1]);
        m[2 * p + 1] = _mm_unpackhi_epi64(t[2 * p], t[2 * p + 1]);
    }
}

/* The lanes of a step (g->active of 16) as the load masks of step_words: lanes 0-7, then 8-15. */
static inline AVX2_FN void step_masks(const lane_geo *g, __m256i *mk)
{
    const __m256i lane_no = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    mk[0] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)g->active), lane_no);
    mk[1] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)g->active - 8), lane_no);
}

/* Step x of a block row (`active` lanes of uint32 values, each below 2^16, masks `mk` of
 * step_masks) as 16-bit values in lane order, 0 past the last lane. */
static inline AVX2_FN __m256i step_words(const uint32_t *v, uint32_t x, uint32_t active, const __m256i *mk)
{
    const int *p = (const int *)(v + (size_t)x * active);
    return _mm256_permute4x64_epi64(
        _mm256_packus_epi32(_mm256_maskload_epi32(p, mk[0]), _mm256_maskload_epi32(p + 8, mk[1])), 0xd8);
}

/* The columns x0 .. x0 + n - 1 of lane l that a plain store's block from x0 writes: n = 16, or
 * fewer at the lane's end (0 past it). */
static inline uint32_t block_columns(const lane_geo *g, uint32_t l, uint32_t x0)
{
    uint32_t lane_w = l + 1 < g->active ? g->lw : g->last_w;
    return lane_w <= x0 ? 0 : lane_w - x0 < 16 ? lane_w - x0 : 16;
}

/* Steps x0 .. x0 + 15 of one slot's block row (`active` lanes of uint32 per step, the steps from
 * x_end on taken as 0) as 16 rows of 16 bytes, one per lane: lane l's columns x0 .. x0 + 15. */
static inline AVX2_FN void lane_bytes(const uint32_t *v, uint32_t x0, uint32_t x_end, uint32_t active,
                                      const __m256i *mk, __m128i *m)
{
    for (uint32_t k = 0; k < 16; k++) {
        __m256i q = x0 + k < x_end ? step_words(v, x0 + k, active, mk) : _mm256_setzero_si256();
        m[k] = _mm_packus_epi16(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    }
    transpose16(m);
}

/* 16 pixels of 3 samples from three planes of 16 bytes: 48 bytes at dst. */
static inline AVX2_FN void put_rgb(uint8_t *dst, __m128i r, __m128i g, __m128i b)
{
    const __m128i r0 = _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
    const __m128i g0 = _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1);
    const __m128i b0 = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
    const __m128i r1 = _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
    const __m128i g1 = _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10);
    const __m128i b1 = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1);
    const __m128i r2 = _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1);
    const __m128i g2 = _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1);
    const __m128i b2 = _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15);
    __m128i o0 = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r0), _mm_shuffle_epi8(g, g0)), _mm_shuffle_epi8(b, b0));
    __m128i o1 = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r1), _mm_shuffle_epi8(g, g1)), _mm_shuffle_epi8(b, b1));
    __m128i o2 = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r2), _mm_shuffle_epi8(g, g2)), _mm_shuffle_epi8(b, b2));
    _mm_storeu_si128((__m128i *)dst, o0);
    _mm_storeu_si128((__m128i *)(dst + 16), o1);
    _mm_storeu_si128((__m128i *)(dst + 32), o2);
}

/* 16 pixels of 4 samples: 64 bytes at dst. */
static inline AVX2_FN void put_rgba(uint8_t *dst, __m128i r, __m128i g, __m128i b, __m128i a)
{
    __m128i rg0 = _mm_unpacklo_epi8(r, g), rg1 = _mm_unpackhi_epi8(r, g);
    __m128i ba0 = _mm_unpacklo_epi8(b, a), ba1 = _mm_unpackhi_epi8(b, a);
    _mm_storeu_si128((__m128i *)dst, _mm_unpacklo_epi16(rg0, ba0));
    _mm_storeu_si128((__m128i *)(dst + 16), _mm_unpackhi_epi16(rg0, ba0));
    _mm_storeu_si128((__m128i *)(dst + 32), _mm_unpacklo_epi16(rg1, ba1));
    _mm_storeu_si128((__m128i *)(dst + 48), _mm_unpackhi_epi16(rg1, ba1));
}

/* store_block for plain_bytes: per row, 16 steps of every lane at a time are transposed into
 * the lanes' 16 consecutive columns and interleaved into pixels (with the Const channels' bytes);
 * a lane's last columns short of 16 through a buffer. */
static AVX2_FN void store_plain_bytes(const imij_sample_store *st, const uint32_t *of, const uint32_t *planes,
                                      size_t stride, lane_geo g, uint32_t r0, uint32_t rows)
{
    uint32_t ns = st->nslots, nch = ns + st->nconst;
    __m256i mk[2];
    __m128i m[4][16]; /* per channel source: the slots' transposed bytes, then the Const channels' */
    step_masks(&g, mk);
    for (uint32_t k = 0; k < st->nconst; k++)
        for (int l = 0; l < 16; l++)
            m[ns + k][l] = _mm_set1_epi8((char)st->const_word[k]); /* (uint8_t) as STORE_ROWS */
    for (uint32_t i = 0; i < rows; i++) {
        uint8_t *row = st->out + (int64_t)(r0 + i) * st->row_stride;
        const uint32_t *v = planes + (FIRST_ROW + i) * g.row;
        for (uint32_t x0 = 0; x0 < g.lw; x0 += 16) {
            for (uint32_t s = 0; s < ns; s++)
                lane_bytes(v + s * stride, x0, g.lw, g.active, mk, m[s]);
            for (uint32_t l = 0; l < g.active; l++) {
                uint32_t n = block_columns(&g, l, x0);
                uint8_t *dst = row + ((size_t)l * g.lw + x0) * nch, buf[64];
                uint8_t *to = n == 16 ? dst : buf;
                if (!n)
                    continue;
                if (nch == 3)
                    put_rgb(to, m[of[0]][l], m[of[1]][l], m[of[2]][l]);
                else if (nch == 4)
                    put_rgba(to, m[of[0]][l], m[of[1]][l], m[of[2]][l], m[of[3]][l]);
                else
                    _mm_storeu_si128((__m128i *)to, m[0][l]);
                if (n < 16)
                    memcpy(dst, buf, (size_t)n * nch);
            }
        }
    }
}

/* The plain store of 16-bit gray samples (4 step 4 of Lsb and Shift maps, the order map's sign
 * flip): one slot whose word is (v << shift) ^ flip, pixels adjacent, no Const channel. */
static int plain_words(const imij_sample_store *st)
{
    return st->esize == 2 && st->nslots == 1 && !st->nconst && st->pixel_stride == 2 &&
           st->channel[0] == 0 && st->shift[0] < 16 && st->flip[0] <= 0xffffu && !st->add[0] && !st->neg_flip[0] &&
           !st->lut[0];
}

/* 8 rows of 8 16-bit values in each 128-bit half, transposed in place per half. */
static inline AVX2_FN void transpose8x16(__m256i *a)
{
    __m256i b[8], c[8];
    for (int i = 0; i < 4; i++) {
        b[2 * i] = _mm256_unpacklo_epi16(a[2 * i], a[2 * i + 1]);
        b[2 * i + 1] = _mm256_unpackhi_epi16(a[2 * i], a[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* rows 4 h .. 4 h + 3: b[4 h ..] */
        c[4 * h] = _mm256_unpacklo_epi32(b[4 * h], b[4 * h + 2]);
        c[4 * h + 1] = _mm256_unpackhi_epi32(b[4 * h], b[4 * h + 2]);
        c[4 * h + 2] = _mm256_unpacklo_epi32(b[4 * h + 1], b[4 * h + 3]);
        c[4 * h + 3] = _mm256_unpackhi_epi32(b[4 * h + 1], b[4 * h + 3]);
    }
    for (int j = 0; j < 4; j++) { /* columns 2 j and 2 j + 1: rows 0-3 in c[j], rows 4-7 in c[4 + j] */
        a[2 * j] = _mm256_unpacklo_epi64(c[j], c[4 + j]);
        a[2 * j + 1] = _mm256_unpackhi_epi64(c[j], c[4 + j]);
    }
}

/* store_block for plain_words, as store_plain_bytes: each 16 x 16 block of 16-bit values is
 * transposed as two 8-row halves, whose 128-bit halves are then paired per lane. */
static AVX2_FN void store_plain_words(const imij_sample_store *st, const uint32_t *planes, lane_geo g, uint32_t r0,
                                      uint32_t rows)
{
    uint32_t sh = st->shift[0], fl = st->flip[0];
    __m128i count = _mm_cvtsi32_si128((int)sh);
    __m256i flip = _mm256_set1_epi16((short)fl), mk[2];
    step_masks(&g, mk);
    for (uint32_t i = 0; i < rows; i++) {
        uint16_t *row = (uint16_t *)(st->out + (int64_t)(r0 + i) * st->row_stride);
        const uint32_t *v = planes + (FIRST_ROW + i) * g.row;
        for (uint32_t x0 = 0; x0 < g.lw; x0 += 16) {
            __m256i m[16];
            for (uint32_t k = 0; k < 16; k++) /* the steps from lw on taken as 0 */
                m[k] = x0 + k < g.lw ? step_words(v, x0 + k, g.active, mk) : _mm256_setzero_si256();
            transpose8x16(m);     /* m[j]: lanes j and 8 + j, steps 0-7 */
            transpose8x16(m + 8); /* m[8 + j]: the same lanes, steps 8-15 */
            for (uint32_t l = 0; l < g.active; l++) {
                uint32_t j = l & 7u, n = block_columns(&g, l, x0);
                if (!n)
                    continue;
                __m256i w = l < 8 ? _mm256_permute2x128_si256(m[j], m[8 + j], 0x20)
                                  : _mm256_permute2x128_si256(m[j], m[8 + j], 0x31);
                w = _mm256_xor_si256(_mm256_sll_epi16(w, count), flip);
                uint16_t *dst = row + (size_t)l * g.lw + x0, buf[16];
                _mm256_storeu_si256((__m256i *)(n == 16 ? dst : buf), w);
                if (n < 16)
                    memcpy(dst, buf, (size_t)n * sizeof *dst);
            }
        }
    }
}
#endif

static void store_block(const imij_sample_store *st, const uint32_t *planes, size_t stride, lane_geo g, uint32_t r0,
                        uint32_t rows)
{
    /* locals: the stores go through byte pointers, which may alias the struct */
    uint8_t *out = st->out;
    int64_t row_stride = st->row_stride, pixel_stride = st->pixel_stride;
    uint32_t nslots = st->nslots, nconst = st->nconst, ch[8], sh[8], fl[8], cch[8], cword[8];
    int simple = 1;
    memcpy(ch, st->channel, sizeof ch);
    memcpy(sh, st->shift, sizeof sh);
    memcpy(fl, st->flip, sizeof fl);
    memcpy(cch, st->const_channel, sizeof cch);
    memcpy(cword, st->const_word, sizeof cword);
    for (uint32_t s = 0; s < nslots; s++)
        simple &= !st->lut[s] && !st->add[s] && !st->neg_flip[s];
#if IMIJ_ENT_AVX2
    uint32_t of[4];
    if (simd_path >= 1 && plain_bytes(st, of)) {
        store_plain_bytes(st, of, planes, stride, g, r0, rows);
        return;
    }
    if (simd_path >= 1 && plain_words(st)) {
        store_plain_words(st, planes, g, r0, rows);
        return;
    }
#endif
    if (simple) {
        STORE_SIZES(SHIFTED)
    } else {
        STORE_SIZES(MAPPED)
    }
}
#undef STORE_SIZES
#undef STORE_SLOTS
#undef MAPPED
#undef SHIFTED
#undef STORE_ROWS

int imij_sample_store_valid(const imij_sample_store *store)
{
    if ((store->esize != 1 && store->esize != 2 && store->esize != 4) || store->nslots > 8 || store->nconst > 8)
        return 0;
    for (uint32_t s = 0; s < store->nslots; s++)
        if (store->top[s] > 31)
            return 0;
    return 1;
}

/* *need += count * stride when the sum stays within cap (*need <= cap on entry), else 0. */
static int add_span(uint64_t *need, uint64_t count, uint64_t stride, uint64_t cap)
{
    if (count && stride > (cap - *need) / count)
        return 0;
    *need += count * stride;
    return 1;
}

int imij_sample_store_fits(const imij_sample_store *store, uint32_t width, uint32_t height)
{
    if (!imij_sample_store_valid(store) || store->row_stride < 0 || store->pixel_stride < 0)
        return 0;
    if (width == 0 || height == 0)
        return 1;
    uint64_t top = 0; /* the highest channel of a pixel that the store writes */
    for (uint32_t s = 0; s < store->nslots; s++)
        top = store->channel[s] > top ? store->channel[s] : top;
    for (uint32_t k = 0; k < store->nconst; k++)
        top = store->const_channel[k] > top ? store->const_channel[k] : top;
    uint64_t need = (top + 1) * store->esize, cap = store->out_len; /* the last sample's end */
    return need <= cap && add_span(&need, height - 1, (uint64_t)store->row_stride, cap) &&
           add_span(&need, width - 1, (uint64_t)store->pixel_stride, cap);
}

uint32_t imij_sample_word(const imij_sample_store *store, uint32_t s, uint32_t v) { return mapped(store, s, v); }

int imij_entropy_store(imij_entropy_state *state, uint32_t capacity, uint32_t *planes, size_t planes_len,
                       const imij_sample_store *store)
{
    if (state->error)
        return state->error;
    if (state->inter || !imij_sample_store_valid(store))
        return state->error = IMIJ_E_ARGS;
    if (!imij_sample_store_fits(store, state->unit.width, state->unit.height))
        return state->error = IMIJ_E_SIZE; /* the planes: on the first block, before it is written */
    lane_geo g = geometry(state->unit.width, state->unit.lanes);
    size_t stride = ((size_t)capacity + FIRST_ROW) * g.row;
    while (state->row < state->unit.height) {
        uint32_t r0 = state->row, left = state->unit.height - r0, rows = left < capacity ? left : capacity;
        int err = imij_entropy_rows(state, rows, capacity, planes, planes_len, NULL, 0);
        if (err)
            return err;
        store_block(store, planes, stride, g, r0, rows);
    }
    return state->error;
}
