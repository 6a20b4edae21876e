"""PublicationImage, sans-IO: the receiver's rebuild of a remote stream and the conductor's gap scan.

Datagrams come from a reference stream offered through the real concurrent offer path (tests/support
LogWriter) into a scratch log and cut the way the sender cuts them (whole frames, at most one MTU, a PAD frame sent as its header only). The image
gets them through ``insert_packet`` in any order; after each step the test checks what docs/wire.md §7 and
docs/logbuffer.md §7-8 define: rcv-hwm = max(packet position + datagram length, heartbeat position),
rcv-pos = the end of the contiguous prefix (one term per ``track_rebuild``), the term contents, the NAKs the
scan schedules (every gap of a scan: our extension), loss-report entries, flow-control under/over-runs,
status-message scheduling, cleaning and end of stream. No sockets: the channel endpoint is a recorder.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import CountersManager
from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.term_scanner import scan_for_availability
from driver.protocol import frames
from driver.protocol.feedback_delay import (
    NAK_UNICAST_DELAY_NS,
    OptimalMulticastDelayGenerator,
    StaticDelayGenerator,
)
from driver.publication_image import PublicationImage, State
from driver.raw_log import RawLog
from driver.reports.loss_report import LossReport, iter_loss_report
from driver.status.system_counters import SystemCounterDescriptor as SC
from driver.status.system_counters import SystemCounters
from driver.util.bit_util import align, to_int32
from tests.support import LogWriter

T = 64 * 1024
MTU = 1408
SESSION_ID, STREAM_ID = 0x1234, 1001
INITIAL_TERM_ID = 7
CHANNEL = "aeron:udp?endpoint=127.0.0.1:40123"
SOURCE = ("192.0.2.1", 40001)
OTHER_SOURCE = ("192.0.2.2", 40002)
SM_TIMEOUT_NS = 200_000_000
INITIAL_WINDOW = 128 * 1024
LIVENESS_NS = 10_000_000_000
MS = 1_000_000
INT64_MAX = 2**63 - 1


# --- collaborators ------------------------------------------------------------------------------------------


class SentSm(NamedTuple):
    addresses: list
    session_id: int
    stream_id: int
    term_id: int
    term_offset: int
    window: int
    flags: int


class SentNak(NamedTuple):
    addresses: list
    session_id: int
    stream_id: int
    term_id: int
    term_offset: int
    length: int


class FakeReceiveEndpoint:
    """Stands in for ReceiveChannelEndpoint: records what the image asks it to send."""

    channel = CHANNEL

    def __init__(self) -> None:
        self.sms: list[SentSm] = []
        self.naks: list[SentNak] = []

    def send_status_message(self, addresses, session_id, stream_id, term_id, term_offset, window, flags):
        self.sms.append(SentSm(list(addresses), session_id, stream_id, term_id, term_offset, window, flags))

    def send_nak(self, addresses, session_id, stream_id, term_id, term_offset, length):
        self.naks.append(SentNak(list(addresses), session_id, stream_id, term_id, term_offset, length))

    def take_naks(self) -> list[tuple[int, int, int]]:
        naks = [(n.term_id, n.term_offset, n.length) for n in self.naks]
        self.naks.clear()
        return naks


class FakeConductor:
    def __init__(self) -> None:
        self.lingering: list[PublicationImage] = []

    def on_image_linger(self, image: PublicationImage) -> None:
        self.lingering.append(image)


class Counters:
    """A CountersManager over bytearrays with the system counters allocated first, as the driver does."""

    def __init__(self, epoch_clock_ms=lambda: 0) -> None:
        self.manager = CountersManager(
            AtomicBuffer(bytearray(256 * 512)), AtomicBuffer(bytearray(256 * 128)), epoch_clock_ms
        )
        self.system = SystemCounters(self.manager)

    def new(self, label: str, value: int = 0):
        counter = self.manager.new_counter(label)
        counter.set(value)
        return counter

    def __getitem__(self, descriptor: SC) -> int:
        return self.system.get(descriptor).get()


# --- the reference stream -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Datagram:
    position: int
    term_id: int
    term_offset: int
    data: bytes

    @property
    def end(self) -> int:
        return self.position + len(self.data)


@dataclass(frozen=True)
class Frame:
    position: int
    end: int  # where the next frame starts (a PAD frame runs to the end of its term)
    is_pad: bool


class Stream:
    """Messages offered through the real concurrent offer path (LogWriter: rotation and padding included) to a
    scratch log that
    starts at (``term_id``, ``term_offset``), then cut into datagrams as the sender does."""

    def __init__(
        self,
        initial_term_id: int = INITIAL_TERM_ID,
        term_id: int = INITIAL_TERM_ID,
        term_offset: int = 0,
        term_length: int = T,
        mtu: int = MTU,
    ) -> None:
        self.initial_term_id = initial_term_id
        self.term_length = term_length
        self.mtu = mtu
        self.bits = lbd.position_bits_to_shift(term_length)
        self._buffer = AtomicBuffer(bytearray(3 * term_length + lbd.LOG_META_DATA_LENGTH))
        self.terms = [self._buffer.slice(i * term_length, term_length) for i in range(3)]
        self.meta = self._buffer.slice(3 * term_length, lbd.LOG_META_DATA_LENGTH)
        lbd.initialise_publication_metadata(
            self.meta,
            session_id=SESSION_ID,
            stream_id=STREAM_ID,
            initial_term_id=initial_term_id,
            mtu_length=mtu,
            term_length=term_length,
            page_size=4096,
            correlation_id=1,
            term_id=term_id,
            term_offset=term_offset,
        )
        self.template = lbd.default_frame_header(self.meta)
        self.writer = LogWriter(self.terms, self.meta)
        self.join_position = self.position

    @property
    def position(self) -> int:
        raw_tail = lbd.active_raw_tail_volatile(self.meta)
        return lbd.compute_position(
            lbd.term_id(raw_tail),
            lbd.term_offset(raw_tail, self.term_length),
            self.bits,
            self.initial_term_id,
        )

    def offer(self, payload: bytes) -> int:
        return self.writer.append(payload)

    def offer_all(self, sizes: list[int]) -> Stream:
        for i, size in enumerate(sizes):
            self.offer(bytes((i + j) & 0xFF for j in range(size)))
        return self

    def term_id_of(self, position: int) -> int:
        return lbd.compute_term_id_from_position(position, self.bits, self.initial_term_id)

    def term_of(self, position: int) -> AtomicBuffer:
        return self.terms[(position >> self.bits) % 3]

    def frames(self) -> list[Frame]:
        found = []
        position, end = self.join_position, self.position
        while position < end:
            offset = position & (self.term_length - 1)
            length, _, _, frame_type = frames.COMMON_HEADER.unpack_from(self.term_of(position).view, offset)
            assert length > 0, f"uncommitted frame at {position}"
            is_pad = frame_type == frames.HDR_TYPE_PAD
            next_position = position - offset + self.term_length if is_pad else position + align(length, 32)
            found.append(Frame(position, next_position, is_pad))
            position = next_position
        return found

    def datagram(self, position: int, end: int) -> Datagram:
        """The bytes of [position, end) of one term as a datagram (a PAD frame in it: its header only)."""
        offset = position & (self.term_length - 1)
        assert end - position <= self.term_length - offset
        data = self.term_of(position).get_bytes(offset, end - position)
        return Datagram(position, self.term_id_of(position), offset, data)

    def frame_datagram(self, first: Frame, last: Frame) -> Datagram:
        """Frames first..last (one term) in one datagram, whatever its length."""
        end = last.position + frames.HEADER_LENGTH if last.is_pad else last.end
        return self.datagram(first.position, end)

    def datagrams(self, mtu: int | None = None) -> list[Datagram]:
        """Cut as NetworkPublication.send does: scan_for_availability up to the MTU, skip the padding."""
        mtu = mtu or self.mtu
        found = []
        position, end = self.join_position, self.position
        while position < end:
            offset = position & (self.term_length - 1)
            available, padding = scan_for_availability(self.term_of(position), offset, mtu)
            assert available > 0
            found.append(self.datagram(position, position + available))
            position += available + padding
        return found

    def expected_bytes(self, position: int, end: int) -> bytes:
        offset = position & (self.term_length - 1)
        return self.term_of(position).get_bytes(offset, end - position)


def data_frame(term_id: int, term_offset: int, payload: bytes, session_id: int = SESSION_ID) -> bytes:
    """One DATA frame (padded to 32) built by hand with frames.DATA_HEADER."""
    header = frames.DATA_HEADER.pack(
        frames.HEADER_LENGTH + len(payload),
        0,
        frames.UNFRAGMENTED,
        frames.HDR_TYPE_DATA,
        term_offset,
        session_id,
        STREAM_ID,
        term_id,
        0,
    )
    frame = header + payload
    return frame + bytes(align(len(frame), 32) - len(frame))


# --- the image under test -------------------------------------------------------------------------------------


class Harness:
    def __init__(
        self,
        path: Path,
        clock: Any,
        *,
        term_length: int = T,
        initial_term_id: int = INITIAL_TERM_ID,
        active_term_id: int = INITIAL_TERM_ID,
        term_offset: int = 0,
        subscribers: int = 1,
        reliable: bool = True,
        delay_generator: Any = None,
        loss_report: bool = True,
        initial_window: int = INITIAL_WINDOW,
        activate: bool = True,
    ) -> None:
        self.clock = clock
        self.term_length = term_length
        self.counters = Counters(clock.epoch_clock_ms)
        self.endpoint = FakeReceiveEndpoint()
        self.loss_buffer = AtomicBuffer(bytearray(64 * 1024))
        self.raw_log = RawLog(path, term_length, 4096, True)
        lbd.initialise_image_metadata(
            self.raw_log.meta_data,
            session_id=SESSION_ID,
            stream_id=STREAM_ID,
            initial_term_id=initial_term_id,
            mtu_length=MTU,
            term_length=term_length,
            page_size=4096,
            correlation_id=99,
        )
        bits = lbd.position_bits_to_shift(term_length)
        self.join_position = lbd.compute_position(active_term_id, term_offset, bits, initial_term_id)
        self.subscriber_positions = [
            self.counters.new(f"sub-pos {i}", self.join_position) for i in range(subscribers)
        ]
        self.hwm = self.counters.new("rcv-hwm")
        self.rebuild = self.counters.new("rcv-pos")
        self.image = PublicationImage(
            99,
            LIVENESS_NS,
            self.endpoint,
            SOURCE,
            0,
            SESSION_ID,
            STREAM_ID,
            initial_term_id,
            active_term_id,
            term_offset,
            self.raw_log,
            delay_generator or StaticDelayGenerator(NAK_UNICAST_DELAY_NS, immediate_first=True),
            list(self.subscriber_positions),
            self.hwm,
            self.rebuild,
            SOURCE,
            initial_window,
            LossReport(self.loss_buffer) if loss_report else None,
            reliable,
            self.counters.system,
            clock.nano_clock(),
            clock.epoch_clock_ms,
        )
        if activate:
            self.image.activate()

    @property
    def terms(self) -> tuple[AtomicBuffer, ...]:
        return self.raw_log.term_buffers

    def insert(self, datagram: Datagram, transport_index: int = 0, source: tuple[str, int] = SOURCE) -> int:
        return self.image.insert_packet(
            datagram.term_id,
            datagram.term_offset,
            datagram.data,
            len(datagram.data),
            transport_index,
            lambda: source,
            self.clock.nano_clock(),
        )

    def insert_raw(self, term_id: int, term_offset: int, data: bytes, transport_index: int = 0) -> int:
        return self.image.insert_packet(
            term_id, term_offset, data, len(data), transport_index, lambda: SOURCE, self.clock.nano_clock()
        )

    def heartbeat(self, stream: Stream, position: int, eos: bool = False, transport_index: int = 0) -> int:
        offset = position & (self.term_length - 1)
        term_id = stream.term_id_of(position)
        packet = frames.encode_heartbeat(SESSION_ID, STREAM_ID, term_id, offset, eos)
        return self.image.insert_packet(
            term_id, offset, packet, len(packet), transport_index, lambda: SOURCE, self.clock.nano_clock()
        )

    def scan(self) -> int:
        """One conductor pass (track_rebuild) and one receiver pass over pending loss; the rebuild position."""
        self.image.track_rebuild(self.clock.nano_clock(), SM_TIMEOUT_NS)
        self.image.process_pending_loss()
        return self.rebuild.get()

    def rebuild_fully(self) -> int:
        """Passes until rcv-pos stops moving (each pass scans one term)."""
        while True:
            before = self.rebuild.get()
            if self.scan() == before:
                return before

    def term_bytes(self, position: int, end: int) -> bytes:
        offset = position & (self.term_length - 1)
        bits = lbd.position_bits_to_shift(self.term_length)
        return self.terms[(position >> bits) % 3].get_bytes(offset, end - position)

    def loss_entries(self) -> list:
        return list(iter_loss_report(self.loss_buffer))

    def close(self) -> None:
        self.image.close()


@pytest.fixture
def make_image(tmp_path: Path, clock) -> Iterator[Any]:
    made: list[Harness] = []

    def make(**kwargs: Any) -> Harness:
        harness = Harness(tmp_path / f"image-{len(made)}.logbuffer", clock, **kwargs)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()


def gaps_of(stream: Stream, received: set[int], rebuild: int, hwm: int) -> tuple[int, list[tuple[int, int]]]:
    """Model of one scan (docs/logbuffer.md §7, every gap): (new rebuild position, [(gap position, length)])."""
    if rebuild >= hwm:
        return rebuild, []
    ends = {f.position: f.end for f in stream.frames()}
    term_base = rebuild - (rebuild & (stream.term_length - 1))
    limit = min(hwm, term_base + stream.term_length)
    position = rebuild
    while position < limit and position in received:
        position = ends[position]
    new_rebuild = position
    gaps = []
    while position < limit:
        start = position
        while position < limit and position not in received:
            position = ends[position]
        gaps.append((start, min(position, limit) - start))
        while position < limit and position in received:
            position = ends[position]
    return new_rebuild, gaps


def frames_in(stream: Stream, datagram: Datagram) -> set[int]:
    return {f.position for f in stream.frames() if datagram.position <= f.position < datagram.end}


def nak(stream: Stream, position: int, length: int) -> tuple[int, int, int]:
    return stream.term_id_of(position), position & (stream.term_length - 1), length


SIZES = [100, 500, 1300, 2000, 60, 0, 800, 1000, 33, 4000, 700, 1200]


# --- in order, duplicates -------------------------------------------------------------------------------------


def test_in_order_datagrams_rebuild_the_stream(make_image, clock) -> None:
    stream = Stream(term_id=INITIAL_TERM_ID + 1, term_offset=1024).offer_all(SIZES)
    h = make_image(active_term_id=INITIAL_TERM_ID + 1, term_offset=1024)
    assert h.hwm.get() == h.rebuild.get() == h.join_position == T + 1024
    datagrams = stream.datagrams()
    assert all(len(d.data) <= MTU for d in datagrams)
    for datagram in datagrams:
        assert h.insert(datagram) == len(datagram.data)
        assert h.hwm.get() == datagram.end
        assert h.scan() == datagram.end
        assert h.term_bytes(stream.join_position, datagram.end) == stream.expected_bytes(
            stream.join_position, datagram.end
        )
    assert h.endpoint.naks == []
    assert h.loss_entries() == []
    assert h.counters[SC.FLOW_CONTROL_UNDER_RUNS] == h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 0


def test_duplicates_change_nothing(make_image) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image()
    d = stream.datagrams()
    h.insert(d[0])
    h.insert(d[1])
    before = h.term_bytes(0, d[1].end)
    h.insert(d[0])
    h.insert(d[1])
    assert (h.hwm.get(), h.scan()) == (d[1].end, d[1].end)
    # A duplicate with other bytes under the same headers does not overwrite what arrived first.
    forged = bytearray(d[0].data)
    forged[40:50] = b"\xee" * 10
    h.insert(Datagram(d[0].position, d[0].term_id, d[0].term_offset, bytes(forged)))
    assert h.term_bytes(0, d[1].end) == before == stream.expected_bytes(0, d[1].end)
    assert h.endpoint.naks == []


# --- out of order, gaps, NAKs, loss report --------------------------------------------------------------------


def test_out_of_order_gaps_are_naked_then_filled(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image()
    d = stream.datagrams()
    assert len(d) >= 6

    h.insert(d[2])
    assert h.hwm.get() == d[2].end
    assert h.scan() == 0  # rcv-pos stays at the join position: a gap at the start
    assert h.endpoint.take_naks() == [nak(stream, 0, d[2].position)]
    assert h.term_bytes(d[2].position, d[2].end) == d[2].data

    h.insert(d[4])
    assert h.hwm.get() == d[4].end
    assert h.scan() == 0
    # The first gap keeps its deadline (no repeat yet); the new one is NAKed at once.
    assert h.endpoint.take_naks() == [nak(stream, d[3].position, d[4].position - d[3].position)]

    h.insert(d[0])
    assert h.scan() == d[0].end
    # What remains of the first gap inherits its deadline: no NAK for the repair still arriving.
    assert h.endpoint.take_naks() == []

    clock.advance_ms(60)
    assert h.scan() == d[0].end
    assert h.endpoint.take_naks() == [
        nak(stream, d[1].position, d[2].position - d[1].position),
        nak(stream, d[3].position, d[4].position - d[3].position),
    ]

    h.insert(d[3])
    h.insert(d[1])
    assert h.scan() == d[4].end
    assert h.term_bytes(0, d[4].end) == stream.expected_bytes(0, d[4].end)
    clock.advance_ms(60)
    h.scan()
    assert h.endpoint.take_naks() == []
    assert h.counters[SC.NAK_MESSAGES_SENT] == 4


def test_one_scan_naks_every_gap(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image()
    d = stream.datagrams()
    for i in (1, 3, 5):
        h.insert(d[i])
    assert h.hwm.get() == d[5].end
    assert h.scan() == 0
    expected = [
        nak(stream, 0, len(d[0].data)),
        nak(stream, d[2].position, len(d[2].data)),
        nak(stream, d[4].position, len(d[4].data)),
    ]
    naks = list(h.endpoint.naks)
    assert [(n.term_id, n.term_offset, n.length) for n in naks] == expected
    assert all(n.addresses == [(0, SOURCE)] for n in naks)
    assert all((n.session_id, n.stream_id) == (SESSION_ID, STREAM_ID) for n in naks)
    assert h.counters[SC.NAK_MESSAGES_SENT] == 3

    entries = h.loss_entries()
    assert len(entries) == 1
    entry = entries[0]
    assert entry.observation_count == 3
    assert entry.total_bytes_lost == sum(n[2] for n in expected)
    assert (entry.session_id, entry.stream_id) == (SESSION_ID, STREAM_ID)
    assert (entry.channel, entry.source) == (CHANNEL, f"/{SOURCE[0]}:{SOURCE[1]}")
    first_ms = entry.first_observation_ms
    assert first_ms == entry.last_observation_ms == clock.epoch_clock_ms()


def test_nak_repeats_every_60_ms_while_the_gap_persists(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image()
    d = stream.datagrams()
    for i in (1, 3, 5):
        h.insert(d[i])
    h.scan()
    first = h.endpoint.take_naks()
    assert len(first) == 3

    clock.advance_ms(59)
    h.scan()
    assert h.endpoint.take_naks() == []
    clock.advance_ms(1)
    h.scan()
    assert h.endpoint.take_naks() == first

    h.insert(d[2])  # one gap repaired
    clock.advance_ms(60)
    h.scan()
    assert h.endpoint.take_naks() == [first[0], first[2]]
    entry = h.loss_entries()[0]
    assert entry.observation_count == 3 + 3 + 2
    assert entry.total_bytes_lost == 2 * sum(n[2] for n in first) + first[0][2] + first[2][2]
    assert entry.last_observation_ms == clock.epoch_clock_ms()
    assert entry.first_observation_ms == clock.epoch_clock_ms() - 120


def test_multicast_nak_waits_a_random_delay(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image(delay_generator=OptimalMulticastDelayGenerator(rng=random.Random(7)))
    d = stream.datagrams()
    h.insert(d[1])
    h.scan()
    assert h.endpoint.naks == []
    [(term_id, offset, length, deadline)] = h.image.loss_detector.active_gaps
    assert (term_id, offset, length) == nak(stream, 0, d[1].position)
    assert 0 <= deadline - clock.nano_clock() < 60 * MS
    clock.nanos = deadline - 1
    h.scan()
    assert h.endpoint.naks == []
    clock.nanos = deadline
    h.scan()
    assert h.endpoint.take_naks() == [nak(stream, 0, d[1].position)]


def test_unreliable_image_fills_gaps_with_padding(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image(reliable=False)
    d = stream.datagrams()
    h.insert(d[0])
    h.insert(d[2])
    assert h.scan() == d[0].end  # the gap is found and filled by the receiver's pass
    assert h.endpoint.naks == []
    assert h.counters[SC.LOSS_GAP_FILLS] == 1
    fields = frames.DATA_HEADER.unpack_from(h.term_bytes(d[1].position, d[1].position + 32))
    assert (fields[0], fields[3], fields[4], fields[7]) == (
        len(d[1].data),
        frames.HDR_TYPE_PAD,
        d[1].term_offset,
        d[1].term_id,
    )
    assert h.scan() == d[2].end
    h.insert(d[1])  # too late: the padding stays
    assert h.term_bytes(d[1].position, d[1].position + 4) == len(d[1].data).to_bytes(4, "little")


# --- overlapping datagrams ------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["first-then-overlap", "overlap-then-first"])
def test_overlapping_datagrams_fill_the_frames_that_were_missing(make_image, order: str) -> None:
    stream = Stream().offer_all([100] * 8)  # frames of 160 bytes
    h = make_image()
    f = stream.frames()
    a = stream.frame_datagram(f[0], f[1])
    b = stream.frame_datagram(f[1], f[2])
    for datagram in (a, b) if order == "first-then-overlap" else (b, a):
        h.insert(datagram)
    assert h.hwm.get() == f[2].end
    assert h.scan() == f[2].end
    assert h.term_bytes(0, f[2].end) == stream.expected_bytes(0, f[2].end)

    # A wide retransmission over frames partly present fills only the absent ones.
    h.insert(stream.frame_datagram(f[4], f[4]))
    h.insert(stream.frame_datagram(f[2], f[6]))
    assert h.scan() == f[6].end
    assert h.term_bytes(0, f[6].end) == stream.expected_bytes(0, f[6].end)
    assert h.endpoint.naks == []


# --- padding at the end of a term ------------------------------------------------------------------------------


def pad_stream() -> Stream:
    """Joins 2 frames of 1056 bytes + 512 before the end of term 8: the third message trips a 512-byte PAD."""
    offset = T - 2 * 1056 - 512
    return Stream(term_id=INITIAL_TERM_ID + 1, term_offset=offset).offer_all([1000] * 5)


def test_padding_datagram_takes_the_rebuild_to_the_next_term(make_image) -> None:
    stream = pad_stream()
    h = make_image(active_term_id=INITIAL_TERM_ID + 1, term_offset=T - 2 * 1056 - 512)
    f = stream.frames()
    assert [x.is_pad for x in f] == [False, False, True, False, False, False]
    d = stream.datagrams()
    # The sender sends the second frame with the PAD header behind it, then the next term.
    assert [len(x.data) for x in d] == [1056, 1056 + 32, 1056, 1056, 1056]
    pad_position = f[2].position
    assert pad_position == 2 * T - 512

    h.insert(d[0])
    h.insert(d[1])
    assert h.hwm.get() == pad_position + 32
    # The scan steps over the whole padding: rcv-pos is the next term's start, past rcv-hwm.
    assert h.scan() == 2 * T
    assert h.term_bytes(pad_position, pad_position + 32) == stream.expected_bytes(
        pad_position, pad_position + 32
    )
    for x in d[2:]:
        h.insert(x)
    assert h.scan() == d[-1].end == stream.position
    assert h.term_bytes(2 * T, d[-1].end) == stream.expected_bytes(2 * T, d[-1].end)
    assert h.endpoint.naks == []


def test_loss_before_the_padding_is_naked_to_the_end_of_the_term(make_image) -> None:
    stream = pad_stream()
    join_offset = T - 2 * 1056 - 512
    h = make_image(active_term_id=INITIAL_TERM_ID + 1, term_offset=join_offset)
    f = stream.frames()
    d = stream.datagrams()
    h.insert(d[0])
    h.insert(d[2])  # the next term's first frame: the hwm moves to the next term
    assert h.hwm.get() == d[2].end
    assert h.scan() == f[1].position
    # The limit of the scan is the term end (the hwm is in a later term): frame 2 + the padding.
    assert h.endpoint.take_naks() == [(INITIAL_TERM_ID + 1, join_offset + 1056, 1056 + 512)]
    h.insert(d[1])
    assert h.rebuild_fully() == d[2].end


def test_a_padding_frame_alone_bounds_the_gap_before_it(make_image) -> None:
    stream = pad_stream()
    join_offset = T - 2 * 1056 - 512
    h = make_image(active_term_id=INITIAL_TERM_ID + 1, term_offset=join_offset)
    f = stream.frames()
    h.insert(stream.frame_datagram(f[2], f[2]))  # the PAD header only
    assert h.hwm.get() == f[2].position + 32
    h.insert(stream.frame_datagram(f[0], f[0]))
    assert h.scan() == f[1].position
    assert h.endpoint.take_naks() == [(INITIAL_TERM_ID + 1, join_offset + 1056, 1056)]
    h.insert(stream.frame_datagram(f[1], f[1]))
    assert h.scan() == 2 * T


# --- heartbeats and end of stream -----------------------------------------------------------------------------


def test_heartbeats_move_the_hwm_only_forward_and_write_nothing(make_image) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image()
    d = stream.datagrams()
    assert h.heartbeat(stream, 0) == 32
    assert (h.hwm.get(), h.scan()) == (0, 0)
    h.insert(d[0])
    # The sender is ahead (d[1], d[2] lost): its heartbeat reveals the tail loss.
    h.heartbeat(stream, d[2].end)
    assert h.hwm.get() == d[2].end
    assert h.scan() == d[0].end
    assert h.endpoint.take_naks() == [nak(stream, d[1].position, d[2].end - d[1].position)]
    h.heartbeat(stream, d[1].position)  # behind the hwm: no change
    assert h.hwm.get() == d[2].end
    assert h.term_bytes(d[1].position, d[2].end) == bytes(d[2].end - d[1].position)
    assert h.counters[SC.HEARTBEATS_RECEIVED] == 3


def test_end_of_stream_heartbeat(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES[:4])
    h = make_image()
    d = stream.datagrams()
    for x in d[:-1]:
        h.insert(x)
    end = stream.position
    h.heartbeat(stream, end, eos=True)
    assert h.image.is_end_of_stream
    assert lbd.end_of_stream_position(h.raw_log.meta_data) == end
    assert h.hwm.get() == end
    h.scan()
    # EOS seen but rcv-pos < rcv-hwm: still active until the last datagram is rebuilt.
    assert h.image.has_activity_and_not_end_of_stream(clock.nano_clock())
    h.insert(d[-1])
    assert h.scan() == end
    assert not h.image.has_activity_and_not_end_of_stream(clock.nano_clock())
    h.heartbeat(stream, end + 0, eos=True)  # a repeat changes nothing
    assert lbd.end_of_stream_position(h.raw_log.meta_data) == end


def test_end_of_stream_needs_every_connection(make_image) -> None:
    stream = Stream().offer_all(SIZES)
    h = make_image()
    d = stream.datagrams()
    h.insert(d[0], transport_index=0)
    h.insert(d[0], transport_index=1, source=OTHER_SOURCE)  # e.g. a second MDS destination
    assert sorted(h.image.connections) == [0, 1]
    h.heartbeat(stream, d[0].end, eos=True, transport_index=0)
    assert not h.image.is_end_of_stream
    assert lbd.end_of_stream_position(h.raw_log.meta_data) == INT64_MAX
    h.heartbeat(stream, d[0].end, eos=False, transport_index=1)
    assert not h.image.is_end_of_stream
    h.heartbeat(stream, d[0].end, eos=True, transport_index=1)
    assert h.image.is_end_of_stream
    assert lbd.end_of_stream_position(h.raw_log.meta_data) == d[0].end

    # Status messages and NAKs go to every connection's control address.
    h.scan()
    h.image.send_pending_status_message()
    assert h.endpoint.sms[-1].addresses == [(0, SOURCE), (1, OTHER_SOURCE)]


def test_active_transport_count_follows_the_sources_heard_lately(make_image, clock) -> None:
    # The log's active transport count (later Aeron's field, in 1.15.1's padding): what a replay merge reads to
    # know that live feeds the image besides the replay.
    stream = Stream().offer_all(SIZES)
    h = make_image()
    conductor = FakeConductor()
    d = stream.datagrams()
    meta = h.raw_log.meta_data
    assert lbd.active_transport_count(meta) == 1
    h.insert(d[0], transport_index=0)
    h.insert(d[1], transport_index=1, source=OTHER_SOURCE)  # a second destination's first frame
    assert lbd.active_transport_count(meta) == 2
    clock.advance_ms(6_000)
    h.insert(d[2], transport_index=0)
    h.image.on_time_event(clock.nano_clock(), conductor)
    assert lbd.active_transport_count(meta) == 2  # within the image liveness timeout
    clock.advance_ms(5_000)
    h.image.on_batch_rebuilt(0, 1, 0, clock.nano_clock())
    h.image.on_time_event(clock.nano_clock(), conductor)
    assert lbd.active_transport_count(meta) == 1  # transport 1 silent for 11 s
    h.image.on_batch_rebuilt(1, 1, 0, clock.nano_clock())
    assert lbd.active_transport_count(meta) == 2  # heard again: counted at once


# --- flow control ----------------------------------------------------------------------------------------------


def test_flow_control_before_the_first_status_message(make_image) -> None:
    join = 4096
    h = make_image(term_offset=join)
    window = T // 2
    # Under-run: before the join position.
    h.insert_raw(INITIAL_TERM_ID, join - 64, data_frame(INITIAL_TERM_ID, join - 64, b"x" * 10))
    assert h.counters[SC.FLOW_CONTROL_UNDER_RUNS] == 1
    # Over-run: ends past join + window.
    offset = join + window - 32
    h.insert_raw(INITIAL_TERM_ID, offset, data_frame(INITIAL_TERM_ID, offset, b"y" * 10))
    assert h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 1
    assert h.hwm.get() == join
    assert h.term_bytes(0, T) == bytes(T)
    # Ending exactly at the window limit is fine.
    offset = join + window - 64
    h.insert_raw(INITIAL_TERM_ID, offset, data_frame(INITIAL_TERM_ID, offset, b"z" * 10))
    assert h.hwm.get() == join + window
    assert h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 1
    # A heartbeat counts with length 0: at the limit it is accepted, past it an over-run.
    hb = frames.encode_heartbeat(SESSION_ID, STREAM_ID, INITIAL_TERM_ID, join + window, False)
    h.insert_raw(INITIAL_TERM_ID, join + window, hb)
    assert h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 1
    hb = frames.encode_heartbeat(SESSION_ID, STREAM_ID, INITIAL_TERM_ID, join + window + 32, False)
    h.insert_raw(INITIAL_TERM_ID, join + window + 32, hb)
    assert h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 2
    assert h.hwm.get() == join + window


def test_flow_control_after_a_status_message(make_image) -> None:
    h = make_image(term_length=4 * T)  # window 128 KiB
    window = INITIAL_WINDOW
    position = 40 * 1024
    h.subscriber_positions[0].set(position)
    h.scan()
    assert h.image.send_pending_status_message() == 1
    assert h.endpoint.sms[-1].term_offset == position
    under = position - 32
    h.insert_raw(INITIAL_TERM_ID, under, data_frame(INITIAL_TERM_ID, under, b""))
    assert h.counters[SC.FLOW_CONTROL_UNDER_RUNS] == 1
    hb = frames.encode_heartbeat(SESSION_ID, STREAM_ID, INITIAL_TERM_ID, under, False)
    h.insert_raw(INITIAL_TERM_ID, under, hb)
    assert h.counters[SC.FLOW_CONTROL_UNDER_RUNS] == 2
    h.insert_raw(INITIAL_TERM_ID, position, data_frame(INITIAL_TERM_ID, position, b""))
    assert h.hwm.get() == position + 32
    last = position + window - 32
    h.insert_raw(INITIAL_TERM_ID, last, data_frame(INITIAL_TERM_ID, last, b""))
    assert h.hwm.get() == position + window
    h.insert_raw(INITIAL_TERM_ID, last + 32, data_frame(INITIAL_TERM_ID, last + 32, b""))
    assert h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 1
    assert h.hwm.get() == position + window
    assert h.counters[SC.HEARTBEATS_RECEIVED] == 0


def test_term_ids_far_outside_the_window_are_flow_control_drops(make_image) -> None:
    h = make_image(initial_term_id=-(2**31), active_term_id=-(2**31) + 5)
    join = h.join_position
    for term_id in (-(2**31) + 4, -(2**31) + 7, 2**31 - 1, 0):
        h.insert_raw(term_id, 0, data_frame(term_id, 0, b"q"))
    assert h.counters[SC.FLOW_CONTROL_UNDER_RUNS] + h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 4
    assert h.hwm.get() == join
    assert all(term.get_bytes(0, T) == bytes(T) for term in h.terms)


# --- status messages -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("term_length", "window"), [(T, T // 2), (4 * T, 128 * 1024), (16 * T, 128 * 1024)])
def test_status_message_window_is_min_of_half_a_term_and_the_initial_window(
    make_image, term_length: int, window: int
) -> None:
    h = make_image(term_length=term_length, active_term_id=INITIAL_TERM_ID + 2, term_offset=4096)
    h.scan()
    assert h.image.send_pending_status_message() == 1
    assert h.endpoint.sms == [
        SentSm([(0, SOURCE)], SESSION_ID, STREAM_ID, INITIAL_TERM_ID + 2, 4096, window, 0)
    ]
    assert h.counters[SC.STATUS_MESSAGES_SENT] == 1
    assert h.image.send_pending_status_message() == 0


def test_status_messages_every_200_ms(make_image, clock) -> None:
    h = make_image()
    h.scan()
    assert h.image.send_pending_status_message() == 1
    clock.advance_ms(200)
    h.scan()
    assert h.image.send_pending_status_message() == 0
    clock.nanos += 1
    h.scan()
    assert h.image.send_pending_status_message() == 1
    clock.advance_ms(100)
    h.scan()
    assert h.image.send_pending_status_message() == 0
    assert len(h.endpoint.sms) == 2


def test_status_message_when_the_slowest_subscriber_moves_a_quarter_window(make_image, clock) -> None:
    h = make_image(subscribers=2)
    window = T // 2
    h.scan()
    h.image.send_pending_status_message()
    fast, slow = h.subscriber_positions
    fast.set(window)  # the fastest alone does not count: the SM carries the minimum
    h.scan()
    assert h.image.send_pending_status_message() == 0
    slow.set(window // 4)
    h.scan()
    assert h.image.send_pending_status_message() == 0  # not more than a quarter window yet
    slow.set(window // 4 + 32)
    h.scan()
    assert h.image.send_pending_status_message() == 1
    assert (h.endpoint.sms[-1].term_offset, h.endpoint.sms[-1].window) == (window // 4 + 32, window)
    clock.advance_ms(201)  # on the timeout it carries the minimum too
    h.scan()
    h.image.send_pending_status_message()
    assert h.endpoint.sms[-1].term_offset == window // 4 + 32


def test_status_messages_wait_for_activation(make_image) -> None:
    h = make_image(activate=False)
    h.scan()
    assert h.image.send_pending_status_message() == 0
    h.image.activate()
    assert h.image.send_pending_status_message() == 1
    assert len(h.endpoint.sms) == 1


def test_status_message_across_a_term_boundary(make_image) -> None:
    h = make_image(initial_term_id=2**31 - 1)  # term ids wrap
    h.subscriber_positions[0].set(T)
    h.scan()
    h.image.send_pending_status_message()
    sm = h.endpoint.sms[-1]
    assert (sm.term_id, sm.term_offset) == (-(2**31), 0)


# --- cleaning --------------------------------------------------------------------------------------------------


def test_cleaning_behind_the_slowest_subscriber(make_image, clock) -> None:
    h = make_image()
    for term in h.terms:
        term.put_bytes(0, b"\xff" * T)
    position = h.subscriber_positions[0]
    position.set(T + 4096)
    h.scan()  # first SM: cleans up to min(sub-pos) - term length
    assert h.terms[0].get_bytes(0, 4096) == bytes(4096)
    assert h.terms[0].get_bytes(4096, 32) == b"\xff" * 32
    position.set(3 * T)
    h.scan()  # at most to the end of the dirty term
    assert h.terms[0].get_bytes(0, T) == bytes(T)
    assert h.terms[1].get_bytes(0, T) == b"\xff" * T
    clock.advance_ms(201)
    h.scan()
    assert h.terms[1].get_bytes(0, T) == bytes(T)
    assert h.terms[2].get_bytes(0, T) == b"\xff" * T
    clock.advance_ms(201)
    h.scan()  # caught up with sub-pos - T: nothing more
    assert h.terms[2].get_bytes(0, T) == b"\xff" * T


# --- lifecycle -------------------------------------------------------------------------------------------------


def test_liveness_inactive_linger_done(make_image, clock) -> None:
    stream = Stream().offer_all(SIZES[:3])
    h = make_image()
    conductor = FakeConductor()
    d = stream.datagrams()
    h.insert(d[0])
    h.scan()
    clock.advance_ms(10_000)
    assert h.image.has_activity_and_not_end_of_stream(clock.nano_clock())
    clock.nanos += 1
    assert not h.image.has_activity_and_not_end_of_stream(clock.nano_clock())
    h.image.if_active_go_inactive(clock.nano_clock())
    assert h.image.state is State.INACTIVE
    assert not h.image.is_accepting_subscriptions()
    h.image.on_time_event(clock.nano_clock(), conductor)
    assert h.image.state is State.INACTIVE  # the subscriber has not drained to rcv-pos
    assert not h.image.is_tracking_rebuild
    h.subscriber_positions[0].set(d[0].end)
    h.image.on_time_event(clock.nano_clock(), conductor)
    assert h.image.state is State.LINGER
    assert conductor.lingering == [h.image]
    clock.advance_ms(10_000)
    h.image.on_time_event(clock.nano_clock(), conductor)
    assert h.image.state is State.LINGER
    clock.nanos += 1
    h.image.on_time_event(clock.nano_clock(), conductor)
    assert h.image.has_reached_end_of_life


# --- datagrams the rebuild rejects ------------------------------------------------------------------------------


def rejected_datagram(kind: str) -> tuple[int, Datagram]:
    """(join term offset, datagram) the native rebuild refuses: a second frame of another session, or a frame
    that runs past the end of the term (both pass the receiver's first-frame validation)."""
    if kind == "malformed":
        stream = Stream().offer_all([100] * 8)
        d = stream.datagrams()[0]
        data = bytearray(d.data)
        second = frames.DATA_HEADER.unpack_from(data, 160)
        assert second[4] == 160
        frames.DATA_HEADER.pack_into(data, 160, *second[:5], SESSION_ID + 1, *second[6:])
        return 0, Datagram(d.position, d.term_id, d.term_offset, bytes(data))
    offset = T - 32
    return T - 4096, Datagram(offset, INITIAL_TERM_ID, offset, data_frame(INITIAL_TERM_ID, offset, b"a" * 40))


@pytest.mark.parametrize("kind", ["malformed", "out-of-term"])
def test_a_datagram_the_rebuild_rejects_is_invalid_and_moves_nothing(make_image, clock, kind: str) -> None:
    join_offset, datagram = rejected_datagram(kind)
    h = make_image(term_offset=join_offset)
    clock.advance_ms(5)
    assert h.insert(datagram) == len(datagram.data)
    assert all(term.get_bytes(0, T) == bytes(T) for term in h.terms)
    assert h.counters[SC.INVALID_PACKETS] == 1
    assert h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 0
    assert h.hwm.get() == join_offset
    assert h.image.last_packet_timestamp_ns == clock.nano_clock() - 5 * MS  # no liveness from garbage


# --- property: any order, any duplication ------------------------------------------------------------------------


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    initial_term_id = draw(st.integers(-(2**31), 2**31 - 1))
    term_count = draw(st.integers(0, 3))
    slots = T // 32
    join_offset = (
        draw(st.integers(0, slots - 1) | st.integers(slots - 150, slots - 1)) * 32
    )  # near the end too
    mtu = draw(st.sampled_from([128, 1408, 4096]))
    sizes = draw(st.lists(st.integers(0, 3000), min_size=3, max_size=40))
    return dict(
        initial_term_id=initial_term_id,
        active_term_id=to_int32(initial_term_id + term_count),
        join_offset=join_offset,
        mtu=mtu,
        sizes=sizes,
        order_seed=draw(st.integers(0, 2**32 - 1)),
        duplicates=draw(st.integers(0, 10)),
        heartbeats=draw(st.integers(0, 3)),
    )


_examples = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_any_permutation_with_duplicates_rebuilds_the_stream(tmp_path: Path, clock, scenario) -> None:
    window = T // 2
    stream = Stream(
        initial_term_id=scenario["initial_term_id"],
        term_id=scenario["active_term_id"],
        term_offset=scenario["join_offset"],
        mtu=scenario["mtu"],
    ).offer_all(scenario["sizes"])
    join = stream.join_position
    datagrams = [d for d in stream.datagrams() if d.end <= join + window]
    if not datagrams:
        return
    frame_list = [f for f in stream.frames() if f.position < datagrams[-1].end]
    stream_end = frame_list[-1].end
    event("crosses a term" if (stream_end - 1) // T != join // T else "one term")
    event("has padding" if any(f.is_pad for f in frame_list) else "no padding")

    rng = random.Random(scenario["order_seed"])
    items: list[tuple[str, Any]] = [("data", d) for d in datagrams]
    items += [("data", rng.choice(datagrams)) for _ in range(scenario["duplicates"])]
    items += [("heartbeat", rng.choice(datagrams).end) for _ in range(scenario["heartbeats"])]
    rng.shuffle(items)

    h = Harness(
        tmp_path / f"prop-{next(_examples)}.logbuffer",
        clock,
        initial_term_id=scenario["initial_term_id"],
        active_term_id=scenario["active_term_id"],
        term_offset=scenario["join_offset"],
        loss_report=False,
    )
    try:
        received: set[int] = set()
        hwm = join
        for kind, item in items:
            if kind == "data":
                h.insert(item)
                received |= frames_in(stream, item)
                hwm = max(hwm, item.end)
            else:
                h.heartbeat(stream, item)
                hwm = max(hwm, item)
            assert h.hwm.get() == hwm
            expected_rebuild, gaps = gaps_of(stream, received, h.rebuild.get(), hwm)
            naks_due = {nak(stream, p, n) for p, n in gaps}
            assert h.scan() == expected_rebuild
            assert set(h.endpoint.take_naks()) <= naks_due
            clock.advance_ms(7)
        event("NAKs sent" if h.counters[SC.NAK_MESSAGES_SENT] else "no NAKs")
        assert h.rebuild_fully() == stream_end
        assert h.hwm.get() == datagrams[-1].end
        position = join
        while position < datagrams[-1].end:
            term_end = min(position - (position & (T - 1)) + T, datagrams[-1].end)
            assert h.term_bytes(position, term_end) == stream.expected_bytes(position, term_end)
            position = term_end
        assert h.counters[SC.FLOW_CONTROL_UNDER_RUNS] == h.counters[SC.FLOW_CONTROL_OVER_RUNS] == 0
    finally:
        h.close()
