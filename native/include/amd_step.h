/* The data path's plain steps (driver/data_step.py owns this header), each the one source for a Python agent
 * and the native steady-state cycle (amd_cycle.h) alike.
 * The sender's plain send of one network publication: a burst of what publishers committed plus all of its
 * accounting. The struct is the publication's send state: the Python sender and
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

/* The receiver's plain receive of one endpoint's batch: the rebuild into its images plus all of its accounting,
 * the one source for Receiver._rebuild and the native steady-state cycle alike. */
typedef struct
{
    void *images;                  /* in: the receiver's rebuild table (amd_rebuild_batch.h entries), windows set */
    int64_t **hwm;                 /* in: per image, its receiver high-water mark counter's word (written here) */
    int64_t *bytes_received;       /* in: the BYTES_RECEIVED system counter's word */
    int64_t *under_runs;           /* in: the FLOW_CONTROL_UNDER_RUNS system counter's word */
    int64_t *over_runs;            /* in: the FLOW_CONTROL_OVER_RUNS system counter's word */
    int64_t *invalid_packets;      /* in: the INVALID_PACKETS system counter's word */
    int32_t image_count;           /* in */
    int32_t irregular;             /* out: the last run's under-runs, over-runs and rejected inserts, summed */
} amd_receive_step;

/* The count datagrams at base + offsets[i] (lengths[i] long) rebuilt into the images (amd_term_rebuild_batch_at,
 * their results zeroed first), the bytes it took added to BYTES_RECEIVED, its under-runs, over-runs and
 * rejected inserts to their counters, and each image's high-water mark raised to its highest inserted end
 * (a single writer's propose-max: release store). Returns how many datagrams it left to the caller, their
 * indexes in unhandled (count of room); each image's results stay in the table for the caller's frame times. */
int32_t amd_receive_step_run(
    amd_receive_step *step, const uint8_t *base, const int64_t *offsets, const int32_t *lengths, int32_t count,
    int32_t *unhandled);
#endif
