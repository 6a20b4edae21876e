/* See native/include/amd_timer.h and native/README.md ("Park timer"). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "amd_timer.h"

int32_t amd_timerfd_create(void)
{
    const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int32_t amd_timerfd_arm(int fd, int64_t delay_ns)
{
    struct itimerspec spec = { { 0, 0 }, { 0, 0 } };
    if (delay_ns > 0)
    {
        spec.it_value.tv_sec = (time_t)(delay_ns / 1000000000);
        spec.it_value.tv_nsec = (long)(delay_ns % 1000000000);
    }
    return timerfd_settime(fd, 0, &spec, NULL) < 0 ? -errno : 0;
}

int64_t amd_timerfd_clear(int fd)
{
    uint64_t expirations = 0;
    ssize_t result;
    do
    {
        result = read(fd, &expirations, sizeof(expirations));
    }
    while (result < 0 && EINTR == errno);

    if (result < 0)
    {
        return (EAGAIN == errno || EWOULDBLOCK == errno) ? 0 : -errno;
    }
    return (int64_t)expirations;
}
