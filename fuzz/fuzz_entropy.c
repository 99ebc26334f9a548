/* fuzz_entropy.c: one entropy-coded unit (csrc/entropy.c) end to end, fed as
 * payload/entropy/kernel.py feeds it: the models stream read by imij_read_models (as
 * models.py _read_models_c) and turned into structs by imij_models_fill (kernel.py SlotModels),
 * then imij_entropy_begin and either imij_entropy_rows in row blocks (with an inter frame's
 * reference planes) or imij_entropy_store through a sample store (decode_unit_c).
 *
 * Input: a parameter prefix (see `params` below; fuzz/make_seeds.py writes it from real plans),
 * u16 LE models length, the models stream, then the unit record body. Only plans that
 * decoder.prepare accepts: 1..=4 slots below 64-bit samples (1..=8 with them), slot depths
 * within the sample's word, near-lossless bounds only on u8/u16/u32/i32 with 2.6's limits,
 * decorrelation only with three equal leading slot depths, palette stripes only with slots of at
 * most 16 bits. */
#include "harness.h"
#include "schemes.h"

enum { SCRATCH_BYTES = 1 << 14, CARRIED_ROWS = 2 };

typedef struct {
    unit_shape u;
    uint32_t near, palette, palette_ok, reference, store, decor, channels;
    uint8_t cross[9];
    uint32_t delta[8];
} params;

/* The prefix, or 0 when it describes a plan decoder.prepare rejects. */
static int read_params(input *in, params *p)
{
    uint8_t f = take_u8(in);
    memset(p, 0, sizeof *p);
    take_shape(in, f, &p->u);
    p->near = f >> 2 & 1;
    p->palette = f >> 3 & 1;
    p->reference = f >> 4 & 1;
    p->store = f >> 5 & 1;
    uint32_t all16 = 1, *depth = p->u.depth, bits = p->u.bits, kind = p->u.kind;
    for (uint32_t s = 0; s < p->u.nslots; s++)
        all16 &= depth[s] <= 16;
    p->decor = (f >> 6 & 1) && p->u.nslots >= 3 && depth[0] == depth[1] && depth[1] == depth[2];
    uint8_t cross = take_u8(in);
    for (uint32_t s = 0; s < p->u.nslots; s++)
        p->cross[s] = s >= 1 && (cross >> s & 1); /* 3.3 / R1: never the first slot */
    p->channels = take_channels(in, p->u.nslots);
    uint32_t any = 0;
    for (uint32_t s = 0; s < 8; s++) {
        uint32_t d = take_u32(in), limit = depth[s] ? (1u << (depth[s] - 1)) - 1 : 0; /* 2.6: delta <= 2^(n-1) - 1 */
        p->delta[s] = p->near && s < p->u.nslots ? (limit ? d % (limit + 1) : 0) : 0;
        any |= p->delta[s];
    }
    if (p->near && (!any || bits == 64 || kind == KIND_F || (kind == KIND_I && bits != 32)))
        return 0; /* near.py: NEAR_SAMPLES, some bound above 0 */
    p->palette_ok = p->palette && all16;
    return 1;
}

/* models.py _read_models_c then kernel.py SlotModels: 0 when the stream is rejected. */
static int make_models(const input *models, const params *p, imij_slot_model *structs, uint64_t **entries)
{
    uint32_t count = p->u.nslots + (p->palette ? 1 : 0), depths[9];
    uint8_t cross[9] = {0};
    uint16_t schemes[9 * 512];
    for (uint32_t i = 0; i < count; i++) {
        depths[i] = i < p->u.nslots ? p->u.depth[i] : 8; /* the palette index model: depth 8, no cross */
        cross[i] = i < p->u.nslots ? p->cross[i] : 0;
        memcpy(schemes + 512 * i, SCHEMES[depths[i]], sizeof SCHEMES[0]);
    }
    imij_model_head heads[9];
    uint32_t last[36], *weights = calloc(36 * 256, 4), *freq = calloc(36 * 256, 4);
    uint8_t *buf = malloc(models->n ? models->n : 1);
    memcpy(buf, models->p, models->n);
    uint64_t pos = 0;
    int ok = !status(imij_read_models(buf, models->n, &pos, count, depths, cross, schemes, heads, count, last,
                                      weights, freq, 4 * count));
    free(buf);
    if (ok) {
        /* SlotModels: the palette model only where palette stripes may occur */
        uint32_t used = p->u.nslots + (p->palette_ok ? 1 : 0), params7[9 * 7], tables = 0;
        uint8_t ctx_maps[9 * 16];
        for (uint32_t i = 0; i < used; i++) {
            const imij_model_head *h = heads + i;
            uint32_t row[7] = {depths[i], h->k, h->m, h->cross, h->ctx_shift, i < p->u.nslots ? p->delta[i] : 0,
                               h->ntables};
            memcpy(params7 + 7 * i, row, sizeof row);
            memcpy(ctx_maps + 16 * i, h->ctx_map, 16);
            for (uint32_t t = h->ntables; t < 4; t++) /* freq rows past a model's tables are zero */
                memset(freq + 1024 * i + 256 * t, 0, 1024);
            tables += h->ntables < 4 ? h->ntables : 4;
        }
        size_t len = (size_t)(tables ? tables : 1) * 1024;
        *entries = malloc(len * sizeof **entries);
        ok = !status(imij_models_fill(structs, used, params7, ctx_maps, freq, *entries, len));
    }
    free(weights);
    free(freq);
    return ok;
}

/* kernel.py block_rows */
static uint32_t block_rows(uint32_t planes, size_t row, uint32_t height, uint32_t least)
{
    long fit = (long)(SCRATCH_BYTES / (4 * planes * row)) - CARRIED_ROWS;
    uint32_t rows = fit > (long)least ? (uint32_t)fit : least;
    return rows < height ? rows : height;
}

static void decode(input *in, const params *p, imij_unit *unit)
{
    uint32_t seed = take_u32(in) | 1u, luts_needed = p->store && p->u.bits <= 32 && !p->reference;
    imij_sample_store store;
    uint32_t *luts = NULL;
    uint32_t pad = 0;
    if (luts_needed) {
        luts = malloc(8 * 4096 * sizeof *luts);
        make_store(&store, in, p->u.bits, p->u.kind, p->u.nslots, p->u.depth, p->channels, luts);
        pad = take_u8(in) % 3;
    }
    uint8_t *body = malloc(in->n ? in->n : 1), *pred_ids = malloc(p->u.height);
    memcpy(body, in->p, in->n);
    imij_entropy_state state;
    size_t row = lane_row(p->u.width, p->u.lanes);
    uint32_t nplanes = p->u.nslots;
    if (!status(imij_entropy_begin(body, in->n, unit, p->reference, &state, pred_ids, p->u.height))) {
        uint32_t rows = block_rows(nplanes, row, p->u.height, luts_needed ? 4 : 8);
        size_t planes_len = (size_t)nplanes * (rows + CARRIED_ROWS) * row;
        uint32_t *planes = calloc(planes_len, sizeof *planes);
        if (luts_needed) {
            aim_store(&store, p->u.width, p->u.height, p->channels, pad);
            status(imij_entropy_store(&state, rows, planes, planes_len, &store));
            free(store.out);
        } else {
            uint32_t *refs = NULL;
            size_t refs_len = 0;
            if (p->reference) {
                refs_len = planes_len;
                refs = calloc(refs_len, sizeof *refs);
            }
            for (uint32_t r0 = 0; r0 < p->u.height; r0 += rows) {
                uint32_t n = p->u.height - r0 < rows ? p->u.height - r0 : rows;
                if (refs) { /* _load_reference: row 1 the row above, rows 2.. the block's, each < 2^n */
                    for (uint32_t s = 0; s < nplanes; s++) {
                        uint32_t *plane = refs + (size_t)s * (rows + CARRIED_ROWS) * row;
                        uint32_t mask = p->u.depth[s] == 32 ? 0xffffffffu : (1u << p->u.depth[s]) - 1;
                        if (r0)
                            memcpy(plane + row, plane + (rows + 1) * row, row * sizeof *plane);
                        for (size_t i = 0; i < (size_t)n * row; i++)
                            plane[CARRIED_ROWS * row + i] = next_rand(&seed) & mask;
                    }
                }
                if (status(imij_entropy_rows(&state, n, rows, planes, planes_len, refs, refs_len)))
                    break;
            }
            free(refs);
        }
        free(planes);
    }
    free(body);
    free(pred_ids);
    free(luts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    params p;
    if (!read_params(&in, &p))
        return 0;
    input models = take_bytes(&in, take_u16(&in));
    imij_slot_model structs[9];
    uint64_t *entries = NULL;
    if (make_models(&models, &p, structs, &entries)) {
        imij_unit unit = {p.u.width, p.u.height, p.u.lanes, p.u.nslots, p.decor, p.u.bits <= 32 && !p.near, structs,
                          p.palette_ok ? structs + p.u.nslots : NULL};
        decode(&in, &p, &unit);
    }
    free(entries);
    return 0;
}
