"""Zeroing consumed term space so the term can be reused (docs/logbuffer.md section 8).

Appenders and the rebuilder rely on a term being all zeros ahead of the tail: a zero frame length is
what makes readers stop. The conductor decides what to clean; this only does the memset.
"""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer


def clean(term_buffer: AtomicBuffer, offset: int, length: int) -> None:
    if offset < 0 or length < 0 or offset + length > term_buffer.capacity:
        raise ValueError(f"cannot clean {length} bytes at {offset} of a {term_buffer.capacity}-byte term")
    term_buffer.set_zero(offset, length)
