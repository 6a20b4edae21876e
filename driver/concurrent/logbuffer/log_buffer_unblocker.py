"""Unblocking a log whose publisher died mid-claim (1.15.1 LogBufferUnblocker and TermUnblocker).

A shared publication's appenders reserve space by moving the tail first and write the frame length last. A
publisher that dies (or abandons a ``try_claim``) between the two leaves a hole that readers and the sender
wait on forever. The driver calls ``unblock`` with the position its consumers are stuck at once the stream has
not moved for ``aeron.publication.unblock.timeout``; the hole becomes a PAD frame, so the stream goes on.

Rare and off the hot path (a timer tick, only when possibly blocked), so plain Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    FRAME_LENGTH_OFFSET,
    HDR_TYPE_PAD,
    TERM_ID_OFFSET,
    TERM_OFFSET_OFFSET,
    TYPE_OFFSET,
)


class BlockedLogWatch:
    """Watches the position a log's consumers (subscribers, or the sender) have reached; when it has not moved
    for ``timeout_ns`` while the producer is ahead, a publisher died mid-claim: ``check`` unblocks the log."""

    __slots__ = ("_last_position", "_time_of_last_move_ns", "_timeout_ns")

    def __init__(self, position: int, now_ns: int, timeout_ns: int) -> None:
        self._last_position = position
        self._time_of_last_move_ns = now_ns
        self._timeout_ns = timeout_ns

    def check(
        self,
        term_buffers: Sequence[AtomicBuffer],
        meta: AtomicBuffer,
        term_length: int,
        producer_position: int,
        consumer_position: int,
        now_ns: int,
    ) -> bool:
        """True if this call unblocked the log."""
        if consumer_position != self._last_position or not _is_possibly_blocked(
            meta, term_length, producer_position, consumer_position
        ):
            self._last_position = consumer_position
            self._time_of_last_move_ns = now_ns
            return False
        return now_ns - (self._time_of_last_move_ns + self._timeout_ns) > 0 and unblock(
            term_buffers, meta, consumer_position, term_length
        )


def _is_possibly_blocked(
    meta: AtomicBuffer, term_length: int, producer_position: int, consumer_position: int
) -> bool:
    if lbd.active_term_count(meta) != consumer_position >> lbd.position_bits_to_shift(term_length):
        return True
    return producer_position > consumer_position


class TermUnblockStatus(Enum):
    NO_ACTION = 0
    UNBLOCKED = 1
    UNBLOCKED_TO_END = 2  # padded to the end of the term: the log must rotate as well


def unblock(
    term_buffers: Sequence[AtomicBuffer], meta: AtomicBuffer, blocked_position: int, term_length: int
) -> bool:
    """Pad over the hole at ``blocked_position`` (or rotate a log stuck at a term's end); True if it did."""
    bits = lbd.position_bits_to_shift(term_length)
    blocked_term_count = blocked_position >> bits
    blocked_offset = blocked_position & (term_length - 1)
    active_term_count = lbd.active_term_count(meta)

    if active_term_count == blocked_term_count - 1 and blocked_offset == 0:
        # The term before was filled exactly but the publisher died before it rotated the log.
        current_term_id = lbd.term_id(lbd.raw_tail_volatile(meta, lbd.index_by_term_count(active_term_count)))
        return lbd.rotate_log(meta, active_term_count, current_term_id)

    blocked_index = lbd.index_by_term_count(blocked_term_count)
    raw_tail = lbd.raw_tail_volatile(meta, blocked_index)
    term_id = lbd.term_id(raw_tail)
    tail_offset = lbd.term_offset(raw_tail, term_length)
    status = unblock_term(meta, term_buffers[blocked_index], blocked_offset, tail_offset, term_id)
    if status is TermUnblockStatus.UNBLOCKED_TO_END:
        lbd.rotate_log(meta, blocked_term_count, term_id)
    return status is not TermUnblockStatus.NO_ACTION


def unblock_term(
    meta: AtomicBuffer, term: AtomicBuffer, blocked_offset: int, tail_offset: int, term_id: int
) -> TermUnblockStatus:
    frame_length = term.get_int32_volatile(blocked_offset)
    if frame_length < 0:
        # A claim's header went in (negative length = in progress) but was never committed.
        _pad(meta, term, blocked_offset, term_id, -frame_length)
        return TermUnblockStatus.UNBLOCKED
    if frame_length > 0:
        return TermUnblockStatus.NO_ACTION

    # Nothing written at all: the hole reaches to the next frame written after it, if every slot between
    # is still empty (a slow publisher may yet be writing into it).
    offset = blocked_offset + FRAME_ALIGNMENT
    while offset < tail_offset:
        if term.get_int32_volatile(offset) != 0:
            if _zeroed_back_to(term, offset, blocked_offset):
                _pad(meta, term, blocked_offset, term_id, offset - blocked_offset)
                return TermUnblockStatus.UNBLOCKED
            return TermUnblockStatus.NO_ACTION
        offset += FRAME_ALIGNMENT

    if offset == term.capacity and term.get_int32_volatile(blocked_offset) == 0:
        _pad(meta, term, blocked_offset, term_id, offset - blocked_offset)
        return TermUnblockStatus.UNBLOCKED_TO_END
    return TermUnblockStatus.NO_ACTION


def _zeroed_back_to(term: AtomicBuffer, offset: int, limit: int) -> bool:
    i = offset - FRAME_ALIGNMENT
    while i >= limit:
        if term.get_int32_volatile(i) != 0:
            return False
        i -= FRAME_ALIGNMENT
    return True


def _pad(meta: AtomicBuffer, term: AtomicBuffer, offset: int, term_id: int, length: int) -> None:
    """A PAD frame with the log's default header; its length is stored last, with release semantics."""
    lbd.apply_default_header(meta, term, offset)
    term.put_bytes(offset + TYPE_OFFSET, HDR_TYPE_PAD.to_bytes(2, "little"))
    term.put_int32(offset + TERM_OFFSET_OFFSET, offset)
    term.put_int32(offset + TERM_ID_OFFSET, term_id)
    term.put_int32_release(offset + FRAME_LENGTH_OFFSET, length)
