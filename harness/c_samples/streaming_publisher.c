/*
 * Streaming publisher: offers aeron.sample.messages messages of aeron.sample.messageLength bytes on an exclusive
 * publication as fast as the stream takes them (busy-spinning on back pressure), then lingers and exits.
 *
 *   streaming_publisher -Daeron.dir=D -Daeron.sample.channel=C -Daeron.sample.streamId=S
 *       -Daeron.sample.messageLength=L -Daeron.sample.messages=N [-Daeron.sample.lingerMs=1000]
 *
 * Prints one line when it starts and one with the count sent when it ends; SIGINT/SIGTERM end it early.
 */
#include "sample_common.h"

int main(int argc, char **argv)
{
    sample_parse_args(argc, argv, "streams messages on an exclusive publication");
    const char *channel = sample_prop("aeron.sample.channel", "aeron:udp?endpoint=localhost:40123");
    int32_t stream_id = (int32_t)sample_prop_long("aeron.sample.streamId", 1001);
    int64_t length = sample_prop_long("aeron.sample.messageLength", 32);
    int64_t messages = sample_prop_long("aeron.sample.messages", 10000000);
    int64_t linger_ms = sample_prop_long("aeron.sample.lingerMs", 1000);
    if (length < 1 || messages < 0)
    {
        fprintf(stderr, "aeron.sample.messageLength must be >= 1 and aeron.sample.messages >= 0\n");
        return 2;
    }
    uint8_t *message = calloc((size_t)length, 1);
    aeron_context_t *context = NULL;
    aeron_t *client = sample_connect(&context);
    aeron_exclusive_publication_t *publication = sample_publication(client, channel, stream_id);
    printf("Publishing %" PRId64 " messages of %" PRId64 " bytes to %s stream %d\n", messages, length, channel,
        stream_id);

    int64_t sent = 0;
    int status = 0;
    while (sent < messages && sample_running)
    {
        memcpy(message, &sent, length < 8 ? (size_t)length : 8);
        int64_t result = aeron_exclusive_publication_offer(publication, message, (size_t)length, NULL, NULL);
        if (result > 0)
        {
            sent++;
        }
        else if (result == AERON_PUBLICATION_CLOSED || result == AERON_PUBLICATION_MAX_POSITION_EXCEEDED ||
            result == AERON_PUBLICATION_ERROR)
        {
            fprintf(stderr, "offer failed (%" PRId64 "): %s\n", result, aeron_errmsg());
            status = 1;
            break;
        }
    }
    printf("Sent %" PRId64 " messages\n", sent);
    for (int64_t waited = 0; waited < linger_ms && sample_running; waited += 10)
    {
        sample_sleep_ms(10);
    }
    aeron_exclusive_publication_close(publication, NULL, NULL);
    aeron_close(client);
    aeron_context_close(context);
    free(message);
    return status;
}
