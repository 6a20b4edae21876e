"""ReplicationSession: one replicate request, run on the archive conductor's duty cycle (docs/archive.md
section 20).

The destination archive is a client of the source archive: it opens a control session on the source's control
channel (its responses come back to the replication channel's host), reads the source recording's descriptor,
subscribes with a multi-destination subscription (``control-mode=manual``, the source recording's session id)
that the conductor records into a new recording or onto the end of an existing one, and asks the source for a
replay onto a destination of that subscription with the source recording's session id and stream id. The
replayed frames therefore carry the source's headers and the copy's segment files are the source's, byte for
byte. With a live destination and a source still recording, a ReplayMerge adds the live destination and stops
the replay once live feeds the image, and the copy goes on recording live.

Signals (RecordingSignalEvent) go to the requesting session: START (new copy) or EXTEND, SYNC (the copy
reached the stopped source's end), MERGE (live feeds the copy), STOP (the copy's recording stopped, at its stop
position). A failure is a ControlResponse ERROR with the request's correlation id, then STOP. A replication
whose copy does not move for the progress timeout while behind the source (a lost link) stops cleanly: the
recorder keeps every frame it received, and asking again with the copy as ``dst_recording_id`` extends it.
"""

from __future__ import annotations

import contextlib
import enum
import struct
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from driver.archive.client.aeron_archive import NULL_LENGTH, NULL_POSITION, AeronArchive
from driver.archive.client.archive_requests import PendingRequest, PolledArchive, PolledConnect
from driver.archive.client.context import ArchiveClientContext
from driver.archive.client.exceptions import ArchiveError
from driver.archive.client.replay_merge import Recording, ReplayMerge, resolve_port, subscription_channel
from driver.archive.codecs import (
    ArchiveErrorCode,
    CloseSessionRequest,
    RecordingSignal,
    RecordingSignalEvent,
    StopReplayRequest,
    encode,
)
from driver.client.exceptions import AeronError
from driver.concurrent.counters import MAX_LABEL_LENGTH, java_ascii
from driver.protocol.channel_uri import ChannelUri

if TYPE_CHECKING:
    from driver.archive.control_session import ControlSession
    from driver.client.aeron import Aeron
    from driver.client.counter import Counter
    from driver.client.subscription import Subscription

REPLICATION_TYPE_ID = 1103
"""Counter of an active replication: value the copy's recorded position; key replicationId i64,
srcRecordingId i64; label ``replication: <id> <src id> <src control channel>``."""
_COUNTER_KEY = struct.Struct("<qq")
RESPONSE_STREAM_ID = 20
UNSET = -2
SESSION_IN_USE = "existing publication has same session id"
RETRY_INTERVAL_NS = 500_000_000
SESSION_IN_USE_TIMEOUT_NS = 30_000_000_000
"""How long a replay refused for a session still in use on the source's driver is asked for again (a publication
lingers 5 s by default after it closes)."""


class State(enum.IntEnum):
    CONNECT = 0
    AWAIT_SESSION = 1
    DESCRIBE = 2
    SUBSCRIBE = 3
    REPLAY = 4
    COPY = 5
    MERGE = 6
    LIVE = 7
    STOPPING = 8
    DONE = 9


# The state table: from each state only these. STOPPING (then DONE) is reachable from everywhere.
TRANSITIONS: dict[State, frozenset[State]] = {
    State.CONNECT: frozenset({State.AWAIT_SESSION}),
    State.AWAIT_SESSION: frozenset({State.DESCRIBE}),
    State.DESCRIBE: frozenset({State.SUBSCRIBE}),
    State.SUBSCRIBE: frozenset({State.REPLAY, State.MERGE}),
    State.REPLAY: frozenset({State.COPY}),
    State.COPY: frozenset(),
    State.MERGE: frozenset({State.LIVE}),
    State.LIVE: frozenset(),
    State.STOPPING: frozenset({State.DONE}),
    State.DONE: frozenset(),
}


class ReplicationHost(Protocol):
    """What a replication asks of the archive conductor."""

    aeron: Aeron

    def replica_subscribe(self, replication: ReplicationSession, channel: str, stream_id: int) -> int: ...

    def replica_subscription(self, registration_id: int) -> Subscription | None: ...

    def replica_close(self, registration_id: int) -> None: ...

    def close_when_ready(self, getter: Callable[[int], Any], registration_id: int) -> None:
        """Close what ``getter(registration_id)`` gives, now or once the driver has answered."""
        ...

    def recorded_position(self, recording_id: int) -> int | None:
        """The rec-pos of an active recording, else None."""
        ...

    def describe(self, recording_id: int) -> Any: ...

    def replication_done(self, replication: ReplicationSession) -> None: ...

    def report_error(self, message: str) -> None: ...


class ReplicationSession:
    def __init__(
        self,
        replication_id: int,
        host: ReplicationHost,
        control_session: ControlSession,
        correlation_id: int,
        *,
        src_recording_id: int,
        dst_recording_id: int,
        src_control_channel: str,
        src_control_stream_id: int,
        live_destination: str,
        replication_channel: str,
        progress_timeout_ns: int,
        message_timeout_ns: int,
        clock_ns: Any = time.monotonic_ns,
    ) -> None:
        self.replication_id = replication_id
        self.host = host
        self.control_session = control_session
        self.correlation_id = correlation_id
        self.src_recording_id = src_recording_id
        self.dst_recording_id = dst_recording_id
        self.extend = dst_recording_id != NULL_POSITION
        self.src_control_channel = src_control_channel
        self.live_destination = live_destination
        self.progress_timeout_ns = progress_timeout_ns
        self.message_timeout_ns = message_timeout_ns
        self.clock_ns = clock_ns
        self.state = State.CONNECT
        self.source: Any = None
        self.start_position = NULL_POSITION
        self.stop_position = NULL_POSITION
        self.target_position = NULL_POSITION
        """Where the copy is complete: the stopped source's stop position (-1 while the source records)."""
        self.counter: Counter | None = None
        self.subscription: Subscription | None = None
        self.recording_started = False
        self.recording_stopped = False
        self.error: str | None = None
        self._archive: AeronArchive | None = None
        self._pending: PendingRequest | None = None
        self._merge: ReplayMerge | None = None
        self._replay_session_id: int | None = None
        self._subscription_registration: int | None = None
        self._progress_position = UNSET  # so the first check starts the clock
        self._retry_replay_ns = 0
        self._retry_until_ns = 0
        self._progress_deadline_ns = 0
        host_name = (
            ChannelUri.parse(replication_channel).params.get("endpoint", "localhost:0").rpartition(":")[0]
        )
        self._host_name = host_name or "localhost"
        self.replay_destination = f"aeron:udp?endpoint={resolve_port(self._host_name + ':0')}"
        self._client_context = ArchiveClientContext.from_sources(
            {
                "control_request_channel": src_control_channel,
                "control_request_stream_id": src_control_stream_id,
                "control_response_channel": f"aeron:udp?endpoint={resolve_port(self._host_name + ':0')}",
                "control_response_stream_id": RESPONSE_STREAM_ID,
                "message_timeout_ns": message_timeout_ns,
            },
            properties={},
            environ={},
        )
        aeron = host.aeron
        self._response_registration = aeron.async_add_subscription(
            self._client_context.control_response_channel, RESPONSE_STREAM_ID
        )
        self._request_registration = aeron.async_add_exclusive_publication(
            self._client_context.concluded_control_request_channel(), src_control_stream_id
        )
        self._counter_registration = aeron.async_add_counter(
            REPLICATION_TYPE_ID,
            _COUNTER_KEY.pack(replication_id, src_recording_id),
            java_ascii(f"replication: {replication_id} {src_recording_id} {src_control_channel}")[
                :MAX_LABEL_LENGTH
            ].decode("ascii"),
        )

    # -- outcome ---------------------------------------------------------------------------------------------

    @property
    def is_done(self) -> bool:
        return self.state is State.DONE

    def _to(self, state: State) -> None:
        if state not in TRANSITIONS[self.state] and state not in (State.STOPPING, State.DONE):
            raise AssertionError(f"no transition {self.state.name} -> {state.name}")
        self.state = state

    def signal(self, signal: RecordingSignal, position: int) -> None:
        if self.control_session.is_active:
            self.control_session.send_message(
                encode(
                    RecordingSignalEvent(
                        self.control_session.control_session_id,
                        self.correlation_id,
                        self.dst_recording_id,
                        self.replication_id,
                        position,
                        signal,
                    )
                )
            )

    def fail(self, message: str, code: int = ArchiveErrorCode.GENERIC) -> None:
        """Stop with an ERROR to the requester (once)."""
        if self.error is None and self.state not in (State.STOPPING, State.DONE):
            self.error = f"replication {self.replication_id} of recording {self.src_recording_id}: {message}"
            if self.control_session.is_active:
                self.control_session.send_error(
                    self.correlation_id, self.error, code
                )  # in order with signals
            self.host.report_error(self.error)
        self.stop()

    def stop(self) -> None:
        """Stop replicating: the copy's recording ends at the last frame received (STOP follows)."""
        if self.state in (State.STOPPING, State.DONE):
            return
        self._to(State.STOPPING)
        archive = self._archive
        if archive is not None and archive.control_session_id is not None:
            replay_session_id = self._replay_session_id
            if self._merge is not None:
                replay_session_id = self._merge.replay_session_id
            with contextlib.suppress(ArchiveError, AeronError):  # best effort: the source may be gone
                if replay_session_id is not None:
                    archive.archive_proxy.try_offer(
                        StopReplayRequest(archive.control_session_id, 0, replay_session_id), 0, "stop_replay"
                    )
        self._close_source()
        if self._subscription_registration is not None:
            self.host.replica_close(self._subscription_registration)
        if not self.recording_started or self.recording_stopped:
            self._finish()  # else the recorder's stop finishes it

    def on_recording(self, recording_id: int) -> None:
        """The conductor made (or extends) the copy's recording from the subscription's image."""
        self.dst_recording_id = recording_id
        self.recording_started = True
        self.signal(RecordingSignal.EXTEND if self.extend else RecordingSignal.START, self.start_position)

    def on_recording_stopped(self, stop_position: int) -> None:
        self.recording_stopped = True
        self.stop_position = stop_position
        if self.state is State.COPY and self.target_position == NULL_POSITION and self.error is None:
            self.signal(RecordingSignal.SYNC, stop_position)  # a live source stopped and the replay followed
        self.stop()
        self._finish()

    def _finish(self) -> None:
        if self.state is State.DONE:
            return
        self.state = State.DONE
        self.signal(RecordingSignal.STOP, self.stop_position)  # the end, however it came
        if self.counter is not None:
            with contextlib.suppress(AeronError):
                self.counter.close()
        elif self._counter_registration is not None:
            self.host.close_when_ready(self.host.aeron.get_counter, self._counter_registration)
        self.host.replication_done(self)

    def close(self) -> None:
        """The archive is closing."""
        self.stop()
        self._finish()

    def _close_source(self) -> None:
        archive, self._archive = self._archive, None
        merge, self._merge = self._merge, None
        if merge is not None and merge.counter is not None:
            merge.counter.close()
        if archive is not None:
            with contextlib.suppress(ArchiveError, AeronError):
                if archive.control_session_id is not None:
                    archive.archive_proxy.try_offer(
                        CloseSessionRequest(archive.control_session_id), 0, "close_session"
                    )
        aeron = self.host.aeron
        self.host.close_when_ready(aeron.get_subscription, self._response_registration)
        self.host.close_when_ready(aeron.get_exclusive_publication, self._request_registration)

    # -- duty cycle ------------------------------------------------------------------------------------------

    def do_work(self) -> int:
        if self.state is State.DONE:
            return 0
        try:
            return self._step()
        except ArchiveError as e:
            self.fail(f"the source archive: {e}")
        except AeronError as e:
            self.fail(str(e))
        return 1

    def _answer(self) -> PendingRequest | None:
        pending = self._pending
        if pending is not None and pending.poll():
            self._pending = None
            return pending
        return None

    def _step(self) -> int:
        state = self.state
        aeron = self.host.aeron
        if self.counter is None and self._counter_registration is not None:
            counter = aeron.get_counter(self._counter_registration)
            if counter is not None:
                self.counter = counter
                self._counter_registration = None
        if state is State.CONNECT:
            subscription = aeron.get_subscription(self._response_registration)
            publication = aeron.get_exclusive_publication(self._request_registration)
            if subscription is None or publication is None:
                return 0
            self._archive = AeronArchive(self._client_context, aeron, False, subscription, publication)
            self._pending = PolledConnect(self._archive)
            self._to(State.AWAIT_SESSION)
            return 1
        if state is State.AWAIT_SESSION:
            answer = self._answer()
            if answer is None:
                return 0
            assert self._archive is not None
            self._archive._open(answer.result)
            self._pending = PolledArchive(self._archive).list_recording(self.src_recording_id)
            self._to(State.DESCRIBE)
            return 1
        if state is State.DESCRIBE:
            answer = self._answer()
            if answer is None:
                return 0
            if not answer.result:
                self.fail(f"unknown recording id {self.src_recording_id} at the source", 5)
                return 1
            return self._subscribe(answer.result[0])
        if state is State.SUBSCRIBE:
            assert self._subscription_registration is not None
            subscription = self.host.replica_subscription(self._subscription_registration)
            if subscription is None:
                return 0
            self.subscription = subscription
            assert self._archive is not None
            archive = PolledArchive(self._archive)
            source = self.source
            if self.live_destination and source.stop_position == NULL_POSITION:
                self._merge = ReplayMerge(
                    subscription,
                    archive,
                    Recording.of(source),
                    replay_destination=self.replay_destination,
                    live_destination=self.live_destination,
                    start_position=self.start_position,
                    counters_reader=self.host.aeron.counters_reader,
                )
                self._to(State.MERGE)
                return 1
            subscription.add_destination(self.replay_destination)
            self._request_replay()
            self._progress_deadline_ns = self.clock_ns() + self.progress_timeout_ns
            self._to(State.REPLAY)
            return 1
        if state is State.REPLAY:
            try:
                answer = self._answer()
            except ArchiveError as e:
                if SESSION_IN_USE not in str(e):
                    raise
                # The source's driver still holds a publication of the recorded session (lingering after the
                # recording stopped): ask again until the progress timeout.
                now_ns = self.clock_ns()
                if not self._retry_until_ns:
                    self._retry_until_ns = now_ns + SESSION_IN_USE_TIMEOUT_NS
                if now_ns > self._retry_until_ns:
                    raise
                self._retry_replay_ns = now_ns + RETRY_INTERVAL_NS
                answer = None
            if answer is None:
                if self._retry_replay_ns and self.clock_ns() > self._retry_replay_ns:
                    self._retry_replay_ns = 0
                    self._request_replay()
                return 0
            self._replay_session_id = answer.result
            self._progress_deadline_ns = self.clock_ns() + self.progress_timeout_ns
            self._to(State.COPY)
            return 1
        if state is State.COPY:
            return self._copy()
        if state is State.MERGE:
            return self._merging()
        if state is State.LIVE:
            self._update_counter()
            return 0
        return 0

    def _request_replay(self) -> None:
        """The replay onto our destination with the source recording's session id and stream id, so its frames
        are the recorded ones byte for byte."""
        assert self._archive is not None
        channel = ChannelUri.parse(self.replay_destination)
        channel.params["session-id"] = str(self.source.session_id)
        self._pending = PolledArchive(self._archive).start_replay(
            self.src_recording_id, self.start_position, NULL_LENGTH, str(channel), self.source.stream_id
        )

    def _subscribe(self, source: Any) -> int:
        self.source = source
        self.target_position = source.stop_position
        self.start_position = source.start_position
        if self.extend:
            dst = self.host.describe(self.dst_recording_id)
            if dst is None:
                self.fail(f"unknown destination recording id {self.dst_recording_id}", 5)
                return 1
            if self.host.recorded_position(self.dst_recording_id) is not None:
                self.fail(f"cannot extend active recording {self.dst_recording_id}", 2)
                return 1
            for name in (
                "start_position",
                "initial_term_id",
                "term_buffer_length",
                "mtu_length",
                "stream_id",
            ):
                if getattr(dst, name) != getattr(source, name):
                    self.fail(
                        f"cannot extend recording {self.dst_recording_id}: its {name} {getattr(dst, name)} is "
                        f"not the source's {getattr(source, name)}",
                        9,
                    )
                    return 1
            self.start_position = dst.stop_position
            if source.stop_position != NULL_POSITION and dst.stop_position >= source.stop_position:
                if dst.stop_position > source.stop_position:
                    self.fail(f"the copy ends at {dst.stop_position}, after the source's end", 9)
                    return 1
                self.signal(RecordingSignal.SYNC, dst.stop_position)
                self.stop_position = dst.stop_position
                self.stop()
                self._finish()
                return 1
        elif source.stop_position == source.start_position:
            self.fail("the source recording is empty")
            return 1
        self._subscription_registration = self.host.replica_subscribe(
            self, subscription_channel(source.session_id), source.stream_id
        )
        self._to(State.SUBSCRIBE)
        return 1

    def _position(self) -> int | None:
        if not self.recording_started:
            return None
        return self.host.recorded_position(self.dst_recording_id)

    def _update_counter(self) -> int | None:
        position = self._position()
        if position is not None and self.counter is not None and not self.counter.closed:
            self.counter.set(position)
        return position

    def _check_progress(self, position: int | None, behind: bool) -> bool:
        """False (and the replication failed) when the copy has not moved for the progress timeout while
        behind the source: the link or the source is gone."""
        now_ns = self.clock_ns()
        current = NULL_POSITION if position is None else position
        if current != self._progress_position or not behind:
            self._progress_position = current
            # Before the copy's image appears the source's replay has its connect timeout: wait that long too.
            timeout_ns = (
                self.progress_timeout_ns
                if position is not None
                else max(self.progress_timeout_ns, self.message_timeout_ns)
            )
            self._progress_deadline_ns = now_ns + timeout_ns
            return True
        archive = self._archive
        if archive is not None:
            error = archive.poll_for_error_response()  # the source's replay failing after its OK
            if error is not None:
                self.fail(f"the source's replay failed: {error.error_message or error}")
                return False
        if now_ns > self._progress_deadline_ns:
            where = f"the copy stopped at {current}" if current != NULL_POSITION else "nothing was copied"
            self.fail(
                f"no progress from the source for {self.progress_timeout_ns / 1e9:g} s, {where}: ask again "
                "to extend it"
            )
            return False
        return True

    def _copy(self) -> int:
        position = self._update_counter()
        target = self.target_position
        if target != NULL_POSITION and position is not None and position >= target:
            self.signal(RecordingSignal.SYNC, position)
            self.stop()  # the recording stops at the source's end; STOP follows from the recorder
            return 1
        self._check_progress(position, True)
        return 0

    def _merging(self) -> int:
        merge = self._merge
        assert merge is not None
        position = self._update_counter()
        work = merge.step()
        if merge.has_failed:
            assert merge.error is not None
            self.fail(str(merge.error))
            return 1
        if merge.is_merged:
            self.signal(RecordingSignal.MERGE, merge.image_position)
            self._merge = None
            if merge.counter is not None:
                merge.counter.close()
            self._close_source()
            self._to(State.LIVE)
            return 1
        live = merge.live_position
        self._check_progress(position, position is None or live == NULL_POSITION or position < live)
        return work
