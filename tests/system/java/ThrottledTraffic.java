import io.aeron.Aeron;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.logbuffer.FragmentHandler;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.concurrent.TimeUnit;

/**
 * Steady, bounded traffic for observability tests: one client with a publication and a subscription on the
 * same channel, offering MESSAGES_PER_SECOND messages of MESSAGE_LENGTH bytes and polling them back.
 *
 * Usage: ThrottledTraffic CHANNEL STREAM_ID MESSAGES_PER_SECOND MESSAGE_LENGTH MAX_SECONDS  (-Daeron.dir=...)
 *
 * Prints CONNECTED sessionId once the subscription has an image, then SENT n RECEIVED m every second; exits
 * after MAX_SECONDS (tests normally stop it sooner, by pid).
 */
public final class ThrottledTraffic
{
    public static void main(final String[] args) throws Exception
    {
        final String channel = args[0];
        final int streamId = Integer.parseInt(args[1]);
        final long rate = Long.parseLong(args[2]);
        final int length = Integer.parseInt(args[3]);
        final long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[4]));

        try (Aeron aeron = Aeron.connect(new Aeron.Context());
            Subscription subscription = aeron.addSubscription(channel, streamId);
            Publication publication = aeron.addPublication(channel, streamId))
        {
            final long connectDeadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!publication.isConnected() || subscription.imageCount() == 0)
            {
                if (System.nanoTime() > connectDeadlineNs)
                {
                    throw new IllegalStateException("not connected within 10 s");
                }
                Thread.sleep(1);
            }
            System.out.println("CONNECTED " + publication.sessionId());
            System.out.flush();

            final UnsafeBuffer buffer = new UnsafeBuffer(BufferUtil.allocateDirectAligned(length, 64));
            final long[] received = { 0 };
            final FragmentHandler handler = (b, offset, len, header) -> received[0]++;
            final long startNs = System.nanoTime();
            long nextReportNs = startNs + TimeUnit.SECONDS.toNanos(1);
            long sent = 0;
            while (System.nanoTime() < deadlineNs)
            {
                final long due = (System.nanoTime() - startNs) * rate / 1_000_000_000L;
                while (sent < due)
                {
                    buffer.putLong(0, sent);
                    if (publication.offer(buffer, 0, length) < 0)
                    {
                        break;
                    }
                    sent++;
                }
                subscription.poll(handler, 256);
                final long now = System.nanoTime();
                if (now >= nextReportNs)
                {
                    System.out.println("SENT " + sent + " RECEIVED " + received[0]);
                    System.out.flush();
                    nextReportNs += TimeUnit.SECONDS.toNanos(1);
                }
                Thread.sleep(1);
            }
        }
    }
}
