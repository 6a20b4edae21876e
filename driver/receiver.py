"""Receiver agent: drains receive sockets in batches, rebuilds images, and sends what the conductor
scheduled (status messages, NAKs) plus setup requests for unknown sessions."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from functools import partial

from driver.agent.command_queue import CommandQueue
from driver.agent.idle_strategy import Waker
from driver.concurrent.logbuffer.term_rebuilder import RebuildBatch
from driver.concurrent.word_watch import WatchVersion, Word
from driver.data_packet_dispatcher import DataPacketDispatcher
from driver.data_step import ReceiveStep
from driver.driver_conductor_proxy import DriverConductorProxy
from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
from driver.media.udp_batch import ReceiveBatch
from driver.media.udp_transport import UdpTransport
from driver.native_declaration import Declaration, ReceiveSlot, TakeBack
from driver.protocol import frames
from driver.protocol.udp_channel import UdpChannel
from driver.publication_image import PublicationImage
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters

PENDING_SETUPS_TIMEOUT_NS = 1_000_000_000


class Receiver:
    role_name = "receiver"

    def __init__(
        self,
        system_counters: SystemCounters,
        loss_generator=None,
        nano_clock: Callable[[], int] = time.monotonic_ns,
        *,
        conductor_proxy: DriverConductorProxy | None = None,
        commands: CommandQueue | None = None,
    ) -> None:
        self.commands = commands if commands is not None else CommandQueue()  # from the ReceiverProxy
        # Where new sessions go to get an image; alone (tests), the requests just wait in its own queue.
        self._conductor_proxy = conductor_proxy or DriverConductorProxy(
            CommandQueue(), system_counters.get(SC.CONDUCTOR_PROXY_FAILS)
        )
        self.waker: Waker | None = None  # set by the runner: socket readiness ends its park
        self._nano_clock = nano_clock
        self.watch_version = WatchVersion()  # nothing to watch: datagrams wake it through the loop
        self._batch = ReceiveBatch(gro=True)  # splits what a socket with UDP_GRO coalesced
        self._endpoints: list[tuple[ReceiveChannelEndpoint, DataPacketDispatcher]] = []
        self._dispatchers: dict[ReceiveChannelEndpoint, DataPacketDispatcher] = {}
        self._images: list[PublicationImage] = []
        self._pending_setups: list[tuple[int, int, int, DataPacketDispatcher]] = []
        # (when, endpoint, control address, transport index): an MDC subscriber's or an MDS destination's ask for
        # SETUPs, sent again each PENDING_SETUPS_TIMEOUT_NS (a lost one would leave that publisher silent for good).
        self._periodic_setups: list[tuple[int, ReceiveChannelEndpoint, tuple[str, int], int]] = []
        self._invalid_packets = system_counters.get(SC.INVALID_PACKETS)
        self._bytes_received = system_counters.get(SC.BYTES_RECEIVED)
        # What the receive steps (driver/data_step.py) count: BYTES_RECEIVED, under- and over-runs, rejects.
        self._step_counters = (
            self._bytes_received.word(),
            system_counters.get(SC.FLOW_CONTROL_UNDER_RUNS).word(),
            system_counters.get(SC.FLOW_CONTROL_OVER_RUNS).word(),
            self._invalid_packets.word(),
        )
        self._loss_generator = loss_generator
        # Indexes of the current batch the loss generator dropped (the batch rebuild path), else None.
        self._dropped: set[int] | None = None
        # Per endpoint: (dispatcher version, its receive step over a native table, its images) for the batch
        # rebuild of data.
        self._rebuild_tables: dict[ReceiveChannelEndpoint, tuple[int, ReceiveStep, list[PublicationImage]]] = {}

    def on_start(self) -> None:
        pass

    def on_close(self) -> None:
        # An endpoint the conductor already let go of may still wait for its queued close: close it here.
        for endpoint, _ in list(self._endpoints):
            self.on_close_receive_channel_endpoint(endpoint)

    def dispatcher(self, endpoint: ReceiveChannelEndpoint) -> DataPacketDispatcher | None:
        """The endpoint's dispatcher (None before its registration ran or after its close)."""
        return self._dispatchers.get(endpoint)

    def has_pending_commands(self) -> bool:
        return bool(self.commands) or self._conductor_proxy.backlog > 0

    # --- commands (from the conductor, through driver.receiver_proxy.ReceiverProxy) ---------------

    def on_register_receive_channel_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        dispatcher = DataPacketDispatcher(
            self._conductor_proxy.create_publication_image, self.on_pending_setup
        )
        self._dispatchers[endpoint] = dispatcher
        self._endpoints.append((endpoint, dispatcher))
        if endpoint.udp_channel.has_explicit_control:
            # An MDC subscriber makes itself known to the publisher's control address, and keeps doing so.
            control = endpoint.udp_channel.local_control
            endpoint.send_setup_eliciting_status_message(control, 0, 0)
            self._periodic_setups.append((self._nano_clock() + PENDING_SETUPS_TIMEOUT_NS, endpoint, control, 0))
        for transport in endpoint.transports:
            if transport is not None:
                self._register_reader(transport)

    def on_close_receive_channel_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        self._endpoints = [(e, d) for e, d in self._endpoints if e is not endpoint]
        self._dispatchers.pop(endpoint, None)
        self._periodic_setups = [p for p in self._periodic_setups if p[1] is not endpoint]
        self._pending_setups = [p for p in self._pending_setups if p[3] in self._dispatchers.values()]
        entry = self._rebuild_tables.pop(endpoint, None)
        if entry is not None:
            entry[1].table.clear()
        for transport in endpoint.transports:
            if transport is not None:
                with contextlib.suppress(RuntimeError):
                    transport.unregister_reader(asyncio.get_running_loop())
        endpoint.close()

    def _register_reader(self, transport: UdpTransport) -> None:
        if self.waker is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: INVOKER mode polls anyway
                transport.register_reader(asyncio.get_running_loop(), self.waker)

    def on_add_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None
    ) -> None:
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is not None:
            dispatcher.add_subscription(stream_id, session_id)

    def on_remove_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None
    ) -> None:
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is not None:
            dispatcher.remove_subscription(stream_id, session_id)

    def on_request_setup(self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int) -> None:
        if endpoint in self._dispatchers and endpoint.udp_channel.has_explicit_control:
            endpoint.send_setup_eliciting_status_message(endpoint.udp_channel.local_control, session_id, stream_id)

    def on_add_destination(
        self, endpoint: ReceiveChannelEndpoint, udp_channel: UdpChannel, transport: UdpTransport
    ) -> None:
        """MDS: one more socket feeding the endpoint's images (ADD_RCV_DESTINATION)."""
        if endpoint not in self._dispatchers:
            transport.close()  # the endpoint closed while the command waited: nothing to feed
            return
        endpoint.add_destination(udp_channel, transport)
        self._register_reader(transport)
        if udp_channel.has_explicit_control:
            index = len(endpoint.transports) - 1
            control = udp_channel.local_control
            endpoint.send_setup_eliciting_status_message(control, 0, 0, index)
            self._periodic_setups.append((self._nano_clock() + PENDING_SETUPS_TIMEOUT_NS, endpoint, control, index))

    def on_remove_destination(self, endpoint: ReceiveChannelEndpoint, canonical_form: str) -> None:
        transport = endpoint.remove_destination(canonical_form)
        if transport is not None:
            with contextlib.suppress(RuntimeError):
                transport.unregister_reader(asyncio.get_running_loop())
            transport.close()

    def on_new_publication_image(self, endpoint: ReceiveChannelEndpoint, image: PublicationImage) -> None:
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is None:
            image.has_receiver_released = True  # the endpoint closed meanwhile: no data will come
            return
        self._images.append(image)
        dispatcher.add_publication_image(image)

    def on_remove_publication_image(self, endpoint: ReceiveChannelEndpoint, image: PublicationImage) -> None:
        if image in self._images:
            self._images.remove(image)
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is not None:
            dispatcher.remove_publication_image(image)
        image.has_receiver_released = True  # as 1.15.1's sender release: the conductor may now free it

    def on_remove_cool_down(self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int) -> None:
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is not None:
            dispatcher.remove_cool_down(session_id, stream_id)

    def on_remove_pending_setup(
        self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int
    ) -> None:
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is not None:
            dispatcher.remove_pending_setup(session_id, stream_id)

    def on_pending_setup(
        self, session_id: int, stream_id: int, endpoint: ReceiveChannelEndpoint, now_ns: int
    ) -> None:
        """A setup was asked for: if no SETUP comes within 1 s, data may ask again."""
        dispatcher = self._dispatchers.get(endpoint)
        if dispatcher is not None:
            self._pending_setups.append(
                (now_ns + PENDING_SETUPS_TIMEOUT_NS, session_id, stream_id, dispatcher)
            )

    # --- duty cycle -------------------------------------------------------------------------------

    def watched_words(self) -> list[Word]:
        return []  # its work arrives as datagrams (socket readiness) or from the conductor (commands)

    def has_queued_work(self) -> bool:
        if self.commands or self._conductor_proxy.backlog:
            return True
        # What the conductor scheduled for this agent to send (a status message, NAKs).
        return any(image.has_pending_sends for image in self._images)

    def do_work(self) -> int:
        # Commands that did not fit the conductor's queue go first, before any newer one is offered.
        work = self._conductor_proxy.flush()
        if not self._endpoints and not self.commands and not self._images:
            return work  # nothing to poll or send: keep the idle duty cycle cheap
        now_ns = self._nano_clock()
        work += self.commands.drain(self)
        for endpoint, dispatcher in self._endpoints:
            work += self._poll(endpoint, dispatcher, now_ns)
        for image in self._images:
            if image.has_pending_sends:  # what the conductor left to send: a status message, NAKs
                work += image.send_pending_status_message() + image.process_pending_loss()
        if self._pending_setups and self._pending_setups[0][0] <= now_ns:
            expired = [p for p in self._pending_setups if p[0] <= now_ns]
            self._pending_setups = [p for p in self._pending_setups if p[0] > now_ns]
            for _, session_id, stream_id, dispatcher in expired:
                dispatcher.remove_pending_setup(session_id, stream_id)
        if self._periodic_setups and self._periodic_setups[0][0] <= now_ns:  # in time order: one interval
            due = [p for p in self._periodic_setups if p[0] <= now_ns]
            self._periodic_setups = [p for p in self._periodic_setups if p[0] > now_ns]
            for _, endpoint, control, index in due:
                if index < len(endpoint.transports) and endpoint.transports[index] is not None:
                    endpoint.send_setup_eliciting_status_message(control, 0, 0, index)
                    self._periodic_setups.append((now_ns + PENDING_SETUPS_TIMEOUT_NS, endpoint, control, index))
                    work += 1
        return work

    def _poll(self, endpoint: ReceiveChannelEndpoint, dispatcher: DataPacketDispatcher, now_ns: int) -> int:
        batch = self._batch
        total = 0
        for transport_index, transport in enumerate(endpoint.transports):
            if transport is None:
                continue
            received = transport.receive_batch(batch)
            while received:
                total += received
                if isinstance(batch, ReceiveBatch):
                    if self._loss_generator is not None:
                        self._drop_lost(batch, received)
                    try:
                        self._rebuild(endpoint, dispatcher, batch, received, transport_index, now_ns)
                    finally:
                        self._dropped = None
                else:
                    for i in range(received):
                        self._on_datagram(endpoint, dispatcher, batch, i, transport_index, now_ns)
                if batch.drained:
                    break
                received = transport.receive_batch(batch)
        return total

    def _rebuild(
        self,
        endpoint: ReceiveChannelEndpoint,
        dispatcher: DataPacketDispatcher,
        batch: ReceiveBatch,
        received: int,
        transport_index: int,
        now_ns: int,
    ) -> None:
        """The batch's data for known images in one native call (the receive step, its accounting included); the
        rest datagram by datagram."""
        step, images = self._rebuild_table(endpoint, dispatcher)
        if not images:
            for i in range(received):
                self._on_datagram(endpoint, dispatcher, batch, i, transport_index, now_ns)
            return
        table = step.table
        for index, image in enumerate(images):
            last_sm_position, window_limit = image.rebuild_window()
            table.prepare(
                index, last_sm_position, window_limit, image.is_accepting_batch_inserts(transport_index)
            )
        unhandled = step.run(batch)
        left = table.unhandled(unhandled) if unhandled else ()
        self._after_rebuild(endpoint, dispatcher, batch, table, images, left, transport_index, now_ns)

    def _after_rebuild(
        self,
        endpoint: ReceiveChannelEndpoint,
        dispatcher: DataPacketDispatcher,
        batch: ReceiveBatch,
        table: RebuildBatch,
        images: list[PublicationImage],
        unhandled: Sequence[int],
        transport_index: int,
        now_ns: int,
    ) -> None:
        """After a receive step (this agent's or the native cycle's), which counted and raised the high-water
        marks: each image's frame times, then the datagrams the table left, one by one."""
        for index, image in enumerate(images):
            inserted, _, _, _, invalid = table.result(index)
            if inserted or invalid:
                image.on_batch_rebuilt(transport_index, inserted, invalid, now_ns)
        for i in unhandled:
            self._on_datagram(endpoint, dispatcher, batch, i, transport_index, now_ns)

    def _rebuild_table(
        self, endpoint: ReceiveChannelEndpoint, dispatcher: DataPacketDispatcher
    ) -> tuple[ReceiveStep, list[PublicationImage]]:
        """The endpoint's receive step over its native rebuild table and its images, set again when the
        dispatcher's images changed."""
        entry = self._rebuild_tables.get(endpoint)
        if entry is None or entry[0] != dispatcher.version:
            table = entry[1].table if entry is not None else RebuildBatch()
            images = [i for i in dispatcher.images() if not i.has_reached_end_of_life]  # DONE: closed
            count = table.set_images(
                [
                    (
                        i.session_id,
                        i.stream_id,
                        i.initial_term_id,
                        i.position_bits_to_shift,
                        i.raw_log.term_buffers,
                    )
                    for i in images
                ]
            )
            images = images[:count]
            step = ReceiveStep(table, [image.hwm_position.word() for image in images], self._step_counters)
            entry = self._rebuild_tables[endpoint] = (dispatcher.version, step, images)
        return entry[1], entry[2]

    # --- the native steady-state cycle (driver/fast_cycle.py, driver/native_declaration.py) ---------------

    def native_declaration(self) -> Declaration | None:
        """Each endpoint as the native cycle reads it and runs its receive step, its table prepared as
        :meth:`_rebuild` would prepare it now; None while any endpoint needs this agent for its data (several
        sockets, the loss generator, UDP_GRO not settled yet, an image not taking batch inserts), commands
        wait, or a status message or NAK is to be sent."""
        if self._loss_generator is not None or self.has_queued_work():
            return None
        slots = []
        for endpoint, dispatcher in self._endpoints:
            transports = endpoint.transports
            if len(transports) != 1 or transports[0] is None:
                return None
            fd = transports[0].native_receive_fd()
            if fd is None:
                return None
            step, images = self._rebuild_table(endpoint, dispatcher)
            for index, image in enumerate(images):
                if not image.is_accepting_batch_inserts(0):
                    return None
                last_sm_position, window_limit = image.rebuild_window()
                step.table.prepare(index, last_sm_position, window_limit, True)
            slots.append(ReceiveSlot(endpoint, fd, step, images, self._batch))
        return Declaration(receive=slots)

    def take_back(self, taken: TakeBack) -> None:
        """The images' frame times for what the native cycles inserted (their receive steps counted it and raised
        the high-water marks), then the rest of a batch a native cycle left (a datagram not for a known image,
        an under- or over-run, a rejected insert): what :meth:`_rebuild` does after its receive step."""
        now_ns = taken.now_ns
        for slot, inserted in taken.inserted:
            for image, count in zip(slot.images, inserted, strict=False):
                if count:
                    image.on_batch_rebuilt(0, count, 0, now_ns)
        if taken.stopped is not None:
            slot, count, unhandled = taken.stopped
            dispatcher = self._dispatchers.get(slot.endpoint)
            if dispatcher is not None:
                self._batch.count = count
                self._after_rebuild(
                    slot.endpoint, dispatcher, self._batch, slot.step.table, slot.images, unhandled, 0, now_ns
                )

    def _drop_lost(self, batch: ReceiveBatch, received: int) -> None:
        """The loss generator's draws for a batch, in arrival order as datagram by datagram: a dropped
        datagram's type is overwritten (the batch is scratch) so the native rebuild leaves it to
        :meth:`_on_datagram`, which skips it. Keeps the rebuild's speed under loss (tools/bench)."""
        generator = self._loss_generator
        assert generator is not None
        dropped = set()
        for i in range(received):
            packet = batch.data(i)
            if frames.validate_frame(len(packet), packet) is None and generator.should_drop(packet):
                packet[frames.TYPE_OFFSET : frames.TYPE_OFFSET + 2] = b"\xfe\xff"
                dropped.add(i)
        self._dropped = dropped

    def _on_datagram(
        self,
        endpoint: ReceiveChannelEndpoint,
        dispatcher: DataPacketDispatcher,
        batch: ReceiveBatch,
        i: int,
        transport_index: int,
        now_ns: int,
    ) -> None:
        if self._dropped is not None and i in self._dropped:
            return
        packet = batch.data(i)
        length = len(packet)
        if frames.validate_frame(length, packet) is not None:
            self._invalid_packets.increment()
            return
        if (
            self._dropped is None
            and self._loss_generator is not None
            and self._loss_generator.should_drop(packet)
        ):
            return
        frame_type = frames.frame_type(packet)
        if frame_type in (frames.HDR_TYPE_DATA, frames.HDR_TYPE_PAD):
            header = frames.DATA_HEADER.unpack_from(packet, 0)
            self._bytes_received.get_and_add(length)  # as 1.15.1: heartbeats and dropped data included
            # The source address is decoded only when needed (a new session or connection): ~1 us saved.
            dispatcher.on_data_packet(
                endpoint, header, packet, length, partial(batch.address, i), transport_index, now_ns
            )
        elif frame_type == frames.HDR_TYPE_SETUP:
            dispatcher.on_setup_message(
                endpoint, frames.SetupFrame.decode(packet), batch.address(i), transport_index
            )
        elif frame_type == frames.HDR_TYPE_RTTM:
            rttm = frames.RttmFrame.decode(packet)
            if rttm.flags & frames.REPLY_FLAG and rttm.receiver_id in (0, endpoint.receiver_id):
                endpoint.send_rttm_reply(
                    batch.address(i), rttm.session_id, rttm.stream_id, rttm.echo_timestamp_ns
                )
