"""TermScanner.scanForAvailability: how much of a term the sender may send from an offset (Aeron 1.15.1).

Committed frames are accumulated from ``offset`` up to min(max_length, term length - offset) bytes,
whole frames only. A PAD frame counts only its 32-byte header (that is all the sender transmits) and
ends the scan; the rest of it is returned as ``padding`` for the sender to skip. One native call.
"""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer


def scan_for_availability(term_buffer: AtomicBuffer, offset: int, max_length: int) -> tuple[int, int]:
    """(available bytes from ``offset``, padding bytes that follow them)."""
    return term_buffer.scan_for_availability(offset, max_length)
