import io.aeron.Aeron;
import io.aeron.Subscription;
import io.aeron.logbuffer.FragmentHandler;
import org.agrona.concurrent.BackoffIdleStrategy;

import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

/**
 * Subscribes to CHANNEL/STREAM_ID through the driver in -Daeron.dir and checks that the messages of
 * SequencedPublisher arrive complete and in order: message k has LENGTH bytes, k at offset 0 and byte i
 * (8 <= i < LENGTH) = (k * 31 + i) & 0xff, all from one session.
 *
 * Usage: SequencedSubscriber CHANNEL STREAM_ID COUNT LENGTH TIMEOUT_S
 *
 * Prints (flushed): READY once subscribed, AVAILABLE sessionId joinPosition sourceIdentity,
 * PROGRESS received position once a second, DONE received position sessionId after COUNT messages (exit 0).
 * A message out of order, missing, duplicated or corrupt: ERROR ... and exit 3; timeout: TIMEOUT ..., exit 2.
 */
public final class SequencedSubscriber
{
    static long received = 0;
    static long position = 0;
    static int sessionId = 0;
    static String error = null;

    public static void main(final String[] args) throws Exception
    {
        final String channel = args[0];
        final int streamId = Integer.parseInt(args[1]);
        final long count = Long.parseLong(args[2]);
        final int length = Integer.parseInt(args[3]);
        final long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[4]));

        final Aeron.Context ctx = new Aeron.Context()
            .availableImageHandler((image) -> print(
                "AVAILABLE " + image.sessionId() + " " + image.joinPosition() + " " + image.sourceIdentity()))
            .unavailableImageHandler((image) -> print(
                "UNAVAILABLE " + image.sessionId() + " " + image.position()));
        final FragmentHandler handler = (buffer, offset, len, header) ->
        {
            if (error != null)
            {
                return;
            }
            if (received == 0)
            {
                sessionId = header.sessionId();
            }
            final long seq = buffer.getLong(offset, ByteOrder.LITTLE_ENDIAN);
            if (header.sessionId() != sessionId)
            {
                error = "message " + received + " from session " + header.sessionId() + ", expected " + sessionId;
            }
            else if (len != length)
            {
                error = "message " + received + " has length " + len + ", expected " + length;
            }
            else if (seq != received)
            {
                error = "message " + received + " carries sequence " + seq + " at position " + header.position();
            }
            else
            {
                for (int i = 8; i < len; i++)
                {
                    if (buffer.getByte(offset + i) != (byte)(seq * 31 + i))
                    {
                        error = "message " + seq + " corrupt at byte " + i;
                        break;
                    }
                }
            }
            received++;
            position = header.position();
        };

        final BackoffIdleStrategy idle = new BackoffIdleStrategy(
            100, 10, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MICROSECONDS.toNanos(500));
        try (Aeron aeron = Aeron.connect(ctx); Subscription subscription = aeron.addSubscription(channel, streamId))
        {
            print("READY");
            long nextReportNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (received < count)
            {
                final int fragments = subscription.poll(handler, 1024);
                if (error != null)
                {
                    print("ERROR " + error);
                    System.exit(3);
                }
                final long now = System.nanoTime();
                if (now - nextReportNs >= 0)
                {
                    print("PROGRESS " + received + " " + position);
                    nextReportNs += TimeUnit.SECONDS.toNanos(1);
                }
                if (now - deadlineNs > 0)
                {
                    print("TIMEOUT received " + received + " position " + position);
                    System.exit(2);
                }
                idle.idle(fragments);
            }
            print("DONE " + received + " " + position + " " + sessionId);
        }
    }

    private static synchronized void print(final String text)
    {
        System.out.println(text);
        System.out.flush();
    }
}
