import io.aeron.Aeron;
import io.aeron.Counter;
import org.agrona.concurrent.status.CountersReader;

import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * Interop probe: connects to the driver in args[0], adds a counter and reads it back.
 *
 * Usage: CounterClient AERON_DIR [--type N] [--label TEXT] [--value V] [--hang | --hold]
 *
 * Prints (one per line, flushed): CLIENT clientId, COUNTER id registrationId, VALUE v, LABEL text,
 * then READY. --hang: sleep forever (the test SIGKILLs it). --hold: wait for a line (or EOF) on stdin.
 * Then closes the counter and the client and prints CLOSED. Any failure: stack trace, exit code 1.
 */
public final class CounterClient
{
    public static void main(final String[] args) throws Exception
    {
        final String dir = args[0];
        int typeId = 1001;
        String label = "interop-counter";
        long value = 4242L;
        boolean hang = false;
        boolean hold = false;
        for (int i = 1; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--type": typeId = Integer.parseInt(args[++i]); break;
                case "--label": label = args[++i]; break;
                case "--value": value = Long.parseLong(args[++i]); break;
                case "--hang": hang = true; break;
                case "--hold": hold = true; break;
                default: throw new IllegalArgumentException("unknown argument: " + args[i]);
            }
        }

        final Aeron.Context ctx = new Aeron.Context().aeronDirectoryName(dir);
        try (Aeron aeron = Aeron.connect(ctx))
        {
            System.out.println("CLIENT " + aeron.clientId());
            final Counter counter = aeron.addCounter(typeId, label);
            System.out.println("COUNTER " + counter.id() + " " + counter.registrationId());
            counter.setOrdered(value);

            final CountersReader reader = aeron.countersReader();
            System.out.println("VALUE " + reader.getCounterValue(counter.id()));
            System.out.println("LABEL " + reader.getCounterLabel(counter.id()));
            System.out.println("READY");
            System.out.flush();

            if (hang)
            {
                Thread.sleep(Long.MAX_VALUE);
            }
            if (hold)
            {
                new BufferedReader(new InputStreamReader(System.in)).readLine();
            }
            counter.close();
        }
        System.out.println("CLOSED");
        System.out.flush();
    }
}
