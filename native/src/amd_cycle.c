/* See native/include/amd_cycle.h and native/README.md ("The steady-state cycle"). */
#include <stddef.h>
#include "amd_cycle.h"
#include "amd_rebuild_batch.h"
#include "amd_udp.h"

static inline int64_t load_acquire_64(const int64_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

static int full_words_moved(const amd_cycle *c)
{
    for (int32_t i = 0; i < c->full_word_count; i++)
    {
        if (load_acquire_64(c->full_words[i]) != c->full_seen[i])
        {
            return 1;
        }
    }
    return 0;
}

static int64_t positions_moved(const amd_cycle *c)
{
    int64_t moved = 0;
    for (int32_t i = 0; i < c->moved_word_count; i++)
    {
        const int64_t delta = load_acquire_64(c->moved_words[i]) - c->moved_seen[i];
        moved += delta < 0 ? -delta : delta;
    }
    return moved;
}

/* Drain one endpoint; < 0 for AMD_CYCLE_FULL / AMD_CYCLE_BATCH, else the datagrams received. */
static int32_t receive_endpoint(amd_cycle *c, int32_t index)
{
    amd_cycle_endpoint *e = &c->endpoints[index];
    int32_t total = 0;
    for (;;)
    {
        const int32_t count = amd_udp_recv_batch_gro(
            e->fd, e->buffers, e->slot_length, e->max_messages, e->offsets, e->lengths, e->sources,
            e->max_datagrams, e->addrs, e->addr_lengths, e->received);
        if (count < 0)
        {
            return AMD_CYCLE_FULL; /* nothing read: the Python receiver reads it and handles the error */
        }
        if (0 == count)
        {
            return total;
        }
        const int32_t unhandled = amd_receive_step_run(e->step, e->buffers, e->offsets, e->lengths, count, e->unhandled);
        if (unhandled != 0 || e->step->irregular != 0)
        {
            c->stopped_endpoint = index;
            e->batch_count = count;
            e->unhandled_count = unhandled;
            return AMD_CYCLE_BATCH;
        }
        const amd_rebuild_image *images = (const amd_rebuild_image *)e->step->images;
        for (int32_t i = 0; i < e->step->image_count; i++)
        {
            e->inserted[i] += images[i].inserted;
        }
        total += count;
        if (*e->received < e->max_messages)
        {
            return total;
        }
    }
}

int32_t amd_cycle_run(amd_cycle *c, int64_t now_ns)
{
    if (now_ns >= c->full_due_ns || full_words_moved(c) || positions_moved(c) >= c->moved_limit)
    {
        return AMD_CYCLE_FULL;
    }
    int64_t work = 0;
    for (int32_t i = 0; i < c->publication_count; i++)
    {
        const int64_t sent = amd_send_step_run(c->publications[i], now_ns);
        if (sent < 0)
        {
            return AMD_CYCLE_FULL; /* a stall or an error: the Python sender's (the stall is counted) */
        }
        work += sent;
    }
    for (int32_t i = 0; i < c->endpoint_count; i++)
    {
        const int32_t received = receive_endpoint(c, i);
        if (received < 0)
        {
            return received;
        }
        work += received;
    }
    return work > INT32_MAX ? INT32_MAX : (int32_t)work;
}

int32_t amd_cycle_pending(const amd_cycle *c)
{
    for (int32_t i = 0; i < c->publication_count; i++)
    {
        if (amd_send_step_pending(c->publications[i]))
        {
            return 1;
        }
    }
    return full_words_moved(c);
}

void amd_cycle_snapshot(amd_cycle *c)
{
    for (int32_t i = 0; i < c->full_word_count; i++)
    {
        c->full_seen[i] = load_acquire_64(c->full_words[i]);
    }
    for (int32_t i = 0; i < c->moved_word_count; i++)
    {
        c->moved_seen[i] = load_acquire_64(c->moved_words[i]);
    }
}

int64_t amd_cycle_moved(const amd_cycle *c)
{
    return positions_moved(c);
}
