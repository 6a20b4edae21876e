/* See native/include/amd_step.h. */
#include <stddef.h>
#include "amd_step.h"
#include "amd_rebuild_batch.h"
#include "amd_udp.h"

static inline int64_t load_acquire_64(const int64_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

static inline int32_t committed_at(const amd_send_step *s, int64_t position)
{
    const int32_t offset = (int32_t)(position & (s->term_length - 1));
    const uint8_t *term = s->terms[(position >> s->position_bits_to_shift) % 3];
    return 0 != __atomic_load_n((const int32_t *)(term + offset), __ATOMIC_ACQUIRE);
}

int32_t amd_send_step_pending(const amd_send_step *s)
{
    return committed_at(s, load_acquire_64(s->sender_position));
}

int64_t amd_send_step_run(amd_send_step *s, int64_t now_ns)
{
    const int64_t start = load_acquire_64(s->sender_position);
    const int64_t limit = load_acquire_64(s->sender_limit);
    s->error = 0;
    if (!committed_at(s, start) && !(s->track_sender_limits && limit <= start))
    {
        return 0; /* the idle step: nothing committed, no stall to count */
    }
    const int64_t mask = s->term_length - 1;
    int64_t position = start;
    int64_t bytes = 0;
    int32_t remaining = s->max_datagrams;
    while (remaining > 0)
    {
        const int64_t window = limit - position;
        if (window <= 0)
        {
            if (s->track_sender_limits)
            {
                s->track_sender_limits = 0;
                __atomic_fetch_add(s->flow_control_limits, 1, __ATOMIC_SEQ_CST);
                if (NULL != s->sender_bpe)
                {
                    __atomic_fetch_add(s->sender_bpe, 1, __ATOMIC_SEQ_CST);
                }
            }
            if (position == start)
            {
                return AMD_SEND_STALLED;
            }
            break;
        }
        const uint8_t *term = s->terms[(position >> s->position_bits_to_shift) % 3];
        const int32_t offset = (int32_t)(position & mask);
        int64_t result[3];
        int32_t sent = s->gso ?
            amd_udp_send_term_burst_gso(s->fd, term, s->term_length, offset, window, s->mtu, remaining, NULL, 0, result) :
            amd_udp_send_term_burst(s->fd, term, s->term_length, offset, window, s->mtu, remaining, NULL, 0, result);
        if (sent < 0)
        {
            if (!amd_udp_is_short_send(-sent))
            {
                s->error = -sent;
                return AMD_SEND_ERROR;
            }
            sent = 0;
            result[0] = result[1] = 0;
        }
        const int32_t short_send = sent < result[2];
        if (short_send)
        {
            __atomic_fetch_add(s->short_sends, 1, __ATOMIC_SEQ_CST);
        }
        if (sent <= 0)
        {
            break;
        }
        __atomic_fetch_add(s->bytes_sent, result[0], __ATOMIC_SEQ_CST);
        bytes += result[0];
        position += result[1];
        __atomic_store_n(s->sender_position, position, __ATOMIC_RELEASE);
        remaining -= sent;
        s->last_send_ns = now_ns;
        s->track_sender_limits = 1;
        if (short_send || (position & mask))
        {
            break; /* stopped inside the term: nothing more to send now (a new term goes on) */
        }
    }
    return bytes;
}

int32_t amd_receive_step_run(
    amd_receive_step *s, const uint8_t *base, const int64_t *offsets, const int32_t *lengths, int32_t count,
    int32_t *unhandled)
{
    amd_rebuild_image *images = (amd_rebuild_image *)s->images;
    for (int32_t i = 0; i < s->image_count; i++)
    {
        amd_rebuild_image *image = &images[i];
        image->hwm_position = 0;
        image->inserted = 0;
        image->under_runs = 0;
        image->over_runs = 0;
        image->invalid = 0;
    }
    int64_t bytes = 0;
    const int32_t left = amd_term_rebuild_batch_at(base, offsets, lengths, count, images, s->image_count, unhandled, &bytes);
    if (bytes > 0)
    {
        __atomic_fetch_add(s->bytes_received, bytes, __ATOMIC_SEQ_CST);
    }
    int32_t irregular = 0;
    for (int32_t i = 0; i < s->image_count; i++)
    {
        const amd_rebuild_image *image = &images[i];
        if (image->under_runs)
        {
            __atomic_fetch_add(s->under_runs, image->under_runs, __ATOMIC_SEQ_CST);
        }
        if (image->over_runs)
        {
            __atomic_fetch_add(s->over_runs, image->over_runs, __ATOMIC_SEQ_CST);
        }
        if (image->invalid)
        {
            __atomic_fetch_add(s->invalid_packets, image->invalid, __ATOMIC_SEQ_CST);
        }
        irregular += image->under_runs + image->over_runs + image->invalid;
        if (image->inserted > 0 && load_acquire_64(s->hwm[i]) < image->hwm_position)
        {
            __atomic_store_n(s->hwm[i], image->hwm_position, __ATOMIC_RELEASE);
        }
    }
    s->irregular = irregular;
    return left;
}
