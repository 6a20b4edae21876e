/*
 * Ping: sends one message at a time on the ping stream (its send time in the first 8 bytes) and waits for Pong to
 * echo it on the pong stream; after the warm-up it times aeron.sample.messages round trips and prints them in the
 * layout of the Java Ping's HdrHistogram output (microseconds), so the same parsers read both:
 *
 *   Histogram of RTT latencies in micros.
 *          Value     Percentile TotalCount 1/(1-Percentile)
 *   <value> <percentile> <cumulative count> <1/(1-percentile)>      (one row per percentile listed below)
 *   #[Mean    = <mean>, StdDeviation   = <sd>]
 *   #[Max     = <max>, Total count    = <n>]
 *
 * The values are exact (the n-th smallest round trip), not bucketed.
 *
 *   ping -Daeron.dir=D -Daeron.sample.ping.channel=C1 -Daeron.sample.ping.streamId=10
 *       -Daeron.sample.pong.channel=C2 -Daeron.sample.pong.streamId=11 -Daeron.sample.messages=N
 *       -Daeron.sample.messageLength=L [-Daeron.sample.warmup.iterations=5] [-Daeron.sample.warmup.messages=10000]
 */
#include <math.h>

#include "sample_common.h"

static const double PERCENTILES[] = {
    0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.975, 0.99, 0.995,
    0.999, 0.9995, 0.9999, 1.0
};

typedef struct
{
    int64_t received;
    int64_t *rtts;
    int64_t recorded;
} ping_state_t;

static void on_pong(void *clientd, const uint8_t *buffer, size_t length, aeron_header_t *header)
{
    (void)header;
    (void)length;
    ping_state_t *state = (ping_state_t *)clientd;
    int64_t sent_ns;
    memcpy(&sent_ns, buffer, sizeof(sent_ns));
    if (state->rtts != NULL)
    {
        state->rtts[state->recorded++] = sample_now_ns() - sent_ns;
    }
    state->received++;
}

static int compare_longs(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void round_trips(
    aeron_exclusive_publication_t *publication, aeron_subscription_t *subscription, ping_state_t *state,
    uint8_t *message, int64_t length, int64_t count)
{
    for (int64_t i = 0; i < count && sample_running; i++)
    {
        int64_t sent_ns = sample_now_ns();
        memcpy(message, &sent_ns, sizeof(sent_ns));
        int64_t result;
        while ((result = aeron_exclusive_publication_offer(publication, message, (size_t)length, NULL, NULL)) < 0)
        {
            if (!sample_running || result == AERON_PUBLICATION_CLOSED || result == AERON_PUBLICATION_ERROR ||
                result == AERON_PUBLICATION_MAX_POSITION_EXCEEDED)
            {
                sample_fail("ping offer");
            }
        }
        int64_t expected = state->received + 1;
        while (state->received < expected && sample_running)
        {
            if (aeron_subscription_poll(subscription, on_pong, state, 1) < 0)
            {
                sample_fail("aeron_subscription_poll");
            }
        }
    }
}

static void print_histogram(int64_t *rtts, int64_t n)
{
    qsort(rtts, (size_t)n, sizeof(int64_t), compare_longs);
    double sum = 0.0, squares = 0.0;
    for (int64_t i = 0; i < n; i++)
    {
        sum += (double)rtts[i] / 1e3;
    }
    double mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++)
    {
        double d = (double)rtts[i] / 1e3 - mean;
        squares += d * d;
    }
    printf("Histogram of RTT latencies in micros.\n");
    printf("%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    for (size_t p = 0; p < sizeof(PERCENTILES) / sizeof(PERCENTILES[0]); p++)
    {
        int64_t count = (int64_t)ceil(PERCENTILES[p] * (double)n);
        count = count < 1 ? 1 : (count > n ? n : count);
        double reached = (double)count / (double)n;
        if (reached < 1.0)
        {
            printf("%12.3f %2.12f %10" PRId64 " %14.2f\n", (double)rtts[count - 1] / 1e3, reached, count,
                1.0 / (1.0 - reached));
        }
        else
        {
            printf("%12.3f %2.12f %10" PRId64 " %14s\n", (double)rtts[count - 1] / 1e3, reached, count, "inf");
        }
    }
    printf("#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", mean, sqrt(squares / (double)n));
    printf("#[Max     = %12.3f, Total count    = %12" PRId64 "]\n", (double)rtts[n - 1] / 1e3, n);
}

int main(int argc, char **argv)
{
    sample_parse_args(argc, argv, "times round trips through pong");
    const char *ping_channel = sample_prop("aeron.sample.ping.channel", "aeron:udp?endpoint=localhost:40123");
    const char *pong_channel = sample_prop("aeron.sample.pong.channel", "aeron:udp?endpoint=localhost:40124");
    int32_t ping_stream = (int32_t)sample_prop_long("aeron.sample.ping.streamId", 1002);
    int32_t pong_stream = (int32_t)sample_prop_long("aeron.sample.pong.streamId", 1003);
    int64_t messages = sample_prop_long("aeron.sample.messages", 10000000);
    int64_t length = sample_prop_long("aeron.sample.messageLength", 32);
    int64_t warmup_iterations = sample_prop_long("aeron.sample.warmup.iterations", 5);
    int64_t warmup_messages = sample_prop_long("aeron.sample.warmup.messages", 10000);
    if (length < 8 || messages < 1)
    {
        fprintf(stderr, "aeron.sample.messageLength must be >= 8 (the send time) and aeron.sample.messages >= 1\n");
        return 2;
    }
    uint8_t *message = calloc((size_t)length, 1);
    ping_state_t state = { 0, NULL, 0 };
    aeron_context_t *context = NULL;
    aeron_t *client = sample_connect(&context);
    aeron_subscription_t *subscription = sample_subscription(client, pong_channel, pong_stream);
    aeron_exclusive_publication_t *publication = sample_publication(client, ping_channel, ping_stream);
    while (!(aeron_subscription_is_connected(subscription) && aeron_exclusive_publication_is_connected(publication)))
    {
        if (!sample_running)
        {
            return 1;
        }
        sample_sleep_ms(1);
    }
    for (int64_t i = 0; i < warmup_iterations; i++)
    {
        printf("Warming up: %" PRId64 " messages of length %" PRId64 " bytes\n", warmup_messages, length);
        round_trips(publication, subscription, &state, message, length, warmup_messages);
    }
    state.rtts = calloc((size_t)messages, sizeof(int64_t));
    printf("Pinging %" PRId64 " messages of length %" PRId64 " bytes\n", messages, length);
    round_trips(publication, subscription, &state, message, length, messages);
    int status = 1;
    if (state.recorded > 0)
    {
        print_histogram(state.rtts, state.recorded);
        status = state.recorded == messages ? 0 : 1;
    }
    aeron_subscription_close(subscription, NULL, NULL);
    aeron_exclusive_publication_close(publication, NULL, NULL);
    aeron_close(client);
    aeron_context_close(context);
    free(state.rtts);
    free(message);
    return status;
}
