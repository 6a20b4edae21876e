/* Frame writes and term scans over a term buffer of a log (docs/logbuffer.md, docs/wire.md section 2).
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations
 * plain C. The enum mirrors driver/protocol/frames.py; a test checks that they agree. */
#ifndef AMD_TERM_H
#define AMD_TERM_H
#include <stdint.h>

enum
{
    AMD_FRAME_LENGTH_OFFSET = 0,
    AMD_FLAGS_OFFSET = 5,
    AMD_TYPE_OFFSET = 6,
    AMD_TERM_OFFSET_OFFSET = 8,
    AMD_SESSION_ID_OFFSET = 12,
    AMD_STREAM_ID_OFFSET = 16,
    AMD_TERM_ID_OFFSET = 20,
    AMD_RESERVED_VALUE_OFFSET = 24,
    AMD_DATA_HEADER_LENGTH = 32,
    AMD_FRAME_ALIGNMENT = 32,
    AMD_HDR_TYPE_PAD = 0,
    AMD_HDR_TYPE_DATA = 1,
    AMD_BEGIN_FLAG = 0x80,
    AMD_END_FLAG = 0x40
};

/* Results of the concurrent appends other than a new term offset (> 0). */
enum
{
    AMD_APPEND_TRIPPED = -1,
    AMD_APPEND_FAILED = -2,
    AMD_APPEND_TERM_ID_MISMATCH = -3
};

void amd_frame_header_write(
    uint8_t *term, int64_t offset, int32_t frame_length, const uint8_t *header_template, int32_t term_id);
void amd_frame_write(
    uint8_t *term,
    int64_t offset,
    int32_t frame_length,
    const uint8_t *header_template,
    int32_t term_id,
    int32_t flags,
    int64_t reserved_value,
    const uint8_t *src,
    int64_t src_offset);
void amd_frame_write_padding(
    uint8_t *term, int64_t offset, int32_t frame_length, const uint8_t *header_template, int32_t term_id);
void amd_frame_write_fragments(
    uint8_t *term,
    int64_t offset,
    const uint8_t *header_template,
    int32_t term_id,
    const uint8_t *src,
    int32_t length,
    int32_t max_payload_length,
    int64_t reserved_value);
int64_t amd_term_append_unfragmented(
    uint8_t *term,
    int32_t term_length,
    uint8_t *meta,
    int64_t tail_offset,
    int32_t term_id,
    const uint8_t *header_template,
    const uint8_t *src,
    int32_t length,
    int64_t reserved_value);
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
    int64_t reserved_value);
int64_t amd_term_claim(
    uint8_t *term,
    int32_t term_length,
    uint8_t *meta,
    int64_t tail_offset,
    int32_t term_id,
    const uint8_t *header_template,
    int32_t length);
int64_t amd_term_scan_frames(
    const uint8_t *term, int32_t capacity, int32_t offset, int32_t max_frames, int32_t *frames);
int64_t amd_term_scan_for_availability(const uint8_t *term, int32_t capacity, int32_t offset, int32_t max_length);
int32_t amd_term_block_scan(const uint8_t *term, int32_t term_offset, int32_t limit_offset);
/* amd_term_block_scan that also counts the block's messages (unfragmented or BEGIN_FRAG DATA frames) in the
 * same walk: (messages << 32) | end offset. */
int64_t amd_term_block_scan_count(const uint8_t *term, int32_t term_offset, int32_t limit_offset);
int32_t amd_term_count_messages(const uint8_t *term, int32_t capacity, int32_t offset, int32_t end);
int64_t amd_term_write_block(
    uint8_t *term,
    int32_t capacity,
    int32_t term_offset,
    uint8_t *src,
    int32_t src_length,
    int32_t limit,
    int32_t session_id,
    int32_t stream_id);
#endif
