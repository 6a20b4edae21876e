"""TermReader: deliver the committed DATA frames of a term to a fragment handler (Aeron 1.15.1).

From the subscriber's term offset, frames are walked while their length (loaded with acquire) is
positive; PAD frames are stepped over, DATA frames delivered as (buffer, payload offset, payload length,
header). The walk is one native call per poll that fills a scratch batch with frame offsets and lengths;
Python then makes one call per delivered fragment (docs/logbuffer.md section 6).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from driver.concurrent.atomic_buffer import AtomicBuffer, FrameBatch
from driver.concurrent.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HEADER_LENGTH
from driver.concurrent.logbuffer.header import Header

FragmentHandler = Callable[[AtomicBuffer, int, int, Header], object]
ErrorHandler = Callable[[Exception], object]

DEFAULT_BATCH_CAPACITY = 256


class TermReader:
    """Reads terms with a scratch batch of its own (allocated once; one reader per thread)."""

    __slots__ = ("_batch",)

    def __init__(self, batch_capacity: int = DEFAULT_BATCH_CAPACITY) -> None:
        self._batch = FrameBatch(batch_capacity)

    def read(
        self,
        term_buffer: AtomicBuffer,
        term_offset: int,
        handler: FragmentHandler,
        fragments_limit: int,
        header: Header,
        error_handler: ErrorHandler | None = None,
    ) -> tuple[int, int]:
        """Deliver up to ``fragments_limit`` fragments from ``term_offset``; (fragments read, new term offset).

        The new offset is past every frame walked, padding included; the caller's position advances by
        (new offset - term_offset). If the handler raises and ``error_handler`` is given, it gets the
        exception and the failed frame counts as consumed but not read (as Aeron); without one the
        exception propagates and nothing of this poll counts as consumed.
        """
        batch = self._batch
        capacity = batch.capacity
        scan_frames = term_buffer.scan_frames
        header.buffer = term_buffer
        fragments_read = 0
        offset = term_offset

        while fragments_read < fragments_limit:
            wanted = fragments_limit - fragments_read
            if wanted > capacity:
                wanted = capacity
            count, next_offset = scan_frames(offset, wanted, batch)
            if count:
                frames = iter(batch.pairs(count))
                try:
                    for frame_offset, frame_length in zip(frames, frames, strict=True):
                        header.offset = frame_offset
                        handler(
                            term_buffer, frame_offset + HEADER_LENGTH, frame_length - HEADER_LENGTH, header
                        )
                        fragments_read += 1
                except Exception as e:
                    if error_handler is None:
                        raise
                    error_handler(e)
                    return fragments_read, frame_offset + (
                        (frame_length + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT
                    )
            offset = next_offset
            if count < wanted:
                break

        return fragments_read, offset


_per_thread = threading.local()


def read(
    term_buffer: AtomicBuffer,
    term_offset: int,
    handler: FragmentHandler,
    fragments_limit: int,
    header: Header,
    error_handler: ErrorHandler | None = None,
) -> tuple[int, int]:
    """``TermReader.read`` with a reader (and its scratch) kept per thread."""
    reader = getattr(_per_thread, "reader", None)
    if reader is None:
        reader = _per_thread.reader = TermReader()
    return reader.read(term_buffer, term_offset, handler, fragments_limit, header, error_handler)
