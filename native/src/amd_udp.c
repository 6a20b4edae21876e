/* See native/include/amd_udp.h and native/README.md ("Batched UDP I/O"). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "amd_term.h"
#include "amd_udp.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

_Static_assert(
    sizeof(struct sockaddr_storage) == AMD_UDP_ADDRESS_SLOT_LENGTH,
    "AMD_UDP_ADDRESS_SLOT_LENGTH must be sizeof(struct sockaddr_storage)");

/* The receive slots: buffer i at buffers + i * slot_length, its source address (when addrs is not NULL) in
 * address slot i. Control buffers, when wanted, are the caller's to add. */
static inline void set_receive_slots(
    struct mmsghdr *messages, struct iovec *iov, uint8_t *buffers, int32_t slot_length, int32_t count, uint8_t *addrs)
{
    for (int32_t i = 0; i < count; i++)
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
}

/* recvmmsg without blocking, EINTR retried: the count, 0 when nothing is waiting, or -errno. */
static inline int receive_messages(int fd, struct mmsghdr *messages, int32_t count)
{
    int result;
    do
    {
        result = recvmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT, NULL);
    }
    while (result < 0 && EINTR == errno);

    if (result < 0)
    {
        return (EAGAIN == errno || EWOULDBLOCK == errno) ? 0 : -errno;
    }
    return result;
}

/* sendmmsg without blocking, EINTR retried: how many went, or -errno. */
static inline int send_messages(int fd, struct mmsghdr *messages, int32_t count)
{
    int sent;
    do
    {
        sent = sendmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT);
    }
    while (sent < 0 && EINTR == errno);

    return sent < 0 ? -errno : sent;
}

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

    set_receive_slots(messages, iov, buffers, slot_length, max_messages, addrs);
    const int result = receive_messages(fd, messages, max_messages);

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

    return send_messages(fd, messages, count);
}

/* The next datagram of a sender's burst, as TermScanner.scanForAvailability hands it out: its length (at most
 * min(mtu, window); <= 0: nothing to send) and in *padding the padding skipped after it. */
static inline int32_t next_datagram(
    const uint8_t *term, int32_t term_length, int64_t offset, int64_t window, int32_t mtu, int32_t *padding)
{
    const int32_t max_length = window < mtu ? (int32_t)window : mtu;
    const int64_t scan = amd_term_scan_for_availability(term, term_length, (int32_t)offset, max_length);
    *padding = (int32_t)(scan >> 32);
    return (int32_t)(scan & 0xFFFFFFFF);
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
        int32_t padding;
        const int32_t available = next_datagram(term, term_length, offset, window, mtu, &padding);
        if (available <= 0)
        {
            break;
        }
        const int32_t advance = available + padding;

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

    const int sent = send_messages(fd, messages, count);
    if (sent < 0)
    {
        return sent;
    }

    for (int i = 0; i < sent; i++)
    {
        result[0] += (int64_t)iov[i].iov_len;
        result[1] += advances[i];
    }

    return sent;
}

int32_t amd_udp_recv_batch_gro(
    int fd,
    uint8_t *buffers,
    int32_t slot_length,
    int32_t max_messages,
    int64_t *offsets,
    int32_t *lengths,
    int32_t *sources,
    int32_t max_datagrams,
    uint8_t *addrs,
    int32_t *addr_lengths,
    int32_t *buffers_received)
{
    struct mmsghdr messages[AMD_UDP_MAX_BATCH];
    struct iovec iov[AMD_UDP_MAX_BATCH];
    union
    {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control[AMD_UDP_MAX_BATCH];

    *buffers_received = 0;
    if (max_messages > AMD_UDP_MAX_BATCH)
    {
        max_messages = AMD_UDP_MAX_BATCH;
    }
    if (max_messages <= 0 || slot_length <= 0 || max_datagrams <= 0)
    {
        return -EINVAL;
    }

    set_receive_slots(messages, iov, buffers, slot_length, max_messages, addrs);
    for (int32_t i = 0; i < max_messages; i++)
    {
        messages[i].msg_hdr.msg_control = control[i].buf;
        messages[i].msg_hdr.msg_controllen = sizeof(control[i].buf);
    }
    const int result = receive_messages(fd, messages, max_messages);
    if (result <= 0)
    {
        return result;
    }
    *buffers_received = result;

    int32_t count = 0;
    for (int i = 0; i < result && count < max_datagrams; i++)
    {
        struct msghdr *header = &messages[i].msg_hdr;
        const int32_t length = (int32_t)messages[i].msg_len;
        const int64_t base = (int64_t)i * slot_length;
        int32_t segment = length;

        if (NULL != addrs && NULL != addr_lengths)
        {
            addr_lengths[i] = (int32_t)header->msg_namelen;
        }
        for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(header); NULL != cmsg; cmsg = CMSG_NXTHDR(header, cmsg))
        {
            if (SOL_UDP == cmsg->cmsg_level && UDP_GRO == cmsg->cmsg_type)
            {
                int gso_size;
                memcpy(&gso_size, CMSG_DATA(cmsg), sizeof(gso_size));
                if (gso_size >= AMD_UDP_MIN_SEGMENT && 0 == gso_size % AMD_UDP_MIN_SEGMENT && gso_size < length)
                {
                    segment = gso_size;
                }
            }
        }

        if (header->msg_flags & MSG_TRUNC)
        {
            offsets[count] = base;
            lengths[count] = -length;
            sources[count] = i;
            count++;
            continue;
        }

        for (int32_t at = 0; at < length && count < max_datagrams; at += segment)
        {
            offsets[count] = base + at;
            lengths[count] = length - at < segment ? length - at : segment;
            sources[count] = i;
            count++;
        }
        if (0 == length && count < max_datagrams)
        {
            offsets[count] = base;
            lengths[count] = 0;
            sources[count] = i;
            count++;
        }
    }

    return count;
}

int32_t amd_udp_send_term_burst_gso(
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
    struct mmsghdr messages[AMD_UDP_MAX_GSO_MESSAGES];
    struct iovec iov[AMD_UDP_MAX_GSO_MESSAGES];
    union
    {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } control[AMD_UDP_MAX_GSO_MESSAGES];
    int32_t segment_length[AMD_UDP_MAX_GSO_MESSAGES];
    int32_t segments[AMD_UDP_MAX_GSO_MESSAGES];
    int64_t advances[AMD_UDP_MAX_GSO_MESSAGES];
    int32_t count = -1;   /* index of the message being filled */
    int open = 0;         /* may the current message take another datagram */
    int32_t scanned = 0;
    int64_t offset = term_offset;

    result[0] = 0;
    result[1] = 0;
    result[2] = 0;
    if (max_datagrams > AMD_UDP_MAX_GSO_MESSAGES * AMD_UDP_MAX_GSO_SEGMENTS)
    {
        max_datagrams = AMD_UDP_MAX_GSO_MESSAGES * AMD_UDP_MAX_GSO_SEGMENTS;
    }

    while (scanned < max_datagrams && window > 0 && offset < term_length)
    {
        int32_t padding;
        const int32_t available = next_datagram(term, term_length, offset, window, mtu, &padding);
        if (available <= 0)
        {
            break;
        }

        if (open && available <= segment_length[count] && segments[count] < AMD_UDP_MAX_GSO_SEGMENTS &&
            (int64_t)iov[count].iov_len + available <= AMD_UDP_MAX_GSO_BYTES)
        {
            /* contiguous: the previous datagram of this message had no padding after it */
            iov[count].iov_len += (size_t)available;
            segments[count]++;
        }
        else
        {
            if (count + 1 == AMD_UDP_MAX_GSO_MESSAGES)
            {
                break;
            }
            count++;
            set_message(&messages[count], &iov[count], term + offset, available, addr, addr_length);
            segment_length[count] = available;
            segments[count] = 1;
            advances[count] = 0;
        }
        /* a shorter datagram or a skipped padding ends the run */
        open = available == segment_length[count] && 0 == padding;
        advances[count] += available + padding;
        offset += available + padding;
        window -= available + padding;
        scanned++;
    }

    result[2] = scanned;
    if (count < 0)
    {
        return 0;
    }
    count++;

    for (int32_t i = 0; i < count; i++)
    {
        if (segments[i] > 1)
        {
            struct msghdr *header = &messages[i].msg_hdr;
            const uint16_t size = (uint16_t)segment_length[i];
            header->msg_control = control[i].buf;
            header->msg_controllen = sizeof(control[i].buf);
            struct cmsghdr *cmsg = CMSG_FIRSTHDR(header);
            cmsg->cmsg_level = SOL_UDP;
            cmsg->cmsg_type = UDP_SEGMENT;
            cmsg->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            memcpy(CMSG_DATA(cmsg), &size, sizeof(size));
        }
    }

    const int sent = send_messages(fd, messages, count);
    if (sent < 0)
    {
        return sent;
    }

    int32_t datagrams = 0;
    for (int i = 0; i < sent; i++)
    {
        result[0] += (int64_t)iov[i].iov_len;
        result[1] += advances[i];
        datagrams += segments[i];
    }
    return datagrams;
}

int32_t amd_udp_is_short_send(int32_t error)
{
    return EAGAIN == error || EWOULDBLOCK == error || ENOBUFS == error || ECONNREFUSED == error ||
        EDESTADDRREQ == error || ENOTCONN == error;
}
