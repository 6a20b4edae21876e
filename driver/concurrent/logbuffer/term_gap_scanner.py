"""TermGapScanner: where a rebuilt term stops being contiguous (docs/logbuffer.md section 7, Aeron 1.15.1).

From the rebuild offset committed frames are walked while below the limit (the high-water mark's offset when
it is in the same term, else the term length); the first slot whose length is <= 0 begins a gap, which runs
to the next 32-byte slot holding a non-zero int, or to the limit.

``scan_for_gap`` is Aeron's: the first gap only. ``scan_for_gaps`` (beyond Aeron) carries on after
each gap and reports every one below the limit, so the loss detector can NAK them all in one pass. Each is
one native call.
"""

from __future__ import annotations

from driver.concurrent.atomic_buffer import AtomicBuffer, FrameBatch

DEFAULT_MAX_GAPS = 64
_scratch = FrameBatch(DEFAULT_MAX_GAPS)  # reused: agents scan from one thread, and pairs() copies out


def scan_for_gap(
    term_buffer: AtomicBuffer, term_id: int, rebuild_offset: int, limit_offset: int
) -> tuple[int, int, int]:
    """(new rebuild offset == gap offset, gap offset, gap length); gap length 0 when there is no gap.

    ``term_id`` is only passed through, as Aeron's GapHandler receives it; the caller knows it already."""
    gap_offset, gap_length = term_buffer.scan_for_gap(rebuild_offset, limit_offset)
    return gap_offset, gap_offset, gap_length


def scan_for_gaps(
    term_buffer: AtomicBuffer,
    rebuild_offset: int,
    limit_offset: int,
    max_gaps: int,
    batch: FrameBatch | None = None,
) -> tuple[int, list[tuple[int, int]]]:
    """(new rebuild offset, [(gap offset, gap length), ...] in term order, at most ``max_gaps``).

    ``batch`` is scratch room for the native scan (default: a shared one of ``DEFAULT_MAX_GAPS`` pairs;
    pass one of your own for more)."""
    if batch is None:
        batch = _scratch
    new_rebuild_offset, count = term_buffer.scan_for_gaps(rebuild_offset, limit_offset, max_gaps, batch)
    if count == 0:
        return new_rebuild_offset, []
    flat = batch.pairs(count)
    return new_rebuild_offset, list(zip(flat[0::2], flat[1::2], strict=True))
