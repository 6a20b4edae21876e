import io.aeron.Aeron;
import io.aeron.Publication;
import org.agrona.BufferUtil;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

/**
 * Publishes COUNT sequenced messages of LENGTH (>= 16) bytes to CHANNEL/STREAM_ID through the driver in
 * -Daeron.dir, for loss and recovery tests: message k carries k (int64, little-endian) at offset 0 and byte i
 * (8 <= i < LENGTH) = (k * 31 + i) & 0xff, which SequencedSubscriber checks.
 *
 * Usage: SequencedPublisher CHANNEL STREAM_ID COUNT LENGTH RATE TIMEOUT_S [--hold]
 *   RATE: messages per second (0 = as fast as flow control allows); COUNT 0 = until the timeout.
 *   --hold: after the last message, keep the publication open until a line (or EOF) arrives on stdin, so the
 *           driver can still answer NAKs; then close.
 *
 * Prints (flushed): PUB sessionId, CONNECTED, PROGRESS sent position backPressured once a second,
 * DONE sent position, CLOSED. Exit 0; on a timeout TIMEOUT ... and exit 2; any failure: a stack trace, exit 1.
 */
public final class SequencedPublisher
{
    public static void main(final String[] args) throws Exception
    {
        final String channel = args[0];
        final int streamId = Integer.parseInt(args[1]);
        final long count = Long.parseLong(args[2]);
        final int length = Integer.parseInt(args[3]);
        final long rate = Long.parseLong(args[4]);
        final long timeoutNs = TimeUnit.SECONDS.toNanos(Long.parseLong(args[5]));
        final boolean hold = args.length > 6 && "--hold".equals(args[6]);
        if (length < 16)
        {
            throw new IllegalArgumentException("LENGTH must be >= 16");
        }

        final long startNs = System.nanoTime();
        final long deadlineNs = startNs + timeoutNs;
        final BackoffIdleStrategy idle = new BackoffIdleStrategy(
            100, 10, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MICROSECONDS.toNanos(500));
        try (Aeron aeron = Aeron.connect(new Aeron.Context());
            Publication publication = aeron.addPublication(channel, streamId))
        {
            System.out.println("PUB " + publication.sessionId());
            System.out.flush();
            while (!publication.isConnected())
            {
                if (System.nanoTime() - deadlineNs > 0)
                {
                    System.out.println("TIMEOUT not connected");
                    System.exit(2);
                }
                Thread.sleep(1);
            }
            System.out.println("CONNECTED");
            System.out.flush();

            final UnsafeBuffer buffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(length, 64));
            final long sendStartNs = System.nanoTime();
            long nextReportNs = sendStartNs + TimeUnit.SECONDS.toNanos(1);
            long sent = 0;
            long position = 0;
            long backPressured = 0;
            while (count == 0 || sent < count)
            {
                final long now = System.nanoTime();
                if (now - nextReportNs >= 0)
                {
                    System.out.println("PROGRESS " + sent + " " + position + " " + backPressured);
                    System.out.flush();
                    nextReportNs += TimeUnit.SECONDS.toNanos(1);
                }
                if (now - deadlineNs > 0)
                {
                    if (count == 0)
                    {
                        break;
                    }
                    System.out.println("TIMEOUT sent " + sent + " position " + position);
                    System.exit(2);
                }
                if (rate > 0 && sent >= (now - sendStartNs) / 1000 * rate / 1_000_000L)
                {
                    idle.idle(0);
                    continue;
                }
                buffer.putLong(0, sent, java.nio.ByteOrder.LITTLE_ENDIAN);
                for (int i = 8; i < length; i++)
                {
                    buffer.putByte(i, (byte)(sent * 31 + i));
                }
                final long result = publication.offer(buffer, 0, length);
                if (result > 0)
                {
                    position = result;
                    sent++;
                    idle.reset();
                }
                else if (result == Publication.CLOSED || result == Publication.MAX_POSITION_EXCEEDED)
                {
                    throw new IllegalStateException("message " + sent + ": publication result " + result);
                }
                else
                {
                    backPressured++;
                    idle.idle(0);
                }
            }
            System.out.println("DONE " + sent + " " + position);
            System.out.flush();
            if (hold)
            {
                new BufferedReader(new InputStreamReader(System.in)).readLine();
            }
        }
        System.out.println("CLOSED");
        System.out.flush();
    }
}
