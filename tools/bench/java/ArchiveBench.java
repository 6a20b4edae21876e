import io.aeron.Aeron;
import io.aeron.ExclusivePublication;
import io.aeron.Image;
import io.aeron.Subscription;
import io.aeron.archive.client.AeronArchive;
import io.aeron.archive.codecs.SourceLocation;
import io.aeron.archive.status.RecordingPos;
import io.aeron.logbuffer.FragmentHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Archive benchmark client (tools/bench/archive_throughput.py, tools/bench/archive_replay_latency.py): drives
 * whatever archive listens on the control channel of the driver in aeron.dir with the unmodified 1.15.1
 * {@link AeronArchive}.
 *
 * <p>Settings (-D): the usual aeron.dir and aeron.archive.* channels, and
 * <ul>
 * <li>bench.mode: "throughput" (default), "steady" or "latency".</li>
 * <li>bench.channel / bench.stream.id: the stream recorded (LOCAL); default aeron:ipc, 1001.</li>
 * <li>bench.replay.channel / bench.replay.stream.id: where replays go; default aeron:ipc, 1002.</li>
 * <li>bench.messages, bench.length: messages per pass and their length (throughput); default 1,000,000 x 32.</li>
 * <li>bench.passes: throughput passes (each a new recording and its replay); default 2.</li>
 * <li>bench.reps, bench.warmup: timed replays and untimed ones before them (latency); default 1000, 100.</li>
 * <li>bench.timeout.ms: how long any one wait may take; default 60000.</li>
 * <li>bench.seconds: how long the steady mode publishes; default 12.</li>
 * </ul>
 * Prints "RECORD pass=P messages=N bytes=B seconds=S msgs_per_s=R mb_per_s=M" and "REPLAY ..." per throughput
 * pass; in steady mode "RECORD_RATE second=S bytes=B messages=M" each second of a recording published for
 * bench.seconds without pause, then "REPLAY_RATE second=S messages=M" each second of its whole replay and
 * "STEADY done"; or "LATENCY reps=N p50_us=A p90_us=B p99_us=C max_us=D" in latency mode; exits 1 on failure.
 */
public final class ArchiveBench
{
    static final String MODE = System.getProperty("bench.mode", "throughput");
    static final String CHANNEL = System.getProperty("bench.channel", "aeron:ipc");
    static final int STREAM_ID = Integer.getInteger("bench.stream.id", 1001);
    static final String REPLAY_CHANNEL = System.getProperty("bench.replay.channel", "aeron:ipc");
    static final int REPLAY_STREAM_ID = Integer.getInteger("bench.replay.stream.id", 1002);
    static final long MESSAGES = Long.getLong("bench.messages", 1_000_000L);
    static final int LENGTH = Integer.getInteger("bench.length", 32);
    static final int PASSES = Integer.getInteger("bench.passes", 2);
    static final int REPS = Integer.getInteger("bench.reps", 1000);
    static final int WARMUP = Integer.getInteger("bench.warmup", 100);
    static final int LATENCY_MESSAGES = 100;
    static final int SECONDS = Integer.getInteger("bench.seconds", 12);
    static final long TIMEOUT_NS = Long.getLong("bench.timeout.ms", 60_000L) * 1_000_000L;

    static Aeron aeron;
    static AeronArchive archive;
    static long received;

    public static void main(final String[] args) throws Exception
    {
        int status = 0;
        try
        {
            aeron = Aeron.connect(new Aeron.Context());
            archive = connectArchive();
            if ("latency".equals(MODE))
            {
                latency();
            }
            else if ("steady".equals(MODE))
            {
                steady();
            }
            else
            {
                for (int pass = 1; pass <= PASSES; pass++)
                {
                    throughput(pass);
                }
            }
        }
        catch (final Throwable ex)
        {
            ex.printStackTrace(System.out);
            status = 1;
        }
        finally
        {
            if (archive != null)
            {
                archive.close();
            }
            if (aeron != null)
            {
                aeron.close();
            }
        }
        System.out.flush();
        System.exit(status);
    }

    /** The archive may still be starting: try again until the timeout. */
    static AeronArchive connectArchive() throws InterruptedException
    {
        final long deadline = System.nanoTime() + TIMEOUT_NS;
        while (true)
        {
            try
            {
                return AeronArchive.connect(new AeronArchive.Context().aeron(aeron));
            }
            catch (final RuntimeException ex)
            {
                if (System.nanoTime() > deadline)
                {
                    throw ex;
                }
                Thread.sleep(100);
            }
        }
    }

    static void check(final long deadline, final String what)
    {
        if (System.nanoTime() > deadline)
        {
            throw new IllegalStateException("timed out waiting for " + what);
        }
        final String error = archive.pollForErrorResponse();
        if (error != null)
        {
            throw new IllegalStateException("archive error: " + error);
        }
    }

    /** A recording of ``messages`` x ``length``: returns {recordingId, stop position, elapsed ns}. */
    static long[] record(final long messages, final int length)
    {
        final long subscriptionId = archive.startRecording(CHANNEL, STREAM_ID, SourceLocation.LOCAL);
        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(length));
        final CountersReader counters = aeron.countersReader();
        try (ExclusivePublication publication = aeron.addExclusivePublication(CHANNEL, STREAM_ID))
        {
            long deadline = System.nanoTime() + TIMEOUT_NS;
            int counterId;
            while ((counterId = RecordingPos.findCounterIdBySession(counters, publication.sessionId())) ==
                CountersReader.NULL_COUNTER_ID)
            {
                check(deadline, "the recording to start");
                Thread.yield();
            }
            final long recordingId = RecordingPos.getRecordingId(counters, counterId);
            final long start = System.nanoTime();
            for (long i = 0; i < messages; i++)
            {
                buffer.putLong(0, i);
                while (publication.offer(buffer, 0, length) < 0)
                {
                    if (publication.isClosed())
                    {
                        throw new IllegalStateException("publication closed");
                    }
                    Thread.onSpinWait();
                }
            }
            final long end = publication.position();
            deadline = System.nanoTime() + TIMEOUT_NS;
            while (counters.getCounterValue(counterId) < end)
            {
                if (!RecordingPos.isActive(counters, counterId, recordingId))
                {
                    throw new IllegalStateException("recording stopped at " + counters.getCounterValue(counterId));
                }
                check(deadline, "the recording to reach " + end);
                Thread.onSpinWait();
            }
            final long elapsed = System.nanoTime() - start;
            archive.stopRecording(subscriptionId);
            return new long[] {recordingId, end, elapsed};
        }
    }

    static void throughput(final int pass)
    {
        final long[] recording = record(MESSAGES, LENGTH);
        report("RECORD", pass, recording[2]);

        received = 0;
        final FragmentHandler handler = (buffer, offset, length, header) -> received++;
        final long requested = System.nanoTime();
        try (Subscription subscription = archive.replay(recording[0], 0, recording[1], REPLAY_CHANNEL, REPLAY_STREAM_ID))
        {
            final long deadline = requested + TIMEOUT_NS;
            while (received < MESSAGES)
            {
                if (subscription.poll(handler, 256) == 0)
                {
                    check(deadline, "the replay (" + received + " of " + MESSAGES + ")");
                    Thread.onSpinWait();
                }
            }
            final long done = System.nanoTime();
            report("REPLAY", pass, done - requested);
        }
    }

    /**
     * Per-second rates at steady state: publish without pause for SECONDS while a sampler prints how far the
     * recording position moved each second; then replay the whole recording, counting messages per second.
     */
    static void steady() throws InterruptedException
    {
        final long subscriptionId = archive.startRecording(CHANNEL, STREAM_ID, SourceLocation.LOCAL);
        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(LENGTH));
        final CountersReader counters = aeron.countersReader();
        final int frameLength = (LENGTH + 32 + 31) & ~31;
        final long recordingId;
        final long end;
        final long total;
        try (ExclusivePublication publication = aeron.addExclusivePublication(CHANNEL, STREAM_ID))
        {
            final long deadline = System.nanoTime() + TIMEOUT_NS;
            int id;
            while ((id = RecordingPos.findCounterIdBySession(counters, publication.sessionId())) ==
                CountersReader.NULL_COUNTER_ID)
            {
                check(deadline, "the recording to start");
                Thread.yield();
            }
            final int counterId = id;
            recordingId = RecordingPos.getRecordingId(counters, counterId);
            final long stopAt = System.nanoTime() + SECONDS * 1_000_000_000L;
            final Thread sampler = new Thread(() ->
            {
                long last = counters.getCounterValue(counterId);
                long next = System.nanoTime() + 1_000_000_000L;
                for (int second = 1; second <= SECONDS; second++)
                {
                    while (System.nanoTime() < next)
                    {
                        try
                        {
                            Thread.sleep(1);
                        }
                        catch (final InterruptedException ex)
                        {
                            return;
                        }
                    }
                    next += 1_000_000_000L;
                    final long now = counters.getCounterValue(counterId);
                    System.out.printf(
                        "RECORD_RATE second=%d bytes=%d messages=%d%n", second, now - last, (now - last) / frameLength);
                    System.out.flush();
                    last = now;
                }
            });
            sampler.start();
            long i = 0;
            while (System.nanoTime() < stopAt)
            {
                for (int batch = 0; batch < 1024; batch++)
                {
                    buffer.putLong(0, i++);
                    while (publication.offer(buffer, 0, LENGTH) < 0)
                    {
                        if (publication.isClosed())
                        {
                            throw new IllegalStateException("publication closed");
                        }
                        Thread.onSpinWait();
                    }
                }
            }
            sampler.join();
            end = publication.position();
            total = i;
            final long waitUntil = System.nanoTime() + TIMEOUT_NS;
            while (counters.getCounterValue(counterId) < end)
            {
                check(waitUntil, "the recording to reach " + end);
                Thread.onSpinWait();
            }
            archive.stopRecording(subscriptionId);
        }

        received = 0;
        final FragmentHandler handler = (buf, offset, length, header) -> received++;
        try (Subscription subscription = archive.replay(recordingId, 0, end, REPLAY_CHANNEL, REPLAY_STREAM_ID))
        {
            final long deadline = System.nanoTime() + TIMEOUT_NS;
            long next = System.nanoTime() + 1_000_000_000L;
            long last = 0;
            int second = 1;
            while (received < total)
            {
                if (subscription.poll(handler, 256) == 0)
                {
                    check(deadline, "the replay (" + received + " of " + total + ")");
                    Thread.onSpinWait();
                }
                if (System.nanoTime() >= next)
                {
                    System.out.printf("REPLAY_RATE second=%d messages=%d%n", second++, received - last);
                    last = received;
                    next += 1_000_000_000L;
                }
            }
        }
        System.out.println("STEADY done messages=" + total);
        System.out.flush();
    }

    static void report(final String what, final int pass, final long elapsedNs)
    {
        final double seconds = elapsedNs / 1e9;
        System.out.printf(
            "%s pass=%d messages=%d bytes=%d seconds=%.6f msgs_per_s=%.1f mb_per_s=%.3f%n",
            what, pass, MESSAGES, MESSAGES * LENGTH, seconds, MESSAGES / seconds, MESSAGES * LENGTH / seconds / 1e6);
        System.out.flush();
    }

    /** Replay request to first fragment, over a short recording; the replay subscription stays. */
    static void latency()
    {
        final long[] recording = record(LATENCY_MESSAGES, LENGTH);
        final long[] samples = new long[REPS];
        received = 0;
        final FragmentHandler handler = (buffer, offset, length, header) -> received++;
        try (Subscription subscription = aeron.addSubscription(REPLAY_CHANNEL, REPLAY_STREAM_ID))
        {
            for (int i = -WARMUP; i < REPS; i++)
            {
                final long before = received;
                final long start = System.nanoTime();
                final long deadline = start + TIMEOUT_NS;
                final long replaySessionId =
                    archive.startReplay(recording[0], 0, recording[1], REPLAY_CHANNEL, REPLAY_STREAM_ID);
                final int sessionId = (int)replaySessionId;
                Image image;
                while ((image = subscription.imageBySessionId(sessionId)) == null)
                {
                    check(deadline, "replay image " + sessionId);
                    Thread.onSpinWait();
                }
                while (image.poll(handler, 1) == 0)
                {
                    check(deadline, "the first replayed message");
                    Thread.onSpinWait();
                }
                final long elapsed = System.nanoTime() - start;
                if (received != before + 1)
                {
                    throw new IllegalStateException("expected one fragment");
                }
                if (i >= 0)
                {
                    samples[i] = elapsed;
                }
                while (received < before + LATENCY_MESSAGES)
                {
                    if (image.poll(handler, 256) == 0)
                    {
                        check(deadline + TIMEOUT_NS, "the end of replay " + sessionId);
                        Thread.onSpinWait();
                    }
                }
            }
        }
        Arrays.sort(samples);
        System.out.printf(
            "LATENCY reps=%d p50_us=%.3f p90_us=%.3f p99_us=%.3f max_us=%.3f%n",
            REPS, at(samples, 0.50), at(samples, 0.90), at(samples, 0.99), samples[REPS - 1] / 1e3);
        System.out.flush();
    }

    static double at(final long[] sorted, final double fraction)
    {
        final int index = Math.min(sorted.length - 1, (int)Math.ceil(fraction * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e3;
    }
}
