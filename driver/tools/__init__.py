"""Read-only tools over a 1.15.1 cnc.dat (ours or the Java driver's): counter decoding, stat filters, streams."""
