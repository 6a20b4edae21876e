/* Batched UDP socket I/O (design.md section 1: "C moves bytes"): recvmmsg/sendmmsg on a non-blocking
 * socket owned by Python (driver/media/udp_transport.py). Linux only (recvmmsg, sendmmsg).
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations
 * plain C. Nothing here allocates or keeps state: the message headers live on the stack, bounded by
 * AMD_UDP_MAX_BATCH; every buffer is the caller's.
 *
 * Results: >= 0 is a count (messages or bytes); < 0 is -errno. "Would block" is 0 for receives (nothing
 * there) but -EAGAIN for sends (the caller counts a short send). */
#ifndef AMD_UDP_H
#define AMD_UDP_H
#include <stdint.h>

enum
{
    AMD_UDP_MAX_BATCH = 256,            /* messages per call at most; larger requests are clamped */
    AMD_UDP_ADDRESS_SLOT_LENGTH = 128,  /* sizeof(struct sockaddr_storage) on Linux */
    AMD_UDP_MIN_SEGMENT = 32,           /* a coalesced receive is split only into segments this long at least */
    AMD_UDP_MAX_GSO_MESSAGES = 64,      /* offloaded sends (each up to AMD_UDP_MAX_GSO_SEGMENTS) per call */
    AMD_UDP_MAX_GSO_SEGMENTS = 64,      /* datagrams per offloaded send (the kernel's oldest UDP_MAX_SEGMENTS) */
    AMD_UDP_MAX_GSO_BYTES = 65000       /* payload of one offloaded send at most (below 65507, IPv4's limit) */
};

/* Receive up to max_messages datagrams without blocking (recvmmsg with MSG_DONTWAIT). Datagram i lands at
 * buffers + i * slot_length; lengths[i] is its length, or -(bytes kept) when it was longer than
 * slot_length and truncated. When addrs is not NULL the source address lands at
 * addrs + i * AMD_UDP_ADDRESS_SLOT_LENGTH (a struct sockaddr) and addr_lengths[i] is its length.
 * Returns the count (0 when nothing is waiting), or -errno (an error after some datagrams were received
 * is reported by the next call, as recvmmsg does). EINTR is retried. */
int32_t amd_udp_recv_batch(
    int fd,
    uint8_t *buffers,
    int32_t slot_length,
    int32_t max_messages,
    int32_t *lengths,
    uint8_t *addrs,
    int32_t *addr_lengths);

/* 1 when a send that failed with this errno is a short send to count (nothing went, try again later), not an
 * error: a full socket buffer (EAGAIN, EWOULDBLOCK, ENOBUFS), an ICMP port unreachable left on a connected
 * socket (ECONNREFUSED), no destination known yet (EDESTADDRREQ, ENOTCONN); else 0. The one list: the
 * native cycle and driver/media/udp_transport.py (through udp_batch.SHORT_SEND_ERRNOS) both ask it. */
int32_t amd_udp_is_short_send(int32_t error);

/* One datagram of length bytes from buf (sendto with MSG_DONTWAIT): to addr when addr_length > 0, else to
 * the connected peer. Returns the bytes sent or -errno (-EAGAIN when the socket buffer is full). */
int32_t amd_udp_sendto(int fd, const uint8_t *buf, int32_t length, const uint8_t *addr, int32_t addr_length);

/* count datagrams in one sendmmsg (MSG_DONTWAIT): datagram i is lengths[i] bytes at base + offsets[i], all
 * to addr when addr_length > 0, else to the connected peer. Returns how many were sent (the first
 * `result` went; the rest did not), or -errno when not even the first could be sent. */
int32_t amd_udp_send_batch(
    int fd,
    const uint8_t *base,
    const int64_t *offsets,
    const int32_t *lengths,
    int32_t count,
    const uint8_t *addr,
    int32_t addr_length);

/* The sender's burst (NetworkPublication.send): from term_offset, up to max_datagrams datagrams of the
 * committed frames a TermScanner.scanForAvailability would hand out one by one (each at most
 * min(mtu, what is left of window) bytes; a PAD frame travels as its header and its rest is skipped), in one
 * sendmmsg to addr (addr_length > 0) or the connected peer. The scan stops at the end of the term.
 * result[0] = bytes sent (the datagrams' lengths), result[1] = how far the sender position moves for them
 * (padding included), result[2] = datagrams scanned (more than sent: a short send). Returns the datagrams
 * sent (0: nothing to send), or -errno when not even the first could go (result[0..1] are then 0).
 * Frame lengths are read with acquire loads; nothing is written to the term. */
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
    int64_t *result);

/* amd_udp_recv_batch for a socket with UDP_GRO on: the kernel may hand several datagrams of one sender as
 * one coalesced buffer with a UDP_GRO control message giving the segment size; it is split here back into
 * its datagrams (each gso_size bytes, the last one shorter). Buffer i lands at buffers + i * slot_length as
 * before; datagram k of the result is lengths[k] bytes at buffers + offsets[k], from the source address of
 * buffer sources[k] (addrs + sources[k] * AMD_UDP_ADDRESS_SLOT_LENGTH, addr_lengths[sources[k]] long).
 * A buffer without the control message is one datagram; one whose segment size is not a multiple of
 * AMD_UDP_MIN_SEGMENT (our senders' datagrams are whole 32-byte aligned frames, so their segments always
 * are) or that was truncated stays one datagram (its length negated when truncated) for the caller to
 * reject. Every datagram therefore starts 32-byte aligned. At most max_datagrams are reported (the caller
 * sizes them max_messages * slot_length / AMD_UDP_MIN_SEGMENT: nothing is then dropped).
 * *buffers_received = how many buffers recvmmsg filled (== max_messages: more may be waiting).
 * Returns the datagram count (0 when nothing is waiting) or -errno. */
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
    int32_t *buffers_received);

/* amd_udp_send_term_burst with UDP generic segmentation offload: the same datagrams (the same scan, the
 * same lengths and bytes), but each run of up to AMD_UDP_MAX_GSO_SEGMENTS contiguous datagrams of one
 * length (the last of a run may be shorter) goes as one message with a UDP_SEGMENT control message; the
 * kernel (or the NIC) cuts it into exactly those datagrams, so the wire is unchanged. Up to
 * AMD_UDP_MAX_GSO_MESSAGES messages in one sendmmsg, so max_datagrams may go up to
 * AMD_UDP_MAX_GSO_MESSAGES * AMD_UDP_MAX_GSO_SEGMENTS. result[] and the return value as
 * amd_udp_send_term_burst (datagrams, not messages); -EIO or -EINVAL when the socket or route cannot
 * offload (the caller falls back to amd_udp_send_term_burst). */
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
    int64_t *result);
#endif
