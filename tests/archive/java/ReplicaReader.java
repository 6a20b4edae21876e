import io.aeron.Aeron;
import io.aeron.FragmentAssembler;
import io.aeron.Subscription;
import io.aeron.archive.client.AeronArchive;
import io.aeron.logbuffer.FragmentHandler;
import java.util.zip.CRC32;

/**
 * A 1.15.1 AeronArchive client reading a replicated recording (docs/archive.md section 20): connects with the
 * aeron.archive.* properties, lists recording ID (args[0]) and prints "DESCRIPTOR start stop sessionId streamId",
 * replays it whole over aeron:ipc on stream args[1] and prints "REPLAYED count crc32" of the messages' bytes in
 * order. Exits 1 with "FAIL ..." on anything unexpected.
 */
public final class ReplicaReader
{
    public static void main(final String[] args)
    {
        final long recordingId = Long.parseLong(args[0]);
        final int replayStreamId = Integer.parseInt(args[1]);
        try (AeronArchive archive = AeronArchive.connect(new AeronArchive.Context()))
        {
            final long[] d = new long[4];
            final int found = archive.listRecording(recordingId,
                (controlSessionId, correlationId, id, startTimestamp, stopTimestamp, startPosition, stopPosition,
                initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId, streamId,
                strippedChannel, originalChannel, sourceIdentity) ->
                {
                    d[0] = startPosition;
                    d[1] = stopPosition;
                    d[2] = sessionId;
                    d[3] = streamId;
                });
            if (found != 1)
            {
                throw new IllegalStateException("recording " + recordingId + " not listed");
            }
            System.out.println("DESCRIPTOR " + d[0] + " " + d[1] + " " + d[2] + " " + d[3]);
            final Aeron aeron = archive.context().aeron();
            final CRC32 crc = new CRC32();
            final long[] count = new long[1];
            final byte[] bytes = new byte[1 << 16];
            final FragmentHandler handler = new FragmentAssembler((buffer, offset, length, header) ->
            {
                buffer.getBytes(offset, bytes, 0, length);
                crc.update(bytes, 0, length);
                count[0]++;
            });
            try (Subscription replay = archive.replay(
                recordingId, d[0], d[1] - d[0], "aeron:ipc", replayStreamId))
            {
                final long deadline = System.currentTimeMillis() + 60_000;
                while (!replay.isConnected() || replay.imageCount() == 0 ||
                    replay.imageAtIndex(0).position() < d[1])
                {
                    if (replay.poll(handler, 256) == 0)
                    {
                        if (System.currentTimeMillis() > deadline)
                        {
                            throw new IllegalStateException("replay incomplete after " + count[0] + " messages");
                        }
                        Thread.sleep(1);
                    }
                }
            }
            System.out.println("REPLAYED " + count[0] + " " + crc.getValue());
        }
        catch (final Throwable t)
        {
            System.out.println("FAIL " + t);
            System.exit(1);
        }
    }
}
