/* See native/README.md for the memory-ordering contract. Log metadata offsets: docs/logbuffer.md §2. */
#include "amd_publication.h"
#include <stddef.h>
#include "amd_term.h"

#define TAIL_COUNTERS_OFFSET 0
#define ACTIVE_TERM_COUNT_OFFSET 24
#define IS_CONNECTED_OFFSET 136
#define PARTITION_COUNT 3
#define ALIGN_FRAME(length) (((int64_t)(length) + (AMD_FRAME_ALIGNMENT - 1)) & ~(int64_t)(AMD_FRAME_ALIGNMENT - 1))

/* LogBufferDescriptor.rotateLog: move the next partition's tail to the next term (unless another
 * publisher already did), then advance the active term count from the one this offer saw. */
static void rotate_log(uint8_t *meta, int32_t term_count, int32_t term_id)
{
    const int32_t next_term_id = (int32_t)((uint32_t)term_id + 1);
    const int32_t next_term_count = (int32_t)((uint32_t)term_count + 1);
    const int next_index = (int)((uint32_t)next_term_count % PARTITION_COUNT);
    const int32_t expected_term_id = (int32_t)((uint32_t)next_term_id - PARTITION_COUNT);
    int64_t *tail = (int64_t *)(meta + TAIL_COUNTERS_OFFSET + next_index * 8);
    int64_t raw_tail = __atomic_load_n(tail, __ATOMIC_SEQ_CST);
    while ((int32_t)(raw_tail >> 32) == expected_term_id)
    {
        const int64_t new_tail = (int64_t)((uint64_t)(uint32_t)next_term_id << 32);
        if (__atomic_compare_exchange_n(tail, &raw_tail, new_tail, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        {
            break;
        }
    }
    int32_t expected = term_count;
    __atomic_compare_exchange_n(
        (int32_t *)(meta + ACTIVE_TERM_COUNT_OFFSET), &expected, next_term_count, 0, __ATOMIC_SEQ_CST,
        __ATOMIC_SEQ_CST);
}

/* Publication.backPressureStatus: the result of an offer at or beyond the publisher limit. */
static inline int64_t back_pressure_status(const amd_publication_t *p, int64_t position, int32_t length)
{
    if (position + length >= p->max_possible_position)
    {
        return AMD_OFFER_MAX_POSITION_EXCEEDED;
    }
    return __atomic_load_n((const int32_t *)(p->meta + IS_CONNECTED_OFFSET), __ATOMIC_ACQUIRE) == 1
        ? AMD_OFFER_BACK_PRESSURED
        : AMD_OFFER_NOT_CONNECTED;
}

/* ConcurrentPublication.offer and tryClaim: the checks, then the append: the message (unfragmented or
 * fragmented) or, for a claim (claim_offset != NULL), one frame's header with its length negated, whose term
 * offset and partition go to *claim_offset and *claim_partition. */
static inline int64_t offer_or_claim(
    const amd_publication_t *p, const uint8_t *src, int32_t length, int64_t reserved_value, int32_t *claim_offset,
    int32_t *claim_partition)
{
    uint8_t *meta = p->meta;
    const int64_t limit = __atomic_load_n((const int64_t *)p->limit, __ATOMIC_ACQUIRE);
    const int32_t term_count = __atomic_load_n((const int32_t *)(meta + ACTIVE_TERM_COUNT_OFFSET), __ATOMIC_ACQUIRE);
    const int index = (int)((uint32_t)term_count % PARTITION_COUNT);
    const int64_t raw_tail =
        __atomic_load_n((const int64_t *)(meta + TAIL_COUNTERS_OFFSET + index * 8), __ATOMIC_ACQUIRE);
    const int32_t term_offset = (int32_t)(raw_tail & 0xFFFFFFFFLL);
    const int32_t term_id = (int32_t)(raw_tail >> 32);

    if (term_count != (int32_t)((uint32_t)term_id - (uint32_t)p->initial_term_id))
    {
        return AMD_OFFER_ADMIN_ACTION; /* another publisher is between the tail and the term count */
    }

    const int64_t position = ((int64_t)term_count << p->position_bits_to_shift) + term_offset;
    if (position < limit)
    {
        uint8_t *term = p->log + (int64_t)index * p->term_length;
        const int64_t tail_offset = TAIL_COUNTERS_OFFSET + index * 8;
        int64_t result;
        if (claim_offset != NULL)
        {
            result = amd_term_claim(term, p->term_length, meta, tail_offset, term_id, p->header_template, length);
            if (result > 0)
            {
                *claim_offset = (int32_t)(result - ALIGN_FRAME((int64_t)length + AMD_DATA_HEADER_LENGTH));
                *claim_partition = index;
            }
        }
        else if (length <= p->max_payload_length)
        {
            result = amd_term_append_unfragmented(
                term, p->term_length, meta, tail_offset, term_id, p->header_template, src, length, reserved_value);
        }
        else
        {
            result = amd_term_append_fragmented(
                term, p->term_length, meta, tail_offset, term_id, p->header_template, src, length,
                p->max_payload_length, reserved_value);
        }

        if (result > 0)
        {
            return position - term_offset + result;
        }
        if (result == AMD_APPEND_TERM_ID_MISMATCH)
        {
            return AMD_OFFER_TERM_ID_MISMATCH;
        }
        if (position + term_offset > p->max_possible_position)
        {
            return AMD_OFFER_MAX_POSITION_EXCEEDED;
        }
        rotate_log(meta, term_count, term_id);
        return AMD_OFFER_ADMIN_ACTION;
    }

    return back_pressure_status(p, position, length);
}

int64_t amd_publication_offer(
    const amd_publication_t *p, const uint8_t *src, int32_t length, int64_t reserved_value)
{
    if (length > p->max_message_length)
    {
        return AMD_OFFER_MESSAGE_TOO_LONG; /* checked first, as the Java client: whatever the limit says */
    }
    return offer_or_claim(p, src, length, reserved_value, NULL, NULL);
}

int64_t amd_publication_claim(const amd_publication_t *p, int32_t length, int32_t *frame_offset, int32_t *partition)
{
    if (length > p->max_payload_length)
    {
        return AMD_OFFER_MESSAGE_TOO_LONG;
    }
    return offer_or_claim(p, NULL, length, 0, frame_offset, partition);
}

int64_t amd_publication_offer_block(
    const amd_publication_t *p, const uint8_t *const *sources, const int32_t *lengths, int32_t count, int32_t *sent)
{
    *sent = 0;
    uint8_t *meta = p->meta;
    const int64_t limit = __atomic_load_n((const int64_t *)p->limit, __ATOMIC_ACQUIRE);
    const int32_t term_count = __atomic_load_n((const int32_t *)(meta + ACTIVE_TERM_COUNT_OFFSET), __ATOMIC_ACQUIRE);
    const int index = (int)((uint32_t)term_count % PARTITION_COUNT);
    int64_t *tail = (int64_t *)(meta + TAIL_COUNTERS_OFFSET + index * 8);
    const int64_t raw_tail = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
    const int32_t term_id = (int32_t)(raw_tail >> 32);
    if (term_count != (int32_t)((uint32_t)term_id - (uint32_t)p->initial_term_id))
    {
        return AMD_OFFER_ADMIN_ACTION;
    }
    const int64_t term_begin = (int64_t)term_count << p->position_bits_to_shift;
    const int64_t position = term_begin + (raw_tail & 0xFFFFFFFFLL);
    if (position >= limit)
    {
        return back_pressure_status(p, position, lengths[0]);
    }
    /* As many as start before the limit (seen from this tail: another publisher may move it first, as it may
     * between the limit check and the append of a single offer). */
    int32_t taken = 0;
    int64_t required = 0;
    while (taken < count && position + required < limit)
    {
        required += ALIGN_FRAME((int64_t)lengths[taken] + AMD_DATA_HEADER_LENGTH);
        ++taken;
    }
    const int64_t reserved = __atomic_fetch_add(tail, required, __ATOMIC_SEQ_CST);
    if ((int32_t)(reserved >> 32) != term_id)
    {
        return AMD_OFFER_TERM_ID_MISMATCH;
    }
    uint8_t *term = p->log + (int64_t)index * p->term_length;
    const int64_t start = reserved & 0xFFFFFFFFLL;
    int64_t offset = start;
    int32_t written = 0;
    while (written < taken)
    {
        const int32_t frame_length = lengths[written] + AMD_DATA_HEADER_LENGTH;
        const int64_t next = offset + ALIGN_FRAME(frame_length);
        if (next > p->term_length)
        {
            break;
        }
        amd_frame_write(term, offset, frame_length, p->header_template, term_id, -1, 0, sources[written], 0);
        offset = next;
        ++written;
    }
    *sent = written;
    if (written == taken)
    {
        return term_begin + offset;
    }
    /* The space crossed the end of the term: pad what is left of it (if this reservation began inside it),
     * then rotate, as a single offer that trips. */
    if (offset < p->term_length)
    {
        amd_frame_write_padding(term, offset, (int32_t)(p->term_length - offset), p->header_template, term_id);
    }
    if (written > 0)
    {
        rotate_log(meta, term_count, term_id);
        return term_begin + offset;
    }
    if (position + (raw_tail & 0xFFFFFFFFLL) > p->max_possible_position) /* as amd_publication_offer */
    {
        return AMD_OFFER_MAX_POSITION_EXCEEDED;
    }
    rotate_log(meta, term_count, term_id);
    return AMD_OFFER_ADMIN_ACTION;
}

/* The term is full (padding written, or it was exactly full): move to the next one, no contention to handle.
 * The next partition's tail first, then the active term count, both release stores (docs/logbuffer.md §2). */
static int64_t exclusive_rotate(amd_exclusive_publication_t *x)
{
    const amd_publication_t *p = &x->constants;
    if (x->term_begin_position + p->term_length >= p->max_possible_position)
    {
        return AMD_OFFER_MAX_POSITION_EXCEEDED;
    }
    const int next_index = (x->active_partition_index + 1) % PARTITION_COUNT;
    const int32_t next_term_id = (int32_t)((uint32_t)x->term_id + 1);
    const int32_t term_count = (int32_t)((uint32_t)next_term_id - (uint32_t)p->initial_term_id);
    __atomic_store_n(
        (int64_t *)(p->meta + TAIL_COUNTERS_OFFSET + next_index * 8),
        (int64_t)((uint64_t)(uint32_t)next_term_id << 32),
        __ATOMIC_RELEASE);
    __atomic_store_n((int32_t *)(p->meta + ACTIVE_TERM_COUNT_OFFSET), term_count, __ATOMIC_RELEASE);
    x->active_partition_index = next_index;
    x->term_id = next_term_id;
    x->term_offset = 0;
    x->term_begin_position += p->term_length;
    return AMD_OFFER_ADMIN_ACTION;
}

/* ExclusivePublication.offer and tryClaim, as offer_or_claim. */
static inline int64_t exclusive_offer_or_claim(
    amd_exclusive_publication_t *x, const uint8_t *src, int32_t length, int64_t reserved_value,
    int32_t *claim_offset, int32_t *claim_partition)
{
    const amd_publication_t *p = &x->constants;
    const int32_t term_offset = x->term_offset;
    const int64_t position = x->term_begin_position + term_offset;
    if (position >= __atomic_load_n((const int64_t *)p->limit, __ATOMIC_ACQUIRE))
    {
        return back_pressure_status(p, position, length);
    }

    int64_t required;
    if (length <= p->max_payload_length)
    {
        required = ALIGN_FRAME((int64_t)length + AMD_DATA_HEADER_LENGTH);
    }
    else
    {
        const int64_t num_max_payloads = length / p->max_payload_length;
        const int32_t remaining_payload = length % p->max_payload_length;
        required = num_max_payloads * (p->max_payload_length + AMD_DATA_HEADER_LENGTH) +
            (remaining_payload > 0 ? ALIGN_FRAME(remaining_payload + AMD_DATA_HEADER_LENGTH) : 0);
    }
    const int64_t resulting_offset = term_offset + required;
    const int index = x->active_partition_index;
    /* The tail first (ExclusiveTermAppender, docs/logbuffer.md §5): the driver sees the space taken at once. */
    __atomic_store_n(
        (int64_t *)(p->meta + TAIL_COUNTERS_OFFSET + index * 8),
        (int64_t)(((uint64_t)(uint32_t)x->term_id << 32) | (uint64_t)resulting_offset),
        __ATOMIC_RELEASE);
    uint8_t *term = p->log + (int64_t)index * p->term_length;
    if (resulting_offset > p->term_length)
    {
        if (term_offset < p->term_length)
        {
            amd_frame_write_padding(term, term_offset, p->term_length - term_offset, p->header_template, x->term_id);
        }
        return exclusive_rotate(x);
    }
    if (claim_offset != NULL)
    {
        amd_frame_header_write(term, term_offset, length + AMD_DATA_HEADER_LENGTH, p->header_template, x->term_id);
        *claim_offset = term_offset;
        *claim_partition = index;
    }
    else if (length <= p->max_payload_length)
    {
        amd_frame_write(
            term, term_offset, length + AMD_DATA_HEADER_LENGTH, p->header_template, x->term_id, -1, reserved_value,
            src, 0);
    }
    else
    {
        amd_frame_write_fragments(
            term, term_offset, p->header_template, x->term_id, src, length, p->max_payload_length, reserved_value);
    }
    x->term_offset = (int32_t)resulting_offset;
    return x->term_begin_position + resulting_offset;
}

int64_t amd_exclusive_publication_offer(
    amd_exclusive_publication_t *x, const uint8_t *src, int32_t length, int64_t reserved_value)
{
    if (length > x->constants.max_message_length)
    {
        return AMD_OFFER_MESSAGE_TOO_LONG;
    }
    return exclusive_offer_or_claim(x, src, length, reserved_value, NULL, NULL);
}

int64_t amd_exclusive_publication_claim(
    amd_exclusive_publication_t *x, int32_t length, int32_t *frame_offset, int32_t *partition)
{
    if (length > x->constants.max_payload_length)
    {
        return AMD_OFFER_MESSAGE_TOO_LONG;
    }
    return exclusive_offer_or_claim(x, NULL, length, 0, frame_offset, partition);
}
