/*
 * Pong: echoes every message from the ping stream back on the pong stream (an exclusive publication), busy-spinning.
 *
 *   pong -Daeron.dir=D -Daeron.sample.ping.channel=C1 -Daeron.sample.ping.streamId=10
 *       -Daeron.sample.pong.channel=C2 -Daeron.sample.pong.streamId=11 [-Daeron.sample.frameCountLimit=10]
 *
 * Prints "Pong ready: ..." once its subscription and publication exist; runs until SIGINT/SIGTERM.
 */
#include "sample_common.h"

static void on_ping(void *clientd, const uint8_t *buffer, size_t length, aeron_header_t *header)
{
    (void)header;
    aeron_exclusive_publication_t *publication = (aeron_exclusive_publication_t *)clientd;
    int64_t result;
    while ((result = aeron_exclusive_publication_offer(publication, buffer, length, NULL, NULL)) < 0 &&
        sample_running)
    {
        if (result == AERON_PUBLICATION_CLOSED || result == AERON_PUBLICATION_MAX_POSITION_EXCEEDED ||
            result == AERON_PUBLICATION_ERROR)
        {
            sample_fail("pong offer");
        }
    }
}

int main(int argc, char **argv)
{
    sample_parse_args(argc, argv, "echoes the ping stream on the pong stream");
    const char *ping_channel = sample_prop("aeron.sample.ping.channel", "aeron:udp?endpoint=localhost:40123");
    const char *pong_channel = sample_prop("aeron.sample.pong.channel", "aeron:udp?endpoint=localhost:40124");
    int32_t ping_stream = (int32_t)sample_prop_long("aeron.sample.ping.streamId", 1002);
    int32_t pong_stream = (int32_t)sample_prop_long("aeron.sample.pong.streamId", 1003);
    int fragment_limit = (int)sample_prop_long("aeron.sample.frameCountLimit", 10);
    aeron_context_t *context = NULL;
    aeron_t *client = sample_connect(&context);
    aeron_subscription_t *subscription = sample_subscription(client, ping_channel, ping_stream);
    aeron_exclusive_publication_t *publication = sample_publication(client, pong_channel, pong_stream);
    printf("Pong ready: %s stream %d -> %s stream %d\n", ping_channel, ping_stream, pong_channel, pong_stream);

    while (sample_running)
    {
        if (aeron_subscription_poll(subscription, on_ping, publication, fragment_limit) < 0)
        {
            sample_fail("aeron_subscription_poll");
        }
    }
    aeron_subscription_close(subscription, NULL, NULL);
    aeron_exclusive_publication_close(publication, NULL, NULL);
    aeron_close(client);
    aeron_context_close(context);
    return 0;
}
