"""CatchUp: a recording's history, then its live stream on the same host, switched at an exact position
(docs/archive.md section 17).

Where the live stream is reachable without the network (IPC, or a spy on a UDP publication), no MDS merge is
needed: the live subscription is made first and its image's join position ``J`` is where live begins. The
archive replays ``[from_position, J)`` (a bounded replay, which follows a live recording until ``J``) on a
replay stream of its own, while what live commits from ``J`` on is copied, a block of whole frames at a time,
into a bounded buffer. Once the replay image reaches ``J`` the copies are delivered, then live: every byte once,
in order. When ``from_position >= J`` no history is needed and live fragments that end at or before
``from_position`` are skipped.

``poll(on_message, fragment_limit)`` does one non-blocking step of the state table and delivers whole messages
(``driver.client.aio.Message``: fragments reassembled across the switch, the live session id on replayed ones);
``poll_fragments(handler, fragment_limit)`` hands the fragments to a fragment handler instead, the replay's
straight from its image.
"""

from __future__ import annotations

import asyncio
import enum
import struct
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driver.archive.client.archive_requests import PolledArchive
from driver.archive.client.exceptions import ArchiveError, ArchiveErrorCode
from driver.archive.client.replay_extensions import NULL_POSITION
from driver.archive.client.replication import NULL_RECORDING_ID
from driver.client.aio import IDLE_S, Message, messages_of
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import term_reader
from driver.concurrent.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    END_FLAG,
    FLAGS_OFFSET,
    FRAME_ALIGNMENT,
    HEADER_LENGTH,
    RESERVED_VALUE_OFFSET,
    TERM_ID_OFFSET,
    UNFRAGMENTED,
)
from driver.concurrent.logbuffer.header import Header
from driver.concurrent.logbuffer.term_reader import FragmentHandler
from driver.protocol.channel_uri import ChannelUri
from driver.util.bit_util import to_int32

if TYPE_CHECKING:
    from driver.archive.client.aeron_archive import AeronArchive
    from driver.archive.client.archive_requests import ArchiveRequests, PendingRequest
    from driver.client import Image, Subscription

MAX_BUFFERED_BYTES = 64 * 1024 * 1024
"""Default bound of the live data held while the history is replayed."""
REPLAY_IMAGE_TIMEOUT_NS = 10_000_000_000
"""How long the replay's image may take to appear (the archive's connect timeout is 5 s)."""
REPLAY_CHANNEL = "aeron:ipc"

MessageHandler = Callable[[Message], None]


class _Answered:
    def __init__(self, result: Any) -> None:
        self.result = result

    def poll(self) -> bool:
        return True


_NO_RECORDING = _Answered(NULL_RECORDING_ID)


class State(enum.IntEnum):
    AWAIT_LIVE = 0
    FIND_RECORDING = 1
    DESCRIBE_RECORDING = 2
    START_REPLAY = 3
    REPLAY = 4
    LIVE = 5
    FAILED = 6
    CLOSED = 7


# The state table: from each state only these. FAILED and CLOSED are reachable from everywhere.
TRANSITIONS: dict[State, frozenset[State]] = {
    State.AWAIT_LIVE: frozenset({State.FIND_RECORDING, State.LIVE}),
    State.FIND_RECORDING: frozenset({State.DESCRIBE_RECORDING}),
    State.DESCRIBE_RECORDING: frozenset({State.START_REPLAY}),
    State.START_REPLAY: frozenset({State.REPLAY}),
    State.REPLAY: frozenset({State.LIVE}),
    State.LIVE: frozenset(),
    State.FAILED: frozenset(),
    State.CLOSED: frozenset(),
}


_FIELDS = struct.Struct(f"<i{FLAGS_OFFSET - 4}xB{TERM_ID_OFFSET - FLAGS_OFFSET - 1}xiq")
"""frame length, flags, term id, reserved value: the DATA header fields ``poll`` needs, in one unpack."""
_FRAME_LENGTH_AND_TERM_ID = struct.Struct(f"<i{TERM_ID_OFFSET - 4}xi")
_ALIGNMENT_MASK = ~(FRAME_ALIGNMENT - 1)
assert _FIELDS.size == HEADER_LENGTH and RESERVED_VALUE_OFFSET == TERM_ID_OFFSET + 4


class _Held:
    """A block of live frames copied as they lay in their term from ``term_offset``; ``offset`` is how far
    into ``data`` delivery got."""

    __slots__ = ("buffer", "data", "offset", "term_offset")

    def __init__(self, term_offset: int, data: bytes) -> None:
        self.term_offset = term_offset
        self.data = data
        self.offset = 0
        self.buffer: AtomicBuffer | None = None


class _CopiedHeader(Header):
    """A Header over a held copy: the frame sits at ``offset`` in the copy, ``term_base + offset`` in its
    term, which is what its term offset and position are made of."""

    __slots__ = ("term_base",)

    def __init__(self, initial_term_id: int, position_bits_to_shift: int, context: Any = None) -> None:
        super().__init__(initial_term_id, position_bits_to_shift, context)
        self.term_base = 0

    @property
    def term_offset(self) -> int:
        return self.term_base + self.offset

    @property
    def position(self) -> int:
        frame_length, term_id = _FRAME_LENGTH_AND_TERM_ID.unpack_from(self.buffer.view, self.offset)  # type: ignore[union-attr]
        end_offset = (self.term_base + self.offset + frame_length + FRAME_ALIGNMENT - 1) & _ALIGNMENT_MASK
        return (to_int32(term_id - self.initial_term_id) << self.position_bits_to_shift) + end_offset


class CatchUpError(ArchiveError):
    """The catch-up failed (the state is FAILED); ``state`` says where."""

    def __init__(self, message: str, state: State) -> None:
        super().__init__(message, request="catch_up")
        self.state = state


class HistoryUnavailable(CatchUpError):
    """The archive no longer (or never) holds the stream from ``requested_position``; ``earliest_position`` is
    the earliest position still available (the recording's start, or the live join position when there is no
    recording of the live session at all)."""

    def __init__(self, message: str, state: State, requested_position: int, earliest_position: int) -> None:
        super().__init__(message, state)
        self.requested_position = requested_position
        self.earliest_position = earliest_position


class LiveBufferOverflow(CatchUpError):
    """More than ``limit`` bytes of live data arrived while the history was still replaying."""

    def __init__(self, message: str, state: State, limit: int) -> None:
        super().__init__(message, state)
        self.limit = limit


@dataclass(frozen=True, slots=True)
class TraceEntry:
    state: State
    action: str
    position: int


def channel_fragment(channel: str) -> str:
    """What a recording's channel of this live channel contains: a spy records nothing of its own, its
    publication's channel is recorded (``aeron-spy:`` dropped); a session-id may not be on the recording's."""
    uri = ChannelUri.parse(channel.removeprefix("aeron-spy:"))
    return f"aeron:{uri.media}"


class CatchUp:
    """Replay from ``from_position`` up to the live join, then live (module docstring).

    ``live`` is the caller's subscription to the live stream, made before this; ``subscribe(channel,
    stream_id)`` makes the replay's subscription. The catch-up closes the replay subscription; the live one
    stays the caller's.
    """

    def __init__(
        self,
        live: Subscription,
        archive: ArchiveRequests,
        subscribe: Callable[[str, int], Subscription],
        from_position: int,
        *,
        channel_fragment: str,
        recording_id: int = NULL_RECORDING_ID,
        replay_channel: str = REPLAY_CHANNEL,
        replay_stream_id: int | None = None,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
        nano_clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if from_position < 0 or from_position & 31:
            raise ValueError(
                f"from_position must be a frame boundary (a multiple of 32), got {from_position}"
            )
        self.live = live
        self.archive = archive
        self._subscribe = subscribe
        self.from_position = from_position
        self.channel_fragment = channel_fragment
        self.recording_id = recording_id
        self.replay_channel = replay_channel
        # A replay on the live stream id would also be an image of an IPC live subscription, never consumed
        # there: the replay publication would stall on it.
        self.replay_stream_id = live.stream_id + 1 if replay_stream_id is None else replay_stream_id
        self.max_buffered_bytes = max_buffered_bytes
        self._nano_clock = nano_clock
        self.state = State.AWAIT_LIVE
        self.trace: list[TraceEntry] = []
        self.error: CatchUpError | None = None
        self.live_image: Image | None = None
        self.join_position = NULL_POSITION
        self.replay_session_id: int | None = None
        self.replay: Subscription | None = None
        self._replay_requested_ns = 0
        self._pending: PendingRequest | None = None
        self._held: deque[_Held] = deque()
        self._held_header: _CopiedHeader | None = None
        self.buffered_bytes = 0
        """Bytes of live frames (headers and padding included) copied and not yet delivered."""
        self.max_buffered_seen = 0
        self._parts: list[bytes] | None = None
        self._on_message: MessageHandler | None = None
        # The live stream's identity and the geometry for positions (set once its image is found).
        self._session_id = self._stream_id = self._initial_term_id = self._shift = 0
        self._term_base = 0
        self.position = NULL_POSITION
        """The end position of the last fragment taken into the stream (delivered or part of a message)."""
        self._record(State.AWAIT_LIVE, "enter")

    # -- state -----------------------------------------------------------------------------------------------

    @property
    def is_live(self) -> bool:
        return self.state is State.LIVE

    def _record(self, state: State, action: str) -> None:
        self.trace.append(TraceEntry(state, action, self.position))

    def _to(self, state: State) -> None:
        if state not in TRANSITIONS[self.state] and state not in (State.FAILED, State.CLOSED):
            raise AssertionError(f"no transition {self.state.name} -> {state.name}")
        self.state = state
        self._record(state, "enter")

    def _fail(self, error: CatchUpError) -> None:
        self.error = error
        self._to(State.FAILED)

    def _error(self, message: str) -> CatchUpError:
        return CatchUpError(f"catch-up failed in {self.state.name}: {message}", self.state)

    # -- the stream of fragments -----------------------------------------------------------------------------

    def _on_fragment(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        """``poll``'s fragment handler, for every source: one unpack of the frame's header, fragments
        reassembled into messages in stream order (a message may span the switch)."""
        frame = header.offset
        view = buffer.view
        frame_length, flags, term_id, reserved_value = _FIELDS.unpack_from(view, frame)
        term_count = term_id - self._initial_term_id
        if not -0x8000_0000 <= term_count <= 0x7FFF_FFFF:
            term_count = to_int32(term_count)
        position = (term_count << self._shift) + (
            (self._term_base + frame + frame_length + FRAME_ALIGNMENT - 1) & _ALIGNMENT_MASK
        )
        if position <= self.from_position:
            return  # live from before from_position (no history was needed)
        self.position = position
        if flags & UNFRAGMENTED == UNFRAGMENTED:
            self._on_message(  # type: ignore[misc]
                Message(
                    bytes(view[offset : offset + length]),
                    self._session_id,
                    self._stream_id,
                    position,
                    reserved_value,
                )
            )
            return
        if flags & BEGIN_FLAG:
            self._parts = [bytes(view[offset : offset + length])]
            return
        if self._parts is None:
            return  # the middle of a message whose beginning is before from_position
        self._parts.append(bytes(view[offset : offset + length]))
        if flags & END_FLAG:
            whole = b"".join(self._parts)
            self._parts = None
            self._on_message(  # type: ignore[misc]
                Message(whole, self._session_id, self._stream_id, position, reserved_value)
            )

    def _hold_block(
        self, term_buffer: AtomicBuffer, term_offset: int, length: int, session_id: int, term_id: int
    ) -> None:
        self._held.append(_Held(term_offset, bytes(term_buffer.view[term_offset : term_offset + length])))
        self.buffered_bytes += length
        if self.buffered_bytes > self.max_buffered_seen:
            self.max_buffered_seen = self.buffered_bytes

    def _deliver_held(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Up to ``fragment_limit`` fragments of the held copy of live, through the same term reader as an
        image (the header of a copy knows where in its term the copy began)."""
        header = self._held_header
        assert header is not None  # made with the first held block
        fragments = 0
        try:
            while self._held and fragments < fragment_limit:
                held = self._held[0]
                if held.buffer is None:
                    held.buffer = AtomicBuffer(held.data)
                header.term_base = self._term_base = held.term_offset
                read, held.offset = term_reader.read(
                    held.buffer, held.offset, handler, fragment_limit - fragments, header
                )
                fragments += read
                if held.offset < len(held.data):
                    break
                self._held.popleft()
                held.buffer.close()
                self.buffered_bytes -= len(held.data)
        finally:
            self._term_base = 0
        if self.live_image is not None and not self._held:
            self.position = self.live_image.position
        return fragments

    # -- the duty cycle --------------------------------------------------------------------------------------

    def poll(self, on_message: MessageHandler, fragment_limit: int = 64) -> int:
        """One step of the state table and the delivery it allows, as whole ``Message``s (the live session
        and stream ids on replayed ones too); the fragments read. Raises ``CatchUpError`` once FAILED."""
        self._on_message = on_message
        return self._poll(self._on_fragment, fragment_limit)

    def poll_fragments(self, handler: FragmentHandler, fragment_limit: int = 64) -> int:
        """``poll`` for fragment handlers (``handler(buffer, offset, length, header)`` as ``Image.poll``):
        replayed fragments go from the replay image to ``handler`` untouched, so this costs what polling a
        plain replay does. ``header.position`` is the stream position throughout; ``header.session_id`` is
        the replay's on replayed fragments, so a message split across the join arrives as fragments of two
        sessions: reassemble in order (``poll`` does), not per session."""
        return self._poll(handler, fragment_limit)

    def _poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        if self.state is State.FAILED:
            assert self.error is not None
            raise self.error
        try:
            work = self._step(handler, fragment_limit)
        except CatchUpError as e:
            self._fail(e)
        except ArchiveError as e:
            self._fail(self._error(f"{e}"))
        if self.state is State.FAILED:
            assert self.error is not None
            raise self.error
        return work

    def _answer(self) -> PendingRequest | None:
        pending = self._pending
        if pending is not None and pending.poll():
            self._pending = None
            return pending
        return None

    def _step(self, handler: FragmentHandler, fragment_limit: int) -> int:
        state = self.state
        if state is State.LIVE:
            return self._live_step(handler, fragment_limit)
        if state is State.REPLAY:
            return self._replay_step(handler, fragment_limit)
        # Until the replay runs, live is held from its join on (the first step finds the image).
        work = 0
        if self.live_image is not None:
            work += self._hold()
        if state is State.AWAIT_LIVE:
            images = self.live.images
            if not images:
                return 0
            image = self.live_image = images[0]
            self.join_position = image.join_position
            self._session_id, self._stream_id = image.session_id, image.stream_id
            self._initial_term_id, self._shift = image.initial_term_id, image.position_bits_to_shift
            self._held_header = _CopiedHeader(image.initial_term_id, image.position_bits_to_shift, image)
            self._record(state, "live_joined")
            if self.from_position >= self.join_position:
                self._to(State.LIVE)
                return 1
            if self.recording_id != NULL_RECORDING_ID:
                self._pending = self.archive.list_recording(self.recording_id)
                self._to(State.FIND_RECORDING)
                self._to(State.DESCRIBE_RECORDING)
                return 1
            self._pending = self.archive.find_last_matching_recording(
                0, self.channel_fragment, image.stream_id, image.session_id
            )
            self._to(State.FIND_RECORDING)
            return 1
        try:
            answer = self._answer()
        except ArchiveError as e:
            # An empty catalog answers a search with "min recording id outside valid range".
            if state is not State.FIND_RECORDING or e.code != ArchiveErrorCode.UNKNOWN_RECORDING:
                raise
            answer = _NO_RECORDING
        if answer is None:
            return work
        if state is State.FIND_RECORDING:
            if answer.result == NULL_RECORDING_ID:
                raise HistoryUnavailable(
                    f"no recording of session {self.live_image.session_id if self.live_image else '?'}: "
                    f"only live from {self.join_position}",
                    state,
                    self.from_position,
                    self.join_position,
                )
            self.recording_id = answer.result
            self._pending = self.archive.list_recording(self.recording_id)
            self._to(State.DESCRIBE_RECORDING)
            return 1
        if state is State.DESCRIBE_RECORDING:
            if not answer.result:
                raise self._error(f"unknown recording id {self.recording_id}")
            start_position = answer.result[0].start_position
            if self.from_position < start_position:
                raise HistoryUnavailable(
                    f"recording {self.recording_id} begins at {start_position}, after {self.from_position}",
                    state,
                    self.from_position,
                    start_position,
                )
            self._pending = self.archive.start_replay(
                self.recording_id,
                self.from_position,
                self.join_position - self.from_position,
                self.replay_channel,
                self.replay_stream_id,
            )
            self._to(State.START_REPLAY)
            return 1
        if state is State.START_REPLAY:
            self.replay_session_id = answer.result
            uri = ChannelUri.parse(self.replay_channel)
            uri.params["session-id"] = str(to_int32(answer.result & 0xFFFF_FFFF))
            self.replay = self._subscribe(str(uri), self.replay_stream_id)
            self._replay_requested_ns = self._nano_clock()
            self._to(State.REPLAY)
            return 1
        return work

    def _hold(self) -> int:
        """Copy what live has committed, a block at a time (never more than the rest of its term), so the
        live publication is not held back while the history replays; raises once over the bound."""
        image = self.live_image
        assert image is not None
        length = image.block_poll(self._hold_block, image.term_length)
        if self.buffered_bytes > self.max_buffered_bytes:
            raise LiveBufferOverflow(
                f"{self.buffered_bytes} bytes of live data held while replaying up to {self.join_position} "
                f"(limit {self.max_buffered_bytes}; replay position {self.position})",
                self.state,
                self.max_buffered_bytes,
            )
        return 1 if length else 0

    def _replay_step(self, handler: FragmentHandler, fragment_limit: int) -> int:
        assert self.replay is not None
        work = self._hold()
        images = self.replay.images
        if not images:
            if self._nano_clock() - self._replay_requested_ns > REPLAY_IMAGE_TIMEOUT_NS:
                raise self._error(f"no replay image after {REPLAY_IMAGE_TIMEOUT_NS // 1_000_000} ms")
            return work
        image = images[0]
        if image.position < self.join_position:
            # The bounded replay ends at the join: its image holds nothing past it.
            work += image.poll(handler, fragment_limit)
            self.position = image.position
        if image.position >= self.join_position:
            self._close_replay()
            self._to(State.LIVE)
            return work + 1 + self._deliver_held(handler, fragment_limit)
        if image.is_end_of_stream or image.is_closed:
            raise self._error(
                f"the replay of recording {self.recording_id} ended at {image.position}, before the live "
                f"join position {self.join_position} (the recording stopped)"
            )
        return work

    def _live_step(self, handler: FragmentHandler, fragment_limit: int) -> int:
        image = self.live_image
        assert image is not None
        if self._held:
            # Live is still copied while the copy is delivered: the consumer is behind by the copy.
            return self._hold() + self._deliver_held(handler, fragment_limit)
        if image.position < self.from_position and handler != self._on_fragment:
            from_position = self.from_position

            def skipping(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
                if header.position > from_position:
                    handler(buffer, offset, length, header)

            fragments = image.poll(skipping, fragment_limit)
        else:
            fragments = image.poll(handler, fragment_limit)
        self.position = image.position
        return fragments

    def _close_replay(self) -> None:
        if self.replay is not None:
            self.replay.close()
            self.replay = None

    def close(self) -> None:
        """Close the replay subscription (a bounded replay ends on its own); the live one is the caller's."""
        self._close_replay()
        while self._held:
            held = self._held.popleft()
            if held.buffer is not None:
                held.buffer.close()
        self.buffered_bytes = 0
        self.state = State.CLOSED


class Resume:
    """``async for message in Resume(archive, channel, stream_id, from_position)``: the stream from
    ``from_position`` on, history then live, each message once and in order (module docstring); ``catch_up``
    is the state machine once iteration began. ``options`` go to CatchUp (``recording_id``,
    ``replay_channel``, ``replay_stream_id``, ``max_buffered_bytes``, ``channel_fragment``). The iteration
    raises ``HistoryUnavailable`` or ``LiveBufferOverflow`` (both ``CatchUpError``)."""

    def __init__(
        self,
        archive: AeronArchive,
        channel: str,
        stream_id: int,
        from_position: int,
        *,
        fragment_limit: int = 256,
        idle_s: float = IDLE_S,
        **options: Any,
    ) -> None:
        self.archive = archive
        self.channel = channel
        self.stream_id = stream_id
        self.from_position = from_position
        self.fragment_limit = fragment_limit
        self.idle_s = idle_s
        self.options = options
        self.catch_up: CatchUp | None = None

    def __aiter__(self) -> AsyncIterator[Message]:
        """One message per step, handed over from each poll's batch (on the fast path from C, no Python frame
        per message)."""
        return messages_of(self.batches())

    async def batches(self) -> AsyncIterator[list[Message]]:
        """``async for batch in resume.batches()``: each poll's whole messages as a list the caller keeps, one
        await per poll; the loop is yielded to once per batch."""
        aeron = self.archive.aeron
        live = await aeron.add_subscription_async(self.channel, self.stream_id)
        options = dict(self.options)
        fragment = options.pop("channel_fragment", channel_fragment(self.channel))
        catch_up = self.catch_up = CatchUp(
            live,
            PolledArchive(self.archive),
            aeron.add_subscription,
            self.from_position,
            channel_fragment=fragment,
            **options,
        )
        delay = 0.0
        try:
            while not live.is_closed:
                batch: list[Message] = []
                if catch_up.poll(batch.append, self.fragment_limit) == 0 and not batch:
                    delay = min(0.001, delay * 2 or self.idle_s / 4)
                    await asyncio.sleep(delay)
                    continue
                delay = 0.0
                if batch:
                    yield batch
                await asyncio.sleep(0)
        finally:
            catch_up.close()
            live.close()
