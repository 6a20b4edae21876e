"""Receiver agent, thin and sans-IO: commands through its queue, datagrams from a fake transport in a
ReceiveBatch stand-in, sends recorded. The image and dispatcher are the real ones (their own tests cover the
details); here: the duty cycle's wiring, setup requests and their timeout, what the conductor scheduled
going out, and invalid datagrams counted and dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.agent.command_queue import CommandQueue
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.data_packet_dispatcher import DataPacketDispatcher
from driver.driver_conductor_proxy import DriverConductorProxy
from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
from driver.media.udp_batch import ReceiveBatch
from driver.protocol import frames
from driver.protocol.feedback_delay import NAK_UNICAST_DELAY_NS, StaticDelayGenerator
from driver.protocol.udp_channel import UdpChannel
from driver.publication_image import PublicationImage
from driver.raw_log import RawLog
from driver.receiver import Receiver
from driver.receiver_proxy import ReceiverProxy
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters
from tests.support import FakeBatch, FakeTransport

T = 64 * 1024
SESSION_ID, STREAM_ID = 0x77, 1001
INITIAL_TERM_ID = 100
CHANNEL = "aeron:udp?endpoint=127.0.0.1:40460"
SOURCE = ("192.0.2.1", 40001)
OTHER_SOURCE = ("192.0.2.2", 40002)
RECEIVER_ID = 4242
SM_TIMEOUT_NS = 200_000_000


class NativeBatch(ReceiveBatch):
    """A real ReceiveBatch (so the receiver takes its native batch rebuild) filled by the fake transport;
    sources are kept aside as (host, port)."""

    def __init__(self, capacity: int = 4) -> None:
        super().__init__(capacity)
        self.sources: list[tuple[str, int]] = []

    def put(self, items: list[tuple[bytes, tuple[str, int]]]) -> None:
        for i, (packet, _) in enumerate(items):
            offset = self.slot_offset(i)
            kept = packet[
                : self.slot_length
            ]  # as recvmmsg: a longer datagram is truncated, its length negated
            self.slot_buffer.view[offset : offset + len(kept)] = kept
            self.lengths_pointer[i] = len(kept) if len(kept) == len(packet) else -len(kept)
        self.sources = [source for _, source in items]
        self.count = self._received[0] = len(items)

    def address(self, i: int) -> tuple[str, int]:
        return self.sources[i]


def data_packet(session_id: int, term_offset: int, payload: bytes, term_id: int = INITIAL_TERM_ID) -> bytes:
    frame = frames.DATA_HEADER.pack(
        32 + len(payload), 0, frames.UNFRAGMENTED, frames.HDR_TYPE_DATA, term_offset, session_id, STREAM_ID,
        term_id, 0,
    ) + payload  # fmt: skip
    return frame + bytes(-len(frame) % 32)


def setup_packet(session_id: int = SESSION_ID, term_offset: int = 0) -> bytes:
    return frames.encode_setup(
        term_offset, session_id, STREAM_ID, INITIAL_TERM_ID, INITIAL_TERM_ID, T, 1408, 0
    )


class ConductorRecorder:
    """Stands in for the conductor as the consumer of the receiver's create-image requests."""

    def __init__(self) -> None:
        self.created: list[tuple] = []

    def on_create_publication_image(self, *args: Any) -> None:
        self.created.append(args)


class Env:
    def __init__(self, tmp_path: Path, clock: Any, uri: str = CHANNEL, native: bool = False) -> None:
        self.tmp_path = tmp_path
        self.clock = clock
        self.manager = CountersManager(
            AtomicBuffer(bytearray(64 * 512)), AtomicBuffer(bytearray(64 * 128)), clock.epoch_clock_ms
        )
        self.system = SystemCounters(self.manager)
        # The conductor's side of the DriverConductorProxy: its queue, drained by a recorder.
        self.conductor_commands = CommandQueue()
        self.receiver = Receiver(
            self.system,
            nano_clock=clock.nano_clock,
            conductor_proxy=DriverConductorProxy(
                self.conductor_commands, self.system.get(SC.CONDUCTOR_PROXY_FAILS)
            ),
        )
        self.proxy = ReceiverProxy(self.receiver.commands, self.system.get(SC.RECEIVER_PROXY_FAILS))
        self.receiver._batch = NativeBatch(4) if native else FakeBatch(4)
        self.transport = FakeTransport()
        self.udp_channel = UdpChannel.parse(uri)
        self.endpoint = ReceiveChannelEndpoint(
            self.udp_channel,
            self.transport,
            self.manager.new_counter("rcv-channel"),
            self.system.get(SC.SHORT_SENDS),
            RECEIVER_ID,
        )
        self._conductor = ConductorRecorder()
        self.images: list[PublicationImage] = []
        self.proxy.register_receive_channel_endpoint(self.endpoint)
        self.proxy.add_subscription(self.endpoint, STREAM_ID, None)

    @property
    def created(self) -> list[tuple]:
        """The create-image requests the receiver sent the conductor (through its proxy)."""
        self.conductor_commands.drain(self._conductor, limit=1000)
        return self._conductor.created

    @property
    def dispatcher(self) -> DataPacketDispatcher:
        dispatcher = self.receiver.dispatcher(self.endpoint)
        assert dispatcher is not None
        return dispatcher

    def __getitem__(self, descriptor: SC) -> int:
        return self.system.get(descriptor).get()

    def deliver(self, *datagrams: bytes, source: tuple[str, int] = SOURCE, transport: Any = None) -> int:
        for datagram in datagrams:
            (transport or self.transport).inbox.append((datagram, source))
        return self.receiver.do_work()

    def sent(self) -> list[tuple[int, Any, Any]]:
        """(frame type, decoded frame, address) of each datagram the endpoint sent."""
        decoders = {frames.HDR_TYPE_SM: frames.StatusMessageFrame, frames.HDR_TYPE_NAK: frames.NakFrame,
                    frames.HDR_TYPE_RTTM: frames.RttmFrame}  # fmt: skip
        return [
            (frames.frame_type(data), decoders[frames.frame_type(data)].decode(data), address)
            for data, address in self.transport.take()
        ]

    def create_image(
        self, setup: frames.SetupFrame, endpoint, transport_index, control, source
    ) -> PublicationImage:
        """What the conductor does on a create-image request: log, counters, image, then queue it."""
        raw_log = RawLog(self.tmp_path / f"image-{len(self.images)}.logbuffer", setup.term_length, 4096, True)
        lbd.initialise_image_metadata(
            raw_log.meta_data,
            session_id=setup.session_id,
            stream_id=setup.stream_id,
            initial_term_id=setup.initial_term_id,
            mtu_length=setup.mtu_length,
            term_length=setup.term_length,
            page_size=4096,
            correlation_id=len(self.images) + 10,
        )
        bits = lbd.position_bits_to_shift(setup.term_length)
        join = lbd.compute_position(setup.active_term_id, setup.term_offset, bits, setup.initial_term_id)
        position = self.manager.new_counter("sub-pos")
        position.set(join)
        image = PublicationImage(
            len(self.images) + 10,
            10_000_000_000,
            endpoint,
            control,
            transport_index,
            setup.session_id,
            setup.stream_id,
            setup.initial_term_id,
            setup.active_term_id,
            setup.term_offset,
            raw_log,
            StaticDelayGenerator(NAK_UNICAST_DELAY_NS, immediate_first=True),
            [position],
            self.manager.new_counter("rcv-hwm"),
            self.manager.new_counter("rcv-pos"),
            source,
            128 * 1024,
            None,
            True,
            self.system,
            self.clock.nano_clock(),
            self.clock.epoch_clock_ms,
        )
        self.images.append(image)
        self.proxy.new_publication_image(endpoint, image)
        return image

    def image_from_setup(self, session_id: int = SESSION_ID) -> PublicationImage:
        self.deliver(setup_packet(session_id))
        [args] = self.created
        self.created.clear()
        image = self.create_image(*args)
        self.receiver.do_work()
        return image

    def close(self) -> None:
        self.receiver.do_work()  # the image removals queued by the test go through first, as in the driver
        self.receiver.on_close_receive_channel_endpoint(self.endpoint)
        for image in self.images:
            image.close()
        if isinstance(self.receiver._batch, NativeBatch):
            self.receiver._batch.close()


@pytest.fixture(params=["python", "native"])
def env(request, tmp_path: Path, clock) -> Iterator[Env]:
    """Every receiver test runs twice: datagram by datagram, and through the native batch rebuild."""
    env = Env(tmp_path, clock, native=request.param == "native")
    yield env
    env.close()


def test_data_of_an_unknown_session_elicits_a_setup_once_while_pending(env: Env, clock) -> None:
    assert env.deliver(data_packet(SESSION_ID, 0, b"x")) > 0
    [(frame_type, sm, address)] = env.sent()
    assert (frame_type, address) == (frames.HDR_TYPE_SM, SOURCE)
    assert (sm.flags, sm.session_id, sm.stream_id, sm.receiver_id) == (
        frames.SEND_SETUP_FLAG, SESSION_ID, STREAM_ID, RECEIVER_ID,
    )  # fmt: skip
    clock.advance_ms(999)
    env.deliver(data_packet(SESSION_ID, 0, b"x"))
    assert env.sent() == []


def test_pending_setup_expires_after_1_s_and_data_elicits_again(env: Env, clock) -> None:
    env.deliver(data_packet(SESSION_ID, 0, b"x"))
    assert len(env.sent()) == 1
    clock.advance_ms(1000)
    env.receiver.do_work()  # the pending setup times out
    env.deliver(data_packet(SESSION_ID, 0, b"x"))
    assert [t for t, _, _ in env.sent()] == [frames.HDR_TYPE_SM]


def test_a_full_batch_is_drained_in_one_duty_cycle(env: Env) -> None:
    env.receiver.do_work()
    polls = env.transport.polls
    env.deliver(*(data_packet(session, 0, b"x") for session in range(1, 11)))
    assert env.transport.polls - polls == 3  # 4 + 4 + 2
    assert sorted(sm.session_id for _, sm, _ in env.sent()) == list(range(1, 11))


def test_setup_creates_an_image_that_rebuilds_and_reports(env: Env, clock) -> None:
    env.deliver(setup_packet())
    [(setup, endpoint, transport_index, control, source)] = env.created
    assert (setup.session_id, endpoint, transport_index, control, source) == (
        SESSION_ID, env.endpoint, 0, SOURCE, SOURCE,
    )  # fmt: skip
    env.created.clear()
    image = env.create_image(setup, endpoint, transport_index, control, source)
    env.receiver.do_work()  # the add-image command
    assert env.dispatcher.image(SESSION_ID, STREAM_ID) is image

    env.deliver(data_packet(SESSION_ID, 0, b"a" * 100), data_packet(SESSION_ID, 256, b"b" * 100))
    assert image.hwm_position.get() == 256 + 160
    image.track_rebuild(clock.nano_clock(), SM_TIMEOUT_NS)  # the conductor's part
    assert image.rebuild_position.get() == 160
    env.receiver.do_work()  # sends the SM and the NAK the conductor scheduled
    sent = env.sent()
    assert [(t, a) for t, _, a in sent] == [(frames.HDR_TYPE_SM, SOURCE), (frames.HDR_TYPE_NAK, SOURCE)]
    sm, nak = sent[0][1], sent[1][1]
    assert (sm.consumption_term_id, sm.consumption_term_offset, sm.receiver_window, sm.receiver_id) == (
        INITIAL_TERM_ID, 0, T // 2, RECEIVER_ID,
    )  # fmt: skip
    assert (nak.session_id, nak.term_id, nak.term_offset, nak.length) == (
        SESSION_ID,
        INITIAL_TERM_ID,
        160,
        96,
    )
    assert env[SC.STATUS_MESSAGES_SENT] == env[SC.NAK_MESSAGES_SENT] == 1
    env.receiver.do_work()
    assert env.sent() == []
    assert env[SC.BYTES_RECEIVED] == 320


def test_data_past_the_window_is_an_over_run_that_inserts_nothing(env: Env) -> None:
    image = env.image_from_setup()
    env.deliver(data_packet(SESSION_ID, T // 2, b"a" * 100))  # ends past the initial window (T / 2)
    assert env[SC.FLOW_CONTROL_OVER_RUNS] == 1
    assert env[SC.FLOW_CONTROL_UNDER_RUNS] == 0
    assert image.hwm_position.get() == 0
    assert env[SC.BYTES_RECEIVED] == 160  # counted all the same, as 1.15.1 does


def test_removed_image_goes_on_cool_down(env: Env) -> None:
    image = env.image_from_setup()
    env.proxy.remove_publication_image(env.endpoint, image)
    env.deliver(data_packet(SESSION_ID, 0, b"a"), setup_packet())
    assert image.hwm_position.get() == 0
    assert env.sent() == [] and env.created == []


INVALID = {
    "truncated": b"\x20\x00\x00",
    "wrong version": bytes(
        frames.DATA_HEADER.pack(64, 1, 0xC0, frames.HDR_TYPE_DATA, 0, SESSION_ID, STREAM_ID, 0, 0)
    )
    + bytes(32),
    "unknown type": frames.COMMON_HEADER.pack(8, 0, 0, 0x55),
    "short data header": data_packet(SESSION_ID, 0, b"")[:24],
    "unaligned term offset": data_packet(SESSION_ID, 7, b"x"),
    "frame longer than datagram": data_packet(SESSION_ID, 0, b"x" * 100)[:64],
    "setup with bad term length": frames.encode_setup(0, SESSION_ID, STREAM_ID, 1, 1, 1000, 1408, 0),
    "setup with bad mtu": frames.encode_setup(0, SESSION_ID, STREAM_ID, 1, 1, T, 1000, 0),
    "datagram past max UDP payload": data_packet(SESSION_ID, 0, b"") + bytes(65504),
}


def test_invalid_datagrams_are_counted_and_dropped(env: Env) -> None:
    env.deliver(*INVALID.values())
    assert env[SC.INVALID_PACKETS] == len(INVALID)
    assert env.sent() == [] and env.created == []


def test_a_datagram_the_rebuild_rejects_is_invalid(env: Env) -> None:
    image = env.image_from_setup()
    good = data_packet(SESSION_ID, 0, b"a" * 100)
    second = bytearray(data_packet(SESSION_ID, 160, b"b" * 100))
    frames.DATA_HEADER.pack_into(
        second, 0, *frames.DATA_HEADER.unpack_from(second)[:5], 999, STREAM_ID, INITIAL_TERM_ID, 0
    )
    env.deliver(good + bytes(second))
    assert env[SC.INVALID_PACKETS] == 1
    assert image.hwm_position.get() == 0
    env.deliver(good)
    assert image.hwm_position.get() == 160


def test_rttm_request_is_answered(env: Env) -> None:
    env.image_from_setup()
    env.deliver(frames.encode_rttm(SESSION_ID, STREAM_ID, 987_654, 0, 0, frames.REPLY_FLAG))
    [(frame_type, rttm, address)] = env.sent()
    assert (frame_type, address) == (frames.HDR_TYPE_RTTM, SOURCE)
    assert (rttm.flags, rttm.echo_timestamp_ns, rttm.receiver_id) == (0, 987_654, RECEIVER_ID)


def test_mdc_subscription_asks_the_publisher_for_setups_every_second(tmp_path: Path, clock) -> None:
    env = Env(tmp_path, clock, "aeron:udp?endpoint=127.0.0.1:40461|control=127.0.0.1:40462")
    env.receiver.do_work()
    [(frame_type, sm, address)] = env.sent()
    assert (frame_type, address) == (frames.HDR_TYPE_SM, ("127.0.0.1", 40462))
    assert (sm.session_id, sm.stream_id, sm.flags) == (0, 0, frames.SEND_SETUP_FLAG)
    clock.advance_ms(999)
    env.receiver.do_work()
    assert env.sent() == []
    clock.advance_ms(1)
    env.receiver.do_work()
    assert [(s.session_id, a) for _, s, a in env.sent()] == [(0, ("127.0.0.1", 40462))]


def test_mds_destination_with_a_control_address_asks_for_setups_every_second(tmp_path: Path, clock) -> None:
    # A replay merge's live destination (aeron:udp?endpoint=..|control=..) reaches a dynamic MDC publisher only
    # through these SMs until live frames arrive: one lost must not leave the merge without live for good.
    env = Env(tmp_path, clock, "aeron:udp?control-mode=manual")
    env.receiver.do_work()
    destination = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40463|control=127.0.0.1:40464")
    live = FakeTransport()
    env.proxy.add_destination(env.endpoint, destination, live)
    env.receiver.do_work()
    assert [frames.StatusMessageFrame.decode(d).flags for d, _ in live.take()] == [frames.SEND_SETUP_FLAG]
    for _ in range(2):
        clock.advance_ms(999)
        env.receiver.do_work()
        assert live.take() == []
        clock.advance_ms(1)
        env.receiver.do_work()
        [(data, address)] = live.take()
        assert address == ("127.0.0.1", 40464)
        assert frames.StatusMessageFrame.decode(data).flags == frames.SEND_SETUP_FLAG
    assert env.transport.take() == []  # nothing through the endpoint's own socket
    env.proxy.remove_destination(env.endpoint, destination.canonical_form)
    env.receiver.do_work()
    clock.advance_ms(1_000)
    env.receiver.do_work()
    assert live.take() == []


def test_closed_endpoint_is_no_longer_polled(env: Env) -> None:
    env.receiver.do_work()
    env.proxy.close_receive_channel_endpoint(env.endpoint)
    env.receiver.do_work()
    assert env.transport.closed
    polls = env.transport.polls
    env.deliver(data_packet(SESSION_ID, 0, b"x"))
    assert env.transport.polls == polls
    assert env.sent() == []


def test_setup_for_an_existing_image_records_the_new_connection(env: Env, clock) -> None:
    image = env.image_from_setup()
    second = FakeTransport()
    env.proxy.add_destination(
        env.endpoint,
        UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40463"),
        second,
    )
    env.receiver.do_work()
    env.deliver(setup_packet(), source=OTHER_SOURCE, transport=second)
    assert sorted(image.connections) == [0, 1]
    image.track_rebuild(clock.nano_clock(), SM_TIMEOUT_NS)
    env.receiver.do_work()
    assert [a for _, _, a in env.sent()] == [SOURCE]
    assert [a for _, a in second.take()] == [OTHER_SOURCE]


def test_what_the_conductor_schedules_counts_as_queued_work_until_the_receiver_sends_it(env: Env, clock) -> None:
    """A parked receiver's work probe (driver/agent/work_probe.py) must not skip the cycle that sends the
    status message and NAK the conductor scheduled on an image (DEDICATED mode: another runner did that)."""
    env.deliver(setup_packet())
    [(setup, endpoint, transport_index, control, source)] = env.created
    image = env.create_image(setup, endpoint, transport_index, control, source)
    env.receiver.do_work()  # the add-image command
    assert not env.receiver.has_queued_work() and env.receiver.watched_words() == []
    env.deliver(data_packet(SESSION_ID, 0, b"a" * 100), data_packet(SESSION_ID, 256, b"b" * 100))
    image.track_rebuild(clock.nano_clock(), SM_TIMEOUT_NS)  # the conductor schedules an SM and a NAK
    assert env.receiver.has_queued_work()
    env.receiver.do_work()
    assert [t for t, _, _ in env.sent()] == [frames.HDR_TYPE_SM, frames.HDR_TYPE_NAK]
    assert not env.receiver.has_queued_work()
