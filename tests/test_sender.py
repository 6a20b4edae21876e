"""Sender agent, thin and sans-IO: commands through its queue, a real SendChannelEndpoint over a fake transport
(datagrams recorded, control frames fed from an inbox through a ReceiveBatch stand-in), real publications.
NetworkPublication's own behaviour is in test_network_publication.py; here: the duty cycle's wiring, the
control poll ratio, and control frames dispatched, counted, or dropped as invalid.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.media.send_channel_endpoint import SendChannelEndpoint
from driver.media.udp_transport import UdpTransport
from driver.network_publication import NetworkPublication
from driver.protocol import frames
from driver.protocol.feedback_delay import StaticDelayGenerator
from driver.protocol.flow_control import UnicastFlowControl
from driver.protocol.retransmit_handler import RetransmitHandler
from driver.protocol.udp_channel import UdpChannel
from driver.raw_log import RawLog
from driver.sender import Sender
from driver.sender_proxy import SenderProxy
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters
from tests.support import FakeBatch, FakeTransport, LogWriter

T = 64 * 1024
MTU = 1408
STREAM_ID = 1003
INITIAL_TERM_ID = 3
CHANNEL = "aeron:udp?endpoint=127.0.0.1:40470"
RECEIVER = ("127.0.0.1", 40470)


def kinds(datagrams: list[bytes]) -> list[str]:
    names = {frames.HDR_TYPE_SETUP: "setup", frames.HDR_TYPE_RTTM: "rttm", frames.HDR_TYPE_PAD: "pad"}
    return [
        "heartbeat" if frames.is_heartbeat(d, len(d)) else names.get(frames.frame_type(d), "data")
        for d in datagrams
    ]


class Env:
    def __init__(self, tmp_path: Path, clock: Any, transport: Any = None) -> None:
        self.tmp_path = tmp_path
        self.clock = clock
        self.manager = CountersManager(
            AtomicBuffer(bytearray(64 * 512)), AtomicBuffer(bytearray(64 * 128)), clock.epoch_clock_ms
        )
        self.system = SystemCounters(self.manager)
        self.sender = Sender(self.system, clock.nano_clock)
        self.proxy = SenderProxy(self.sender.commands, self.system.get(SC.SENDER_PROXY_FAILS))
        if transport is None:
            self.sender._batch = FakeBatch()  # the fake transport's control datagrams
        self.transport = FakeTransport() if transport is None else transport
        self.endpoint = SendChannelEndpoint(
            UdpChannel.parse(CHANNEL), self.transport, self.manager.new_counter("snd-channel")
        )
        self.publications: list[NetworkPublication] = []
        self.proxy.register_send_channel_endpoint(self.endpoint)

    def __getitem__(self, descriptor: SC) -> int:
        return self.system.get(descriptor).get()

    def add_publication(self, session_id: int) -> NetworkPublication:
        raw_log = RawLog(self.tmp_path / f"pub-{session_id}.logbuffer", T, 4096, True)
        lbd.initialise_publication_metadata(
            raw_log.meta_data,
            session_id=session_id,
            stream_id=STREAM_ID,
            initial_term_id=INITIAL_TERM_ID,
            mtu_length=MTU,
            term_length=T,
            page_size=4096,
            correlation_id=session_id,
        )
        counters = [self.manager.new_counter(name) for name in ("pub-pos", "pub-lmt", "snd-pos", "snd-lmt")]
        publication = NetworkPublication(
            session_id, CHANNEL, session_id, STREAM_ID, None, raw_log, self.endpoint, *counters,
            UnicastFlowControl(), RetransmitHandler(StaticDelayGenerator(0, immediate_first=True)),
            self.system, T // 2, 5_000_000_000, 5_000_000_000, 10_000_000_000, self.clock.nano_clock, False,
        )  # fmt: skip
        publication.inc_ref()
        self.publications.append(publication)
        self.proxy.new_network_publication(publication)
        return publication

    def offer(self, publication: NetworkPublication, *sizes: int) -> None:
        writer = LogWriter(publication.raw_log.term_buffers, publication.raw_log.meta_data)
        for size in sizes:
            writer.append(bytes(size))

    def control(self, *datagrams: bytes) -> None:
        for datagram in datagrams:
            self.transport.inbox.append((datagram, RECEIVER))

    def close(self) -> None:
        for publication in self.publications:
            publication.close()


@pytest.fixture
def env(tmp_path: Path, clock) -> Iterator[Env]:
    env = Env(tmp_path, clock)
    yield env
    env.close()


def sm(session_id: int, position: int = 0, window: int = T // 2, flags: int = 0) -> bytes:
    return frames.encode_status_message(session_id, STREAM_ID, INITIAL_TERM_ID, position, window, 9, flags)


def test_setup_then_status_message_then_data(env: Env) -> None:
    publication = env.add_publication(11)
    env.offer(publication, 100, 100)
    env.sender.do_work()
    assert kinds(env.transport.take_data()) == ["setup"]
    assert env.transport.polls == 1  # nothing sent: the control socket is polled
    env.control(sm(11))
    env.sender.do_work()
    assert env[SC.STATUS_MESSAGES_RECEIVED] == 1
    assert publication.has_receivers
    assert publication.sender_limit.get() == T // 2
    assert env.sender.do_work() == 320
    [data] = env.transport.take_data()
    assert kinds([data]) == ["data"] and len(data) == 320
    assert env[SC.BYTES_SENT] == 320


def test_control_poll_every_6th_busy_duty_cycle_or_100_ms(env: Env, clock) -> None:
    publication = env.add_publication(11)
    publication.send_burst = 1  # one datagram per duty cycle, so every cycle is busy
    env.control(sm(11, window=T))
    env.sender.do_work()
    env.sender.do_work()
    env.offer(publication, *[1000] * 30)  # one frame per datagram
    polls = env.transport.polls
    for _ in range(12):
        assert env.sender.do_work() > 0
    assert env.transport.polls - polls == 2
    clock.advance_ms(100)
    clock.nanos += 1
    env.sender.do_work()  # busy, but the poll deadline passed
    assert env.transport.polls - polls == 3


def test_nak_is_answered_with_a_retransmission(env: Env) -> None:
    publication = env.add_publication(11)
    env.control(sm(11))
    env.sender.do_work()
    env.offer(publication, *[100] * 10)
    while env.sender.do_work():
        pass
    env.transport.take_data()
    env.control(frames.encode_nak(11, STREAM_ID, INITIAL_TERM_ID, 320, 480))
    env.sender.do_work()
    [resent] = env.transport.take_data()
    assert resent == publication.raw_log.term_buffers[0].get_bytes(320, 480)
    assert env[SC.NAK_MESSAGES_RECEIVED] == 1
    assert env[SC.RETRANSMITS_SENT] == 1


def data_datagrams(env: Env, receiver: socket.socket, length: int, timeout_s: float = 5.0) -> list[bytes]:
    """Run the sender until ``length`` bytes of data frames (not heartbeats or setups) reached ``receiver``."""
    deadline = time.monotonic() + timeout_s
    received: list[bytes] = []
    while sum(len(d) for d in received) < length and time.monotonic() < deadline:
        env.sender.do_work()
        with contextlib.suppress(BlockingIOError):
            while True:
                datagram = receiver.recv(65536)
                if (
                    frames.frame_type(datagram) == frames.HDR_TYPE_DATA
                    and len(datagram) > frames.HEADER_LENGTH
                ):
                    received.append(datagram)
    return received


@contextlib.contextmanager
def over_a_real_socket(tmp_path: Path, clock: Any) -> Iterator[tuple[Env, UdpTransport, socket.socket]]:
    """A sender whose endpoint's transport sends to a real loopback socket (the peer's, non-blocking)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.setblocking(False)
        transport = UdpTransport.open_send(
            UdpChannel.parse(f"aeron:udp?endpoint=127.0.0.1:{receiver.getsockname()[1]}")
        )
        env = Env(tmp_path, clock, transport)
        try:
            yield env, transport, receiver
        finally:
            env.close()
            transport.close()


def test_a_nak_over_a_real_socket_is_answered_by_bursts_of_the_original_datagrams(
    tmp_path: Path, clock
) -> None:
    """The retransmit goes through the sender's one-call burst: MTU-sized datagrams of whole frames, byte for byte
    the log, as the first sends were."""
    with over_a_real_socket(tmp_path, clock) as (env, transport, receiver):
        publication = env.add_publication(11)
        sender_address = transport.send_local_address
        receiver.sendto(sm(11), sender_address)
        env.offer(publication, *[100] * 30)  # 30 frames of 160 bytes: 4,800 bytes, 4 datagrams
        first = data_datagrams(env, receiver, 30 * 160)
        assert b"".join(first) == publication.raw_log.term_buffers[0].get_bytes(0, 30 * 160)
        receiver.sendto(frames.encode_nak(11, STREAM_ID, INITIAL_TERM_ID, 320, 3200), sender_address)
        resent = data_datagrams(env, receiver, 3200)
        assert [len(d) for d in resent] == [1280, 1280, 640]  # whole frames, each datagram <= the MTU
        assert b"".join(resent) == publication.raw_log.term_buffers[0].get_bytes(320, 3200)
        assert env[SC.RETRANSMITS_SENT] == 1
        assert env[SC.RETRANSMITTED_BYTES] == 3200


def data_or_heartbeats(receiver: socket.socket) -> list[bytes]:
    """The DATA frames (heartbeats included) waiting at ``receiver``."""
    received = []
    with contextlib.suppress(BlockingIOError):
        while True:
            datagram = receiver.recv(65536)
            if frames.frame_type(datagram) == frames.HDR_TYPE_DATA:
                received.append(datagram)
    return received


def test_the_send_step_accounts_for_what_reached_the_wire(tmp_path: Path, clock) -> None:
    """Over a real socket (the publication's send step, driver/data_step.py, the one the native cycle runs too):
    BYTES_SENT and the sender position are what went, a closed window is one flow-control stall however long
    it lasts, and a send the peer refuses is a short send that moves and counts nothing."""
    with over_a_real_socket(tmp_path, clock) as (env, transport, receiver):
        publication = env.add_publication(11)
        receiver.sendto(sm(11, window=3200), transport.send_local_address)
        env.offer(publication, *[100] * 30)  # 30 frames of 160 bytes: 4,800 bytes, only 3,200 in the window
        sent = data_datagrams(env, receiver, 3200)
        assert sum(map(len, sent)) == 3200 == publication.sender_position.get()
        for _ in range(3):
            env.sender.do_work()
        assert env[SC.BYTES_SENT] == 3200  # no heartbeat yet: the data went just now (manual clock)
        assert env[SC.SENDER_FLOW_CONTROL_LIMITS] == 1
        assert env[SC.SHORT_SENDS] == 0
        for _ in range(2):  # quiet past the setup timeout (its last SETUP), then the heartbeat timeout
            clock.advance_ms(101)
            env.sender.do_work()
        assert [len(d) for d in data_or_heartbeats(receiver)] == [frames.HEADER_LENGTH]  # a header alone
        assert env[SC.BYTES_SENT] == 3200 + frames.HEADER_LENGTH  # heartbeats count, as 1.15.1's do
        assert env[SC.SENDER_FLOW_CONTROL_LIMITS] == 1
        receiver.sendto(sm(11, window=T // 2), transport.send_local_address)
        receiver.close()  # the peer goes: a send after the port unreachable is refused
        for _ in range(20):
            env.offer(publication, 100)
            env.sender.do_work()
            assert env[SC.BYTES_SENT] == publication.sender_position.get() + frames.HEADER_LENGTH
            if env[SC.SHORT_SENDS]:
                break
        assert env[SC.SHORT_SENDS] == 1
        assert publication.sender_position.get() < 4800 + 20 * 160  # the refused datagrams did not move it


def test_control_frames_for_unknown_sessions_are_ignored(env: Env) -> None:
    env.add_publication(11)
    env.control(sm(12), frames.encode_nak(12, STREAM_ID, INITIAL_TERM_ID, 0, 32))
    env.sender.do_work()
    assert env[SC.STATUS_MESSAGES_RECEIVED] == env[SC.NAK_MESSAGES_RECEIVED] == 0
    assert not env.publications[0].has_receivers


def test_invalid_control_datagrams_are_counted_and_dropped(env: Env) -> None:
    publication = env.add_publication(11)
    env.control(
        b"\x01\x02",
        frames.encode_status_message(11, STREAM_ID, INITIAL_TERM_ID, 0, -5, 9),  # negative window
        frames.encode_status_message(11, STREAM_ID, INITIAL_TERM_ID, -32, 1000, 9),  # negative offset
        frames.encode_nak(11, STREAM_ID, INITIAL_TERM_ID, -32, 32),
        frames.encode_nak(11, STREAM_ID, INITIAL_TERM_ID, 0, -1),
        frames.COMMON_HEADER.pack(8, 3, 0, frames.HDR_TYPE_SM),  # wrong version, too short
        sm(11)[:30],
    )
    env.sender.do_work()
    assert env[SC.INVALID_PACKETS] == 7
    assert env[SC.STATUS_MESSAGES_RECEIVED] == env[SC.NAK_MESSAGES_RECEIVED] == 0
    assert not publication.has_receivers


def test_setup_eliciting_status_message_rearms_setups(env: Env, clock) -> None:
    publication = env.add_publication(11)
    env.control(sm(11))
    env.sender.do_work()
    clock.advance_ms(101)
    env.sender.do_work()  # the last setup (an SM was seen)
    env.transport.take_data()
    assert not publication.should_send_setup_frame
    env.control(sm(11, flags=frames.SEND_SETUP_FLAG))
    clock.advance_ms(101)
    env.sender.do_work()
    env.sender.do_work()
    assert "setup" in kinds(env.transport.take_data())
    assert env[SC.STATUS_MESSAGES_RECEIVED] == 2


def test_rttm_request_is_echoed(env: Env) -> None:
    env.add_publication(11)
    env.sender.do_work()
    env.transport.take_data()
    env.control(frames.encode_rttm(11, STREAM_ID, 555, 0, 9, frames.REPLY_FLAG))
    env.sender.do_work()
    [reply] = [d for d in env.transport.take_data() if kinds([d]) == ["rttm"]]
    assert frames.RttmFrame.decode(reply)[4:] == (11, STREAM_ID, 555, 0, 9)


def test_every_publication_gets_its_turn(env: Env) -> None:
    first, second = env.add_publication(11), env.add_publication(12)
    env.control(sm(11), sm(12))
    env.sender.do_work()
    env.transport.take_data()
    env.offer(first, 100)
    env.offer(second, 200)
    assert env.sender.do_work() == 160 + 256
    sessions = sorted(frames.DataHeader.decode(d).session_id for d in env.transport.take_data())
    assert sessions == [11, 12]


def test_removed_publication_and_closed_endpoint(env: Env) -> None:
    publication = env.add_publication(11)
    env.sender.do_work()
    env.transport.take_data()
    env.proxy.remove_network_publication(publication)
    env.sender.do_work()
    assert publication.has_sender_released
    env.control(sm(11))
    env.sender.do_work()
    assert env[SC.STATUS_MESSAGES_RECEIVED] == 0  # no longer known to the endpoint
    assert env.transport.take_data() == []
    env.proxy.close_send_channel_endpoint(env.endpoint)
    env.sender.do_work()
    assert env.transport.closed
    polls = env.transport.polls
    env.sender.do_work()
    assert env.transport.polls == polls
