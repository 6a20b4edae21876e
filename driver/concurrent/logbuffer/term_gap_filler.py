"""TermGapFiller.tryFillGap (unreliable subscriptions): pad over a gap instead of asking for it again.

docs/logbuffer.md section 7, Aeron 1.15.1. Only when every 32-byte slot of the gap is still 0 (nothing of
it arrived meanwhile): a PAD frame with the log's default header, the gap's term offset and term id, and
frame length = gap length stored last with release semantics. One native call.
"""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.log_buffer_descriptor import default_frame_header


def try_fill_gap(
    meta_data_buffer: AtomicBuffer,
    term_buffer: AtomicBuffer,
    term_id: int,
    gap_offset: int,
    gap_length: int,
    header_template: bytes | None = None,
) -> bool:
    """True if the gap was filled with padding. ``header_template`` (the default header read once from the
    metadata) saves re-reading it on every call."""
    if header_template is None:
        header_template = default_frame_header(meta_data_buffer)
    return term_buffer.term_gap_fill(gap_offset, gap_length, header_template, term_id)
