/* CRC32C (Castagnoli) of recorded frames, for the archive's checksum sidecar (docs/archive.md section 19).
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations plain C.
 * The SSE4.2 crc32 instruction is used when the CPU has it, else a table; both give the same values. */
#ifndef AMD_CRC_H
#define AMD_CRC_H
#include <stdint.h>
#include <stddef.h>

/* CRC32C of data[0, length), continuing crc (0 to start): the iSCSI / Kafka / Aeron CRC32C. Long runs go as three
 * interleaved chains combined at the end. */
uint32_t amd_crc32c(uint32_t crc, const uint8_t *data, size_t length);

/* One 16-byte entry (position i64 @0, frame length i32 @8, crc u32 @12) per frame of block[0, length), the block
 * starting at stream position `position`; the CRC covers frame length bytes, of a padding frame only its 32-byte
 * header (all a recording keeps of one). The walk stops at a frame length <= 0, a frame that runs past the block,
 * or after capacity entries. Returns the number of entries written to out. */
int32_t amd_frame_checksums(
    const uint8_t *block, int32_t length, int64_t position, uint8_t *out, int32_t capacity);

/* Entries laid out as above, each covering a run of whole frames (one frame, or a recorded block) that starts
 * at its position: checked against data, which starts at stream position base. An entry covers its length bytes,
 * or 32 when a padding frame starts at its position. Returns the index of the first entry whose bytes are not
 * all in data[0, length) or whose CRC32C differs; count when all hold. */
int32_t amd_check_checksums(
    const uint8_t *data, int64_t length, int64_t base, const uint8_t *entries, int32_t count);
#endif
