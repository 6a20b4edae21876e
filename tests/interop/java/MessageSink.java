import io.aeron.Aeron;
import io.aeron.FragmentAssembler;
import io.aeron.Image;
import io.aeron.Subscription;
import io.aeron.logbuffer.FragmentHandler;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32;

/**
 * Interop probe: subscribes to CHANNEL/STREAM through the driver in DIR and reports every whole message.
 *
 * Usage: MessageSink DIR CHANNEL STREAM --count N [--timeout SECONDS] [--until-unavailable K]
 *
 * Prints (flushed): READY registrationId once subscribed; from the image handlers
 * AVAILABLE sessionId joinPosition correlationId sourceIdentity and UNAVAILABLE sessionId position isEndOfStream;
 * MSG seq length crc32 sessionId position per message reassembled by a FragmentAssembler (seq counts from 0 over
 * all sessions, position is the stream position after the message); DONE once N messages arrived and
 * (--until-unavailable K) K images went unavailable. Exits 0; on timeout prints TIMEOUT and exits 2.
 */
public final class MessageSink
{
    private static final Object LOCK = new Object();

    public static void main(final String[] args) throws Exception
    {
        final String dir = args[0];
        final String channel = args[1];
        final int streamId = Integer.parseInt(args[2]);
        int count = 0;
        long timeoutS = 20;
        int untilUnavailable = 0;
        for (int i = 3; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--count": count = Integer.parseInt(args[++i]); break;
                case "--timeout": timeoutS = Long.parseLong(args[++i]); break;
                case "--until-unavailable": untilUnavailable = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown argument: " + args[i]);
            }
        }

        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        final AtomicInteger unavailable = new AtomicInteger();
        final Aeron.Context ctx = new Aeron.Context()
            .aeronDirectoryName(dir)
            .availableImageHandler((image) -> print(
                "AVAILABLE " + image.sessionId() + " " + image.joinPosition() + " " + image.correlationId() + " " +
                image.sourceIdentity()))
            .unavailableImageHandler((image) ->
            {
                print("UNAVAILABLE " + image.sessionId() + " " + image.position() + " " + image.isEndOfStream());
                unavailable.incrementAndGet();
            });

        final CRC32 crc = new CRC32();
        final int[] received = { 0 };
        final StringBuilder out = new StringBuilder();
        final FragmentHandler handler = (buffer, offset, length, header) ->
        {
            final byte[] bytes = new byte[length];
            buffer.getBytes(offset, bytes);
            crc.reset();
            crc.update(bytes, 0, length);
            out.append("MSG ").append(received[0]++).append(' ').append(length).append(' ').append(crc.getValue())
                .append(' ').append(header.sessionId()).append(' ').append(header.position()).append('\n');
        };
        final FragmentAssembler assembler = new FragmentAssembler(handler);

        try (Aeron aeron = Aeron.connect(ctx); Subscription sub = aeron.addSubscription(channel, streamId))
        {
            print("READY " + sub.registrationId());
            while (received[0] < count || unavailable.get() < untilUnavailable)
            {
                final int fragments = sub.poll(assembler, 64);
                if (out.length() > 0)
                {
                    print(out.toString().trim());
                    out.setLength(0);
                }
                if (fragments == 0)
                {
                    if (System.nanoTime() - deadline > 0)
                    {
                        print("TIMEOUT received " + received[0] + " unavailable " + unavailable.get());
                        System.exit(2);
                    }
                    Thread.sleep(1);
                }
            }
            print("DONE");
        }
    }

    private static void print(final String text)
    {
        synchronized (LOCK)
        {
            System.out.println(text);
            System.out.flush();
        }
    }
}
