/* quick_packets.c: the 2.13 quick-pixel packet stream (QOI's packet families generalized to
 * D = 8, 16, 32, 64-bit words and 1-4 stored components), decoder and greedy encoder.
 *
 * Plain C99, no globals, no allocation. Every byte read from the stream is bounds-checked, every
 * write goes to a pixel slot whose index is below npixels (checked before writing), and the
 * output size npixels*channels*word_bytes is checked against SIZE_MAX before use.
 *
 * The reference for every line here is imij_plugins/payload/quick/packets.py
 * (_decode_packets_py / _encode_packets_py); the two must agree bit for bit.
 */
#include <string.h>

#include "imij_kernels.h"
#include "internal/portable.h"

#define QP_INLINE static IMIJ_ALWAYS_INLINE

/* 2.13: "Let D be the sample storage width (8, 16, 32 or 64). All arithmetic is unsigned
 * modulo 2^D". Words live in uint64_t, masked to D bits after every addition. */
QP_INLINE uint64_t qp_mask(int wb)
{
    return wb == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * wb)) - 1);
}

/* 2.13: "Literal words are little-endian and D/8 bytes each." (gcc/clang merge these loops
 * into single loads/stores for a constant wb.) */
QP_INLINE uint64_t qp_load(const uint8_t *p, int wb)
{
    uint64_t v = 0;
    for (int i = 0; i < wb; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

QP_INLINE void qp_store(uint8_t *p, uint64_t v, int wb)
{
    for (int i = 0; i < wb; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* 2.13: "fold sums all bytes of a word". Only the sum mod 64 matters for the index. */
QP_INLINE unsigned qp_fold(uint64_t v, int wb)
{
    if (wb == 1)
        return (unsigned)v;
    if (wb == 8) {
        /* Pairwise byte sums in four 16-bit lanes (each <= 510), then sum the lanes. */
        uint64_t s = (v & UINT64_C(0x00ff00ff00ff00ff)) + ((v >> 8) & UINT64_C(0x00ff00ff00ff00ff));
        s += s >> 32;
        s += s >> 16;
        return (unsigned)(s & 0xffff);
    }
    unsigned s = 0;
    for (int i = 0; i < wb; i++)
        s += (unsigned)(v >> (8 * i)) & 0xffu;
    return s;
}

/* 2.13: "Its index is (3*fold(r)+5*fold(g)+7*fold(b)+11*fold(a)) mod 64", split so that the
 * decoder keeps 11*fold(a) while a is unchanged (mod 64 is taken by the caller). */
QP_INLINE unsigned qp_hash_rgb(uint64_t r, uint64_t g, uint64_t b, int wb)
{
    return 3u * qp_fold(r, wb) + 5u * qp_fold(g, wb) + 7u * qp_fold(b, wb);
}

QP_INLINE unsigned qp_hash(uint64_t r, uint64_t g, uint64_t b, uint64_t a, int wb)
{
    return (qp_hash_rgb(r, g, b, wb) + 11u * qp_fold(a, wb)) & 63u;
}

/* x + d - bias with d, bias small and non-negative, modulo 2^64 and NOT reduced to D bits:
 * every reader of a word looks at its low D bits only (qp_store writes D/8 bytes, qp_fold sums
 * those bytes, and 2^D is a multiple of 64 for the hash), so the mask is applied only where
 * words are compared (qp_unequal). */
QP_INLINE uint64_t qp_add(uint64_t x, unsigned d, unsigned bias)
{
    return x + (uint64_t)d - (uint64_t)bias;
}

/* Output layout: 1 channel x; 2: x, a; 3: r, g, b; 4: r, g, b, a. */
QP_INLINE void qp_put(uint8_t *o, uint64_t r, uint64_t g, uint64_t b, uint64_t a, int ch, int wb)
{
    qp_store(o, r, wb);
    if (ch == 2) {
        qp_store(o + wb, a, wb);
    } else if (ch >= 3) {
        qp_store(o + wb, g, wb);
        qp_store(o + 2 * wb, b, wb);
        if (ch == 4)
            qp_store(o + 3 * wb, a, wb);
    }
}

/* 2.13: "After every output pixel, insert its complete tuple into the cache": the tuple goes
 * into its cache slot (ha: alpha's share of the hash) and out to o. */
QP_INLINE void qp_emit(uint64_t (*cache)[4], uint8_t *o, uint64_t r, uint64_t g, uint64_t b, uint64_t a, unsigned ha,
                       int ch, int wb)
{
    unsigned h = (qp_hash_rgb(r, g, b, wb) + ha) & 63u;
    cache[h][0] = r;
    cache[h][1] = g;
    cache[h][2] = b;
    cache[h][3] = a;
    qp_put(o, r, g, b, a, ch, wb);
}

/* npixels * channels * word_bytes, or 0 with *ok = 0 on overflow of size_t. */
static size_t qp_size(size_t npixels, size_t pxb, int *ok)
{
    if (pxb != 0 && npixels > SIZE_MAX / pxb) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return npixels * pxb;
}

static int qp_args_ok(int channels, int word_bytes)
{
    return channels >= 1 && channels <= 4 &&
           (word_bytes == 1 || word_bytes == 2 || word_bytes == 4 || word_bytes == 8);
}

/* ---- decoder ------------------------------------------------------------------------------- */

/* 2.13: "For 1/2-channel images the three color components MUST be equal at every output
 * pixel" (compared modulo 2^D: the words are kept unreduced, see qp_add). */
QP_INLINE int qp_unequal(uint64_t r, uint64_t g, uint64_t b, uint64_t mask, int ch)
{
    return ch < 3 && (((r ^ g) | (g ^ b)) & mask) != 0;
}

QP_INLINE int qp_decode_impl(const uint8_t *src, size_t src_len, uint8_t *dst, size_t npixels,
                             const int ch, const int wb)
{
    const uint64_t mask = qp_mask(wb);
    const size_t pxb = (size_t)ch * (size_t)wb;
    /* 2.13: FE reads "one color word for 1/2-channel images or three for 3/4-channel images". */
    const size_t colour_bytes = (ch >= 3 ? 3u : 1u) * (size_t)wb;
    /* 2.13: "Maintain tuple (r,g,b,a), initially (0,0,0,2^D-1), and a 64-entry tuple cache
     * initially all zero." A missing fourth component is still tracked (hidden state). */
    uint64_t cache[64][4];
    uint64_t r = 0, g = 0, b = 0, a = mask;
    unsigned ha = 11u * qp_fold(a, wb); /* a's part of the hash, kept while a is unchanged */
    const uint8_t *p = src, *const end = src + src_len;
    uint8_t *out = dst, *const out_end = dst + npixels * pxb; /* npixels * pxb: checked by caller */

    memset(cache, 0, sizeof cache);

    while (out != out_end) {
        unsigned tag;

        if (p == end)
            return IMIJ_E_TRUNCATED;
        tag = *p++;

        /* 2.13: "Read the next byte, testing literal values before the top-two-bit families":
         * FE/FF are tested first inside the 11 family, the only one they belong to. */
        switch (tag >> 6) {
        case 0: /* 2.13 00xxxxxx: "Replace the tuple with cache entry xxxxxx." */
            r = cache[tag][0];
            g = cache[tag][1];
            b = cache[tag][2];
            a = cache[tag][3];
            ha = 11u * qp_fold(a, wb);
            break;
        case 1: /* 2.13 01rrggbb: "Add each two-bit field minus 2 to r,g,b; preserve a." */
            r = qp_add(r, (tag >> 4) & 3u, 2);
            g = qp_add(g, (tag >> 2) & 3u, 2);
            b = qp_add(b, tag & 3u, 2);
            if (qp_unequal(r, g, b, mask, ch))
                return IMIJ_E_UNEQUAL;
            break;
        case 2: { /* 2.13 10gggggg rrrrbbbb: dg=gggggg-32; add dg+rrrr-8, dg, dg+bbbb-8 */
            unsigned t2, dg = tag & 63u; /* dg + 32 */
            if (p == end)
                return IMIJ_E_TRUNCATED;
            t2 = *p++;
            r = qp_add(r, dg + (t2 >> 4), 40);
            g = qp_add(g, dg, 32);
            b = qp_add(b, dg + (t2 & 15u), 40);
            if (qp_unequal(r, g, b, mask, ch))
                return IMIJ_E_UNEQUAL;
            break;
        }
        default:
            if (tag >= 0xFEu) {
                size_t need = colour_bytes + (tag == 0xFFu ? (size_t)wb : 0u);
                if ((size_t)(end - p) < need)
                    return IMIJ_E_TRUNCATED;
                if (ch >= 3) {
                    r = qp_load(p, wb);
                    g = qp_load(p + wb, wb);
                    b = qp_load(p + 2 * wb, wb);
                } else {
                    /* 2.13: "color literals set all three color tuple components to the same word" */
                    r = g = b = qp_load(p, wb);
                }
                p += colour_bytes;
                if (tag == 0xFFu) { /* 2.13 FF: "As FE, followed by one word for a." */
                    a = qp_load(p, wb);
                    ha = 11u * qp_fold(a, wb);
                    p += wb;
                }
                break;
            }
            {
                /* 2.13 11xxxxxx: "Output the previous tuple xxxxxx+1 times (1-62)." */
                size_t count = (size_t)(tag & 63u) + 1u;
                /* 2.13: runs "MUST NOT exceed its pixel count" */
                if (count * pxb > (size_t)(out_end - out))
                    return IMIJ_E_RUN;
                /* The pixels of a run share one tuple, so one cache insertion stands for all. */
                qp_emit(cache, out, r, g, b, a, ha, ch, wb);
                for (size_t k = 1; k < count; k++)
                    memcpy(out + k * pxb, out, pxb);
                out += count * pxb;
                continue;
            }
        }
        /* (INDEX and FE/FF cannot break the 1/2-channel equality: FE/FF set three equal words
         * and every cache tuple is zero or an earlier, checked output pixel.) */

        qp_emit(cache, out, r, g, b, a, ha, ch, wb);
        out += pxb;
    }

    /* 2.13 packets: "exactly that many pixels and no trailing bytes". */
    if (p != end)
        return IMIJ_E_TRAILING;
    return IMIJ_OK;
}

int imij_quick_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                      size_t npixels, int channels, int word_bytes)
{
    int ok;
    size_t need;

    if (!qp_args_ok(channels, word_bytes))
        return IMIJ_E_ARGS;
    need = qp_size(npixels, (size_t)channels * (size_t)word_bytes, &ok);
    if (!ok || dst_len != need)
        return IMIJ_E_SIZE;
    if (npixels == 0)
        return src_len == 0 ? IMIJ_OK : IMIJ_E_TRAILING;

    /* Switch on (word_bytes, channels) outside the hot loop: 16 specialized copies. */
    switch (word_bytes * 8 + channels) {
    case 1 * 8 + 1: return qp_decode_impl(src, src_len, dst, npixels, 1, 1);
    case 1 * 8 + 2: return qp_decode_impl(src, src_len, dst, npixels, 2, 1);
    case 1 * 8 + 3: return qp_decode_impl(src, src_len, dst, npixels, 3, 1);
    case 1 * 8 + 4: return qp_decode_impl(src, src_len, dst, npixels, 4, 1);
    case 2 * 8 + 1: return qp_decode_impl(src, src_len, dst, npixels, 1, 2);
    case 2 * 8 + 2: return qp_decode_impl(src, src_len, dst, npixels, 2, 2);
    case 2 * 8 + 3: return qp_decode_impl(src, src_len, dst, npixels, 3, 2);
    case 2 * 8 + 4: return qp_decode_impl(src, src_len, dst, npixels, 4, 2);
    case 4 * 8 + 1: return qp_decode_impl(src, src_len, dst, npixels, 1, 4);
    case 4 * 8 + 2: return qp_decode_impl(src, src_len, dst, npixels, 2, 4);
    case 4 * 8 + 3: return qp_decode_impl(src, src_len, dst, npixels, 3, 4);
    case 4 * 8 + 4: return qp_decode_impl(src, src_len, dst, npixels, 4, 4);
    case 8 * 8 + 1: return qp_decode_impl(src, src_len, dst, npixels, 1, 8);
    case 8 * 8 + 2: return qp_decode_impl(src, src_len, dst, npixels, 2, 8);
    case 8 * 8 + 3: return qp_decode_impl(src, src_len, dst, npixels, 3, 8);
    case 8 * 8 + 4: return qp_decode_impl(src, src_len, dst, npixels, 4, 8);
    default: return IMIJ_E_ARGS;
    }
}

/* ---- encoder ------------------------------------------------------------------------------- */

size_t imij_quick_encode_bound(size_t npixels, int channels, int word_bytes)
{
    /* Worst case one literal per pixel: the tag plus one word per stored component
     * (1-channel FE x; 2-channel FF x a; 3-channel FE r g b; 4-channel FF r g b a). */
    int ok;
    size_t n;
    if (!qp_args_ok(channels, word_bytes))
        return 0;
    n = qp_size(npixels, 1u + (size_t)channels * (size_t)word_bytes, &ok);
    return ok ? n : 0;
}

/* The greedy QOI-style encoder, mirroring the decoder's state exactly (including the cache
 * insertion of run pixels, which only matters for a run at the very first pixel). Per pixel:
 * RUN of the previous tuple (flushed at 62 or at the end), else INDEX on a hit at the pixel's
 * own hash slot, else DIFF, else LUMA (when a is unchanged), else FE, or FF when a changes.
 * For 1/2-channel images r = g = b always, so DIFF has three equal fields and LUMA has
 * rrrr = bbbb = 8: every op written is valid there. */
QP_INLINE int64_t qp_encode_impl(const uint8_t *src, size_t npixels, const int ch, const int wb,
                                 uint8_t *dst, size_t limit)
{
    const uint64_t mask = qp_mask(wb);
    const size_t pxb = (size_t)ch * (size_t)wb;
    uint64_t cache[64][4];
    uint64_t pr = 0, pg = 0, pb = 0, pa = mask;
    unsigned run = 0;
    uint8_t *o = dst;

    memset(cache, 0, sizeof cache);

    for (size_t i = 0; i < npixels; i++) {
        const uint8_t *s = src + i * pxb;
        uint64_t r, g, b, a;
        unsigned h;

        if ((size_t)(o - dst) > limit) /* fewer bytes free than one pixel's largest output */
            return IMIJ_E_SPACE;

        if (ch >= 3) {
            r = qp_load(s, wb);
            g = qp_load(s + wb, wb);
            b = qp_load(s + 2 * wb, wb);
            a = ch == 4 ? qp_load(s + 3 * wb, wb) : mask;
        } else {
            r = g = b = qp_load(s, wb);
            a = ch == 2 ? qp_load(s + wb, wb) : mask;
        }

        if (r == pr && g == pg && b == pb && a == pa) {
            if (i == 0) { /* the decoder inserts the initial tuple when a run opens the stream */
                h = qp_hash(r, g, b, a, wb);
                cache[h][0] = r;
                cache[h][1] = g;
                cache[h][2] = b;
                cache[h][3] = a;
            }
            run++;
            if (run == 62u || i + 1 == npixels) {
                *o++ = (uint8_t)(0xC0u | (run - 1u));
                run = 0;
            }
            continue;
        }
        if (run) {
            *o++ = (uint8_t)(0xC0u | (run - 1u));
            run = 0;
        }

        h = qp_hash(r, g, b, a, wb);
        if (cache[h][0] == r && cache[h][1] == g && cache[h][2] == b && cache[h][3] == a) {
            *o++ = (uint8_t)h; /* INDEX */
        } else {
            cache[h][0] = r;
            cache[h][1] = g;
            cache[h][2] = b;
            cache[h][3] = a;
            if (a == pa) {
                /* Differences modulo 2^D, biased so that "in range" is one unsigned compare. */
                uint64_t dr = (r - pr) & mask, dg = (g - pg) & mask, db = (b - pb) & mask;
                uint64_t fr = (dr + 2u) & mask, fg = (dg + 2u) & mask, fb = (db + 2u) & mask;
                uint64_t lg, lr, lb;
                if (fr <= 3u && fg <= 3u && fb <= 3u) {
                    *o++ = (uint8_t)(0x40u | (unsigned)(fr << 4) | (unsigned)(fg << 2) | (unsigned)fb);
                    goto next;
                }
                lg = (dg + 32u) & mask;
                lr = (dr - dg + 8u) & mask;
                lb = (db - dg + 8u) & mask;
                if (lg <= 63u && lr <= 15u && lb <= 15u) {
                    *o++ = (uint8_t)(0x80u | (unsigned)lg);
                    *o++ = (uint8_t)((unsigned)(lr << 4) | (unsigned)lb);
                    goto next;
                }
                *o++ = 0xFEu;
            } else {
                *o++ = 0xFFu;
            }
            if (ch >= 3) {
                qp_store(o, r, wb);
                qp_store(o + wb, g, wb);
                qp_store(o + 2 * wb, b, wb);
                o += 3 * wb;
            } else {
                qp_store(o, r, wb);
                o += wb;
            }
            if (a != pa) {
                qp_store(o, a, wb);
                o += wb;
            }
        }
    next:
        pr = r;
        pg = g;
        pb = b;
        pa = a;
    }
    return (int64_t)(o - dst);
}

int64_t imij_quick_encode(const uint8_t *src, size_t src_len, size_t npixels, int channels,
                          int word_bytes, uint8_t *dst, size_t dst_cap)
{
    int ok;
    size_t need, bound;

    if (!qp_args_ok(channels, word_bytes))
        return IMIJ_E_ARGS;
    need = qp_size(npixels, (size_t)channels * (size_t)word_bytes, &ok);
    if (!ok || src_len != need)
        return IMIJ_E_SIZE;
    if (npixels == 0)
        return 0;
    bound = imij_quick_encode_bound(npixels, channels, word_bytes);
    if (bound == 0 || bound > (size_t)INT64_MAX)
        return IMIJ_E_SIZE;
    /* below the bound: stop once fewer bytes are free than a pixel may write (a pending run
     * byte and its largest op) */
    size_t step = 2 + (size_t)channels * (size_t)word_bytes, limit = SIZE_MAX;
    if (dst_cap < bound) {
        if (dst_cap < step)
            return IMIJ_E_SPACE;
        limit = dst_cap - step;
    }

    switch (word_bytes * 8 + channels) {
    case 1 * 8 + 1: return qp_encode_impl(src, npixels, 1, 1, dst, limit);
    case 1 * 8 + 2: return qp_encode_impl(src, npixels, 2, 1, dst, limit);
    case 1 * 8 + 3: return qp_encode_impl(src, npixels, 3, 1, dst, limit);
    case 1 * 8 + 4: return qp_encode_impl(src, npixels, 4, 1, dst, limit);
    case 2 * 8 + 1: return qp_encode_impl(src, npixels, 1, 2, dst, limit);
    case 2 * 8 + 2: return qp_encode_impl(src, npixels, 2, 2, dst, limit);
    case 2 * 8 + 3: return qp_encode_impl(src, npixels, 3, 2, dst, limit);
    case 2 * 8 + 4: return qp_encode_impl(src, npixels, 4, 2, dst, limit);
    case 4 * 8 + 1: return qp_encode_impl(src, npixels, 1, 4, dst, limit);
    case 4 * 8 + 2: return qp_encode_impl(src, npixels, 2, 4, dst, limit);
    case 4 * 8 + 3: return qp_encode_impl(src, npixels, 3, 4, dst, limit);
    case 4 * 8 + 4: return qp_encode_impl(src, npixels, 4, 4, dst, limit);
    case 8 * 8 + 1: return qp_encode_impl(src, npixels, 1, 8, dst, limit);
    case 8 * 8 + 2: return qp_encode_impl(src, npixels, 2, 8, dst, limit);
    case 8 * 8 + 3: return qp_encode_impl(src, npixels, 3, 8, dst, limit);
    case 8 * 8 + 4: return qp_encode_impl(src, npixels, 4, 8, dst, limit);
    default: return IMIJ_E_ARGS;
    }
}
