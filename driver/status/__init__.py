"""Driver status in cnc.dat: the system counters and per-stream position counters the driver allocates, and a
read-only snapshot of a running driver (its counters, error log and heartbeat) for the CLI and the exporter."""
