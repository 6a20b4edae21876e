"""Image: one publisher session's stream as a subscriber sees it, read straight from the mapped log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from driver.client.message import Message
from driver.concurrent.atomic_buffer import AtomicBuffer, FrameBatch
from driver.concurrent.counters import AtomicCounter, counter_offset
from driver.concurrent.logbuffer import fastpath, term_block_scanner
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.concurrent.logbuffer.term_reader import FragmentHandler, TermReader
from driver.protocol.frames import FLAGS_OFFSET, HEADER_LENGTH, TERM_ID_OFFSET

# controlled_poll actions, as Aeron's ControlledFragmentHandler.Action.
ABORT = 1
"""Stop here and deliver this fragment again on the next poll."""
BREAK = 2
"""Consume this fragment and stop polling."""
COMMIT = 3
"""Consume this fragment and commit the position now."""
CONTINUE = 4
"""Consume this fragment and go on."""

ControlledFragmentHandler = Callable[[Any, int, int, Header], int]
BlockHandler = Callable[[AtomicBuffer, int, int, int, int], None]
"""``handler(term_buffer, term_offset, length, session_id, term_id)``, as Aeron's BlockHandler."""
CountingBlockHandler = Callable[[AtomicBuffer, int, int, int, int, int], None]
"""A BlockHandler that is also given the block's message count (``Image.block_poll_counting``)."""
RawBlockHandler = Callable[[Path, int, AtomicBuffer, int, int, int, int], None]
"""``handler(log_file, file_offset, term_buffer, term_offset, length, session_id, term_id)``, as Aeron's
RawBlockHandler (the log file's path stands for its FileChannel: ``file_offset`` is where the block lies in
it, for ``os.copy_file_range`` or ``os.sendfile`` into a segment file)."""


class Image:
    def __init__(
        self,
        correlation_id: int,
        session_id: int,
        stream_id: int,
        subscription_registration_id: int,
        source_identity: str,
        log_buffers: LogBuffers,
        subscriber_position: AtomicCounter,
        reader: TermReader,
    ) -> None:
        self.correlation_id = correlation_id
        self.session_id = session_id
        self.stream_id = stream_id
        self.subscription_registration_id = subscription_registration_id
        self.source_identity = source_identity
        self.log_buffers = log_buffers
        meta = log_buffers.meta_data_buffer
        self._meta = meta
        self._term_buffers = log_buffers.term_buffers
        self.term_length = log_buffers.term_length
        self._term_length_mask = self.term_length - 1
        self.position_bits_to_shift = lbd.position_bits_to_shift(self.term_length)
        self.initial_term_id = lbd.initial_term_id(meta)
        self.mtu_length = lbd.mtu_length(meta)
        self._subscriber_position = subscriber_position
        self._header = Header(self.initial_term_id, self.position_bits_to_shift, self)
        self._reader = reader
        self.is_closed = False
        self._is_eos_at_close = False
        # The fast path (driver/concurrent/logbuffer/fastpath.py) walks the term from C by address.
        self._fast_poll = fastpath.poller()
        self._scan = fastpath.scanner()
        self._fast_messages = fastpath.message_poller()
        self._term_addresses = tuple(b.address_value() for b in self._term_buffers)
        self._batch: FragmentBatch | None = None
        position = subscriber_position.get()
        values = subscriber_position.values_buffer
        poller = fastpath.image_poll(
            (log_buffers, values),
            tuple(self._term_buffers),
            self._term_addresses,
            self.term_length,
            self._header,
            values.address_value() + counter_offset(subscriber_position.id),
            position,
            self._release_batch,
            Message,
            session_id,
            stream_id,
        )
        # The image's position lives in its poller: the C ImagePoll (whose calls then serve ``poll`` and
        # ``poll_messages``, one C call each)
        # or, off the fast path, a plain cell.
        self._poller: Any = poller if poller is not None else _PositionCell(position)
        if poller is not None:
            self.poll = poller.poll  # type: ignore[method-assign]
            self.poll_messages = poller.poll_messages  # type: ignore[method-assign]
        self.join_position = position

    @property
    def _position(self) -> int:
        return self._poller.position

    @_position.setter
    def _position(self, value: int) -> None:
        self._poller.position = value

    def __repr__(self) -> str:
        return (
            f"Image(session_id={self.session_id}, stream_id={self.stream_id}, source={self.source_identity!r}, "
            f"position={self._position})"
        )

    @property
    def position(self) -> int:
        return self._position

    @property
    def active_transport_count(self) -> int:
        """How many sources (destinations of a multi-destination subscription) fed this image within the image
        liveness timeout, as its driver counts them (0 from a driver that does not: 1.15.1)."""
        if self.is_closed:
            return 0
        return lbd.active_transport_count(self._meta)

    @property
    def end_of_stream_position(self) -> int:
        return lbd.end_of_stream_position(self._meta)

    @property
    def is_end_of_stream(self) -> bool:
        """The publisher has gone and everything it published has been consumed."""
        if self.is_closed:
            return self._is_eos_at_close
        return self._position >= lbd.end_of_stream_position(self._meta)

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Deliver up to ``fragment_limit`` fragments to ``handler(buffer, offset, length, header)``."""
        if self.is_closed:
            return 0
        if self._batch is not None:
            self._release_batch()
        position = self._position
        term_offset = position & self._term_length_mask
        index = (position >> self.position_bits_to_shift) % 3
        term_buffer = self._term_buffers[index]
        fast_poll = self._fast_poll
        if fast_poll is not None:
            header = self._header
            header.buffer = term_buffer
            fragments, new_offset = fast_poll(
                handler,
                term_buffer,
                self._term_addresses[index],
                self.term_length,
                term_offset,
                fragment_limit,
                header,
                None,
            )
        else:
            fragments, new_offset = self._reader.read(
                term_buffer, term_offset, handler, fragment_limit, self._header
            )
        if new_offset != term_offset:
            position += new_offset - term_offset
            self._position = position
            self._subscriber_position.set_ordered(position)
        return fragments

    def poll_messages(
        self,
        out: list[Message],
        fragment_limit: int,
        assembler: FragmentHandler,
        spare: list[Message] | None = None,
    ) -> int:
        """Whole messages appended to ``out`` (as ``Message`` tuples, their bytes copied); fragments read.

        With the fast path the unfragmented messages are made in C with no Python call each; the frames of a
        fragmented message go to ``assembler`` (a FragmentAssembler whose handler appends to ``out``), as does
        everything on the cffi path. ``spare``: messages of earlier polls that the caller has let go; the fast
        path rewrites those nothing else holds instead of making new ones, and removes what it took."""
        fast = self._fast_messages
        if fast is None or self.is_closed:
            return self.poll(assembler, fragment_limit)
        if self._batch is not None:
            self._release_batch()
        position = self._position
        term_offset = position & self._term_length_mask
        index = (position >> self.position_bits_to_shift) % 3
        fragments, new_offset, at_fragment = fast(
            Message,
            self._term_addresses[index],
            self.term_length,
            term_offset,
            fragment_limit,
            position - term_offset,
            self.session_id,
            self.stream_id,
            out,
            spare,
        )
        if new_offset != term_offset:
            position += new_offset - term_offset
            self._position = position
            self._subscriber_position.set_ordered(position)
        if at_fragment and fragments < fragment_limit:
            fragments += self.poll(assembler, fragment_limit - fragments)
        return fragments

    def poll_batch(self, fragment_limit: int) -> FragmentBatch:
        """Up to ``fragment_limit`` fragments at once, without a Python call per fragment: a ``FragmentBatch``
        of numpy arrays (payload offsets, lengths, flags) over the term itself (no copy).

        The fragments are consumed (the subscriber position moves past them) when the batch is released:
        ``batch.release()``, leaving a ``with`` block over it, or this image's next poll of any kind. Until
        then the publisher cannot overwrite them. Padding is stepped over; a batch never crosses a term's end.
        """
        batch = self._batch
        if batch is not None:
            self._release_batch()
        else:
            batch = self._batch = FragmentBatch(self, max(fragment_limit, 1))
            self._poller.batch_pending = 1  # the C poll releases it first from now on, as poll does
        if self.is_closed:
            return batch.empty()
        position = self._position
        term_offset = position & self._term_length_mask
        index = (position >> self.position_bits_to_shift) % 3
        term_buffer = self._term_buffers[index]
        if fragment_limit > batch.capacity:
            batch.grow(fragment_limit)
        scan = self._scan
        if scan is not None:
            count, new_offset = scan(
                self._term_addresses[index],
                self.term_length,
                term_offset,
                batch._offsets[:fragment_limit],
                batch._lengths,
                batch._flags,
            )
        else:
            count, new_offset = batch.scan_slowly(term_buffer, term_offset, fragment_limit)
        return batch.fill(term_buffer, count, position + (new_offset - term_offset))

    def _release_batch(self) -> None:
        batch = self._batch
        if batch is not None and batch.pending:
            batch.pending = False
            self._commit(batch.position)

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """Like ``poll``, but the handler returns ABORT, BREAK, COMMIT or CONTINUE for each fragment."""
        if self.is_closed:
            return 0
        if self._batch is not None:
            self._release_batch()
        position = self._position
        term_offset = position & self._term_length_mask
        initial_offset = term_offset
        term_buffer = self._term_buffers[(position >> self.position_bits_to_shift) % 3]
        state = {"offset": term_offset, "fragments": 0, "stop": False}

        def dispatch(buffer: Any, offset: int, length: int, header: Header) -> None:
            if state["stop"]:
                raise _Stop
            action = handler(buffer, offset, length, header)
            if action == ABORT:
                state["stop"] = True
                raise _Stop
            state["fragments"] += 1
            state["offset"] = header.term_offset + ((header.frame_length + 31) & ~31)
            if action == BREAK:
                state["stop"] = True
                raise _Stop
            if action == COMMIT:
                self._commit(position + (state["offset"] - initial_offset))

        try:
            _, new_offset = self._reader.read(
                term_buffer, term_offset, dispatch, fragment_limit, self._header
            )
            # Padding after the last delivered fragment is consumed too (as the plain poll does).
            state["offset"] = max(state["offset"], new_offset) if not state["stop"] else state["offset"]
        except _Stop:
            pass
        new_position = position + (state["offset"] - initial_offset)
        if new_position != position:
            self._commit(new_position)
        return state["fragments"]

    def block_poll(self, handler: BlockHandler, block_length_limit: int) -> int:
        """Hand ``handler`` the next block of whole committed frames, as they lie in the term; bytes consumed.

        As Aeron's Image.blockPoll: the block is at most ``block_length_limit`` bytes and never crosses the
        term end; a padding frame ends a block and, when it comes first, is a block of its own (whatever its
        length), so a recorder copies padding as it is. The position moves by the block's length only once
        the handler has returned: unlike 1.15.1, which swallows the handler's exception and moves on anyway,
        an exception leaves the position where it was and propagates (nothing is counted as recorded that
        was not written).
        """
        return self.block_poll_counting(
            lambda term_buffer, offset, length, session_id, term_id, _messages: handler(
                term_buffer, offset, length, session_id, term_id
            ),
            block_length_limit,
        )

    def block_poll_counting(self, handler: CountingBlockHandler, block_length_limit: int) -> int:
        """``block_poll`` whose handler is also told how many messages the block holds (counted in the same
        native walk that finds the block: a recorder's index needs the count)."""
        if self.is_closed:
            return 0
        position = self._position
        term_offset = position & self._term_length_mask
        term_buffer = self._term_buffers[(position >> self.position_bits_to_shift) % 3]
        limit_offset = min(term_offset + block_length_limit, self.term_length)
        end, messages = term_block_scanner.scan_counting(term_buffer, term_offset, limit_offset)
        length = end - term_offset
        if length > 0:
            term_id = term_buffer.get_int32(term_offset + TERM_ID_OFFSET)
            handler(term_buffer, term_offset, length, self.session_id, term_id, messages)
            self._commit(position + length)
        return length

    def raw_poll(self, handler: RawBlockHandler, block_length_limit: int) -> int:
        """``block_poll`` that also says where the block lies in the log file (Aeron's Image.rawPoll)."""
        if self.is_closed:
            return 0
        position = self._position
        term_offset = position & self._term_length_mask
        index = (position >> self.position_bits_to_shift) % 3
        term_buffer = self._term_buffers[index]
        capacity = self.term_length
        limit_offset = min(term_offset + block_length_limit, capacity)
        length = term_block_scanner.scan(term_buffer, term_offset, limit_offset) - term_offset
        if length > 0:
            term_id = term_buffer.get_int32(term_offset + TERM_ID_OFFSET)
            file_offset = capacity * index + term_offset
            handler(
                self.log_buffers.path, file_offset, term_buffer, term_offset, length, self.session_id, term_id
            )
            self._commit(position + length)
        return length

    def _commit(self, position: int) -> None:
        if position > self._position:
            self._position = position
            self._subscriber_position.set_ordered(position)

    def close(self) -> None:
        if not self.is_closed:
            # As 1.15.1: decided once, from where this subscriber got to (a closed image may be unmapped).
            self._is_eos_at_close = self._position >= lbd.end_of_stream_position(self._meta)
            self.is_closed = True
            self._poller.closed = 1


class _PositionCell:
    """An image's position (and the flags the C ImagePoll keeps) off the fast path."""

    __slots__ = ("batch_pending", "closed", "position")

    def __init__(self, position: int) -> None:
        self.position = position
        self.closed = 0
        self.batch_pending = 0


class _Stop(Exception):
    """Unwinds the term reader when a controlled handler stops the poll."""


class FragmentBatch:
    """The fragments of one ``Image.poll_batch``, zero-copy: fragment ``i`` is
    ``buffer[offsets[i] : offsets[i] + lengths[i]]``, its flags byte ``flags[i]`` (BEGIN 0x80, END 0x40: both
    set for a whole message), all of one session and term. ``position`` is where the image is once the batch
    is released. Valid until released; one per image, reused by its every batch poll (no allocation per
    fragment, numpy views per batch).
    """

    __slots__ = (
        "_flags",
        "_frames",
        "_image",
        "_lengths",
        "_offsets",
        "buffer",
        "capacity",
        "flags",
        "lengths",
        "offsets",
        "pending",
        "position",
        "session_id",
        "term_buffer",
    )

    def __init__(self, image: Image | None, capacity: int) -> None:
        self._image = image
        self.session_id = image.session_id if image is not None else 0
        self._frames: FrameBatch | None = None
        self.grow(capacity)
        self.pending = False
        self.position = image.position if image is not None else 0
        self.term_buffer: AtomicBuffer | None = None
        self.buffer: memoryview = memoryview(b"")
        self.offsets = self._offsets[:0]
        self.lengths = self._lengths[:0]
        self.flags = self._flags[:0]

    def grow(self, capacity: int) -> None:
        self.capacity = capacity
        self._offsets = np.zeros(capacity, dtype=np.int32)
        self._lengths = np.zeros(capacity, dtype=np.int32)
        self._flags = np.zeros(capacity, dtype=np.uint8)

    def __len__(self) -> int:
        return len(self.offsets)

    def data(self, i: int) -> memoryview:
        """Fragment ``i``'s payload as a view of the term (valid until the batch is released)."""
        offset = int(self._offsets[i])
        return self.buffer[offset : offset + int(self._lengths[i])]

    def fill(self, term_buffer: AtomicBuffer, count: int, position: int) -> FragmentBatch:
        self.term_buffer = term_buffer
        self.buffer = term_buffer.view
        self.offsets = self._offsets[:count]
        self.lengths = self._lengths[:count]
        self.flags = self._flags[:count]
        image = self._image
        assert image is not None
        self.pending = position != image.position
        self.position = position
        return self

    def empty(self) -> FragmentBatch:
        self.offsets = self._offsets[:0]
        self.lengths = self._lengths[:0]
        self.flags = self._flags[:0]
        self.pending = False
        return self

    def scan_slowly(
        self, term_buffer: AtomicBuffer, term_offset: int, fragment_limit: int
    ) -> tuple[int, int]:
        """The walk through cffi, when the fast path is off: the same arrays, filled in Python."""
        frames = self._frames
        if frames is None:
            frames = self._frames = FrameBatch(256)
        view = term_buffer.view
        count, offset = 0, term_offset
        while count < fragment_limit:
            wanted = min(fragment_limit - count, frames.capacity)
            found, next_offset = term_buffer.scan_frames(offset, wanted, frames)
            pairs = frames.pairs(found)
            for i in range(found):
                frame_offset = pairs[2 * i]
                self._offsets[count] = frame_offset + HEADER_LENGTH
                self._lengths[count] = pairs[2 * i + 1] - HEADER_LENGTH
                self._flags[count] = view[frame_offset + FLAGS_OFFSET]
                count += 1
            offset = next_offset
            if found < wanted:
                break
        return count, offset

    def release(self) -> None:
        """Consume the batch's fragments now (the image's next poll would)."""
        if self.pending and self._image is not None:
            self._image._release_batch()

    def __enter__(self) -> FragmentBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
