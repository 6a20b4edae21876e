"""DriverConductor: the agent that serves clients (commands in, events out), keeps their liveness,
owns resources and counters, and heartbeats the to-driver ring buffer so clients know it is alive."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from driver.client_command_adapter import ClientCommandAdapter, ControlProtocolError
from driver.client_proxy import ClientProxy
from driver.concurrent.counters import AtomicCounter, CountersManager, client_heartbeat_key
from driver.concurrent.ring_buffer import ManyToOneRingBuffer
from driver.context import DriverContext
from driver.protocol import control_protocol as cp
from driver.status.system_counters import SystemCounterDescriptor, SystemCounters

CLIENT_HEARTBEAT_TYPE_ID = 11


@dataclass
class CounterLink:
    registration_id: int
    client_id: int
    counter: AtomicCounter


@dataclass
class AeronClient:
    client_id: int
    liveness_timeout_ms: int
    heartbeat: AtomicCounter
    time_of_last_keepalive_ms: int
    counter_links: dict[int, CounterLink] = field(default_factory=dict)

    def keepalive(self, now_ms: int) -> None:
        self.time_of_last_keepalive_ms = now_ms
        self.heartbeat.set(now_ms)

    def has_timed_out(self, now_ms: int) -> bool:
        return now_ms > self.time_of_last_keepalive_ms + self.liveness_timeout_ms


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
    ) -> None:
        self._ctx = ctx
        self._to_driver = to_driver
        self._client_proxy = client_proxy
        self._counters = counters
        self._system_counters = system_counters
        self._epoch_clock_ms = epoch_clock_ms
        self._nano_clock = nano_clock
        self._command_adapter = ClientCommandAdapter(to_driver, self, client_proxy, error_handler)
        self._clients: dict[int, AeronClient] = {}
        self._timer_interval_ns = ctx.timer_interval_ns
        self._next_timer_ns = 0
        self._now_ms = epoch_clock_ms()
        self._client_liveness_timeout_ms = max(1, ctx.client_liveness_timeout_ns // 1_000_000)
        self._unblock_timeout_ns = ctx.client_liveness_timeout_ns
        self._last_consumer_position = to_driver.consumer_position()
        self._time_of_last_consumer_move_ns = nano_clock()

    # --- agent -------------------------------------------------------------------------------

    def on_start(self) -> None:
        self._to_driver.set_consumer_heartbeat_time(self._epoch_clock_ms())
        self._next_timer_ns = self._nano_clock() + self._timer_interval_ns

    def do_work(self) -> int:
        now_ns = self._nano_clock()
        work = self._command_adapter.receive()
        if now_ns >= self._next_timer_ns:
            self._next_timer_ns = now_ns + self._timer_interval_ns
            work += self._on_timer(now_ns)
        return work

    def on_close(self) -> None:
        for client in list(self._clients.values()):
            self._release_client(client)

    # --- timers --------------------------------------------------------------------------------

    def _on_timer(self, now_ns: int) -> int:
        self._now_ms = now_ms = self._epoch_clock_ms()
        self._to_driver.set_consumer_heartbeat_time(now_ms)
        work = self._check_clients(now_ms)
        work += self._check_for_blocked_commands(now_ns)
        return work

    def _check_clients(self, now_ms: int) -> int:
        expired = [c for c in self._clients.values() if c.has_timed_out(now_ms)]
        for client in expired:
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
        if (
            ring.producer_position() > consumer_position
            and now_ns > self._time_of_last_consumer_move_ns + self._unblock_timeout_ns
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
                f"client-heartbeat: {client_id}", CLIENT_HEARTBEAT_TYPE_ID, client_heartbeat_key(client_id)
            )
            heartbeat.set(now_ms)
            client = AeronClient(client_id, self._client_liveness_timeout_ms, heartbeat, now_ms)
            self._clients[client_id] = client
        return client

    def _release_client(self, client: AeronClient) -> None:
        for link in client.counter_links.values():
            link.counter.close()
        client.counter_links.clear()
        client.heartbeat.close()
        self._clients.pop(client.client_id, None)

    def on_client_keepalive(self, client_id: int) -> None:
        client = self._clients.get(client_id)
        if client is not None:
            client.keepalive(self._epoch_clock_ms())

    def on_client_close(self, client_id: int) -> None:
        # As 1.15.1: the client is reaped (and counted as timed out) at the next timer check.
        client = self._clients.get(client_id)
        if client is not None:
            client.time_of_last_keepalive_ms = 0
            self._next_timer_ns = 0

    # --- counters ------------------------------------------------------------------------------

    def on_add_counter(self, msg: cp.CounterMessage) -> None:
        client = self._get_or_add_client(msg.client_id)
        try:
            counter = self._counters.new_counter(msg.label, msg.type_id, msg.key)
        except Exception as e:
            raise ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, f"cannot allocate counter: {e}") from e
        client.counter_links[msg.correlation_id] = CounterLink(msg.correlation_id, msg.client_id, counter)
        self._client_proxy.on_counter_ready(msg.correlation_id, counter.id)

    def on_remove_counter(self, msg: cp.RemoveMessage) -> None:
        client = self._clients.get(msg.client_id)
        link = client.counter_links.pop(msg.registration_id, None) if client is not None else None
        if link is None:
            raise ControlProtocolError(
                cp.ErrorCode.UNKNOWN_COUNTER, f"Unknown counter: {msg.registration_id}"
            )
        counter_id = link.counter.id
        link.counter.close()
        self._client_proxy.on_operation_succeeded(msg.correlation_id)
        self._client_proxy.on_unavailable_counter(msg.registration_id, counter_id)

    # --- publications, subscriptions, destinations (log buffers and UDP come next) ------------------

    def _not_yet(self, what: str) -> None:
        raise ControlProtocolError(cp.ErrorCode.GENERIC_ERROR, f"{what} is not supported by this driver yet")

    def on_add_publication(self, msg: cp.PublicationMessage, exclusive: bool) -> None:
        self._get_or_add_client(msg.client_id)
        self._not_yet("ADD_EXCLUSIVE_PUBLICATION" if exclusive else "ADD_PUBLICATION")

    def on_remove_publication(self, msg: cp.RemoveMessage) -> None:
        raise ControlProtocolError(
            cp.ErrorCode.UNKNOWN_PUBLICATION, f"Unknown publication: {msg.registration_id}"
        )

    def on_add_subscription(self, msg: cp.SubscriptionMessage) -> None:
        self._get_or_add_client(msg.client_id)
        self._not_yet("ADD_SUBSCRIPTION")

    def on_remove_subscription(self, msg: cp.RemoveMessage) -> None:
        raise ControlProtocolError(
            cp.ErrorCode.UNKNOWN_SUBSCRIPTION, f"Unknown subscription: {msg.registration_id}"
        )

    def on_add_destination(self, msg: cp.DestinationMessage) -> None:
        raise ControlProtocolError(
            cp.ErrorCode.UNKNOWN_PUBLICATION, f"Unknown publication: {msg.registration_correlation_id}"
        )

    def on_remove_destination(self, msg: cp.DestinationMessage) -> None:
        self.on_add_destination(msg)

    def on_add_rcv_destination(self, msg: cp.DestinationMessage) -> None:
        raise ControlProtocolError(
            cp.ErrorCode.UNKNOWN_SUBSCRIPTION, f"Unknown subscription: {msg.registration_correlation_id}"
        )

    def on_remove_rcv_destination(self, msg: cp.DestinationMessage) -> None:
        self.on_add_rcv_destination(msg)
