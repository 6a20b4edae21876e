"""What the commands print, read-only over a 1.15.1 cnc.dat (ours or the Java driver's) or an archive dir: counter
decoding, stat filters and table, streams, the archive catalog. The commands themselves are in ``driver.cli``."""
