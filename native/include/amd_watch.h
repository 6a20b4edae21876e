/* A watch over 64-bit words in mapped memory (publication tails, subscriber positions, the to-driver ring's
 * tail) that other processes write: an idle agent asks "did any of them move?" for the price of a few loads
 * instead of a whole duty cycle. This header is also the cffi cdef: build_ffi.py drops the preprocessor lines,
 * so keep declarations plain C. The caller owns both arrays; nothing here keeps state. */
#ifndef AMD_WATCH_H
#define AMD_WATCH_H
#include <stdint.h>

/* Load each of the count words (acquire), compare it with seen[i] and store it there. Returns how many of
 * them differed from what seen held (0: nothing moved since the last call). */
int32_t amd_watch_changed(int64_t *const *words, int64_t *seen, int32_t count);

/* amd_watch_changed's loads and stores, summing how far the words moved: the total of |value - seen[i]|
 * (saturating at INT64_MAX), so a caller tells a trickle (a message now and then) from a stream. */
int64_t amd_watch_moved(int64_t *const *words, int64_t *seen, int32_t count);

/* amd_watch_changed, again and again without giving up the CPU, until a word moves or spin_ns (CLOCK_MONOTONIC)
 * have passed: right after an agent handed a client its data, the client's answer often lands within
 * microseconds, far sooner than a timer could wake the agent. Returns what the last amd_watch_changed did. */
int32_t amd_watch_spin(int64_t *const *words, int64_t *seen, int32_t count, int64_t spin_ns);
#endif
