"""Aeron 1.15.1 log buffers: the descriptor (layout, metadata, positions), mapping, appenders, reader and
scanners over the three terms of a publication or image log (docs/logbuffer.md)."""
