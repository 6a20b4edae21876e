import io.aeron.Aeron;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.exceptions.RegistrationException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * Interop probe: which channels a driver accepts. Connects to the driver in args[0] and reads lines
 * "KIND STREAM_ID CHANNEL" (tab separated; KIND is pub, xpub, keep or sub) from stdin until EOF.
 *
 * For each line prints (flushed) one of:
 *   OK term=T mtu=M session=S initial=I position=P   (pub/xpub: what the driver gave the publication)
 *   OK                                              (sub)
 *   ERR code=C message                              (the driver refused the command)
 * The publication or subscription is closed before the next line, except for keep: a publication (as pub) that
 * stays open until the end, for later lines to refer to. Any other failure: stack trace, exit 1.
 */
public final class ChannelChecks
{
    public static void main(final String[] args) throws Exception
    {
        final Aeron.Context ctx = new Aeron.Context().aeronDirectoryName(args[0]);
        try (Aeron aeron = Aeron.connect(ctx);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)))
        {
            String line;
            while ((line = in.readLine()) != null)
            {
                if (line.isEmpty())
                {
                    continue;
                }
                final String[] parts = line.split("\t", 3);
                final String kind = parts[0];
                final int streamId = Integer.parseInt(parts[1]);
                final String channel = parts[2];
                try
                {
                    switch (kind)
                    {
                        case "pub":
                        case "xpub":
                        case "keep":
                        {
                            final Publication publication = !"xpub".equals(kind) ?
                                aeron.addPublication(channel, streamId) :
                                aeron.addExclusivePublication(channel, streamId);
                            System.out.println(
                                "OK term=" + publication.termBufferLength() +
                                " mtu=" + (publication.maxPayloadLength() + 32) +
                                " session=" + publication.sessionId() +
                                " initial=" + publication.initialTermId() +
                                " position=" + publication.position());
                            if (!"keep".equals(kind))
                            {
                                publication.close();
                            }
                            break;
                        }

                        case "sub":
                        {
                            final Subscription subscription = aeron.addSubscription(channel, streamId);
                            System.out.println("OK");
                            subscription.close();
                            break;
                        }

                        default:
                            throw new IllegalArgumentException("unknown kind: " + kind);
                    }
                }
                catch (final RegistrationException ex)
                {
                    System.out.println("ERR code=" + ex.errorCodeValue() + " " +
                        String.valueOf(ex.getMessage()).replace('\n', ' '));
                }
                System.out.flush();
            }
        }
    }
}
