import io.aeron.CncFileDescriptor;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

import java.io.File;
import java.nio.MappedByteBuffer;

/**
 * Writes records of an unknown command type into the to-driver ring buffer of cnc.dat, to provoke an
 * ON_ERROR and an error-log entry in the driver.
 *
 * Usage: RingGarbage AERON_DIR [--type N (default 0x77)] [--count N (default 1)] [--length BYTES (default 32)]
 *
 * The ring starts at END_OF_METADATA_OFFSET (128) and its length is the int32 at cnc offset 4. The body
 * starts with the usual client id / correlation id prefix (taken from the ring's correlation counter) and
 * is filled with 0xA5 after that. Prints "WROTE n CORRELATION c" on success, exit code 1 if a write fails.
 */
public final class RingGarbage
{
    public static void main(final String[] args)
    {
        final String dir = args[0];
        int typeId = 0x77;
        int count = 1;
        int length = 32;
        for (int i = 1; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--type": typeId = Integer.decode(args[++i]); break;
                case "--count": count = Integer.parseInt(args[++i]); break;
                case "--length": length = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown argument: " + args[i]);
            }
        }

        final MappedByteBuffer cnc = IoUtil.mapExistingFile(new File(dir, CncFileDescriptor.CNC_FILE), "cnc");
        try
        {
            final UnsafeBuffer whole = new UnsafeBuffer(cnc);
            final int version = whole.getIntVolatile(CncFileDescriptor.CNC_VERSION_FIELD_OFFSET);
            if (version != CncFileDescriptor.CNC_VERSION)
            {
                throw new IllegalStateException("cnc version " + version + " != " + CncFileDescriptor.CNC_VERSION);
            }
            final int toDriverLength = whole.getInt(CncFileDescriptor.TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET);
            final ManyToOneRingBuffer ring = new ManyToOneRingBuffer(
                new UnsafeBuffer(cnc, CncFileDescriptor.END_OF_METADATA_OFFSET, toDriverLength));

            final UnsafeBuffer body = new UnsafeBuffer(new byte[Math.max(length, 16)]);
            body.setMemory(0, body.capacity(), (byte)0xA5);
            long correlationId = -1;
            for (int i = 0; i < count; i++)
            {
                correlationId = ring.nextCorrelationId();
                body.putLong(0, correlationId);
                body.putLong(8, correlationId);
                if (!ring.write(typeId, body, 0, body.capacity()))
                {
                    System.out.println("FULL after " + i);
                    System.exit(1);
                }
            }
            System.out.println("WROTE " + count + " CORRELATION " + correlationId);
        }
        finally
        {
            IoUtil.unmap(cnc);
        }
    }
}
