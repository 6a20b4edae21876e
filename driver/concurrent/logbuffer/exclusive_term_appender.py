"""ExclusiveTermAppender: the single writer of a term (ExclusivePublication), Aeron 1.15.1.

The caller keeps (term_id, term_offset) itself, so no atomic read-modify-write is needed: each append
stores the new tail with a release store (before writing its frames, as 1.15.1 does, so the driver
sees the space taken at once) and commits every frame with a release store of its length, as the
concurrent appender does, because readers in other processes rely on that.

Return values: the new term offset (> 0) on success, else ``TRIPPED`` (padding written up to the end
of the term) or ``FAILED`` (the term was already exactly full). Either way: rotate to the next term.
"""

from __future__ import annotations

from typing import Any

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from driver.concurrent.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HEADER_LENGTH
from driver.concurrent.logbuffer.term_appender import (
    FAILED,
    TRIPPED,
    check_fragmentation,
    check_header_template,
    check_partition,
)

__all__ = ["FAILED", "TRIPPED", "ExclusiveTermAppender"]

_ALIGNMENT_MASK = -FRAME_ALIGNMENT
_ALIGNMENT_ROUND = FRAME_ALIGNMENT - 1
_KEEP_TEMPLATE_FLAGS = -1


class ExclusiveTermAppender:
    """Appender for one partition written by one publisher only."""

    __slots__ = (
        "_put_tail_release",
        "_tail_counter_offset",
        "_template",
        "_term_buffer",
        "_term_length",
        "_write_frame",
        "_write_frame_header",
        "_write_padding_frame",
    )

    def __init__(
        self, term_buffer: AtomicBuffer, meta_data_buffer: AtomicBuffer, partition_index: int
    ) -> None:
        self._tail_counter_offset = check_partition(meta_data_buffer, partition_index)
        self._term_buffer = term_buffer
        self._term_length = term_buffer.capacity
        self._template: bytes | None = None
        self._put_tail_release = meta_data_buffer.put_int64_release
        self._write_frame = term_buffer.write_frame
        self._write_frame_header = term_buffer.write_frame_header
        self._write_padding_frame = term_buffer.write_padding_frame

    @property
    def term_buffer(self) -> AtomicBuffer:
        return self._term_buffer

    def append_unfragmented(
        self, term_id: int, term_offset: int, header_template: bytes, src: Any, reserved_value: int = 0
    ) -> int:
        if header_template is not self._template:
            self._template = check_header_template(header_template)
        frame_length = (len(src) if type(src) is bytes else memoryview(src).nbytes) + HEADER_LENGTH
        resulting_offset = term_offset + ((frame_length + _ALIGNMENT_ROUND) & _ALIGNMENT_MASK)
        # pack_tail inlined: term_id is a Java int and resulting_offset < 2**32.
        self._put_tail_release(self._tail_counter_offset, (term_id << 32) | resulting_offset)

        if resulting_offset > self._term_length:
            return self._end_of_term(term_offset, header_template, term_id)

        self._write_frame(
            term_offset, frame_length, header_template, term_id, _KEEP_TEMPLATE_FLAGS, reserved_value, src, 0
        )
        return resulting_offset

    def append_fragmented(
        self,
        term_id: int,
        term_offset: int,
        header_template: bytes,
        src: Any,
        max_payload_length: int,
        reserved_value: int = 0,
    ) -> int:
        if header_template is not self._template:
            self._template = check_header_template(header_template)
        length = len(src) if type(src) is bytes else memoryview(src).nbytes
        check_fragmentation(length, max_payload_length)
        num_max_payloads, remaining_payload = divmod(length, max_payload_length)
        last_frame_length = (
            (remaining_payload + HEADER_LENGTH + _ALIGNMENT_ROUND) & _ALIGNMENT_MASK
            if remaining_payload
            else 0
        )
        resulting_offset = (
            term_offset + num_max_payloads * (max_payload_length + HEADER_LENGTH) + last_frame_length
        )
        self._put_tail_release(self._tail_counter_offset, (term_id << 32) | resulting_offset)

        if resulting_offset > self._term_length:
            return self._end_of_term(term_offset, header_template, term_id)

        self._term_buffer.write_fragments(
            term_offset, header_template, term_id, src, max_payload_length, reserved_value
        )
        return resulting_offset

    def claim(
        self, term_id: int, term_offset: int, header_template: bytes, length: int, buffer_claim: BufferClaim
    ) -> int:
        if header_template is not self._template:
            self._template = check_header_template(header_template)
        if length < 0:
            raise ValueError(f"cannot claim a negative length, length={length}")
        frame_length = length + HEADER_LENGTH
        resulting_offset = term_offset + ((frame_length + _ALIGNMENT_ROUND) & _ALIGNMENT_MASK)
        self._put_tail_release(self._tail_counter_offset, (term_id << 32) | resulting_offset)

        if resulting_offset > self._term_length:
            return self._end_of_term(term_offset, header_template, term_id)

        self._write_frame_header(term_offset, frame_length, header_template, term_id)
        buffer_claim.wrap(self._term_buffer, term_offset, frame_length)
        return resulting_offset

    def append_padding(self, term_id: int, term_offset: int, header_template: bytes, length: int) -> int:
        """A PAD frame of ``length`` bytes after its header (ExclusivePublication.appendPadding)."""
        if header_template is not self._template:
            self._template = check_header_template(header_template)
        if length < 0:
            raise ValueError(f"cannot pad a negative length, length={length}")
        frame_length = length + HEADER_LENGTH
        resulting_offset = term_offset + ((frame_length + _ALIGNMENT_ROUND) & _ALIGNMENT_MASK)
        self._put_tail_release(self._tail_counter_offset, (term_id << 32) | resulting_offset)

        if resulting_offset > self._term_length:
            return self._end_of_term(term_offset, header_template, term_id)

        self._write_padding_frame(term_offset, frame_length, header_template, term_id)
        return resulting_offset

    def append_block(
        self,
        term_id: int,
        term_offset: int,
        block: bytearray,
        length: int,
        limit: int,
        session_id: int,
        stream_id: int,
    ) -> int:
        """Whole frames from the start of ``block[:length]`` that begin below ``limit`` bytes, already laid out
        for ``term_offset`` (a replay's), with this publication's session and stream ids; then the tail. The
        new term offset (``term_offset`` when nothing fitted)."""
        copied, _hole = self._term_buffer.write_block(
            term_offset, block, length, limit, session_id, stream_id
        )
        if copied:
            self._put_tail_release(self._tail_counter_offset, (term_id << 32) | (term_offset + copied))
        return term_offset + copied

    def _end_of_term(self, term_offset: int, header_template: bytes, term_id: int) -> int:
        term_length = self._term_length
        if term_offset < term_length:
            self._write_padding_frame(term_offset, term_length - term_offset, header_template, term_id)
            return TRIPPED
        return FAILED
