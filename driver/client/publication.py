"""Publications: append messages to a driver-made log buffer, as Aeron 1.15.1's ConcurrentPublication and
ExclusivePublication do. ``offer`` returns the new stream position, or one of the negative codes below."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

from driver.client.aio import offer as offer_waiting
from driver.client.offer_result import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
)
from driver.concurrent.counters import AtomicCounter, counter_offset
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from driver.concurrent.logbuffer.exclusive_term_appender import ExclusiveTermAppender
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.concurrent.logbuffer.publication_offer import (
    MESSAGE_TOO_LONG,
    NativeExclusiveOffer,
    NativeOffer,
)
from driver.concurrent.logbuffer.term_appender import FAILED, TRIPPED, TermAppender, TermIdMismatchError
from driver.protocol.frames import HEADER_LENGTH
from driver.util.bit_util import to_int32

if TYPE_CHECKING:
    from driver.client.aeron import Aeron


def _length(data: Any) -> int:
    return len(data) if type(data) is bytes else memoryview(data).nbytes


def _state_field(name: str) -> property:
    """A field of the publication's native struct (``_state``), read and written through it."""

    def set_field(self: Any, value: int) -> None:
        setattr(self._state, name, value)

    return property(attrgetter(f"_state.{name}"), set_field)


class _PublicationBase:
    _appender_type: type[TermAppender] | type[ExclusiveTermAppender]
    """What appends to each term partition outside the native offer (claims, padding, blocks)."""

    def __init__(
        self,
        conductor: Aeron,
        channel: str,
        stream_id: int,
        session_id: int,
        registration_id: int,
        original_registration_id: int,
        log_buffers: LogBuffers,
        publication_limit: AtomicCounter,
    ) -> None:
        self._conductor = conductor
        self.channel = channel
        self.stream_id = stream_id
        self.session_id = session_id
        self.registration_id = registration_id
        """This add's correlation id (what REMOVE_PUBLICATION names)."""
        self.original_registration_id = original_registration_id
        """The driver publication's id (shared publications share it)."""
        self.log_buffers = log_buffers
        meta = log_buffers.meta_data_buffer
        self._meta = meta
        self._publication_limit = publication_limit
        self.term_length = log_buffers.term_length
        self.position_bits_to_shift = lbd.position_bits_to_shift(self.term_length)
        self.initial_term_id = lbd.initial_term_id(meta)
        self.mtu_length = lbd.mtu_length(meta)
        self.max_payload_length = self.mtu_length - HEADER_LENGTH
        self.max_message_length = lbd.compute_max_message_length(self.term_length)
        self.max_possible_position = self.term_length * (1 << 31)
        self._header_template = lbd.default_frame_header(meta)
        self._is_closed = False
        self._appenders = tuple(
            self._appender_type(term_buffer, meta, index)
            for index, term_buffer in enumerate(log_buffers.term_buffers)
        )
        self._get_limit = publication_limit.get

    _on_close: Any = None
    """Called once when the publication closes (the native offer's closed flag)."""

    def _bind_native(self, native: NativeOffer) -> None:
        """The native offer serves ``offer``; on the fast path ``offer``, ``offer_many``, ``offer_async`` and
        ``try_claim`` are its C calls."""
        self._native_offer = native.offer
        self._on_close = native.close
        fast = native.fast_offers(self._on_fast_offer_error, self._offer_waiting)
        if fast is not None:
            # Instance attributes shadow the methods: one C call per offer (or per offer_many, per
            # offer_async that goes at once, per try_claim).
            self.offer, self.offer_many, self.offer_async, self.try_claim = fast  # type: ignore[method-assign]

    def _native_args(self) -> tuple[Any, ...]:
        return (
            self.log_buffers,
            self._publication_limit.values_buffer,
            counter_offset(self._publication_limit.id),
            self._header_template,
            self.position_bits_to_shift,
            self.initial_term_id,
            self.max_payload_length,
            self.max_message_length,
            self.max_possible_position,
        )

    def _on_fast_offer_error(self, result: int, data: Any) -> int:
        self._raise_offer_error(result, data)
        return result

    def _raise_offer_error(self, result: int, data: Any) -> None:
        if result == MESSAGE_TOO_LONG:
            self._check_length(_length(data))
        raise TermIdMismatchError(
            "action possibly delayed: the log moved on more than a whole term while this offer ran"
        )

    @property
    def is_closed(self) -> bool:
        return self._is_closed

    @is_closed.setter
    def is_closed(self, value: bool) -> None:
        # Aeron.close sets it directly too: offers bound before the close must stop before the log is unmapped.
        self._is_closed = value
        if value and self._on_close is not None:
            self._on_close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(channel={self.channel!r}, stream_id={self.stream_id}, "
            f"session_id={self.session_id}, registration_id={self.registration_id})"
        )

    @property
    def is_connected(self) -> bool:
        return not self.is_closed and lbd.is_connected(self._meta)

    @property
    def position_limit(self) -> int:
        return CLOSED if self.is_closed else self._publication_limit.get()

    def _check_length(self, length: int) -> None:
        if length > self.max_message_length:
            raise ValueError(
                f"message of {length} bytes exceeds the maximum of {self.max_message_length} for "
                f"a term length of {self.term_length}"
            )

    def _check_claim(self, length: int) -> None:
        if length > self.max_payload_length:
            raise ValueError(
                f"claim of {length} bytes exceeds the max payload length {self.max_payload_length}"
            )

    def _back_pressure_status(self, position: int, length: int) -> int:
        if position + length >= self.max_possible_position:
            return MAX_POSITION_EXCEEDED
        return BACK_PRESSURED if lbd.is_connected(self._meta) else NOT_CONNECTED

    def add_destination(self, endpoint_channel: str) -> None:
        """MDC (``control=...|control-mode=manual``): also send to ``aeron:udp?endpoint=host:port``."""
        self._conductor.publication_destination(self, endpoint_channel, add=True)

    def remove_destination(self, endpoint_channel: str) -> None:
        self._conductor.publication_destination(self, endpoint_channel, add=False)

    def offer(self, data: Any, reserved_value: int = 0) -> int:
        """Append ``data`` (bytes or any contiguous buffer) as one message, in one native call (that also
        rotates the log); the new position or a code."""
        if self.is_closed:
            return CLOSED
        result = self._native_offer(data, reserved_value)
        if result < MAX_POSITION_EXCEEDED:
            self._raise_offer_error(result, data)
        return result

    def offer_many(self, messages: Sequence[Any]) -> int:
        """Offer ``messages`` (a list or tuple of bytes or buffers) in order, each as ``offer`` would, retrying a
        rotation (ADMIN_ACTION) at once, up to the first that does not go. How many went; when none did, the first
        one's code (<= 0). On a shared publication with the fast path this is one C call."""
        offer = self.offer
        sent = 0
        for message in messages:
            result = offer(message)
            if result == ADMIN_ACTION:
                result = offer(message)
            if result <= 0:
                return sent or result
            sent += 1
        return sent

    async def offer_async(self, data: Any, *, timeout_s: float | None = None) -> int:
        """Await until ``data`` is offered, waiting out back pressure (see ``driver.client.aio.offer``).
        An offer that goes at once costs one ``offer`` call (on the fast path, one C call and no coroutine):
        the waiting loop starts only when it did not."""
        result = self.offer(data)
        if result > 0:
            return result
        return await self._offer_waiting(data, timeout_s=timeout_s)

    def _offer_waiting(self, data: Any, *, timeout_s: float | None = None) -> Awaitable[int]:
        # Only the two concrete classes are ever made, and both are what offer() takes.
        return offer_waiting(cast("Publication | ExclusivePublication", self), data, timeout_s=timeout_s)

    def close(self) -> None:
        """Release this publication (REMOVE_PUBLICATION); idempotent."""
        if not self.is_closed:
            self.is_closed = True
            self._conductor.release_publication(self)

    def __enter__(self) -> _PublicationBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Publication(_PublicationBase):
    """A publication that several publishers (in any processes) may share."""

    _appender_type = TermAppender
    _appenders: tuple[TermAppender, ...]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._bind_native(NativeOffer(*self._native_args()))

    @property
    def position(self) -> int:
        if self.is_closed:
            return CLOSED
        return lbd.producer_position(
            self._meta, self.term_length, self.position_bits_to_shift, self.initial_term_id
        )

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim space for one unfragmented message of ``length`` bytes to fill in place, then
        ``buffer_claim.commit()`` (or ``abort()``); the new position or a code."""
        self._check_claim(length)
        if self.is_closed:
            return CLOSED
        limit = self._get_limit()
        term_count = lbd.active_term_count(self._meta)
        appender = self._appenders[term_count % 3]
        raw_tail = appender.raw_tail_volatile()
        term_offset = raw_tail & 0xFFFF_FFFF
        term_id = raw_tail >> 32
        if term_count != ((term_id - self.initial_term_id + 0x8000_0000) & 0xFFFF_FFFF) - 0x8000_0000:
            return ADMIN_ACTION
        position = (term_count << self.position_bits_to_shift) + term_offset
        if position >= limit:
            return self._back_pressure_status(position, length)
        result = appender.claim(term_id, self._header_template, length, buffer_claim)
        return self._new_position(term_count, term_offset, term_id, position, result)

    def _new_position(
        self, term_count: int, term_offset: int, term_id: int, position: int, result: int
    ) -> int:
        if result > 0:
            return position - term_offset + result
        if position + term_offset > self.max_possible_position:
            return MAX_POSITION_EXCEEDED
        if result in (TRIPPED, FAILED):
            lbd.rotate_log(self._meta, term_count, term_id)
        return ADMIN_ACTION


class ExclusivePublication(_PublicationBase):
    """A publication with one publisher only: no contention, so it keeps its tail to itself."""

    _appender_type = ExclusiveTermAppender
    _appenders: tuple[ExclusiveTermAppender, ...]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        meta = self._meta
        native = NativeExclusiveOffer(*self._native_args())
        # Where the publication is lives in the native struct, which its offers move on in C.
        self._state = native.state
        term_count = lbd.active_term_count(meta)
        index = term_count % 3
        raw_tail = lbd.raw_tail_volatile(meta, index)
        self._term_id = lbd.term_id(raw_tail)
        self._term_offset = lbd.term_offset(raw_tail, self.term_length)
        self._active_partition_index = index
        self._term_begin_position = lbd.compute_term_begin_position(
            self._term_id, self.position_bits_to_shift, self.initial_term_id
        )
        self._bind_native(native)

    # The position fields, read and written in the native struct (NativeExclusiveOffer.state).
    _term_id = _state_field("term_id")
    _term_offset = _state_field("term_offset")
    _active_partition_index = _state_field("active_partition_index")
    _term_begin_position = _state_field("term_begin_position")

    @property
    def position(self) -> int:
        return CLOSED if self.is_closed else self._term_begin_position + self._term_offset

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        self._check_claim(length)
        if status := self._blocked_status(length):
            return status
        result = self._appenders[self._active_partition_index].claim(
            self._term_id, self._term_offset, self._header_template, length, buffer_claim
        )
        return self._new_position(result)

    def append_padding(self, length: int) -> int:
        """Append a padding frame of ``length`` bytes after its header, which subscribers skip (a replay
        reproduces a recorded stream's padding this way); the new position or a code."""
        self._check_length(length)
        if length < 0:
            raise ValueError(f"cannot append padding of a negative length ({length})")
        if status := self._blocked_status(length):
            return status
        result = self._appenders[self._active_partition_index].append_padding(
            self._term_id, self._term_offset, self._header_template, length
        )
        return self._new_position(result)

    def offer_block(self, block: bytearray, length: int, limit: int) -> int:
        """Whole recorded frames from the start of ``block[:length]``, laid out for this publication's current
        term offset (a replay publication starts at the recording's position, docs/archive.md section 15), in one
        copy with their session and stream ids rewritten. Frames are taken while they begin below the
        publication limit and below ``limit`` bytes from the position, and never past the term's end. The new
        position (the old one when no whole frame fitted), or a code."""
        if self.is_closed:
            return CLOSED
        term_offset = self._term_offset
        if term_offset >= self.term_length:
            return self._rotate()
        position = self._term_begin_position + term_offset
        window = self._get_limit() - position
        if window <= 0:
            return self._back_pressure_status(position, length)
        resulting_offset = self._appenders[self._active_partition_index].append_block(
            self._term_id,
            term_offset,
            block,
            min(length, self.term_length - term_offset),
            min(window, limit),
            self.session_id,
            self.stream_id,
        )
        self._term_offset = resulting_offset
        return self._term_begin_position + resulting_offset

    def _blocked_status(self, length: int) -> int:
        """CLOSED or a back-pressure code when nothing may be appended now, else 0."""
        if self.is_closed:
            return CLOSED
        position = self._term_begin_position + self._term_offset
        if position >= self._get_limit():
            return self._back_pressure_status(position, length)
        return 0

    def _new_position(self, result: int) -> int:
        if result > 0:
            self._term_offset = result
            return self._term_begin_position + result
        return self._rotate()

    def _rotate(self) -> int:
        if self._term_begin_position + self.term_length >= self.max_possible_position:
            return MAX_POSITION_EXCEEDED
        # The term is full (padding written): move to the next one ourselves, no contention to handle.
        next_index = (self._active_partition_index + 1) % 3
        next_term_id = self._term_id + 1
        term_count = to_int32(next_term_id - self.initial_term_id)
        lbd.initialise_tail_with_term_id(self._meta, next_index, next_term_id)
        lbd.set_active_term_count_ordered(self._meta, term_count)
        self._active_partition_index = next_index
        self._term_id = next_term_id
        self._term_offset = 0
        self._term_begin_position += self.term_length
        return ADMIN_ACTION
