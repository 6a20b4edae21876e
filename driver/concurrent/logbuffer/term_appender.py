"""TermAppender: a claim (``Publication.try_claim``) in a term that many publishers, in any number of
processes, write to at once (Aeron 1.15.1).

Space is reserved with ONE get-and-add on the partition's int64 tail counter (term id in the high 32
bits, offset in the low 32), so concurrent publishers never overlap. The claimed frame's header is written
with its length negative (release store + release fence); the claimant fills the payload and commits with a
release store of the positive length (docs/logbuffer.md). A reservation that crosses the end of the term
fills the rest of the term with padding; only the publisher whose reservation started inside the term does
that. Offers reserve and write the same way, but in one native call with the limit check and the rotation
(logbuffer/publication_offer.py).

Return values: the new term offset (> 0) on success, else ``TRIPPED`` or ``FAILED``. Both mean "this
term is full": call ``rotate_log`` and report ADMIN_ACTION, as ConcurrentPublication does.
"""

from __future__ import annotations

from typing import Any

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from driver.concurrent.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HEADER_LENGTH
from driver.concurrent.logbuffer.log_buffer_descriptor import PARTITION_COUNT, tail_counter_offset
from driver.util.bit_util import SIZE_OF_INT64

TRIPPED = -1
"""This append crossed the end of the term and wrote the padding there: rotate."""
FAILED = -2
"""The term was already full (another append tripped it, or one ended exactly at its end): rotate."""

_ALIGNMENT_MASK = -FRAME_ALIGNMENT
_ALIGNMENT_ROUND = FRAME_ALIGNMENT - 1


class TermIdMismatchError(RuntimeError):
    """The tail held another term than the caller expected: the publisher was delayed across rotations
    (Aeron's "action possibly delayed"). The space it reserved is left for the unblocker to pad."""


def check_header_template(header_template: Any) -> bytes:
    """The 32-byte default header, as ``bytes`` (native code reads it in place)."""
    if type(header_template) is not bytes:
        raise TypeError(
            f"header_template must be bytes (the 32-byte default header), got {type(header_template).__name__}"
        )
    if len(header_template) != HEADER_LENGTH:
        raise ValueError(f"header_template must be {HEADER_LENGTH} bytes, got {len(header_template)}")
    return header_template


def check_fragmentation(length: int, max_payload_length: int) -> None:
    # Full fragments must fill whole alignment units, or the frames would overrun the reserved space.
    if max_payload_length <= 0 or (max_payload_length + HEADER_LENGTH) % FRAME_ALIGNMENT:
        raise ValueError(
            f"max payload length {max_payload_length} + {HEADER_LENGTH} must be a positive multiple of "
            f"{FRAME_ALIGNMENT} (the mtu)"
        )
    if length <= 0:
        raise ValueError(f"a fragmented message needs a positive length, length={length}")


def check_partition(meta_data_buffer: AtomicBuffer, partition_index: int) -> int:
    offset = tail_counter_offset(partition_index)
    if not 0 <= partition_index < PARTITION_COUNT or offset + SIZE_OF_INT64 > meta_data_buffer.capacity:
        raise ValueError(f"no tail counter for partition {partition_index} in the metadata buffer")
    return offset


class TermAppender:
    """Appender for one partition: ``term_buffer`` and its tail counter in ``meta_data_buffer``.

    Pass the same ``header_template`` object every time (the publication's copy of the default header):
    it is checked once per object, not once per append.
    """

    __slots__ = (
        "_claim",
        "_get_tail_volatile",
        "_meta_data_buffer",
        "_tail_counter_offset",
        "_template",
        "_term_buffer",
    )

    def __init__(
        self, term_buffer: AtomicBuffer, meta_data_buffer: AtomicBuffer, partition_index: int
    ) -> None:
        self._tail_counter_offset = check_partition(meta_data_buffer, partition_index)
        self._term_buffer = term_buffer
        self._meta_data_buffer = meta_data_buffer
        self._template: bytes | None = None
        # Bound methods cached once: every attribute lookup shows on the append path.
        self._get_tail_volatile = meta_data_buffer.get_int64_volatile
        self._claim = term_buffer.term_claim

    @property
    def term_buffer(self) -> AtomicBuffer:
        return self._term_buffer

    def raw_tail_volatile(self) -> int:
        return self._get_tail_volatile(self._tail_counter_offset)

    def claim(self, term_id: int, header_template: bytes, length: int, buffer_claim: BufferClaim) -> int:
        """Reserve one frame of ``length`` payload bytes for the caller to fill and then commit or abort
        through ``buffer_claim``; the new term offset or a sentinel (then ``buffer_claim`` is untouched)."""
        if header_template is not self._template:
            self._template = check_header_template(header_template)
        if length < 0:
            raise ValueError(f"cannot claim a negative length, length={length}")
        result = self._claim(
            self._meta_data_buffer, self._tail_counter_offset, term_id, header_template, length
        )
        if result < FAILED:
            raise self._mismatch(term_id)
        if result > 0:
            frame_length = length + HEADER_LENGTH
            aligned_length = (frame_length + _ALIGNMENT_ROUND) & _ALIGNMENT_MASK
            buffer_claim.wrap(self._term_buffer, result - aligned_length, frame_length)
        return result

    def _mismatch(self, expected_term_id: int) -> TermIdMismatchError:
        raw_tail = self.raw_tail_volatile()
        return TermIdMismatchError(
            f"action possibly delayed: expected term id {expected_term_id} but the tail is now in term "
            f"{raw_tail >> 32} (offset {raw_tail & 0xFFFF_FFFF})"
        )
