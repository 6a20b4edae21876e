/* The sender's plain send of one network publication (driver/data_step.py owns this header): a burst of what publishers
 * committed plus all of its accounting, the one source for NetworkPublication.send and the native
 * steady-state cycle (amd_cycle.h) alike. The struct is the publication's send state: the Python sender and
 * the native cycle read and write the same one, so nothing is handed back between them.
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations
 * plain C. */
#ifndef AMD_STEP_H
#define AMD_STEP_H
#include <stdint.h>

enum
{
    AMD_SEND_STALLED = -1,  /* flow control holds the publication and nothing went (the stall is counted) */
    AMD_SEND_ERROR = -2     /* a burst failed with an error that is not a short send: errno in ->error */
};

typedef struct
{
    uint8_t *terms[3];             /* in: the log's three term buffers */
    int64_t *sender_position;      /* in: the sender position counter's word (written here, release) */
    int64_t *sender_limit;         /* in: the sender limit counter's word */
    int64_t *bytes_sent;           /* in: the BYTES_SENT system counter's word (what went is added) */
    int64_t *short_sends;          /* in: the SHORT_SENDS system counter's word */
    int64_t *flow_control_limits;  /* in: the SENDER_FLOW_CONTROL_LIMITS system counter's word */
    int64_t *sender_bpe;           /* in: the publication's sender back-pressure events counter's word, or NULL */
    int64_t last_send_ns;          /* in/out: when data (or a setup or heartbeat: Python's) last went */
    int32_t term_length;           /* in */
    int32_t position_bits_to_shift;/* in */
    int32_t mtu;                   /* in */
    int32_t max_datagrams;         /* in: the burst */
    int32_t fd;                    /* in: the connected send socket */
    int32_t gso;                   /* in: 1 = UDP_SEGMENT bursts */
    int32_t track_sender_limits;   /* in/out: 1 once data went, 0 once a stall was counted */
    int32_t error;                 /* out: AMD_SEND_ERROR's errno (0 otherwise) */
} amd_send_step;

/* At CLOCK_MONOTONIC now_ns: when a frame is committed at the sender position (or a stall may be counted),
 * bursts of up to max_datagrams datagrams in all from the sender position, on into the next term when one
 * ends exactly at a term's end; each burst's bytes added to BYTES_SENT and its advance release-stored to the
 * sender position; a burst that sent fewer datagrams than it scanned (or none, with a short send's errno)
 * counts a short send and ends the step; a closed window counts a flow-control stall once after data went.
 * Returns the bytes sent (0: nothing to send), AMD_SEND_STALLED, or AMD_SEND_ERROR (what went before the
 * failing burst is accounted; nothing of it moved). */
int64_t amd_send_step_run(amd_send_step *step, int64_t now_ns);

/* 1 when a frame is committed at the sender position (acquire), else 0. No system call. */
int32_t amd_send_step_pending(const amd_send_step *step);
#endif
