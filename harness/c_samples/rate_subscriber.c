/*
 * Rate subscriber: polls a subscription (busy-spinning) and prints, once a second, the rates and running totals
 * in the layout of Aeron's Java RateSubscriber, so the same parsers read both:
 *
 *   <msgs/s> msgs/sec, <bytes/s> payload bytes/sec, totals <messages> messages <MB> MB payloads
 *
 *   rate_subscriber -Daeron.dir=D -Daeron.sample.channel=C -Daeron.sample.streamId=S
 *       [-Daeron.sample.messages=N] [-Daeron.sample.frameCountLimit=10]
 *
 * Runs until SIGINT/SIGTERM, or until N messages (fragments) have arrived when aeron.sample.messages is given;
 * then prints "Received <total> messages".
 */
#include "sample_common.h"

typedef struct
{
    int64_t messages;
    int64_t bytes;
} totals_t;

static void on_fragment(void *clientd, const uint8_t *buffer, size_t length, aeron_header_t *header)
{
    (void)buffer;
    (void)header;
    totals_t *totals = (totals_t *)clientd;
    totals->messages++;
    totals->bytes += (int64_t)length;
}

int main(int argc, char **argv)
{
    sample_parse_args(argc, argv, "prints the rate and totals of a stream once a second");
    const char *channel = sample_prop("aeron.sample.channel", "aeron:udp?endpoint=localhost:40123");
    int32_t stream_id = (int32_t)sample_prop_long("aeron.sample.streamId", 1001);
    int64_t limit = sample_prop_long("aeron.sample.messages", INT64_MAX);
    int fragment_limit = (int)sample_prop_long("aeron.sample.frameCountLimit", 10);
    aeron_context_t *context = NULL;
    aeron_t *client = sample_connect(&context);
    aeron_subscription_t *subscription = sample_subscription(client, channel, stream_id);
    printf("Subscribed to %s stream %d\n", channel, stream_id);

    totals_t totals = { 0, 0 };
    totals_t last = { 0, 0 };
    int64_t last_ns = sample_now_ns();
    while (sample_running && totals.messages < limit)
    {
        if (aeron_subscription_poll(subscription, on_fragment, &totals, fragment_limit) < 0)
        {
            sample_fail("aeron_subscription_poll");
        }
        int64_t now_ns = sample_now_ns();
        if (now_ns - last_ns >= 1000000000LL)
        {
            double seconds = (double)(now_ns - last_ns) / 1e9;
            printf("%.4g msgs/sec, %.4g payload bytes/sec, totals %" PRId64 " messages %" PRId64 " MB payloads\n",
                (double)(totals.messages - last.messages) / seconds, (double)(totals.bytes - last.bytes) / seconds,
                totals.messages, totals.bytes / (1024 * 1024));
            last = totals;
            last_ns = now_ns;
        }
    }
    printf("Received %" PRId64 " messages\n", totals.messages);
    aeron_subscription_close(subscription, NULL, NULL);
    aeron_close(client);
    aeron_context_close(context);
    return 0;
}
