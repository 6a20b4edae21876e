"""NetworkPublication, sans-IO: what the sender puts on the wire and how the conductor side moves it along.

The publication's log is a real mapped RawLog; messages go in through the real concurrent offer path
(tests/support LogWriter: rotation and padding included). The send channel endpoint is a recorder; time comes from the manual clock. Checked
against docs/wire.md §7 (sender 1-7) and Aeron 1.15.1 NetworkPublication.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.buffer_claim import BufferClaim
from driver.concurrent.logbuffer.term_appender import TermAppender
from driver.network_publication import NetworkPublication, State
from driver.protocol import frames
from driver.protocol.feedback_delay import StaticDelayGenerator
from driver.protocol.flow_control import UnicastFlowControl
from driver.protocol.retransmit_handler import RetransmitHandler
from driver.raw_log import RawLog
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters
from driver.util.bit_util import align
from tests.support import LogWriter

T = 64 * 1024
MTU = 1408
SESSION_ID, STREAM_ID = 0x4321, 1002
INITIAL_TERM_ID = -5
CHANNEL = "aeron:udp?endpoint=127.0.0.1:40124"
MS = 1_000_000
SECOND = 1_000_000_000
LINGER_NS = 5 * SECOND
CONNECTION_TIMEOUT_NS = 5 * SECOND
UNBLOCK_TIMEOUT_NS = 2 * SECOND


class FakeSendEndpoint:
    """Stands in for SendChannelEndpoint: records each datagram; ``short_by`` makes sends come up short."""

    multicast_ttl = 0
    burst_transport = None  # no one-call path: the publication sends datagram by datagram through send()

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.short_by = 0

    def send(self, data: Any) -> int:
        datagram = bytes(data)
        self.sent.append(datagram)
        return len(datagram) - self.short_by

    def take(self) -> list[bytes]:
        sent, self.sent = self.sent, []
        return sent

    def send_term_burst(self, *args: Any) -> None:
        return None  # no one-call path: the publication sends datagram by datagram through send()


class FakeConductor:
    def __init__(self) -> None:
        self.cleaned_up: list[NetworkPublication] = []
        self.spies_cleaned_up: list[NetworkPublication] = []

    def cleanup_network_publication(self, publication: NetworkPublication) -> None:
        self.cleaned_up.append(publication)

    def cleanup_spies(self, publication: NetworkPublication) -> None:
        self.spies_cleaned_up.append(publication)


def kind(datagram: bytes) -> str:
    frame_type = frames.frame_type(datagram)
    if frame_type == frames.HDR_TYPE_SETUP:
        return "setup"
    if frame_type == frames.HDR_TYPE_RTTM:
        return "rttm"
    if frames.is_heartbeat(datagram, len(datagram)):
        return "heartbeat"
    return "data" if frame_type == frames.HDR_TYPE_DATA else "pad"


def frames_of(datagram: bytes) -> list[tuple[int, int, int]]:
    """(term offset, frame length, type) of each frame; the datagram must be whole frames, PAD only last."""
    found = []
    offset = 0
    while offset < len(datagram):
        fields = frames.DATA_HEADER.unpack_from(datagram, offset)
        length, frame_type, term_offset = fields[0], fields[3], fields[4]
        assert length >= frames.HEADER_LENGTH
        found.append((term_offset, length, frame_type))
        if frame_type == frames.HDR_TYPE_PAD:
            assert offset + frames.HEADER_LENGTH == len(datagram), "only the PAD header, and last"
            break
        assert offset + length <= len(datagram), "a frame cut in two"
        offset += align(length, 32)
    assert offset == len(datagram) or found[-1][2] == frames.HDR_TYPE_PAD
    return found


class Harness:
    def __init__(
        self,
        path: Path,
        clock: Any,
        *,
        term_length: int = T,
        mtu: int = MTU,
        initial_term_id: int = INITIAL_TERM_ID,
    ) -> None:
        self.clock = clock
        self.term_length = term_length
        self.mtu = mtu
        self.initial_term_id = initial_term_id
        self.bits = lbd.position_bits_to_shift(term_length)
        self.manager = CountersManager(
            AtomicBuffer(bytearray(128 * 512)), AtomicBuffer(bytearray(128 * 128)), clock.epoch_clock_ms
        )
        self.system = SystemCounters(self.manager)
        self.endpoint = FakeSendEndpoint()
        self.raw_log = RawLog(path, term_length, 4096, True)
        self.meta = self.raw_log.meta_data
        self.terms = self.raw_log.term_buffers
        lbd.initialise_publication_metadata(
            self.meta,
            session_id=SESSION_ID,
            stream_id=STREAM_ID,
            initial_term_id=initial_term_id,
            mtu_length=mtu,
            term_length=term_length,
            page_size=4096,
            correlation_id=1,
        )
        self.template = lbd.default_frame_header(self.meta)
        self.writer = LogWriter(self.terms, self.meta)
        self.publisher_pos = self.manager.new_counter("pub-pos")
        self.publisher_limit = self.manager.new_counter("pub-lmt")
        self.sender_position = self.manager.new_counter("snd-pos")
        self.sender_limit = self.manager.new_counter("snd-lmt")
        self.publication = NetworkPublication(
            1,
            CHANNEL,
            SESSION_ID,
            STREAM_ID,
            None,
            self.raw_log,
            self.endpoint,
            self.publisher_pos,
            self.publisher_limit,
            self.sender_position,
            self.sender_limit,
            UnicastFlowControl(),
            RetransmitHandler(StaticDelayGenerator(0, immediate_first=True)),
            self.system,
            term_length // 2,
            LINGER_NS,
            CONNECTION_TIMEOUT_NS,
            UNBLOCK_TIMEOUT_NS,
            clock.nano_clock,
            False,
        )
        # One datagram per send(), as 1.15.1: these tests step through datagrams one at a time.
        self.publication.send_burst = 1
        self.publication.inc_ref()

    def __getitem__(self, descriptor: SC) -> int:
        return self.system.get(descriptor).get()

    # --- producer side (a client's publication, in-process) ---

    def offer(self, payload: bytes) -> int:
        self.writer.append(payload)
        return self.publication.producer_position()

    def offer_sizes(self, *sizes: int) -> int:
        for i, size in enumerate(sizes):
            self.offer(bytes((i * 7 + j) & 0xFF for j in range(size)))
        return self.publication.producer_position()

    def claim(self, length: int) -> BufferClaim:
        """``Publication.try_claim``'s path: TermAppender.claim in the active term."""
        index = lbd.active_term_count(self.meta) % 3
        term_id = lbd.term_id(lbd.raw_tail_volatile(self.meta, index))
        claim = BufferClaim()
        assert (
            TermAppender(self.terms[index], self.meta, index).claim(term_id, self.template, length, claim) > 0
        )
        return claim

    def abandon_claim(self, length: int) -> int:
        """Claim a frame and never commit it (a publisher that died mid-claim); its position."""
        position = self.publication.producer_position()
        self.claim(length)
        return position

    def log_bytes(self, position: int, length: int) -> bytes:
        offset = position & (self.term_length - 1)
        return self.terms[(position >> self.bits) % 3].get_bytes(offset, length)

    # --- receiver side (what comes back on the control socket) ---

    def status_message(self, position: int, window: int, receiver_id: int = 1, flags: int = 0) -> None:
        term_id = lbd.compute_term_id_from_position(position, self.bits, self.initial_term_id)
        sm = frames.StatusMessageFrame.decode(
            frames.encode_status_message(
                SESSION_ID, STREAM_ID, term_id, position & (self.term_length - 1), window, receiver_id, flags
            )
        )
        self.publication.on_status_message(sm, self.clock.nano_clock())

    def nak(self, position: int, length: int) -> None:
        term_id = lbd.compute_term_id_from_position(position, self.bits, self.initial_term_id)
        self.publication.on_nak(term_id, position & (self.term_length - 1), length, self.clock.nano_clock())

    def send(self) -> int:
        return self.publication.send(self.clock.nano_clock())

    def drain(self, limit: int = 10_000) -> list[bytes]:
        """Send until a duty cycle sends nothing; the datagrams."""
        for _ in range(limit):
            if self.send() == 0:
                break
        return self.endpoint.take()

    def close(self) -> None:
        self.publication.close()


@pytest.fixture
def make_publication(tmp_path: Path, clock) -> Iterator[Any]:
    made: list[Harness] = []

    def make(**kwargs: Any) -> Harness:
        harness = Harness(tmp_path / f"pub-{len(made)}.logbuffer", clock, **kwargs)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()


# --- setup and heartbeats ---------------------------------------------------------------------------------------


def test_setup_every_100_ms_until_a_status_message(make_publication, clock) -> None:
    p = make_publication()
    p.offer_sizes(100, 200)
    assert p.send() == 0  # a SETUP does not count as data
    [setup] = p.endpoint.take()
    assert frames.SetupFrame.decode(setup) == (
        40, 0, 0, frames.HDR_TYPE_SETUP, 0, SESSION_ID, STREAM_ID,
        INITIAL_TERM_ID, INITIAL_TERM_ID, T, MTU, 0,
    )  # fmt: skip
    # No data before a status message (sender limit 0), and no heartbeats between setups.
    clock.advance_ms(100)
    p.send()
    assert p.endpoint.take() == []  # strictly more than 100 ms
    clock.nanos += 1
    p.send()
    assert [kind(d) for d in p.endpoint.take()] == ["setup"]
    sent = []
    for _ in range(20):
        clock.advance_ms(50)
        clock.nanos += 1
        p.send()
        sent += p.endpoint.take()
    assert [kind(d) for d in sent] == ["setup"] * 10
    assert p.sender_position.get() == 0

    p.status_message(0, T // 2)
    assert p.publication.has_receivers
    assert lbd.is_connected(p.meta)
    assert p.sender_limit.get() == T // 2
    assert [kind(d) for d in p.drain()] == ["data"]  # both messages in one datagram
    # One more SETUP after the timeout (sent once an SM has been seen), then none.
    clock.advance_ms(101)
    p.send()
    assert [kind(d) for d in p.endpoint.take()] == ["setup"]
    assert not p.publication.should_send_setup_frame
    for _ in range(5):
        clock.advance_ms(101)
        p.send()
    assert [kind(d) for d in p.endpoint.take()] == ["heartbeat"] * 5


def test_setup_carries_the_sender_position(make_publication, clock) -> None:
    p = make_publication()
    sent_and_started(p, *[1000] * 70)  # into the second term
    p.publication.trigger_send_setup_frame()  # e.g. a setup-eliciting SM
    clock.advance_ms(101)
    p.send()
    setup = frames.SetupFrame.decode(p.endpoint.take()[0])
    position = p.sender_position.get()
    assert position > T
    assert (setup.active_term_id, setup.term_offset) == (INITIAL_TERM_ID + 1, position - T)
    assert setup.initial_term_id == INITIAL_TERM_ID


def test_heartbeat_after_100_ms_idle_at_the_sender_position(make_publication, clock) -> None:
    p = make_publication()
    p.status_message(0, T // 2)
    p.offer_sizes(100)
    p.drain()
    clock.advance_ms(100)
    assert p.send() == 0
    assert p.endpoint.take() == []
    clock.nanos += 1
    assert p.send() == 32
    [heartbeat] = p.endpoint.take()
    assert frames.DataHeader.decode(heartbeat) == (
        0, 0, frames.UNFRAGMENTED, frames.HDR_TYPE_DATA, 160, SESSION_ID, STREAM_ID, INITIAL_TERM_ID, 0,
    )  # fmt: skip
    assert p[SC.HEARTBEATS_SENT] == 1
    clock.advance_ms(50)
    p.offer_sizes(10)
    p.drain()  # data resets the heartbeat timer
    clock.advance_ms(100)
    p.send()
    assert p.endpoint.take() == []
    clock.advance_ms(1)
    p.send()
    assert [frames.DataHeader.decode(d).term_offset for d in p.endpoint.take()] == [160 + 64]


# --- data -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mtu", [128, 1408, 4096])
def test_data_datagrams_are_whole_committed_frames_up_to_the_mtu(make_publication, mtu: int) -> None:
    p = make_publication(mtu=mtu)
    p.status_message(0, T // 2)
    p.send()
    p.endpoint.take()
    sizes = [(i * 397) % 3000 for i in range(150)]  # about 3.5 terms, fragmented and not
    expected_position = 0
    rounds = 0
    for chunk in range(0, len(sizes), 10):
        p.offer_sizes(*sizes[chunk : chunk + 10])
        producer = p.publication.producer_position()
        while p.sender_position.get() < producer:
            before = p.sender_position.get()
            sent_bytes = p.send()
            [datagram] = p.endpoint.take()
            assert sent_bytes == len(datagram) <= mtu
            assert datagram == p.log_bytes(before, len(datagram))
            found = frames_of(datagram)
            assert found[0][0] == before & (T - 1)
            after = p.sender_position.get()
            if found[-1][2] == frames.HDR_TYPE_PAD:
                # The padding is skipped: the sender moves to the start of the next term.
                assert after == before - (before & (T - 1)) + T
                assert found[-1][0] + found[-1][1] == T
            else:
                assert after == before + len(datagram)
            expected_position = after
            p.status_message(after, T // 2)  # a receiver keeping up
            rounds += 1
        assert p.sender_position.get() == producer == expected_position
    assert p.sender_position.get() > 3 * T
    assert rounds > 0


def test_data_stops_at_a_frame_not_yet_committed(make_publication) -> None:
    p = make_publication()
    p.status_message(0, T // 2)
    p.send()
    p.endpoint.take()
    p.offer_sizes(100)
    claim = p.claim(100)
    p.offer_sizes(100)
    assert [len(d) for d in p.drain()] == [160]
    assert p.sender_position.get() == 160
    claim.put_bytes(b"c" * 100)
    claim.commit()
    [datagram] = p.drain()
    assert [(o, n) for o, n, _ in frames_of(datagram)] == [(160, 132), (320, 132)]
    assert datagram[32:132] == b"c" * 100  # the claimed frame leads this datagram


def test_sender_limit_from_status_messages(make_publication) -> None:
    p = make_publication()
    p.send()
    p.endpoint.take()
    p.offer_sizes(*[100] * 20)  # frames of 160 bytes
    p.status_message(0, 1000)
    assert p.sender_limit.get() == 1000
    [datagram] = p.drain()
    assert len(datagram) == 960  # whole frames within the window
    assert p.sender_position.get() == 960
    assert p[SC.SENDER_FLOW_CONTROL_LIMITS] == 0  # 40 bytes of window left: no frame fits, not a limit
    p.status_message(0, 960 + 320)
    assert p.sender_limit.get() == 1280
    assert [len(d) for d in p.drain()] == [320]
    assert p[SC.SENDER_FLOW_CONTROL_LIMITS] == 1  # window exhausted after sending
    p.send()
    assert p[SC.SENDER_FLOW_CONTROL_LIMITS] == 1  # counted once per stall
    p.status_message(160, 100)  # an older, smaller SM never moves the limit back
    assert p.sender_limit.get() == 1280
    p.status_message(1280, 10 * 160)
    assert sum(len(d) for d in p.drain()) == 10 * 160
    assert p.sender_position.get() == 2880


def test_short_send_leaves_the_sender_position(make_publication) -> None:
    p = make_publication()
    p.status_message(0, T // 2)
    p.offer_sizes(100)
    p.endpoint.short_by = 1
    assert p.send() == 0
    assert p.sender_position.get() == 0
    assert p[SC.SHORT_SENDS] == 2  # the SETUP and the data
    p.endpoint.short_by = 0
    p.endpoint.take()
    assert p.send() == 160
    assert p.sender_position.get() == 160


# --- NAKs and retransmits ----------------------------------------------------------------------------------------


def send_all(p: Harness) -> None:
    """Send everything produced, with a receiver that keeps up (an SM at each new sender position)."""
    while p.sender_position.get() < p.publication.producer_position():
        assert p.send() > 0
        p.status_message(p.sender_position.get(), T // 2)


def sent_and_started(p: Harness, *sizes: int) -> None:
    p.status_message(0, T // 2)
    p.send()
    p.offer_sizes(*sizes)
    send_all(p)
    p.endpoint.take()


def test_nak_resends_exactly_the_requested_range(make_publication, clock) -> None:
    p = make_publication()
    sent_and_started(p, *[100] * 30)  # 30 frames of 160 bytes
    p.nak(320, 640)
    assert p.endpoint.take() == [p.log_bytes(320, 640)]
    assert p[SC.RETRANSMITS_SENT] == 1
    p.nak(1600, 12 * 160)  # more than an MTU: whole frames, each datagram <= mtu
    resent = p.endpoint.take()
    assert [len(d) for d in resent] == [1280, 640]
    assert b"".join(resent) == p.log_bytes(1600, 12 * 160)
    assert all(len(d) <= MTU for d in resent)
    assert p[SC.RETRANSMITS_SENT] == 2
    assert p.sender_position.get() == 30 * 160  # retransmits do not move the sender


def test_duplicate_naks_within_the_linger_are_ignored(make_publication, clock) -> None:
    p = make_publication()
    sent_and_started(p, *[100] * 10)
    p.nak(320, 320)
    assert len(p.endpoint.take()) == 1
    clock.advance_ms(30)
    p.nak(320, 320)
    p.nak(320, 640)  # same (term id, term offset): the same action
    assert p.endpoint.take() == []
    p.nak(480, 160)  # another offset: its own action
    assert p.endpoint.take() == [p.log_bytes(480, 160)]
    clock.advance_ms(31)
    p.send()  # the sender's duty cycle ends the linger
    p.endpoint.take()
    p.nak(320, 320)
    assert p.endpoint.take() == [p.log_bytes(320, 320)]
    assert p[SC.RETRANSMITS_SENT] == 3


def test_naks_outside_the_sent_term_window_resend_nothing(make_publication) -> None:
    p = make_publication()
    sent_and_started(p, *[100] * 10)
    p.nak(1600, 160)  # at the sender position: not sent yet
    p.nak(10 * T, 160)  # far ahead
    assert p.endpoint.take() == []
    assert p[SC.RETRANSMITS_SENT] == 0


def test_nak_older_than_a_term_behind_the_sender_resends_nothing(make_publication) -> None:
    p = make_publication()
    p.status_message(0, T // 2)
    p.send()
    for _ in range(2):
        p.offer_sizes(*[1000] * 40)  # frames of 1056 bytes; 62 fit the first term, then padding
        while p.sender_position.get() < p.publication.producer_position():
            p.send()
            p.status_message(p.sender_position.get(), T // 2)
    p.endpoint.take()
    assert p.sender_position.get() == T + 18 * 1056
    p.nak(17 * 1056, 1056)  # more than a term behind the sender: its term may be reused already
    assert p.endpoint.take() == []
    p.nak(18 * 1056, 1056)  # exactly a term behind: still there
    assert p.endpoint.take() == [p.log_bytes(18 * 1056, 1056)]
    assert p[SC.RETRANSMITS_SENT] == 1


def test_nak_length_is_capped_at_the_end_of_the_term(make_publication) -> None:
    p = make_publication()
    sent_and_started(p, *[1000] * 70)  # past the end of the first term: padding there
    pad_at = 62 * 1056
    assert p.log_bytes(pad_at, 8)[6:8] == frames.HDR_TYPE_PAD.to_bytes(2, "little")
    p.nak(61 * 1056, 10 * T)
    resent = p.endpoint.take()
    # The last data frame and the PAD header; nothing of the next term.
    assert resent == [p.log_bytes(61 * 1056, 1056 + 32)]


def test_nak_with_an_offset_outside_the_term_is_an_invalid_packet(make_publication) -> None:
    p = make_publication()
    sent_and_started(p, *[100] * 10)
    term_id = INITIAL_TERM_ID
    p.publication.on_nak(term_id, T - 16, 32, 0)  # past termLength - 32
    p.publication.on_nak(term_id, -32, 32, 0)
    assert p.endpoint.take() == []
    assert p[SC.INVALID_PACKETS] == 2


# --- RTT measurement ----------------------------------------------------------------------------------------------


def test_rttm_with_reply_flag_is_echoed(make_publication) -> None:
    p = make_publication()
    request = frames.RttmFrame.decode(
        frames.encode_rttm(SESSION_ID, STREAM_ID, 123_456, 0, 77, frames.REPLY_FLAG)
    )
    p.publication.on_rttm(request)
    [reply] = p.endpoint.take()
    assert frames.RttmFrame.decode(reply) == (
        40, 0, 0, frames.HDR_TYPE_RTTM, SESSION_ID, STREAM_ID, 123_456, 0, 77,
    )  # fmt: skip
    p.publication.on_rttm(request._replace(flags=0))
    assert p.endpoint.take() == []


# --- conductor side: publisher limit, cleaning, connection ----------------------------------------------------------


def test_publisher_limit_follows_the_sender_while_connected(make_publication, clock) -> None:
    p = make_publication()
    p.publisher_limit.set(5000)
    assert p.publication.update_publisher_limit() == 0
    assert p.publisher_limit.get() == 0  # not connected: clamped to the sender position
    sent_and_started(p, *[100] * 10)
    assert p.publication.update_publisher_limit() == 1
    assert p.publisher_limit.get() == 1600 + T // 2
    assert p.publication.update_publisher_limit() == 0
    spy = p.manager.new_counter("spy-pos")
    spy.set(320)
    p.publication.add_subscriber(spy)
    assert p.publication.update_publisher_limit() == 0  # never moves back
    assert p.publisher_limit.get() == 1600 + T // 2
    p.offer_sizes(*[100] * 10)
    p.drain()
    spy.set(3000)
    assert p.publication.update_publisher_limit() == 1
    assert p.publisher_limit.get() == 3000 + T // 2  # the slowest consumer: the spy
    # No SM for the connection timeout: no receivers, not connected, the limit falls to the sender.
    clock.advance_ms(5000)
    clock.nanos += 1
    p.send()
    assert not p.publication.has_receivers
    p.publication.on_time_event(clock.nano_clock(), FakeConductor())
    assert not lbd.is_connected(p.meta)
    assert p.publication.update_publisher_limit() == 0
    assert p.publisher_limit.get() == p.sender_position.get() == 3200
    assert p.publisher_pos.get() == 3200


def test_cleaning_keeps_two_terms_behind_the_publisher_limit(make_publication) -> None:
    p = make_publication()
    for term in p.terms:
        term.put_bytes(0, b"\xff" * T)
    p.status_message(0, T // 2)
    p.sender_position.set(2 * T - T // 2 + 4096)
    assert p.publication.update_publisher_limit() == 1  # limit 2T + 4096: clean up to 4096
    assert p.terms[0].get_bytes(0, 4096) == bytes(4096)
    assert p.terms[0].get_bytes(4096, 32) == b"\xff" * 32
    p.sender_position.set(3 * T)
    p.publication.update_publisher_limit()  # up to the end of the dirty term only
    assert p.terms[0].get_bytes(0, T) == bytes(T)
    assert p.terms[1].get_bytes(0, T) == b"\xff" * T
    p.sender_position.set(3 * T + 4096)
    p.publication.update_publisher_limit()
    assert p.terms[1].get_bytes(0, T // 2 + 4096) == bytes(T // 2 + 4096)
    assert p.terms[1].get_bytes(T // 2 + 4096, 32) == b"\xff" * 32
    assert p.terms[2].get_bytes(0, T) == b"\xff" * T


# --- close: draining, end of stream, linger ---------------------------------------------------------------------------


def test_dec_ref_drains_then_eos_heartbeats_then_linger_and_cleanup(make_publication, clock) -> None:
    p = make_publication()
    conductor = FakeConductor()
    p.status_message(0, T // 2)
    p.send()
    producer = p.offer_sizes(1000, 1000, 1000)  # one frame per datagram
    p.send()
    p.publication.update_publisher_limit()
    p.endpoint.take()
    assert p.sender_position.get() == 1056 < producer == 3 * 1056

    p.publication.dec_ref()
    assert p.publication.state is State.DRAINING
    assert p.publisher_limit.get() == producer
    assert lbd.end_of_stream_position(p.meta) == producer
    assert not p.publication.is_end_of_stream
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p.publication.state is State.DRAINING  # receivers present and data still to send
    assert p.publisher_pos.get() == producer

    p.drain()
    assert p.sender_position.get() == producer
    clock.advance_ms(1000)
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p.publication.is_end_of_stream
    assert p.publication.state is State.LINGER
    lingering_since = clock.nano_clock()

    # EOS heartbeats keep flowing during the linger; a setup request no longer re-arms setups.
    p.publication.trigger_send_setup_frame()
    for _ in range(3):
        clock.advance_ms(101)
        p.send()
    heartbeats = p.endpoint.take()
    assert [kind(d) for d in heartbeats] == ["heartbeat"] * 3
    for heartbeat in heartbeats:
        header = frames.DataHeader.decode(heartbeat)
        assert header.flags == frames.BEGIN_END_AND_EOS_FLAGS == 0xE0
        assert (header.term_id, header.term_offset) == (INITIAL_TERM_ID, producer)

    clock.nanos = lingering_since + LINGER_NS
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert conductor.cleaned_up == []
    clock.nanos += 1
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert conductor.cleaned_up == [p.publication]
    assert p.publication.state is State.CLOSING


def test_dec_ref_when_all_was_sent_is_end_of_stream_at_once(make_publication, clock) -> None:
    p = make_publication()
    sent_and_started(p, 100)
    p.publication.inc_ref()
    p.publication.dec_ref()
    assert p.publication.state is State.ACTIVE  # another client still holds it
    p.publication.dec_ref()
    assert p.publication.is_end_of_stream
    clock.advance_ms(101)
    p.send()
    assert frames.DataHeader.decode(p.endpoint.take()[-1]).flags == 0xE0


def test_draining_without_receivers_lingers_without_eos(make_publication, clock) -> None:
    p = make_publication()
    p.status_message(0, 160)  # room for one frame
    p.offer_sizes(100, 100)
    p.drain()
    assert p.sender_position.get() == 160
    clock.advance_ms(5001)
    p.send()  # no SM for the connection timeout
    assert not p.publication.has_receivers
    p.publication.dec_ref()
    p.publication.on_time_event(clock.nano_clock(), FakeConductor())
    assert p.publication.state is State.LINGER
    assert not p.publication.is_end_of_stream


def test_draining_waits_for_spies(make_publication, clock) -> None:
    p = make_publication()
    spy = p.manager.new_counter("spy-pos")
    p.publication.add_subscriber(spy)
    sent_and_started(p, 100)
    producer = p.publication.producer_position()
    p.publication.dec_ref()
    conductor = FakeConductor()
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p.publication.is_end_of_stream
    assert p.publication.state is State.DRAINING
    assert conductor.spies_cleaned_up == []
    spy.set(producer)
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p.publication.state is State.LINGER
    assert conductor.spies_cleaned_up == [p.publication]  # their images go unavailable


# --- a publisher that died mid-claim ---------------------------------------------------------------------------------


def test_active_publication_unblocks_an_abandoned_claim(make_publication, clock) -> None:
    p = make_publication()
    sent_and_started(p, 100)
    blocked_at = p.abandon_claim(100)
    p.offer_sizes(200)
    p.drain()
    assert p.sender_position.get() == blocked_at
    conductor = FakeConductor()
    p.publication.on_time_event(clock.nano_clock(), conductor)
    clock.nanos += UNBLOCK_TIMEOUT_NS + 1
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p[SC.UNBLOCKED_PUBLICATIONS] == 1
    p.drain()
    assert p.sender_position.get() == p.publication.producer_position()


def test_draining_publication_unblocks_an_abandoned_claim(make_publication, clock) -> None:
    p = make_publication()
    sent_and_started(p, 100)
    p.abandon_claim(100)
    p.offer_sizes(200)
    p.drain()
    p.publication.dec_ref()
    conductor = FakeConductor()
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p[SC.UNBLOCKED_PUBLICATIONS] == 1
    p.drain()
    p.publication.on_time_event(clock.nano_clock(), conductor)
    assert p.publication.state is State.LINGER
    assert p.publication.is_end_of_stream
