import io.aeron.Aeron;
import io.aeron.ExclusivePublication;
import io.aeron.archive.client.AeronArchive;
import io.aeron.archive.client.ArchiveException;
import io.aeron.archive.client.ControlResponsePoller;
import io.aeron.archive.codecs.ControlResponseCode;
import io.aeron.archive.codecs.SourceLocation;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.util.function.BooleanSupplier;

/**
 * Provokes every error a 1.15.1 archive answers through the unmodified 1.15.1 {@link AeronArchive} client: codes
 * 1 (ACTIVE_LISTING) to 9 (INVALID_EXTENSION) and the code 0 (GENERIC) answers of replay and truncate, against
 * whatever archive listens on the aeron.archive.* channels of the driver in aeron.dir. The archive must be fresh
 * (recording ids start at 0) and run with aeron.archive.max.concurrent.recordings=2 and
 * aeron.archive.max.concurrent.replays=2.
 *
 * Prints one line per case, "ERROR name code text" (the archive's text, without the client's
 * "response for correlationId=N, error: " prefix), "NO-ERROR name" when the request succeeded, and "DONE" at the
 * end; exits 1 on a failure of the program itself. Setting: errors.stream.id (first of the five stream ids used;
 * default 9001), errors.timeout.ms (default 10000).
 */
public final class ArchiveErrors
{
    static final String IPC = "aeron:ipc";
    static final int MESSAGE_LENGTH = 100;
    static final String PREFIX = "response for correlationId=";

    final int baseStreamId = Integer.getInteger("errors.stream.id", 9001);
    final long timeoutMs = Long.getLong("errors.timeout.ms", 10_000L);
    final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(MESSAGE_LENGTH));

    Aeron aeron;
    AeronArchive archive;

    interface Request
    {
        void run();
    }

    public static void main(final String[] args)
    {
        final ArchiveErrors errors = new ArchiveErrors();
        int exitCode = 0;
        try
        {
            errors.runAll();
            System.out.println("DONE");
        }
        catch (final Throwable ex)
        {
            ex.printStackTrace(System.err);
            System.out.println("FAIL " + ex);
            exitCode = 1;
        }
        finally
        {
            if (null != errors.archive)
            {
                errors.archive.close();
            }
            if (null != errors.aeron)
            {
                errors.aeron.close();
            }
        }
        System.out.flush();
        System.exit(exitCode);
    }

    void await(final BooleanSupplier condition, final String what) throws InterruptedException
    {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean())
        {
            if (System.currentTimeMillis() > deadline)
            {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(1);
        }
    }

    static String text(final ArchiveException ex)
    {
        final String message = ex.getMessage();
        if (message.startsWith(PREFIX))
        {
            return message.substring(message.indexOf(", error: ") + ", error: ".length());
        }
        return message;
    }

    static void expect(final String name, final Request request)
    {
        try
        {
            request.run();
            System.out.println("NO-ERROR " + name);
        }
        catch (final ArchiveException ex)
        {
            System.out.println("ERROR " + name + " " + ex.errorCode() + " " + text(ex));
        }
    }

    void publish(final ExclusivePublication publication, final int count) throws InterruptedException
    {
        for (int i = 0; i < count; i++)
        {
            buffer.setMemory(0, MESSAGE_LENGTH, (byte)i);
            await(() -> publication.offer(buffer, 0, MESSAGE_LENGTH) > 0, "offer");
        }
    }

    /** Records a new IPC stream of ``count`` messages; the recording id once recorded up to the position. */
    long record(final ExclusivePublication publication, final int count) throws InterruptedException
    {
        archive.startRecording(IPC, publication.streamId(), SourceLocation.LOCAL);
        final long[] recordingId = { -1 };
        await(
            () -> archive.listRecordingsForUri(0, 100, IPC, publication.streamId(),
                (controlSessionId, correlationId, id, startTimestamp, stopTimestamp, startPosition, stopPosition,
                initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
                strippedChannel, originalChannel, sourceIdentity) -> recordingId[0] = id) > 0,
            "the recording of stream " + publication.streamId());
        publish(publication, count);
        final long target = publication.position();
        await(() -> archive.getRecordingPosition(recordingId[0]) == target, "recorded up to " + target);
        return recordingId[0];
    }

    void runAll() throws Exception
    {
        aeron = Aeron.connect(new Aeron.Context());
        archive = AeronArchive.connect(new AeronArchive.Context().aeron(aeron));

        final int liveStream = baseStreamId;
        final int doneStream = baseStreamId + 1;
        final int extraStream = baseStreamId + 2;
        final int unusedStream = baseStreamId + 3;
        final int replayStream = baseStreamId + 4;

        final ExclusivePublication livePublication = aeron.addExclusivePublication(IPC, liveStream);
        final long live = record(livePublication, 2);
        final long done;
        try (ExclusivePublication publication = aeron.addExclusivePublication(IPC, doneStream))
        {
            done = record(publication, 10);
            archive.stopRecording(IPC, doneStream);
            await(() -> archive.getStopPosition(done) == 1600, "the stop position of recording " + done);
        }

        // 1: a second listing while the first is still going (sent together, so they arrive in one poll).
        activeListing();

        // 2 and 3
        expect("truncate-active-recording", () -> archive.truncateRecording(live, 0));
        expect("extend-active-recording", () -> archive.extendRecording(live, IPC, liveStream, SourceLocation.LOCAL));
        expect("start-recording-twice", () -> archive.startRecording(IPC, liveStream, SourceLocation.LOCAL));

        // 4
        expect("stop-recording-unknown-channel", () -> archive.stopRecording(IPC, unusedStream));
        expect("stop-recording-unknown-subscription", () -> archive.stopRecording(123456789L));

        // 5
        expect("replay-unknown-recording", () -> archive.startReplay(10_000, 0, -1, IPC, replayStream));
        expect("stop-position-unknown-recording", () -> archive.getStopPosition(10_000));
        expect("truncate-unknown-recording", () -> archive.truncateRecording(10_000, 0));
        expect("extend-unknown-recording", () -> archive.extendRecording(10_000, IPC, unusedStream, SourceLocation.LOCAL));
        expect("find-last-outside-range", () -> archive.findLastMatchingRecording(10_000, IPC, liveStream, 0));

        // 6
        expect("stop-unknown-replay", () -> archive.stopReplay(77));

        // 0: replay requests refused
        expect("replay-unaligned-position", () -> archive.startReplay(done, 3, -1, IPC, replayStream));
        expect("replay-before-start", () -> archive.startReplay(done, -32, -1, IPC, replayStream));
        expect("replay-at-stop", () -> archive.startReplay(done, 1600, -1, IPC, replayStream));
        expect("replay-negative-length", () -> archive.startReplay(done, 0, -5, IPC, replayStream));
        expect("replay-after-live-position", () -> archive.startReplay(live, 4096, -1, IPC, replayStream));

        // 0: truncations refused
        expect("truncate-unaligned", () -> archive.truncateRecording(done, 3));
        expect("truncate-after-stop", () -> archive.truncateRecording(done, 1632));
        expect("truncate-mid-frame", () -> archive.truncateRecording(done, 32));
        expect("truncate-at-stop", () -> archive.truncateRecording(done, 1600));

        // 7, and 2 for a truncation under a replay: nobody subscribes, so the replays wait for a subscriber.
        final long replay1 = archive.startReplay(done, 0, -1, IPC, replayStream);
        final long replay2 = archive.startReplay(done, 0, -1, IPC, replayStream);
        expect("max-replays", () -> archive.startReplay(done, 0, -1, IPC, replayStream));
        expect("truncate-under-replay", () -> archive.truncateRecording(done, 0));
        archive.stopReplay(replay1);
        archive.stopReplay(replay2);

        // 8: live and extra record, the limit is 2.
        try (ExclusivePublication publication = aeron.addExclusivePublication(IPC, extraStream))
        {
            final long extra = record(publication, 1);
            expect("max-recordings", () -> archive.startRecording(IPC, unusedStream, SourceLocation.LOCAL));
            expect("max-recordings-extend", () -> archive.extendRecording(done, IPC, doneStream, SourceLocation.LOCAL));
            archive.stopRecording(IPC, extraStream);
            await(() -> archive.getStopPosition(extra) == 160, "the stop position of recording " + extra);
        }
        archive.stopRecording(IPC, liveStream);
        livePublication.close();
        await(() -> archive.getStopPosition(live) == 320, "the stop position of recording " + live);

        // 9: a publication starting at 0, not at the stop position: OK first, the error after.
        try (ExclusivePublication publication = aeron.addExclusivePublication(IPC, doneStream))
        {
            final long subscriptionId = archive.extendRecording(done, IPC, doneStream, SourceLocation.LOCAL);
            final String[] error = { null };
            await(
                () ->
                {
                    try
                    {
                        archive.checkForErrorResponse();
                        return false;
                    }
                    catch (final ArchiveException ex)
                    {
                        error[0] = ex.errorCode() + " " + text(ex);
                        return true;
                    }
                },
                "the invalid extension error");
            System.out.println("ERROR invalid-extension " + error[0]);
            archive.stopRecording(subscriptionId);
        }
    }

    void activeListing() throws InterruptedException
    {
        final ControlResponsePoller poller = archive.controlResponsePoller();
        for (int attempt = 0; attempt < 20; attempt++)
        {
            final long first = aeron.nextCorrelationId();
            final long second = aeron.nextCorrelationId();
            if (!archive.archiveProxy().listRecordings(0, 100, first, archive.controlSessionId()) ||
                !archive.archiveProxy().listRecordings(0, 100, second, archive.controlSessionId()))
            {
                throw new IllegalStateException("cannot send the list recordings requests");
            }
            final long deadline = System.currentTimeMillis() + timeoutMs;
            while (true)
            {
                if (System.currentTimeMillis() > deadline)
                {
                    throw new IllegalStateException("timed out waiting for the answer of the second listing");
                }
                if (poller.poll() == 0 || !poller.isPollComplete() ||
                    poller.controlSessionId() != archive.controlSessionId() || poller.correlationId() != second)
                {
                    Thread.sleep(0, 100_000);
                    continue;
                }
                if (poller.code() == ControlResponseCode.ERROR)
                {
                    System.out.println(
                        "ERROR active-listing " + poller.relevantId() + " " + poller.errorMessage());
                    Thread.sleep(100); // the first listing's descriptors drain before the next request
                    return;
                }
                break;
            }
        }
        System.out.println("NO-ERROR active-listing");
    }
}
