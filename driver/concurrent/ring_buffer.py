"""Agrona 0.9.31 ``ManyToOneRingBuffer``: the to-driver command queue in cnc.dat.

Any number of producers (clients, in their own processes) claim space by CAS on the tail position;
one consumer (the driver conductor) reads records and releases the space by advancing the head.
Layout and algorithm: ``docs/ringbuffers.md`` section 1. The buffer is ``capacity`` data bytes,
a power of two, followed by a 768-byte trailer whose fields each sit in their own 128-byte slot so
producers and the consumer do not false-share cache lines.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import CACHE_LINE_LENGTH, INT32_MAX, SIZE_OF_INT32, is_power_of_two

# Record layout (RecordDescriptor).
LENGTH_OFFSET = 0
TYPE_OFFSET = LENGTH_OFFSET + SIZE_OF_INT32
HEADER_LENGTH = TYPE_OFFSET + SIZE_OF_INT32
ALIGNMENT = HEADER_LENGTH
PADDING_MSG_TYPE_ID = -1

# Trailer layout (RingBufferDescriptor), relative to ``capacity``.
_TRAILER_SLOT_LENGTH = CACHE_LINE_LENGTH * 2
TAIL_POSITION_OFFSET = _TRAILER_SLOT_LENGTH
HEAD_CACHE_POSITION_OFFSET = TAIL_POSITION_OFFSET + _TRAILER_SLOT_LENGTH
HEAD_POSITION_OFFSET = HEAD_CACHE_POSITION_OFFSET + _TRAILER_SLOT_LENGTH
CORRELATION_COUNTER_OFFSET = HEAD_POSITION_OFFSET + _TRAILER_SLOT_LENGTH
CONSUMER_HEARTBEAT_OFFSET = CORRELATION_COUNTER_OFFSET + _TRAILER_SLOT_LENGTH
TRAILER_LENGTH = CONSUMER_HEARTBEAT_OFFSET + _TRAILER_SLOT_LENGTH

_ALIGNMENT_MASK = ~(ALIGNMENT - 1)
_fence_release = AtomicBuffer.fence_release

_I32 = struct.Struct("<i")

MessageHandler = Callable[[int, AtomicBuffer, int, int], None]
CorruptRecordHandler = Callable[[int, int, str], None]
"""``(record index, bytes skipped, reason)`` for a record that failed the reader's checks."""


class ManyToOneRingBuffer:
    """Multi-producer, single-consumer ring of length-prefixed records over shared memory."""

    __slots__ = (
        "_buffer",
        "_capacity",
        "_cas_i64",
        "_consumer_heartbeat_index",
        "_correlation_counter_index",
        "_get_and_add_i64",
        "_get_i32_volatile",
        "_get_i64",
        "_get_i64_volatile",
        "_head_cache_position_index",
        "_head_position_index",
        "_mask",
        "_max_msg_length",
        "_put_i32_release",
        "_put_i64_release",
        "_set_zero",
        "_tail_position_index",
        "_view",
    )

    def __init__(self, buffer: AtomicBuffer) -> None:
        capacity = buffer.capacity - TRAILER_LENGTH
        if not is_power_of_two(capacity):
            raise ValueError(
                f"ring buffer capacity must be a power of two plus the {TRAILER_LENGTH}-byte trailer: "
                f"got a buffer of {buffer.capacity} bytes ({capacity} for data)"
            )
        self._buffer = buffer
        self._view = buffer.view
        self._capacity = capacity
        self._mask = capacity - 1
        self._max_msg_length = capacity // 8
        self._tail_position_index = capacity + TAIL_POSITION_OFFSET
        self._head_cache_position_index = capacity + HEAD_CACHE_POSITION_OFFSET
        self._head_position_index = capacity + HEAD_POSITION_OFFSET
        self._correlation_counter_index = capacity + CORRELATION_COUNTER_OFFSET
        self._consumer_heartbeat_index = capacity + CONSUMER_HEARTBEAT_OFFSET
        # Bound methods cached once: write() and read() are hot, attribute lookups are not free.
        self._get_i64 = buffer.get_int64
        self._get_i32_volatile = buffer.get_int32_volatile
        self._get_i64_volatile = buffer.get_int64_volatile
        self._put_i32_release = buffer.put_int32_release
        self._put_i64_release = buffer.put_int64_release
        self._cas_i64 = buffer.compare_and_set_int64
        self._get_and_add_i64 = buffer.get_and_add_int64
        self._set_zero = buffer.set_zero

    @property
    def capacity(self) -> int:
        return self._capacity

    def tail_word(self) -> tuple[AtomicBuffer, int]:
        """The producers' tail position field, for a watch over it: it moves with every record written."""
        return self._buffer, self._tail_position_index

    @property
    def max_msg_length(self) -> int:
        return self._max_msg_length

    def write(self, msg_type_id: int, src: bytes | bytearray | memoryview) -> bool:
        """Append one record; False when there is no room (the consumer is behind)."""
        if type(src) is memoryview and src.itemsize != 1:
            src = src.cast("B")
        length = len(src)
        if msg_type_id < 1:
            raise ValueError(f"message type id must be greater than zero, msg_type_id={msg_type_id}")
        if length > self._max_msg_length:
            raise ValueError(
                f"encoded message exceeds max_msg_length of {self._max_msg_length}, length={length}"
            )

        record_length = length + HEADER_LENGTH
        required = (record_length + ALIGNMENT - 1) & _ALIGNMENT_MASK

        # Claim: CAS the tail forward by ``required``, plus padding to the end if it must wrap. Inlined
        # (not a helper) because every Python call and attribute load shows on this path.
        capacity = self._capacity
        get_i64_volatile = self._get_i64_volatile
        tail_position_index = self._tail_position_index
        # The cached head saves producers from reading the consumer's cache line on every write.
        head = get_i64_volatile(self._head_cache_position_index)
        while True:
            tail = get_i64_volatile(tail_position_index)
            if required > capacity - (tail - head):
                head = get_i64_volatile(self._head_position_index)
                if required > capacity - (tail - head):
                    return False
                self._put_i64_release(self._head_cache_position_index, head)

            padding = 0
            tail_index = tail & self._mask
            to_buffer_end = capacity - tail_index
            if required > to_buffer_end:
                # Records never straddle the end: pad it out and start again at index 0, which
                # needs the consumer to have moved past the first ``required`` bytes.
                head_index = head & self._mask
                if required > head_index:
                    head = get_i64_volatile(self._head_position_index)
                    head_index = head & self._mask
                    if required > head_index:
                        return False
                    self._put_i64_release(self._head_cache_position_index, head)
                padding = to_buffer_end

            if self._cas_i64(tail_position_index, tail, tail + required + padding):
                break

        put_i32_release = self._put_i32_release
        view = self._view
        if padding:
            put_i32_release(tail_index, -padding)
            _fence_release()
            _I32.pack_into(view, tail_index + TYPE_OFFSET, PADDING_MSG_TYPE_ID)
            put_i32_release(tail_index, padding)
            tail_index = 0

        # Negative length first: the consumer stops at it (and unblock() can recover it) until commit.
        put_i32_release(tail_index, -record_length)
        _fence_release()
        _I32.pack_into(view, tail_index + TYPE_OFFSET, msg_type_id)
        body_index = tail_index + HEADER_LENGTH
        view[body_index : body_index + length] = src
        put_i32_release(tail_index, record_length)
        return True

    def read(
        self,
        handler: MessageHandler,
        message_count_limit: int = INT32_MAX,
        corrupt_handler: CorruptRecordHandler | None = None,
    ) -> int:
        """Deliver up to ``message_count_limit`` committed records; returns how many were delivered.

        Reads at most to the end of the buffer in one call. The handler gets
        ``(msg_type_id, buffer, body_index, body_length)``; the body is only valid during the call.

        Every record is checked before it is trusted (docs/ringbuffers.md section 1.1): a length of at
        least the header, an extent inside both the buffer and the producers' claimed space (the tail),
        a type id that is a command (>= 1) or padding (-1), a message no longer than ``max_msg_length``.
        A record that fails is skipped together with the slots after it up to the next one that could be
        a record (or the tail), and reported to ``corrupt_handler(index, skipped_length, reason)``. No
        byte outside [head, tail) is ever read as a record or zeroed.
        """
        buffer = self._buffer
        view = self._view
        head_position_index = self._head_position_index
        get_i32_volatile = self._get_i32_volatile
        unpack_i32 = _I32.unpack_from

        head = self._get_i64(head_position_index)  # plain: only this consumer writes the head
        head_index = head & self._mask
        if get_i32_volatile(head_index) == 0:
            return 0  # the common idle case: nothing claimed and written at the head
        max_block_length = self._capacity - head_index
        max_msg_length = self._max_msg_length
        # The producers' tail, read again only when a record seems to reach past it (claims only grow).
        tail = 0
        bytes_read = 0
        messages_read = 0
        try:
            while bytes_read < max_block_length and messages_read < message_count_limit:
                record_index = head_index + bytes_read
                record_length = get_i32_volatile(record_index)
                if record_length == 0:
                    break  # claimed but not yet written (or a stuck producer: see unblock())
                extent = (
                    (record_length if record_length > 0 else -record_length) + ALIGNMENT - 1
                ) & _ALIGNMENT_MASK
                end_position = head + bytes_read + extent
                if end_position > tail:
                    tail = self._get_i64_volatile(self._tail_position_index)
                in_bounds = extent <= max_block_length - bytes_read and end_position <= tail
                if record_length < 0:
                    if in_bounds and -record_length >= HEADER_LENGTH:
                        break  # being written: the producer commits it, or unblock() pads it
                    reason = f"uncommitted length {record_length} is not a record the claimed space can hold"
                else:
                    # The header itself is always inside the buffer (records are 8-aligned): even a record whose
                    # length runs past the end is reported with the type its producer wrote.
                    msg_type_id = unpack_i32(view, record_index + TYPE_OFFSET)[0]
                    if in_bounds and record_length >= HEADER_LENGTH:
                        if msg_type_id == PADDING_MSG_TYPE_ID:
                            bytes_read += extent
                            continue
                        if msg_type_id >= 1 and record_length - HEADER_LENGTH <= max_msg_length:
                            bytes_read += extent
                            messages_read += 1
                            handler(
                                msg_type_id,
                                buffer,
                                record_index + HEADER_LENGTH,
                                record_length - HEADER_LENGTH,
                            )
                            continue
                    reason = self._why_corrupt(
                        record_index,
                        record_length,
                        msg_type_id,
                        max_block_length - bytes_read,
                        tail - head - bytes_read,
                    )
                if record_length >= HEADER_LENGTH and in_bounds:
                    skipped = extent  # only the type or size is wrong: its claimed extent is sound
                else:
                    skipped = self._corrupt_extent(head + bytes_read, record_index)
                if skipped == 0:
                    break  # not even the header is claimed yet: bytes beyond the tail are nobody's record
                bytes_read += skipped
                if corrupt_handler is not None:
                    corrupt_handler(record_index, skipped, reason)
        finally:
            # Consume what was handed out even if the handler raised, as Agrona does; producers
            # rely on the space being zero so that a new record's length reads as 0 until claimed.
            if bytes_read:
                self._set_zero(head_index, bytes_read)
                self._put_i64_release(head_position_index, head + bytes_read)
        return messages_read

    def _why_corrupt(
        self, index: int, length: int, msg_type_id: int, to_buffer_end: int, to_tail: int
    ) -> str:
        where = f"record at index {index} (length {length}, type id {msg_type_id})"
        if length < HEADER_LENGTH:
            return f"{where}: length is below the {HEADER_LENGTH}-byte record header"
        extent = (length + ALIGNMENT - 1) & _ALIGNMENT_MASK
        if extent > to_buffer_end:
            return f"{where}: runs {extent - to_buffer_end} bytes past the end of the {self._capacity}-byte buffer"
        if extent > to_tail:
            return f"{where}: runs past the producers' claimed space ({to_tail} bytes claimed from it)"
        if msg_type_id < 1:
            return f"{where}: type id is neither a command (>= 1) nor padding ({PADDING_MSG_TYPE_ID})"
        return f"{where}: message of {length - HEADER_LENGTH} bytes exceeds max_msg_length {self._max_msg_length}"

    def _corrupt_extent(self, position: int, index: int) -> int:
        """How many bytes from a corrupt record at ``position`` (``index`` in the buffer) to skip: up to the
        first aligned slot that could start a record (zero: claimed, not yet written; a plausible
        uncommitted or committed header), the producers' tail, or the end of the buffer.

        Every genuine record was claimed whole by one CAS of the tail, so one that starts before the tail
        read here also ends before it: the plausibility test never skips a well-behaved producer's record.
        A tail left unaligned by a careless producer is first moved on to the next alignment (by CAS, as a
        claim of the gap), so the producers after it write aligned records the reader can find again.
        """
        get_i32_volatile = self._get_i32_volatile
        tail_position_index = self._tail_position_index
        tail = self._get_i64_volatile(tail_position_index)
        while tail & (ALIGNMENT - 1):
            if self._cas_i64(tail_position_index, tail, (tail + ALIGNMENT - 1) & _ALIGNMENT_MASK):
                tail = (tail + ALIGNMENT - 1) & _ALIGNMENT_MASK
                break
            tail = self._get_i64_volatile(tail_position_index)
        claimed = tail - position
        if claimed < ALIGNMENT:
            return 0
        limit = index + min(claimed, self._capacity - index)
        unpack_i32 = _I32.unpack_from
        view = self._view
        max_msg_length = self._max_msg_length
        i = index + ALIGNMENT
        while i < limit:
            length = get_i32_volatile(i)
            if length == 0:
                break
            magnitude = length if length > 0 else -length
            if magnitude >= HEADER_LENGTH and i + ((magnitude + ALIGNMENT - 1) & _ALIGNMENT_MASK) <= limit:
                if length < 0:
                    break
                msg_type_id = unpack_i32(view, i + TYPE_OFFSET)[0]
                if msg_type_id == PADDING_MSG_TYPE_ID or (
                    msg_type_id >= 1 and length - HEADER_LENGTH <= max_msg_length
                ):
                    break
            i += ALIGNMENT
        return i - index

    def next_correlation_id(self) -> int:
        """A cluster-wide unique id: fetch-and-add on the shared counter (first id is 0)."""
        return self._get_and_add_i64(self._correlation_counter_index, 1)

    def consumer_heartbeat_time(self) -> int:
        return self._get_i64_volatile(self._consumer_heartbeat_index)

    def set_consumer_heartbeat_time(self, epoch_ms: int) -> None:
        self._put_i64_release(self._consumer_heartbeat_index, epoch_ms)

    def producer_position(self) -> int:
        return self._get_i64_volatile(self._tail_position_index)

    def consumer_position(self) -> int:
        return self._get_i64_volatile(self._head_position_index)

    def size(self) -> int:
        """Bytes claimed but not yet consumed, from a consistent (head, tail) snapshot."""
        get_i64_volatile = self._get_i64_volatile
        head_after = get_i64_volatile(self._head_position_index)
        while True:
            head_before = head_after
            tail = get_i64_volatile(self._tail_position_index)
            head_after = get_i64_volatile(self._head_position_index)
            if head_after == head_before:
                return tail - head_after

    def unblock(self) -> bool:
        """Turn a record a dead producer left half-written at the head into padding.

        Called by the consumer only after the head has not moved for the client liveness timeout.
        Returns True if a padding record was written.
        """
        get_i32_volatile = self._get_i32_volatile
        head_position = self._get_i64_volatile(self._head_position_index)
        tail_position = self._get_i64_volatile(self._tail_position_index)
        if head_position == tail_position:
            return False

        mask = self._mask
        consumer_index = head_position & mask
        producer_index = tail_position & mask
        length = get_i32_volatile(consumer_index)
        if length < 0:
            # Claimed and never committed: its (negated) length is still the right padding size, if it
            # is one a claim could have made; any other value is left to read(), which skips it as corrupt.
            extent = (-length + ALIGNMENT - 1) & _ALIGNMENT_MASK
            if -length < HEADER_LENGTH or extent > min(
                tail_position - head_position, self._capacity - consumer_index
            ):
                return False
            self._write_padding(consumer_index, -length)
            return True
        if length == 0:
            # Claimed, but the producer died before even storing the negative length: the gap up
            # to the next record that did get a length becomes padding.
            limit = producer_index if producer_index > consumer_index else self._capacity
            i = consumer_index + ALIGNMENT
            while i < limit:
                if get_i32_volatile(i) != 0:
                    if self._still_zeroed(i, consumer_index):
                        self._write_padding(consumer_index, i - consumer_index)
                        return True
                    return False
                i += ALIGNMENT
        return False

    def _still_zeroed(self, from_index: int, limit_index: int) -> bool:
        """Re-check, backwards, that no producer has started a record in the gap meanwhile."""
        get_i32_volatile = self._get_i32_volatile
        i = from_index - ALIGNMENT
        while i >= limit_index:
            if get_i32_volatile(i) != 0:
                return False
            i -= ALIGNMENT
        return True

    def _write_padding(self, index: int, length: int) -> None:
        _I32.pack_into(self._view, index + TYPE_OFFSET, PADDING_MSG_TYPE_ID)
        self._put_i32_release(index + LENGTH_OFFSET, length)
