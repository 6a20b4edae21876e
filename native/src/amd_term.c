/* See native/README.md for the memory-ordering contract of each function.
 * Frames are little-endian on the wire and in the mapped terms; the 8-byte header words below are
 * composed for a little-endian host (checked at compile time). */
#include <string.h>
#include "amd_term.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "amd_term.c composes little-endian header words: port it before building on a big-endian host"
#endif

#define ALIGN_FRAME(length) (((int64_t)(length) + (AMD_FRAME_ALIGNMENT - 1)) & ~(int64_t)(AMD_FRAME_ALIGNMENT - 1))

static inline uint32_t template_u32(const uint8_t *header_template, int offset)
{
    uint32_t value;
    memcpy(&value, header_template + offset, sizeof(value));
    return value;
}

static inline int32_t frame_length_acquire(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(term + offset), __ATOMIC_ACQUIRE);
}

static inline int is_padding(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const uint16_t *)(term + offset + AMD_TYPE_OFFSET), __ATOMIC_RELAXED) ==
        AMD_HDR_TYPE_PAD;
}

/* The first word (length + version/flags/type) goes first, negative, so a reader that races ahead sees
 * "not yet committed"; the release fence keeps the later header and payload stores behind it. The session
 * and stream ids are the header template's. */
static inline void header_write(
    uint8_t *term, int64_t offset, int32_t frame_length, uint32_t version_flags_type, const uint8_t *header_template,
    int32_t term_id)
{
    const uint32_t session_id = template_u32(header_template, AMD_SESSION_ID_OFFSET);
    const uint32_t stream_id = template_u32(header_template, AMD_STREAM_ID_OFFSET);
    const uint64_t word0 = ((uint64_t)version_flags_type << 32) | (uint32_t)(-frame_length);
    const uint64_t word1 = ((uint64_t)session_id << 32) | (uint32_t)offset;
    const uint64_t word2 = ((uint64_t)(uint32_t)term_id << 32) | stream_id;

    __atomic_store_n((uint64_t *)(term + offset), word0, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n((uint64_t *)(term + offset + AMD_TERM_OFFSET_OFFSET), word1, __ATOMIC_RELAXED);
    __atomic_store_n((uint64_t *)(term + offset + AMD_STREAM_ID_OFFSET), word2, __ATOMIC_RELAXED);
}

void amd_frame_header_write(
    uint8_t *term, int64_t offset, int32_t frame_length, const uint8_t *header_template, int32_t term_id)
{
    header_write(term, offset, frame_length, template_u32(header_template, 4), header_template, term_id);
}

void amd_frame_write(
    uint8_t *term,
    int64_t offset,
    int32_t frame_length,
    const uint8_t *header_template,
    int32_t term_id,
    int32_t flags,
    int64_t reserved_value,
    const uint8_t *src,
    int64_t src_offset)
{
    uint32_t version_flags_type = template_u32(header_template, 4);
    if (flags >= 0)
    {
        /* Byte 5 of the frame is bits 8..15 of the version/flags/type word. */
        version_flags_type = (version_flags_type & 0xFFFF00FFu) | ((uint32_t)(flags & 0xFF) << 8);
    }

    header_write(term, offset, frame_length, version_flags_type, header_template, term_id);
    __atomic_store_n((int64_t *)(term + offset + AMD_RESERVED_VALUE_OFFSET), reserved_value, __ATOMIC_RELAXED);
    memcpy(term + offset + AMD_DATA_HEADER_LENGTH, src + src_offset, (size_t)(frame_length - AMD_DATA_HEADER_LENGTH));
    __atomic_store_n((int32_t *)(term + offset), frame_length, __ATOMIC_RELEASE);
}

void amd_frame_write_padding(
    uint8_t *term, int64_t offset, int32_t frame_length, const uint8_t *header_template, int32_t term_id)
{
    /* Type PAD in the first word already: nobody looks at the type before the length is positive. */
    const uint32_t version_flags_type = template_u32(header_template, 4) & 0x0000FFFFu;

    header_write(
        term, offset, frame_length, version_flags_type | ((uint32_t)AMD_HDR_TYPE_PAD << 16), header_template, term_id);
    __atomic_store_n((int32_t *)(term + offset), frame_length, __ATOMIC_RELEASE);
}

void amd_frame_write_fragments(
    uint8_t *term,
    int64_t offset,
    const uint8_t *header_template,
    int32_t term_id,
    const uint8_t *src,
    int32_t length,
    int32_t max_payload_length,
    int64_t reserved_value)
{
    int32_t flags = AMD_BEGIN_FLAG;
    int64_t src_offset = 0;

    do
    {
        const int64_t remaining = length - src_offset;
        const int32_t payload_length = (int32_t)(remaining < max_payload_length ? remaining : max_payload_length);
        if (remaining <= max_payload_length)
        {
            flags |= AMD_END_FLAG;
        }

        const int32_t frame_length = payload_length + AMD_DATA_HEADER_LENGTH;
        amd_frame_write(term, offset, frame_length, header_template, term_id, flags, reserved_value, src, src_offset);

        offset += ALIGN_FRAME(frame_length);
        src_offset += payload_length;
        flags = 0;
    }
    while (src_offset < length);
}

/* TermAppender's reservation: ONE fetch-and-add of the aligned length on the partition's tail counter.
 * Returns the resulting term offset, or, when the space crosses the end of the term, pads from the old
 * tail to the end if the old tail was still inside the term (TRIPPED) or does nothing (FAILED). */
static inline int64_t reserve(
    uint8_t *term,
    int32_t term_length,
    uint8_t *meta,
    int64_t tail_offset,
    int32_t term_id,
    const uint8_t *header_template,
    int64_t required_length)
{
    const int64_t raw_tail = __atomic_fetch_add((int64_t *)(meta + tail_offset), required_length, __ATOMIC_SEQ_CST);
    if ((int32_t)(raw_tail >> 32) != term_id)
    {
        return AMD_APPEND_TERM_ID_MISMATCH;
    }

    const int64_t term_offset = raw_tail & 0xFFFFFFFFLL;
    const int64_t resulting_offset = term_offset + required_length;
    if (resulting_offset > term_length)
    {
        if (term_offset < term_length)
        {
            amd_frame_write_padding(
                term, term_offset, (int32_t)(term_length - term_offset), header_template, term_id);
            return AMD_APPEND_TRIPPED;
        }
        return AMD_APPEND_FAILED;
    }

    return resulting_offset;
}

int64_t amd_term_append_unfragmented(
    uint8_t *term,
    int32_t term_length,
    uint8_t *meta,
    int64_t tail_offset,
    int32_t term_id,
    const uint8_t *header_template,
    const uint8_t *src,
    int32_t length,
    int64_t reserved_value)
{
    const int32_t frame_length = length + AMD_DATA_HEADER_LENGTH;
    const int64_t aligned_length = ALIGN_FRAME(frame_length);
    const int64_t resulting_offset =
        reserve(term, term_length, meta, tail_offset, term_id, header_template, aligned_length);
    if (resulting_offset > 0)
    {
        amd_frame_write(
            term, resulting_offset - aligned_length, frame_length, header_template, term_id, -1, reserved_value, src, 0);
    }
    return resulting_offset;
}

int64_t amd_term_append_fragmented(
    uint8_t *term,
    int32_t term_length,
    uint8_t *meta,
    int64_t tail_offset,
    int32_t term_id,
    const uint8_t *header_template,
    const uint8_t *src,
    int32_t length,
    int32_t max_payload_length,
    int64_t reserved_value)
{
    const int64_t num_max_payloads = length / max_payload_length;
    const int32_t remaining_payload = length % max_payload_length;
    const int64_t last_frame_length = remaining_payload > 0 ? ALIGN_FRAME(remaining_payload + AMD_DATA_HEADER_LENGTH) : 0;
    const int64_t required_length = num_max_payloads * (max_payload_length + AMD_DATA_HEADER_LENGTH) + last_frame_length;
    const int64_t resulting_offset =
        reserve(term, term_length, meta, tail_offset, term_id, header_template, required_length);
    if (resulting_offset > 0)
    {
        amd_frame_write_fragments(
            term,
            resulting_offset - required_length,
            header_template,
            term_id,
            src,
            length,
            max_payload_length,
            reserved_value);
    }
    return resulting_offset;
}

int64_t amd_term_claim(
    uint8_t *term,
    int32_t term_length,
    uint8_t *meta,
    int64_t tail_offset,
    int32_t term_id,
    const uint8_t *header_template,
    int32_t length)
{
    const int32_t frame_length = length + AMD_DATA_HEADER_LENGTH;
    const int64_t aligned_length = ALIGN_FRAME(frame_length);
    const int64_t resulting_offset =
        reserve(term, term_length, meta, tail_offset, term_id, header_template, aligned_length);
    if (resulting_offset > 0)
    {
        amd_frame_header_write(term, resulting_offset - aligned_length, frame_length, header_template, term_id);
    }
    return resulting_offset;
}

int64_t amd_term_scan_frames(
    const uint8_t *term, int32_t capacity, int32_t offset, int32_t max_frames, int32_t *frames)
{
    int64_t position = offset;
    int32_t count = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;

    while (count < max_frames && position <= last_header)
    {
        const int32_t frame_length = frame_length_acquire(term, position);
        if (frame_length <= 0)
        {
            break;
        }

        const int64_t frame_offset = position;
        position += ALIGN_FRAME(frame_length);

        if (!is_padding(term, frame_offset))
        {
            frames[2 * count] = (int32_t)frame_offset;
            frames[2 * count + 1] = frame_length;
            ++count;
        }
    }

    if (position > capacity)
    {
        position = capacity; /* only a corrupt length can overrun; never report an offset past the term */
    }

    return (position << 32) | (uint32_t)count;
}

int32_t amd_term_count_messages(const uint8_t *term, int32_t capacity, int32_t offset, int32_t end)
{
    int64_t position = offset;
    int32_t count = 0;
    const int64_t limit = end < capacity ? end : capacity;

    while (position + AMD_DATA_HEADER_LENGTH <= limit)
    {
        const int32_t frame_length = frame_length_acquire(term, position);
        if (frame_length <= 0)
        {
            break;
        }
        const uint16_t type = __atomic_load_n((const uint16_t *)(term + position + AMD_TYPE_OFFSET), __ATOMIC_RELAXED);
        if (type == AMD_HDR_TYPE_DATA && (term[position + AMD_FLAGS_OFFSET] & AMD_BEGIN_FLAG))
        {
            ++count;
        }
        position += ALIGN_FRAME(frame_length);
    }
    return count;
}

int64_t amd_term_scan_for_availability(const uint8_t *term, int32_t capacity, int32_t offset, int32_t max_length)
{
    const int64_t limit = max_length < capacity - offset ? max_length : capacity - offset;
    int64_t available = 0;
    int64_t padding = 0;

    do
    {
        const int64_t frame_offset = offset + available;
        if (frame_offset > (int64_t)capacity - AMD_DATA_HEADER_LENGTH)
        {
            break;
        }

        const int32_t frame_length = frame_length_acquire(term, frame_offset);
        if (frame_length <= 0)
        {
            break;
        }

        int64_t aligned_length = ALIGN_FRAME(frame_length);
        if (is_padding(term, frame_offset))
        {
            /* Only the padding header is sent; the rest of the padding is skipped, not transmitted. */
            padding = aligned_length - AMD_DATA_HEADER_LENGTH;
            aligned_length = AMD_DATA_HEADER_LENGTH;
        }

        available += aligned_length;
        if (available > limit)
        {
            available -= aligned_length;
            padding = 0;
            break;
        }
    }
    while (0 == padding && available < limit);

    return (padding << 32) | (uint32_t)available;
}

int64_t amd_term_block_scan_count(const uint8_t *term, int32_t term_offset, int32_t limit_offset)
{
    int64_t offset = term_offset;
    int64_t messages = 0;

    while (offset < limit_offset)
    {
        const int32_t frame_length = frame_length_acquire(term, offset);
        if (frame_length <= 0)
        {
            break;
        }

        const int64_t aligned_length = ALIGN_FRAME(frame_length);
        if (is_padding(term, offset))
        {
            if (term_offset == offset)
            {
                offset += aligned_length;
            }
            break;
        }

        if (offset + aligned_length > limit_offset)
        {
            break;
        }

        const uint16_t type = __atomic_load_n((const uint16_t *)(term + offset + AMD_TYPE_OFFSET), __ATOMIC_RELAXED);
        messages += type == AMD_HDR_TYPE_DATA && (term[offset + AMD_FLAGS_OFFSET] & AMD_BEGIN_FLAG);
        offset += aligned_length;
    }

    return (messages << 32) | offset;
}

int32_t amd_term_block_scan(const uint8_t *term, int32_t term_offset, int32_t limit_offset)
{
    return (int32_t)(amd_term_block_scan_count(term, term_offset, limit_offset) & 0xFFFFFFFF);
}

int64_t amd_term_write_block(
    uint8_t *term,
    int32_t capacity,
    int32_t term_offset,
    uint8_t *src,
    int32_t src_length,
    int32_t limit,
    int32_t session_id,
    int32_t stream_id)
{
    if (term_offset < 0 || src_length < 0 || (int64_t)term_offset + src_length > capacity)
    {
        return -1;
    }

    int64_t offset = 0;
    int64_t hole = 0;
    while (offset < limit && offset + AMD_DATA_HEADER_LENGTH <= src_length)
    {
        int32_t frame_length;
        uint16_t type;
        memcpy(&frame_length, src + offset + AMD_FRAME_LENGTH_OFFSET, sizeof(frame_length));
        memcpy(&type, src + offset + AMD_TYPE_OFFSET, sizeof(type));
        if (frame_length < AMD_DATA_HEADER_LENGTH || (type != AMD_HDR_TYPE_DATA && type != AMD_HDR_TYPE_PAD))
        {
            hole = 1;
            break;
        }
        const int64_t aligned_length = ALIGN_FRAME(frame_length);
        if (offset + aligned_length > src_length)
        {
            break;
        }
        memcpy(src + offset + AMD_SESSION_ID_OFFSET, &session_id, sizeof(session_id));
        memcpy(src + offset + AMD_STREAM_ID_OFFSET, &stream_id, sizeof(stream_id));
        offset += aligned_length;
    }

    if (offset > 0)
    {
        /* Readers scan by frame length: everything but the first frame's length goes in first, then that length
           with a release store makes the whole run visible at once (ExclusivePublication.offerBlock). */
        int32_t first_length;
        memcpy(&first_length, src, sizeof(first_length));
        memcpy(term + term_offset + sizeof(int32_t), src + sizeof(int32_t), (size_t)offset - sizeof(int32_t));
        __atomic_store_n((int32_t *)(term + term_offset), first_length, __ATOMIC_RELEASE);
    }

    return (hole << 32) | offset;
}
