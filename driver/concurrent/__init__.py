"""Shared-memory structures over mapped files: atomic buffers, ring buffers, broadcast, counters, error log, log buffers."""
