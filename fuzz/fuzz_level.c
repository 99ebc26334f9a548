/* fuzz_level.c: bilevel (2.10) and template palette (2.14) stripes (csrc/bilevel.c), fed as
 * payload/entropy/levels.py feeds them: head records 25 and 35 parsed as bilevel.py
 * read_bilevel_record and template.py read_template_record parse them (with the C readers they
 * call: imij_read_used_values, imij_read_table), made into structs as LevelStructs, then
 * imij_level_unit_decode into coded planes (levels.py decode_level_c) or imij_level_unit_store
 * through a sample store (kernel.py decode_unit_c, stored).
 *
 * Input: a parameter prefix (read_params), u16 LE record 25 length (0: absent), record 25, u16 LE
 * record 35 length (0: absent), record 35, then the unit record body. A record is present only
 * with its feature (head.py gates it). */
#include "harness.h"

typedef struct {
    unit_shape u;
    uint32_t store, features, channels;
} params;

static void read_params(input *in, params *p)
{
    uint8_t f = take_u8(in);
    memset(p, 0, sizeof *p);
    take_shape(in, f, &p->u);
    p->store = f >> 2 & 1;
    p->features = f >> 3 & 3;
    p->channels = take_channels(in, p->u.nslots);
}

/* wire/bits.py BitReader over one record: LSB-first, past the end an error. */
typedef struct {
    const uint8_t *buf;
    size_t len;
    uint64_t pos;
    int bad;
} bits;

static uint32_t read_bits(bits *b, uint32_t n)
{
    uint32_t v = 0;
    if (b->pos + n > 8 * (uint64_t)b->len) {
        b->bad = 1;
        return 0;
    }
    for (uint32_t i = 0; i < n; i++, b->pos++)
        v |= (uint32_t)(b->buf[b->pos >> 3] >> (b->pos & 7) & 1) << i;
    return v;
}

/* template.py _probabilities (and bilevel.py's 11-bit ones): 0 when rejected. */
static int probabilities(bits *b, uint32_t count, uint32_t nb, uint16_t *out)
{
    uint16_t values[1024];
    uint8_t used[1024];
    if (status(imij_read_used_values(b->buf, b->len, &b->pos, count, nb, values, used)))
        return 0;
    for (uint32_t c = 0; c < count; c++) {
        if (nb == 11 && values[c] > 1024)
            return 0;
        out[c] = used[c] ? (uint16_t)(nb == 11 ? values[c] : values[c] << (10 - nb)) : 512;
    }
    return 1;
}

static int exact(const bits *b)
{
    return !b->bad && b->len == (b->pos + 7) / 8; /* exactly ceil(bits / 8) bytes */
}

static int read_bilevel(const input *rec, imij_bilevel_table *t)
{
    bits b = {rec->p, rec->n, 0, 0};
    t->inv = read_bits(&b, 1);
    return !b.bad && probabilities(&b, 1024, 11, t->prob) && exact(&b);
}

static int read_template(const input *rec, const params *p, imij_template_tables *t)
{
    bits b = {rec->p, rec->n, 0, 0};
    memset(t, 0, sizeof *t);
    uint32_t nb = 4 + read_bits(&b, 3);
    if (b.bad || !probabilities(&b, 1024, nb, t->p) || !probabilities(&b, 40, nb, t->q))
        return 0;
    if (read_bits(&b, 1)) { /* the direct-index table, over 256 symbols without run tokens */
        uint32_t last, weights[256], freq[256];
        if (b.bad || status(imij_read_table(b.buf, b.len, &b.pos, 256, 256, &last, weights, freq)))
            return 0;
        t->escape = 1;
        for (uint32_t s = 0, cum = 0; s <= last; cum += freq[s++]) {
            t->freq[s] = (uint16_t)freq[s];
            t->cum[s] = (uint16_t)cum;
            memset(t->lookup + cum, (int)s, freq[s]);
        }
    }
    if (read_bits(&b, 1)) {
        for (uint32_t s = 0; s < p->u.nslots; s++)
            if (p->u.depth[s] > 16)
                return 0; /* 2.14: shared entries with a slot above 16 bits */
        t->nshared = read_bits(&b, 8) + 1;
        for (uint32_t e = 0; e < t->nshared; e++)
            for (uint32_t s = 0; s < p->u.nslots; s++) {
                uint32_t v = read_bits(&b, p->u.depth[s]);
                if (s < 8)
                    t->shared[e][s] = (uint16_t)v;
            }
    }
    return exact(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    params p;
    read_params(&in, &p);
    input r25 = take_bytes(&in, take_u16(&in)), r35 = take_bytes(&in, take_u16(&in));
    static imij_bilevel_table bt;
    static imij_template_tables tt;
    int has25 = r25.n && (p.features & 1), has35 = r35.n && (p.features & 2);
    if ((has25 && !read_bilevel(&r25, &bt)) || (has35 && !read_template(&r35, &p, &tt)))
        return 0; /* decoder.prepare rejects the payload before any unit */
    uint32_t widest = p.u.bits;
    for (uint32_t s = 0; s < p.u.nslots; s++)
        widest = p.u.depth[s] > widest ? p.u.depth[s] : widest;
    imij_level_unit unit = {p.u.width, p.u.height, p.u.lanes, p.u.nslots, {0}, 0, p.features,
                            has25 ? &bt : NULL, has35 ? &tt : NULL};
    memcpy(unit.depth, p.u.depth, sizeof unit.depth);
    size_t index_len = 3 * ((size_t)p.u.width + 4) + 16; /* levels.py ring_bytes */
    uint8_t *index = malloc(index_len);
    if (p.store && p.u.bits <= 32) {
        imij_sample_store store;
        uint32_t *luts = malloc(8 * 4096 * sizeof *luts);
        make_store(&store, &in, p.u.bits, p.u.kind, p.u.nslots, p.u.depth, p.channels, luts);
        aim_store(&store, p.u.width, p.u.height, p.channels, take_u8(&in) % 3);
        uint8_t *body = malloc(in.n ? in.n : 1);
        memcpy(body, in.p, in.n);
        status(imij_level_unit_store(body, in.n, &unit, &store, index, index_len));
        free(body);
        free(store.out);
        free(luts);
    } else {
        unit.out_bytes = widest <= 8 ? 1 : widest <= 16 ? 2 : 4; /* levels.py _plane_dtype */
        size_t out_len = (size_t)p.u.nslots * p.u.width * p.u.height * unit.out_bytes;
        uint8_t *out = malloc(out_len), *body = malloc(in.n ? in.n : 1);
        memcpy(body, in.p, in.n);
        status(imij_level_unit_decode(body, in.n, &unit, out, out_len, index, index_len));
        free(body);
        free(out);
    }
    free(index);
    return 0;
}
