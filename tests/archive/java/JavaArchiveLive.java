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
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * 1.15.1's ArchivingMediaDriver with a recording in progress, for tools that read its cnc.dat and archive dir:
 * records an IPC exclusive publication on stream 33 (64 KiB terms and segments), sends COUNT messages of 1000
 * bytes, waits until rec-pos has them all, prints "RECORDING recordingId counterId sessionId position", and keeps
 * the recording open until a line (or EOF) on stdin. Args: archiveDir aeronDir count. Only IPC: no ports bound.
 */
public final class JavaArchiveLive
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

        try (ArchivingMediaDriver ignore = ArchivingMediaDriver.launch(driverCtx, archiveCtx);
            AeronArchive archive = AeronArchive.connect(clientCtx))
        {
            final Aeron aeron = archive.context().aeron();
            archive.startRecording("aeron:ipc", 33, SourceLocation.LOCAL);
            try (ExclusivePublication publication = aeron.addExclusivePublication("aeron:ipc?term-length=65536", 33))
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
                    while (publication.offer(message) < 0)
                    {
                        Thread.yield();
                    }
                }
                while (counters.getCounterValue(counterId) < publication.position())
                {
                    Thread.sleep(1);
                }
                System.out.println("RECORDING " + recordingId + " " + counterId + " " + publication.sessionId() +
                    " " + publication.position());
                System.out.flush();
                new BufferedReader(new InputStreamReader(System.in)).readLine();
            }
        }
    }
}
