"""The CLI's views of a running driver, read-only over a 1.15.1 cnc.dat (ours or the Java driver's): counter
decoding, stat filters, streams, and the commands that print them."""
