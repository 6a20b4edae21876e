"""AeronArchive: a control session with an archive, as Java's ``io.aeron.archive.client.AeronArchive``
(docs/archive.md sections 2-9).

Every operation is one exchange: offer the request on the exclusive request publication (retried until the
message timeout), then poll the response stream until the answer with the request's correlation id arrives
(the timeout starts again once the request is sent, and again with each descriptor a listing receives).
Blocking methods drive that with short sleeps; the ``*_async`` methods await instead and never block the
loop. Several ``*_async`` operations of one client may be in flight at once: answers are sorted by
correlation id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Callable
from typing import Any

from driver.archive.client.archive_proxy import ArchiveProxy
from driver.archive.client.catch_up import Resume
from driver.archive.client.context import ArchiveClientContext
from driver.archive.client.control_response_poller import ControlResponsePoller
from driver.archive.client.exceptions import ArchiveError, ArchiveErrorCode
from driver.archive.client.exchange import ConnectExchange, DescriptorConsumer, Exchange, ListingExchange
from driver.archive.client.replay_extensions import ReplayExtensions
from driver.archive.client.replication import Replication
from driver.archive.codecs import (
    CloseSessionRequest,
    ConnectRequest,
    ExtendRecordingRequest,
    FindLastMatchingRecordingRequest,
    ListRecordingRequest,
    ListRecordingsForUriRequest,
    ListRecordingsRequest,
    PurgeRecordingRequest,
    RecordingDescriptor,
    RecordingPositionRequest,
    ReplayRequest,
    SourceLocation,
    StartRecordingRequest,
    StopPositionRequest,
    StopRecordingRequest,
    StopRecordingSubscriptionRequest,
    StopReplayRequest,
    TruncateRecordingRequest,
)
from driver.client import Aeron, ExclusivePublication, Subscription
from driver.client.aio import Message
from driver.protocol.channel_uri import SESSION_ID_PARAM_NAME, ChannelUri
from driver.util.bit_util import to_int32

NULL_POSITION = -1
NULL_LENGTH = -1
NULL_RECORDING_ID = -1
CLOSE_ATTEMPTS = 3
IDLE_MIN_S = 0.00005
IDLE_MAX_S = 0.001


def replay_channel_for_session(replay_channel: str, replay_session_id: int) -> str:
    """The replay channel with ``session-id`` set to the replay publication's session: the low 32 bits of the
    replay session id (docs/archive.md section 8)."""
    uri = ChannelUri.parse(replay_channel)
    uri.params[SESSION_ID_PARAM_NAME] = str(to_int32(replay_session_id))
    return str(uri)


class AeronArchive(ReplayExtensions, Replication):
    """A client of an Aeron 1.15.1 archive. Make one with ``connect()`` (or ``await connect_async()``);
    ``close()`` ends the control session (CloseSessionRequest) and frees what the client made."""

    def __init__(
        self,
        context: ArchiveClientContext,
        aeron: Aeron,
        owns_aeron: bool,
        subscription: Subscription,
        publication: ExclusivePublication,
    ) -> None:
        self.context = context
        self.aeron = aeron
        self._owns_aeron = owns_aeron
        self.archive_proxy = ArchiveProxy(publication)
        self.control_response_poller = ControlResponsePoller(
            subscription, on_unclaimed_error=context.error_handler
        )
        self.control_session_id: int | None = None
        self._timeout_ns = context.message_timeout_ns
        self._agent_mode = aeron.conductor_agent_invoker is not None
        self.is_closed = False

    # -- connecting ------------------------------------------------------------------------------------------

    @staticmethod
    def _context(context: ArchiveClientContext | None, settings: dict[str, Any]) -> ArchiveClientContext:
        if context is None:
            return ArchiveClientContext.from_sources(settings)
        return context.replace(**settings)

    @classmethod
    def connect(
        cls, aeron: Aeron | None = None, *, context: ArchiveClientContext | None = None, **settings: Any
    ) -> AeronArchive:
        """Open a control session. ``settings`` are ArchiveClientContext fields (``control_request_channel=``,
        ``message_timeout_ns=``, ...) over ``context`` (default: properties-free ``from_sources()``, i.e. the
        environment and defaults). Without ``aeron`` an Aeron client is connected (to ``aeron_dir``) and owned."""
        ctx = cls._context(context, settings)
        owns = aeron is None
        if aeron is None:
            aeron = Aeron.connect(ctx.aeron_dir)
        subscription = publication = None
        try:
            subscription = aeron.add_subscription(
                ctx.control_response_channel, ctx.control_response_stream_id
            )
            publication = aeron.add_exclusive_publication(
                ctx.concluded_control_request_channel(), ctx.control_request_stream_id
            )
            archive = cls(ctx, aeron, owns, subscription, publication)
            archive._open(archive._run(archive._connect_exchange()))
            return archive
        except BaseException:
            cls._abandon(aeron, owns, subscription, publication)
            raise

    @classmethod
    async def connect_async(
        cls, aeron: Aeron | None = None, *, context: ArchiveClientContext | None = None, **settings: Any
    ) -> AeronArchive:
        """``connect`` without blocking the loop (an owned Aeron client connects in a worker thread)."""
        ctx = cls._context(context, settings)
        owns = aeron is None
        if aeron is None:
            aeron = await asyncio.to_thread(Aeron.connect, ctx.aeron_dir)
        subscription = publication = None
        try:
            subscription = await aeron.add_subscription_async(
                ctx.control_response_channel, ctx.control_response_stream_id
            )
            publication = await aeron.add_exclusive_publication_async(
                ctx.concluded_control_request_channel(), ctx.control_request_stream_id
            )
            archive = cls(ctx, aeron, owns, subscription, publication)
            archive._open(await archive._run_async(archive._connect_exchange()))
            return archive
        except BaseException:
            cls._abandon(aeron, owns, subscription, publication)
            raise

    @staticmethod
    def _abandon(
        aeron: Aeron, owns: bool, subscription: Subscription | None, publication: ExclusivePublication | None
    ) -> None:
        for resource in (publication, subscription):
            if resource is not None and not aeron.is_closed:
                resource.close()
        if owns:
            aeron.close()

    def _connect_exchange(self) -> Exchange:
        correlation_id = self.aeron.conductor.next_correlation_id()
        request = ConnectRequest(
            correlation_id, self.context.control_response_stream_id, self.context.control_response_channel
        )
        return ConnectExchange("connect", correlation_id, request)

    def _open(self, control_session_id: int) -> None:
        self.control_session_id = control_session_id
        self.control_response_poller.control_session_id = control_session_id

    # -- running an exchange ---------------------------------------------------------------------------------

    def _exchange(self, what: str, build: Callable[[int, int], tuple[Any, ...]]) -> Exchange:
        return Exchange(what, *self._request(what, build))

    def _request(
        self, what: str, build: Callable[[int, int], tuple[Any, ...]]
    ) -> tuple[int, tuple[Any, ...]]:
        if self.is_closed or self.control_session_id is None:
            raise ArchiveError("the archive client is closed", request=what)
        correlation_id = self.aeron.conductor.next_correlation_id()
        return correlation_id, build(self.control_session_id, correlation_id)

    def _run(self, exchange: Exchange) -> Any:
        if self._agent_mode:
            raise ArchiveError(
                f"{exchange.what} blocks, but the Aeron client's duty cycle runs as an agent on the caller's "
                f"loop: use {exchange.what}_async()",
                correlation_id=exchange.correlation_id,
                request=exchange.what,
            )
        exchange.begin(self.control_response_poller, self._timeout_ns)
        delay = 0.0
        try:
            while not exchange.step(self.archive_proxy, self.control_response_poller, self._timeout_ns):
                if self.context.invoke_aeron_client:
                    self.aeron.do_work()
                delay = min(IDLE_MAX_S, delay * 2 or IDLE_MIN_S)
                time.sleep(delay)
            return exchange.result
        finally:
            self.control_response_poller.forget(exchange.correlation_id)

    async def _run_async(self, exchange: Exchange) -> Any:
        exchange.begin(self.control_response_poller, self._timeout_ns)
        delay = 0.0
        try:
            while not exchange.step(self.archive_proxy, self.control_response_poller, self._timeout_ns):
                if self.context.invoke_aeron_client:
                    self.aeron.do_work()
                delay = min(IDLE_MAX_S, delay * 2 or IDLE_MIN_S)
                await asyncio.sleep(delay)
            return exchange.result
        finally:
            self.control_response_poller.forget(exchange.correlation_id)

    # -- errors the archive reports after an OK --------------------------------------------------------------

    def poll_for_error_response(self) -> ArchiveError | None:
        """An ERROR response no request waits for (a replay or an extension failing after its OK), or None.
        Polls the response stream once; errors seen while waiting for other answers are kept for this."""
        errors = self.control_response_poller.unclaimed_errors
        if not errors:
            self.control_response_poller.poll()
        return errors.popleft() if errors else None

    def check_for_error_response(self) -> None:
        """Raise the next unclaimed ERROR response, if any."""
        error = self.poll_for_error_response()
        if error is not None:
            raise error

    # -- recording -------------------------------------------------------------------------------------------

    def _start_recording(self, channel: str, stream_id: int, source_location: SourceLocation) -> Exchange:
        return self._exchange(
            "start_recording",
            lambda s, c: StartRecordingRequest(s, c, stream_id, source_location, channel),
        )

    def start_recording(
        self, channel: str, stream_id: int, source_location: SourceLocation = SourceLocation.LOCAL
    ) -> int:
        """Record ``channel``/``stream_id`` (LOCAL: a UDP channel through a spy of this driver's publication;
        REMOTE: as a network subscriber). Returns the recording subscription's id."""
        return self._run(self._start_recording(channel, stream_id, source_location))

    async def start_recording_async(
        self, channel: str, stream_id: int, source_location: SourceLocation = SourceLocation.LOCAL
    ) -> int:
        return await self._run_async(self._start_recording(channel, stream_id, source_location))

    def _stop_recording(self, channel: str, stream_id: int) -> Exchange:
        return self._exchange("stop_recording", lambda s, c: StopRecordingRequest(s, c, stream_id, channel))

    def stop_recording(self, channel: str, stream_id: int) -> None:
        """Stop the recording subscription started for this channel and stream."""
        self._run(self._stop_recording(channel, stream_id))

    async def stop_recording_async(self, channel: str, stream_id: int) -> None:
        await self._run_async(self._stop_recording(channel, stream_id))

    def _stop_recording_subscription(self, subscription_id: int) -> Exchange:
        return self._exchange(
            "stop_recording_subscription",
            lambda s, c: StopRecordingSubscriptionRequest(s, c, subscription_id),
        )

    def stop_recording_subscription(self, subscription_id: int) -> None:
        """Stop a recording by the subscription id ``start_recording`` returned."""
        self._run(self._stop_recording_subscription(subscription_id))

    async def stop_recording_subscription_async(self, subscription_id: int) -> None:
        await self._run_async(self._stop_recording_subscription(subscription_id))

    def _extend_recording(
        self, recording_id: int, channel: str, stream_id: int, source_location: SourceLocation
    ) -> Exchange:
        return self._exchange(
            "extend_recording",
            lambda s, c: ExtendRecordingRequest(s, c, recording_id, stream_id, source_location, channel),
        )

    def extend_recording(
        self,
        recording_id: int,
        channel: str,
        stream_id: int,
        source_location: SourceLocation = SourceLocation.LOCAL,
    ) -> int:
        """Append to a stopped recording what an image joining at its stop position brings (same term length
        and mtu); returns the recording subscription's id."""
        return self._run(self._extend_recording(recording_id, channel, stream_id, source_location))

    async def extend_recording_async(
        self,
        recording_id: int,
        channel: str,
        stream_id: int,
        source_location: SourceLocation = SourceLocation.LOCAL,
    ) -> int:
        return await self._run_async(
            self._extend_recording(recording_id, channel, stream_id, source_location)
        )

    # -- replay ----------------------------------------------------------------------------------------------

    def _start_replay(
        self, recording_id: int, position: int, length: int, replay_channel: str, replay_stream_id: int
    ) -> Exchange:
        return self._exchange(
            "start_replay",
            lambda s, c: ReplayRequest(
                s, c, recording_id, position, length, replay_stream_id, replay_channel
            ),
        )

    def start_replay(
        self, recording_id: int, position: int, length: int, replay_channel: str, replay_stream_id: int
    ) -> int:
        """Replay ``length`` bytes (NULL_LENGTH: to the end, following a live recording) from ``position``
        (NULL_POSITION: the start) onto ``replay_channel``; returns the replay session id. Subscribe with
        ``replay_channel_for_session(replay_channel, id)``, or use ``replay()``."""
        return self._run(self._start_replay(recording_id, position, length, replay_channel, replay_stream_id))

    async def start_replay_async(
        self, recording_id: int, position: int, length: int, replay_channel: str, replay_stream_id: int
    ) -> int:
        return await self._run_async(
            self._start_replay(recording_id, position, length, replay_channel, replay_stream_id)
        )

    def replay(
        self,
        recording_id: int,
        position: int = NULL_POSITION,
        length: int = NULL_LENGTH,
        replay_channel: str = "",
        replay_stream_id: int = 0,
        *,
        from_time: int | None = None,
    ) -> Subscription:
        """Start a replay and subscribe to it: a Subscription on ``replay_channel`` with
        ``session-id=(int)replaySessionId``, as Java's ``AeronArchive.replay``. With ``from_time`` (epoch ns)
        the replay starts at the first message recorded at or after it (docs/archive.md section 18)."""
        if not replay_channel:
            raise ValueError("replay needs a replay_channel")
        if from_time is not None:
            position = self.lookup_position_by_time(recording_id, from_time)
        session_id = self.start_replay(recording_id, position, length, replay_channel, replay_stream_id)
        return self.aeron.add_subscription(
            replay_channel_for_session(replay_channel, session_id), replay_stream_id
        )

    async def replay_async(
        self, recording_id: int, position: int, length: int, replay_channel: str, replay_stream_id: int
    ) -> Subscription:
        session_id = await self.start_replay_async(
            recording_id, position, length, replay_channel, replay_stream_id
        )
        return await self.aeron.add_subscription_async(
            replay_channel_for_session(replay_channel, session_id), replay_stream_id
        )

    def _recorded_end(self, recording_id: int) -> int:
        for _ in range(3):
            stop = self.get_stop_position(recording_id)
            if stop != NULL_POSITION:
                return stop
            position = self.get_recording_position(recording_id)
            if position != NULL_POSITION:
                return position
        raise ArchiveError(f"recording {recording_id} has no recorded end", request="replay_last")

    def replay_last(
        self, recording_id: int, n: int, replay_channel: str, replay_stream_id: int
    ) -> Subscription:
        """Replay exactly the last ``n`` messages recorded so far (all of them when there are fewer) and
        subscribe to the replay (docs/archive.md section 18)."""
        if n < 0:
            raise ValueError(f"n must not be negative: {n}")
        end = self._recorded_end(recording_id)
        position = self.lookup_position_of_last(recording_id, n, end)
        return self.replay(recording_id, position, end - position, replay_channel, replay_stream_id)

    def _stop_replay(self, replay_session_id: int) -> Exchange:
        return self._exchange("stop_replay", lambda s, c: StopReplayRequest(s, c, replay_session_id))

    def stop_replay(self, replay_session_id: int) -> None:
        self._run(self._stop_replay(replay_session_id))

    async def stop_replay_async(self, replay_session_id: int) -> None:
        await self._run_async(self._stop_replay(replay_session_id))

    # -- the catalog -----------------------------------------------------------------------------------------

    def _listing(
        self,
        what: str,
        build: Callable[[int, int], tuple[Any, ...]],
        count: int,
        consumer: DescriptorConsumer | None,
    ) -> ListingExchange:
        correlation_id, request = self._request(what, build)
        return ListingExchange(what, correlation_id, request, count, consumer)

    def _list_recordings(
        self, from_id: int, count: int, consumer: DescriptorConsumer | None
    ) -> ListingExchange:
        return self._listing(
            "list_recordings", lambda s, c: ListRecordingsRequest(s, c, from_id, count), count, consumer
        )

    def list_recordings(
        self, from_recording_id: int, record_count: int, consumer: DescriptorConsumer | None = None
    ) -> list[RecordingDescriptor]:
        """Descriptors of the recordings from ``from_recording_id`` on, at most ``record_count``; each also goes
        to ``consumer`` as it arrives."""
        return self._run(self._list_recordings(from_recording_id, record_count, consumer))

    async def list_recordings_async(
        self, from_recording_id: int, record_count: int, consumer: DescriptorConsumer | None = None
    ) -> list[RecordingDescriptor]:
        return await self._run_async(self._list_recordings(from_recording_id, record_count, consumer))

    def _list_recordings_for_uri(
        self,
        from_id: int,
        count: int,
        channel_fragment: str,
        stream_id: int,
        consumer: DescriptorConsumer | None,
    ) -> ListingExchange:
        return self._listing(
            "list_recordings_for_uri",
            lambda s, c: ListRecordingsForUriRequest(s, c, from_id, count, stream_id, channel_fragment),
            count,
            consumer,
        )

    def list_recordings_for_uri(
        self,
        from_recording_id: int,
        record_count: int,
        channel_fragment: str,
        stream_id: int,
        consumer: DescriptorConsumer | None = None,
    ) -> list[RecordingDescriptor]:
        """Descriptors of recordings of ``stream_id`` whose original channel contains ``channel_fragment``."""
        return self._run(
            self._list_recordings_for_uri(
                from_recording_id, record_count, channel_fragment, stream_id, consumer
            )
        )

    async def list_recordings_for_uri_async(
        self,
        from_recording_id: int,
        record_count: int,
        channel_fragment: str,
        stream_id: int,
        consumer: DescriptorConsumer | None = None,
    ) -> list[RecordingDescriptor]:
        return await self._run_async(
            self._list_recordings_for_uri(
                from_recording_id, record_count, channel_fragment, stream_id, consumer
            )
        )

    def _list_recording(self, recording_id: int) -> ListingExchange:
        return self._listing("list_recording", lambda s, c: ListRecordingRequest(s, c, recording_id), 1, None)

    def list_recording(self, recording_id: int) -> RecordingDescriptor | None:
        """The descriptor of one recording, or None when the catalog has no such (valid) recording."""
        found = self._run(self._list_recording(recording_id))
        return found[0] if found else None

    async def list_recording_async(self, recording_id: int) -> RecordingDescriptor | None:
        found = await self._run_async(self._list_recording(recording_id))
        return found[0] if found else None

    def _find_last(self, min_id: int, channel_fragment: str, stream_id: int, session_id: int) -> Exchange:
        return self._exchange(
            "find_last_matching_recording",
            lambda s, c: FindLastMatchingRecordingRequest(
                s, c, min_id, session_id, stream_id, channel_fragment
            ),
        )

    def find_last_matching_recording(
        self, min_recording_id: int, channel_fragment: str, stream_id: int, session_id: int
    ) -> int:
        """The highest recording id >= ``min_recording_id`` of this stream and session whose channel contains
        ``channel_fragment``, or NULL_RECORDING_ID (-1)."""
        return self._run(self._find_last(min_recording_id, channel_fragment, stream_id, session_id))

    async def find_last_matching_recording_async(
        self, min_recording_id: int, channel_fragment: str, stream_id: int, session_id: int
    ) -> int:
        return await self._run_async(
            self._find_last(min_recording_id, channel_fragment, stream_id, session_id)
        )

    def _recording_position(self, recording_id: int) -> Exchange:
        return self._exchange(
            "get_recording_position", lambda s, c: RecordingPositionRequest(s, c, recording_id)
        )

    def get_recording_position(self, recording_id: int) -> int:
        """Where an active recording has got to, or NULL_POSITION (-1) when it is not recording."""
        return self._run(self._recording_position(recording_id))

    async def get_recording_position_async(self, recording_id: int) -> int:
        return await self._run_async(self._recording_position(recording_id))

    def _stop_position(self, recording_id: int) -> Exchange:
        return self._exchange("get_stop_position", lambda s, c: StopPositionRequest(s, c, recording_id))

    def get_stop_position(self, recording_id: int) -> int:
        """The catalog's stop position, NULL_POSITION (-1) while the recording is active."""
        return self._run(self._stop_position(recording_id))

    async def get_stop_position_async(self, recording_id: int) -> int:
        return await self._run_async(self._stop_position(recording_id))

    def _truncate(self, recording_id: int, position: int) -> Exchange:
        return self._exchange(
            "truncate_recording", lambda s, c: TruncateRecordingRequest(s, c, recording_id, position)
        )

    def truncate_recording(self, recording_id: int, position: int) -> None:
        """Cut a stopped recording back to ``position`` (a frame boundary between its start and stop)."""
        self._run(self._truncate(recording_id, position))

    async def truncate_recording_async(self, recording_id: int, position: int) -> None:
        await self._run_async(self._truncate(recording_id, position))

    def _purge(self, recording_id: int) -> Exchange:
        return self._exchange("purge_recording", lambda s, c: PurgeRecordingRequest(s, c, recording_id))

    def purge_recording(self, recording_id: int) -> int:
        """Remove a stopped recording: its catalog entry is marked invalid and its segment and sidecar files are
        deleted by the archive in the background. Returns how many files are being deleted."""
        return self._run(self._purge(recording_id))

    async def purge_recording_async(self, recording_id: int) -> int:
        return await self._run_async(self._purge(recording_id))

    # -- catching up -----------------------------------------------------------------------------------------

    def resume(
        self, channel: str, stream_id: int, from_position: int, **options: Any
    ) -> AsyncIterable[Message]:
        """``async for message in archive.resume(channel, stream_id, from_position)``: a stream on this host
        (IPC or spy) from ``from_position``, its recording's history then live, each message once and in order
        (docs/archive.md section 17, ``driver.archive.client.catch_up.Resume``)."""
        return Resume(self, channel, stream_id, from_position, **options)

    # -- closing ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Send CloseSessionRequest (a few attempts, not waited for: the archive does not answer it), remove
        the request publication and response subscription, and close the Aeron client if it is ours."""
        if self.is_closed:
            return
        self.is_closed = True
        try:
            if self.control_session_id is not None and not self.aeron.is_closed:
                request = CloseSessionRequest(self.control_session_id)
                for _ in range(CLOSE_ATTEMPTS):
                    try:
                        if self.archive_proxy.try_offer(request, -1, "close"):
                            break
                    except ArchiveError:
                        break
        finally:
            self._abandon(
                self.aeron,
                self._owns_aeron,
                self.control_response_poller.subscription,
                self.archive_proxy.publication,
            )

    async def close_async(self) -> None:
        """``close`` without blocking the loop (removals are waited for in a worker thread unless the Aeron
        client runs as an agent on this loop, where they are not waited for)."""
        if self._agent_mode:
            self.close()
        else:
            await asyncio.to_thread(self.close)

    def __enter__(self) -> AeronArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> AeronArchive:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()

    def __repr__(self) -> str:
        return f"AeronArchive(control_session_id={self.control_session_id}, closed={self.is_closed})"


__all__ = [
    "NULL_LENGTH",
    "NULL_POSITION",
    "NULL_RECORDING_ID",
    "AeronArchive",
    "ArchiveErrorCode",
    "replay_channel_for_session",
]
