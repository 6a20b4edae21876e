"""DriverConductor: the agent that serves clients (commands in, events out), keeps their liveness,
owns resources and counters, and heartbeats the to-driver ring buffer so clients know it is alive."""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from driver.agent.command_queue import CommandQueue
from driver.client_command_adapter import (
    COMMAND_DRAIN_LIMIT,
    ClientCommandAdapter,
    CommandDeferred,
    ControlProtocolError,
)
from driver.client_proxy import ClientProxy, max_channel_length
from driver.concurrent.counter_types import (
    CLIENT_HEARTBEAT_TYPE_ID,
    RECEIVE_CHANNEL_STATUS_NAME,
    RECEIVE_CHANNEL_STATUS_TYPE_ID,
    RECEIVE_LOCAL_SOCKET_ADDRESS_NAME,
    SEND_CHANNEL_STATUS_NAME,
    SEND_CHANNEL_STATUS_TYPE_ID,
    SEND_LOCAL_SOCKET_ADDRESS_NAME,
    channel_status_key,
    channel_status_label,
    client_heartbeat_key,
    client_heartbeat_label,
)
from driver.concurrent.counters import AtomicCounter, CountersFullError, CountersManager
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.concurrent.word_watch import WatchVersion, Word, WordWatch
from driver.context import DriverContext
from driver.ipc_publication import IpcPublication
from driver.ipc_publication import State as IpcState
from driver.links import (
    CounterLink,
    IpcSubscriptionLink,
    NetworkSubscriptionLink,
    PublicationLink,
    SpySubscriptionLink,
    SubscriptionLink,
)
from driver.media.network_lookup import resolve_host, system_interfaces
from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
from driver.media.send_channel_endpoint import SendChannelEndpoint
from driver.media.udp_transport import UdpTransport
from driver.native_declaration import Declaration, TakeBack
from driver.network_publication import NetworkPublication
from driver.network_publication import State as NetState
from driver.protocol import control_protocol as cp
from driver.protocol import frames
from driver.protocol.channel_uri import (
    IPC_CHANNEL,
    SOCKET_RCVBUF_PARAM_NAME,
    SOCKET_SNDBUF_PARAM_NAME,
    SPY_PREFIX,
    ChannelUri,
    InvalidChannelError,
    check_publication_stream_id,
    refuse_subscription_only_params,
    refuse_unsupported_params,
)
from driver.protocol.feedback_delay import OptimalMulticastDelayGenerator, StaticDelayGenerator
from driver.protocol.flow_control import FLOW_CONTROLS
from driver.protocol.nak_policy import UnicastNakPolicy
from driver.protocol.publication_params import (
    ExistingPublication,
    PublicationParams,
    SubscriptionParams,
    validate_shared_publication,
)
from driver.protocol.response_channel import (
    ResponseParams,
    refuse_response_params,
    response_params,
    response_publication_error,
)
from driver.protocol.retransmit_handler import RetransmitHandler
from driver.protocol.udp_channel import UdpChannel, destination_address
from driver.protocol.untethered import Action as UntetheredAction
from driver.publication_image import PublicationImage
from driver.publication_image import State as ImageState
from driver.raw_log import IMAGES_DIR, IPC_MEDIA, PUBLICATIONS_DIR, LogFactory, RawLog, log_file_name
from driver.receiver_proxy import ReceiverProxy
from driver.reports.loss_report import LossReport
from driver.sender_proxy import SenderProxy
from driver.status import stream_counters
from driver.status.endpoint_counters import local_socket_address
from driver.status.system_counters import SystemCounterDescriptor, SystemCounters
from driver.termination import termination_validator
from driver.util.bit_util import to_int32
from driver.util.files import FileAllocationError

CHANNEL_STATUS_ERRORED = -1
CORRUPT_GAP_UNBLOCK_TIMEOUT_NS = 100_000_000  # docs/ringbuffers.md section 1.1
NO_ID_ALLOCATED = -1  # channel status id of IPC and spy resources, which have no channel endpoint


def random_int32(rng: random.Random) -> int:
    return rng.randrange(-(2**31), 2**31)


log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_NS = 100_000_000
"""The to-driver consumer heartbeat is written at least this often (and on every timer tick)."""
SWEEP_MOVED_BYTES = 1024
"""Positions that moved this far in total since the last sweep make the next cycle sweep whatever the interval
(aeron.conductor.sweep.interval): a stream keeps its publisher limits and status messages current every cycle."""


def _parse_ipc_uri(channel: str) -> ChannelUri:
    """An ``aeron:ipc``-prefixed channel, as 1.15.1 routes it (docs/uri.md section 1): grammar only, whatever
    follows the prefix (``aeron:ipcx`` is IPC too), and a grammar error is a GENERIC_ERROR as Java's plain
    IllegalArgumentException is."""
    try:
        uri = ChannelUri.parse(channel, allowed_media=None)
    except InvalidChannelError as e:
        raise InvalidChannelError(e.uri, e.reason, error_code=cp.ErrorCode.GENERIC_ERROR) from None
    refuse_unsupported_params(uri)
    refuse_response_params(uri, "IPC")
    return uri


_Endpoint = TypeVar("_Endpoint", SendChannelEndpoint, ReceiveChannelEndpoint)


def _find_existing_endpoint(endpoints: dict[str, _Endpoint], udp_channel: UdpChannel) -> _Endpoint | None:
    """A tagged channel shares the endpoint whose channel has the same tag (InvalidChannelError when it also
    sets an address), else the endpoint of the same canonical form (docs/uri.md section 2, ``tags``)."""
    if udp_channel.has_tag:
        for endpoint in endpoints.values():
            if endpoint.udp_channel.does_tag_match(udp_channel):
                return endpoint
    return endpoints.get(udp_channel.canonical_form)


class StreamRefCounts:
    """The conductor's count of subscriptions per stream (and per stream and session) of one receive
    endpoint: the first one subscribes the receiver, the last one unsubscribes it."""

    __slots__ = ("_counts", "pending_responses")

    def __init__(self) -> None:
        self._counts: dict[tuple[int, int | None], int] = {}
        # Response subscriptions still waiting for their session: they keep the endpoint open, unsubscribed.
        self.pending_responses = 0

    def increment(self, stream_id: int, session_id: int | None) -> int:
        key = (stream_id, session_id)
        count = self._counts[key] = self._counts.get(key, 0) + 1
        return count

    def decrement(self, stream_id: int, session_id: int | None) -> int:
        key = (stream_id, session_id)
        count = self._counts.get(key, 0) - 1
        if count <= 0:
            self._counts.pop(key, None)
            return 0
        self._counts[key] = count
        return count

    def is_empty(self) -> bool:
        return not self._counts and self.pending_responses == 0


@dataclass(eq=False)
class AeronClient:
    client_id: int
    liveness_timeout_ms: int
    heartbeat: AtomicCounter
    time_of_last_keepalive_ms: int
    closed_by_command: bool = False
    """It sent CLIENT_CLOSE: reaped at the next check as a close, not a liveness timeout."""

    def keepalive(self, now_ms: int) -> None:
        self.time_of_last_keepalive_ms = now_ms
        self.heartbeat.set(now_ms)

    def has_timed_out(self, now_ms: int) -> bool:
        # Modern clients (the C client since 1.4x) send no CLIENT_KEEPALIVE: they find this heartbeat counter
        # (type 11, key = client id) and write the epoch ms into it. A value that moved past the last keepalive
        # counts as one. 1.15.1 clients never write it, so for them the value is the last keepalive already.
        beat = self.heartbeat.get()
        if beat > self.time_of_last_keepalive_ms:
            self.time_of_last_keepalive_ms = beat
        return now_ms > self.time_of_last_keepalive_ms + self.liveness_timeout_ms


@dataclass
class PendingLog:
    """An ADD whose large log is being made off the duty cycle (docs/commands.md, "Deferred ADDs").

    The command is dispatched again once the log is ready (or failed) and answered then; the client's later
    commands (all but keepalives) wait in ``held`` so that they are answered in the order they were sent:
    a REMOVE of the pending publication removes it once it exists.
    """

    client_id: int
    registration_id: int
    session_id: int
    future: Future[RawLog]
    command: tuple[int, memoryview]
    held: deque[tuple[int, memoryview]] = field(default_factory=deque)


def _log_refused(error: BaseException) -> ControlProtocolError:
    return ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, f"cannot create the log: {error}")


class DriverConductor:
    role_name = "driver-conductor"

    def __init__(
        self,
        ctx: DriverContext,
        to_driver: ManyToOneRingBuffer,
        client_proxy: ClientProxy,
        counters: CountersManager,
        system_counters: SystemCounters,
        error_handler: Callable[[BaseException], None],
        epoch_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        nano_clock: Callable[[], int] = time.monotonic_ns,
        rng: random.Random | None = None,
        commands: CommandQueue | None = None,
        sender_proxy: SenderProxy | None = None,
        receiver_proxy: ReceiverProxy | None = None,
        loss_report: LossReport | None = None,
        termination_hook: Callable[[], None] | None = None,
    ) -> None:
        self._ctx = ctx
        self._termination_validator = termination_validator(ctx.termination_validator)
        self._termination_hook = termination_hook
        self._next_reresolution_ns = 0
        self.mapped_files_length = 0
        """cnc.dat and loss-report.dat (set by the media driver): with the logs, "Bytes currently mapped"."""
        self._to_driver = to_driver
        self._client_proxy = client_proxy
        self._counters = counters
        self._system_counters = system_counters
        self._epoch_clock_ms = epoch_clock_ms
        self._nano_clock = nano_clock
        self._command_adapter = ClientCommandAdapter(
            to_driver,
            self,
            client_proxy,
            error_handler,
            system_counters.get(SystemCounterDescriptor.ERRORS),
            nano_clock,
        )
        self._command_adapter.gate = self._hold_behind_pending_log
        self._error_handler = error_handler
        self._log_factory = LogFactory(ctx.file_page_size, ctx.file_permissions, ctx.log_async_length)
        self._pending_logs: dict[int, PendingLog] = {}  # by client id: one pending ADD per client
        self._ready_logs: dict[int, PendingLog] = {}  # by registration id, while its ADD runs again
        self._current_command: tuple[int, int, memoryview] | None = None
        self._clients: dict[int, AeronClient] = {}
        self._counter_links: dict[int, CounterLink] = {}
        self._publication_links: dict[int, PublicationLink] = {}
        self._subscription_links: dict[int, SubscriptionLink] = {}
        self._ipc_publications: list[IpcPublication] = []
        self._ipc_limit_watch: dict[IpcPublication, None] = {}  # the active ones with subscribers
        # Publications whose last link a client released, by that client: once the client is gone too, their
        # linger is capped (a linger=<years> must not pin a log after its owner left).
        self._released_by: dict[IpcPublication | NetworkPublication, int] = {}
        self._active_session_ids: set[int] = set()
        self._rng = rng or random.Random()
        self._next_session_id = random_int32(self._rng)
        # From the DriverConductorProxy. Not `or`: an empty queue is falsy.
        self.commands = commands if commands is not None else CommandQueue()
        # The only ways to the sender and receiver (alone, in tests, their commands just wait in the queues).
        self._sender_proxy = sender_proxy or SenderProxy(
            CommandQueue(), system_counters.get(SystemCounterDescriptor.SENDER_PROXY_FAILS)
        )
        self._receiver_proxy = receiver_proxy or ReceiverProxy(
            CommandQueue(), system_counters.get(SystemCounterDescriptor.RECEIVER_PROXY_FAILS)
        )
        self._loss_report = loss_report
        self._network_publications: list[NetworkPublication] = []
        self._images: list[PublicationImage] = []
        # Bumped as subscriber (and spy) positions come and go: the runner's watch (watched_words) follows.
        self.watch_version = WatchVersion()
        # The conductor's own bookkeeping of the endpoints it handed to the sender and receiver: an
        # endpoint is closed (by its agent, on command) only when its last user is gone.
        self._send_endpoints: dict[str, SendChannelEndpoint] = {}
        self._send_endpoint_refs: dict[SendChannelEndpoint, int] = {}
        self._receive_endpoints: dict[str, ReceiveChannelEndpoint] = {}
        self._receive_endpoint_refs: dict[ReceiveChannelEndpoint, StreamRefCounts] = {}
        self._timer_interval_ns = ctx.timer_interval_ns
        self._next_timer_ns = 0
        self._next_heartbeat_ns = 0
        self._now_ms = epoch_clock_ms()
        self._client_liveness_timeout_ms = max(1, ctx.client_liveness_timeout_ns // 1_000_000)
        self._unblock_timeout_ns = ctx.client_liveness_timeout_ns
        self._last_consumer_position = to_driver.consumer_position()
        self._time_of_last_consumer_move_ns = nano_clock()
        # The sweep over positions (publisher limits, image rebuilds and status messages) runs every cycle
        # while they stream or a command came, else every sweep interval (_sweep_due).
        self._sweep_interval_ns = ctx.conductor_sweep_interval_ns
        self._sweep_watch = WordWatch()
        self._sweep_watch_version = -1
        self._sweep_moved = 0
        self._sweep_gaps = False
        self._native_words: tuple[list[Word], list[Word]] = ([], [])
        self._native_words_version = -1
        self._next_sweep_ns = 0
        self._commands_left = False

    # --- agent -------------------------------------------------------------------------------

    def on_start(self) -> None:
        self._to_driver.set_consumer_heartbeat_time(self._epoch_clock_ms())
        self._next_timer_ns = self._nano_clock() + self._timer_interval_ns

    def watched_words(self) -> list[Word]:
        """What clients write that gives this agent work: the to-driver ring's tail (a command) and every
        subscriber's and spy's position (a publisher's limit or a receiver's window may move on)."""
        return [self._to_driver.tail_word(), *self._consumer_position_words()]

    def _consumer_position_words(self) -> list[Word]:
        """Every subscriber's and spy's position: what consumers write that moves limits and windows on."""
        words = []
        for ipc in self._ipc_publications:
            words += [position.word() for position in ipc.subscriber_positions]
        for image in self._images:
            words += [position.word() for position in image.subscriber_positions]
        for publication in self._network_publications:
            words += [position.word() for position in publication.spy_positions]
        return words

    def has_queued_work(self) -> bool:
        return bool(
            self.commands
            or self._commands_left
            or self._pending_logs
            or self._sender_proxy.backlog
            or self._receiver_proxy.backlog
        )

    def do_work(self) -> int:
        now_ns = self._nano_clock()
        # Commands that did not fit the sender's or receiver's queue go first, in order, as room frees.
        work = self._sender_proxy.flush() + self._receiver_proxy.flush()
        commands_read = self.receive_commands(now_ns)
        # A full drain may have left commands in the ring whose tail no longer moves: the probe must not call
        # the next park quiet (has_queued_work).
        self._commands_left = commands_read >= COMMAND_DRAIN_LIMIT
        work += commands_read
        if self._pending_logs:
            work += self._resume_pending_logs()
        # Each step is skipped when it has nothing to look at: an idle driver wakes ~1000 times a second.
        if self.commands:
            work += self.commands.drain(self)
        if now_ns >= self._next_timer_ns:
            self._next_timer_ns = now_ns + self._timer_interval_ns
            work += self._on_timer(now_ns)
        elif now_ns >= self._next_heartbeat_ns:
            # Between timer ticks too: a client judges the driver by this age, which should stay far below
            # aeron.driver.timeout whatever the timer interval.
            self._next_heartbeat_ns = now_ns + HEARTBEAT_INTERVAL_NS
            self._to_driver.set_consumer_heartbeat_time(self._epoch_clock_ms())
        if (self._images or self._network_publications or self._ipc_limit_watch) and self._sweep_due(now_ns, work):
            work += self._sweep(now_ns)
        return work

    # --- the native steady-state cycle (driver/fast_cycle.py, driver/native_declaration.py) ---------------

    def native_declaration(self) -> Declaration | None:
        """When this agent must run next for its timers and its sweep, the words whose change needs it (the
        to-driver ring's tail: a command) and the positions its sweep counts (a kilobyte moved makes it sweep);
        None while it must run every cycle (queued work, or an image with gaps: its NAK timers)."""
        if self._sweep_gaps or self._sweep_interval_ns <= 0 or self.has_queued_work():
            return None
        due_ns = min(self._next_timer_ns, self._next_heartbeat_ns)
        if self._images or self._network_publications or self._ipc_limit_watch:
            due_ns = min(due_ns, self._next_sweep_ns)
        version = self.watch_version.value
        if version != self._native_words_version:
            self._native_words = [self._to_driver.tail_word()], self._sweep_words()
            self._native_words_version = version
        full_words, moved_words = self._native_words
        # What the sweep's watch still lets move before this agent sweeps (it counts across cycles).
        return Declaration(due_ns, full_words, moved_words, version, SWEEP_MOVED_BYTES - self._sweep_moved)

    def take_back(self, taken: TakeBack) -> None:
        """Nothing of this agent's runs natively: its timers are due by then (the declaration's ``due_ns``)."""

    def _sweep_due(self, now_ns: int, work: int) -> bool:
        """Whether this cycle sweeps the positions: a command or a new resource, a stream's worth of movement,
        an image with gaps (its NAK timers), or the interval since the last sweep."""
        if self._sweep_interval_ns <= 0:
            return True
        if self._sweep_watch_version != self.watch_version.value:
            self._sweep_watch.watch(self._sweep_words())
            self._sweep_watch_version = self.watch_version.value
            return True
        self._sweep_moved += self._sweep_watch.moved()
        return bool(
            work or self._sweep_gaps or self._sweep_moved >= SWEEP_MOVED_BYTES or now_ns >= self._next_sweep_ns
        )

    def _sweep_words(self) -> list[Word]:
        """The positions the sweep reads that others write (counters in cnc.dat, mapped while the driver runs)."""
        words = self._consumer_position_words()
        words += [image.hwm_position.word() for image in self._images]
        words += [publication.sender_position.word() for publication in self._network_publications]
        return words

    def _sweep(self, now_ns: int) -> int:
        """Publisher limits, image rebuilds (loss scans, status messages to schedule) and IPC limits."""
        self._sweep_moved = 0
        self._next_sweep_ns = now_ns + self._sweep_interval_ns
        work = 0
        gaps = False
        if self._images:
            sm_timeout_ns = self._ctx.status_message_timeout_ns
            for image in self._images:
                if image.is_tracking_rebuild:
                    work += image.track_rebuild(now_ns, sm_timeout_ns)
                    gaps = gaps or image.loss_detector.has_gaps
        self._sweep_gaps = gaps  # also when the last image went: no NAK timers left to keep sweeping for
        if self._network_publications:
            for network_publication in self._network_publications:
                if network_publication.state is NetState.ACTIVE:
                    work += network_publication.update_publisher_limit()
        if self._ipc_limit_watch:
            for publication in self._ipc_limit_watch:
                work += publication.update_publisher_limit(now_ns)
        return work

    def receive_commands(self, now_ns: int | None = None) -> int:
        """Reads and answers the clients' commands in the to-driver ring (one step of the duty cycle)."""
        return self._command_adapter.receive(now_ns)

    def is_dormant(self, embedded_client_ids: frozenset[int] = frozenset()) -> bool:
        """Nothing to serve: no client, publication, image or pending command (its ring is still read).

        Clients in ``embedded_client_ids`` (in this process, idle by their own account: the embedded
        archive) do not count, nor do their network publications and endpoints: nothing but another client
        or a remote publisher (an image) gives them work, and either ends the dormancy."""
        if not embedded_client_ids:
            return not (
                self._clients
                or self._ipc_publications
                or self._network_publications
                or self._images
                or self.commands
                or self._pending_logs
                or self._sender_proxy.has_pending()
                or self._receiver_proxy.has_pending()
                or self._send_endpoints
                or self._receive_endpoints
            )
        for client_id in self._clients:
            if client_id not in embedded_client_ids:
                return False
        return not (
            self._ipc_publications
            or self._images
            or self.commands
            or self._pending_logs
            or self._sender_proxy.has_pending()
            or self._receiver_proxy.has_pending()
        )

    def on_close(self) -> None:
        for client in list(self._clients.values()):
            self._release_client(client)
        for pending in self._pending_logs.values():
            LogFactory.discard(pending.future)
        self._pending_logs.clear()
        for publication in self._ipc_publications:
            publication.close()
        self._ipc_publications.clear()
        self._released_by.clear()
        for network_publication in self._network_publications:
            network_publication.close()
        self._network_publications.clear()
        for image in self._images:
            image.close()
        self._images.clear()
        for endpoint in self._send_endpoints.values():
            endpoint.close()
        # At shutdown only: an endpoint whose registration or close still waits in a queue is closed here
        # (endpoint close is idempotent; the sender and receiver close the ones they hold).
        for endpoint in self._receive_endpoints.values():
            endpoint.close()
        self._send_endpoints.clear()
        self._send_endpoint_refs.clear()
        self._receive_endpoints.clear()
        self._receive_endpoint_refs.clear()
        self._log_factory.close()  # large logs are released on its thread: wait for them

    # --- timers --------------------------------------------------------------------------------

    def _on_timer(self, now_ns: int) -> int:
        self._now_ms = now_ms = self._epoch_clock_ms()
        self._to_driver.set_consumer_heartbeat_time(now_ms)
        work = self._check_clients(now_ms)
        work += self._check_for_blocked_commands(now_ns)
        work += self._check_ipc_publications(now_ns)
        work += self._check_network_publications(now_ns)
        work += self._check_images(now_ns)
        if now_ns >= self._next_reresolution_ns:
            self._next_reresolution_ns = now_ns + self._ctx.reresolution_check_interval_ns
            changes = self._check_for_reresolution(now_ns)
            if changes:
                self._system_counters.get(SystemCounterDescriptor.RESOLUTION_CHANGES).get_and_add(changes)
            work += changes
        self._system_counters.get(SystemCounterDescriptor.BYTES_CURRENTLY_MAPPED).set(
            self.mapped_files_length
            + sum(p.raw_log.length for p in self._ipc_publications)
            + sum(p.raw_log.length for p in self._network_publications)
            + sum(i.raw_log.length for i in self._images)
        )
        for subscribable in (*self._ipc_publications, *self._network_publications, *self._images):
            if subscribable.untethered:
                work += self._check_untethered(subscribable, now_ns)
        return work

    def _check_for_reresolution(self, now_ns: int) -> int:
        """Resolve a send endpoint's host name again when none of its receivers has been heard from for a
        check interval (a receiver that moved: a restarted container behind the same name)."""
        interval = self._ctx.reresolution_check_interval_ns
        changes = 0
        for endpoint in self._send_endpoints.values():
            channel = endpoint.udp_channel
            name = channel.endpoint_host_name
            if name is None or channel.is_multicast or channel.has_explicit_control or not endpoint.publications:
                continue
            publications = list(endpoint.publications.values())
            if any(now_ns - p.time_of_last_status_message_ns < interval for p in publications):
                continue
            try:
                address = (str(resolve_host(name)), channel.remote_data[1])
            except OSError:
                continue  # not resolvable right now: the old address stays, try again next interval
            if address != endpoint.transport.connected_address:
                log.info("%s: %s now resolves to %s", channel.original_uri_string, name, address[0])
                self._sender_proxy.on_resolution_change(endpoint, address)
                changes += 1
        return changes

    def _check_untethered(
        self, subscribable: IpcPublication | NetworkPublication | PublicationImage, now_ns: int
    ) -> int:
        """Move untethered subscribers on (driver/protocol/untethered.py): unavailable, out of flow control,
        back at the live position."""
        if isinstance(subscribable, PublicationImage):
            correlation_id = subscribable.correlation_id
            channel = subscribable.channel_endpoint.channel
            source_identity = subscribable.source_identity
        else:
            correlation_id = subscribable.registration_id
            # IPC images and spies read shared memory: Aeron names their source "aeron:ipc"
            channel = IPC_CHANNEL if isinstance(subscribable, IpcPublication) else subscribable.channel
            source_identity = IPC_CHANNEL
        actions = subscribable.untethered.check(now_ns, subscribable.untethered_behind_limit())
        for action, entry in actions:
            link = entry.link
            if action is UntetheredAction.UNAVAILABLE:
                self._client_proxy.on_unavailable_image(
                    correlation_id, link.registration_id, link.stream_id, channel
                )
            elif action is UntetheredAction.DROP:
                subscribable.drop_subscriber_position(entry.position)
            else:
                entry.position.set(subscribable.untethered_join_position())
                subscribable.restore_subscriber_position(entry.position)
                self._client_proxy.on_available_image(
                    correlation_id,
                    subscribable.session_id,
                    subscribable.stream_id,
                    link.registration_id,
                    entry.position.id,
                    subscribable.log_file_name,
                    source_identity,
                )
        return len(actions)

    def _check_ipc_publications(self, now_ns: int) -> int:
        ended = []
        for publication in self._ipc_publications:
            publication.on_time_event(now_ns, self)
            if publication.reached_end_of_life:
                ended.append(publication)
        for publication in ended:
            self._ipc_publications.remove(publication)
            self.watch_version.bump()
            self._released_by.pop(publication, None)
            self._active_session_ids.discard(publication.session_id)
            for link in self._subscription_links.values():
                link.unlink(publication)
            publication.close()
        return len(ended)

    def _announce_unavailable(
        self, subscribable: object, correlation_id: int, stream_id: int, channel: str
    ) -> list[SubscriptionLink]:
        """ON_UNAVAILABLE_IMAGE to every subscription linked to ``subscribable``; returns those links."""
        links = [link for link in self._subscription_links.values() if link.is_linked(subscribable)]
        for link in links:
            self._client_proxy.on_unavailable_image(correlation_id, link.registration_id, stream_id, channel)
        return links

    def on_ipc_publication_drained(self, publication: IpcPublication) -> None:
        """The last publisher left and every subscriber has read to the end: their images go away."""
        self._announce_unavailable(
            publication, publication.registration_id, publication.stream_id, IPC_CHANNEL
        )

    def _check_clients(self, now_ms: int) -> int:
        expired = [c for c in self._clients.values() if c.has_timed_out(now_ms)]
        for client in expired:
            if client.closed_by_command:
                # 1.15.1 counts a clean close as a liveness timeout and tells the client it timed out; today's
                # Aeron does neither, and a dashboard then sees no outage that is not there (docs/commands.md).
                self._system_counters.client_closes.increment()
            else:
                self._system_counters.get(SystemCounterDescriptor.CLIENT_TIMEOUTS).increment()
                self._client_proxy.on_client_timeout(client.client_id)
            self._release_client(client)
        return len(expired)

    def _check_for_blocked_commands(self, now_ns: int) -> int:
        """A client that died mid-write leaves a record the reader can never pass: pad over it."""
        ring = self._to_driver
        consumer_position = ring.consumer_position()
        if consumer_position != self._last_consumer_position:
            self._last_consumer_position = consumer_position
            self._time_of_last_consumer_move_ns = now_ns
            return 0
        # Stuck right after a corrupt record: the zeros ahead are most likely the rest of its claim, not a
        # producer between its CAS and first store, so they are padded sooner than a dead producer's.
        timeout_ns = self._unblock_timeout_ns
        if consumer_position == self._command_adapter.position_after_corrupt:
            timeout_ns = min(timeout_ns, CORRUPT_GAP_UNBLOCK_TIMEOUT_NS)
        if (
            ring.producer_position() > consumer_position
            and now_ns > self._time_of_last_consumer_move_ns + timeout_ns
            and ring.unblock()
        ):
            self._system_counters.get(SystemCounterDescriptor.UNBLOCKED_COMMANDS).increment()
            self._time_of_last_consumer_move_ns = now_ns
            return 1
        return 0

    # --- clients -------------------------------------------------------------------------------

    @property
    def clients(self) -> dict[int, AeronClient]:
        return self._clients

    def _get_or_add_client(self, client_id: int) -> AeronClient:
        client = self._clients.get(client_id)
        if client is None:
            now_ms = self._epoch_clock_ms()
            heartbeat = self._counters.new_counter(
                client_heartbeat_label(client_id), CLIENT_HEARTBEAT_TYPE_ID, client_heartbeat_key(client_id)
            )
            heartbeat.set(now_ms)
            client = AeronClient(client_id, self._client_liveness_timeout_ms, heartbeat, now_ms)
            self._clients[client_id] = client
        return client

    def _release_client(self, client: AeronClient) -> None:
        """Everything the client held goes: publications are released, subscriptions and counters freed."""
        client_id = client.client_id
        pending = self._pending_logs.pop(client_id, None)
        if pending is not None:  # nobody will take that log (or hear of it), nor of the held commands
            self._active_session_ids.discard(pending.session_id)
            LogFactory.discard(pending.future)
        for registration_id in [
            r for r, link in self._publication_links.items() if link.client_id == client_id
        ]:
            self._close_publication_link(self._publication_links.pop(registration_id))
        max_linger_ns = self._ctx.publication_linger_max_ns
        for publication in [p for p, owner in self._released_by.items() if owner == client_id]:
            publication.cap_linger(max_linger_ns)
            del self._released_by[publication]
        for registration_id in [
            r for r, link in self._subscription_links.items() if link.client_id == client_id
        ]:
            self._close_subscription_link(self._subscription_links.pop(registration_id))
        for registration_id in [r for r, link in self._counter_links.items() if link.client_id == client_id]:
            self._counter_links.pop(registration_id).close()
        client.heartbeat.close()
        self._clients.pop(client_id, None)

    def on_terminate_driver(self, msg: cp.TerminateDriverMessage) -> None:
        """Stop the driver if the termination validator allows it; otherwise nothing, as Aeron's driver (the
        client gets no answer either way), but the refusal is logged for the operator."""
        if self._termination_validator(self._ctx.aeron_path, msg.token):
            log.info("TERMINATE_DRIVER from client %d allowed: stopping", msg.client_id)
            if self._termination_hook is not None:
                self._termination_hook()
        else:
            log.warning(
                "TERMINATE_DRIVER from client %d refused by the termination validator "
                "(aeron.driver.termination.validator=allow permits it)",
                msg.client_id,
            )

    def on_client_keepalive(self, client_id: int) -> None:
        client = self._clients.get(client_id)
        if client is not None:
            client.keepalive(self._epoch_clock_ms())

    def on_client_close(self, client_id: int) -> None:
        # Reaped at the next timer check, as 1.15.1, but counted as a close ("Client closes"), not a timeout.
        client = self._clients.get(client_id)
        if client is not None:
            client.closed_by_command = True
            # The heartbeat counter is zeroed too, as 1.15.1 does: its old value must not revive the client.
            client.keepalive(0)
            self._next_timer_ns = 0

    # --- command validation (docs/commands.md section 7) -------------------------------------------

    def _check_registration_id_free(self, correlation_id: int) -> None:
        """An ADD's correlation id becomes a registration id: one already in use would silently replace a
        link (orphaning its counters and log), so it is refused."""
        if correlation_id in self._publication_links:
            kind = "publication"
        elif correlation_id in self._subscription_links:
            kind = "subscription"
        elif correlation_id in self._counter_links:
            kind = "counter"
        elif any(p.registration_id == correlation_id for p in self._ipc_publications) or any(
            p.registration_id == correlation_id for p in self._network_publications
        ):
            kind = "publication log"
        elif any(image.correlation_id == correlation_id for image in self._images):
            kind = "image"
        else:
            return
        raise ControlProtocolError(
            cp.ErrorCode.GENERIC_ERROR,
            f"correlation id {correlation_id} is already in use as the registration id of a {kind}: "
            "take a fresh one from the to-driver ring's correlation counter for every command",
        )

    def _check_channel_length(self, channel: str, canonical_form: str) -> None:
        """Refuse a channel whose events could not reach the clients (docs/commands.md section 7)."""
        longest_name = str(
            self._ctx.aeron_path / PUBLICATIONS_DIR / log_file_name(canonical_form, -1, -1, -1)
        )
        limit = max_channel_length(len(longest_name))
        if len(channel) > limit:
            raise ControlProtocolError(
                cp.ErrorCode.INVALID_CHANNEL,
                f"channel of {len(channel)} bytes is longer than the {max(limit, 0)}-byte maximum: its "
                "ON_AVAILABLE_IMAGE (log file name and channel) must fit the 4096-byte event limit of clients",
            )

    # --- counters ------------------------------------------------------------------------------

    def on_add_counter(self, msg: cp.CounterMessage) -> None:
        self._check_registration_id_free(msg.correlation_id)
        self._get_or_add_client(msg.client_id)
        try:
            counter = self._counters.new_counter(msg.label, msg.type_id, msg.key)
        except CountersFullError:
            raise  # worded as for every resource that needs a counter
        except Exception as e:
            raise ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, f"cannot allocate counter: {e}") from e
        self._counter_links[msg.correlation_id] = CounterLink(msg.correlation_id, msg.client_id, counter)
        self._client_proxy.on_counter_ready(msg.correlation_id, counter.id)

    def on_remove_counter(self, msg: cp.RemoveMessage) -> None:
        link = self._counter_links.get(msg.registration_id)
        if link is None or link.client_id != msg.client_id:
            raise ControlProtocolError(
                cp.ErrorCode.UNKNOWN_COUNTER, f"Unknown counter: {msg.registration_id}"
            )
        del self._counter_links[msg.registration_id]
        counter_id = link.counter.id
        link.close()
        self._client_proxy.on_operation_succeeded(msg.correlation_id)
        self._client_proxy.on_unavailable_counter(msg.registration_id, counter_id)

    # --- publications, subscriptions, destinations (log buffers and UDP come next) ------------------

    def on_add_publication(self, msg: cp.PublicationMessage, exclusive: bool) -> None:
        self._check_registration_id_free(msg.correlation_id)
        if not msg.channel.startswith(IPC_CHANNEL):
            self._on_add_network_publication(msg, exclusive)
            return
        self._check_channel_length(msg.channel, IPC_MEDIA)
        uri = _parse_ipc_uri(msg.channel)
        check_publication_stream_id(uri, msg.stream_id)
        refuse_subscription_only_params(uri)
        client = self._get_or_add_client(msg.client_id)
        publication = self._get_or_add_ipc_publication(msg, uri, exclusive)
        self._publication_links[msg.correlation_id] = PublicationLink(
            msg.correlation_id, client.client_id, publication
        )
        new_links = [
            (link, self._link_ipc_subscription(publication, link))
            for link in self._subscription_links.values()
            if link.matches_ipc(publication) and not link.is_linked(publication)
        ]
        self._client_proxy.on_publication_ready(
            msg.correlation_id,
            publication.registration_id,
            publication.session_id,
            msg.stream_id,
            publication.publisher_limit.id,
            NO_ID_ALLOCATED,
            publication.log_file_name,
            exclusive,
        )
        for link, position in new_links:
            self._client_proxy.on_available_image(
                publication.registration_id,
                publication.session_id,
                publication.stream_id,
                link.registration_id,
                position.id,
                publication.log_file_name,
                msg.channel,
            )

    def _find_network_publication_by_tag(self, tag: int) -> ExistingPublication | None:
        """``session-id=tag:n``: the network publication with entity tag n. As 1.15.1, any publication the
        conductor still holds counts, a closed one that is lingering too."""
        for publication in self._network_publications:
            if publication.tag == tag:
                return ExistingPublication(
                    publication.session_id, publication.mtu_length, publication.term_length
                )
        return None

    def _is_entity_tag_in_use(self, tag: int) -> bool:
        """An entity tag stays taken until the publication holding it is gone (lingering included), as 1.15.1."""
        return any(p.tag == tag for p in self._network_publications) or any(
            p.tag == tag for p in self._ipc_publications
        )

    def _get_or_add_ipc_publication(
        self, msg: cp.PublicationMessage, uri: ChannelUri, exclusive: bool
    ) -> IpcPublication:
        ctx = self._ctx
        params = PublicationParams.from_uri(
            uri,
            is_exclusive=exclusive,
            default_term_length=ctx.ipc_term_buffer_length,
            default_mtu=ctx.ipc_mtu_length,
            default_linger_ns=ctx.publication_linger_timeout_ns,
            default_sparse=ctx.term_buffer_sparse_file,
            find_network_publication_by_tag=self._find_network_publication_by_tag,
            is_entity_tag_in_use=self._is_entity_tag_in_use,
        )
        if not exclusive:
            for publication in self._ipc_publications:
                if (
                    publication.stream_id == msg.stream_id
                    and not publication.is_exclusive
                    and publication.state is IpcState.ACTIVE
                ):
                    validate_shared_publication(
                        ExistingPublication(
                            publication.session_id, publication.mtu_length, publication.term_length
                        ),
                        params,
                    )
                    return publication
        if params.session_id is not None and not params.is_session_id_tagged:
            self._confirm_session_id_not_in_use(params.session_id)
        return self._add_ipc_publication(msg, params, exclusive)

    def _add_ipc_publication(
        self, msg: cp.PublicationMessage, params: PublicationParams, exclusive: bool
    ) -> IpcPublication:
        ctx = self._ctx
        registration_id = msg.correlation_id
        session_id = self._session_id_for(registration_id, params)
        path = (
            ctx.aeron_path
            / PUBLICATIONS_DIR
            / log_file_name(IPC_MEDIA, session_id, msg.stream_id, registration_id)
        )
        raw_log, (publisher_pos, publisher_limit) = self._new_publication_log(
            msg, params, session_id, path, stream_counters.publisher_pos, stream_counters.publisher_limit
        )
        window = params.term_length
        if ctx.ipc_publication_term_window_length:
            window = min(window, ctx.ipc_publication_term_window_length)
        publication = IpcPublication(
            registration_id,
            msg.channel,
            session_id,
            msg.stream_id,
            params.entity_tag,
            raw_log,
            publisher_pos,
            publisher_limit,
            window,
            params.linger_ns,
            ctx.publication_unblock_timeout_ns,
            self._system_counters.get(SystemCounterDescriptor.UNBLOCKED_PUBLICATIONS),
            self._nano_clock(),
            exclusive,
            self._ipc_limit_watch,
            self.watch_version,
        )
        self._ipc_publications.append(publication)
        self.watch_version.bump()
        self._active_session_ids.add(session_id)
        return publication

    def _new_publication_log(
        self,
        msg: cp.PublicationMessage,
        params: PublicationParams,
        session_id: int,
        path: Path,
        *counter_factories: Callable[..., AtomicCounter],
    ) -> tuple[RawLog, list[AtomicCounter]]:
        """The log file, its metadata and the position counters every publication kind starts with.

        An exclusive publication given init-term-id/term-id/term-offset starts (log and counters) there.
        """
        ctx = self._ctx
        registration_id = msg.correlation_id
        initial_term_id = params.init_term_id if params.is_replay else random_int32(self._rng)
        raw_log = self._publication_raw_log(registration_id, session_id, path, params)
        lbd.initialise_publication_metadata(
            raw_log.meta_data,
            session_id=session_id,
            stream_id=msg.stream_id,
            initial_term_id=initial_term_id,
            mtu_length=params.mtu_length,
            term_length=params.term_length,
            page_size=ctx.file_page_size,
            correlation_id=registration_id,
            term_id=params.term_id if params.is_replay else None,
            term_offset=params.term_offset if params.is_replay else 0,
        )
        counters: list[AtomicCounter] = []
        try:
            for factory in counter_factories:
                counters.append(
                    factory(self._counters, registration_id, session_id, msg.stream_id, msg.channel)
                )
        except BaseException:  # a refused add leaves nothing behind
            for counter in counters:
                counter.close()
            raw_log.free()
            raise
        if params.is_replay:
            bits = lbd.position_bits_to_shift(params.term_length)
            position = lbd.compute_position(params.term_id, params.term_offset, bits, initial_term_id)
            for counter in counters:
                counter.set(position)
        return raw_log, counters

    # --- log creation: large logs off the duty cycle ------------------------------------------------

    def _hold_behind_pending_log(self, msg_type_id: int, body: memoryview) -> bool:
        """The command adapter's gate: a client's commands wait while one of its ADDs waits for a log."""
        self._current_command = None
        if len(body) < cp.CORRELATED_MESSAGE_LENGTH:
            return False
        client_id = cp.decode_correlated(body).client_id
        pending = self._pending_logs.get(client_id)
        if pending is not None and msg_type_id != cp.Command.CLIENT_KEEPALIVE:
            pending.held.append((msg_type_id, body))
            return True
        self._current_command = (client_id, msg_type_id, body)
        return False

    def _session_id_for(self, registration_id: int, params: PublicationParams) -> int:
        ready = self._ready_logs.get(registration_id)
        if ready is not None:
            return ready.session_id  # the one its file is named after
        return params.session_id if params.session_id is not None else self._next_available_session_id()

    def _publication_raw_log(
        self, registration_id: int, session_id: int, path: Path, params: PublicationParams
    ) -> RawLog:
        """The new publication's log: made now if small, else on the log factory's thread (the command is
        answered when it is ready); raises ControlProtocolError naming the file when it cannot be made."""
        ready = self._ready_logs.pop(registration_id, None)
        if ready is not None:
            try:
                return ready.future.result()
            except Exception as e:
                raise _log_refused(e) from e
        command = self._current_command
        if command is not None and self._log_factory.is_large(params.term_length):
            client_id, msg_type_id, body = command
            self._pending_logs[client_id] = PendingLog(
                client_id,
                registration_id,
                session_id,
                self._log_factory.submit(path, params.term_length, params.is_sparse),
                (msg_type_id, body),
            )
            self._active_session_ids.add(session_id)  # reserved until the command runs again
            raise CommandDeferred
        try:
            return self._log_factory.create(path, params.term_length, params.is_sparse)
        except FileAllocationError as e:
            raise _log_refused(e) from e

    def _resume_pending_logs(self) -> int:
        """Commands whose logs are ready run again, then the commands their clients sent meanwhile."""
        work = 0
        for client_id, pending in list(self._pending_logs.items()):
            if not pending.future.done() or self._pending_logs.get(client_id) is not pending:
                continue
            del self._pending_logs[client_id]
            self._active_session_ids.discard(pending.session_id)
            self._ready_logs[pending.registration_id] = pending
            self._dispatch_again(client_id, *pending.command)
            unused = self._ready_logs.pop(pending.registration_id, None)
            if unused is not None:  # the ADD found another way (a shared publication made meanwhile)
                LogFactory.discard(unused.future)
            held = pending.held
            while held:
                again = self._pending_logs.get(client_id)
                if again is not None:  # a held ADD waits for its own log: the rest wait behind it
                    again.held.extend(held)
                    break
                self._dispatch_again(client_id, *held.popleft())
            work += 1
        return work

    def _dispatch_again(self, client_id: int, msg_type_id: int, body: memoryview) -> None:
        self._current_command = (client_id, msg_type_id, body)
        try:
            self._command_adapter.dispatch(msg_type_id, body)
        finally:
            self._current_command = None

    def _next_available_session_id(self) -> int:
        low = self._ctx.publication_reserved_session_id_low
        high = self._ctx.publication_reserved_session_id_high
        while True:
            session_id = self._next_session_id
            if low <= session_id <= high:
                session_id = high + 1
            self._next_session_id = to_int32(session_id + 1)
            if session_id not in self._active_session_ids:
                return session_id

    def _confirm_session_id_not_in_use(self, session_id: int) -> None:
        if session_id in self._active_session_ids:
            raise ControlProtocolError(
                cp.ErrorCode.GENERIC_ERROR, f"existing publication has same session id: {session_id}"
            )

    def _link_ipc_subscription(self, publication: IpcPublication, link: SubscriptionLink) -> AtomicCounter:
        position = self._link_subscriber(publication, link, publication.join_position())
        # Raise the limit now, before the client hears of the link: a publisher that offers at once must not
        # see the limit of an unconnected publication (BasicPublisher's first offer).
        publication.update_publisher_limit(self._nano_clock())
        return position

    def _link_subscriber(
        self, publication: IpcPublication | NetworkPublication, link: SubscriptionLink, join_position: int
    ) -> AtomicCounter:
        """A sub-pos counter at ``join_position`` for a subscription reading ``publication``'s log."""
        position = stream_counters.subscriber_pos(
            self._counters,
            link.registration_id,
            publication.session_id,
            link.stream_id,
            link.channel,
            join_position,
        )
        publication.add_subscriber(position)
        self._link(publication, link, position)
        return position

    def _subscription_params(self, uri: ChannelUri) -> SubscriptionParams:
        return SubscriptionParams.from_uri(
            uri,
            default_tether=self._ctx.tether_subscriptions,
            default_untethered=self._ctx.untethered_timeouts,
        )

    def _link(
        self,
        subscribable: IpcPublication | NetworkPublication | PublicationImage,
        link: SubscriptionLink,
        position: AtomicCounter,
    ) -> None:
        link.link(subscribable, position)
        if not link.params.is_tether:
            subscribable.untethered.add(link, position, link.params.untethered_timeouts, self._nano_clock())

    def on_remove_publication(self, msg: cp.RemoveMessage) -> None:
        link = self._publication_links.pop(msg.registration_id, None)
        if link is None:
            raise ControlProtocolError(
                cp.ErrorCode.UNKNOWN_PUBLICATION, f"unknown publication: {msg.registration_id}"
            )
        self._close_publication_link(link)
        self._client_proxy.on_operation_succeeded(msg.correlation_id)

    def _close_publication_link(self, link: PublicationLink) -> None:
        link.close()
        if link.publication.ref_count == 0:
            self._released_by[link.publication] = link.client_id

    def on_add_subscription(self, msg: cp.SubscriptionMessage) -> None:
        self._check_registration_id_free(msg.correlation_id)
        if msg.channel.startswith(SPY_PREFIX):
            self._on_add_spy_subscription(msg)
            return
        if not msg.channel.startswith(IPC_CHANNEL):
            self._on_add_network_subscription(msg)
            return
        self._check_channel_length(msg.channel, IPC_MEDIA)
        params = self._subscription_params(_parse_ipc_uri(msg.channel))
        client = self._get_or_add_client(msg.client_id)
        link = IpcSubscriptionLink(msg.correlation_id, client.client_id, msg.stream_id, msg.channel, params)
        self._subscription_links[msg.correlation_id] = link
        linked = [
            (publication, self._link_ipc_subscription(publication, link))
            for publication in self._ipc_publications
            if publication.state is IpcState.ACTIVE and link.matches_ipc(publication)
        ]
        self._client_proxy.on_subscription_ready(msg.correlation_id, NO_ID_ALLOCATED)
        for publication, position in linked:
            self._client_proxy.on_available_image(
                publication.registration_id,
                publication.session_id,
                msg.stream_id,
                msg.correlation_id,
                position.id,
                publication.log_file_name,
                msg.channel,
            )

    def _on_add_spy_subscription(self, msg: cp.SubscriptionMessage) -> None:
        udp_channel = self._parse_udp_channel(msg.channel)
        refuse_response_params(udp_channel.channel_uri, "spies")
        self._check_channel_length(msg.channel, udp_channel.canonical_form)
        params = self._subscription_params(udp_channel.channel_uri)
        client = self._get_or_add_client(msg.client_id)
        link = SpySubscriptionLink(
            msg.correlation_id,
            client.client_id,
            msg.stream_id,
            msg.channel,
            params,
            canonical_form=udp_channel.canonical_form,
        )
        self._subscription_links[msg.correlation_id] = link
        linked = [
            (publication, self._link_subscriber(publication, link, publication.consumer_position()))
            for publication in self._network_publications
            if publication.state is NetState.ACTIVE and link.matches_network_publication(publication)
        ]
        self._client_proxy.on_subscription_ready(msg.correlation_id, NO_ID_ALLOCATED)
        for publication, position in linked:
            self._announce_spy_image(publication, link, position)

    def _link_spies(self, publication: NetworkPublication) -> None:
        for link in self._subscription_links.values():
            if link.matches_network_publication(publication) and not link.is_linked(publication):
                self._announce_spy_image(
                    publication,
                    link,
                    self._link_subscriber(publication, link, publication.consumer_position()),
                )

    def _announce_spy_image(
        self, publication: NetworkPublication, link: SubscriptionLink, position: AtomicCounter
    ) -> None:
        # 1.15.1 names a spy's source identity "aeron:ipc": the log is read in shared memory.
        self._client_proxy.on_available_image(
            publication.registration_id,
            publication.session_id,
            publication.stream_id,
            link.registration_id,
            position.id,
            publication.log_file_name,
            IPC_CHANNEL,
        )

    def cleanup_spies(self, publication: NetworkPublication) -> None:
        """Every spy has read the drained publication to its end: their images go away."""
        links = self._announce_unavailable(
            publication, publication.registration_id, publication.stream_id, publication.channel
        )
        for link in links:
            link.unlink(publication)

    def on_remove_subscription(self, msg: cp.RemoveMessage) -> None:
        link = self._subscription_links.pop(msg.registration_id, None)
        if link is None:
            raise ControlProtocolError(
                cp.ErrorCode.UNKNOWN_SUBSCRIPTION, f"unknown subscription: {msg.registration_id}"
            )
        self._close_subscription_link(link)
        self._client_proxy.on_operation_succeeded(msg.correlation_id)

    def _manual_mdc_endpoint(self, registration_id: int) -> SendChannelEndpoint:
        publication = next(
            (p for p in self._network_publications if p.registration_id == registration_id), None
        )
        if publication is None:
            raise ControlProtocolError(
                cp.ErrorCode.UNKNOWN_PUBLICATION, f"unknown publication: {registration_id}"
            )
        endpoint = publication.channel_endpoint
        if not (endpoint.is_multi_destination and endpoint.is_manual_control):
            raise ControlProtocolError(
                cp.ErrorCode.GENERIC_ERROR,
                f"control channel does not allow manual control: {publication.channel} "
                "(destinations need control=<address>|control-mode=manual)",
            )
        return endpoint

    def _destination_address(self, channel: str) -> tuple[str, int]:
        """``UdpChannel.destinationAddress``: only the media and the ``endpoint`` of a destination count."""
        return destination_address(channel, resolve=resolve_host)

    def on_add_destination(self, msg: cp.DestinationMessage) -> None:
        endpoint = self._manual_mdc_endpoint(msg.registration_correlation_id)
        self._sender_proxy.add_destination(endpoint, self._destination_address(msg.channel))
        self._client_proxy.on_operation_succeeded(msg.correlation_id)

    def on_remove_destination(self, msg: cp.DestinationMessage) -> None:
        endpoint = self._manual_mdc_endpoint(msg.registration_correlation_id)
        self._sender_proxy.remove_destination(endpoint, self._destination_address(msg.channel))
        self._client_proxy.on_operation_succeeded(msg.correlation_id)

    def _so_sndbuf(self, udp_channel: UdpChannel) -> int:
        """``so-sndbuf`` of the channel, else the driver's ``aeron.socket.so_sndbuf``."""
        return udp_channel.socket_sndbuf_length or self._ctx.socket_so_sndbuf

    def _so_rcvbuf(self, udp_channel: UdpChannel) -> int:
        return udp_channel.socket_rcvbuf_length or self._ctx.socket_so_rcvbuf

    def _check_buffer_lengths(self, udp_channel: UdpChannel, existing: UdpChannel) -> None:
        """A channel sharing an endpoint may not ask for other socket buffers than the endpoint has."""
        for name, asked, has in (
            (SOCKET_SNDBUF_PARAM_NAME, udp_channel.socket_sndbuf_length, self._so_sndbuf(existing)),
            (SOCKET_RCVBUF_PARAM_NAME, udp_channel.socket_rcvbuf_length, self._so_rcvbuf(existing)),
        ):
            if asked and asked != has:
                raise InvalidChannelError(
                    udp_channel.original_uri_string,
                    f"{name}={asked} does not match the {has or 'OS default'} of the endpoint it shares "
                    f"({existing.original_uri_string})",
                )

    def _open_receive(self, udp_channel: UdpChannel) -> UdpTransport:
        return UdpTransport.open_receive(
            udp_channel,
            so_rcvbuf=self._so_rcvbuf(udp_channel),
            so_sndbuf=self._so_sndbuf(udp_channel),
            gro=self._ctx.socket_gro,
        )

    def _manual_mds_endpoint(self, registration_id: int) -> ReceiveChannelEndpoint:
        link = self._subscription_links.get(registration_id)
        if link is None:
            raise ControlProtocolError(
                cp.ErrorCode.UNKNOWN_SUBSCRIPTION, f"unknown subscription: {registration_id}"
            )
        endpoint = link.endpoint if isinstance(link, NetworkSubscriptionLink) else None
        if endpoint is None or not endpoint.has_destination_control:
            raise ControlProtocolError(
                cp.ErrorCode.GENERIC_ERROR,
                f"channel does not allow destination control: {link.channel} (needs control-mode=manual)",
            )
        return endpoint

    def on_add_rcv_destination(self, msg: cp.DestinationMessage) -> None:
        endpoint = self._manual_mds_endpoint(msg.registration_correlation_id)
        udp_channel = self._parse_udp_channel(msg.channel)
        try:
            transport = self._open_receive(udp_channel)
        except Exception as e:
            raise ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, str(e)) from e
        self._receiver_proxy.add_destination(endpoint, udp_channel, transport)
        self._client_proxy.on_operation_succeeded(msg.correlation_id)

    def on_remove_rcv_destination(self, msg: cp.DestinationMessage) -> None:
        endpoint = self._manual_mds_endpoint(msg.registration_correlation_id)
        udp_channel = self._parse_udp_channel(msg.channel)
        self._receiver_proxy.remove_destination(endpoint, udp_channel.canonical_form)
        self._client_proxy.on_operation_succeeded(msg.correlation_id)

    # --- UDP: send side -----------------------------------------------------------------------------

    def _parse_udp_channel(self, channel: str) -> UdpChannel:
        udp_channel = UdpChannel.parse(
            channel,
            resolve=resolve_host,
            interfaces=system_interfaces,  # listed only when the channel needs them
            default_multicast_ttl=self._ctx.socket_multicast_ttl,
        )
        refuse_unsupported_params(udp_channel.channel_uri)
        return udp_channel

    def _get_or_create_send_endpoint(self, udp_channel: UdpChannel) -> SendChannelEndpoint:
        endpoint = _find_existing_endpoint(self._send_endpoints, udp_channel)
        if endpoint is None:
            status = self._counters.new_counter(
                channel_status_label(SEND_CHANNEL_STATUS_NAME, udp_channel.original_uri_string),
                SEND_CHANNEL_STATUS_TYPE_ID,
                channel_status_key(udp_channel.original_uri_string),
            )
            try:
                transport = UdpTransport.open_send(
                    udp_channel,
                    so_sndbuf=self._so_sndbuf(udp_channel),
                    so_rcvbuf=self._so_rcvbuf(udp_channel),
                    ttl=self._ctx.socket_multicast_ttl,
                    gso=self._ctx.socket_gso,
                )
            except Exception as e:
                status.set(CHANNEL_STATUS_ERRORED)
                status.close()
                raise ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, str(e)) from e
            endpoint = SendChannelEndpoint(udp_channel, transport, status)
            endpoint.local_address_counters.append(
                local_socket_address(
                    self._counters, SEND_LOCAL_SOCKET_ADDRESS_NAME, status.id, transport.send_local_address
                )
            )
            self._send_endpoints[udp_channel.canonical_form] = endpoint
            self._send_endpoint_refs[endpoint] = 0
            self._sender_proxy.register_send_channel_endpoint(endpoint)
        else:
            self._check_buffer_lengths(udp_channel, endpoint.udp_channel)
        return endpoint

    def _release_send_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        """One user less; the last one gone closes it (after every command queued before)."""
        refs = self._send_endpoint_refs.get(endpoint)
        if refs is None:
            return
        if refs > 1:
            self._send_endpoint_refs[endpoint] = refs - 1
            return
        del self._send_endpoint_refs[endpoint]
        if self._send_endpoints.get(endpoint.udp_channel.canonical_form) is endpoint:
            del self._send_endpoints[endpoint.udp_channel.canonical_form]
        self._sender_proxy.close_send_channel_endpoint(endpoint)

    def _on_add_network_publication(self, msg: cp.PublicationMessage, exclusive: bool) -> None:
        ctx = self._ctx
        udp_channel = self._parse_udp_channel(msg.channel)
        self._check_channel_length(msg.channel, udp_channel.canonical_form)
        check_publication_stream_id(udp_channel.channel_uri, msg.stream_id)
        refuse_subscription_only_params(udp_channel.channel_uri)
        params = PublicationParams.from_uri(
            udp_channel.channel_uri,
            is_exclusive=exclusive,
            default_term_length=ctx.term_buffer_length,
            default_mtu=ctx.mtu_length,
            default_linger_ns=ctx.publication_linger_timeout_ns,
            default_sparse=ctx.term_buffer_sparse_file,
            find_network_publication_by_tag=self._find_network_publication_by_tag,
            is_entity_tag_in_use=self._is_entity_tag_in_use,
        )
        response = response_params(udp_channel.channel_uri)
        answered_image = self._check_response_publication(msg.channel, response)
        client = self._get_or_add_client(msg.client_id)
        endpoint = self._get_or_create_send_endpoint(udp_channel)
        # Held while the publication is looked up or made, so that a refusal closes a fresh endpoint.
        self._send_endpoint_refs[endpoint] += 1
        try:
            publication = self._find_or_add_network_publication(
                msg, params, udp_channel, endpoint, exclusive, response
            )
        finally:
            self._release_send_endpoint(endpoint)
        if answered_image is not None:
            # The image tells its publication's driver this session with each SM until the client connects.
            answered_image.response_session_id = publication.session_id
            answered_image.request_status_message()
        self._publication_links[msg.correlation_id] = PublicationLink(
            msg.correlation_id, client.client_id, publication
        )
        self._client_proxy.on_publication_ready(
            msg.correlation_id,
            publication.registration_id,
            publication.session_id,
            msg.stream_id,
            publication.publisher_limit.id,
            endpoint.status.id,
            publication.log_file_name,
            exclusive,
        )
        self._link_spies(publication)

    def _check_response_publication(self, channel: str, response: ResponseParams) -> PublicationImage | None:
        """The image a response publication answers (None for other publications); refuses a request
        publication whose response subscription does not exist and a response publication that cannot answer."""
        if response.is_request:
            if response.correlation_id not in self._subscription_links:
                raise InvalidChannelError(
                    channel,
                    f"no subscription with registration id {response.correlation_id} for response-correlation-id",
                    error_code=cp.ErrorCode.GENERIC_ERROR,
                )
            return None
        if not response.is_response:
            return None
        image = next((i for i in self._images if i.correlation_id == response.correlation_id), None)
        reason = response_publication_error(response, None if image is None else image.setup_flags)
        if reason is not None:
            raise InvalidChannelError(channel, reason, error_code=cp.ErrorCode.GENERIC_ERROR)
        return image

    def _find_or_add_network_publication(
        self,
        msg: cp.PublicationMessage,
        params: PublicationParams,
        udp_channel: UdpChannel,
        endpoint: SendChannelEndpoint,
        exclusive: bool,
        response: ResponseParams,
    ) -> NetworkPublication:
        publication = None
        if not exclusive:
            for candidate in self._network_publications:
                if (
                    candidate.stream_id == msg.stream_id
                    and candidate.channel_endpoint is endpoint
                    and candidate.state is NetState.ACTIVE
                    and not candidate.is_exclusive
                    and candidate.response == response
                ):
                    validate_shared_publication(
                        ExistingPublication(
                            candidate.session_id, candidate.mtu_length, candidate.term_length
                        ),
                        params,
                    )
                    publication = candidate
                    break
        if publication is None:
            if params.session_id is not None and not params.is_session_id_tagged:
                self._confirm_session_id_not_in_use(params.session_id)
            publication = self._add_network_publication(msg, params, udp_channel, endpoint, exclusive, response)
        return publication

    def _add_network_publication(
        self,
        msg: cp.PublicationMessage,
        params: PublicationParams,
        udp_channel: UdpChannel,
        endpoint: SendChannelEndpoint,
        exclusive: bool,
        response: ResponseParams,
    ) -> NetworkPublication:
        ctx = self._ctx
        registration_id = msg.correlation_id
        session_id = self._session_id_for(registration_id, params)
        name = log_file_name(udp_channel.canonical_form, session_id, msg.stream_id, registration_id)
        raw_log, (publisher_pos, publisher_limit, sender_pos, sender_limit) = self._new_publication_log(
            msg,
            params,
            session_id,
            ctx.aeron_path / PUBLICATIONS_DIR / name,
            stream_counters.publisher_pos,
            stream_counters.publisher_limit,
            stream_counters.sender_pos,
            stream_counters.sender_limit,
        )
        window = params.term_length // 2
        if ctx.publication_term_window_length:
            window = min(window, ctx.publication_term_window_length)
        # As 1.15.1: multicast and MDC (explicit control) take the multicast strategy, default max.
        multicast = udp_channel.is_multicast or udp_channel.has_explicit_control
        flow_control = FLOW_CONTROLS[ctx.multicast_flow_control if multicast else ctx.unicast_flow_control]()
        publication = NetworkPublication(
            registration_id,
            msg.channel,
            session_id,
            msg.stream_id,
            params.entity_tag,
            raw_log,
            endpoint,
            publisher_pos,
            publisher_limit,
            sender_pos,
            sender_limit,
            flow_control,
            RetransmitHandler(
                StaticDelayGenerator(0, immediate_first=True), ctx.retransmit_unicast_linger_ns
            ),
            self._system_counters,
            window,
            params.linger_ns,
            ctx.publication_connection_timeout_ns,
            ctx.publication_unblock_timeout_ns,
            self._nano_clock,
            exclusive,
            spies_simulate_connection=ctx.spies_simulate_connection,
            sender_bpe=stream_counters.sender_bpe(
                self._counters, registration_id, session_id, msg.stream_id, msg.channel
            ),
            naks_received=stream_counters.sender_naks_received(
                self._counters, registration_id, session_id, msg.stream_id, msg.channel
            ),
            response=response,
            fc_receivers=stream_counters.flow_control_receivers(
                self._counters, registration_id, session_id, msg.stream_id, msg.channel
            )
            if multicast
            else None,
            watch_version=self.watch_version,
        )
        # The endpoint is the publication's until it is cleaned up (lingered out), not until its last
        # publisher leaves: a draining or lingering publication still sends on it.
        self._send_endpoint_refs[endpoint] += 1
        self._network_publications.append(publication)
        self.watch_version.bump()
        self._active_session_ids.add(session_id)
        self._sender_proxy.new_network_publication(publication)
        return publication

    def cleanup_network_publication(self, publication: NetworkPublication) -> None:
        self._active_session_ids.discard(publication.session_id)
        self._released_by.pop(publication, None)
        self._sender_proxy.remove_network_publication(publication)
        self._release_send_endpoint(publication.channel_endpoint)

    def _check_network_publications(self, now_ns: int) -> int:
        ended = []
        for publication in self._network_publications:
            publication.on_time_event(now_ns, self)
            if publication.has_sender_released:
                ended.append(publication)
        for publication in ended:
            self._network_publications.remove(publication)
            self.watch_version.bump()
            publication.close()
        return len(ended)

    # --- UDP: receive side --------------------------------------------------------------------------

    def _get_or_create_receive_endpoint(self, udp_channel: UdpChannel) -> ReceiveChannelEndpoint:
        endpoint = _find_existing_endpoint(self._receive_endpoints, udp_channel)
        if endpoint is None:
            status = self._counters.new_counter(
                channel_status_label(RECEIVE_CHANNEL_STATUS_NAME, udp_channel.original_uri_string),
                RECEIVE_CHANNEL_STATUS_TYPE_ID,
                channel_status_key(udp_channel.original_uri_string),
            )
            try:
                # A multi-destination subscription opens its sockets per ADD_RCV_DESTINATION instead.
                transport = None if udp_channel.is_manual_control_mode else self._open_receive(udp_channel)
            except Exception as e:
                status.set(CHANNEL_STATUS_ERRORED)
                status.close()
                raise ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, str(e)) from e
            endpoint = ReceiveChannelEndpoint(
                udp_channel, transport, status, self._system_counters.get(SystemCounterDescriptor.SHORT_SENDS)
            )
            if transport is not None:
                endpoint.local_address_counters.append(
                    local_socket_address(
                        self._counters, RECEIVE_LOCAL_SOCKET_ADDRESS_NAME, status.id, transport.local_address
                    )
                )
            self._receive_endpoints[udp_channel.canonical_form] = endpoint
            self._receive_endpoint_refs[endpoint] = StreamRefCounts()
            self._receiver_proxy.register_receive_channel_endpoint(endpoint)
        else:
            self._check_buffer_lengths(udp_channel, endpoint.udp_channel)
        return endpoint

    def _on_add_network_subscription(self, msg: cp.SubscriptionMessage) -> None:
        udp_channel = self._parse_udp_channel(msg.channel)
        self._check_channel_length(msg.channel, udp_channel.canonical_form)
        params = self._subscription_params(udp_channel.channel_uri)
        if params.is_response:
            response_params(udp_channel.channel_uri)  # refuses one without the server's address (control)
        client = self._get_or_add_client(msg.client_id)
        endpoint = self._get_or_create_receive_endpoint(udp_channel)
        refs = self._receive_endpoint_refs[endpoint]
        for other in self._subscription_links.values():
            if (
                isinstance(other, NetworkSubscriptionLink)
                and other.endpoint is endpoint
                and other.stream_id == msg.stream_id
                and other.params.session_id == params.session_id
                and other.params.is_reliable != params.is_reliable
            ):
                if refs.is_empty():
                    self._close_receive_endpoint(endpoint)
                raise ControlProtocolError(
                    cp.ErrorCode.GENERIC_ERROR,
                    f"option conflicts with existing subscriptions: reliable={params.is_reliable} on {msg.channel}",
                )
        if params.is_response and params.session_id is None:
            refs.pending_responses += 1  # subscribed once the server's driver names the session (RSP_SETUP)
        elif refs.increment(msg.stream_id, params.session_id) == 1:
            self._receiver_proxy.add_subscription(endpoint, msg.stream_id, params.session_id)
        link = NetworkSubscriptionLink(
            msg.correlation_id, client.client_id, msg.stream_id, msg.channel, params, endpoint=endpoint
        )
        self._subscription_links[msg.correlation_id] = link
        self._client_proxy.on_subscription_ready(msg.correlation_id, endpoint.status.id)
        for image in self._images:
            if link.matches_image(image) and image.is_accepting_subscriptions():
                join_position = image.rebuild_position.get()
                position = stream_counters.subscriber_pos(
                    self._counters,
                    link.registration_id,
                    image.session_id,
                    image.stream_id,
                    link.channel,
                    join_position,
                )
                image.add_subscriber(position)
                self._link(image, link, position)
                self._client_proxy.on_available_image(
                    image.correlation_id,
                    image.session_id,
                    image.stream_id,
                    link.registration_id,
                    position.id,
                    image.log_file_name,
                    image.source_identity,
                )

    def _close_subscription_link(self, link: SubscriptionLink) -> None:
        link.close()
        if not isinstance(link, NetworkSubscriptionLink) or link.endpoint is None:
            return
        endpoint = link.endpoint
        refs = self._receive_endpoint_refs.get(endpoint)
        if refs is None:
            return
        session_id = link.params.session_id
        if link.params.is_response and session_id is None:
            refs.pending_responses -= 1
        elif refs.decrement(link.stream_id, session_id) == 0:
            self._receiver_proxy.remove_subscription(endpoint, link.stream_id, session_id)
        if refs.is_empty():
            self._close_receive_endpoint(endpoint)

    def on_response_setup(self, correlation_id: int, response_session_id: int) -> None:
        """From the sender: the server's driver answered our request publication with the session id of its
        response publication; the response subscription ``correlation_id`` takes that session (once) and asks
        the server for a SETUP."""
        link = self._subscription_links.get(correlation_id)
        if not isinstance(link, NetworkSubscriptionLink) or link.endpoint is None or not link.params.is_response:
            return
        endpoint = link.endpoint
        refs = self._receive_endpoint_refs.get(endpoint)
        if refs is None:
            return
        session_id = link.params.session_id
        if session_id is None:
            session_id = response_session_id
            refs.pending_responses -= 1
            link.params = replace(link.params, session_id=session_id)
            if refs.increment(link.stream_id, session_id) == 1:
                self._receiver_proxy.add_subscription(endpoint, link.stream_id, session_id)
        self._receiver_proxy.request_setup(endpoint, link.stream_id, session_id)

    def on_response_connected(self, correlation_id: int) -> None:
        """From the sender: the response publication answering image ``correlation_id`` hears its client, so
        that image stops sending RSP_SETUP."""
        for image in self._images:
            if image.correlation_id == correlation_id:
                image.response_session_id = None

    def _close_receive_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        self._receive_endpoint_refs.pop(endpoint, None)
        if self._receive_endpoints.get(endpoint.udp_channel.canonical_form) is endpoint:
            del self._receive_endpoints[endpoint.udp_channel.canonical_form]
        self._receiver_proxy.close_receive_channel_endpoint(endpoint)

    def on_create_publication_image(
        self,
        setup: frames.SetupFrame,
        endpoint: ReceiveChannelEndpoint,
        transport_index: int,
        control_address: tuple[str, int],
        source: tuple[str, int],
    ) -> None:
        """From the receiver (DriverConductorProxy): a SETUP for a wanted session that has no image."""
        ctx = self._ctx
        if endpoint not in self._receive_endpoint_refs:
            return  # closed meanwhile
        bits = lbd.position_bits_to_shift(setup.term_length)
        join_position = lbd.compute_position(
            setup.active_term_id, setup.term_offset, bits, setup.initial_term_id
        )
        registration_id = self._to_driver.next_correlation_id()
        links = [
            link
            for link in self._subscription_links.values()
            if link.matches_endpoint(endpoint, setup.stream_id, setup.session_id)
        ]
        if not links:
            self._receiver_proxy.remove_pending_setup(endpoint, setup.session_id, setup.stream_id)
            return
        path = (
            ctx.aeron_path
            / IMAGES_DIR
            / log_file_name(
                endpoint.udp_channel.canonical_form, setup.session_id, setup.stream_id, registration_id
            )
        )
        # The log first: when the file system cannot hold it, nothing else has been made (the receiver
        # forgets the setup, so a later SETUP tries again).
        try:
            raw_log = self._log_factory.create(path, setup.term_length, ctx.term_buffer_sparse_file)
        except FileAllocationError as e:
            self._error_handler(e)
            self._receiver_proxy.remove_pending_setup(endpoint, setup.session_id, setup.stream_id)
            return
        positions = [
            stream_counters.subscriber_pos(
                self._counters,
                link.registration_id,
                setup.session_id,
                setup.stream_id,
                link.channel,
                join_position,
            )
            for link in links
        ]
        channel = endpoint.channel
        hwm = stream_counters.receiver_hwm(
            self._counters, registration_id, setup.session_id, setup.stream_id, channel
        )
        rebuild = stream_counters.receiver_pos(
            self._counters, registration_id, setup.session_id, setup.stream_id, channel
        )
        lbd.initialise_image_metadata(
            raw_log.meta_data,
            session_id=setup.session_id,
            stream_id=setup.stream_id,
            initial_term_id=setup.initial_term_id,
            mtu_length=setup.mtu_length,
            term_length=setup.term_length,
            page_size=ctx.file_page_size,
            correlation_id=registration_id,
        )
        is_reliable = all(link.params.is_reliable for link in links)
        delay_generator = (
            OptimalMulticastDelayGenerator(rng=self._rng)
            if endpoint.is_multicast
            else StaticDelayGenerator(ctx.nak_unicast_delay_ns, immediate_first=True)
        )
        # The window is capped by what the socket can buffer (a host whose net.core.rmem_max is below the
        # configured SO_RCVBUF gets a smaller window rather than loss on every full burst).
        window_cap = endpoint.receiver_window_cap(transport_index)
        initial_window = endpoint.udp_channel.receiver_window_length or ctx.initial_window_length
        if window_cap is not None:
            initial_window = max(min(initial_window, window_cap), setup.mtu_length)
        image = PublicationImage(
            registration_id,
            ctx.image_liveness_timeout_ns,
            endpoint,
            control_address,
            transport_index,
            setup.session_id,
            setup.stream_id,
            setup.initial_term_id,
            setup.active_term_id,
            setup.term_offset,
            raw_log,
            delay_generator,
            positions,
            hwm,
            rebuild,
            source,
            initial_window,
            self._loss_report,
            is_reliable,
            self._system_counters,
            self._nano_clock(),
            self._epoch_clock_ms,
            # Unicast: repeats and keys the sender acts on (docs/wire.md section 7, "Unicast NAK policy");
            # multicast NAKs stay Aeron's randomised, suppressible ones. Unreliable images fill each gap
            # with padding, which needs the gap itself, not a range around it.
            nak_policy=(
                UnicastNakPolicy(ctx.nak_unicast_delay_ns) if is_reliable and not endpoint.is_multicast else None
            ),
            watch_version=self.watch_version,
        )
        image.setup_flags = setup.flags
        image.stream_naks_sent = stream_counters.receiver_naks_sent(
            self._counters, registration_id, setup.session_id, setup.stream_id, channel
        )
        for link, position in zip(links, positions, strict=True):
            self._link(image, link, position)
        self._images.append(image)
        self.watch_version.bump()
        self._receiver_proxy.new_publication_image(endpoint, image)
        for link, position in zip(links, positions, strict=True):
            self._client_proxy.on_available_image(
                registration_id,
                setup.session_id,
                setup.stream_id,
                link.registration_id,
                position.id,
                image.log_file_name,
                image.source_identity,
            )

    def _check_images(self, now_ns: int) -> int:
        ended = []
        for image in self._images:
            if (
                image.state is ImageState.ACTIVE or image.state is ImageState.INIT
            ) and not image.has_activity_and_not_end_of_stream(now_ns):
                image.if_active_go_inactive(now_ns)
                self._receiver_proxy.remove_publication_image(image.channel_endpoint, image)
            image.on_time_event(now_ns, self)
            # The receiver may still be routing data to it until its release command has run.
            if image.has_reached_end_of_life and image.has_receiver_released:
                ended.append(image)
        for image in ended:
            self._images.remove(image)
            self.watch_version.bump()
            for link in self._subscription_links.values():
                link.unlink(image)
            image.close()
        return len(ended)

    def on_image_linger(self, image: PublicationImage) -> None:
        self._announce_unavailable(
            image, image.correlation_id, image.stream_id, image.channel_endpoint.channel
        )
        self._receiver_proxy.remove_cool_down(image.channel_endpoint, image.session_id, image.stream_id)
