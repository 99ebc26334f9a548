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

/* ---- 2.13 quick-pixel packet streams ------------------------------------------------------- */

/* Return codes of imij_quick_decode / imij_quick_encode (0 = success; the encoder returns the
 * byte count instead). imij_plugins/payload/quick/packets.py maps each to one message. */
enum {
    IMIJ_QUICK_OK = 0,
    IMIJ_QUICK_E_ARGS = -1,      /* channels not 1..4 or word_bytes not 1, 2, 4, 8 */
    IMIJ_QUICK_E_SIZE = -2,      /* dst_len / src_len is not npixels*channels*word_bytes, or overflow */
    IMIJ_QUICK_E_TRUNCATED = -3, /* the stream ends before the last pixel (or inside an op) */
    IMIJ_QUICK_E_RUN = -4,       /* a RUN passes the unit's pixel count */
    IMIJ_QUICK_E_TRAILING = -5,  /* bytes follow the last pixel */
    IMIJ_QUICK_E_UNEQUAL = -6,   /* 1/2-channel unit whose three colour components differ */
    IMIJ_QUICK_E_SPACE = -7      /* encoder: dst_cap below imij_quick_encode_bound() */
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
 * stream into dst. dst_cap must be at least imij_quick_encode_bound(). Returns the number of
 * bytes written, or a negative IMIJ_QUICK_E_* code. */
int64_t imij_quick_encode(const uint8_t *src, size_t src_len, size_t npixels, int channels,
                          int word_bytes, uint8_t *dst, size_t dst_cap);

#endif /* IMIJ_KERNELS_H */
