/* Receiver-side rebuild of a term from datagrams, gap scans and gap fills (docs/logbuffer.md section 7).
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations
 * plain C. Frame offsets come from amd_term.h. */
#ifndef AMD_REBUILD_H
#define AMD_REBUILD_H
#include <stdint.h>

/* Results of amd_term_rebuild_insert other than a count of inserted frames (>= 0). */
enum
{
    AMD_REBUILD_OUT_OF_TERM = -1,
    AMD_REBUILD_MALFORMED = -2,
    AMD_MAX_UDP_PAYLOAD_LENGTH = 65504  /* frames.MAX_UDP_PAYLOAD_LENGTH */
};

int32_t amd_term_rebuild_insert(
    uint8_t *term, int32_t capacity, int32_t term_offset, const uint8_t *src, int64_t src_offset, int32_t length);
int64_t amd_term_scan_for_gap(const uint8_t *term, int32_t capacity, int32_t rebuild_offset, int32_t limit_offset);
int64_t amd_term_scan_for_gaps(
    const uint8_t *term, int32_t capacity, int32_t rebuild_offset, int32_t limit_offset, int32_t max_gaps,
    int32_t *gaps);
int32_t amd_term_gap_fill(
    uint8_t *term, int32_t capacity, int32_t gap_offset, int32_t gap_length, const uint8_t *header_template,
    int32_t term_id);
#endif
