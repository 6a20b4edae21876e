package io.aeron.archive;

import java.io.File;

/**
 * Writes archive.catalog in the directory given as the only argument with 1.15.1's own (package-private)
 * Catalog: three recordings, the first stopped, the second invalidated, the third left live.
 * tests/archive/test_catalog_jar.py reads it with driver.archive.catalog.
 */
public final class CatalogWriter
{
    public static void main(final String[] args)
    {
        final File dir = new File(args[0]);
        try (Catalog catalog = new Catalog(dir, null, 0, 16, () -> 1_700_000_000_000L))
        {
            final long first = catalog.addNewRecording(
                0L, 1_600_000_000_000L, 7, 1 << 27, 65536, 1408, 42, 1001,
                "aeron:udp?endpoint=localhost:40123", "aeron:udp?endpoint=localhost:40123|term-length=65536",
                "127.0.0.1:55555");
            catalog.recordingStopped(first, 65536L * 3 + 96, 1_600_000_000_500L);

            final long second = catalog.addNewRecording(
                10560L, 1_600_000_001_000L, -5, 1 << 16, 65536, 4096, -9, 2, "aeron:ipc", "aeron:ipc?tags=7",
                "aeron:ipc");
            catalog.forEntry((he, hd, e, d) -> he.valid(Catalog.INVALID), second);

            final long third = catalog.addNewRecording(
                1L << 40, 1_600_000_002_000L, 0, 1 << 30, 1 << 30, 65504, Integer.MAX_VALUE, Integer.MIN_VALUE,
                "aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1", "aeron:udp?endpoint=224.0.1.1:40456",
                "aeron:ipc");
            catalog.extendRecording(third, 77L, 88L);

            System.out.println(catalog.countEntries() + " " + catalog.maxEntries());
        }
    }
}
