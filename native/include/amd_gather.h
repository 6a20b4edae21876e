/* Payloads of recorded frames gathered into one buffer: the Spark recording source's messages
 * (driver/analysis/payload_gather.py; docs/spark.md). This header is also the cffi cdef: keep declarations plain C. */
#ifndef AMD_GATHER_H
#define AMD_GATHER_H
#include <stdint.h>

/* Copies the payload of each of count frames, bytes [offsets[i] + 32, offsets[i] + lengths[i]) of base (the
 * frame's bytes after its 32-byte header), to out one after the other, in order, so a message's fragments end up
 * joined. Checks every frame first: one outside base[0, size), shorter than its header, or payloads of more than
 * capacity bytes in all make it return -1 with nothing written. Returns the bytes written. */
int64_t amd_gather_payloads(
    const uint8_t *base, int64_t size, const int64_t *offsets, const int64_t *lengths, int64_t count,
    uint8_t *out, int64_t capacity);
#endif
