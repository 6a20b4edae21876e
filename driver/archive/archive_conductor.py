"""ArchiveConductor: the archive's control plane (docs/archive.md sections 2-9).

It subscribes to the control channels, makes a demuxer per request image and a ControlSession per
ConnectRequest, and serves every request: recording subscriptions and the recordings their images start (handed
to the recorder), replays (handed to the replayer), listings, positions and truncation. It runs the archive's
client duty cycle too (the client is in agent mode), so every registration is non-blocking: the conductor keeps
a list of pending registrations and finishes each request when the driver has answered.

Codes and texts are 1.15.1's (docs/archive.md section 12). Where 1.15.1 answers nothing (full catalog, strings
too long, a malformed channel, an unknown template id) the client gets an ERROR naming why; what cannot be
answered at all is counted in the "Archive errors" counter and logged, never raised.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driver.agent.command_queue import CommandQueue
from driver.archive.archive_context import ArchiveContext
from driver.archive.archive_mark_file import ArchiveMarkFile
from driver.archive.catalog import NULL_POSITION, Catalog, CatalogError
from driver.archive.channels import recording_key, strip_channel
from driver.archive.checksums import ChecksumWriter, ReplayChecker, truncate_checksums
from driver.archive.codecs import (
    ArchiveErrorCode,
    BoundedReplayRequest,
    ConnectRequest,
    ExtendedReplayRequest,
    ExtendRecordingRequest,
    FindLastMatchingRecordingRequest,
    ListRecordingRequest,
    ListRecordingsForUriRequest,
    ListRecordingsRequest,
    LookupType,
    PositionLookupRequest,
    PurgeRecordingRequest,
    RecordingPositionRequest,
    ReplayCreditRequest,
    ReplayRequest,
    ReplicateRequest,
    SourceLocation,
    StartRecordingRequest,
    StopPositionRequest,
    StopRecordingRequest,
    StopRecordingSubscriptionRequest,
    StopReplayRequest,
    StopReplicationRequest,
    TruncateRecordingRequest,
)
from driver.archive.control_response_proxy import RecordingEventsProxy, descriptor_message
from driver.archive.control_session import ControlSession
from driver.archive.control_session_demuxer import ControlSessionDemuxer
from driver.archive.list_recordings_session import ListRecordingsSession
from driver.archive.recording_index import (
    LookupError_,
    RecordingIndexWriter,
    SegmentScanner,
    position_at_time,
    position_of_last,
    position_schedule,
    read_index,
)
from driver.archive.recording_session import RecordingSession
from driver.archive.recording_writer import RecordingWriteError, RecordingWriter
from driver.archive.replay_controls import Bound, CounterBound, CreditBound, Pacer, ReplayControls
from driver.archive.replay_session import RecordingSummary, ReplaySession, header_error
from driver.archive.replication_session import ReplicationSession
from driver.archive.segment_file import (
    FRAME_ALIGNMENT,
    SegmentDeleter,
    SegmentReserver,
    recording_files,
    segment_indexes,
    segment_path,
    segment_position,
)
from driver.archive.session_worker_proxy import ReplayerProxy, SessionWorkerProxy
from driver.client.aeron import Aeron
from driver.client.client_conductor_agent import ClientConductorAgent
from driver.client.counter import Counter
from driver.client.exceptions import AeronError
from driver.client.image import Image
from driver.client.publication import ExclusivePublication
from driver.client.subscription import Subscription
from driver.concurrent.counter_types import RECORDING_POSITION_TYPE_ID, SYSTEM_COUNTER_TYPE_ID
from driver.concurrent.counters import MAX_KEY_LENGTH, MAX_LABEL_LENGTH, java_ascii
from driver.protocol.channel_uri import (
    LINGER_PARAM_NAME,
    SPARSE_PARAM_NAME,
    SPY_PREFIX,
    UDP_MEDIA,
    ChannelUri,
    InvalidChannelError,
)
from driver.protocol.publication_params import ParameterError, parse_duration_ns
from driver.util.bit_util import to_int32

log = logging.getLogger("driver.archive")

ERRORS_COUNTER_LABEL = "Archive errors"
NULL_LENGTH = -1
_REC_KEY_HEAD = struct.Struct("<qii")
REC_SOURCE_IDENTITY_OFFSET = _REC_KEY_HEAD.size


def rec_pos_key(recording_id: int, session_id: int, source_identity: str) -> bytes:
    """rec-pos key: recordingId i64 @0, sessionId i32 @8, source identity (length i32 @12, ASCII @16)."""
    source = java_ascii(source_identity)
    return (
        _REC_KEY_HEAD.pack(recording_id, session_id, len(source))
        + source[: MAX_KEY_LENGTH - REC_SOURCE_IDENTITY_OFFSET]
    )


def rec_pos_label(recording_id: int, session_id: int, stream_id: int, stripped_channel: str) -> str:
    label = f"rec-pos: {recording_id} {session_id} {stream_id} {stripped_channel}"
    return java_ascii(label)[:MAX_LABEL_LENGTH].decode("ascii")


@dataclass
class RecordingSubscription:
    """A StartRecording/ExtendRecording subscription, by recording key."""

    key: str
    registration_id: int
    control_session: ControlSession
    correlation_id: int
    stripped_channel: str
    original_channel: str
    extend_recording_id: int | None = None
    subscription: Subscription | None = None
    closed: bool = False
    replication: ReplicationSession | None = None
    """Set for a replication's subscription: its first image is the copy (channels from the source)."""
    has_image: bool = False


@dataclass
class ActiveRecording:
    recording_id: int
    join_position: int
    control_session: ControlSession
    correlation_id: int
    counter: Counter | None = None


@dataclass
class ActiveReplay:
    recording_id: int
    control_session: ControlSession
    correlation_id: int


Pending = Callable[[], bool]
"""A registration waiting for the driver's answer: True once finished (answered, refused, or moot)."""


class ArchiveConductor:
    role_name = "archive-conductor"

    def __init__(
        self,
        ctx: ArchiveContext,
        aeron: Aeron,
        catalog: Catalog,
        mark_file: ArchiveMarkFile,
        commands: CommandQueue,
        recorder_proxy: SessionWorkerProxy,
        replayer_proxy: ReplayerProxy,
        epoch_clock_ms: Callable[[], int],
        client_agent: ClientConductorAgent | None = None,
        error_handler: Callable[[str], None] | None = None,
        segment_reserver: SegmentReserver | None = None,
    ) -> None:
        self.ctx = ctx
        self.segment_reserver = segment_reserver
        self.segment_deleter = SegmentDeleter()
        self.aeron = aeron
        self.catalog = catalog
        self.mark_file = mark_file
        self.archive_dir = Path(ctx.archive_dir)
        self.commands = commands  # from the recorder's and the replayer's ArchiveConductorProxy
        # The only ways to the recorder and the replayer.
        self._recorder_proxy = recorder_proxy
        self._replayer_proxy = replayer_proxy
        self._epoch_clock_ms = epoch_clock_ms
        self._client_agent = client_agent
        self._error_handler = error_handler
        self._cached_ms = epoch_clock_ms()
        self.events = RecordingEventsProxy()
        self._pending: list[Pending] = []
        self._tasks: list[Callable[[], None]] = []
        self._demuxers: list[ControlSessionDemuxer] = []
        self._control_sessions: list[tuple[ControlSession, ControlSessionDemuxer]] = []
        self._listings: list[ListRecordingsSession] = []
        self._subscriptions: dict[str, RecordingSubscription] = {}
        self.recordings: dict[int, ActiveRecording] = {}
        self.replays: dict[int, ActiveReplay] = {}
        self._pending_replays = 0
        self.replications: dict[int, ReplicationSession] = {}
        self._replicas: dict[int, RecordingSubscription] = {}
        self._next_replication_id = 1
        self._next_replay_id = 1
        self._next_control_session_id = random.randint(-(2**31), 2**31 - 1)
        self._errors_counter: Counter | None = None
        self._errors_counter_id: int | None = None
        self.error_count = 0
        self._control_registrations: list[int] = []
        self._events_registration: int | None = None
        self._closed = False

    # -- errors ----------------------------------------------------------------------------------------------------

    def report_error(self, message: str) -> None:
        """An error nobody can be answered about: counted, logged, and given to the error handler."""
        self.error_count += 1
        if self._errors_counter is not None:
            self._errors_counter.increment()
        log.error("archive: %s", message)
        if self._error_handler is not None:
            self._error_handler(message)

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def on_start(self) -> None:
        ctx = self.ctx
        aeron = self.aeron
        control = ChannelUri.parse(ctx.control_channel)
        control.params[SPARSE_PARAM_NAME] = "true" if ctx.control_term_buffer_sparse else "false"
        for channel, stream_id in (
            (str(control), ctx.control_stream_id),
            (ctx.local_control_channel, ctx.local_control_stream_id),
        ):
            registration_id = aeron.async_add_subscription(
                channel, stream_id, on_available_image=self._on_control_image
            )
            self._control_registrations.append(registration_id)
            self._pending.append(self._awaiting_control_subscription(registration_id, channel, stream_id))
        self._events_registration = aeron.async_add_exclusive_publication(
            ctx.recording_events_channel, ctx.recording_events_stream_id
        )
        self._pending.append(self._awaiting_events_publication(self._events_registration))
        self._errors_counter_id = aeron.async_add_counter(SYSTEM_COUNTER_TYPE_ID, b"", ERRORS_COUNTER_LABEL)
        self._pending.append(self._awaiting_errors_counter(self._errors_counter_id))

    def _awaiting_control_subscription(self, registration_id: int, channel: str, stream_id: int) -> Pending:
        def poll() -> bool:
            try:
                return self.aeron.get_subscription(registration_id) is not None
            except AeronError as e:
                self.report_error(
                    f"cannot subscribe to the control channel {channel} stream {stream_id}: {e}"
                )
                return True

        return poll

    def _awaiting_events_publication(self, registration_id: int) -> Pending:
        def poll() -> bool:
            try:
                publication = self.aeron.get_exclusive_publication(registration_id)
            except AeronError as e:
                self.report_error(
                    f"cannot publish recording events on {self.ctx.recording_events_channel}: {e}"
                )
                return True
            if publication is None:
                return False
            self.events.publication = publication
            return True

        return poll

    def _awaiting_errors_counter(self, registration_id: int) -> Pending:
        def poll() -> bool:
            try:
                counter = self.aeron.get_counter(registration_id)
            except AeronError as e:
                log.error("archive: cannot add the %r counter: %s", ERRORS_COUNTER_LABEL, e)
                return True
            if counter is None:
                return False
            counter.set(counter.get() + self.error_count)
            self._errors_counter = counter
            return True

        return poll

    def on_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for session, _ in self._control_sessions:
            session.abort()
            session.do_work(self._cached_ms)
        self._control_sessions.clear()
        for replication in list(self.replications.values()):
            replication.close()
        for recording_subscription in [*self._subscriptions.values(), *self._replicas.values()]:
            self._close_recording_subscription(recording_subscription)
        self._subscriptions.clear()
        self._replicas.clear()
        for registration_id in self._control_registrations:
            self._release(self._get_quietly(self.aeron.get_subscription, registration_id))
        if self.events.publication is not None:
            self.events.publication.close()
        for recording in self.recordings.values():
            self._release(recording.counter)
        self.segment_deleter.close()
        if self._errors_counter is not None:
            self._errors_counter.close()

    @staticmethod
    def _get_quietly(getter: Callable[[int], Any], registration_id: int) -> Any:
        try:
            return getter(registration_id)
        except AeronError:
            return None

    @staticmethod
    def _release(resource: Any) -> None:
        if resource is not None:
            try:
                resource.close()
            except AeronError as e:
                log.debug("archive: closing %r: %s", resource, e)

    # -- duty cycle ------------------------------------------------------------------------------------------------

    def do_work(self) -> int:
        now_ms = self._epoch_clock_ms()
        work = 0
        if now_ms != self._cached_ms:
            self._cached_ms = now_ms
            self.mark_file.update_activity_timestamp(now_ms)
        # Commands that did not fit the recorder's or replayer's queue go first, in order, as room frees.
        work += self._recorder_proxy.flush() + self._replayer_proxy.flush()
        if self._client_agent is not None:
            work += self._client_agent.do_work()
        if self._pending:
            still = [poll for poll in self._pending if not poll()]
            work += len(self._pending) - len(still)
            self._pending = still
        while self._tasks:
            tasks, self._tasks = self._tasks, []
            for task in tasks:
                task()
                work += 1
        if self.commands:
            work += self.commands.drain(self)
        if self._demuxers:
            for demuxer in self._demuxers:
                work += demuxer.do_work()
            self._demuxers = [d for d in self._demuxers if not d.is_done]
        if self._control_sessions:
            for session, _ in self._control_sessions:
                work += session.do_work(now_ms)
            done = [(s, d) for s, d in self._control_sessions if s.is_done]
            if done:
                for session, demuxer in done:
                    demuxer.remove(session)
                    self._end_replays_of(session)
                self._control_sessions = [(s, d) for s, d in self._control_sessions if not s.is_done]
        if self.replications:
            for replication in list(self.replications.values()):
                work += replication.do_work()
        if self._listings:
            for listing in self._listings:
                work += listing.do_work()
                if listing.is_done and listing.control_session.active_listing is listing:
                    listing.control_session.active_listing = None
            self._listings = [
                listing
                for listing in self._listings
                if not (listing.is_done or listing.control_session.is_done)
            ]
        return work

    def _end_replays_of(self, session: ControlSession) -> None:
        """A closed control session's replays are stopped: nobody is left to stop them or hear how they end."""
        for replay_session_id, replay in self.replays.items():
            if replay.control_session is session:
                self._replayer_proxy.abort_session(replay_session_id)

    def is_dormant(self) -> bool:
        """No control session, request, replay or recording in flight: nothing to do until a client comes."""
        return not (
            self._pending
            or self._tasks
            or self._demuxers
            or self._control_sessions
            or self._listings
            or self.recordings
            or self.replays
            or self.replications
            or self._pending_replays
            or self.commands
            or self._recorder_proxy.backlog
            or self._replayer_proxy.backlog
        )

    def _on_control_image(self, image: Image) -> None:
        self._demuxers.append(ControlSessionDemuxer(image, self))

    # -- control sessions ------------------------------------------------------------------------------------------

    def new_control_session(
        self, request: ConnectRequest, demuxer: ControlSessionDemuxer
    ) -> ControlSession | None:
        ctx = self.ctx
        try:
            uri = ChannelUri.parse(request.response_channel)
            channel = strip_channel(
                uri,
                sparse=ctx.control_term_buffer_sparse,
                term_length=ctx.control_term_buffer_length,
                mtu=ctx.control_mtu_length,
            )
        except (InvalidChannelError, ValueError) as e:
            self.report_error(f"connect request {request.correlation_id}: invalid response channel: {e}")
            return None
        registration_id = self.aeron.async_add_exclusive_publication(channel, request.response_stream_id)
        session_id = self._next_control_session_id
        self._next_control_session_id += 1
        session = ControlSession(
            session_id,
            request.correlation_id,
            self.aeron,
            registration_id,
            self._cached_ms,
            ctx.connect_timeout_ms,
            self.report_error,
        )
        self._control_sessions.append((session, demuxer))
        return session

    def on_request(self, session: ControlSession, request: Any) -> None:
        handler = self._HANDLERS.get(type(request))
        if handler is None:
            session.send_error(request.correlation_id, f"{type(request).__name__} is not a control request")
            return
        try:
            handler(self, session, request)
        except Exception as e:  # a bug of ours must not stop the archive: the client and the log hear of it
            log.exception("archive: %s failed", type(request).__name__)
            self.report_error(f"{type(request).__name__} failed: {e!r}")
            try:
                session.send_error(
                    getattr(request, "correlation_id", 0), f"{type(request).__name__} failed: {e}"
                )
            except Exception:
                log.exception("archive: the error answer to %s failed too", type(request).__name__)

    # -- recording -------------------------------------------------------------------------------------------------

    def _recording_channel(
        self, channel: str, source_location: int, udp: bool
    ) -> tuple[ChannelUri, str, str]:
        uri = ChannelUri.parse(channel)
        stripped = strip_channel(uri)
        subscribe = SPY_PREFIX + stripped if udp and source_location == SourceLocation.LOCAL else stripped
        return uri, stripped, subscribe

    def _on_start_recording(self, session: ControlSession, request: StartRecordingRequest) -> None:
        correlation_id = request.correlation_id
        limit = self.ctx.max_concurrent_recordings
        if len(self.recordings) >= limit:
            session.send_error(
                correlation_id, f"max concurrent recordings reached {limit}", ArchiveErrorCode.MAX_RECORDINGS
            )
            return
        self._subscribe_for_recording(
            session, correlation_id, request.stream_id, request.channel, request.source_location, None
        )

    def _subscribe_for_recording(
        self,
        session: ControlSession,
        correlation_id: int,
        stream_id: int,
        channel: str,
        source_location: int,
        extend_recording_id: int | None,
    ) -> None:
        try:
            uri = ChannelUri.parse(channel)
        except InvalidChannelError as e:
            session.send_error(correlation_id, str(e))
            return
        # 1.15.1's extend chooses the spy by the text "udp" anywhere in the channel; the media is what counts.
        _, stripped, subscribe = self._recording_channel(channel, source_location, uri.media == UDP_MEDIA)
        key = recording_key(stream_id, uri)
        if key in self._subscriptions:
            session.send_error(
                correlation_id,
                f"recording exists for streamId={stream_id} channel={channel}",
                ArchiveErrorCode.ACTIVE_SUBSCRIPTION,
            )
            return
        holder: list[RecordingSubscription] = []

        def on_image(image: Image) -> None:
            self._tasks.append(lambda: self._on_recording_image(holder[0], image))

        registration_id = self.aeron.async_add_subscription(subscribe, stream_id, on_available_image=on_image)
        recording_subscription = RecordingSubscription(
            key, registration_id, session, correlation_id, stripped, channel, extend_recording_id
        )
        holder.append(recording_subscription)
        self._subscriptions[key] = recording_subscription

        def poll() -> bool:
            try:
                subscription = self.aeron.get_subscription(registration_id)
            except AeronError as e:
                if self._subscriptions.get(key) is recording_subscription:
                    del self._subscriptions[key]
                session.send_error(correlation_id, f"cannot subscribe to {subscribe} stream {stream_id}: {e}")
                return True
            if subscription is None:
                return False
            recording_subscription.subscription = subscription
            if recording_subscription.closed:
                subscription.close()
            else:
                session.send_ok(correlation_id, registration_id)
            return True

        self._pending.append(poll)

    def _close_recording_subscription(self, recording_subscription: RecordingSubscription) -> None:
        recording_subscription.closed = True
        if recording_subscription.subscription is not None:
            recording_subscription.subscription.close()

    def _on_recording_image(self, recording_subscription: RecordingSubscription, image: Image) -> None:
        if image.is_closed:
            return
        replication = recording_subscription.replication
        if replication is not None:
            # One copy per replication: a later image of the session (the link came back after the image
            # timed out) would join at another position.
            if recording_subscription.has_image or recording_subscription.closed:
                return
            recording_subscription.has_image = True
        session = recording_subscription.control_session
        correlation_id = recording_subscription.correlation_id
        limit = self.ctx.max_concurrent_recordings
        original = recording_subscription.original_channel
        if len(self.recordings) >= limit:
            message = f"max concurrent recordings reached, cannot record {image.stream_id}:{original}"
            session.attempt_error(correlation_id, message, ArchiveErrorCode.MAX_RECORDINGS)
            self.report_error(message)
            return
        recording_id = recording_subscription.extend_recording_id
        if recording_id is not None:
            if not self._check_extension(recording_id, image, session, correlation_id):
                if replication is not None:
                    replication.stop()  # the requester heard why (same correlation id)
                return
            self.catalog.extend_recording(recording_id, session.control_session_id, correlation_id)
        else:
            source = replication.source if replication is not None else None
            try:
                recording_id = self.catalog.add_new_recording(
                    start_position=image.join_position,
                    start_timestamp=self._cached_ms,
                    initial_term_id=image.initial_term_id,
                    segment_file_length=max(self.ctx.segment_file_length, image.term_length),
                    term_buffer_length=image.term_length,
                    mtu_length=image.mtu_length,
                    session_id=image.session_id,
                    stream_id=image.stream_id,
                    stripped_channel=source.stripped_channel
                    if source
                    else recording_subscription.stripped_channel,
                    original_channel=source.original_channel if source else original,
                    source_identity=source.source_identity if source else image.source_identity,
                )
            except CatalogError as e:
                message = f"cannot record {image.stream_id}:{original}: {e}"
                if replication is not None:
                    replication.fail(message)
                    return
                session.attempt_error(correlation_id, message)
                self.report_error(message)
                return
        self._begin_recording(recording_id, image, recording_subscription)
        if replication is not None:
            replication.on_recording(recording_id)

    def _check_extension(
        self, recording_id: int, image: Image, session: ControlSession, correlation_id: int
    ) -> bool:
        def refuse(message: str, code: int) -> bool:
            session.attempt_error(correlation_id, message, code)
            self.report_error(message)
            return False

        if recording_id in self.recordings:
            return refuse(
                f"cannot extend active recording for {recording_id}", ArchiveErrorCode.ACTIVE_RECORDING
            )
        descriptor = self.catalog.descriptor(recording_id)
        if descriptor is None:
            return refuse(f"unknown recording id {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING)
        checks = (
            ("joinPosition", image.join_position, "stopPosition", descriptor.stop_position),
            ("termBufferLength", image.term_length, "termBufferLength", descriptor.term_buffer_length),
            ("mtuLength", image.mtu_length, "mtuLength", descriptor.mtu_length),
            # 1.15.1 checks only the three above; frames of another stream or initial term id could not be
            # replayed from the recording's files (their headers would not match).
            ("streamId", image.stream_id, "streamId", descriptor.stream_id),
            ("initialTermId", image.initial_term_id, "initialTermId", descriptor.initial_term_id),
        )
        for image_name, image_value, recording_name, recording_value in checks:
            if image_value != recording_value:
                return refuse(
                    f"cannot extend recording {recording_id} image {image_name} {image_value} not equal to "
                    f"recording {recording_name} {recording_value}",
                    ArchiveErrorCode.INVALID_EXTENSION,
                )
        return True

    def _begin_recording(
        self, recording_id: int, image: Image, recording_subscription: RecordingSubscription
    ) -> None:
        session = recording_subscription.control_session
        correlation_id = recording_subscription.correlation_id
        recording = ActiveRecording(recording_id, image.join_position, session, correlation_id)
        self.recordings[recording_id] = recording
        descriptor = self.catalog.descriptor(recording_id)
        assert descriptor is not None
        writer = RecordingWriter(
            self.archive_dir,
            recording_id,
            descriptor.start_position,
            descriptor.term_buffer_length,
            descriptor.segment_file_length,
            self.ctx.file_sync_level,
            permissions=self.ctx.file_permissions,
            reserver=self.segment_reserver,
        )
        # The first segment is reserved (posix_fallocate, tens of ms) before rec-pos tells the client the
        # recording has started, not while its first messages wait; a failure is the session's to report.
        with contextlib.suppress(RecordingWriteError):
            writer.init(image.join_position)
        registration_id = self.aeron.async_add_counter(
            RECORDING_POSITION_TYPE_ID,
            rec_pos_key(recording_id, image.session_id, image.source_identity),
            rec_pos_label(
                recording_id, image.session_id, image.stream_id, recording_subscription.stripped_channel
            ),
        )

        def poll() -> bool:
            try:
                counter = self.aeron.get_counter(registration_id)
            except AeronError as e:
                writer.close()
                message = f"recording {recording_id}: cannot add its rec-pos counter: {e}"
                session.attempt_error(correlation_id, message)
                self.report_error(message)
                self.recordings.pop(recording_id, None)
                self.catalog.recording_stopped(recording_id, image.join_position, self._cached_ms)
                return True
            if counter is None:
                return False
            counter.set(image.join_position)
            recording.counter = counter
            recording_session = RecordingSession(
                recording_id, image, counter, writer, self.events, recording_subscription.original_channel
            )
            self._add_index(recording_session, descriptor)
            if self.ctx.record_checksums:
                recording_session.checksums = ChecksumWriter(
                    self.archive_dir, recording_id, self.ctx.file_permissions
                )
                recording_session.use_index()
            self._recorder_proxy.add_session(recording_id, recording_session)
            return True

        self._pending.append(poll)

    def _add_index(self, recording_session: RecordingSession, descriptor: Any) -> None:
        """Give the recording its sidecar index (docs/archive.md section 18); an extension continues the old one,
        rebuilt by a scan when it does not reach the join position."""
        recording_id = recording_session.recording_id
        join = recording_session.join_position
        try:
            if join > descriptor.start_position:
                entries = read_index(self.archive_dir, recording_id)
                if entries is None or len(entries) == 0 or int(entries["position"][-1]) != join:
                    self._scanner(descriptor).rebuild(
                        join, self.ctx.index_interval_bytes, self.ctx.file_permissions
                    )
                    entries = read_index(self.archive_dir, recording_id)
                if entries is not None and len(entries):
                    recording_session.index_count = int(entries["count"][-1])
        except OSError as e:
            self.report_error(f"recording {recording_id}: no sidecar index: {e}")
            return
        recording_session.index = RecordingIndexWriter(
            self.archive_dir,
            recording_id,
            self.ctx.index_interval_bytes,
            self.ctx.index_interval_ns,
            time.time_ns,
            self.ctx.file_permissions,
        )
        recording_session.use_index()

    def _scanner(self, descriptor: Any) -> SegmentScanner:
        return SegmentScanner(
            self.archive_dir,
            descriptor.recording_id,
            descriptor.start_position,
            descriptor.term_buffer_length,
            descriptor.segment_file_length,
        )

    def on_recording_stopped(self, recording_id: int, stop_position: int, error: str | None) -> None:
        """From the recorder: a recording session ended (command, via the ArchiveConductorProxy)."""
        recording = self.recordings.pop(recording_id, None)
        self.catalog.recording_stopped(recording_id, stop_position, self._epoch_clock_ms())
        if recording is not None:
            self._release(recording.counter)
        for replication in list(self.replications.values()):
            if replication.recording_started and replication.dst_recording_id == recording_id:
                replication.on_recording_stopped(stop_position)
        if error is not None:
            message = f"recording {recording_id} stopped at {stop_position}: {error}"
            self.report_error(message)
            if recording is not None and recording.control_session.is_active:
                recording.control_session.attempt_error(recording.correlation_id, message)

    def _on_stop_recording(self, session: ControlSession, request: StopRecordingRequest) -> None:
        try:
            key = recording_key(request.stream_id, ChannelUri.parse(request.channel))
        except InvalidChannelError as e:
            session.send_error(request.correlation_id, str(e))
            return
        recording_subscription = self._subscriptions.pop(key, None)
        if recording_subscription is None:
            session.send_error(
                request.correlation_id,
                f"no recording found for streamId={request.stream_id} channel={request.channel}",
                ArchiveErrorCode.UNKNOWN_SUBSCRIPTION,
            )
            return
        self._close_recording_subscription(recording_subscription)
        session.send_ok(request.correlation_id)

    def _on_stop_recording_subscription(
        self, session: ControlSession, request: StopRecordingSubscriptionRequest
    ) -> None:
        for key, recording_subscription in self._subscriptions.items():
            if recording_subscription.registration_id == request.subscription_id:
                del self._subscriptions[key]
                self._close_recording_subscription(recording_subscription)
                session.send_ok(request.correlation_id)
                return
        session.send_error(
            request.correlation_id,
            f"no recording subscription found for {request.subscription_id}",
            ArchiveErrorCode.UNKNOWN_SUBSCRIPTION,
        )

    def _on_extend_recording(self, session: ControlSession, request: ExtendRecordingRequest) -> None:
        correlation_id = request.correlation_id
        recording_id = request.recording_id
        limit = self.ctx.max_concurrent_recordings
        if len(self.recordings) >= limit:
            session.send_error(
                correlation_id,
                f"max concurrent recordings reached of {limit}",
                ArchiveErrorCode.MAX_RECORDINGS,
            )
            return
        if not self.catalog.has_recording(recording_id):
            session.send_error(
                correlation_id, f"unknown recording id {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING
            )
            return
        if recording_id in self.recordings:
            session.send_error(
                correlation_id,
                f"cannot extend active recording for {recording_id}",
                ArchiveErrorCode.ACTIVE_RECORDING,
            )
            return
        self._subscribe_for_recording(
            session, correlation_id, request.stream_id, request.channel, request.source_location, recording_id
        )

    def _on_recording_position(self, session: ControlSession, request: RecordingPositionRequest) -> None:
        recording = self.recordings.get(request.recording_id)
        if recording is None:
            position = NULL_POSITION
        elif recording.counter is None:
            position = recording.join_position
        else:
            position = recording.counter.get()
        session.send_ok(request.correlation_id, position)

    def _on_stop_position(self, session: ControlSession, request: StopPositionRequest) -> None:
        if self.catalog.has_recording(request.recording_id):
            session.send_ok(request.correlation_id, self.catalog.stop_position(request.recording_id))
        else:
            session.send_error(
                request.correlation_id,
                f"unknown recording {request.recording_id}",
                ArchiveErrorCode.UNKNOWN_RECORDING,
            )

    # -- listings --------------------------------------------------------------------------------------------------

    def _start_listing(
        self, session: ControlSession, correlation_id: int, listing: ListRecordingsSession
    ) -> None:
        if session.active_listing is not None:
            session.send_error(
                correlation_id, "active listing already in progress", ArchiveErrorCode.ACTIVE_LISTING
            )
            return
        if listing.count < 0:  # 1.15.1 answers nothing, so the client waits until its timeout
            session.send_error(correlation_id, f"record count must not be negative: {listing.count}")
            return
        session.active_listing = listing
        self._listings.append(listing)

    def _on_list_recordings(self, session: ControlSession, request: ListRecordingsRequest) -> None:
        listing = ListRecordingsSession(
            session, request.correlation_id, request.from_recording_id, request.record_count, self.catalog
        )
        self._start_listing(session, request.correlation_id, listing)

    def _on_list_recordings_for_uri(
        self, session: ControlSession, request: ListRecordingsForUriRequest
    ) -> None:
        listing = ListRecordingsSession(
            session,
            request.correlation_id,
            request.from_recording_id,
            request.record_count,
            self.catalog,
            request.stream_id,
            request.channel,
        )
        self._start_listing(session, request.correlation_id, listing)

    def _on_list_recording(self, session: ControlSession, request: ListRecordingRequest) -> None:
        if session.active_listing is not None:
            session.send_error(
                request.correlation_id, "active listing already in progress", ArchiveErrorCode.ACTIVE_LISTING
            )
            return
        try:
            descriptor = self.catalog.descriptor(request.recording_id)
        except CatalogError:
            descriptor = None
        if descriptor is None:
            session.send_recording_unknown(request.correlation_id, request.recording_id)
        else:
            session.send_message(
                descriptor_message(descriptor, session.control_session_id, request.correlation_id)
            )

    def _on_find_last_matching(
        self, session: ControlSession, request: FindLastMatchingRecordingRequest
    ) -> None:
        min_id = request.min_recording_id
        if not 0 <= min_id < self.catalog.count_entries:
            session.send_error(
                request.correlation_id,
                f"min recording id outside valid range: {min_id}",
                ArchiveErrorCode.UNKNOWN_RECORDING,
            )
            return
        found = self.catalog.find_last(min_id, request.session_id, request.stream_id, request.channel)
        session.send_ok(request.correlation_id, found)

    # -- replay ----------------------------------------------------------------------------------------------------

    def _summary(self, recording_id: int) -> RecordingSummary:
        d = self.catalog.descriptor(recording_id)
        assert d is not None
        return RecordingSummary(
            recording_id,
            d.start_position,
            d.stop_position,
            d.initial_term_id,
            d.segment_file_length,
            d.term_buffer_length,
            d.mtu_length,
            d.stream_id,
        )

    def _on_replay(self, session: ControlSession, request: ReplayRequest) -> None:
        correlation_id = request.correlation_id
        recording_id = request.recording_id
        position = request.position
        limit = self.ctx.max_concurrent_replays
        if len(self.replays) + self._pending_replays >= limit:
            session.send_error(
                correlation_id, f"max concurrent replays reached {limit}", ArchiveErrorCode.MAX_REPLAYS
            )
            return
        if not self.catalog.has_recording(recording_id):
            session.send_error(
                correlation_id, f"unknown recording id {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING
            )
            return
        summary = self._summary(recording_id)
        replay_position = summary.start_position
        if position != NULL_POSITION:
            error = self._replay_position_error(recording_id, position, summary)
            if error is not None:
                session.send_error(correlation_id, error)
                return
            replay_position = position
        index, _ = segment_position(
            summary.start_position, replay_position, summary.term_buffer_length, summary.segment_file_length
        )
        if not segment_path(self.archive_dir, recording_id, index).exists():
            session.send_error(
                correlation_id, f"initial segment file does not exist for replay recording id {recording_id}"
            )
            return
        try:
            channel = self._replay_channel(request.replay_channel, replay_position, summary)
        except (InvalidChannelError, ParameterError, ValueError) as e:
            session.send_error(correlation_id, f"failed to create replay publication - {e}")
            return
        connect_deadline_ms = self._cached_ms + self.ctx.connect_timeout_ms
        registration_id = self.aeron.async_add_exclusive_publication(channel, request.replay_stream_id)
        self._pending_replays += 1

        def poll() -> bool:
            try:
                publication = self.aeron.get_exclusive_publication(registration_id)
            except AeronError as e:
                self._pending_replays -= 1
                session.send_error(correlation_id, f"failed to create replay publication - {e}")
                return True
            if publication is None:
                return False
            self._pending_replays -= 1
            self._start_replay(session, request, summary, replay_position, publication, connect_deadline_ms)
            return True

        self._pending.append(poll)

    @staticmethod
    def _replay_position_error(recording_id: int, position: int, summary: RecordingSummary) -> str | None:
        if position & (FRAME_ALIGNMENT - 1):
            return (
                f"requested replay start position {position} is not a multiple of FRAME_ALIGNMENT "
                f"({FRAME_ALIGNMENT}) for recording {recording_id}"
            )
        if position < summary.start_position:
            return (
                f"requested replay start position {position}) is less than recording start position "
                f"{summary.start_position} for recording {recording_id}"
            )
        stop = summary.stop_position
        if stop != NULL_POSITION and position >= stop:
            return (
                f"requested replay start position {position} must be less than highest recorded position "
                f"{stop} for recording {recording_id}"
            )
        return None

    def _replay_channel(self, replay_channel: str, position: int, summary: RecordingSummary) -> str:
        uri = ChannelUri.parse(replay_channel)
        linger_text = uri.get(LINGER_PARAM_NAME)
        if linger_text is not None:
            linger_ns = parse_duration_ns(LINGER_PARAM_NAME, linger_text)
            if linger_ns < 0:
                raise ValueError(f"linger={linger_text} must not be negative")
        else:
            linger_ns = self.ctx.replay_linger_timeout_ns
        term_length = summary.term_buffer_length
        # sparse: allocated as the replay writes it, not reserved and faulted in up front (docs/archive.md
        # section 15).
        return strip_channel(
            uri,
            sparse=True,
            mtu=summary.mtu_length,
            term_length=term_length,
            init_term_id=summary.initial_term_id,
            term_id=to_int32(summary.initial_term_id + position // term_length),
            term_offset=position & (term_length - 1),
            linger=linger_ns,
        )

    def _live_position(self, recording_id: int) -> Callable[[], tuple[int, bool]] | None:
        recording = self.recordings.get(recording_id)
        if recording is None:
            return None
        catalog = self.catalog
        counter_id = recording.counter.id if recording.counter is not None else None
        reader = self.aeron.counters_reader
        join_position = recording.join_position

        def live() -> tuple[int, bool]:
            stop = catalog.stop_position(recording_id)
            if stop != NULL_POSITION:
                return stop, True
            if counter_id is None:
                return join_position, False
            return reader.get_counter_value(counter_id), False

        return live

    def _start_replay(
        self,
        session: ControlSession,
        request: ReplayRequest,
        summary: RecordingSummary,
        replay_position: int,
        publication: ExclusivePublication,
        connect_deadline_ms: int,
    ) -> None:
        recording_id = summary.recording_id
        correlation_id = request.correlation_id
        if not session.is_active:  # the client went while the publication was made
            publication.close()
            return
        if not self.catalog.has_recording(recording_id):  # purged while the publication was made
            publication.close()
            session.attempt_error(correlation_id, f"unknown recording id {recording_id}")
            return
        summary = self._summary(recording_id)  # the recording may have stopped while the publication was made
        live = self._live_position(recording_id)
        if live is None:
            max_length = summary.stop_position - replay_position
        else:
            max_length = 2**63 - 1 - replay_position
        length = request.length
        replay_length = max_length if length == NULL_LENGTH else min(length, max_length)
        message = None
        if replay_length < 0:
            message = f"replay recording {recording_id} - length must be positive: {replay_length}"
        elif live is not None:
            current, _ = live()
            if current < replay_position:
                message = (
                    f"replay recording {recording_id} - {replay_position} after current position of {current}"
                )
        if message is not None:
            publication.close()
            session.attempt_error(correlation_id, message)
            return
        try:
            controls = self._replay_controls(request, summary, replay_position)
        except (ValueError, IndexError) as e:
            publication.close()
            session.attempt_error(correlation_id, f"replay recording {recording_id} - {e}")
            return
        replay_session_id = (self._next_replay_id << 32) | (publication.session_id & 0xFFFF_FFFF)
        self._next_replay_id += 1
        replay = ReplaySession(
            replay_session_id,
            correlation_id,
            session.control_session_id,
            summary,
            replay_position,
            replay_position + replay_length,
            publication,
            self.archive_dir,
            connect_deadline_ms,
            live,
            controls,
        )
        if self.ctx.replay_checksums:
            replay.checksums = ReplayChecker(self.archive_dir, summary)
        self.replays[replay_session_id] = ActiveReplay(recording_id, session, correlation_id)
        session.send_ok(correlation_id, replay_session_id)
        self._replayer_proxy.add_session(replay_session_id, replay)

    def _replay_controls(
        self, request: Any, summary: RecordingSummary, replay_position: int
    ) -> ReplayControls | None:
        """The extensions' bounds of a replay (docs/archive.md section 18); ValueError says why they cannot be."""
        if isinstance(request, BoundedReplayRequest):
            reader = self.aeron.counters_reader
            counter_id = request.limit_counter_id
            if not 0 <= counter_id < reader.max_counter_id:
                raise ValueError(f"limit counter id {counter_id} out of range")
            return ReplayControls([CounterBound(reader, counter_id)])
        if not isinstance(request, ExtendedReplayRequest):
            return None
        bounds: list[Bound] = []
        if request.credit_limit != NULL_POSITION:
            bounds.append(CreditBound(request.credit_limit))
        if request.rate_ppm < 0:
            raise ValueError(f"rate must be positive: {request.rate_ppm / 1e6}")
        if request.rate_ppm > 0:
            entries = read_index(self.archive_dir, summary.recording_id)
            if entries is None:
                raise ValueError("recording has no sidecar index with recorded times")
            times, positions = position_schedule(entries)
            max_gap = None if request.max_idle_gap_ns < 0 else request.max_idle_gap_ns
            bounds.append(Pacer(times, positions, replay_position, request.rate_ppm / 1e6, max_gap))
        if request.repeat < 1:
            raise ValueError(f"repeat must be at least 1: {request.repeat}")
        return ReplayControls(bounds, request.repeat)

    def _on_replay_credit(self, session: ControlSession, request: ReplayCreditRequest) -> None:
        if request.replay_session_id not in self.replays:
            session.send_error(
                request.correlation_id,
                f"replay session not known for {request.replay_session_id}",
                ArchiveErrorCode.UNKNOWN_REPLAY,
            )
            return
        self._replayer_proxy.grant_credit(request.replay_session_id, request.limit_position)
        session.send_ok(request.correlation_id)

    def _on_position_lookup(self, session: ControlSession, request: PositionLookupRequest) -> None:
        correlation_id = request.correlation_id
        recording_id = request.recording_id
        if not self.catalog.has_recording(recording_id):
            session.send_error(
                correlation_id, f"unknown recording id {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING
            )
            return
        descriptor = self.catalog.descriptor(recording_id)
        assert descriptor is not None
        live = self._live_position(recording_id)
        end = live()[0] if live is not None else descriptor.stop_position
        scanner = self._scanner(descriptor)
        entries = read_index(self.archive_dir, recording_id)
        try:
            if entries is None or len(entries) == 0:
                if live is not None:
                    raise LookupError_("the live recording has no sidecar index")
                scanner.rebuild(end, self.ctx.index_interval_bytes, self.ctx.file_permissions)
                entries = read_index(self.archive_dir, recording_id)
                assert entries is not None
            if request.lookup_type is LookupType.TIME:
                position = position_at_time(entries, request.value)
            elif request.lookup_type is LookupType.LAST_COUNT:
                if request.value < 0:
                    raise LookupError_(f"message count must not be negative: {request.value}")
                bound = end if request.bound_position == NULL_POSITION else min(request.bound_position, end)
                position = position_of_last(entries, scanner, request.value, bound)
            else:
                raise LookupError_(f"unknown lookup type {request.lookup_type}")
        except LookupError_ as e:
            session.send_error(correlation_id, f"lookup in recording {recording_id}: {e}")
            return
        # A truncated recording keeps its index: entries past the end name positions no longer recorded.
        session.send_ok(correlation_id, max(min(position, end), descriptor.start_position))

    def on_replay_done(self, replay_session_id: int, error: str | None) -> None:
        """From the replayer: a replay session ended (command, via the ArchiveConductorProxy)."""
        replay = self.replays.pop(replay_session_id, None)
        if error is not None and replay is not None and replay.control_session.is_active:
            replay.control_session.attempt_error(replay.correlation_id, error)

    def _on_stop_replay(self, session: ControlSession, request: StopReplayRequest) -> None:
        if request.replay_session_id not in self.replays:
            session.send_error(
                request.correlation_id,
                f"replay session not known for {request.replay_session_id}",
                ArchiveErrorCode.UNKNOWN_REPLAY,
            )
            return
        self._replayer_proxy.abort_session(request.replay_session_id)
        session.send_ok(request.correlation_id)

    # -- truncate --------------------------------------------------------------------------------------------------

    # -- replication (docs/archive.md section 20) -------------------------------------------------------------

    def _on_replicate(self, session: ControlSession, request: ReplicateRequest) -> None:
        correlation_id = request.correlation_id
        try:
            ChannelUri.parse(request.src_control_channel)
            if request.live_destination:
                live = ChannelUri.parse(request.live_destination)
                if live.media != UDP_MEDIA or live.get("endpoint") is None:
                    raise ValueError(
                        f"live destination must be aeron:udp?endpoint=host:port, got {request.live_destination}"
                    )
        except (InvalidChannelError, ValueError) as e:
            session.send_error(correlation_id, f"replicate: {e}")
            return
        dst = request.dst_recording_id
        if dst != NULL_POSITION:
            if not self.catalog.has_recording(dst):
                session.send_error(
                    correlation_id, f"unknown recording id {dst}", ArchiveErrorCode.UNKNOWN_RECORDING
                )
                return
            if dst in self.recordings or any(r.dst_recording_id == dst for r in self.replications.values()):
                session.send_error(
                    correlation_id, f"cannot extend active recording {dst}", ArchiveErrorCode.ACTIVE_RECORDING
                )
                return
        limit = self.ctx.max_concurrent_recordings
        if len(self.recordings) + len(self.replications) >= limit:
            session.send_error(
                correlation_id, f"max concurrent recordings reached {limit}", ArchiveErrorCode.MAX_RECORDINGS
            )
            return
        replication_id = self._next_replication_id
        self._next_replication_id += 1
        try:
            replication = ReplicationSession(
                replication_id,
                self,
                session,
                correlation_id,
                src_recording_id=request.src_recording_id,
                dst_recording_id=dst,
                src_control_channel=request.src_control_channel,
                src_control_stream_id=request.src_control_stream_id,
                live_destination=request.live_destination,
                replication_channel=self.ctx.replication_channel,
                progress_timeout_ns=self.ctx.replication_progress_timeout_ns,
                message_timeout_ns=self.ctx.connect_timeout_ns,
            )
        except (OSError, ValueError, AeronError) as e:
            session.send_error(correlation_id, f"replicate: {e}")
            return
        self.replications[replication_id] = replication
        session.send_ok(correlation_id, replication_id)

    def _on_stop_replication(self, session: ControlSession, request: StopReplicationRequest) -> None:
        replication = self.replications.get(request.replication_id)
        if replication is None:
            session.send_error(
                request.correlation_id,
                f"unknown replication id {request.replication_id}",
                ArchiveErrorCode.GENERIC,
            )
            return
        replication.stop()
        session.send_ok(request.correlation_id)

    def replica_subscribe(self, replication: ReplicationSession, channel: str, stream_id: int) -> int:
        """The copy's subscription: recorded like an ExtendRecording's (or a new recording's), first image only."""
        holder: list[RecordingSubscription] = []

        def on_image(image: Image) -> None:
            self._tasks.append(lambda: self._on_recording_image(holder[0], image))

        registration_id = self.aeron.async_add_subscription(channel, stream_id, on_available_image=on_image)
        extend = replication.dst_recording_id if replication.extend else None
        replica = RecordingSubscription(
            f"replication:{replication.replication_id}",
            registration_id,
            replication.control_session,
            replication.correlation_id,
            channel,
            channel,
            extend,
            replication=replication,
        )
        holder.append(replica)
        self._replicas[registration_id] = replica
        return registration_id

    def replica_subscription(self, registration_id: int) -> Subscription | None:
        replica = self._replicas.get(registration_id)
        if replica is None:
            return None
        if replica.subscription is None:
            replica.subscription = self.aeron.get_subscription(registration_id)
        return replica.subscription

    def replica_close(self, registration_id: int) -> None:
        replica = self._replicas.pop(registration_id, None)
        if replica is None:
            return
        if replica.subscription is None:
            replica.closed = True
            self.close_when_ready(self.aeron.get_subscription, registration_id)
            return
        self._close_recording_subscription(replica)

    def close_when_ready(self, getter: Callable[[int], Any], registration_id: int) -> None:
        def close() -> bool:
            try:
                resource = getter(registration_id)
            except AeronError:
                return True  # refused: nothing to close
            if resource is None:
                return False
            self._release(resource)
            return True

        if not close():
            self._pending.append(close)

    def recorded_position(self, recording_id: int) -> int | None:
        recording = self.recordings.get(recording_id)
        if recording is None:
            return None
        return recording.join_position if recording.counter is None else recording.counter.get()

    def describe(self, recording_id: int) -> Any:
        return self.catalog.descriptor(recording_id)

    def replication_done(self, replication: ReplicationSession) -> None:
        self.replications.pop(replication.replication_id, None)

    def _on_truncate(self, session: ControlSession, request: TruncateRecordingRequest) -> None:
        correlation_id = request.correlation_id
        recording_id = request.recording_id
        position = request.position
        if not self.catalog.has_recording(recording_id):
            session.send_error(
                correlation_id, f"unknown recording {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING
            )
            return
        if any(replay.recording_id == recording_id for replay in self.replays.values()):
            session.send_error(
                correlation_id,
                f"cannot truncate recording with active replay {recording_id}",
                ArchiveErrorCode.ACTIVE_RECORDING,
            )
            return
        summary = self._summary(recording_id)
        stop = summary.stop_position
        if stop == NULL_POSITION or recording_id in self.recordings:
            session.send_error(
                correlation_id, "cannot truncate active recording", ArchiveErrorCode.ACTIVE_RECORDING
            )
            return
        if position < summary.start_position or position > stop or position & (FRAME_ALIGNMENT - 1):
            session.send_error(correlation_id, f"invalid position {position}")
            return
        if position == stop:
            session.send_ok(correlation_id)
            return
        term_length = summary.term_buffer_length
        segment_length = summary.segment_file_length
        index, offset = segment_position(summary.start_position, position, term_length, segment_length)
        if position > summary.start_position and position & (term_length - 1):
            error = header_error(self.archive_dir, summary, position)
            if error is not None:
                session.send_error(correlation_id, error)
                return
        path = segment_path(self.archive_dir, recording_id, index)
        try:
            if offset == 0:
                path.unlink(missing_ok=True)
            elif path.exists():
                # Keep what the segment holds before the position; the file keeps its length (sparse).
                os.truncate(path, offset)
                os.truncate(path, segment_length)
        except OSError as e:
            session.send_error(correlation_id, f"failed to truncate {path}: {e.strerror or e}")
            return
        for later in segment_indexes(self.archive_dir, recording_id):
            if later > index:
                later_path = segment_path(self.archive_dir, recording_id, later)
                try:
                    later_path.unlink()
                except OSError:
                    session.send_error(correlation_id, f"failed to delete {later_path}")
                    return
        truncate_checksums(self.archive_dir, recording_id, position, summary)
        self.catalog.recording_stopped(recording_id, position)
        session.send_ok(correlation_id)

    # -- purge (docs/archive.md section 19) -------------------------------------------------------------------------

    def _on_purge(self, session: ControlSession, request: PurgeRecordingRequest) -> None:
        """The entry is marked invalid as 1.15.1 marks one (so listings, find-last and replays of 1.15.1's archive
        and ours skip it), then the files go on the deleter's thread. OK carries how many files are to be
        deleted."""
        correlation_id = request.correlation_id
        recording_id = request.recording_id
        if not self.catalog.has_recording(recording_id):
            session.send_error(
                correlation_id, f"unknown recording id {recording_id}", ArchiveErrorCode.UNKNOWN_RECORDING
            )
            return
        if any(replay.recording_id == recording_id for replay in self.replays.values()):
            session.send_error(
                correlation_id,
                f"cannot purge recording with active replay {recording_id}",
                ArchiveErrorCode.ACTIVE_RECORDING,
            )
            return
        if recording_id in self.recordings or self.catalog.stop_position(recording_id) == NULL_POSITION:
            session.send_error(
                correlation_id,
                f"cannot purge active recording {recording_id}",
                ArchiveErrorCode.ACTIVE_RECORDING,
            )
            return
        self.catalog.invalidate(recording_id)
        try:
            files = recording_files(self.archive_dir, recording_id)
        except OSError as e:
            session.send_error(correlation_id, f"cannot list the files of recording {recording_id}: {e}")
            return
        future = self.segment_deleter.submit(files)

        def poll() -> bool:
            if not future.done():
                return False
            for error in future.result():
                self.report_error(f"purge of recording {recording_id}: {error}")
            return True

        self._pending.append(poll)
        session.send_ok(correlation_id, len(files))

    _HANDLERS: dict[type, Callable[[ArchiveConductor, ControlSession, Any], None]] = {
        StartRecordingRequest: _on_start_recording,
        StopRecordingRequest: _on_stop_recording,
        StopRecordingSubscriptionRequest: _on_stop_recording_subscription,
        ExtendRecordingRequest: _on_extend_recording,
        RecordingPositionRequest: _on_recording_position,
        StopPositionRequest: _on_stop_position,
        ListRecordingsRequest: _on_list_recordings,
        ListRecordingsForUriRequest: _on_list_recordings_for_uri,
        ListRecordingRequest: _on_list_recording,
        FindLastMatchingRecordingRequest: _on_find_last_matching,
        ReplayRequest: _on_replay,
        BoundedReplayRequest: _on_replay,
        ExtendedReplayRequest: _on_replay,
        ReplayCreditRequest: _on_replay_credit,
        PositionLookupRequest: _on_position_lookup,
        StopReplayRequest: _on_stop_replay,
        TruncateRecordingRequest: _on_truncate,
        ReplicateRequest: _on_replicate,
        StopReplicationRequest: _on_stop_replication,
        PurgeRecordingRequest: _on_purge,
    }
