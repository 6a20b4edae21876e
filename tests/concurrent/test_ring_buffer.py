"""ManyToOneRingBuffer against docs/ringbuffers.md section 1: exact bytes, a model, and real processes."""

from __future__ import annotations

import array
import mmap
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.ring_buffer import (
    ALIGNMENT,
    CONSUMER_HEARTBEAT_OFFSET,
    CORRELATION_COUNTER_OFFSET,
    HEAD_CACHE_POSITION_OFFSET,
    HEAD_POSITION_OFFSET,
    HEADER_LENGTH,
    PADDING_MSG_TYPE_ID,
    TAIL_POSITION_OFFSET,
    TRAILER_LENGTH,
    ManyToOneRingBuffer,
)
from driver.util.bit_util import align

CAPACITY = 1024
REPO_ROOT = Path(__file__).resolve().parents[2]

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


def i32_at(raw: bytearray, index: int) -> int:
    return _I32.unpack_from(raw, index)[0]


def i64_at(raw: bytearray, index: int) -> int:
    return _I64.unpack_from(raw, index)[0]


def make_ring(capacity: int = CAPACITY) -> tuple[bytearray, AtomicBuffer, ManyToOneRingBuffer]:
    raw = bytearray(capacity + TRAILER_LENGTH)
    buffer = AtomicBuffer(raw)
    return raw, buffer, ManyToOneRingBuffer(buffer)


def body_for(seq: int, length: int) -> bytes:
    """A body that differs per message, so reordering or mixing would show."""
    return (seq.to_bytes(4, "little") * (length // 4 + 1))[:length]


class Collector:
    def __init__(self) -> None:
        self.messages: list[tuple[int, bytes]] = []

    def __call__(self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        self.messages.append((msg_type_id, buffer.get_bytes(index, length)))


def set_positions(raw: bytearray, position: int, capacity: int = CAPACITY) -> None:
    """Pretend ``position`` bytes have already been written and consumed."""
    for offset in (TAIL_POSITION_OFFSET, HEAD_CACHE_POSITION_OFFSET, HEAD_POSITION_OFFSET):
        _I64.pack_into(raw, capacity + offset, position)


# --- layout -------------------------------------------------------------------------------------------


def test_layout_constants_match_agrona() -> None:
    assert (HEADER_LENGTH, ALIGNMENT, PADDING_MSG_TYPE_ID) == (8, 8, -1)
    assert TAIL_POSITION_OFFSET == 128
    assert HEAD_CACHE_POSITION_OFFSET == 256
    assert HEAD_POSITION_OFFSET == 384
    assert CORRELATION_COUNTER_OFFSET == 512
    assert CONSUMER_HEARTBEAT_OFFSET == 640
    assert TRAILER_LENGTH == 768


def test_capacity_and_max_msg_length() -> None:
    _, _, ring = make_ring(1 << 20)
    assert ring.capacity == 1 << 20
    assert ring.max_msg_length == 131_072


@pytest.mark.parametrize("length", [1000 + TRAILER_LENGTH, TRAILER_LENGTH, 2048])
def test_rejects_capacity_that_is_not_a_power_of_two(length: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        ManyToOneRingBuffer(AtomicBuffer(bytearray(length)))


def test_write_lays_out_header_body_and_tail() -> None:
    raw, _, ring = make_ring()
    assert ring.write(7, b"abc")
    assert i32_at(raw, 0) == 11  # header + body, not aligned
    assert i32_at(raw, 4) == 7
    assert raw[8:11] == b"abc"
    assert raw[11:16] == bytes(5)
    assert i64_at(raw, CAPACITY + 128) == 16  # tail moved by the aligned length
    assert i64_at(raw, CAPACITY + 256) == 0
    assert i64_at(raw, CAPACITY + 384) == 0

    assert ring.write(9, memoryview(b"0123456789abcdef"))
    assert i32_at(raw, 16) == 24
    assert i32_at(raw, 20) == 9
    assert raw[24:40] == b"0123456789abcdef"
    assert ring.producer_position() == 40
    assert ring.size() == 40


def test_write_of_empty_message_is_header_only() -> None:
    raw, _, ring = make_ring()
    assert ring.write(1, b"")
    assert (i32_at(raw, 0), i32_at(raw, 4)) == (8, 1)
    assert ring.producer_position() == 8


def test_write_pads_the_end_and_wraps_to_zero() -> None:
    raw, _, ring = make_ring()
    set_positions(raw, 1000)
    assert ring.write(3, b"x" * 20)  # needs 32, only 24 left before the end
    assert i32_at(raw, 1000) == 24
    assert i32_at(raw, 1004) == PADDING_MSG_TYPE_ID
    assert i32_at(raw, 0) == 28
    assert i32_at(raw, 4) == 3
    assert raw[8:28] == b"x" * 20
    assert i64_at(raw, CAPACITY + TAIL_POSITION_OFFSET) == 1000 + 24 + 32

    collector = Collector()
    assert ring.read(collector) == 0  # this pass ends at the buffer end, consuming only the padding
    assert ring.consumer_position() == 1024
    assert ring.read(collector) == 1
    assert collector.messages == [(3, b"x" * 20)]
    assert ring.consumer_position() == 1056


def test_write_that_fits_exactly_to_the_end_needs_no_padding() -> None:
    raw, _, ring = make_ring()
    set_positions(raw, 1000)
    assert ring.write(3, b"y" * 16)  # exactly 24
    assert i32_at(raw, 1000) == 24
    assert i32_at(raw, 1004) == 3
    assert ring.producer_position() == 1024


def test_write_takes_any_buffer_as_bytes() -> None:
    raw, _, ring = make_ring()
    assert ring.write(1, memoryview(array.array("i", [1, -1])))
    assert ring.write(2, bytearray(b"ba"))
    assert i32_at(raw, 0) == 16
    assert raw[8:16] == struct.pack("<ii", 1, -1)
    assert (i32_at(raw, 16), raw[24:26]) == (10, b"ba")


def test_write_rejects_bad_type_and_oversized_message() -> None:
    _, _, ring = make_ring()
    with pytest.raises(ValueError, match="greater than zero"):
        ring.write(0, b"a")
    with pytest.raises(ValueError, match="greater than zero"):
        ring.write(PADDING_MSG_TYPE_ID, b"a")
    with pytest.raises(ValueError, match="max_msg_length of 128"):
        ring.write(1, bytes(129))
    assert ring.write(1, bytes(128))
    assert ring.producer_position() == 136


def test_write_fails_when_full_without_moving_the_tail() -> None:
    _, _, ring = make_ring()
    written = 0
    while ring.write(1, bytes(120)):  # 128-byte records: exactly 8 fit
        written += 1
    assert written == 8
    assert ring.producer_position() == CAPACITY
    assert not ring.write(1, b"")
    assert ring.producer_position() == CAPACITY

    collector = Collector()
    assert ring.read(collector, 1) == 1
    assert ring.write(1, bytes(120))  # the space just released is reused
    assert not ring.write(1, b"")


def test_wrap_needs_room_at_the_start() -> None:
    raw, _, ring = make_ring()
    set_positions(raw, 1000)
    for offset in (HEAD_CACHE_POSITION_OFFSET, HEAD_POSITION_OFFSET):
        _I64.pack_into(raw, CAPACITY + offset, 16)
    # 40 bytes free in total, but only 24 before the end and 16 before the head: 32 fits nowhere.
    assert not ring.write(1, bytes(24))
    assert ring.producer_position() == 1000
    assert raw[1000:1008] == bytes(8)  # no padding written for a failed claim

    _I64.pack_into(raw, CAPACITY + HEAD_POSITION_OFFSET, 64)
    assert ring.write(1, bytes(24))  # now 64 bytes before the head
    assert (i32_at(raw, 1000), i32_at(raw, 1004)) == (24, PADDING_MSG_TYPE_ID)
    assert (i32_at(raw, 0), i32_at(raw, 4)) == (32, 1)
    assert ring.producer_position() == 1000 + 24 + 32
    assert i64_at(raw, CAPACITY + HEAD_CACHE_POSITION_OFFSET) == 64


def test_head_cache_is_refreshed_when_space_looks_short() -> None:
    raw, _, ring = make_ring()
    for _ in range(8):
        assert ring.write(1, bytes(120))
    ring.read(Collector(), 2)
    assert i64_at(raw, CAPACITY + HEAD_CACHE_POSITION_OFFSET) == 0
    assert ring.write(1, bytes(120))  # looks full from the cached head: re-read the real one, cache it
    assert i64_at(raw, CAPACITY + HEAD_CACHE_POSITION_OFFSET) == 256


def test_read_delivers_in_order_zeroes_and_advances_head() -> None:
    raw, _, ring = make_ring()
    for seq in range(5):
        assert ring.write(seq + 1, body_for(seq, seq * 3))
    collector = Collector()
    assert ring.read(collector, 2) == 2
    assert collector.messages == [(1, b""), (2, body_for(1, 3))]
    assert ring.consumer_position() == 8 + 16
    assert raw[:24] == bytes(24)
    assert ring.read(collector) == 3
    assert [m[0] for m in collector.messages] == [1, 2, 3, 4, 5]
    assert raw[:CAPACITY] == bytes(CAPACITY)
    assert ring.consumer_position() == ring.producer_position()
    assert ring.size() == 0
    assert ring.read(collector) == 0


def test_read_passes_the_ring_buffer_and_body_index() -> None:
    _, buffer, ring = make_ring()
    ring.write(4, b"hello")
    seen: list[tuple[int, AtomicBuffer, int, int]] = []
    ring.read(lambda t, b, i, n: seen.append((t, b, i, n)))
    assert seen == [(4, buffer, 8, 5)]


def test_read_stops_at_an_uncommitted_record() -> None:
    raw, _, ring = make_ring()
    ring.write(1, b"a")
    ring.write(2, b"b")
    _I32.pack_into(raw, 16, -9)  # second record back in the "claimed, not committed" state
    collector = Collector()
    assert ring.read(collector) == 1
    assert ring.consumer_position() == 16
    _I32.pack_into(raw, 16, 9)
    assert ring.read(collector) == 1
    assert collector.messages == [(1, b"a"), (2, b"b")]


def test_a_raising_handler_still_consumes_what_it_was_given() -> None:
    raw, _, ring = make_ring()
    for seq in range(3):
        ring.write(1, body_for(seq, 8))

    calls: list[int] = []

    def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        calls.append(index)
        if len(calls) == 2:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        ring.read(handler)
    assert calls == [8, 24]
    assert ring.consumer_position() == 32
    assert raw[:32] == bytes(32)
    collector = Collector()
    assert ring.read(collector) == 1
    assert collector.messages == [(1, body_for(2, 8))]


def test_correlation_ids_start_at_zero_and_are_stored_in_the_trailer() -> None:
    raw, _, ring = make_ring()
    assert [ring.next_correlation_id() for _ in range(3)] == [0, 1, 2]
    assert i64_at(raw, CAPACITY + 512) == 3


def test_consumer_heartbeat_is_at_capacity_plus_640() -> None:
    raw, _, ring = make_ring()
    assert ring.consumer_heartbeat_time() == 0
    ring.set_consumer_heartbeat_time(1_700_000_000_123)
    assert i64_at(raw, CAPACITY + 640) == 1_700_000_000_123
    assert ring.consumer_heartbeat_time() == 1_700_000_000_123


# --- corrupt records (docs/ringbuffers.md section 1.1) -------------------------------------------------


def claim_raw(raw: bytearray, ring: ManyToOneRingBuffer, claim_length: int) -> int:
    """A careless producer's claim: the tail moved by ``claim_length`` (any value); returns the index."""
    position = ring.producer_position()
    _I64.pack_into(raw, ring.capacity + TAIL_POSITION_OFFSET, position + claim_length)
    return position & (ring.capacity - 1)


class Corrupt:
    def __init__(self) -> None:
        self.records: list[tuple[int, int, str]] = []

    def __call__(self, index: int, skipped: int, reason: str) -> None:
        self.records.append((index, skipped, reason))


@pytest.mark.parametrize(
    ("lying_length", "why"),
    [
        (3, "below the 8-byte record header"),
        (0x7FFFFFF8, "past the end of the"),
        (2 * 1024 * 1024, "past the end of the"),
        (200, "past the producers' claimed space"),
        (-0x7FFFFFF8, "uncommitted length"),
        (-3, "uncommitted length"),
    ],
)
def test_a_record_whose_length_lies_is_skipped_and_reported(lying_length: int, why: str) -> None:
    raw, _, ring = make_ring()
    ring.write(1, b"before")
    index = claim_raw(raw, ring, 40)
    _I32.pack_into(raw, index, lying_length)
    _I32.pack_into(raw, index + 4, 1)
    raw[index + 8 : index + 40] = bytes(range(1, 33))  # a body that is no record header either
    ring.write(2, b"after")
    collector, corrupt = Collector(), Corrupt()
    assert ring.read(collector, corrupt_handler=corrupt) == 2
    assert collector.messages == [(1, b"before"), (2, b"after")]
    assert [(i, n) for i, n, _ in corrupt.records] == [(index, 40)]
    assert why in corrupt.records[0][2]
    if lying_length > 0:
        assert f"(length {lying_length}, type id 1)" in corrupt.records[0][2]  # the type its producer wrote
    assert ring.size() == 0 and raw[:CAPACITY] == bytes(CAPACITY)


@pytest.mark.parametrize("msg_type_id", [0, -2, -0x7FFFFFFF])
def test_a_record_with_a_bad_type_id_is_skipped(msg_type_id: int) -> None:
    raw, _, ring = make_ring()
    index = claim_raw(raw, ring, 16)
    _I32.pack_into(raw, index, 16)
    _I32.pack_into(raw, index + 4, msg_type_id)
    ring.write(2, b"after")
    collector, corrupt = Collector(), Corrupt()
    assert ring.read(collector, corrupt_handler=corrupt) == 1
    assert collector.messages == [(2, b"after")]
    assert len(corrupt.records) == 1 and "type id" in corrupt.records[0][2]


def test_an_unaligned_claim_is_realigned_and_later_producers_still_get_through() -> None:
    raw, _, ring = make_ring()
    index = claim_raw(raw, ring, 13)
    _I32.pack_into(raw, index, 13)
    _I32.pack_into(raw, index + 4, 1)
    collector, corrupt = Collector(), Corrupt()
    assert ring.read(collector, corrupt_handler=corrupt) == 0
    assert corrupt.records[0][:2] == (0, 8)  # the zero slot after it may be a claim: wait there
    assert ring.producer_position() == 16  # the reader claimed the 3-byte gap: aligned again
    ring.write(2, b"after")
    assert ring.read(collector, corrupt_handler=corrupt) == 0
    assert ring.unblock()  # as for a producer that died before writing: the zeros become padding
    assert ring.read(collector, corrupt_handler=corrupt) == 1
    assert collector.messages == [(2, b"after")]


def test_bytes_beyond_the_tail_are_never_consumed() -> None:
    raw, _, ring = make_ring()
    _I32.pack_into(raw, 0, 0x7FFFFFF8)  # written without any claim
    collector, corrupt = Collector(), Corrupt()
    assert ring.read(collector, corrupt_handler=corrupt) == 0
    assert ring.consumer_position() == 0 and corrupt.records == []
    assert ring.write(2, b"after")  # the producer's own header replaces the garbage
    assert ring.read(collector, corrupt_handler=corrupt) == 1
    assert collector.messages == [(2, b"after")]


def test_a_corrupt_record_never_swallows_a_record_still_being_written() -> None:
    raw, _, ring = make_ring()
    index = claim_raw(raw, ring, 24)
    _I32.pack_into(raw, index, 0x10000)
    raw[index + 4 : index + 24] = b"\xff" * 20
    in_flight = claim_without_commit(raw, ring, 5, negative=True)
    collector, corrupt = Collector(), Corrupt()
    assert ring.read(collector, corrupt_handler=corrupt) == 0
    assert corrupt.records[0][:2] == (index, 24)
    assert ring.consumer_position() == in_flight
    assert i32_at(raw, in_flight) == -13  # untouched: its producer commits it next
    _I32.pack_into(raw, in_flight + 4, 7)
    _I32.pack_into(raw, in_flight, 13)
    assert ring.read(collector, corrupt_handler=corrupt) == 1
    assert collector.messages == [(7, bytes(5))]


def test_unblock_leaves_an_implausible_negative_length_to_the_reader() -> None:
    raw, _, ring = make_ring()
    index = claim_raw(raw, ring, 16)
    _I32.pack_into(raw, index, -0x7FFFFFF8)
    raw[index + 4 : index + 16] = b"\x01" * 12
    assert not ring.unblock()
    corrupt = Corrupt()
    assert ring.read(Collector(), corrupt_handler=corrupt) == 0
    assert corrupt.records[0][:2] == (0, 16)
    assert ring.size() == 0


# --- unblock ------------------------------------------------------------------------------------------


def claim_without_commit(
    raw: bytearray, ring: ManyToOneRingBuffer, body_length: int, *, negative: bool
) -> int:
    """Do what a producer that dies after its CAS leaves behind; returns the record index."""
    index = ring.producer_position() & (ring.capacity - 1)
    record_length = HEADER_LENGTH + body_length
    _I64.pack_into(
        raw, ring.capacity + TAIL_POSITION_OFFSET, ring.producer_position() + align(record_length, 8)
    )
    if negative:
        _I32.pack_into(raw, index, -record_length)
    return index


def test_unblock_turns_a_claimed_never_committed_record_into_padding() -> None:
    raw, _, ring = make_ring()
    ring.write(1, b"before")
    index = claim_without_commit(raw, ring, 13, negative=True)
    ring.write(2, b"after")

    collector = Collector()
    assert ring.read(collector) == 1
    assert ring.read(collector) == 0  # stuck behind the dead producer's record
    assert ring.unblock()
    assert i32_at(raw, index) == 21
    assert i32_at(raw, index + 4) == PADDING_MSG_TYPE_ID
    assert ring.read(collector) == 1
    assert collector.messages == [(1, b"before"), (2, b"after")]
    assert ring.size() == 0


def test_unblock_pads_a_zeroed_gap_up_to_the_next_record() -> None:
    raw, _, ring = make_ring()
    index = claim_without_commit(raw, ring, 30, negative=False)  # 40 zero bytes
    ring.write(2, b"after")
    collector = Collector()
    assert ring.read(collector) == 0
    assert ring.unblock()
    assert (i32_at(raw, index), i32_at(raw, index + 4)) == (40, PADDING_MSG_TYPE_ID)
    assert ring.read(collector) == 1
    assert collector.messages == [(2, b"after")]


def test_unblock_does_nothing_when_there_is_nothing_to_fix() -> None:
    raw, _, ring = make_ring()
    assert not ring.unblock()  # empty
    ring.write(1, b"ok")
    assert not ring.unblock()  # committed record at head
    ring.read(Collector())
    claim_without_commit(raw, ring, 16, negative=False)
    assert not ring.unblock()  # a gap, but nothing after it yet: the producer may still be alive


# --- model-based property test ------------------------------------------------------------------------


class RingModel:
    """Positions and records as plain Python, free space worked out from contiguous regions."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.head = 0
        self.tail = 0
        # (position, aligned length, type id, body); body None for padding.
        self.records: deque[tuple[int, int, int, bytes | None]] = deque()

    def write(self, msg_type_id: int, body: bytes) -> bool:
        required = align(len(body) + HEADER_LENGTH, ALIGNMENT)
        used = self.tail - self.head
        head_index = self.head % self.capacity
        tail_index = self.tail % self.capacity
        if used == self.capacity:
            return False
        if used == 0 or tail_index > head_index:
            to_end = self.capacity - tail_index
            if required > to_end:
                if required > head_index:
                    return False
                self.records.append((self.tail, to_end, PADDING_MSG_TYPE_ID, None))
                self.tail += to_end
        elif required > head_index - tail_index:
            return False
        self.records.append((self.tail, required, msg_type_id, body))
        self.tail += required
        return True

    def read(self, limit: int) -> list[tuple[int, bytes]]:
        block_end = self.head + self.capacity - self.head % self.capacity
        delivered: list[tuple[int, bytes]] = []
        while self.records and len(delivered) < limit and self.records[0][0] < block_end:
            _, length, msg_type_id, body = self.records.popleft()
            self.head += length
            if body is not None:
                delivered.append((msg_type_id, body))
        return delivered

    def free_ranges(self) -> list[tuple[int, int]]:
        used = self.tail - self.head
        head_index = self.head % self.capacity
        tail_index = self.tail % self.capacity
        if used == self.capacity:
            return []
        if used == 0 or tail_index > head_index:
            return [(tail_index, self.capacity), (0, head_index)]
        return [(tail_index, head_index)]


# Bursts of writes with a bias to long bodies, so that runs fill the ring as well as wrap it.
body_length = st.one_of(st.integers(0, CAPACITY // 8), st.integers(100, CAPACITY // 8))
write_burst = st.tuples(st.just("write"), st.lists(body_length, min_size=1, max_size=12))
read_op = st.tuples(st.just("read"), st.integers(1, 12))


@settings(max_examples=300, deadline=None)
@given(
    start_position=st.integers(0, 2 * CAPACITY // ALIGNMENT - 1).map(lambda n: n * ALIGNMENT),
    ops=st.lists(st.one_of(write_burst, read_op), max_size=60),
)
def test_matches_model_for_random_writes_and_reads(
    start_position: int, ops: list[tuple[str, int] | tuple[str, list[int]]]
) -> None:
    raw, _, ring = make_ring()
    set_positions(raw, start_position)
    model = RingModel(CAPACITY)
    model.head = model.tail = start_position
    written: list[tuple[int, bytes]] = []
    received: list[tuple[int, bytes]] = []
    seq = 0

    def check_invariants() -> None:
        assert ring.producer_position() == model.tail
        assert ring.consumer_position() == model.head
        assert 0 <= ring.size() == model.tail - model.head <= CAPACITY
        for start, end in model.free_ranges():  # producers rely on free space reading as zero
            assert raw[start:end] == bytes(end - start)

    for _op, arg in ops:
        if isinstance(arg, list):
            for length in arg:
                seq += 1
                body = body_for(seq, length)
                records_before = len(model.records)
                ok = ring.write(seq, body)
                assert ok == model.write(seq, body)
                if ok:
                    written.append((seq, body))
                    if len(model.records) - records_before == 2:
                        event("write wrapped with padding")
                else:
                    event("write found the ring full")
                check_invariants()
        else:
            collector = Collector()
            assert ring.read(collector, arg) == len(collector.messages)
            assert collector.messages == model.read(arg)
            received.extend(collector.messages)
            check_invariants()

    for _ in range(3):  # a drain takes at most two passes: up to the end, then from index 0
        collector = Collector()
        ring.read(collector)
        assert collector.messages == model.read(2**31 - 1)
        received.extend(collector.messages)
    check_invariants()
    assert ring.size() == 0
    assert received == written


# --- many producer processes --------------------------------------------------------------------------

PRODUCERS = 4
RECORDS_PER_PRODUCER = 100_000
MP_CAPACITY = 1 << 20
MP_TIMEOUT_S = 60.0
# Control words after the ring in the same file: how many producers are ready, and the start flag.
READY_OFFSET = MP_CAPACITY + TRAILER_LENGTH
GO_OFFSET = READY_OFFSET + 8
MP_FILE_LENGTH = GO_OFFSET + 8

PRODUCER_SCRIPT = """
import mmap, struct, sys, time
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.ring_buffer import ManyToOneRingBuffer

path, producer_id, count, ring_length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ready_offset, go_offset = ring_length, ring_length + 8
with open(path, "r+b") as f:
    mapping = mmap.mmap(f.fileno(), 0)
control = AtomicBuffer(mapping)
ring = ManyToOneRingBuffer(control.slice(0, ring_length))
control.get_and_add_int64(ready_offset, 1)
deadline = time.monotonic() + 60
while control.get_int64_acquire(go_offset) == 0:
    if time.monotonic() > deadline:
        sys.exit("never told to start")
    time.sleep(0.001)

pack = struct.Struct("<iq").pack
write = ring.write
sleep = time.sleep
full = 0
for seq in range(count):
    body = pack(producer_id, seq)
    while not write(1, body):
        full += 1
        sleep(0.0005)  # let the consumer run; spinning would starve it on a small machine
        if time.monotonic() > deadline:
            sys.exit("ring stayed full")
print(full)
control.close()
mapping.close()
"""


@pytest.fixture
def shared_file(tmp_path: Path) -> Iterator[tuple[Path, AtomicBuffer]]:
    path = tmp_path / "ring.dat"
    with path.open("wb") as f:
        f.truncate(MP_FILE_LENGTH)
    with path.open("r+b") as f:
        mapping = mmap.mmap(f.fileno(), 0)
    buffer = AtomicBuffer(mapping)
    try:
        yield path, buffer
    finally:
        buffer.close()
        mapping.close()


@pytest.mark.slow
def test_many_producer_processes_one_consumer(shared_file: tuple[Path, AtomicBuffer], tmp_path: Path) -> None:
    path, control = shared_file
    ring = ManyToOneRingBuffer(control.slice(0, MP_CAPACITY + TRAILER_LENGTH))
    unpack = struct.Struct("<iq").unpack_from
    next_seq = [0] * PRODUCERS
    total = PRODUCERS * RECORDS_PER_PRODUCER
    last_producer = [-1]
    switches = [0]  # how often consecutive records came from different producers

    def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        producer_id, seq = unpack(buffer.view, index)
        if msg_type_id != 1 or length != 12 or seq != next_seq[producer_id]:
            raise AssertionError(
                f"producer {producer_id}: got seq {seq} (type {msg_type_id}, length {length}), "
                f"expected seq {next_seq[producer_id]}"
            )
        next_seq[producer_id] = seq + 1
        if producer_id != last_producer[0]:
            switches[0] += 1
            last_producer[0] = producer_id

    logs = [(tmp_path / f"producer-{i}.log").open("w+") for i in range(PRODUCERS)]
    procs: list[subprocess.Popen[bytes]] = []
    started = time.monotonic()
    deadline = started + MP_TIMEOUT_S
    try:
        for producer_id in range(PRODUCERS):
            args = [str(path), str(producer_id), str(RECORDS_PER_PRODUCER), str(MP_CAPACITY + TRAILER_LENGTH)]
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", PRODUCER_SCRIPT, *args],
                    cwd=REPO_ROOT,
                    stdout=logs[producer_id],
                    stderr=subprocess.STDOUT,
                )
            )

        def check_producers() -> None:
            for i, proc in enumerate(procs):
                if proc.poll() not in (None, 0):
                    logs[i].seek(0)
                    pytest.fail(f"producer {i} exited with {proc.returncode}: {logs[i].read()}")
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {MP_TIMEOUT_S}s with {sum(next_seq)}/{total} records read")

        while control.get_int64_acquire(READY_OFFSET) < PRODUCERS:
            check_producers()
            time.sleep(0.005)
        go_time = time.monotonic()
        control.put_int64_release(GO_OFFSET, 1)

        received = 0
        read = ring.read
        while received < total:
            n = read(handler, 1000)
            received += n
            if n == 0:
                check_producers()
                time.sleep(0.0002)
        elapsed = time.monotonic() - go_time

        for i, proc in enumerate(procs):
            assert proc.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
            logs[i].seek(0)
        full_retries = sum(int(log.read().strip() or 0) for log in logs)
        assert next_seq == [RECORDS_PER_PRODUCER] * PRODUCERS
        assert switches[0] > PRODUCERS, "producers ran one after another, not concurrently"
        assert ring.size() == 0
        assert ring.read(handler) == 0
        print(
            f"\n{total} records from {PRODUCERS} processes in {elapsed:.2f}s "
            f"({total / elapsed:,.0f}/s, {full_retries} full retries, {switches[0]} producer switches, "
            f"{time.monotonic() - started:.2f}s with startup)"
        )
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        for log in logs:
            log.close()
