"""DataPacketDispatcher, sans-IO: which session of a stream gets an image, a setup request, or nothing.

A real ReceiveChannelEndpoint over a recording transport (so the setup-eliciting status messages are checked
on the wire); images are stand-ins that record what the dispatcher hands them. docs/wire.md §7 receiver 1, 2, 7
and Aeron 1.15.1 DataPacketDispatcher.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.data_packet_dispatcher import (
    INIT_IN_PROGRESS,
    NO_INTEREST,
    ON_COOL_DOWN,
    PENDING_SETUP,
    DataPacketDispatcher,
)
from driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
from driver.protocol import frames
from driver.protocol.udp_channel import InterfaceAddress, NetworkInterface, UdpChannel
from tests.support import FakeTransport

STREAM_ID = 1001
OTHER_STREAM_ID = 1002
SOURCE = ("192.0.2.1", 40001)
RECEIVER_ID = 42
NOW_NS = 5_000_000_000
TERM_LENGTH = 64 * 1024
LOOPBACK = NetworkInterface(
    "lo",
    1,
    (InterfaceAddress(ipaddress.IPv4Address("127.0.0.1"), 8),),
    is_loopback=True,
    supports_multicast=True,
)


class FakeImage:
    def __init__(self, session_id: int, stream_id: int = STREAM_ID) -> None:
        self.session_id = session_id
        self.stream_id = stream_id
        self.active = False
        self.inserted: list[tuple] = []

    def activate(self) -> None:
        self.active = True

    def insert_packet(self, term_id, term_offset, packet, length, transport_index, source, now_ns) -> int:
        self.inserted.append(
            (term_id, term_offset, bytes(packet[:length]), length, transport_index, source(), now_ns)
        )
        return length


class Env:
    def __init__(self, uri: str = "aeron:udp?endpoint=127.0.0.1:40456") -> None:
        manager = CountersManager(
            AtomicBuffer(bytearray(8 * 512)), AtomicBuffer(bytearray(8 * 128)), lambda: 0
        )
        self.transport = FakeTransport()
        channel = UdpChannel.parse(uri, interfaces=lambda: [LOOPBACK])
        self.short_sends = manager.new_counter("short sends")
        self.endpoint = ReceiveChannelEndpoint(
            channel, self.transport, manager.new_counter("status"), self.short_sends, RECEIVER_ID
        )
        self.created: list[tuple] = []
        self.pending: list[tuple] = []
        self.dispatcher = DataPacketDispatcher(
            lambda *args: self.created.append(args), lambda *args: self.pending.append(args)
        )

    def data(self, session_id: int, stream_id: int = STREAM_ID, flags: int = frames.UNFRAGMENTED,
             transport_index: int = 0, payload: bytes = b"hello") -> int:  # fmt: skip
        packet = (
            frames.DATA_HEADER.pack(
                32 + len(payload), 0, flags, frames.HDR_TYPE_DATA, 64, session_id, stream_id, 9, 0
            )
            + payload
        )
        header = frames.DATA_HEADER.unpack_from(packet, 0)
        return self.dispatcher.on_data_packet(
            self.endpoint, header, packet, len(packet), lambda: SOURCE, transport_index, NOW_NS
        )

    def heartbeat(self, session_id: int, eos: bool) -> int:
        packet = frames.encode_heartbeat(session_id, STREAM_ID, 9, 64, eos)
        header = frames.DATA_HEADER.unpack_from(packet, 0)
        return self.dispatcher.on_data_packet(
            self.endpoint, header, packet, len(packet), lambda: SOURCE, 0, NOW_NS
        )

    def setup(
        self, session_id: int, stream_id: int = STREAM_ID, transport_index: int = 0
    ) -> frames.SetupFrame:
        setup = frames.SetupFrame.decode(
            frames.encode_setup(64, session_id, stream_id, 7, 9, TERM_LENGTH, 1408, 0)
        )
        self.dispatcher.on_setup_message(self.endpoint, setup, SOURCE, transport_index)
        return setup

    def state(self, session_id: int, stream_id: int = STREAM_ID) -> Any:
        interest = self.dispatcher._streams.get(stream_id)
        return None if interest is None else interest.sessions.get(session_id)

    def setup_requests(self) -> list[tuple[frames.StatusMessageFrame, Any]]:
        return [(frames.StatusMessageFrame.decode(data), address) for data, address in self.transport.take()]


@pytest.fixture
def env() -> Env:
    return Env()


def test_data_of_an_unknown_session_elicits_a_setup(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID)
    assert env.data(5) == 0
    [(sm, address)] = env.setup_requests()
    assert address == SOURCE  # unicast: the sender's address
    assert sm == (36, 0, frames.SEND_SETUP_FLAG, frames.HDR_TYPE_SM, 5, STREAM_ID, 0, 0, 0, RECEIVER_ID, b"")
    assert env.state(5) == PENDING_SETUP
    assert env.pending == [(5, STREAM_ID, env.endpoint, NOW_NS)]
    # Pending: more data asks nothing more until the receiver's timeout removes the pending state.
    env.data(5)
    assert env.setup_requests() == [] and len(env.pending) == 1
    env.dispatcher.remove_pending_setup(5, STREAM_ID)
    assert env.state(5) is None
    env.data(5)
    assert len(env.setup_requests()) == 1
    assert len(env.pending) == 2
    assert env.created == []


def test_multicast_setup_request_goes_to_the_control_group() -> None:
    env = Env("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1")
    env.dispatcher.add_subscription(STREAM_ID)
    env.data(5, transport_index=0)
    [(sm, address)] = env.setup_requests()
    assert address == ("224.0.1.2", 40456)
    assert sm.flags == frames.SEND_SETUP_FLAG


def test_end_of_stream_or_other_streams_elicit_nothing(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID)
    assert env.heartbeat(5, eos=True) == 0
    assert env.data(6, flags=frames.BEGIN_END_AND_EOS_FLAGS) == 0
    assert env.data(5, stream_id=OTHER_STREAM_ID) == 0
    assert env.setup_requests() == []
    assert env.state(5) is env.state(6) is None
    env.heartbeat(5, eos=False)  # a plain heartbeat of an unknown session does
    assert len(env.setup_requests()) == 1


def test_setup_creates_the_image_once(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID)
    env.data(5)
    assert len(env.setup_requests()) == 1
    setup = env.setup(5, transport_index=0)
    assert env.created == [(setup, env.endpoint, 0, SOURCE, SOURCE)]
    assert env.state(5) == INIT_IN_PROGRESS
    env.setup(5)
    env.data(5)  # the image is being made: no setup request either
    assert len(env.created) == 1
    assert env.setup_requests() == []
    # A SETUP without data first also creates one.
    setup = env.setup(8, transport_index=0)
    assert env.created[-1] == (setup, env.endpoint, 0, SOURCE, SOURCE)
    # A SETUP for a stream nobody wants: nothing.
    env.setup(9, stream_id=OTHER_STREAM_ID)
    assert len(env.created) == 2


def test_data_goes_to_the_image(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID)
    env.setup(5)
    image = FakeImage(5)
    env.dispatcher.add_publication_image(image)
    assert image.active
    assert env.dispatcher.image(5, STREAM_ID) is image
    assert env.data(5, transport_index=0, payload=b"abc") == 35
    [(term_id, term_offset, packet, length, transport_index, source, now_ns)] = image.inserted
    assert (term_id, term_offset, length, transport_index, source, now_ns) == (9, 64, 35, 0, SOURCE, NOW_NS)
    assert packet[32:] == b"abc"
    assert env.setup_requests() == []


def test_session_specific_subscription_has_no_interest_in_other_sessions(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID, 5)
    env.data(6)
    assert env.setup_requests() == []
    env.setup(6)
    assert env.state(6) == NO_INTEREST
    assert env.created == []
    env.data(6)
    assert env.setup_requests() == []
    env.data(5)
    assert len(env.setup_requests()) == 1
    env.setup(5)
    assert [c[0].session_id for c in env.created] == [5]
    # A subscription to every session forgets the "no interest" marks.
    env.dispatcher.add_subscription(STREAM_ID)
    assert env.state(6) is None
    env.setup(6)
    assert [c[0].session_id for c in env.created] == [5, 6]


def test_second_session_specific_subscription_clears_its_no_interest(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID, 5)
    env.setup(6)
    assert env.state(6) == NO_INTEREST
    env.dispatcher.add_subscription(STREAM_ID, 6)
    assert env.state(6) is None
    env.setup(6)
    assert [c[0].session_id for c in env.created] == [6]


def test_cool_down_after_an_image_is_removed(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID)
    env.setup(5)
    image = FakeImage(5)
    env.dispatcher.add_publication_image(image)
    env.dispatcher.remove_publication_image(FakeImage(5))  # not this image: no change
    assert env.dispatcher.image(5, STREAM_ID) is image
    env.dispatcher.remove_publication_image(image)
    assert env.state(5) == ON_COOL_DOWN
    assert env.dispatcher.image(5, STREAM_ID) is None
    env.data(5)
    env.setup(5)
    assert image.inserted == []
    assert env.setup_requests() == []
    assert len(env.created) == 1
    env.dispatcher.remove_cool_down(5, STREAM_ID)
    assert env.state(5) is None
    env.data(5)
    assert len(env.setup_requests()) == 1
    env.setup(5)
    assert len(env.created) == 2


def test_remove_subscription(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID)
    env.dispatcher.add_subscription(STREAM_ID, 5)
    env.setup(5)
    env.setup(6)
    env.dispatcher.add_publication_image(FakeImage(5))
    env.dispatcher.add_publication_image(FakeImage(6))
    env.dispatcher.remove_subscription(STREAM_ID)  # the session-5 subscription remains
    assert env.dispatcher.image(5, STREAM_ID) is not None
    assert env.state(6) is None
    env.data(6)
    assert env.setup_requests() == []
    env.dispatcher.remove_subscription(STREAM_ID, 5)
    assert env.state(5) is None
    assert env.data(5) == 0
    assert env.setup_requests() == []
    env.setup(5)
    assert len(env.created) == 2
    env.dispatcher.remove_subscription(OTHER_STREAM_ID)  # unknown: ignored


def test_data_of_an_unwanted_session_is_marked_no_interest(env: Env) -> None:
    env.dispatcher.add_subscription(STREAM_ID, 5)
    env.data(6)
    assert env.state(6) == NO_INTEREST
