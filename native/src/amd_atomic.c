/* See native/README.md for the memory-ordering contract of each function.
 * Offsets must keep 4- and 8-byte fields naturally aligned; the callers' layouts guarantee it. */
#include <string.h>
#include "amd_atomic.h"

#define I32(base, offset) ((int32_t *)((base) + (offset)))
#define I64(base, offset) ((int64_t *)((base) + (offset)))

int32_t amd_get_int32_acquire(const uint8_t *base, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(base + offset), __ATOMIC_ACQUIRE);
}

int64_t amd_get_int64_acquire(const uint8_t *base, int64_t offset)
{
    return __atomic_load_n((const int64_t *)(base + offset), __ATOMIC_ACQUIRE);
}

void amd_put_int32_release(uint8_t *base, int64_t offset, int32_t value)
{
    __atomic_store_n(I32(base, offset), value, __ATOMIC_RELEASE);
}

void amd_put_int64_release(uint8_t *base, int64_t offset, int64_t value)
{
    __atomic_store_n(I64(base, offset), value, __ATOMIC_RELEASE);
}

int32_t amd_get_int32_volatile(const uint8_t *base, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(base + offset), __ATOMIC_SEQ_CST);
}

int64_t amd_get_int64_volatile(const uint8_t *base, int64_t offset)
{
    return __atomic_load_n((const int64_t *)(base + offset), __ATOMIC_SEQ_CST);
}

void amd_put_int32_volatile(uint8_t *base, int64_t offset, int32_t value)
{
    __atomic_store_n(I32(base, offset), value, __ATOMIC_SEQ_CST);
}

void amd_put_int64_volatile(uint8_t *base, int64_t offset, int64_t value)
{
    __atomic_store_n(I64(base, offset), value, __ATOMIC_SEQ_CST);
}

int amd_cas_int32(uint8_t *base, int64_t offset, int32_t expected, int32_t update)
{
    return __atomic_compare_exchange_n(
        I32(base, offset), &expected, update, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int amd_cas_int64(uint8_t *base, int64_t offset, int64_t expected, int64_t update)
{
    return __atomic_compare_exchange_n(
        I64(base, offset), &expected, update, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int32_t amd_get_and_add_int32(uint8_t *base, int64_t offset, int32_t delta)
{
    return __atomic_fetch_add(I32(base, offset), delta, __ATOMIC_SEQ_CST);
}

int64_t amd_get_and_add_int64(uint8_t *base, int64_t offset, int64_t delta)
{
    return __atomic_fetch_add(I64(base, offset), delta, __ATOMIC_SEQ_CST);
}

void amd_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
void amd_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
void amd_fence_full(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

void amd_copy(uint8_t *dst, int64_t dst_offset, const uint8_t *src, int64_t src_offset, int64_t length)
{
    memmove(dst + dst_offset, src + src_offset, (size_t)length);
}

void amd_zero(uint8_t *base, int64_t offset, int64_t length)
{
    memset(base + offset, 0, (size_t)length);
}
