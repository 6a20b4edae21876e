import io.aeron.Aeron;
import io.aeron.ChannelUri;
import io.aeron.CommonContext;
import io.aeron.ChannelUriStringBuilder;
import io.aeron.ExclusivePublication;
import io.aeron.Image;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.archive.client.AeronArchive;
import io.aeron.archive.client.RecordingEventsAdapter;
import io.aeron.archive.client.RecordingEventsListener;
import io.aeron.archive.codecs.SourceLocation;
import io.aeron.logbuffer.FragmentHandler;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * Interop checks of an Aeron 1.15.1 Archive through the unmodified 1.15.1 {@link AeronArchive} client.
 *
 * Runs against whatever archive listens on the control channel and whatever driver is in aeron.dir, so it can
 * check the real Java Archive on either driver, or another archive implementation. Settings (-D):
 * <ul>
 * <li>aeron.dir, aeron.archive.control.channel, aeron.archive.control.response.channel,
 *     aeron.archive.recording.events.channel (and their stream ids): read by the Aeron and AeronArchive contexts
 *     as usual; give the archive the same ones.</li>
 * <li>checks.local.channel: UDP channel recorded LOCAL, through a spy (the driver needs
 *     aeron.spies.simulate.connection=true); default aeron:udp?endpoint=localhost:8101.</li>
 * <li>checks.remote.channel: UDP channel recorded REMOTE; default aeron:udp?endpoint=localhost:8102.</li>
 * <li>checks.replay.channel: UDP channel replays are sent to; default aeron:udp?endpoint=localhost:8103.</li>
 * <li>checks.ipc.channel: default aeron:ipc.</li>
 * <li>checks.stream.id: first of the stream ids used (six in all); default 7001.</li>
 * <li>checks.timeout.ms: how long any one wait may take; default 10000.</li>
 * <li>checks.image.liveness.ms: the driver's image liveness timeout, added to waits for a replay image to go (a
 *     replay publication that lingers not at all may go before its end of stream was sent, and then the image
 *     goes only when it times out); default 10000.</li>
 * <li>checks.replay.recorded.endpoint: "true" (default) adds a replay onto the UDP endpoint that was just
 *     recorded REMOTE.</li>
 * </ul>
 * Prints "PASS name" or "FAIL name: reason" per check, then "SUMMARY passed=P failed=F"; exits 1 on any failure.
 * A check whose prerequisite failed fails with "needs ...".
 */
public final class ArchiveChecks
{
    static final int MESSAGE_LENGTH = 100;
    static final int FRAME_LENGTH = 160; // 32-byte header + 100 bytes, aligned to 32
    static final int MESSAGES = 40;

    final String localChannel = System.getProperty("checks.local.channel", "aeron:udp?endpoint=localhost:8101");
    final String remoteChannel = System.getProperty("checks.remote.channel", "aeron:udp?endpoint=localhost:8102");
    final String replayChannel = System.getProperty("checks.replay.channel", "aeron:udp?endpoint=localhost:8103");
    final String ipcChannel = System.getProperty("checks.ipc.channel", "aeron:ipc");
    final int baseStreamId = Integer.getInteger("checks.stream.id", 7001);
    final long timeoutMs = Long.getLong("checks.timeout.ms", 10_000L);
    final long imageGoneTimeoutMs = timeoutMs + Long.getLong("checks.image.liveness.ms", 10_000L);
    final boolean replayRecordedEndpoint =
        Boolean.parseBoolean(System.getProperty("checks.replay.recorded.endpoint", "true"));

    final int localStream = baseStreamId;
    final int remoteStream = baseStreamId + 1;
    final int ipcStream = baseStreamId + 2;
    final int liveStream = baseStreamId + 3;
    final int replayStream = baseStreamId + 4;

    final UnsafeBuffer sendBuffer = new UnsafeBuffer(ByteBuffer.allocateDirect(MESSAGE_LENGTH));
    final Map<String, String> failed = new HashMap<>();
    int passed;

    Aeron aeron;
    AeronArchive archive;
    AeronArchive other;
    Subscription eventsSubscription;
    RecordingEventsAdapter eventsAdapter;

    // Recording events keyed by stream id (every recording here has its own stream), in arrival order.
    final Map<Integer, Long> startedRecordingId = new HashMap<>();
    final Map<Long, Long> progressPosition = new HashMap<>();
    final Map<Long, Long> stoppedPosition = new HashMap<>();

    static final class Recorded
    {
        long subscriptionId;
        long recordingId = -1;
        Publication publication;
        String channel;
        int streamId;
        long stopPosition;
    }

    final Recorded local = new Recorded();
    final Recorded remote = new Recorded();
    final Recorded ipc = new Recorded();

    interface Check
    {
        void run() throws Exception;
    }

    public static void main(final String[] args)
    {
        final ArchiveChecks checks = new ArchiveChecks();
        int failures;
        try
        {
            failures = checks.runAll();
        }
        catch (final Throwable ex)
        {
            ex.printStackTrace(System.err);
            System.out.println("FAIL setup: " + ex);
            failures = 1;
        }
        finally
        {
            checks.closeAll();
        }
        System.out.flush();
        System.exit(failures == 0 ? 0 : 1);
    }

    void check(final String name, final String[] needs, final Check body)
    {
        for (final String need : needs)
        {
            if (failed.containsKey(need))
            {
                fail(name, "needs " + need);
                return;
            }
        }
        try
        {
            body.run();
            passed++;
            System.out.println("PASS " + name);
        }
        catch (final Throwable ex)
        {
            ex.printStackTrace(System.err);
            fail(name, String.valueOf(ex).replace('\n', ' '));
        }
        System.out.flush();
    }

    void fail(final String name, final String reason)
    {
        failed.put(name, reason);
        System.out.println("FAIL " + name + ": " + reason);
    }

    static String[] needs(final String... names)
    {
        return names;
    }

    static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalStateException(message);
        }
    }

    void await(final BooleanSupplier condition, final String what)
    {
        await(condition, what, timeoutMs);
    }

    void await(final BooleanSupplier condition, final String what, final long timeoutMs)
    {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean())
        {
            eventsAdapter.poll();
            if (System.currentTimeMillis() > deadline)
            {
                throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.yield();
        }
    }

    int runAll() throws Exception
    {
        aeron = Aeron.connect(new Aeron.Context());
        eventsSubscription = aeron.addSubscription(
            AeronArchive.Configuration.recordingEventsChannel(), AeronArchive.Configuration.recordingEventsStreamId());
        eventsAdapter = new RecordingEventsAdapter(new EventsListener(), eventsSubscription, 64);

        check("connect-two-clients", needs(), () ->
        {
            archive = AeronArchive.connect(new AeronArchive.Context().aeron(aeron));
            other = AeronArchive.connect(new AeronArchive.Context().aeron(aeron));
            require(archive.controlSessionId() != other.controlSessionId(),
                "both clients got control session " + archive.controlSessionId());
            require(archive.listRecordings(0, 100, ignoreDescriptor()) == 0, "a fresh archive lists recordings");
            require(other.listRecordings(0, 100, ignoreDescriptor()) == 0, "second client: fresh archive lists");
            await(eventsSubscription::isConnected, "the recording events stream");
        });

        check("record-local-udp-spy", needs("connect-two-clients"),
            () -> record(local, localChannel, localStream, SourceLocation.LOCAL));
        check("record-remote-udp", needs("connect-two-clients"),
            () -> record(remote, remoteChannel, remoteStream, SourceLocation.REMOTE));
        check("record-ipc", needs("connect-two-clients"),
            () -> record(ipc, ipcChannel, ipcStream, SourceLocation.LOCAL));

        check("recording-position-while-active", needs("record-local-udp-spy", "record-ipc"), () ->
        {
            for (final Recorded r : new Recorded[]{ local, ipc })
            {
                final long position = archive.getRecordingPosition(r.recordingId);
                require(position == r.publication.position(),
                    r.channel + ": recording position " + position + " != publication " + r.publication.position());
                final long stop = other.getStopPosition(r.recordingId);
                require(stop == AeronArchive.NULL_POSITION, r.channel + ": active stop position " + stop);
            }
        });

        check("stop-recordings", needs("record-local-udp-spy", "record-remote-udp", "record-ipc"), () ->
        {
            archive.stopRecording(local.channel, local.streamId);
            archive.stopRecording(remote.subscriptionId);
            archive.stopRecording(ipc.publication);
            for (final Recorded r : new Recorded[]{ local, remote, ipc })
            {
                r.stopPosition = r.publication.position();
                await(() -> stoppedPosition.containsKey(r.recordingId), r.channel + ": recording stopped event");
                require(stoppedPosition.get(r.recordingId) == r.stopPosition,
                    r.channel + ": stopped at " + stoppedPosition.get(r.recordingId) + " not " + r.stopPosition);
                final long stop = archive.getStopPosition(r.recordingId);
                require(stop == r.stopPosition, r.channel + ": stop position " + stop + " != " + r.stopPosition);
                final long position = archive.getRecordingPosition(r.recordingId);
                require(position == AeronArchive.NULL_POSITION, r.channel + ": stopped recording position " +
                    position);
            }
        });

        check("recording-events", needs("stop-recordings"), () ->
        {
            for (final Recorded r : new Recorded[]{ local, remote, ipc })
            {
                require(startedRecordingId.get(r.streamId) == r.recordingId, r.channel + ": no started event");
                await(() -> progressPosition.containsKey(r.recordingId), r.channel + ": a progress event");
                final long progress = progressPosition.get(r.recordingId);
                require(progress > 0 && progress <= r.stopPosition, r.channel + ": progress at " + progress);
            }
        });

        check("list-recordings", needs("stop-recordings"), () ->
        {
            final List<String> seen = new ArrayList<>();
            final int count = other.listRecordings(0, 100,
                (controlSessionId, correlationId, recordingId, startTimestamp, stopTimestamp, startPosition,
                stopPosition, initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
                strippedChannel, originalChannel, sourceIdentity) ->
                seen.add(recordingId + ":" + streamId + ":" + startPosition + ":" + stopPosition + ":" +
                    originalChannel));
            final List<String> expected = new ArrayList<>();
            for (final Recorded r : new Recorded[]{ local, remote, ipc })
            {
                expected.add(r.recordingId + ":" + r.streamId + ":0:" + r.stopPosition + ":" + r.channel);
            }
            expected.sort(null);
            seen.sort(null);
            require(count == 3 && seen.equals(expected), "listed " + count + " " + seen + " expected " + expected);
        });

        check("list-recordings-for-uri", needs("stop-recordings"), () ->
        {
            final List<Long> ids = new ArrayList<>();
            final String fragment = remoteChannel.substring(remoteChannel.indexOf("endpoint="));
            final int count = archive.listRecordingsForUri(0, 100, fragment, remote.streamId,
                (controlSessionId, correlationId, recordingId, startTimestamp, stopTimestamp, startPosition,
                stopPosition, initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
                strippedChannel, originalChannel, sourceIdentity) -> ids.add(recordingId));
            require(count == 1 && ids.size() == 1 && ids.get(0) == remote.recordingId,
                "for " + fragment + " listed " + ids);
            final int none = archive.listRecordingsForUri(0, 100, fragment, remote.streamId + 100,
                ignoreDescriptor());
            require(none == 0, "another stream id listed " + none);
        });

        check("list-recording", needs("stop-recordings"), () ->
        {
            final long[] fields = new long[4];
            final int count = archive.listRecording(ipc.recordingId,
                (controlSessionId, correlationId, recordingId, startTimestamp, stopTimestamp, startPosition,
                stopPosition, initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
                strippedChannel, originalChannel, sourceIdentity) ->
                {
                    fields[0] = recordingId;
                    fields[1] = stopPosition;
                    fields[2] = sessionId;
                    fields[3] = streamId;
                });
            require(count == 1, "listed " + count);
            require(fields[0] == ipc.recordingId && fields[1] == ipc.stopPosition &&
                fields[2] == ipc.publication.sessionId() && fields[3] == ipc.streamId,
                "descriptor " + java.util.Arrays.toString(fields));
            require(archive.listRecording(ipc.recordingId + 1000, ignoreDescriptor()) == 0, "unknown id listed");
        });

        check("find-last-matching", needs("stop-recordings"), () ->
        {
            final String fragment = localChannel.substring(localChannel.indexOf("endpoint="));
            final long found = other.findLastMatchingRecording(0, fragment, local.streamId,
                local.publication.sessionId());
            require(found == local.recordingId, "found " + found + " not " + local.recordingId);
            final long none = other.findLastMatchingRecording(0, fragment, local.streamId,
                local.publication.sessionId() + 1);
            require(none == -1, "another session matched " + none);
        });

        check("replay-whole-udp", needs("stop-recordings"),
            () -> replayAndExpect(remote.recordingId, 0, remote.stopPosition, replayChannel, 0, MESSAGES));
        check("replay-whole-ipc", needs("stop-recordings"),
            () -> replayAndExpect(ipc.recordingId, 0, ipc.stopPosition, ipcChannel, 0, MESSAGES));
        check("replay-bounded-from-middle", needs("stop-recordings"),
            () -> replayAndExpect(local.recordingId, 10L * FRAME_LENGTH, 15L * FRAME_LENGTH, replayChannel, 10, 15));

        check("replay-following-live-recording", needs("connect-two-clients"), this::replayLive);

        check("extend-recording", needs("stop-recordings"), this::extendRecording);

        check("truncate-recording", needs("stop-recordings"), () ->
        {
            final long position = 20L * FRAME_LENGTH;
            archive.truncateRecording(local.recordingId, position);
            final long stop = archive.getStopPosition(local.recordingId);
            require(stop == position, "stop position after truncate " + stop);
            replayAndExpect(local.recordingId, 0, AeronArchive.NULL_LENGTH, replayChannel, 0, 20);
        });

        if (replayRecordedEndpoint)
        {
            check("replay-onto-recorded-endpoint", needs("stop-recordings"),
                () -> replayAndExpect(remote.recordingId, 0, remote.stopPosition, remoteChannel, 0, MESSAGES));
        }

        System.out.println("SUMMARY passed=" + passed + " failed=" + failed.size());
        return failed.size();
    }

    void record(final Recorded r, final String channel, final int streamId, final SourceLocation source)
    {
        r.channel = channel;
        r.streamId = streamId;
        r.publication = aeron.addPublication(channel, streamId);
        r.subscriptionId = archive.startRecording(channel, streamId, source);
        await(() -> startedRecordingId.containsKey(streamId), channel + ": recording started event");
        r.recordingId = startedRecordingId.get(streamId);
        await(r.publication::isConnected, channel + ": publication connected");
        publish(r.publication, 0, MESSAGES);
        final long target = r.publication.position();
        require(target == (long)MESSAGES * FRAME_LENGTH, "publication position " + target);
        await(() -> archive.getRecordingPosition(r.recordingId) == target, channel + ": recorded up to " + target);
    }

    void publish(final Publication publication, final int first, final int count)
    {
        for (int i = first; i < first + count; i++)
        {
            sendBuffer.setMemory(0, MESSAGE_LENGTH, (byte)(i & 0x7F));
            sendBuffer.putLong(0, i);
            final long deadline = System.currentTimeMillis() + timeoutMs;
            long result;
            while ((result = publication.offer(sendBuffer, 0, MESSAGE_LENGTH)) < 0)
            {
                if (result == Publication.CLOSED || result == Publication.MAX_POSITION_EXCEEDED ||
                    System.currentTimeMillis() > deadline)
                {
                    throw new IllegalStateException("offer of message " + i + " failed: " + result);
                }
                Thread.yield();
            }
        }
    }

    /** Collects messages, checking each carries the next sequence number and its filler bytes. */
    static final class Collector implements FragmentHandler
    {
        final List<Long> sequences = new ArrayList<>();
        String error;

        public void onFragment(
            final org.agrona.DirectBuffer buffer, final int offset, final int length, final io.aeron.logbuffer.Header h)
        {
            final long sequence = buffer.getLong(offset);
            if (length != MESSAGE_LENGTH)
            {
                error = "message " + sequence + " has length " + length;
            }
            for (int i = 8; i < length && error == null; i++)
            {
                if (buffer.getByte(offset + i) != (byte)(sequence & 0x7F))
                {
                    error = "message " + sequence + " is corrupt at byte " + i;
                }
            }
            sequences.add(sequence);
        }

        void expect(final int first, final int count)
        {
            require(error == null, error);
            final List<Long> expected = new ArrayList<>();
            for (long i = first; i < first + count; i++)
            {
                expected.add(i);
            }
            require(sequences.equals(expected), "received " + describe(sequences) + " expected " + describe(expected));
        }

        static String describe(final List<Long> values)
        {
            return values.isEmpty() ? "nothing" :
                values.size() + " messages " + values.get(0) + ".." + values.get(values.size() - 1);
        }
    }

    void replayAndExpect(
        final long recordingId, final long position, final long length, final String channel, final int first,
        final int count)
    {
        final Collector collector = new Collector();
        try (Subscription subscription = archive.replay(recordingId, position, length, channel, replayStream))
        {
            await(() -> subscription.imageCount() > 0, "the replay image on " + channel);
            final Image image = subscription.imageAtIndex(0);
            require(image.joinPosition() == position, "replay joined at " + image.joinPosition());
            // The replay ends: every message arrives, then the image goes as the archive closes the replay.
            await(() ->
            {
                subscription.poll(collector, 10);
                return collector.sequences.size() >= count && subscription.imageCount() == 0;
            }, "the replay of " + count + " messages to end (" + Collector.describe(collector.sequences) + ")",
                imageGoneTimeoutMs);
            collector.expect(first, count);
        }
    }

    void replayLive()
    {
        final Publication publication = aeron.addPublication(ipcChannel, liveStream);
        final long subscriptionId = archive.startRecording(ipcChannel, liveStream, SourceLocation.LOCAL);
        try
        {
            await(() -> startedRecordingId.containsKey(liveStream), "live recording started event");
            final long recordingId = startedRecordingId.get(liveStream);
            await(publication::isConnected, "live publication connected");
            publish(publication, 0, 10);
            await(() -> archive.getRecordingPosition(recordingId) == publication.position(), "live recorded");

            final long replaySessionId = archive.startReplay(
                recordingId, 0, AeronArchive.NULL_LENGTH, replayChannel, replayStream);
            final ChannelUri replayUri = ChannelUri.parse(replayChannel);
            replayUri.put(CommonContext.SESSION_ID_PARAM_NAME, Integer.toString((int)replaySessionId));
            final String channel = replayUri.toString();
            final Collector collector = new Collector();
            try (Subscription subscription = aeron.addSubscription(channel, replayStream))
            {
                await(() ->
                {
                    subscription.poll(collector, 10);
                    return collector.sequences.size() >= 10;
                }, "the first 10 replayed (" + Collector.describe(collector.sequences) + ")");
                publish(publication, 10, 20);
                await(() ->
                {
                    subscription.poll(collector, 10);
                    return collector.sequences.size() >= 30;
                }, "30 replayed following the recording (" + Collector.describe(collector.sequences) + ")");
                collector.expect(0, 30);

                // stop-replay: the archive ends the replay, the image goes although the recording goes on.
                check("stop-replay", needs(), () ->
                {
                    archive.stopReplay(replaySessionId);
                    await(() ->
                    {
                        subscription.poll(collector, 10);
                        return subscription.imageCount() == 0;
                    }, "the replay image to go after stopReplay", imageGoneTimeoutMs);
                    require(archive.getRecordingPosition(recordingId) == publication.position(),
                        "the recording stopped with the replay");
                });
            }
        }
        finally
        {
            archive.stopRecording(subscriptionId);
            publication.close();
        }
    }

    void extendRecording()
    {
        final int[] descriptor = new int[3];
        archive.listRecording(ipc.recordingId,
            (controlSessionId, correlationId, recordingId, startTimestamp, stopTimestamp, startPosition,
            stopPosition, initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
            strippedChannel, originalChannel, sourceIdentity) ->
            {
                descriptor[0] = initialTermId;
                descriptor[1] = termBufferLength;
                descriptor[2] = mtuLength;
            });
        final String channel = new ChannelUriStringBuilder().media("ipc")
            .initialPosition(ipc.stopPosition, descriptor[0], descriptor[1]).mtu(descriptor[2]).build();
        ipc.publication.close();
        try (ExclusivePublication publication = aeron.addExclusivePublication(channel, ipc.streamId))
        {
            require(publication.position() == ipc.stopPosition, "extension starts at " + publication.position());
            final long subscriptionId = archive.extendRecording(
                ipc.recordingId, ipcChannel, ipc.streamId, SourceLocation.LOCAL);
            await(() -> archive.getRecordingPosition(ipc.recordingId) == ipc.stopPosition, "extension active");
            publish(publication, MESSAGES, 10);
            final long target = publication.position();
            await(() -> archive.getRecordingPosition(ipc.recordingId) == target, "extension recorded");
            archive.stopRecording(subscriptionId);
            await(() -> archive.getStopPosition(ipc.recordingId) == target, "extension stopped at " + target);
        }
        replayAndExpect(ipc.recordingId, 0, AeronArchive.NULL_LENGTH, ipcChannel, 0, MESSAGES + 10);
    }

    final class EventsListener implements RecordingEventsListener
    {
        public void onStart(
            final long recordingId,
            final long startPosition,
            final int sessionId,
            final int streamId,
            final String channel,
            final String sourceIdentity)
        {
            startedRecordingId.put(streamId, recordingId);
        }

        public void onProgress(final long recordingId, final long startPosition, final long position)
        {
            progressPosition.put(recordingId, position);
        }

        public void onStop(final long recordingId, final long startPosition, final long stopPosition)
        {
            stoppedPosition.put(recordingId, stopPosition);
        }
    }

    static io.aeron.archive.client.RecordingDescriptorConsumer ignoreDescriptor()
    {
        return (controlSessionId, correlationId, recordingId, startTimestamp, stopTimestamp, startPosition,
            stopPosition, initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
            strippedChannel, originalChannel, sourceIdentity) -> {};
    }

    void closeAll()
    {
        for (final AutoCloseable closeable : new AutoCloseable[]{
            other, archive, local.publication, remote.publication, ipc.publication, eventsSubscription, aeron })
        {
            try
            {
                if (closeable != null)
                {
                    closeable.close();
                }
            }
            catch (final Throwable ex)
            {
                ex.printStackTrace(System.err);
            }
        }
    }
}
