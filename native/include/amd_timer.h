/* A one-shot timer file descriptor (Linux timerfd, CLOCK_MONOTONIC) for agent parks shorter than the event
 * loop's millisecond timers: the loop watches the descriptor, so a park stays a wait that I/O can end.
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations plain C.
 * Results: >= 0 is a descriptor or a count; < 0 is -errno. Nothing here keeps state. */
#ifndef AMD_TIMER_H
#define AMD_TIMER_H
#include <stdint.h>

/* A non-blocking, close-on-exec timerfd on CLOCK_MONOTONIC, disarmed. Close it with os.close. */
int32_t amd_timerfd_create(void);

/* Arm fd to expire once, delay_ns from now (delay_ns <= 0 disarms it). Returns 0 or -errno. */
int32_t amd_timerfd_arm(int fd, int64_t delay_ns);

/* Consume the expirations (the descriptor is then no longer readable): their count, 0 when none. */
int64_t amd_timerfd_clear(int fd);
#endif
