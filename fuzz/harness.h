/* harness.h: what every libFuzzer harness in fuzz/ shares: a reader of the fuzz input's parameter
 * prefix, lane geometry (2.3), and the sample store the Python layer builds for a unit
 * (imij_plugins/payload/entropy/kernel.py _store_struct / _store_into), made from fuzz bytes but
 * only in states that Python can produce. */
#ifndef FUZZ_HARNESS_H
#define FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imij_kernels.h"

/* A kernel's return value, checked: IMIJ_OK or a code of enum imij_status (every one has its
 * imij_strerror text, so a caller can map it); any other value stops the harness. */
static int status(int s)
{
    if (s != IMIJ_OK && !strcmp(imij_strerror(s), "unknown status"))
        abort();
    return s;
}

/* The input, consumed from the front: parameters first, then the untrusted payload. */
typedef struct {
    const uint8_t *p;
    size_t n;
} input;

/* The next byte, or 0 once the input is exhausted (a short input still makes a valid call). */
static uint8_t take_u8(input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint16_t take_u16(input *in)
{
    uint16_t lo = take_u8(in);
    return (uint16_t)(lo | (uint16_t)take_u8(in) << 8);
}

static uint32_t take_u32(input *in)
{
    uint32_t lo = take_u16(in);
    return lo | (uint32_t)take_u16(in) << 16;
}

/* Up to `len` bytes of the input as one field (a record, a models stream). */
static input take_bytes(input *in, size_t len)
{
    input part = {in->p, len < in->n ? len : in->n};
    in->p += part.n;
    in->n -= part.n;
    return part;
}

/* A small deterministic generator for reference planes, tables and Const words. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* 2.3: lanes of width lw = ceil(w / L), the non-empty prefix active; a scratch row is lw * active. */
static size_t lane_row(uint32_t width, uint32_t lanes)
{
    uint32_t lw = (width + lanes - 1) / lanes;
    uint32_t active = (width + lw - 1) / lw;
    return (size_t)lw * active;
}

/* Sample kinds of the header's sample type (2.1's order maps). */
enum { KIND_U = 0, KIND_I = 1, KIND_F = 2 };

/* What both unit harnesses read after their flags byte: the header's sample type, the slots
 * (1..=4, 1..=8 with 64-bit samples: a hi and a lo word per channel) and their depths (0..=the
 * sample's word: Lsb and Offset maps may have 0 bits, 2.1), lanes 1..=16 (2) and the unit, up to
 * MAX_WIDTH x MAX_HEIGHT (a stripe of a wide image). */
enum { MAX_WIDTH = 4096, MAX_HEIGHT = 512 };

typedef struct {
    uint32_t bits, kind, nslots, depth[8], lanes, width, height;
} unit_shape;

static void take_shape(input *in, uint8_t flags, unit_shape *u)
{
    static const uint32_t BITS[4] = {8, 16, 32, 64};
    uint8_t kind = take_u8(in), ns = take_u8(in);
    u->bits = BITS[flags & 3];
    u->kind = kind % 3 == KIND_F && u->bits == 8 ? KIND_U : kind % 3; /* no 8-bit floats */
    u->nslots = 1 + ns % (u->bits == 64 ? 8 : 4);
    uint32_t word = u->bits == 64 ? 32 : u->bits;
    for (int s = 0; s < 8; s++)
        u->depth[s] = take_u8(in) % (word + 1);
    u->lanes = 1 + take_u8(in) % 16;
    u->width = 1 + take_u16(in) % MAX_WIDTH;
    u->height = 1 + take_u16(in) % MAX_HEIGHT;
}

/* Const channels beside the slots: at most 4 channels below 64-bit samples. */
static uint32_t take_channels(input *in, uint32_t nslots)
{
    uint32_t channels = nslots + take_u8(in) % (5 - (nslots > 4 ? 4 : nslots));
    return channels > 4 ? nslots : channels;
}

/* kernel.py _store_struct of a plan with `nslots` slots of `depth` coded bits on `bits`-bit
 * samples (8, 16 or 32) of `kind`, `channels` channels (the others Const): per slot a Lsb, Shift,
 * Offset (32-bit words) or, up to LUT_BITS (12) coded bits, a table of its 2^depth words; `luts`
 * receives the tables (8 x 4096 words, the caller's). */
static void make_store(imij_sample_store *st, input *in, uint32_t bits, uint32_t kind, uint32_t nslots,
                       const uint32_t *depth, uint32_t channels, uint32_t *luts)
{
    uint32_t seed = take_u32(in) | 1u, top = bits - 1, mask = bits == 32 ? 0xffffffffu : (1u << bits) - 1;
    memset(st, 0, sizeof *st);
    st->esize = bits / 8;
    st->nslots = nslots;
    for (uint32_t s = 0; s < nslots; s++) {
        uint8_t map = take_u8(in);
        st->channel[s] = s;
        st->top[s] = top;
        if (depth[s] <= 12 && map % 3 == 2) { /* Replicate, Table, ...: words tabulated */
            uint32_t *lut = luts + (size_t)s * 4096;
            for (uint32_t v = 0; v < (1u << depth[s]); v++)
                lut[v] = next_rand(&seed) & mask;
            st->lut[s] = lut;
            continue;
        }
        st->shift[s] = map % 3 == 1 && depth[s] ? bits - depth[s] : 0; /* Shift (bits >= 1): s << (D - bits), else Lsb */
        st->add[s] = bits == 32 && map & 4 ? next_rand(&seed) : 0; /* Offset mod 2^32 */
        st->flip[s] = kind == KIND_I ? 1u << top : 0;
        st->neg_flip[s] = kind == KIND_F ? (1u << top) - 1 : 0;
    }
    st->nconst = channels - nslots;
    for (uint32_t c = 0; c < st->nconst; c++) {
        st->const_channel[c] = nslots + c;
        st->const_word[c] = next_rand(&seed) & mask;
    }
}

/* kernel.py _store_into: an output of `height` rows of `width` pixels inside an image `pad`
 * pixels wider (a unit in its rectangle); returns the buffer, exactly out_len bytes. */
static uint8_t *aim_store(imij_sample_store *st, uint32_t width, uint32_t height, uint32_t channels, uint32_t pad)
{
    size_t pixel = (size_t)channels * st->esize;
    st->pixel_stride = (int64_t)pixel;
    st->row_stride = (int64_t)(pixel * (width + pad));
    st->out_len = (size_t)st->row_stride * (height - 1) + pixel * width;
    st->out = malloc(st->out_len);
    return st->out;
}

#endif
