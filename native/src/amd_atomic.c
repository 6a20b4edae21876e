/* See native/README.md for the memory-ordering contract of each function.
 * Offsets must keep 4- and 8-byte fields naturally aligned; the callers' layouts guarantee it. */
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
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

/* Nonzero when [offset, offset + length) is not inside a buffer of `capacity` bytes (overflow-safe). */
static int amd_out_of_bounds(int64_t capacity, int64_t offset, int64_t length)
{
    return capacity < 0 || offset < 0 || length < 0 || offset > capacity || length > capacity - offset;
}

int amd_copy(
    uint8_t *dst, int64_t dst_capacity, int64_t dst_offset,
    const uint8_t *src, int64_t src_capacity, int64_t src_offset, int64_t length)
{
    if (amd_out_of_bounds(dst_capacity, dst_offset, length) || amd_out_of_bounds(src_capacity, src_offset, length))
    {
        return AMD_OUT_OF_BOUNDS;
    }
    memmove(dst + dst_offset, src + src_offset, (size_t)length);
    return 0;
}

/* Cleaning a consumed term (megabytes per call on IPC) with memset runs at ~12 GB/s on the 2-core bench box
 * (glibc 2.36, rep stosb) and pulls every line into the cache first; non-temporal stores skip both and run at
 * ~27 GB/s, and the zeros are not read again until the term comes round (3 terms later). Small zeroing (ring
 * records, counter keys) stays memset: those bytes are reused at once. The sfence orders the streamed stores
 * before any later store, so the caller's release store (head, position, limit) still publishes them. */
#define AMD_ZERO_STREAM_MIN (256 * 1024)

int amd_zero(uint8_t *base, int64_t capacity, int64_t offset, int64_t length)
{
    if (amd_out_of_bounds(capacity, offset, length))
    {
        return AMD_OUT_OF_BOUNDS;
    }
    uint8_t *p = base + offset;
    size_t n = (size_t)length;
#if defined(__x86_64__) && defined(__SSE2__)
    if (n >= AMD_ZERO_STREAM_MIN)
    {
        size_t head = (size_t)(-(uintptr_t)p & 63);
        memset(p, 0, head);
        p += head;
        n -= head;
        size_t body = n & ~(size_t)63;
        const __m128i zero = _mm_setzero_si128();
        for (size_t i = 0; i < body; i += 64)
        {
            _mm_stream_si128((__m128i *)(p + i), zero);
            _mm_stream_si128((__m128i *)(p + i + 16), zero);
            _mm_stream_si128((__m128i *)(p + i + 32), zero);
            _mm_stream_si128((__m128i *)(p + i + 48), zero);
        }
        _mm_sfence();
        memset(p + body, 0, n - body);
        return 0;
    }
#endif
    memset(p, 0, n);
    return 0;
}
