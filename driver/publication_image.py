"""PublicationImage: a remote publication's stream rebuilt in a local log (Aeron 1.15.1 semantics).

The receiver inserts datagrams (insert_packet) and sends what the conductor scheduled (status
messages, NAKs); the conductor tracks the rebuild (gap scan -> rcv-pos, SM scheduling, cleaning) and
the lifecycle INIT/ACTIVE -> INACTIVE -> LINGER -> DONE.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driver.concurrent.counters import AtomicCounter
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.term_gap_filler import try_fill_gap
from driver.concurrent.logbuffer.term_rebuilder import insert
from driver.concurrent.word_watch import WatchVersion
from driver.protocol import frames
from driver.protocol.loss_detector import LossDetector
from driver.protocol.nak_policy import UnicastNakPolicy
from driver.protocol.untethered import UntetheredSubscriptions, window_limit
from driver.raw_log import RawLog
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters

if TYPE_CHECKING:
    from driver.conductor import DriverConductor
    from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from driver.reports.loss_report import LossReport


class State(enum.Enum):
    INIT = "init"
    ACTIVE = "active"
    INACTIVE = "inactive"
    LINGER = "linger"
    DONE = "done"


@dataclass
class ImageConnection:
    control_address: tuple[str, int]
    time_of_last_frame_ns: int
    is_eos: bool = False


class PublicationImage:
    def __init__(
        self,
        correlation_id: int,
        image_liveness_timeout_ns: int,
        channel_endpoint: ReceiveChannelEndpoint,
        control_address: tuple[str, int],
        transport_index: int,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        active_term_id: int,
        initial_term_offset: int,
        raw_log: RawLog,
        delay_generator: Any,
        subscriber_positions: list[AtomicCounter],
        hwm_position: AtomicCounter,
        rebuild_position: AtomicCounter,
        source_address: tuple[str, int],
        initial_window_length: int,
        loss_report: LossReport | None,
        is_reliable: bool,
        system_counters: SystemCounters,
        now_ns: int,
        epoch_clock_ms,
        nak_policy: UnicastNakPolicy | None = None,
        watch_version: WatchVersion | None = None,
    ) -> None:
        self.correlation_id = correlation_id
        self.channel_endpoint = channel_endpoint
        self.session_id = session_id
        self.stream_id = stream_id
        self.initial_term_id = initial_term_id
        self.raw_log = raw_log
        self.subscriber_positions = subscriber_positions
        self._watch_version = watch_version or WatchVersion()
        self.untethered = UntetheredSubscriptions()
        self.stream_naks_sent: AtomicCounter | None = None
        """``rcv-naks-sent`` of this image (set by the conductor)."""
        self.setup_flags = 0
        """Flags of the SETUP that made the image (set by the conductor): a request publication's ask for a
        response channel (docs/wire.md)."""
        self.response_session_id: int | None = None
        """Set by the conductor while a response publication answers this image and its client has not
        connected yet: each SM then goes with an RSP_SETUP naming that session."""
        self.hwm_position = hwm_position
        self.rebuild_position = rebuild_position
        self.source_address = source_address
        self.is_reliable = is_reliable
        self._image_liveness_timeout_ns = image_liveness_timeout_ns
        self._term_buffers = raw_log.term_buffers
        self.term_length = raw_log.term_length
        self._term_length_mask = self.term_length - 1
        self.position_bits_to_shift = lbd.position_bits_to_shift(self.term_length)
        self._meta = raw_log.meta_data
        self._loss_report = loss_report
        self._loss_report_entry = None
        self._epoch_clock_ms = epoch_clock_ms
        self._heartbeats_received = system_counters.get(SC.HEARTBEATS_RECEIVED)
        self._status_messages_sent = system_counters.get(SC.STATUS_MESSAGES_SENT)
        self._naks_sent = system_counters.get(SC.NAK_MESSAGES_SENT)
        self._under_runs = system_counters.get(SC.FLOW_CONTROL_UNDER_RUNS)
        self._over_runs = system_counters.get(SC.FLOW_CONTROL_OVER_RUNS)
        self._loss_gap_fills = system_counters.get(SC.LOSS_GAP_FILLS)
        self._invalid_packets = system_counters.get(SC.INVALID_PACKETS)
        self.loss_detector = LossDetector(delay_generator, self._on_gap_detected, policy=nak_policy)
        self.connections: dict[int, ImageConnection] = {
            transport_index: ImageConnection(control_address, now_ns)
        }
        self._active_transports = 1
        lbd.set_active_transport_count(self._meta, 1)
        self.state = State.INIT
        # Set by the receiver once it no longer routes data here: only then may the conductor free the log.
        self.has_receiver_released = False
        self.is_end_of_stream = False
        self.is_tracking_rebuild = True
        self._time_of_last_state_change_ns = now_ns
        self.last_packet_timestamp_ns = now_ns
        self._time_of_last_sm_schedule_ns = now_ns - 10**12
        position = lbd.compute_position(
            active_term_id, initial_term_offset, self.position_bits_to_shift, initial_term_id
        )
        self.join_position = position
        self._receiver_window_length = min(self.term_length // 2, initial_window_length)
        self._next_sm_position = position
        self._next_sm_window = self._receiver_window_length
        self._sm_pending = False
        self._last_sm_position = position
        self._last_sm_window_limit = position + self._receiver_window_length
        self._clean_position = position
        self._pending_gaps: list[tuple[int, int, int]] = []
        hwm_position.set(position)
        rebuild_position.set(position)

    @property
    def log_file_name(self) -> str:
        return self.raw_log.file_name

    @property
    def source_identity(self) -> str:
        host, port = self.source_address[:2]
        return f"{host}:{port}"

    # --- receiver side ---------------------------------------------------------------------------

    def activate(self) -> None:
        self.state = State.ACTIVE

    def insert_packet(
        self,
        term_id: int,
        term_offset: int,
        packet: Any,
        length: int,
        transport_index: int,
        source: tuple[str, int],
        now_ns: int,
    ) -> int:
        is_heartbeat = length == frames.HEADER_LENGTH and frames.DATA_HEADER.unpack_from(packet, 0)[0] == 0
        packet_position = lbd.compute_position(
            term_id, term_offset, self.position_bits_to_shift, self.initial_term_id
        )
        proposed_position = packet_position if is_heartbeat else packet_position + length
        if packet_position < self._last_sm_position:
            self._under_runs.increment()
            return length
        if proposed_position > self._last_sm_window_limit:
            self._over_runs.increment()
            return length
        connection = self.connections.get(transport_index)
        if connection is None:
            connection = self.connections[transport_index] = ImageConnection(source(), now_ns)
            self.update_active_transports(now_ns)
        elif now_ns - connection.time_of_last_frame_ns > self._image_liveness_timeout_ns:
            connection.time_of_last_frame_ns = now_ns
            self.update_active_transports(now_ns)
        connection.time_of_last_frame_ns = now_ns
        if is_heartbeat:
            if packet[frames.FLAGS_OFFSET] == frames.BEGIN_END_AND_EOS_FLAGS and not self.is_end_of_stream:
                connection.is_eos = True
                if all(c.is_eos for c in self.connections.values()):
                    lbd.set_end_of_stream_position(self._meta, proposed_position)
                    self.is_end_of_stream = True
            self._heartbeats_received.increment()
        else:
            term_buffer = self._term_buffers[(packet_position >> self.position_bits_to_shift) % 3]
            if insert(term_buffer, term_offset, packet, length) < 0:
                # Frames that do not fit this image's term (or are malformed): dropped whole, and the
                # high-water mark must not move, or it would invent gaps to NAK.
                self._invalid_packets.increment()
                return length
        self.last_packet_timestamp_ns = now_ns
        self.hwm_position.propose_max_ordered(proposed_position)
        return length

    def rebuild_window(self) -> tuple[int, int]:
        """(position below which data is an under-run, position above which it is an over-run): what the
        receiver's batch rebuild checks exactly as :meth:`insert_packet` does."""
        return self._last_sm_position, self._last_sm_window_limit

    def is_accepting_batch_inserts(self, transport_index: int) -> bool:
        """Whether the batch rebuild may insert this image's data from ``transport_index`` (a known
        connection; else :meth:`insert_packet` records the new one)."""
        return transport_index in self.connections and self.state is not State.DONE

    def on_batch_rebuilt(self, transport_index: int, inserted: int, invalid: int, now_ns: int) -> None:
        """What :meth:`insert_packet` does after its inserts, for the receiver's receive step (driver/data_step.py),
        which counted the batch and raised the high-water mark: the connection's and image's last-frame times."""
        if inserted or invalid:
            connection = self.connections[transport_index]
            stale = now_ns - connection.time_of_last_frame_ns > self._image_liveness_timeout_ns
            connection.time_of_last_frame_ns = now_ns
            if stale:
                self.update_active_transports(now_ns)
        if inserted:
            self.last_packet_timestamp_ns = now_ns

    def send_pending_status_message(self) -> int:
        if self.state is not State.ACTIVE or not self._sm_pending:
            return 0
        self._sm_pending = False
        position, window = self._next_sm_position, self._next_sm_window
        term_id = lbd.compute_term_id_from_position(
            position, self.position_bits_to_shift, self.initial_term_id
        )
        self.channel_endpoint.send_status_message(
            self._control_addresses(),
            self.session_id,
            self.stream_id,
            term_id,
            position & self._term_length_mask,
            window,
            0,
        )
        self._status_messages_sent.increment()
        response_session_id = self.response_session_id
        if response_session_id is not None:
            self.channel_endpoint.send_response_setup(
                self._control_addresses(), self.session_id, self.stream_id, response_session_id
            )
        self._last_sm_position = position
        self._last_sm_window_limit = position + window
        return 1

    def request_status_message(self) -> None:
        """Schedule an SM on the next rebuild check rather than at the end of the SM timeout."""
        self._time_of_last_sm_schedule_ns -= 10**12

    @property
    def has_pending_sends(self) -> bool:
        """The conductor left a status message or NAKs for the receiver to send."""
        return self._sm_pending or bool(self._pending_gaps)

    def process_pending_loss(self) -> int:
        if not self._pending_gaps:
            return 0
        gaps, self._pending_gaps = self._pending_gaps, []
        for term_id, term_offset, length in gaps:
            if self.is_reliable:
                self.channel_endpoint.send_nak(
                    self._control_addresses(), self.session_id, self.stream_id, term_id, term_offset, length
                )
                self._naks_sent.increment()
                if self.stream_naks_sent is not None:
                    self.stream_naks_sent.increment()
            else:
                index = ((term_id - self.initial_term_id) & 0xFFFFFFFF) % 3
                if try_fill_gap(self._meta, self._term_buffers[index], term_id, term_offset, length):
                    self._loss_gap_fills.increment()
        return len(gaps)

    def add_connection_if_unknown(
        self, transport_index: int, control_address: tuple[str, int], source: tuple[str, int]
    ) -> None:
        """A SETUP from another destination (MDS) of this image: SMs and NAKs go there too."""
        if transport_index not in self.connections:
            self.connections[transport_index] = ImageConnection(
                control_address, self.last_packet_timestamp_ns
            )
            self.update_active_transports(self.last_packet_timestamp_ns)

    def update_active_transports(self, now_ns: int) -> None:
        """The log's active transport count: the sources heard from within the image liveness timeout (a
        replay merge stops its replay once live is one of them: docs/archive.md section 16)."""
        timeout_ns = self._image_liveness_timeout_ns
        count = sum(1 for c in self.connections.values() if now_ns - c.time_of_last_frame_ns <= timeout_ns)
        if count != self._active_transports:
            self._active_transports = count
            lbd.set_active_transport_count(self._meta, count)

    def _control_addresses(self) -> list[tuple[int, tuple[str, int]]]:
        """(transport index, control address) of every source this image has heard from."""
        return [(index, c.control_address) for index, c in self.connections.items()]

    def has_activity_and_not_end_of_stream(self, now_ns: int) -> bool:
        if now_ns - (self.last_packet_timestamp_ns + self._image_liveness_timeout_ns) > 0:
            return False
        return not (self.is_end_of_stream and self.rebuild_position.get() >= self.hwm_position.get())

    # --- conductor side --------------------------------------------------------------------------

    def _on_gap_detected(self, term_id: int, term_offset: int, length: int) -> None:
        self._pending_gaps.append((term_id, term_offset, length))
        if self._loss_report_entry is not None:
            self._loss_report_entry.record_observation(length, self._epoch_clock_ms())
        elif self._loss_report is not None:
            self._loss_report_entry = self._loss_report.create_entry(
                length,
                self._epoch_clock_ms(),
                self.session_id,
                self.stream_id,
                self.channel_endpoint.channel,
                f"/{self.source_identity}",
            )
            if self._loss_report_entry is None:
                self._loss_report = None  # full: no more reporting for this image, as 1.15.1

    def track_rebuild(self, now_ns: int, status_message_timeout_ns: int) -> int:
        positions = [p.get() for p in self.subscriber_positions]
        if not positions:
            return 0
        min_position, max_position = min(positions), max(positions)
        rebuild_counter = self.rebuild_position.get()
        rebuild_position = max(rebuild_counter, max_position)
        hwm_position = self.hwm_position.get()
        work = 0
        if rebuild_position < hwm_position or self.loss_detector.has_gaps:
            term_buffer = self._term_buffers[(rebuild_position >> self.position_bits_to_shift) % 3]
            work, new_rebuild_position = self.loss_detector.scan(
                term_buffer,
                rebuild_position,
                hwm_position,
                now_ns,
                self._term_length_mask,
                self.position_bits_to_shift,
                self.initial_term_id,
            )
            self.rebuild_position.propose_max_ordered(new_rebuild_position)
        elif rebuild_position > rebuild_counter:
            # Nothing to scan (the common case, every duty cycle): skip the scan's call and arguments.
            self.rebuild_position.propose_max_ordered(rebuild_position)
        window = self._receiver_window_length
        if (
            now_ns - (self._time_of_last_sm_schedule_ns + status_message_timeout_ns) > 0
            or min_position > self._next_sm_position + window // 4
        ):
            self._next_sm_position = min_position
            self._next_sm_window = window
            self._sm_pending = True
            self._time_of_last_sm_schedule_ns = now_ns
            self._clean_buffer_to(min_position - self.term_length)
            work += 1
        return work

    def _clean_buffer_to(self, new_clean_position: int) -> None:
        clean_position = self._clean_position
        term_offset = clean_position & self._term_length_mask
        length = min(new_clean_position - clean_position, self.term_length - term_offset)
        if length > 0:
            self._term_buffers[(clean_position >> self.position_bits_to_shift) % 3].set_zero(
                term_offset, length
            )
            self._clean_position = clean_position + length

    def add_subscriber(self, position: AtomicCounter) -> None:
        self.subscriber_positions = [*self.subscriber_positions, position]
        self._watch_version.bump()

    def remove_subscriber(self, position: AtomicCounter) -> None:
        self.drop_subscriber_position(position)
        self.untethered.remove(position)
        position.close()

    # --- untethered subscribers (driver/protocol/untethered.py) ----------------------------------

    def untethered_behind_limit(self) -> int:
        front = max((p.get() for p in self.subscriber_positions), default=0)
        return window_limit(front, self._receiver_window_length)

    def untethered_join_position(self) -> int:
        return self.rebuild_position.get()

    def drop_subscriber_position(self, position: AtomicCounter) -> None:
        """Out of the status messages' position (a new list: the receiver may be iterating the old one)."""
        self.subscriber_positions = [p for p in self.subscriber_positions if p is not position]
        self._watch_version.bump()

    def restore_subscriber_position(self, position: AtomicCounter) -> None:
        self.subscriber_positions = [*self.subscriber_positions, position]
        self._watch_version.bump()

    def is_accepting_subscriptions(self) -> bool:
        return bool(self.subscriber_positions) and self.state in (State.INIT, State.ACTIVE)

    def if_active_go_inactive(self, now_ns: int) -> None:
        # INIT too: an image the receiver never took (its endpoint closed first) must retire as well.
        if self.state is State.ACTIVE or self.state is State.INIT:
            self.state = State.INACTIVE
            self._time_of_last_state_change_ns = now_ns

    def on_time_event(self, now_ns: int, conductor: DriverConductor) -> None:
        if self.state is State.ACTIVE and len(self.connections) > 1:
            self.update_active_transports(now_ns)  # a source gone quiet leaves the count
        if self.state is State.INACTIVE:
            rebuild_position = self.rebuild_position.get()
            if all(p.get() >= rebuild_position for p in self.subscriber_positions):
                self.state = State.LINGER
                self._time_of_last_state_change_ns = now_ns
                conductor.on_image_linger(self)
            self.is_tracking_rebuild = False
        elif (
            self.state is State.LINGER
            and now_ns - (self._time_of_last_state_change_ns + self._image_liveness_timeout_ns) > 0
        ):
            self.state = State.DONE

    @property
    def has_reached_end_of_life(self) -> bool:
        return self.state is State.DONE

    def close(self) -> None:
        self.hwm_position.close()
        self.rebuild_position.close()
        if self.stream_naks_sent is not None:
            self.stream_naks_sent.close()
        for position in [*self.subscriber_positions, *(e.position for e in self.untethered.entries)]:
            position.close()  # resting untethered positions are out of the list
        self.subscriber_positions = []
        self._watch_version.bump()
        self.raw_log.free()
