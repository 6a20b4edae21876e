"""Sender agent: sends network publications' data, setups and heartbeats, and serves SM/NAK/RTTM."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from driver.agent.command_queue import CommandQueue
from driver.agent.idle_strategy import Waker
from driver.concurrent.word_watch import WatchVersion, Word
from driver.driver_conductor_proxy import DriverConductorProxy
from driver.media.send_channel_endpoint import SendChannelEndpoint
from driver.media.udp_batch import ReceiveBatch
from driver.native_declaration import Declaration, TakeBack
from driver.network_publication import NetworkPublication
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters

SEND_TO_STATUS_POLL_RATIO = 6
CONTROL_POLL_INTERVAL_NS = 100_000_000


class Sender:
    role_name = "sender"

    def __init__(
        self,
        system_counters: SystemCounters,
        nano_clock: Callable[[], int] = time.monotonic_ns,
        commands: CommandQueue | None = None,
        conductor_proxy: DriverConductorProxy | None = None,
    ) -> None:
        self.commands = commands if commands is not None else CommandQueue()  # from the SenderProxy
        self._conductor_proxy = conductor_proxy  # response channel events (RSP_SETUP, response connected)
        self.waker: Waker | None = None  # set by the runner: socket readiness ends its park
        self._nano_clock = nano_clock
        self._publications: list[NetworkPublication] = []
        self.watch_version = WatchVersion()  # bumped as publications come and go (watched_words)
        self._endpoints: list[SendChannelEndpoint] = []
        self._batch = ReceiveBatch(max_messages=32, slot_length=2048)
        self._round_robin_index = 0
        self._duty_cycle_count = 0
        self._control_poll_deadline_ns = 0
        self._counters = {
            "invalid": system_counters.get(SC.INVALID_PACKETS),
            "sm": system_counters.get(SC.STATUS_MESSAGES_RECEIVED),
            "nak": system_counters.get(SC.NAK_MESSAGES_RECEIVED),
        }

    def on_start(self) -> None:
        pass

    def on_close(self) -> None:
        # An endpoint the conductor already let go of may still wait for its queued close: close it here.
        for endpoint in list(self._endpoints):
            self.on_close_send_channel_endpoint(endpoint)

    # --- commands (from the conductor, through driver.sender_proxy.SenderProxy) -------------------

    def on_register_send_channel_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        self._endpoints.append(endpoint)
        if self.waker is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: INVOKER mode polls anyway
                # Status messages and NAKs come seldom: a cycle reads the socket only once the loop saw it
                # readable (a system call saved per endpoint and idle cycle).
                endpoint.transport.register_reader(asyncio.get_running_loop(), self.waker, skip_unready_reads=True)

    def on_close_send_channel_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        if endpoint in self._endpoints:
            self._endpoints.remove(endpoint)
        with contextlib.suppress(RuntimeError):
            endpoint.transport.unregister_reader(asyncio.get_running_loop())
        endpoint.close()

    def on_new_network_publication(self, publication: NetworkPublication) -> None:
        publication.channel_endpoint.add_publication(publication)
        self._publications.append(publication)
        self.watch_version.bump()

    def on_remove_network_publication(self, publication: NetworkPublication) -> None:
        publication.channel_endpoint.remove_publication(publication)
        if publication in self._publications:
            self._publications.remove(publication)
            self.watch_version.bump()
        publication.has_sender_released = True  # as 1.15.1: the conductor frees it after this

    def on_resolution_change(self, endpoint: SendChannelEndpoint, address: tuple[str, int]) -> None:
        endpoint.on_resolution_change(address)

    def on_add_destination(self, endpoint: SendChannelEndpoint, address: tuple[str, int]) -> None:
        endpoint.add_destination(address)

    def on_remove_destination(self, endpoint: SendChannelEndpoint, address: tuple[str, int]) -> None:
        endpoint.remove_destination(address)

    # --- duty cycle -------------------------------------------------------------------------------

    def watched_words(self) -> list[Word]:
        """What publishers write that gives this agent work: each publication's term tails."""
        return [word for publication in self._publications for word in publication.tail_words()]

    def has_queued_work(self) -> bool:
        proxy = self._conductor_proxy
        return bool(self.commands) or (proxy is not None and bool(proxy.backlog))

    # --- the native steady-state cycle (driver/fast_cycle.py, driver/native_declaration.py) ---------------

    def native_declaration(self) -> Declaration | None:
        """The publications' send steps the native cycle may run and the sockets whose readiness (a status
        message, a NAK) needs this agent; None while any publication needs this agent (see
        ``NetworkPublication.native_send_step``) or commands wait."""
        if self.has_queued_work():
            return None
        steps = []
        for publication in self._publications:
            step = publication.native_send_step()
            if step is None:
                return None
            steps.append(step)
        return Declaration(send_steps=steps, control=[endpoint.transport for endpoint in self._endpoints])

    def take_back(self, taken: TakeBack) -> None:
        """Nothing to take: the native cycle ran the publications' own send steps, their accounting included."""

    def do_work(self) -> int:
        if not self._endpoints and not self.commands:
            return 0  # nothing to send or poll: keep the idle duty cycle cheap
        now_ns = self._nano_clock()
        work = self.commands.drain(self)
        if self._conductor_proxy is not None and self._conductor_proxy.backlog:
            work += self._conductor_proxy.flush()
        bytes_sent = self._send(now_ns)
        self._duty_cycle_count += 1
        if (
            bytes_sent == 0
            or self._duty_cycle_count >= SEND_TO_STATUS_POLL_RATIO
            or now_ns > self._control_poll_deadline_ns
        ):
            self._duty_cycle_count = 0
            self._control_poll_deadline_ns = now_ns + CONTROL_POLL_INTERVAL_NS
            for endpoint in self._endpoints:
                work += endpoint.poll_control(self._batch, now_ns, self._counters, self._conductor_proxy)
        return work + bytes_sent

    def _send(self, now_ns: int) -> int:
        publications = self._publications
        count = len(publications)
        if count == 0:
            return 0
        start = self._round_robin_index = (self._round_robin_index + 1) % count
        bytes_sent = 0
        for i in range(count):
            bytes_sent += publications[(start + i) % count].send(now_ns)  # BYTES_SENT counted as it goes
        return bytes_sent
