/* The whole of a publication's offer in one call: limit check, term checks, the append (unfragmented or
 * fragmented) and log rotation, as Aeron 1.15.1's ConcurrentPublication.offer and ExclusivePublication.offer.
 * This header is also the cffi cdef (preprocessor lines are dropped). */
#ifndef AMD_PUBLICATION_H
#define AMD_PUBLICATION_H
#include <stdint.h>

/* Results other than a new position (> 0); the first five are Publication's public codes. */
enum
{
    AMD_OFFER_NOT_CONNECTED = -1,
    AMD_OFFER_BACK_PRESSURED = -2,
    AMD_OFFER_ADMIN_ACTION = -3,
    AMD_OFFER_MAX_POSITION_EXCEEDED = -5,
    AMD_OFFER_MESSAGE_TOO_LONG = -100,
    AMD_OFFER_TERM_ID_MISMATCH = -101
};

/* Everything an offer needs that does not change between offers; filled once per publication. The
 * pointers are into mappings owned by the caller, which must outlive every offer. */
typedef struct
{
    uint8_t *log;               /* term 0; terms are contiguous, term i at log + i * term_length */
    uint8_t *meta;              /* the log's metadata section */
    const uint8_t *limit;       /* the publisher-limit counter's int64 value */
    int32_t term_length;
    int32_t position_bits_to_shift;
    int32_t initial_term_id;
    int32_t max_payload_length;
    int32_t max_message_length;
    int64_t max_possible_position;
    uint8_t header_template[32];
} amd_publication_t;

int64_t amd_publication_offer(
    const amd_publication_t *publication, const uint8_t *src, int32_t length, int64_t reserved_value);

/* Many unfragmented messages (each at most max_payload_length) offered back to back with ONE fetch-and-add on
 * the tail for all of them: an offer's fetch-and-add is a full barrier that waits for the previous frame's
 * stores, so one per message bounded a vectored offer. Taken from the front while each message starts before
 * the limit, as consecutive offers would; when the space crosses the end of the term, the frames that fit are
 * written, the rest of the term padded and the log rotated. *sent is how many went; returns the position
 * after the last, or, when none went, the code amd_publication_offer would have returned for the first. */
int64_t amd_publication_offer_block(
    const amd_publication_t *publication, const uint8_t *const *sources, const int32_t *lengths, int32_t count,
    int32_t *sent);

/* An exclusive publication (one publisher only): the constants plus where it is, which it keeps to itself
 * (Aeron 1.15.1's ExclusivePublication fields). Each offer reads and moves the position fields; the owner's
 * other appends (claims, padding, blocks) read and write the same fields. */
typedef struct
{
    amd_publication_t constants;
    int64_t term_begin_position;
    int32_t term_id;
    int32_t term_offset;
    int32_t active_partition_index;
} amd_exclusive_publication_t;

/* ExclusivePublication.offer: the limit check, the append (tail stored with a release store, then the
 * frames, each committed by a release store of its length) and, at the end of a term, the rotation to
 * the next (ADMIN_ACTION), with no atomic read-modify-write. Same results as amd_publication_offer. */
int64_t amd_exclusive_publication_offer(
    amd_exclusive_publication_t *publication, const uint8_t *src, int32_t length, int64_t reserved_value);

/* tryClaim of one unfragmented frame of `length` payload bytes (at most max_payload_length, else
 * MESSAGE_TOO_LONG): as the offers, but the frame's header is written with its length negated and nothing
 * else; the caller fills the payload and commits with a release store of the positive length (or aborts).
 * On success (a new position) the frame's term offset and partition index go to *frame_offset and
 * *partition. */
int64_t amd_publication_claim(
    const amd_publication_t *publication, int32_t length, int32_t *frame_offset, int32_t *partition);
int64_t amd_exclusive_publication_claim(
    amd_exclusive_publication_t *publication, int32_t length, int32_t *frame_offset, int32_t *partition);
#endif
