/* See native/README.md ("Receiver rebuild") for the memory-ordering contract of each function.
 * Everything here runs on datagrams from the network: nothing is written unless every frame header of
 * the datagram has been checked against the term first. */
#include <string.h>
#include "amd_term.h"
#include "amd_rebuild.h"
#include "amd_rebuild_batch.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "amd_rebuild.c reads little-endian header words: port it before building on a big-endian host"
#endif

#define ALIGN_FRAME(length) (((int64_t)(length) + (AMD_FRAME_ALIGNMENT - 1)) & ~(int64_t)(AMD_FRAME_ALIGNMENT - 1))

static inline int32_t load_i32(const uint8_t *p)
{
    int32_t value;
    memcpy(&value, p, sizeof(value));
    return value;
}

static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t value;
    memcpy(&value, p, sizeof(value));
    return value;
}

static inline uint16_t load_u16(const uint8_t *p)
{
    uint16_t value;
    memcpy(&value, p, sizeof(value));
    return value;
}

static inline int32_t term_int_acquire(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(term + offset), __ATOMIC_ACQUIRE);
}

/* Every frame of the datagram: version 0, type DATA or PAD, the session, stream and term id of the first
 * frame, term_offset equal to where it sits, a DATA frame whole inside the datagram, PAD only last and
 * inside the term. Returns 0 when it is fine to insert. */
static int32_t check_frames(int32_t capacity, int32_t term_offset, const uint8_t *packet, int32_t length)
{
    const uint32_t session_id = (uint32_t)load_i32(packet + AMD_SESSION_ID_OFFSET);
    const uint32_t stream_id = (uint32_t)load_i32(packet + AMD_STREAM_ID_OFFSET);
    const uint32_t term_id = (uint32_t)load_i32(packet + AMD_TERM_ID_OFFSET);
    int64_t offset = 0;

    while (offset < length)
    {
        const uint8_t *frame = packet + offset;
        if (length - offset < AMD_DATA_HEADER_LENGTH)
        {
            return AMD_REBUILD_MALFORMED;
        }

        const int32_t frame_length = load_i32(frame);
        const uint16_t type = load_u16(frame + AMD_TYPE_OFFSET);
        if (frame[4] != 0 || frame_length < AMD_DATA_HEADER_LENGTH ||
            (type != AMD_HDR_TYPE_PAD && type != AMD_HDR_TYPE_DATA) ||
            (uint32_t)load_i32(frame + AMD_SESSION_ID_OFFSET) != session_id ||
            (uint32_t)load_i32(frame + AMD_STREAM_ID_OFFSET) != stream_id ||
            (uint32_t)load_i32(frame + AMD_TERM_ID_OFFSET) != term_id ||
            (int64_t)load_i32(frame + AMD_TERM_OFFSET_OFFSET) != term_offset + offset)
        {
            return AMD_REBUILD_MALFORMED;
        }

        if (type == AMD_HDR_TYPE_PAD)
        {
            /* Only its header travels (or the whole padding); nothing may follow it. */
            if (term_offset + offset + frame_length > capacity || length - offset > ALIGN_FRAME(frame_length))
            {
                return AMD_REBUILD_MALFORMED;
            }
            return 0;
        }

        if (frame_length > length - offset)
        {
            return AMD_REBUILD_MALFORMED;
        }
        offset += ALIGN_FRAME(frame_length);
    }

    return 0;
}

int32_t amd_term_rebuild_insert(
    uint8_t *term, int32_t capacity, int32_t term_offset, const uint8_t *src, int64_t src_offset, int32_t length)
{
    const uint8_t *packet = src + src_offset;

    if (length < AMD_DATA_HEADER_LENGTH)
    {
        return AMD_REBUILD_MALFORMED;
    }
    if (term_offset < 0 || (term_offset & (AMD_FRAME_ALIGNMENT - 1)) != 0 ||
        (int64_t)term_offset + length > capacity)
    {
        return AMD_REBUILD_OUT_OF_TERM;
    }
    if (length == AMD_DATA_HEADER_LENGTH && load_i32(packet) == 0)
    {
        return 0; /* a heartbeat: it moves the high-water mark only */
    }

    const int32_t check = check_frames(capacity, term_offset, packet, length);
    if (check < 0)
    {
        return check;
    }

    /* Frame by frame: each absent one gets its body, then header words 24, 16 and 8, then the first 8 bytes
     * (length, version, flags, type) with a release store so the length becomes visible last. A frame
     * already present (its length is not 0) is a duplicate and is left alone; the others still go in. */
    int32_t inserted = 0;
    int64_t offset = 0;
    while (offset < length)
    {
        const uint8_t *frame = packet + offset;
        uint8_t *dst = term + term_offset + offset;
        const int32_t frame_length = load_i32(frame);
        const int is_pad = load_u16(frame + AMD_TYPE_OFFSET) == AMD_HDR_TYPE_PAD;

        if (__atomic_load_n((const int32_t *)dst, __ATOMIC_RELAXED) == 0)
        {
            if (!is_pad)
            {
                memcpy(dst + AMD_DATA_HEADER_LENGTH, frame + AMD_DATA_HEADER_LENGTH,
                       (size_t)(frame_length - AMD_DATA_HEADER_LENGTH));
            }
            __atomic_store_n((uint64_t *)(dst + 24), load_u64(frame + 24), __ATOMIC_RELAXED);
            __atomic_store_n((uint64_t *)(dst + 16), load_u64(frame + 16), __ATOMIC_RELAXED);
            __atomic_store_n((uint64_t *)(dst + 8), load_u64(frame + 8), __ATOMIC_RELAXED);
            __atomic_store_n((uint64_t *)dst, load_u64(frame), __ATOMIC_RELEASE);
            ++inserted;
        }

        if (is_pad)
        {
            break;
        }
        offset += ALIGN_FRAME(frame_length);
    }

    return inserted;
}

/* TermGapScanner's walk: committed frames from `offset` while below `limit`. */
static inline int64_t walk_frames(const uint8_t *term, int64_t offset, int64_t limit)
{
    while (offset < limit)
    {
        const int32_t frame_length = term_int_acquire(term, offset);
        if (frame_length <= 0)
        {
            break;
        }
        offset += ALIGN_FRAME(frame_length);
    }
    return offset;
}

/* The gap starting at `gap_begin` (whose length word is <= 0) runs until the next 32-byte slot holding a
 * non-zero int, or to the limit; at least one slot long. */
static inline int64_t gap_end(const uint8_t *term, int64_t gap_begin, int64_t limit)
{
    int64_t offset = gap_begin;
    const int64_t last = limit - AMD_DATA_HEADER_LENGTH;
    while (offset < last)
    {
        offset += AMD_FRAME_ALIGNMENT;
        if (term_int_acquire(term, offset) != 0)
        {
            return offset;
        }
    }
    return offset + AMD_DATA_HEADER_LENGTH;
}

int64_t amd_term_scan_for_gap(const uint8_t *term, int32_t capacity, int32_t rebuild_offset, int32_t limit_offset)
{
    const int64_t limit = limit_offset < capacity ? limit_offset : capacity;
    const int64_t gap_begin = walk_frames(term, rebuild_offset, limit);
    int64_t gap_length = 0;

    if (gap_begin < limit)
    {
        gap_length = gap_end(term, gap_begin, limit) - gap_begin;
    }

    return (gap_begin << 32) | (uint32_t)gap_length;
}

int64_t amd_term_scan_for_gaps(
    const uint8_t *term, int32_t capacity, int32_t rebuild_offset, int32_t limit_offset, int32_t max_gaps,
    int32_t *gaps)
{
    const int64_t limit = limit_offset < capacity ? limit_offset : capacity;
    const int64_t new_rebuild_offset = walk_frames(term, rebuild_offset, limit);
    int64_t offset = new_rebuild_offset;
    int32_t count = 0;

    while (offset < limit && count < max_gaps)
    {
        const int64_t end = gap_end(term, offset, limit);
        gaps[2 * count] = (int32_t)offset;
        gaps[2 * count + 1] = (int32_t)(end - offset);
        ++count;
        offset = walk_frames(term, end, limit);
    }

    return (new_rebuild_offset << 32) | (uint32_t)count;
}

int32_t amd_term_gap_fill(
    uint8_t *term, int32_t capacity, int32_t gap_offset, int32_t gap_length, const uint8_t *header_template,
    int32_t term_id)
{
    if (gap_offset < 0 || gap_length < AMD_DATA_HEADER_LENGTH || (gap_offset & (AMD_FRAME_ALIGNMENT - 1)) != 0 ||
        (int64_t)gap_offset + gap_length > capacity)
    {
        return 0;
    }

    for (int64_t offset = (int64_t)gap_offset + gap_length - AMD_FRAME_ALIGNMENT; offset >= gap_offset;
         offset -= AMD_FRAME_ALIGNMENT)
    {
        if (load_i32(term + offset) != 0)
        {
            return 0;
        }
    }

    amd_frame_write_padding(term, gap_offset, gap_length, header_template, term_id);
    return 1;
}

/* The receiver's hot path over one recvmmsg batch: each plain DATA datagram (not a heartbeat, first frame
 * sound as frames.validate_frame checks it) of an accepting image is checked against the image's flow
 * control window and inserted, exactly as PublicationImage.insert_packet does; everything else (SETUP,
 * RTTM, heartbeats, PAD first, unknown sessions, anything odd) is left to the caller, in order, by index. */
static int32_t rebuild_batch(
    const uint8_t *slots, int32_t slot_length, const int64_t *offsets, const int32_t *lengths, int32_t count,
    amd_rebuild_image *images, int32_t image_count, int32_t *unhandled, int64_t *bytes_received)
{
    int32_t unhandled_count = 0;
    int32_t last = 0;

    for (int32_t i = 0; i < count; i++)
    {
        const uint8_t *packet = slots + (NULL != offsets ? offsets[i] : (int64_t)i * slot_length);
        const int32_t length = lengths[i];
        amd_rebuild_image *image = NULL;

        if (length >= AMD_DATA_HEADER_LENGTH && length <= AMD_MAX_UDP_PAYLOAD_LENGTH && packet[4] == 0 &&
            load_u16(packet + AMD_TYPE_OFFSET) == AMD_HDR_TYPE_DATA && image_count > 0)
        {
            const int32_t frame_length = load_i32(packet);
            const int32_t term_offset = load_i32(packet + AMD_TERM_OFFSET_OFFSET);
            const int32_t session_id = load_i32(packet + AMD_SESSION_ID_OFFSET);
            const int32_t stream_id = load_i32(packet + AMD_STREAM_ID_OFFSET);
            if (frame_length >= AMD_DATA_HEADER_LENGTH && frame_length <= length && term_offset >= 0 &&
                (term_offset & (AMD_FRAME_ALIGNMENT - 1)) == 0)
            {
                if (images[last].session_id != session_id || images[last].stream_id != stream_id)
                {
                    for (last = 0; last < image_count; last++)
                    {
                        if (images[last].session_id == session_id && images[last].stream_id == stream_id)
                        {
                            break;
                        }
                    }
                }
                if (last < image_count)
                {
                    image = &images[last];
                }
                else
                {
                    last = 0;
                }
            }
            if (NULL != image && (!image->is_accepting || (int64_t)term_offset + length > image->term_length))
            {
                image = NULL; /* no connection on this transport yet, or out of its term: the caller decides */
            }
            if (NULL != image)
            {
                const int32_t term_count =
                    (int32_t)((uint32_t)load_i32(packet + AMD_TERM_ID_OFFSET) - (uint32_t)image->initial_term_id);
                const int64_t position = (int64_t)term_count * ((int64_t)1 << image->position_bits_to_shift) +
                    term_offset;
                if (position < 0)
                {
                    image = NULL;
                }
                else
                {
                    const int64_t proposed = position + length;
                    *bytes_received += length;
                    if (position < image->last_sm_position)
                    {
                        image->under_runs++;
                    }
                    else if (proposed > image->window_limit)
                    {
                        image->over_runs++;
                    }
                    else
                    {
                        uint8_t *term = image->terms[(position >> image->position_bits_to_shift) % 3];
                        if (amd_term_rebuild_insert(term, image->term_length, term_offset, packet, 0, length) < 0)
                        {
                            image->invalid++;
                        }
                        else
                        {
                            image->inserted++;
                            if (proposed > image->hwm_position)
                            {
                                image->hwm_position = proposed;
                            }
                        }
                    }
                }
            }
        }

        if (NULL == image)
        {
            unhandled[unhandled_count++] = i;
        }
    }

    return unhandled_count;
}

int32_t amd_term_rebuild_batch(
    const uint8_t *slots, int32_t slot_length, const int32_t *lengths, int32_t count, amd_rebuild_image *images,
    int32_t image_count, int32_t *unhandled, int64_t *bytes_received)
{
    return rebuild_batch(slots, slot_length, NULL, lengths, count, images, image_count, unhandled, bytes_received);
}

int32_t amd_term_rebuild_batch_at(
    const uint8_t *base, const int64_t *offsets, const int32_t *lengths, int32_t count, amd_rebuild_image *images,
    int32_t image_count, int32_t *unhandled, int64_t *bytes_received)
{
    return rebuild_batch(base, 0, offsets, lengths, count, images, image_count, unhandled, bytes_received);
}
