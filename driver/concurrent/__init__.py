"""Shared-memory structures over mapped files. The only importers of ``driver._native``."""
