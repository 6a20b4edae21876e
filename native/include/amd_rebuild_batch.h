/* Receiver rebuild of a whole received batch into a table of images (docs/logbuffer.md section 7): a family
 * of its own, wrapped by driver/concurrent/logbuffer/term_rebuilder.py alone (the per-term functions of
 * amd_rebuild.h belong to driver/concurrent/atomic_buffer.py, which owns the term pointers).
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations
 * plain C. */
#ifndef AMD_REBUILD_BATCH_H
#define AMD_REBUILD_BATCH_H
#include <stdint.h>

/* One image the batch rebuild may insert into (filled by driver/concurrent/logbuffer/term_rebuilder.py).
 * "in" fields are read, "out" fields accumulate (the caller zeroes them). */
typedef struct
{
    uint8_t *terms[3];                /* in: the image's three term buffers */
    int64_t last_sm_position;         /* in: a datagram starting below this is an under-run */
    int64_t window_limit;             /* in: a datagram ending above this is an over-run */
    int64_t hwm_position;             /* out: highest end position of an inserted datagram (0: none) */
    int32_t session_id;               /* in */
    int32_t stream_id;                /* in */
    int32_t initial_term_id;          /* in */
    int32_t position_bits_to_shift;   /* in */
    int32_t term_length;              /* in */
    int32_t is_accepting;             /* in: 0 leaves every datagram of this image to the caller */
    int32_t inserted;                 /* out: datagrams inserted (duplicates included) */
    int32_t under_runs;               /* out */
    int32_t over_runs;                /* out */
    int32_t invalid;                  /* out: datagrams the insert rejected (nothing written) */
} amd_rebuild_image;

int32_t amd_term_rebuild_batch(
    const uint8_t *slots, int32_t slot_length, const int32_t *lengths, int32_t count, amd_rebuild_image *images,
    int32_t image_count, int32_t *unhandled, int64_t *bytes_received);

/* The same over datagrams at base + offsets[i] (a split coalesced receive, amd_udp_recv_batch_gro). */
int32_t amd_term_rebuild_batch_at(
    const uint8_t *base, const int64_t *offsets, const int32_t *lengths, int32_t count, amd_rebuild_image *images,
    int32_t image_count, int32_t *unhandled, int64_t *bytes_received);
#endif
