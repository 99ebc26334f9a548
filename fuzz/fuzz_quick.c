/* fuzz_quick.c: imij_quick_decode (2.13 packet streams) fed as payload/quick/packets.py
 * decode_packets feeds it. Input: byte 0 = channels - 1 (bits 0-1) and log2 of the word bytes
 * (bits 2-3), bytes 1-2 the pixel count (u16 LE), then the stream. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    uint8_t b = take_u8(&in);
    int channels = 1 + (b & 3), word_bytes = 1 << (b >> 2 & 3);
    size_t npixels = take_u16(&in);
    if (npixels > 62 * in.n) /* decode_packets: a shorter stream must end early */
        return 0;
    size_t len = npixels * (size_t)channels * (size_t)word_bytes;
    uint8_t *src = malloc(in.n ? in.n : 1), *dst = malloc(len ? len : 1);
    memcpy(src, in.p, in.n); /* its own allocation: a read past the stream is caught */
    status(imij_quick_decode(src, in.n, dst, len, npixels, channels, word_bytes));
    free(src);
    free(dst);
    return 0;
}
