import io.aeron.archive.client.AeronArchive;

/**
 * A 1.15.1 AeronArchive client that only asks ordinary questions while another client uses the replay extensions
 * on the same archive (docs/archive.md section 18): it connects with the aeron.archive.* properties, prints
 * "BYSTANDER CONNECTED", asks for recording 0's recorded and stop positions (it must exist) every
 * bystander.interval.ms (20) for bystander.duration.ms, then prints "BYSTANDER OK n". Anything unexpected on its
 * response stream makes the client throw: it prints "BYSTANDER FAIL ..." and exits 1.
 */
public final class ArchiveBystander
{
    public static void main(final String[] args)
    {
        final long durationMs = Long.getLong("bystander.duration.ms", 5000L);
        final long intervalMs = Long.getLong("bystander.interval.ms", 20L);
        try (AeronArchive archive = AeronArchive.connect(new AeronArchive.Context()))
        {
            System.out.println("BYSTANDER CONNECTED");
            System.out.flush();
            final long end = System.currentTimeMillis() + durationMs;
            long asked = 0;
            while (System.currentTimeMillis() < end)
            {
                archive.getRecordingPosition(0);
                archive.getStopPosition(0);
                asked++;
                Thread.sleep(intervalMs);
            }
            System.out.println("BYSTANDER OK " + asked);
        }
        catch (final Throwable t)
        {
            System.out.println("BYSTANDER FAIL " + t);
            System.out.flush();
            System.exit(1);
        }
    }
}
