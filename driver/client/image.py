"""Image: one publisher session's stream as a subscriber sees it, read straight from the mapped log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import AtomicCounter
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer import term_block_scanner
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.concurrent.logbuffer.term_reader import FragmentHandler, TermReader
from driver.protocol.frames import TERM_ID_OFFSET

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
        self._position = subscriber_position.get()
        self.join_position = self._position
        self._header = Header(self.initial_term_id, self.position_bits_to_shift, self)
        self._reader = reader
        self.is_closed = False
        self._is_eos_at_close = False

    def __repr__(self) -> str:
        return (
            f"Image(session_id={self.session_id}, stream_id={self.stream_id}, source={self.source_identity!r}, "
            f"position={self._position})"
        )

    @property
    def position(self) -> int:
        return self._position

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
        position = self._position
        term_offset = position & self._term_length_mask
        term_buffer = self._term_buffers[(position >> self.position_bits_to_shift) % 3]
        fragments, new_offset = self._reader.read(
            term_buffer, term_offset, handler, fragment_limit, self._header
        )
        if new_offset != term_offset:
            position += new_offset - term_offset
            self._position = position
            self._subscriber_position.set_ordered(position)
        return fragments

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """Like ``poll``, but the handler returns ABORT, BREAK, COMMIT or CONTINUE for each fragment."""
        if self.is_closed:
            return 0
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
        if self.is_closed:
            return 0
        position = self._position
        term_offset = position & self._term_length_mask
        term_buffer = self._term_buffers[(position >> self.position_bits_to_shift) % 3]
        limit_offset = min(term_offset + block_length_limit, self.term_length)
        length = term_block_scanner.scan(term_buffer, term_offset, limit_offset) - term_offset
        if length > 0:
            term_id = term_buffer.get_int32(term_offset + TERM_ID_OFFSET)
            handler(term_buffer, term_offset, length, self.session_id, term_id)
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


class _Stop(Exception):
    """Unwinds the term reader when a controlled handler stops the poll."""
