"""The kit's one error type."""

from __future__ import annotations


class PeerError(RuntimeError):
    """A peer or child process that could not be found, built or started; the message says why."""
