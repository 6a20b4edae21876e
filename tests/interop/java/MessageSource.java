import io.aeron.Aeron;
import io.aeron.Publication;
import io.aeron.logbuffer.BufferClaim;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

/**
 * Interop probe: publishes deterministic messages to CHANNEL/STREAM through the driver in DIR.
 *
 * Usage: MessageSource DIR CHANNEL STREAM [--exclusive] [--try-claim] [--sizes s1,s2,...] [--count N]
 *                      [--timeout SECONDS] [--hold] [--destinations uri1,uri2,...]
 *                      [--go-on-input]
 *
 * Message k has length sizes[k % sizes.length] and byte i = (k * 31 + i) & 0xff. Offers (or, with --try-claim,
 * claims when the length fits one frame) are retried on NOT_CONNECTED, BACK_PRESSURED and ADMIN_ACTION until the
 * timeout. Prints (flushed): PUB sessionId maxMessageLength maxPayloadLength termLength, CONNECTED,
 * SENT k length position claim|offer per message, DONE position. --hold: then wait for a line (or EOF) on stdin.
 * --destinations: Publication.addDestination for each (an MDC channel with control-mode=manual) before waiting
 * for the connection.
 * --go-on-input: once connected, wait for a line on stdin before publishing (so that every receiver of a dynamic
 * MDC publication can join first: it is connected once any one receiver is).
 * Then closes the publication and the client and prints CLOSED. Any failure: stack trace, exit code 1.
 */
public final class MessageSource
{
    public static void main(final String[] args) throws Exception
    {
        final String dir = args[0];
        final String channel = args[1];
        final int streamId = Integer.parseInt(args[2]);
        boolean exclusive = false;
        boolean tryClaim = false;
        boolean hold = false;
        boolean goOnInput = false;
        int[] sizes = { 32 };
        int count = 10;
        long timeoutS = 20;
        String[] destinations = {};
        for (int i = 3; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--exclusive": exclusive = true; break;
                case "--try-claim": tryClaim = true; break;
                case "--hold": hold = true; break;
                case "--go-on-input": goOnInput = true; break;
                case "--destinations": destinations = args[++i].split(","); break;
                case "--count": count = Integer.parseInt(args[++i]); break;
                case "--timeout": timeoutS = Long.parseLong(args[++i]); break;
                case "--sizes":
                    final String[] parts = args[++i].split(",");
                    sizes = new int[parts.length];
                    for (int j = 0; j < parts.length; j++)
                    {
                        sizes[j] = Integer.parseInt(parts[j]);
                    }
                    break;
                default: throw new IllegalArgumentException("unknown argument: " + args[i]);
            }
        }

        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        final Aeron.Context ctx = new Aeron.Context().aeronDirectoryName(dir);
        try (Aeron aeron = Aeron.connect(ctx);
            Publication pub = exclusive ?
                aeron.addExclusivePublication(channel, streamId) : aeron.addPublication(channel, streamId))
        {
            System.out.println("PUB " + pub.sessionId() + " " + pub.maxMessageLength() + " " +
                pub.maxPayloadLength() + " " + pub.termBufferLength());
            System.out.flush();
            for (final String destination : destinations)
            {
                pub.addDestination(destination);
            }
            while (!pub.isConnected())
            {
                checkDeadline(deadline, "connection");
                Thread.sleep(1);
            }
            System.out.println("CONNECTED");
            System.out.flush();
            final BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
            if (goOnInput)
            {
                stdin.readLine();
            }

            int maxSize = 0;
            for (final int size : sizes)
            {
                maxSize = Math.max(maxSize, size);
            }
            final UnsafeBuffer buffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(Math.max(maxSize, 64), 64));
            final BufferClaim claim = new BufferClaim();
            final StringBuilder out = new StringBuilder();
            long position = 0;
            for (int k = 0; k < count; k++)
            {
                final int length = sizes[k % sizes.length];
                final boolean useClaim = tryClaim && length <= pub.maxPayloadLength();
                for (int i = 0; i < length; i++)
                {
                    buffer.putByte(i, (byte)(k * 31 + i));
                }
                while (true)
                {
                    position = useClaim ? pub.tryClaim(length, claim) : pub.offer(buffer, 0, length);
                    if (position > 0)
                    {
                        break;
                    }
                    if (position == Publication.CLOSED || position == Publication.MAX_POSITION_EXCEEDED)
                    {
                        throw new IllegalStateException("message " + k + ": publication result " + position);
                    }
                    checkDeadline(deadline, "message " + k + " (last result " + position + ")");
                    Thread.yield();
                }
                if (useClaim)
                {
                    claim.putBytes(buffer, 0, length);
                    claim.commit();
                }
                out.append("SENT ").append(k).append(' ').append(length).append(' ').append(position)
                    .append(useClaim ? " claim\n" : " offer\n");
                if (out.length() > 8192)
                {
                    System.out.print(out);
                    out.setLength(0);
                }
            }
            System.out.print(out);
            System.out.println("DONE " + position);
            System.out.flush();
            if (hold)
            {
                stdin.readLine();
            }
        }
        System.out.println("CLOSED");
        System.out.flush();
    }

    private static void checkDeadline(final long deadline, final String what)
    {
        if (System.nanoTime() - deadline > 0)
        {
            throw new IllegalStateException("timed out waiting for " + what);
        }
    }
}
