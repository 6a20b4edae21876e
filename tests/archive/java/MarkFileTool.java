import io.aeron.archive.ArchiveMarkFile;
import io.aeron.archive.codecs.mark.MarkFileHeaderDecoder;
import java.io.File;
import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * "write DIR": archive-mark.dat written by 1.15.1's ArchiveMarkFile with fixed values.
 * "read DIR": decodes archive-mark.dat with 1.15.1's MarkFileHeaderDecoder and prints it and the file length.
 */
public final class MarkFileTool
{
    public static void main(final String[] args) throws Exception
    {
        final File file = new File(args[1], ArchiveMarkFile.FILENAME);
        if (args[0].equals("write"))
        {
            final String control = "aeron:udp?endpoint=localhost:8010";
            final String local = "aeron:ipc";
            final String events = "aeron:udp?endpoint=localhost:8030";
            final String aeronDir = "/dev/shm/aeron-test";
            final int length = org.agrona.BitUtil.align(128 + 16 + control.length() + local.length() +
                events.length() + aeronDir.length(), ArchiveMarkFile.ALIGNMENT);
            try (ArchiveMarkFile markFile = new ArchiveMarkFile(file, length, () -> 1_700_000_000_000L, 0))
            {
                markFile.encoder().startTimestamp(1_699_999_999_000L).pid(4242).controlStreamId(10)
                    .localControlStreamId(11).eventsStreamId(30).controlChannel(control).localControlChannel(local)
                    .eventsChannel(events).aeronDirectory(aeronDir);
                markFile.updateActivityTimestamp(1_700_000_000_123L);
                markFile.signalReady();
            }
        }
        else
        {
            try (RandomAccessFile raf = new RandomAccessFile(file, "r"))
            {
                final MappedByteBuffer mapped = raf.getChannel().map(FileChannel.MapMode.READ_ONLY, 0, raf.length());
                final MarkFileHeaderDecoder decoder = new MarkFileHeaderDecoder();
                decoder.wrap(new UnsafeBuffer(mapped), 0, MarkFileHeaderDecoder.BLOCK_LENGTH,
                    MarkFileHeaderDecoder.SCHEMA_VERSION);
                System.out.println(raf.length());
                System.out.println(decoder);
            }
        }
    }
}
