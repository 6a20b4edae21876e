"""Driver status: system counters and per-stream position counters in cnc.dat."""
