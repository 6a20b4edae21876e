/*
 * What the four sample clients share: their -Dname=value settings (the Java samples' property names), connecting
 * to a driver, adding a publication or a subscription, and a stop flag set by SIGINT/SIGTERM.
 */
#ifndef SAMPLE_COMMON_H
#define SAMPLE_COMMON_H

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aeronc.h"

#define SAMPLE_MAX_PROPS 32

static const char *sample_names[SAMPLE_MAX_PROPS];
static const char *sample_values[SAMPLE_MAX_PROPS];
static int sample_count = 0;
static volatile sig_atomic_t sample_running = 1;

static inline void sample_stop(int signo)
{
    (void)signo;
    sample_running = 0;
}

/* Keeps each -Dname=value argument (later ones win); anything else is a usage error. */
static inline void sample_parse_args(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; i++)
    {
        char *arg = argv[i];
        char *equals = strchr(arg, '=');
        if (strncmp(arg, "-D", 2) != 0 || equals == NULL || sample_count == SAMPLE_MAX_PROPS)
        {
            fprintf(stderr, "usage: %s [-Dname=value ...]\n%s\n", argv[0], usage);
            exit(2);
        }
        *equals = '\0';
        sample_names[sample_count] = arg + 2;
        sample_values[sample_count] = equals + 1;
        sample_count++;
    }
    signal(SIGINT, sample_stop);
    signal(SIGTERM, sample_stop);
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline const char *sample_prop(const char *name, const char *fallback)
{
    for (int i = sample_count - 1; i >= 0; i--)
    {
        if (strcmp(sample_names[i], name) == 0)
        {
            return sample_values[i];
        }
    }
    return fallback;
}

static inline int64_t sample_prop_long(const char *name, int64_t fallback)
{
    const char *text = sample_prop(name, NULL);
    if (text == NULL)
    {
        return fallback;
    }
    char *end = NULL;
    long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0')
    {
        fprintf(stderr, "%s=%s: not an integer\n", name, text);
        exit(2);
    }
    return (int64_t)value;
}

static inline int64_t sample_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void sample_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static inline void sample_fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, aeron_errmsg());
    exit(1);
}

/* A started client of the driver in aeron.dir (else the C client's default: AERON_DIR or /dev/shm/aeron-$USER). */
static inline aeron_t *sample_connect(aeron_context_t **context)
{
    aeron_t *client = NULL;
    const char *dir = sample_prop("aeron.dir", NULL);
    if (aeron_context_init(context) < 0 || (dir != NULL && aeron_context_set_dir(*context, dir) < 0))
    {
        sample_fail("aeron_context_init");
    }
    if (aeron_init(&client, *context) < 0 || aeron_start(client) < 0)
    {
        sample_fail("aeron_init/aeron_start");
    }
    return client;
}

static inline aeron_exclusive_publication_t *sample_publication(aeron_t *client, const char *channel, int32_t stream_id)
{
    aeron_async_add_exclusive_publication_t *async = NULL;
    aeron_exclusive_publication_t *publication = NULL;
    if (aeron_async_add_exclusive_publication(&async, client, channel, stream_id) < 0)
    {
        sample_fail("aeron_async_add_exclusive_publication");
    }
    int done;
    while ((done = aeron_async_add_exclusive_publication_poll(&publication, async)) == 0 && sample_running)
    {
        sample_sleep_ms(1);
    }
    if (done < 0)
    {
        sample_fail("exclusive publication");
    }
    return publication;
}

static inline aeron_subscription_t *sample_subscription(aeron_t *client, const char *channel, int32_t stream_id)
{
    aeron_async_add_subscription_t *async = NULL;
    aeron_subscription_t *subscription = NULL;
    if (aeron_async_add_subscription(&async, client, channel, stream_id, NULL, NULL, NULL, NULL) < 0)
    {
        sample_fail("aeron_async_add_subscription");
    }
    int done;
    while ((done = aeron_async_add_subscription_poll(&subscription, async)) == 0 && sample_running)
    {
        sample_sleep_ms(1);
    }
    if (done < 0)
    {
        sample_fail("subscription");
    }
    return subscription;
}

#endif
