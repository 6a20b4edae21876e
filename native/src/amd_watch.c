/* See native/include/amd_watch.h and native/README.md ("Word watch"). */
#include <stdint.h>
#include <time.h>
#include "amd_watch.h"

static int64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int32_t amd_watch_changed(int64_t *const *words, int64_t *seen, int32_t count)
{
    int32_t changed = 0;
    for (int32_t i = 0; i < count; i++)
    {
        const int64_t value = __atomic_load_n(words[i], __ATOMIC_ACQUIRE);
        if (value != seen[i])
        {
            seen[i] = value;
            changed++;
        }
    }
    return changed;
}

int64_t amd_watch_moved(int64_t *const *words, int64_t *seen, int32_t count)
{
    uint64_t moved = 0;
    for (int32_t i = 0; i < count; i++)
    {
        const int64_t value = __atomic_load_n(words[i], __ATOMIC_ACQUIRE);
        if (value != seen[i])
        {
            /* In unsigned arithmetic: a word reused for another counter may jump anywhere. */
            const uint64_t delta = value > seen[i] ? (uint64_t)value - (uint64_t)seen[i]
                                                   : (uint64_t)seen[i] - (uint64_t)value;
            moved = moved + delta < moved ? UINT64_MAX : moved + delta;
            seen[i] = value;
        }
    }
    return moved > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)moved;
}

int32_t amd_watch_spin(int64_t *const *words, int64_t *seen, int32_t count, int64_t spin_ns)
{
    const int64_t deadline = monotonic_ns() + spin_ns;
    int32_t changed;
    while ((changed = amd_watch_changed(words, seen, count)) == 0 && monotonic_ns() < deadline)
    {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    return changed;
}
