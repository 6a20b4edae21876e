/* Atomics and bulk moves over mapped memory. This header is also the cffi cdef:
 * build_ffi.py drops the preprocessor lines, so keep declarations plain C. */
#ifndef AMD_ATOMIC_H
#define AMD_ATOMIC_H
#include <stdint.h>
#include <stddef.h>

int32_t amd_get_int32_acquire(const uint8_t *base, int64_t offset);
int64_t amd_get_int64_acquire(const uint8_t *base, int64_t offset);
void amd_put_int32_release(uint8_t *base, int64_t offset, int32_t value);
void amd_put_int64_release(uint8_t *base, int64_t offset, int64_t value);
int32_t amd_get_int32_volatile(const uint8_t *base, int64_t offset);
int64_t amd_get_int64_volatile(const uint8_t *base, int64_t offset);
void amd_put_int32_volatile(uint8_t *base, int64_t offset, int32_t value);
void amd_put_int64_volatile(uint8_t *base, int64_t offset, int64_t value);
int amd_cas_int32(uint8_t *base, int64_t offset, int32_t expected, int32_t update);
int amd_cas_int64(uint8_t *base, int64_t offset, int64_t expected, int64_t update);
int32_t amd_get_and_add_int32(uint8_t *base, int64_t offset, int32_t delta);
int64_t amd_get_and_add_int64(uint8_t *base, int64_t offset, int64_t delta);
void amd_fence_acquire(void);
void amd_fence_release(void);
void amd_fence_full(void);
/* Bulk moves check their region against the buffer's capacity and touch nothing outside it:
 * 0 on success, AMD_OUT_OF_BOUNDS (nothing written) when offset/length fall outside either buffer. */
enum
{
    AMD_OUT_OF_BOUNDS = -1
};
int amd_copy(
    uint8_t *dst, int64_t dst_capacity, int64_t dst_offset,
    const uint8_t *src, int64_t src_capacity, int64_t src_offset, int64_t length);
int amd_zero(uint8_t *base, int64_t capacity, int64_t offset, int64_t length);
#endif
