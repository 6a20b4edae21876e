import io.aeron.Aeron;
import io.aeron.ExclusivePublication;
import io.aeron.archive.Archive;
import io.aeron.archive.ArchiveThreadingMode;
import io.aeron.archive.ArchivingMediaDriver;
import io.aeron.archive.client.AeronArchive;
import io.aeron.archive.codecs.SourceLocation;
import io.aeron.archive.status.RecordingPos;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import java.io.File;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * Records with 1.15.1's own archive (ArchivingMediaDriver in this JVM): an IPC exclusive publication that starts
 * at term offset 10560 (a late start), 64 KiB terms and segments, COUNT messages of 1000 bytes, byte i of message
 * m = (m + i) & 0x7f. Prints "recordingId startPosition stopPosition". Args: archiveDir aeronDir count.
 * Only IPC channels: no ports are bound.
 */
public final class JavaArchiveRecorder
{
    public static void main(final String[] args) throws Exception
    {
        final String aeronDir = args[1];
        final int count = Integer.parseInt(args[2]);
        final MediaDriver.Context driverCtx = new MediaDriver.Context()
            .aeronDirectoryName(aeronDir).dirDeleteOnStart(true).threadingMode(ThreadingMode.SHARED);
        final Archive.Context archiveCtx = new Archive.Context()
            .archiveDir(new File(args[0])).aeronDirectoryName(aeronDir).threadingMode(ArchiveThreadingMode.SHARED)
            .segmentFileLength(64 * 1024).controlChannel("aeron:ipc?alias=unused-control").controlStreamId(12)
            .recordingEventsChannel("aeron:ipc").errorHandler(Throwable::printStackTrace);
        final AeronArchive.Context clientCtx = new AeronArchive.Context().aeronDirectoryName(aeronDir)
            .controlRequestChannel("aeron:ipc").controlRequestStreamId(11)
            .controlResponseChannel("aeron:ipc").controlResponseStreamId(21);
        final String channel = "aeron:ipc?term-length=65536|init-term-id=5|term-id=5|term-offset=10560";

        try (ArchivingMediaDriver ignore = ArchivingMediaDriver.launch(driverCtx, archiveCtx);
            AeronArchive archive = AeronArchive.connect(clientCtx))
        {
            final Aeron aeron = archive.context().aeron();
            archive.startRecording("aeron:ipc", 33, SourceLocation.LOCAL);
            try (ExclusivePublication publication = aeron.addExclusivePublication(channel, 33))
            {
                final CountersReader counters = aeron.countersReader();
                int counterId;
                while ((counterId = RecordingPos.findCounterIdBySession(counters, publication.sessionId())) < 0)
                {
                    Thread.sleep(1);
                }
                final long recordingId = RecordingPos.getRecordingId(counters, counterId);
                final UnsafeBuffer message = new UnsafeBuffer(new byte[1000]);
                for (int m = 0; m < count; m++)
                {
                    for (int i = 0; i < 1000; i++)
                    {
                        message.putByte(i, (byte)((m + i) & 0x7f));
                    }
                    while (publication.offer(message) < 0)
                    {
                        Thread.yield();
                    }
                }
                while (counters.getCounterValue(counterId) < publication.position())
                {
                    Thread.sleep(1);
                }
                archive.stopRecording("aeron:ipc", 33);
                long stop;
                while ((stop = archive.getStopPosition(recordingId)) == -1)
                {
                    Thread.sleep(1);
                }
                System.out.println(recordingId + " " + 10560 + " " + stop);
            }
        }
    }
}
