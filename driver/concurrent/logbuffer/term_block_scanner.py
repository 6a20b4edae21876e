"""TermBlockScanner.scan: the end of a block of whole committed frames (archive recording), Aeron 1.15.1.

From ``offset`` whole frames are taken while they are committed and end at or before ``limit_offset``.
A PAD frame ends the block; it is included only when it is the first frame, so that a recorder copies
padding as a block of its own. One native call.
"""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer


def scan(term_buffer: AtomicBuffer, offset: int, limit_offset: int) -> int:
    """The offset just after the block (== ``offset`` when nothing is available)."""
    return term_buffer.scan_block(offset, limit_offset)


def scan_counting(term_buffer: AtomicBuffer, offset: int, limit_offset: int) -> tuple[int, int]:
    """``scan`` and the number of messages (unfragmented or first fragments) in the block, in one walk."""
    return term_buffer.scan_block_counting(offset, limit_offset)
