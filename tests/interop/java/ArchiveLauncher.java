import io.aeron.archive.Archive;
import org.agrona.concurrent.ShutdownSignalBarrier;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Interop peer: the standalone Aeron 1.15.1 Archive as a client of the driver named by -Daeron.dir.
 *
 * Every setting comes from -D properties as Archive.Context reads them (aeron.dir, aeron.archive.dir,
 * aeron.archive.control.channel, aeron.archive.replay.linger.timeout, ...). Archive.main cannot be used: its
 * context has no error handler and conclude() refuses that. Here errors are printed to stderr as
 * "ARCHIVE ERROR ..." lines (with their stack trace) so a test can show them.
 *
 * Prints "ARCHIVE READY" once the archive is running, then waits for SIGTERM/SIGINT, closes the archive and
 * prints "ARCHIVE CLOSED errors=N". Exit code 0, or 1 if the archive could not start.
 */
public final class ArchiveLauncher
{
    public static void main(final String[] args)
    {
        final AtomicInteger errors = new AtomicInteger();
        final Archive.Context ctx = new Archive.Context()
            .errorHandler((throwable) ->
            {
                errors.incrementAndGet();
                synchronized (System.err)
                {
                    System.err.println("ARCHIVE ERROR " + throwable);
                    throwable.printStackTrace(System.err);
                    System.err.flush();
                }
            });

        final ShutdownSignalBarrier barrier = new ShutdownSignalBarrier();
        try (Archive archive = Archive.launch(ctx))
        {
            System.out.println("ARCHIVE READY dir=" + archive.context().archiveDir().getAbsolutePath());
            System.out.flush();
            barrier.await();
        }
        catch (final Throwable ex)
        {
            ex.printStackTrace(System.err);
            System.exit(1);
        }

        System.out.println("ARCHIVE CLOSED errors=" + errors.get());
        System.out.flush();
    }
}
