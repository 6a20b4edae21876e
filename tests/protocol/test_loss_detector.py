"""LossDetector (docs/logbuffer.md section 7, wire.md section 7.5): rebuild position exactly as Aeron moves it;
new gaps NAKed at once (unicast) or after a random delay (multicast), again every 60 ms while they persist,
never once filled; and beyond Aeron, every gap of the scan window NAKed in the same scan."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import term_rebuilder
from driver.protocol import frames as f
from driver.protocol.loss_detector import LossDetector, OptimalMulticastDelayGenerator, StaticDelayGenerator
from driver.util.bit_util import align

T = 64 * 1024
MASK = T - 1
BITS = 16
INITIAL_TERM_ID = 1000
MS = 1_000_000
SESSION, STREAM = 5, 6


class Naks:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, int]] = []

    def __call__(self, term_id: int, term_offset: int, length: int) -> None:
        self.sent.append((term_id, term_offset, length))

    def take(self) -> list[tuple[int, int, int]]:
        sent, self.sent = self.sent, []
        return sent


@pytest.fixture
def term() -> Iterator[AtomicBuffer]:
    buffer = AtomicBuffer(bytearray(T))
    yield buffer
    buffer.close()


def frame(term_id: int, term_offset: int, payload: int = 32, frame_type: int = f.HDR_TYPE_DATA) -> bytes:
    header = f.DATA_HEADER.pack(payload + 32, 0, 0xC0, frame_type, term_offset, SESSION, STREAM, term_id, 0)
    body = bytes([1]) * payload if frame_type == f.HDR_TYPE_DATA else b""
    packet = header + body
    return packet + bytes(align(len(packet), 32) - len(packet))


def insert(term: AtomicBuffer, term_offset: int, payload: int = 32, term_id: int = INITIAL_TERM_ID) -> int:
    """Insert one 64-byte (by default) frame; returns the position after it (the hwm it implies)."""
    packet = frame(term_id, term_offset, payload)
    assert term_rebuilder.insert(term, term_offset, packet, len(packet)) == 1
    return ((term_id - INITIAL_TERM_ID) << BITS) + term_offset + len(packet)


def unicast(naks: Naks) -> LossDetector:
    return LossDetector(StaticDelayGenerator(60 * MS, immediate_first=True), naks)


def scan(detector: LossDetector, term: AtomicBuffer, rebuild: int, hwm: int, now_ns: int) -> tuple[int, int]:
    return detector.scan(term, rebuild, hwm, now_ns, MASK, BITS, INITIAL_TERM_ID)


def test_in_order_data_moves_the_rebuild_position_to_the_hwm(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    hwm = insert(term, 0)
    hwm = insert(term, 64)
    assert scan(detector, term, 0, hwm, 0) == (0, 128)
    assert scan(detector, term, 128, hwm, 0) == (0, 128)  # nothing new
    assert naks.take() == []


def test_out_of_order_gap_is_naked_at_once_then_every_60_ms_and_never_once_filled(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    insert(term, 0)
    hwm = insert(term, 192)  # [64, 192) missing
    assert scan(detector, term, 0, hwm, 0) == (2, 64)
    assert naks.take() == [(INITIAL_TERM_ID, 64, 128)]
    assert scan(detector, term, 64, hwm, 59 * MS) == (0, 64)
    assert naks.take() == []
    assert scan(detector, term, 64, hwm, 60 * MS)[1] == 64
    assert naks.take() == [(INITIAL_TERM_ID, 64, 128)]
    assert scan(detector, term, 64, hwm, 120 * MS)[1] == 64
    assert naks.take() == [(INITIAL_TERM_ID, 64, 128)]
    insert(term, 64)
    insert(term, 128)
    assert scan(detector, term, 64, hwm, 180 * MS) == (0, 256)
    assert scan(detector, term, 256, hwm, 240 * MS) == (0, 256)
    assert naks.take() == []
    assert detector.active_gaps == []


def test_duplicates_change_nothing(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    insert(term, 0)
    packet = frame(INITIAL_TERM_ID, 0)
    assert term_rebuilder.insert(term, 0, packet, len(packet)) == 0
    assert scan(detector, term, 0, 64, 0) == (0, 64)


def test_every_gap_in_the_window_is_naked_in_one_scan(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    insert(term, 0)
    insert(term, 128)
    insert(term, 512)
    hwm = insert(term, 1024)
    work, rebuild = scan(detector, term, 0, hwm, 0)
    assert rebuild == 64
    assert work == 6  # 3 new gaps, 3 NAKs
    assert naks.take() == [
        (INITIAL_TERM_ID, 64, 64),
        (INITIAL_TERM_ID, 192, 320),
        (INITIAL_TERM_ID, 576, 448),
    ]
    # the middle one is repaired; the others are NAKed again 60 ms later, the middle one never
    for offset in range(192, 512, 64):
        insert(term, offset)
    scan(detector, term, 64, hwm, 30 * MS)
    assert naks.take() == []
    scan(detector, term, 64, hwm, 60 * MS)
    assert naks.take() == [(INITIAL_TERM_ID, 64, 64), (INITIAL_TERM_ID, 576, 448)]


def test_max_gaps_bounds_the_gaps_tracked(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = LossDetector(StaticDelayGenerator(60 * MS), naks, max_gaps=2)
    for offset in range(0, 640, 128):
        hwm = insert(term, offset)
    scan(detector, term, 0, hwm, 0)
    assert naks.take() == [(INITIAL_TERM_ID, 64, 64), (INITIAL_TERM_ID, 192, 64)]


def test_remainder_of_a_partly_repaired_gap_keeps_the_old_deadline(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    insert(term, 0)
    hwm = insert(term, 320)  # gap [64, 320)
    scan(detector, term, 0, hwm, 0)
    assert naks.take() == [(INITIAL_TERM_ID, 64, 256)]
    insert(term, 64)  # the repair is arriving
    assert scan(detector, term, 64, hwm, 1 * MS) == (0, 128)
    assert naks.take() == []  # no NAK of the remainder while the repair is in flight
    insert(term, 192)  # a repair datagram in the middle splits the remainder in two
    scan(detector, term, 128, hwm, 2 * MS)
    assert naks.take() == []
    scan(detector, term, 128, hwm, 60 * MS)  # still missing after the NAK delay: both parts NAKed
    assert naks.take() == [(INITIAL_TERM_ID, 128, 64), (INITIAL_TERM_ID, 256, 64)]


def test_gap_growing_at_the_same_offset_keeps_its_deadline_and_reports_the_new_length(
    term: AtomicBuffer,
) -> None:
    naks = Naks()
    detector = unicast(naks)
    insert(term, 0)
    scan(detector, term, 0, 256, 0)  # hwm says data up to 256, only [0, 64) here
    assert naks.take() == [(INITIAL_TERM_ID, 64, 192)]
    scan(detector, term, 64, 512, 10 * MS)
    assert naks.take() == []
    scan(detector, term, 64, 512, 60 * MS)
    assert naks.take() == [(INITIAL_TERM_ID, 64, 448)]


def test_padding_and_heartbeats(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    insert(term, 0)
    pad = f.DATA_HEADER.pack(T - 64, 0, 0xC0, f.HDR_TYPE_PAD, 64, SESSION, STREAM, INITIAL_TERM_ID, 0)
    # a heartbeat says the sender is at 64 of the next term: the rest of this term is a gap until the pad arrives
    hb = f.encode_heartbeat(SESSION, STREAM, INITIAL_TERM_ID + 1, 64, eos=False)
    assert term_rebuilder.insert(term, 64, hb, len(hb)) == 0
    hwm = T + 64
    assert scan(detector, term, 0, hwm, 0) == (2, 64)
    assert naks.take() == [(INITIAL_TERM_ID, 64, T - 64)]
    assert term_rebuilder.insert(term, 64, pad, len(pad)) == 1
    assert scan(detector, term, 64, hwm, 1 * MS) == (0, T)  # the pad ends the term: rebuild at the next


def test_rebuild_position_in_a_later_term_and_the_term_id_reported() -> None:
    naks = Naks()
    detector = unicast(naks)
    term = AtomicBuffer(bytearray(T))
    term_id = INITIAL_TERM_ID + 4
    base = 4 << BITS
    insert(term, 0, term_id=term_id)
    hwm = insert(term, 128, term_id=term_id)
    assert scan(detector, term, base, hwm, 0) == (2, base + 64)
    assert naks.take() == [(term_id, 64, 64)]
    term.close()


def test_rebuild_at_or_past_hwm_is_left_alone(term: AtomicBuffer) -> None:
    naks = Naks()
    detector = unicast(naks)
    assert scan(detector, term, 640, 640, 0) == (0, 640)
    assert scan(detector, term, 640, 320, 0) == (0, 640)


def test_multicast_waits_a_random_delay_below_the_max_backoff(term: AtomicBuffer) -> None:
    naks = Naks()
    generator = OptimalMulticastDelayGenerator(60 * MS, 10, random.Random(7))
    detector = LossDetector(generator, naks)
    insert(term, 0)
    hwm = insert(term, 128)
    assert scan(detector, term, 0, hwm, 0) == (1, 64)
    assert naks.take() == []
    ((_, _, _, deadline),) = detector.active_gaps
    assert 0 <= deadline < 60 * MS
    scan(detector, term, 64, hwm, deadline - 1)
    assert naks.take() == []
    scan(detector, term, 64, hwm, deadline)
    assert naks.take() == [(INITIAL_TERM_ID, 64, 64)]


def test_delay_generators() -> None:
    static = StaticDelayGenerator(60 * MS)
    assert static.generate_delay() == 60 * MS and static.should_feedback_immediately()
    assert not StaticDelayGenerator(0, immediate_first=False).should_feedback_immediately()
    optimal = OptimalMulticastDelayGenerator(60 * MS, 10, random.Random(1))
    delays = [optimal.generate_delay() for _ in range(5000)]
    assert all(0 <= d < 60 * MS for d in delays)
    assert not optimal.should_feedback_immediately()
    # RFC 5401's density rises towards the max back-off: more delays in the upper half than the lower
    assert sum(d > 30 * MS for d in delays) > 2 * sum(d < 30 * MS for d in delays)
    assert OptimalMulticastDelayGenerator(60 * MS, 10, random.Random(1)).generate_delay() == delays[0]


@settings(max_examples=100, deadline=None)
@given(
    count=st.integers(1, 60),
    lost=st.sets(st.integers(0, 59)),
    seed=st.integers(0, 2**32 - 1),
)
def test_nak_repair_loop_always_completes(count: int, lost: set[int], seed: int) -> None:
    """Simulated link: frames arrive in random order with some lost; each NAK repairs what it names. The
    rebuild position ends at the end of the stream, and only gaps that were really missing are NAKed."""
    rng = random.Random(seed)
    term = AtomicBuffer(bytearray(T))
    naks = Naks()
    detector = LossDetector(StaticDelayGenerator(60 * MS), naks)
    offsets = [i * 64 for i in range(count)]
    order = offsets[:]
    rng.shuffle(order)
    hwm = 0
    missing = set()
    for offset in order:
        if offset // 64 in lost and offset != offsets[-1]:
            missing.add(offset)
            continue
        hwm = max(hwm, insert(term, offset))
    rebuild = 0
    now = 0
    for _ in range(20):
        _, rebuild = scan(detector, term, rebuild, hwm, now)
        for _term_id, gap_offset, length in naks.take():
            for offset in range(gap_offset, gap_offset + length, 64):
                assert offset in missing
                missing.discard(offset)
                insert(term, offset)
        now += 60 * MS
    assert rebuild == hwm == count * 64
    assert not missing
    term.close()
