/* The SHARED driver's steady-state duty cycle in one call (driver/fast_cycle.py owns it): what a
 * Python cycle would do when nothing but data moves, i.e. send what publishers committed and rebuild what
 * arrived, for streams the Python agents declared plain (unicast, known images, no setup, retransmit or
 * flow-control stall pending). Anything else, or a full cycle's interval passing, makes it hand back to the
 * Python cycle before it touches anything.
 * This header is also the cffi cdef: build_ffi.py drops the preprocessor lines, so keep declarations
 * plain C. The caller owns every array and buffer. */
#ifndef AMD_CYCLE_H
#define AMD_CYCLE_H
#include <stdint.h>
#include "amd_step.h"

enum
{
    AMD_CYCLE_FULL = -1,   /* run the Python duty cycle now (nothing was left half done) */
    AMD_CYCLE_BATCH = -2   /* a received batch needs Python (cycle->stopped_endpoint), then the Python cycle */
};

/* A receive endpoint with one socket whose data the cycle rebuilds into its images (a UDP_GRO batch). */
typedef struct
{
    amd_receive_step *step;        /* in: the endpoint's receive step (amd_step.h), shared with Python */
    int32_t *inserted;             /* out, accumulates: per image of the step, datagrams inserted */
    uint8_t *buffers;              /* in: the receive batch (driver.media.udp_batch.ReceiveBatch) */
    int64_t *offsets;
    int32_t *lengths;
    int32_t *sources;
    uint8_t *addrs;
    int32_t *addr_lengths;
    int32_t *received;             /* out: buffers the last receive filled */
    int32_t *unhandled;            /* out: indexes the rebuild left to the caller (max_datagrams of room) */
    int32_t fd;                    /* in */
    int32_t slot_length;           /* in */
    int32_t max_messages;          /* in */
    int32_t max_datagrams;         /* in */
    int32_t batch_count;           /* out: AMD_CYCLE_BATCH: datagrams in the batch */
    int32_t unhandled_count;       /* out: AMD_CYCLE_BATCH: how many of them the rebuild left */
} amd_cycle_endpoint;

typedef struct
{
    int64_t **full_words;          /* in: words whose change needs the Python cycle (the to-driver ring's tail) */
    int64_t *full_seen;            /* in: their values when the Python cycle last ran */
    int64_t **moved_words;         /* in: positions the conductor's sweep looks at */
    int64_t *moved_seen;           /* in: their values when the Python cycle last ran */
    amd_send_step **publications;  /* in: the publications' send steps (amd_step.h), shared with Python */
    amd_cycle_endpoint *endpoints;
    int64_t full_due_ns;           /* in: CLOCK_MONOTONIC time from which the Python cycle must run */
    int64_t moved_limit;           /* in: positions moved this far in total since then need the Python cycle */
    int32_t full_word_count;
    int32_t moved_word_count;
    int32_t publication_count;
    int32_t endpoint_count;
    int32_t stopped_endpoint;      /* out: AMD_CYCLE_BATCH: the endpoint whose batch the caller finishes */
    int32_t pad;
} amd_cycle;

/* One steady-state duty cycle at CLOCK_MONOTONIC now_ns: first the checks (the interval, the full words, the
 * sweep's positions), then each publication's send step (amd_send_step_run), then each endpoint's receives, each batch through its receive step (amd_receive_step_run). Returns the
 * work done as the Python agents count it (bytes sent plus datagrams received; 0: nothing to do), or
 * AMD_CYCLE_FULL / AMD_CYCLE_BATCH (FULL also for a send step that stalled or failed before sending). Either
 * may come after some publications sent: what went is accounted by their steps, so the Python cycle just
 * carries on from there. */
int32_t amd_cycle_run(amd_cycle *cycle, int64_t now_ns);

/* Load the full words and the moved words (acquire) into full_seen and moved_seen: the values a Python cycle
 * leaves, against which the native cycles compare until the next one. */
void amd_cycle_snapshot(amd_cycle *cycle);

/* How far the moved words moved since amd_cycle_snapshot, summed (what amd_cycle_run compares with
 * moved_limit): the caller tells a stream from a trickle by it. */
int64_t amd_cycle_moved(const amd_cycle *cycle);

/* The cycle's cheap look after a cycle that did work: 1 when a publication has a committed frame at its
 * sender position or a full word moved (run again now), else 0. No system call. */
int32_t amd_cycle_pending(const amd_cycle *cycle);
#endif
