"""ReplayMerge: from a recording's history to its live stream over UDP on one image, without a gap or a duplicate
(docs/archive.md section 16).

The merge owns a multi-destination subscription (``control-mode=manual``) whose ``session-id`` is the
recording's, and asks for the replay with that ``session-id`` on a replay destination of its own, so replay and
live frames land in one image (same session, stream, initial term id and term length) and the log rebuild
takes each byte once. The live destination is added only when the image is within a quarter of a term of the
live position (nearer, live frames would fall outside the receiver window and be dropped); the replay is
stopped only once the image holds bytes the replay cannot have sent: an image position or receiver high-water
mark, sampled before the archive took the recording position, beyond that recording position (a replay never runs
ahead of its recording), so live data provably feeds the image; or, as in later Aeron, an image that its driver
counts two sources for (the log's active transport count) and that holds the recording position just answered;
then the replay destination is removed.

``poll(handler, fragment_limit)`` does one non-blocking step of the state table and polls the image; the state
is ``state`` and, when the merge was opened with a counter, that counter's value (``State`` numbers).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driver.archive.client.aeron_archive import NULL_LENGTH, NULL_POSITION, AeronArchive
from driver.archive.client.archive_requests import ArchiveRequests, PendingRequest, PolledArchive
from driver.archive.client.exceptions import ArchiveError
from driver.client import Counter, Subscription
from driver.concurrent.counter_types import RECEIVER_HWM_TYPE_ID
from driver.protocol.channel_uri import ChannelUri

if TYPE_CHECKING:
    from driver.archive.codecs import RecordingDescriptor
    from driver.concurrent.counters import CountersReader
    from driver.concurrent.logbuffer.term_reader import FragmentHandler

REPLAY_MERGE_STATE_TYPE_ID = 1101
"""Counter type id of a merge's state (value: ``State``); label ``replay-merge: <recording id> <stream id>``."""
LIVE_ADD_MAX_WINDOW = 32 * 1024 * 1024
"""Upper bound of the live-add window whatever the term length (a quarter of a 1 GiB term is far too late)."""


class State(enum.IntEnum):
    RESOLVE_REPLAY_PORT = 0
    GET_RECORDING_POSITION = 1
    REPLAY = 2
    CATCHUP = 3
    ATTEMPT_LIVE_JOIN = 4
    STOP_REPLAY = 5
    MERGED = 6
    FAILED = 7
    CLOSED = 8


# The state table: from each state only these. FAILED and CLOSED are reachable from everywhere.
TRANSITIONS: dict[State, frozenset[State]] = {
    State.RESOLVE_REPLAY_PORT: frozenset({State.GET_RECORDING_POSITION}),
    State.GET_RECORDING_POSITION: frozenset({State.REPLAY}),
    State.REPLAY: frozenset({State.CATCHUP}),
    State.CATCHUP: frozenset({State.ATTEMPT_LIVE_JOIN}),
    State.ATTEMPT_LIVE_JOIN: frozenset({State.STOP_REPLAY}),
    State.STOP_REPLAY: frozenset({State.MERGED}),
    State.MERGED: frozenset(),
    State.FAILED: frozenset(),
    State.CLOSED: frozenset(),
}


class ReplayMergeError(ArchiveError):
    """The merge failed (the state is FAILED); ``state`` says where."""

    def __init__(self, message: str, state: State) -> None:
        super().__init__(message, request="replay_merge")
        self.state = state


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One transition or step worth asserting on: the state entered (or the action taken there), the image
    position and the live (recording) position known at that moment."""

    state: State
    action: str
    image_position: int
    live_position: int


@dataclass(frozen=True, slots=True)
class Recording:
    """What a merge needs of a recording (its descriptor's fields)."""

    recording_id: int
    session_id: int
    stream_id: int
    term_buffer_length: int
    start_position: int

    @classmethod
    def of(cls, descriptor: RecordingDescriptor) -> Recording:
        return cls(
            descriptor.recording_id,
            descriptor.session_id,
            descriptor.stream_id,
            descriptor.term_buffer_length,
            descriptor.start_position,
        )


def subscription_channel(session_id: int) -> str:
    """The merge's own subscription: manual destinations, only the recorded session (docs/archive.md
    section 16). Without tags, every such subscription is an endpoint of its own, so two merges never read
    each other's data."""
    return f"aeron:udp?control-mode=manual|session-id={session_id}"


def _endpoint_channel(channel: str, what: str) -> ChannelUri:
    uri = ChannelUri.parse(channel)
    if uri.media != "udp" or uri.get("endpoint") is None:
        raise ValueError(f"{what} must be aeron:udp?endpoint=host:port[...], got {channel!r}")
    if uri.get("session-id") is not None or uri.get("tags") is not None:
        raise ValueError(f"{what} must not set session-id or tags (the merge sets them): {channel!r}")
    return uri


def resolve_port(endpoint: str) -> str:
    """``host:0`` made ``host:<a port the OS just had free>``; other endpoints unchanged."""
    host, _, port = endpoint.rpartition(":")
    if port != "0":
        return endpoint
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((host.strip("[]") if host not in ("localhost", "") else "127.0.0.1", 0))
        return f"{host}:{probe.getsockname()[1]}"


class ReplayMerge:
    """Replay a recording from ``start_position`` and merge with its live stream (module docstring).

    Make one with ``open()`` (or ``await open_async()``); the merge owns ``subscription`` and closes it
    with ``close()`` unless ``merged`` and ``take_subscription()`` handed it to the caller.
    """

    def __init__(
        self,
        subscription: Subscription,
        archive: ArchiveRequests,
        recording: Recording,
        *,
        replay_destination: str,
        live_destination: str,
        counters_reader: CountersReader | None,
        start_position: int = NULL_POSITION,
        counter: Counter | None = None,
    ) -> None:
        self._replay_uri = _endpoint_channel(replay_destination, "replay_destination")
        _endpoint_channel(live_destination, "live_destination")
        self.subscription = subscription
        self.archive = archive
        self.recording = recording
        self.live_destination = live_destination
        self.replay_destination = replay_destination
        self.start_position = recording.start_position if start_position == NULL_POSITION else start_position
        self.counter = counter
        self.counters_reader = counters_reader
        """The consumer's driver's counters, where the image's receiver high-water mark (rcv-hwm) is read. Required
        (None only where there is no driver, as in the state-table tests): without it only an image position past the
        recording position proves that live feeds the image, a race the source's recorder can win for long."""
        self.live_add_threshold = min(recording.term_buffer_length >> 2, LIVE_ADD_MAX_WINDOW)
        self.state = State.RESOLVE_REPLAY_PORT
        self.trace: list[TraceEntry] = []
        self.error: ReplayMergeError | None = None
        self.replay_session_id: int | None = None
        self.live_position = NULL_POSITION
        """The last recording position the archive gave (the live position as far as the merge knows)."""
        self.live_join_position = NULL_POSITION
        """The received position (image or rcv-hwm) that proved live data had arrived (``live_proven``)."""
        self._pending: PendingRequest | None = None
        self._sampled_position = NULL_POSITION
        self._sampled_hwm = NULL_POSITION
        self._hwm_counter: tuple[int, int] | None = None  # (image correlation id, counter id)
        self._live_added = False
        self._replay_added = False
        self._handed_over = False
        self._record(State.RESOLVE_REPLAY_PORT, "enter")

    # -- making one ------------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        archive: AeronArchive,
        recording_id: int,
        *,
        live_destination: str,
        replay_destination: str = "aeron:udp?endpoint=127.0.0.1:0",
        start_position: int = NULL_POSITION,
        **options: Any,
    ) -> ReplayMerge:
        """Look the recording up, make the merge's subscription and state counter, and begin."""
        descriptor = archive.list_recording(recording_id)
        if descriptor is None:
            raise ArchiveError(f"unknown recording id {recording_id}", request="replay_merge")
        return cls._make(
            archive, Recording.of(descriptor), live_destination, replay_destination, start_position, options
        )

    @classmethod
    async def open_async(
        cls,
        archive: AeronArchive,
        recording_id: int,
        *,
        live_destination: str,
        replay_destination: str = "aeron:udp?endpoint=127.0.0.1:0",
        start_position: int = NULL_POSITION,
        **options: Any,
    ) -> ReplayMerge:
        descriptor = await archive.list_recording_async(recording_id)
        if descriptor is None:
            raise ArchiveError(f"unknown recording id {recording_id}", request="replay_merge")
        return await asyncio.to_thread(
            cls._make,
            archive,
            Recording.of(descriptor),
            live_destination,
            replay_destination,
            start_position,
            options,
        )

    @classmethod
    def _make(
        cls,
        archive: AeronArchive,
        recording: Recording,
        live_destination: str,
        replay_destination: str,
        start_position: int,
        options: dict[str, Any],
    ) -> ReplayMerge:
        aeron = archive.aeron
        subscription = aeron.add_subscription(subscription_channel(recording.session_id), recording.stream_id)
        try:
            counter = aeron.add_counter(
                REPLAY_MERGE_STATE_TYPE_ID,
                f"replay-merge: {recording.recording_id} {recording.stream_id}",
                recording.recording_id.to_bytes(8, "little", signed=True),
            )
        except BaseException:
            subscription.close()
            raise
        return cls(
            subscription,
            PolledArchive(archive),
            recording,
            replay_destination=replay_destination,
            live_destination=live_destination,
            start_position=start_position,
            counter=counter,
            counters_reader=aeron.counters_reader,
            **options,
        )

    # -- state -----------------------------------------------------------------------------------------------

    @property
    def is_merged(self) -> bool:
        return self.state is State.MERGED

    @property
    def has_failed(self) -> bool:
        return self.state is State.FAILED

    @property
    def image_position(self) -> int:
        image = self.subscription.image_by_session_id(self.recording.session_id)
        return image.position if image is not None else NULL_POSITION

    @property
    def receiver_hwm(self) -> int:
        """The highest position the consumer's driver received for the image from any destination (its rcv-hwm
        counter), or NULL_POSITION when unknown."""
        reader = self.counters_reader
        image = self.subscription.image_by_session_id(self.recording.session_id)
        if reader is None or image is None:
            return NULL_POSITION
        cached = self._hwm_counter
        if cached is None or cached[0] != image.correlation_id:
            found: list[int] = []

            def match(counter_id: int, type_id: int, key: bytes, label: str) -> None:
                if (
                    type_id == RECEIVER_HWM_TYPE_ID
                    and int.from_bytes(key[:8], "little") == image.correlation_id
                ):
                    found.append(counter_id)

            reader.for_each(match)
            if not found:
                return NULL_POSITION
            cached = self._hwm_counter = (image.correlation_id, found[0])
        return reader.get_counter_value(cached[1])

    @property
    def is_live_added(self) -> bool:
        return self._live_added

    def _record(self, state: State, action: str) -> None:
        self.trace.append(TraceEntry(state, action, self.image_position, self.live_position))

    def _to(self, state: State) -> None:
        if state not in TRANSITIONS[self.state] and state not in (State.FAILED, State.CLOSED):
            raise AssertionError(f"no transition {self.state.name} -> {state.name}")
        self.state = state
        if self.counter is not None and not self.counter.closed:
            self.counter.set(int(state))
        self._record(state, "enter")

    def _fail(self, message: str) -> None:
        self.error = ReplayMergeError(f"replay merge failed in {self.state.name}: {message}", self.state)
        self._to(State.FAILED)

    # -- the duty cycle --------------------------------------------------------------------------------------

    def poll(self, handler: FragmentHandler, fragment_limit: int = 64) -> int:
        """One step of the merge and one poll of its image; raises ``ReplayMergeError`` once FAILED."""
        if self.state is State.FAILED:
            assert self.error is not None
            raise self.error
        work = 0
        if self.state is not State.MERGED:
            try:
                work += self._step()
            except ArchiveError as e:
                self._fail(f"{e}")
            except Exception as e:
                self._fail(f"{e!r}")
            if self.state is State.FAILED:
                assert self.error is not None
                raise self.error
        return work + self.subscription.poll(handler, fragment_limit)

    def step(self) -> int:
        """One step of the state table without polling the image, for an owner whose image another agent
        consumes (an archive recording it); a failure sets ``error`` and FAILED instead of raising."""
        if self.state in (State.MERGED, State.FAILED, State.CLOSED):
            return 0
        try:
            return self._step()
        except ArchiveError as e:
            self._fail(f"{e}")
        except Exception as e:
            self._fail(f"{e!r}")
        return 1

    def _answer(self) -> PendingRequest | None:
        """The pending request once answered (and forgotten), else None."""
        pending = self._pending
        if pending is not None and pending.poll():
            self._pending = None
            return pending
        return None

    def _step(self) -> int:
        state = self.state
        if state is State.RESOLVE_REPLAY_PORT:
            uri = self._replay_uri
            uri.params["endpoint"] = resolve_port(uri.params["endpoint"])
            self.replay_destination = str(uri)
            self.subscription.add_destination(self.replay_destination)
            self._replay_added = True
            self._pending = self.archive.recording_position(self.recording.recording_id)
            self._to(State.GET_RECORDING_POSITION)
            return 1
        if state is State.GET_RECORDING_POSITION:
            answer = self._answer()
            if answer is None:
                return 0
            if answer.result == NULL_POSITION:
                self._fail(
                    f"recording {self.recording.recording_id} is not active: there is no live to merge with"
                )
                return 1
            self.live_position = answer.result
            if self.start_position > self.live_position:
                self._fail(
                    f"start position {self.start_position} is beyond the live position {self.live_position}"
                )
                return 1
            replay_channel = ChannelUri.parse(self.replay_destination)
            replay_channel.params["session-id"] = str(self.recording.session_id)
            self._pending = self.archive.start_replay(
                self.recording.recording_id,
                self.start_position,
                NULL_LENGTH,
                str(replay_channel),
                self.recording.stream_id,
            )
            self._to(State.REPLAY)
            return 1
        if state is State.REPLAY:
            answer = self._answer()
            if answer is None:
                return 0
            self.replay_session_id = answer.result
            self._to(State.CATCHUP)
            return 1
        if state is State.CATCHUP:
            # Up to the live position seen before the replay began, then ask again.
            position = self.image_position
            if position == NULL_POSITION or position < self.live_position:
                return 0
            self._ask_live_position()
            self._to(State.ATTEMPT_LIVE_JOIN)
            return 1
        if state is State.ATTEMPT_LIVE_JOIN:
            return self._attempt_live_join()
        if state is State.STOP_REPLAY:
            if self._answer() is None:
                return 0
            self._remove_replay_destination()
            self._to(State.MERGED)
            return 1
        return 0

    def _ask_live_position(self) -> None:
        # The image position is sampled before the archive takes the recording position: everything the replay
        # had put into the image by then lies at or below that answer.
        self._sampled_position = self.image_position
        self._sampled_hwm = self.receiver_hwm
        self._pending = self.archive.recording_position(self.recording.recording_id)

    def _attempt_live_join(self) -> int:
        answer = self._answer()
        if answer is None:
            return 0
        if answer.result == NULL_POSITION:
            self._fail(f"recording {self.recording.recording_id} stopped before the merge joined live")
            return 1
        self.live_position = answer.result
        sampled = self._sampled_position
        if not self.is_live_added:
            if self.live_position - self.image_position <= self.live_add_threshold:
                self.subscription.add_destination(self.live_destination)
                self._live_added = True
                self._record(State.ATTEMPT_LIVE_JOIN, "add_live")
        elif (
            sampled > self.live_position
            or (
                self._sampled_hwm > self.live_position
                and self.live_position - sampled <= self.live_add_threshold
            )
            or self._live_transport_active()
        ):
            # A replay never sends past the recording position, so bytes beyond it came from live: live
            # is feeding this image, and the replay may stop (docs/archive.md section 16). Received beyond it
            # (rcv-hwm) is proof enough when the image is within the live-add window: what it still lacks is
            # NAKed to every destination, and the live publisher still holds it. When live keeps pace with the
            # source's recorder neither comes, so the image's driver is asked too: a second source feeds it
            # and it holds the recording position, so what follows comes from live.
            self.live_join_position = max(sampled, self._sampled_hwm, self.image_position)
            self._record(State.ATTEMPT_LIVE_JOIN, "live_proven")
            assert self.replay_session_id is not None
            self._pending = self.archive.stop_replay(self.replay_session_id)
            self._to(State.STOP_REPLAY)
            return 1
        self._ask_live_position()
        return 1

    def _live_transport_active(self) -> bool:
        """The image has heard from both its destinations lately (its driver's active transport count) and
        holds everything up to the recording position just answered."""
        image = self.subscription.image_by_session_id(self.recording.session_id)
        return (
            image is not None and image.active_transport_count >= 2 and image.position >= self.live_position
        )

    def _remove_replay_destination(self) -> None:
        if self._replay_added:
            self._replay_added = False
            self.subscription.remove_destination(self.replay_destination)

    # -- conveniences ----------------------------------------------------------------------------------------

    def run_until_merged(self, handler: FragmentHandler, timeout_s: float, fragment_limit: int = 64) -> None:
        """Poll (sleeping briefly when idle) until MERGED; ``ReplayMergeError`` on failure, TimeoutError late."""
        deadline = time.monotonic() + timeout_s
        while not self.is_merged:
            if self.poll(handler, fragment_limit) == 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"replay merge still {self.state.name} after {timeout_s} s")
                time.sleep(0.0001)

    async def merge_async(self, handler: FragmentHandler, timeout_s: float, fragment_limit: int = 64) -> None:
        """``run_until_merged`` on the loop: yields between polls."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.is_merged:
            if self.poll(handler, fragment_limit) == 0:
                if loop.time() > deadline:
                    raise TimeoutError(f"replay merge still {self.state.name} after {timeout_s} s")
                await asyncio.sleep(0.0001)
            else:
                await asyncio.sleep(0)

    def take_subscription(self) -> Subscription:
        """Once merged: the live subscription, now the caller's (``close()`` leaves it open)."""
        if not self.is_merged:
            raise ReplayMergeError(f"not merged yet ({self.state.name})", self.state)
        self._handed_over = True
        return self.subscription

    def close(self) -> None:
        """Stop a replay still running (not waited for), close the counter and, unless handed over, the
        subscription."""
        if self.state is State.CLOSED:
            return
        if self.replay_session_id is not None and self.state not in (State.MERGED, State.STOP_REPLAY):
            with contextlib.suppress(ArchiveError):
                self.archive.stop_replay(self.replay_session_id).poll()
        if self.counter is not None:
            self.counter.close()
        if not self._handed_over:
            self.subscription.close()
        self.state = State.CLOSED

    def __enter__(self) -> ReplayMerge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"ReplayMerge(recording_id={self.recording.recording_id}, state={self.state.name}, "
            f"image_position={self.image_position}, live_position={self.live_position})"
        )
