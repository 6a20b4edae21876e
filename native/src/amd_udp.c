/* See native/include/amd_udp.h and native/README.md ("Batched UDP I/O"). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "amd_term.h"
#include "amd_udp.h"

_Static_assert(
    sizeof(struct sockaddr_storage) == AMD_UDP_ADDRESS_SLOT_LENGTH,
    "AMD_UDP_ADDRESS_SLOT_LENGTH must be sizeof(struct sockaddr_storage)");

int32_t amd_udp_recv_batch(
    int fd,
    uint8_t *buffers,
    int32_t slot_length,
    int32_t max_messages,
    int32_t *lengths,
    uint8_t *addrs,
    int32_t *addr_lengths)
{
    struct mmsghdr messages[AMD_UDP_MAX_BATCH];
    struct iovec iov[AMD_UDP_MAX_BATCH];

    if (max_messages > AMD_UDP_MAX_BATCH)
    {
        max_messages = AMD_UDP_MAX_BATCH;
    }
    if (max_messages <= 0 || slot_length <= 0)
    {
        return -EINVAL;
    }

    for (int32_t i = 0; i < max_messages; i++)
    {
        iov[i].iov_base = buffers + (int64_t)i * slot_length;
        iov[i].iov_len = (size_t)slot_length;
        memset(&messages[i].msg_hdr, 0, sizeof(messages[i].msg_hdr));
        messages[i].msg_hdr.msg_iov = &iov[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        if (NULL != addrs)
        {
            messages[i].msg_hdr.msg_name = addrs + (int64_t)i * AMD_UDP_ADDRESS_SLOT_LENGTH;
            messages[i].msg_hdr.msg_namelen = AMD_UDP_ADDRESS_SLOT_LENGTH;
        }
        messages[i].msg_len = 0;
    }

    int result;
    do
    {
        result = recvmmsg(fd, messages, (unsigned int)max_messages, MSG_DONTWAIT, NULL);
    }
    while (result < 0 && EINTR == errno);

    if (result < 0)
    {
        return (EAGAIN == errno || EWOULDBLOCK == errno) ? 0 : -errno;
    }

    for (int i = 0; i < result; i++)
    {
        const int32_t length = (int32_t)messages[i].msg_len;
        lengths[i] = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) ? -length : length;
        if (NULL != addrs && NULL != addr_lengths)
        {
            addr_lengths[i] = (int32_t)messages[i].msg_hdr.msg_namelen;
        }
    }

    return result;
}

int32_t amd_udp_sendto(int fd, const uint8_t *buf, int32_t length, const uint8_t *addr, int32_t addr_length)
{
    ssize_t result;
    do
    {
        result = addr_length > 0 ?
            sendto(fd, buf, (size_t)length, MSG_DONTWAIT, (const struct sockaddr *)addr, (socklen_t)addr_length) :
            send(fd, buf, (size_t)length, MSG_DONTWAIT);
    }
    while (result < 0 && EINTR == errno);

    return result < 0 ? -errno : (int32_t)result;
}

/* One datagram of a sendmmsg batch: ``length`` bytes at ``data``, to ``addr`` or (none) the connected peer. */
static void set_message(
    struct mmsghdr *message,
    struct iovec *iov,
    const uint8_t *data,
    int32_t length,
    const uint8_t *addr,
    int32_t addr_length)
{
    iov->iov_base = (void *)data;
    iov->iov_len = (size_t)length;
    memset(&message->msg_hdr, 0, sizeof(message->msg_hdr));
    message->msg_hdr.msg_iov = iov;
    message->msg_hdr.msg_iovlen = 1;
    if (addr_length > 0)
    {
        message->msg_hdr.msg_name = (void *)addr;
        message->msg_hdr.msg_namelen = (socklen_t)addr_length;
    }
    message->msg_len = 0;
}

int32_t amd_udp_send_batch(
    int fd,
    const uint8_t *base,
    const int64_t *offsets,
    const int32_t *lengths,
    int32_t count,
    const uint8_t *addr,
    int32_t addr_length)
{
    struct mmsghdr messages[AMD_UDP_MAX_BATCH];
    struct iovec iov[AMD_UDP_MAX_BATCH];

    if (count > AMD_UDP_MAX_BATCH)
    {
        count = AMD_UDP_MAX_BATCH;
    }
    if (count <= 0)
    {
        return 0;
    }

    for (int32_t i = 0; i < count; i++)
    {
        set_message(&messages[i], &iov[i], base + offsets[i], lengths[i], addr, addr_length);
    }

    int result;
    do
    {
        result = sendmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT);
    }
    while (result < 0 && EINTR == errno);

    return result < 0 ? -errno : result;
}

int32_t amd_udp_send_term_burst(
    int fd,
    const uint8_t *term,
    int32_t term_length,
    int32_t term_offset,
    int64_t window,
    int32_t mtu,
    int32_t max_datagrams,
    const uint8_t *addr,
    int32_t addr_length,
    int64_t *result)
{
    struct mmsghdr messages[AMD_UDP_MAX_BATCH];
    struct iovec iov[AMD_UDP_MAX_BATCH];
    int32_t advances[AMD_UDP_MAX_BATCH];
    int32_t count = 0;
    int64_t offset = term_offset;

    result[0] = 0;
    result[1] = 0;
    result[2] = 0;
    if (max_datagrams > AMD_UDP_MAX_BATCH)
    {
        max_datagrams = AMD_UDP_MAX_BATCH;
    }

    while (count < max_datagrams && window > 0 && offset < term_length)
    {
        const int32_t max_length = window < mtu ? (int32_t)window : mtu;
        const int64_t scan = amd_term_scan_for_availability(term, term_length, (int32_t)offset, max_length);
        const int32_t available = (int32_t)(scan & 0xFFFFFFFF);
        const int32_t advance = available + (int32_t)(scan >> 32);
        if (available <= 0)
        {
            break;
        }

        set_message(&messages[count], &iov[count], term + offset, available, addr, addr_length);
        advances[count] = advance;
        offset += advance;
        window -= advance;
        count++;
    }

    result[2] = count;
    if (0 == count)
    {
        return 0;
    }

    int sent;
    do
    {
        sent = sendmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT);
    }
    while (sent < 0 && EINTR == errno);

    if (sent < 0)
    {
        return -errno;
    }

    for (int i = 0; i < sent; i++)
    {
        result[0] += (int64_t)iov[i].iov_len;
        result[1] += advances[i];
    }

    return sent;
}
