"""NetworkPublication: a publication sent over UDP by the sender agent (Aeron 1.15.1 semantics).

The sender side (send, resend, on_status_message, on_nak, on_rttm) runs in the sender's duty cycle; the
conductor side (update_publisher_limit, on_time_event, inc_ref/dec_ref) in the conductor's. Shared
state between them is limited to counters and plain fields, as the Java driver's volatile fields.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import AtomicCounter
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.log_buffer_unblocker import BlockedLogWatch, unblock
from driver.concurrent.logbuffer.term_scanner import scan_for_availability
from driver.concurrent.word_watch import WatchVersion, Word
from driver.data_step import SendStep
from driver.protocol import frames
from driver.protocol.response_channel import NO_RESPONSE, ResponseParams
from driver.protocol.retransmit_handler import RetransmitHandler
from driver.protocol.untethered import UntetheredSubscriptions, window_limit
from driver.raw_log import RawLog
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters

if TYPE_CHECKING:
    from driver.conductor import DriverConductor
    from driver.media.send_channel_endpoint import SendChannelEndpoint

PUBLICATION_SETUP_TIMEOUT_NS = 100_000_000
PUBLICATION_HEARTBEAT_TIMEOUT_NS = 100_000_000
SEND_BURST = 64  # datagrams per publication per sender duty cycle (one sendmmsg; flow control bounds it)
FLOW_CONTROL_IDLE_INTERVAL_NS = 1_000_000
"""How often an idle publication lets its flow control look at its timers (receivers gone quiet, the end of a
stream's linger; seconds and milliseconds): not in every Python duty cycle."""


class State(enum.Enum):
    ACTIVE = "active"
    DRAINING = "draining"
    LINGER = "linger"
    CLOSING = "closing"


class NetworkPublication:
    def __init__(
        self,
        registration_id: int,
        channel: str,
        session_id: int,
        stream_id: int,
        tag: int | None,
        raw_log: RawLog,
        channel_endpoint: SendChannelEndpoint,
        publisher_pos: AtomicCounter,
        publisher_limit: AtomicCounter,
        sender_position: AtomicCounter,
        sender_limit: AtomicCounter,
        flow_control,
        retransmit_handler: RetransmitHandler,
        system_counters: SystemCounters,
        term_window_length: int,
        linger_timeout_ns: int,
        connection_timeout_ns: int,
        unblock_timeout_ns: int,
        nano_clock: Callable[[], int],
        is_exclusive: bool,
        spies_simulate_connection: bool = False,
        sender_bpe: AtomicCounter | None = None,
        naks_received: AtomicCounter | None = None,
        response: ResponseParams = NO_RESPONSE,
        fc_receivers: AtomicCounter | None = None,
        watch_version: WatchVersion | None = None,
    ) -> None:
        self.fc_receivers = fc_receivers
        self.response = response
        self.is_response = response.is_response
        # A response publication sends only to the client whose setup-eliciting SM named its session.
        self.response_address: tuple[str, int] | None = None
        self._setup_flags = response.setup_flags
        self.sender_bpe = sender_bpe
        self.naks_received = naks_received
        now_ns = nano_clock()
        self._spies_simulate_connection = spies_simulate_connection
        self._nano_clock = nano_clock
        self.registration_id = registration_id
        self.channel = channel
        self.session_id = session_id
        self.stream_id = stream_id
        self.tag = tag
        self.raw_log = raw_log
        self.channel_endpoint = channel_endpoint
        self.publisher_pos = publisher_pos
        self.publisher_limit = publisher_limit
        self.sender_position = sender_position
        self.sender_limit = sender_limit
        self.flow_control = flow_control
        self.retransmit_handler = retransmit_handler
        self.is_exclusive = is_exclusive
        meta = raw_log.meta_data
        self._meta = meta
        self._term_buffers = raw_log.term_buffers
        self.term_length = raw_log.term_length
        self._term_length_mask = self.term_length - 1
        self.position_bits_to_shift = lbd.position_bits_to_shift(self.term_length)
        self.initial_term_id = lbd.initial_term_id(meta)
        self.mtu_length = lbd.mtu_length(meta)
        self._term_window_length = term_window_length
        self._linger_timeout_ns = linger_timeout_ns
        self._connection_timeout_ns = connection_timeout_ns
        self._heartbeats_sent = system_counters.get(SC.HEARTBEATS_SENT)
        self._retransmits_sent = system_counters.get(SC.RETRANSMITS_SENT)
        self._retransmitted_bytes = system_counters.get(SC.RETRANSMITTED_BYTES)
        self._short_sends = system_counters.get(SC.SHORT_SENDS)
        self._sender_flow_control_limits = system_counters.get(SC.SENDER_FLOW_CONTROL_LIMITS)
        self._invalid_packets = system_counters.get(SC.INVALID_PACKETS)
        self._unblocked_publications = system_counters.get(SC.UNBLOCKED_PUBLICATIONS)
        self.state = State.ACTIVE
        self.ref_count = 0
        self.has_receivers = False
        self.is_connected = False
        self.is_end_of_stream = False
        self.has_sender_released = False
        self.should_send_setup_frame = True
        # With segmentation offload a burst costs the kernel one trip per run of datagrams, not per datagram.
        self.send_burst = getattr(channel_endpoint, "send_burst", None) or SEND_BURST
        self._bytes_sent = system_counters.get(SC.BYTES_SENT)
        self._time_of_last_setup_ns = now_ns - PUBLICATION_SETUP_TIMEOUT_NS - 1
        # The plain send (driver/data_step.py), shared with the native cycle; its struct also holds, for every
        # publication, when data, a setup or a heartbeat last went and whether a stall is to be counted.
        self.send_step = SendStep(
            self._term_buffers,
            sender_position.word(),
            sender_limit.word(),
            (
                self._bytes_sent.word(),
                self._short_sends.word(),
                self._sender_flow_control_limits.word(),
                None if sender_bpe is None else sender_bpe.word(),
            ),
            self.position_bits_to_shift,
            self.mtu_length,
            self.send_burst,
            channel_endpoint.burst_transport,
            now_ns - PUBLICATION_HEARTBEAT_TIMEOUT_NS - 1,
        )
        self._send_state = self.send_step.state
        # Simulating spies may move the sender on at once; otherwise receivers get a connection timeout.
        self._status_message_deadline_ns = now_ns + (
            0 if spies_simulate_connection else connection_timeout_ns
        )
        self._time_of_last_activity_ns = now_ns
        self._next_flow_control_idle_ns = now_ns
        self.time_of_last_status_message_ns = now_ns
        """When a receiver was last heard from (the conductor re-resolves a named endpoint gone quiet)."""
        self._blocked_log_watch = BlockedLogWatch(0, now_ns, unblock_timeout_ns)
        self.spy_positions: list[AtomicCounter] = []
        self._watch_version = watch_version or WatchVersion()
        self.untethered = UntetheredSubscriptions()
        position = self.producer_position()
        self._clean_position = position
        self.flow_control.initialize(self.initial_term_id, self.term_length)

    @property
    def log_file_name(self) -> str:
        return self.raw_log.file_name

    def tail_words(self) -> list[Word]:
        """The term tail fields publishers move with each offer, for the sender's watch (mapped while the
        sender holds this publication: the conductor frees the log only after the sender lets go)."""
        return [(self._meta, lbd.TERM_TAIL_COUNTERS_OFFSET + i * 8) for i in range(lbd.PARTITION_COUNT)]

    def producer_position(self) -> int:
        return lbd.producer_position(
            self._meta, self.term_length, self.position_bits_to_shift, self.initial_term_id
        )

    def consumer_position(self) -> int:
        return self.sender_position.get()

    # --- sender duty cycle ---------------------------------------------------------------------

    def send(self, now_ns: int) -> int:
        if self.is_response and self.response_address is None:
            return 0  # no client has asked for this answer path yet: nowhere to send
        sender_position = self.sender_position.get()
        if self.should_send_setup_frame:
            self._setup_message_check(now_ns, sender_position)
        # A Python duty cycle costs far more than Java's, so send a burst of datagrams per cycle rather
        # than one: same wire behaviour, the cycle's overhead spread over up to SEND_BURST datagrams.
        if self.send_step.has_socket:
            bytes_sent = self.send_step.run(now_ns)  # one native call, its accounting included
        else:  # no batched path (multi-destination): datagram by datagram
            bytes_sent = self._send_data(now_ns, sender_position, sender_position & self._term_length_mask)
            burst = 1
            while bytes_sent and burst < self.send_burst:
                position = self.sender_position.get()
                sent = self._send_data(now_ns, position, position & self._term_length_mask)
                if sent == 0:
                    break
                bytes_sent += sent
                burst += 1
        if bytes_sent == 0:
            if now_ns - (self._send_state.last_send_ns + PUBLICATION_HEARTBEAT_TIMEOUT_NS) > 0:
                bytes_sent = self._send_heartbeat(now_ns, self.sender_position.get())
            if (
                self._spies_simulate_connection
                and self.spy_positions
                and self._status_message_deadline_ns - now_ns < 0
            ):
                # No receiver is heard from: the spies set the pace.
                position = max(sender_position, *(spy.get() for spy in self.spy_positions))
                self.sender_position.set(position)
                self.sender_limit.set(
                    self.flow_control.on_idle(now_ns, position, position, self.is_end_of_stream)
                )
            elif now_ns - self._next_flow_control_idle_ns >= 0 or self.is_end_of_stream:
                self._next_flow_control_idle_ns = now_ns + FLOW_CONTROL_IDLE_INTERVAL_NS
                limit = self.sender_limit.get()
                new_limit = self.flow_control.on_idle(now_ns, limit, sender_position, self.is_end_of_stream)
                if new_limit != limit:  # the common idle cycle: no store (a full fence) of the same value
                    self.sender_limit.set(new_limit)
        if self._status_message_deadline_ns - now_ns < 0 and self.has_receivers:
            self.has_receivers = False
        if self.retransmit_handler.has_actions:
            self.retransmit_handler.process_timeouts(now_ns, self.resend)
        return bytes_sent

    def native_send_step(self) -> SendStep | None:
        """This publication's send step when the native steady-state cycle (driver/fast_cycle.py) may run it,
        or None while something else is to be sent or decided here: a setup, retransmits, a response path,
        spies that simulate a connection, a closing publication, or no one-call burst (multi-destination, a
        closed socket)."""
        if (
            self.should_send_setup_frame
            or self.retransmit_handler.has_actions
            or self.state is not State.ACTIVE
            or self.is_response
            or self._spies_simulate_connection
            or not self.send_step.socket_open()
        ):
            return None
        return self.send_step

    def _send_data(self, now_ns: int, sender_position: int, term_offset: int) -> int:
        available_window = self.sender_limit.get() - sender_position
        if available_window <= 0:
            state = self._send_state
            if state.track_sender_limits:
                state.track_sender_limits = 0
                self._sender_flow_control_limits.increment()
                if self.sender_bpe is not None:
                    self.sender_bpe.increment()
            return 0
        term_buffer = self._term_buffers[(sender_position >> self.position_bits_to_shift) % 3]
        available, padding = scan_for_availability(
            term_buffer, term_offset, min(available_window, self.mtu_length)
        )
        if available <= 0:
            return 0
        if self._send(term_buffer.view[term_offset : term_offset + available]) != available:
            self._short_sends.increment()
            return 0
        state = self._send_state
        state.last_send_ns = now_ns
        state.track_sender_limits = 1
        self.sender_position.set(sender_position + available + padding)
        self._bytes_sent.get_and_add(available)
        return available

    def _term_id_and_offset(self, position: int) -> tuple[int, int]:
        """The term id and offset of ``position``: only setups and heartbeats need the id, so the send path
        does not compute it."""
        term_id = lbd.compute_term_id_from_position(position, self.position_bits_to_shift, self.initial_term_id)
        return term_id, position & self._term_length_mask

    def _setup_message_check(self, now_ns: int, sender_position: int) -> None:
        if now_ns - (self._time_of_last_setup_ns + PUBLICATION_SETUP_TIMEOUT_NS) > 0:
            active_term_id, term_offset = self._term_id_and_offset(sender_position)
            self._time_of_last_setup_ns = now_ns
            self._send_state.last_send_ns = now_ns
            setup = frames.encode_setup(
                term_offset,
                self.session_id,
                self.stream_id,
                self.initial_term_id,
                active_term_id,
                self.term_length,
                self.mtu_length,
                self.channel_endpoint.multicast_ttl,
                self._setup_flags,
            )
            if self._send(setup) != len(setup):
                self._short_sends.increment()
            if self.has_receivers:
                self.should_send_setup_frame = False

    def _send_heartbeat(self, now_ns: int, sender_position: int) -> int:
        """A heartbeat (a data frame with no payload at the sender's position) when the stream went quiet."""
        active_term_id, term_offset = self._term_id_and_offset(sender_position)
        heartbeat = frames.encode_heartbeat(
            self.session_id, self.stream_id, active_term_id, term_offset, self.is_end_of_stream
        )
        bytes_sent = self._send(heartbeat)
        if bytes_sent != len(heartbeat):
            self._short_sends.increment()
        self._send_state.last_send_ns = now_ns
        self._heartbeats_sent.increment()
        if bytes_sent > 0:
            self._bytes_sent.get_and_add(bytes_sent)  # as 1.15.1 counts them, with the data
        return bytes_sent

    def resend(self, term_id: int, term_offset: int, length: int) -> None:
        """Retransmit what a NAK asked for, if it is still in the term behind the sender position."""
        sender_position = self.sender_position.get()
        resend_position = lbd.compute_position(
            term_id, term_offset, self.position_bits_to_shift, self.initial_term_id
        )
        if not sender_position - self.term_length <= resend_position < sender_position:
            return
        term_buffer = self._term_buffers[(resend_position >> self.position_bits_to_shift) % 3]
        if not self._resend_bursts(term_buffer, term_offset, length):  # no batched path: datagram by datagram
            remaining = length
            offset = term_offset
            while remaining > 0:
                available, padding = scan_for_availability(term_buffer, offset, min(self.mtu_length, remaining))
                if available <= 0:
                    break
                if self._send(term_buffer.view[offset : offset + available]) != available:
                    self._short_sends.increment()
                    break
                self._retransmitted_bytes.get_and_add(available)
                offset += available + padding
                remaining -= available + padding
        self._retransmits_sent.increment()

    def _resend_bursts(self, term_buffer: AtomicBuffer, term_offset: int, length: int) -> bool:
        """A retransmit through the sender's one-call burst (the same datagrams, MTU by MTU, as sending them one
        by one); False when the endpoint has no such path (multi-destination)."""
        offset, remaining = term_offset, length
        while remaining > 0:
            result = self.channel_endpoint.send_term_burst(
                term_buffer, offset, remaining, self.mtu_length, self.send_burst
            )
            if result is None:
                return False
            datagrams, sent, advance, short = result
            if sent > 0:
                self._retransmitted_bytes.get_and_add(sent)
            if short:
                self._short_sends.increment()
            if datagrams <= 0 or short:
                break
            offset += advance
            remaining -= advance
        return True

    def _send(self, data: bytes | memoryview) -> int:
        address = self.response_address
        if address is not None:
            return self.channel_endpoint.send_to(data, address)
        return self.channel_endpoint.send(data)

    def trigger_send_setup_frame(self, source: tuple[str, int] | None = None) -> None:
        """A receiver asked for a SETUP (from ``source``: a response publication's client, when it is one)."""
        if not self.is_end_of_stream:
            self.should_send_setup_frame = True
            if self.is_response and source is not None:
                self.response_address = source

    def on_nak(self, term_id: int, term_offset: int, length: int, now_ns: int) -> None:
        if self.naks_received is not None:
            self.naks_received.increment()
        if not self.retransmit_handler.on_nak(
            term_id, term_offset, length, self.term_length, now_ns, self.resend
        ):
            self._invalid_packets.increment()  # an offset outside the term: counted, as 1.15.1

    def on_status_message(self, sm: frames.StatusMessageFrame, now_ns: int) -> None:
        self.has_receivers = True
        self.time_of_last_status_message_ns = now_ns
        self._status_message_deadline_ns = now_ns + self._connection_timeout_ns
        self.sender_limit.set(
            self.flow_control.on_status_message(
                sm, self.sender_limit.get(), self.initial_term_id, self.position_bits_to_shift, now_ns
            )
        )
        if not self.is_connected:
            lbd.set_is_connected(self._meta, True)
            self.is_connected = True

    def on_rttm(self, rttm: frames.RttmFrame) -> None:
        if rttm.flags & frames.REPLY_FLAG:
            reply = frames.encode_rttm(
                self.session_id, self.stream_id, rttm.echo_timestamp_ns, 0, rttm.receiver_id
            )
            if self._send(reply) != len(reply):
                self._short_sends.increment()

    # --- conductor duty cycle --------------------------------------------------------------------

    def update_publisher_limit(self) -> int:
        sender_position = self.sender_position.get()
        if self.has_receivers or (self._spies_simulate_connection and self.spy_positions):
            min_consumer_position = sender_position
            for spy in self.spy_positions:
                min_consumer_position = min(min_consumer_position, spy.get())
            proposed = min_consumer_position + self._term_window_length
            if self.publisher_limit.propose_max_ordered(proposed):
                self._clean_buffer(proposed)
                return 1
        elif self.publisher_limit.get() > sender_position:
            self.publisher_limit.set(sender_position)
        return 0

    def _clean_buffer(self, publisher_limit: int) -> None:
        clean_position = self._clean_position
        dirty_range = publisher_limit - clean_position
        reserved_range = self.term_length * 2
        if dirty_range > reserved_range:
            term_offset = clean_position & self._term_length_mask
            length = min(dirty_range - reserved_range, self.term_length - term_offset)
            self._term_buffers[(clean_position >> self.position_bits_to_shift) % 3].set_zero(
                term_offset, length
            )
            self._clean_position = clean_position + length

    def add_subscriber(self, spy_position: AtomicCounter) -> None:
        self.spy_positions = [*self.spy_positions, spy_position]
        self._watch_version.bump()
        if self._spies_simulate_connection:
            lbd.set_is_connected(self._meta, True)
            self.is_connected = True

    def remove_subscriber(self, spy_position: AtomicCounter) -> None:
        self.drop_subscriber_position(spy_position)
        self.untethered.remove(spy_position)
        spy_position.close()

    # --- untethered spies (driver/protocol/untethered.py) -------------------------------------------

    def untethered_behind_limit(self) -> int:
        return window_limit(self.sender_position.get(), self._term_window_length)

    def untethered_join_position(self) -> int:
        return self.consumer_position()

    def drop_subscriber_position(self, spy_position: AtomicCounter) -> None:
        """Out of flow control (a new list: the sender may be iterating the old one)."""
        self.spy_positions = [p for p in self.spy_positions if p is not spy_position]
        self._watch_version.bump()

    def restore_subscriber_position(self, spy_position: AtomicCounter) -> None:
        self.spy_positions = [*self.spy_positions, spy_position]
        self._watch_version.bump()

    def inc_ref(self) -> None:
        self.ref_count += 1

    def dec_ref(self) -> None:
        self.ref_count -= 1
        if self.ref_count == 0:
            self.state = State.DRAINING
            self._time_of_last_activity_ns = self._nano_clock()
            producer_position = self.producer_position()
            if self.publisher_limit.get() > producer_position:
                self.publisher_limit.set(producer_position)
            lbd.set_end_of_stream_position(self._meta, producer_position)
            if self.sender_position.get() >= producer_position:
                self.is_end_of_stream = True

    def on_time_event(self, now_ns: int, conductor: DriverConductor) -> None:
        if self.fc_receivers is not None:
            self.fc_receivers.set(self.flow_control.receiver_count)  # sampled on the conductor's timer
        if self.state is State.ACTIVE:
            connected = self.has_receivers or bool(self._spies_simulate_connection and self.spy_positions)
            if connected != self.is_connected:
                lbd.set_is_connected(self._meta, connected)
                self.is_connected = connected
            producer_position = self.producer_position()
            self.publisher_pos.set(producer_position)
            if not self.is_exclusive and self._blocked_log_watch.check(
                self._term_buffers,
                self._meta,
                self.term_length,
                producer_position,
                self.sender_position.get(),
                now_ns,
            ):
                self._unblocked_publications.increment()
        elif self.state is State.DRAINING:
            producer_position = self.producer_position()
            self.publisher_pos.set(producer_position)
            sender_position = self.sender_position.get()
            if producer_position > sender_position:
                # No publisher is left to finish a claim: pad over it at once so the rest can drain.
                if unblock(self._term_buffers, self._meta, sender_position, self.term_length):
                    self._unblocked_publications.increment()
                    return
                if self.has_receivers:
                    return
            else:
                self.is_end_of_stream = True
            if all(spy.get() >= producer_position for spy in self.spy_positions):
                if self.spy_positions:
                    conductor.cleanup_spies(self)  # every spy read to the end: their images go
                self._time_of_last_activity_ns = now_ns
                self.state = State.LINGER
        elif (
            self.state is State.LINGER
            and now_ns - (self._time_of_last_activity_ns + self._linger_timeout_ns) > 0
        ):
            conductor.cleanup_network_publication(self)
            self.state = State.CLOSING

    def cap_linger(self, max_ns: int) -> None:
        """Its client is gone: linger no longer than ``max_ns`` (from when it started lingering)."""
        self._linger_timeout_ns = min(self._linger_timeout_ns, max_ns)

    def close(self) -> None:
        self.publisher_pos.close()
        self.publisher_limit.close()
        self.sender_position.close()
        self.sender_limit.close()
        for counter in (self.sender_bpe, self.naks_received, self.fc_receivers):
            if counter is not None:
                counter.close()
        for spy in [*self.spy_positions, *(e.position for e in self.untethered.entries)]:
            spy.close()  # resting untethered spies are out of the list
        self.spy_positions = []
        self._watch_version.bump()
        self.raw_log.free()
