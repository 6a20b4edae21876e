"""Agrona 0.9.31 broadcast buffer: the to-clients event stream in cnc.dat.

One transmitter (the driver) writes records and never waits; every receiver (client) follows with its
own cursor and finds out that it has been overwritten ("lapped") by comparing its cursor with the
tail intent counter. Layout and algorithm: ``docs/ringbuffers.md`` section 2.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import CACHE_LINE_LENGTH, SIZE_OF_INT32, SIZE_OF_INT64, is_power_of_two

# Record layout (broadcast RecordDescriptor).
LENGTH_OFFSET = 0
TYPE_OFFSET = LENGTH_OFFSET + SIZE_OF_INT32
HEADER_LENGTH = TYPE_OFFSET + SIZE_OF_INT32
RECORD_ALIGNMENT = HEADER_LENGTH
PADDING_MSG_TYPE_ID = -1

# Trailer layout (BroadcastBufferDescriptor), relative to ``capacity``.
TAIL_INTENT_COUNTER_OFFSET = 0
TAIL_COUNTER_OFFSET = TAIL_INTENT_COUNTER_OFFSET + SIZE_OF_INT64
LATEST_COUNTER_OFFSET = TAIL_COUNTER_OFFSET + SIZE_OF_INT64
TRAILER_LENGTH = CACHE_LINE_LENGTH * 2

# What the Aeron client allocates for CopyBroadcastReceiver (not expandable).
SCRATCH_BUFFER_LENGTH = 4096

_ALIGNMENT_MASK = ~(RECORD_ALIGNMENT - 1)
_I32 = struct.Struct("<i")


class IllegalStateError(RuntimeError):
    """The receiver cannot deliver a message it was given (lapped, or too long for its scratch)."""


def _check_capacity(buffer: AtomicBuffer) -> int:
    capacity = buffer.capacity - TRAILER_LENGTH
    if not is_power_of_two(capacity):
        raise ValueError(
            f"broadcast buffer capacity must be a power of two plus the {TRAILER_LENGTH}-byte trailer: "
            f"got a buffer of {buffer.capacity} bytes ({capacity} for data)"
        )
    return capacity


class BroadcastTransmitter:
    """The single writer. Never blocks: slow receivers are overwritten and must detect it."""

    __slots__ = (
        "_buffer",
        "_capacity",
        "_latest_counter_index",
        "_max_msg_length",
        "_tail_counter_index",
        "_tail_intent_counter_index",
    )

    def __init__(self, buffer: AtomicBuffer) -> None:
        self._capacity = _check_capacity(buffer)
        self._buffer = buffer
        self._max_msg_length = self._capacity // 8
        self._tail_intent_counter_index = self._capacity + TAIL_INTENT_COUNTER_OFFSET
        self._tail_counter_index = self._capacity + TAIL_COUNTER_OFFSET
        self._latest_counter_index = self._capacity + LATEST_COUNTER_OFFSET

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def max_msg_length(self) -> int:
        return self._max_msg_length

    def transmit(self, msg_type_id: int, src: bytes | bytearray | memoryview) -> None:
        if type(src) is memoryview and src.itemsize != 1:
            src = src.cast("B")
        length = len(src)
        if msg_type_id < 1:
            raise ValueError(f"type id must be greater than zero, msg_type_id={msg_type_id}")
        if length > self._max_msg_length:
            raise ValueError(
                f"encoded message exceeds max_msg_length of {self._max_msg_length}, length={length}"
            )

        buffer = self._buffer
        view = buffer.view
        capacity = self._capacity
        current_tail = buffer.get_int64(self._tail_counter_index)  # plain: we are the only writer
        record_offset = current_tail & (capacity - 1)
        record_length = HEADER_LENGTH + length
        aligned_length = (record_length + RECORD_ALIGNMENT - 1) & _ALIGNMENT_MASK
        new_tail = current_tail + aligned_length
        to_end_of_buffer = capacity - record_offset

        # The tail intent goes out before any byte is overwritten, so a receiver that re-validates
        # after copying knows whether what it copied could have been clobbered.
        if to_end_of_buffer < aligned_length:
            self._signal_tail_intent(new_tail + to_end_of_buffer)
            buffer.put_int32(record_offset + LENGTH_OFFSET, to_end_of_buffer)
            buffer.put_int32(record_offset + TYPE_OFFSET, PADDING_MSG_TYPE_ID)
            current_tail += to_end_of_buffer
            record_offset = 0
        else:
            self._signal_tail_intent(new_tail)

        _I32.pack_into(view, record_offset + LENGTH_OFFSET, record_length)
        _I32.pack_into(view, record_offset + TYPE_OFFSET, msg_type_id)
        body_offset = record_offset + HEADER_LENGTH
        view[body_offset : body_offset + length] = src
        buffer.put_int64(self._latest_counter_index, current_tail)
        buffer.put_int64_release(self._tail_counter_index, current_tail + aligned_length)

    def _signal_tail_intent(self, new_tail: int) -> None:
        self._buffer.put_int64_release(self._tail_intent_counter_index, new_tail)
        AtomicBuffer.fence_release()


class BroadcastReceiver:
    """One reader's cursor. Starts at the latest record, so a new client first sees the newest event."""

    __slots__ = (
        "_buffer",
        "_capacity",
        "_cursor",
        "_lapped_count",
        "_latest_counter_index",
        "_next_record",
        "_record_offset",
        "_tail_counter_index",
        "_tail_intent_counter_index",
    )

    def __init__(self, buffer: AtomicBuffer) -> None:
        self._capacity = _check_capacity(buffer)
        self._buffer = buffer
        self._tail_intent_counter_index = self._capacity + TAIL_INTENT_COUNTER_OFFSET
        self._tail_counter_index = self._capacity + TAIL_COUNTER_OFFSET
        self._latest_counter_index = self._capacity + LATEST_COUNTER_OFFSET
        self._lapped_count = 0
        self._cursor = self._next_record = buffer.get_int64_volatile(self._latest_counter_index)
        self._record_offset = self._cursor & (self._capacity - 1)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def tail_address(self) -> int:
        """The address of the transmitters' tail counter (an int64 that moves with every message), for a
        waiter that sleeps without the GIL until it changes (driver/concurrent/logbuffer/fastpath.py)."""
        return self._buffer.address_value() + self._tail_counter_index

    def tail(self) -> int:
        return self._buffer.get_int64_volatile(self._tail_counter_index)

    @property
    def buffer(self) -> AtomicBuffer:
        return self._buffer

    def lapped_count(self) -> int:
        return self._lapped_count

    def type_id(self) -> int:
        return self._buffer.get_int32(self._record_offset + TYPE_OFFSET)

    def offset(self) -> int:
        """Index of the current message body in ``buffer``."""
        return self._record_offset + HEADER_LENGTH

    def length(self) -> int:
        """Length of the current message body."""
        return self._buffer.get_int32(self._record_offset + LENGTH_OFFSET) - HEADER_LENGTH

    def receive_next(self) -> bool:
        """Move to the next record if one is available; check validate() after reading it."""
        buffer = self._buffer
        capacity = self._capacity
        tail = buffer.get_int64_volatile(self._tail_counter_index)
        cursor = self._next_record
        if tail <= cursor:
            return False

        record_offset = cursor & (capacity - 1)
        if not self._is_valid(cursor):
            # Overwritten while we were away: skip to the newest record rather than read garbage.
            self._lapped_count += 1
            cursor = buffer.get_int64(self._latest_counter_index)
            record_offset = cursor & (capacity - 1)

        self._cursor = cursor
        self._next_record = cursor + (
            (buffer.get_int32(record_offset + LENGTH_OFFSET) + RECORD_ALIGNMENT - 1) & _ALIGNMENT_MASK
        )
        if buffer.get_int32(record_offset + TYPE_OFFSET) == PADDING_MSG_TYPE_ID:
            # Padding only ever fills the end of the buffer; the real record is at offset 0.
            record_offset = 0
            self._cursor = self._next_record
            self._next_record += (buffer.get_int32(LENGTH_OFFSET) + RECORD_ALIGNMENT - 1) & _ALIGNMENT_MASK
        self._record_offset = record_offset
        return True

    def validate(self) -> bool:
        """True if the current record has not been overwritten; call after reading it."""
        AtomicBuffer.fence_acquire()
        return self._is_valid(self._cursor)

    def _is_valid(self, cursor: int) -> bool:
        return cursor + self._capacity > self._buffer.get_int64_volatile(self._tail_intent_counter_index)


class CopyBroadcastReceiver:
    """Copies each message out before validating it, so a handler never sees a half-overwritten one."""

    __slots__ = ("_receiver", "_scratch", "_scratch_view")

    def __init__(self, receiver: BroadcastReceiver, scratch_length: int = SCRATCH_BUFFER_LENGTH) -> None:
        self._receiver = receiver
        self._scratch = bytearray(scratch_length)
        self._scratch_view = memoryview(self._scratch)

    @property
    def broadcast_receiver(self) -> BroadcastReceiver:
        return self._receiver

    def receive(self, handler: Callable[[int, memoryview], None]) -> int:
        """Deliver at most one message; returns 1 if one was handled, else 0.

        The handler gets ``(msg_type_id, body)``; ``body`` is a view of reused scratch space, valid
        only during the call. Raises IllegalStateError if this receiver has fallen a lap behind.
        """
        receiver = self._receiver
        last_seen_lapped_count = receiver.lapped_count()
        if not receiver.receive_next():
            return 0
        if receiver.lapped_count() != last_seen_lapped_count:
            raise IllegalStateError("unable to keep up with broadcast")

        length = receiver.length()
        scratch_view = self._scratch_view
        if length > len(scratch_view):
            raise IllegalStateError(
                f"broadcast message of {length} bytes does not fit the {len(scratch_view)}-byte scratch "
                f"buffer; the transmitter must keep messages within it"
            )
        msg_type_id = receiver.type_id()
        offset = receiver.offset()
        scratch_view[:length] = receiver.buffer.view[offset : offset + length]
        if not receiver.validate():
            raise IllegalStateError("unable to keep up with broadcast")

        handler(msg_type_id, scratch_view[:length])
        return 1
