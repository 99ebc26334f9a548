/* fuzz_models.c: the models reader (csrc/models.c) fed as payload/entropy/models.py and
 * bilevel.py feed it. Byte 0 picks the entry point: imij_read_models (slot specs from the next
 * bytes: count, then per model its depth and cross flag, with the scheme tables of
 * fuzz/build/schemes.h, i.e. _scheme_table), imij_read_table (the direct-index table of 2.14 or a
 * model's scheme) or imij_read_used_values (records 25 / 35: 1024 or 40 values of 1..=16 bits).
 * The rest is the bit stream. */
#include "harness.h"
#include "schemes.h"

/* A copy of the stream in its own allocation, so a read past it is caught. */
static uint8_t *own(const input *in)
{
    uint8_t *buf = malloc(in->n ? in->n : 1);
    memcpy(buf, in->p, in->n);
    return buf;
}

static void read_models(input *in)
{
    uint32_t count = 1 + take_u8(in) % 9, depths[9];
    uint8_t cross[9], flags = take_u8(in);
    uint16_t schemes[9 * 512];
    for (uint32_t i = 0; i < count; i++) {
        depths[i] = take_u8(in) % 33; /* slots of 0..=32 coded bits (64-bit samples: two words) */
        cross[i] = i >= 1 && (flags >> i & 1); /* 3.3 / R1: never the first slot */
        memcpy(schemes + 512 * i, SCHEMES[depths[i]], sizeof SCHEMES[0]);
    }
    if (flags & 1) { /* the palette index model: depth 8, no cross */
        depths[count - 1] = 8;
        cross[count - 1] = 0;
        memcpy(schemes + 512 * (count - 1), SCHEMES[8], sizeof SCHEMES[0]);
    }
    imij_model_head heads[9];
    uint32_t *last = calloc(4 * count, 4), *weights = calloc(4 * count * 256, 4), *freq = calloc(4 * count * 256, 4);
    uint8_t *buf = own(in);
    uint64_t pos = 0;
    status(imij_read_models(buf, in->n, &pos, count, depths, cross, schemes, heads, count, last, weights, freq,
                            4 * count));
    free(buf);
    free(last);
    free(weights);
    free(freq);
}

static void read_table(input *in)
{
    uint8_t which = take_u8(in), depth = take_u8(in) % 33, km = take_u8(in);
    uint32_t alphabet = 256, capped = 256; /* template.py _IndexScheme */
    if (which & 1) { /* a model's table: a scheme its depth allows */
        const uint16_t *s = SCHEMES[depth] + 2 * km;
        if (!s[0])
            return;
        alphabet = s[0];
        capped = s[1];
    }
    uint32_t last, weights[256], freq[256];
    uint64_t pos = take_u8(in) % 8; /* a table starts at any bit */
    uint8_t *buf = own(in);
    if (pos <= 8 * (uint64_t)in->n)
        status(imij_read_table(buf, in->n, &pos, alphabet, capped, &last, weights, freq));
    free(buf);
}

static void read_used(input *in)
{
    uint8_t b = take_u8(in);
    uint32_t count = b & 1 ? 40 : 1024, bits = 1 + (b >> 1) % 16;
    uint16_t values[1024];
    uint8_t used[1024];
    uint64_t pos = take_u8(in) % 8;
    uint8_t *buf = own(in);
    if (pos <= 8 * (uint64_t)in->n)
        status(imij_read_used_values(buf, in->n, &pos, count, bits, values, used));
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    switch (take_u8(&in) % 3) {
    case 0:
        read_models(&in);
        break;
    case 1:
        read_table(&in);
        break;
    default:
        read_used(&in);
    }
    return 0;
}
