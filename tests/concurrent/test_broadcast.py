"""Broadcast buffer against docs/ringbuffers.md section 2: exact bytes, a model, and lapping."""

from __future__ import annotations

import struct

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.broadcast import (
    HEADER_LENGTH,
    LATEST_COUNTER_OFFSET,
    PADDING_MSG_TYPE_ID,
    RECORD_ALIGNMENT,
    SCRATCH_BUFFER_LENGTH,
    TAIL_COUNTER_OFFSET,
    TAIL_INTENT_COUNTER_OFFSET,
    TRAILER_LENGTH,
    BroadcastReceiver,
    BroadcastTransmitter,
    CopyBroadcastReceiver,
    IllegalStateError,
)
from driver.util.bit_util import align

CAPACITY = 1024
SMALL_CAPACITY = 256

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


def i32_at(raw: bytearray, index: int) -> int:
    return _I32.unpack_from(raw, index)[0]


def i64_at(raw: bytearray, index: int) -> int:
    return _I64.unpack_from(raw, index)[0]


def make_broadcast(capacity: int = CAPACITY) -> tuple[bytearray, AtomicBuffer, BroadcastTransmitter]:
    raw = bytearray(capacity + TRAILER_LENGTH)
    buffer = AtomicBuffer(raw)
    return raw, buffer, BroadcastTransmitter(buffer)


def body_for(seq: int, length: int) -> bytes:
    return (seq.to_bytes(4, "little") * (length // 4 + 1))[:length]


def set_counters(raw: bytearray, position: int, capacity: int = CAPACITY) -> None:
    """Pretend ``position`` bytes have been transmitted, the last record starting there."""
    for offset in (TAIL_INTENT_COUNTER_OFFSET, TAIL_COUNTER_OFFSET, LATEST_COUNTER_OFFSET):
        _I64.pack_into(raw, capacity + offset, position)


def current(receiver: BroadcastReceiver) -> tuple[int, bytes]:
    return receiver.type_id(), receiver.buffer.get_bytes(receiver.offset(), receiver.length())


class CopyCollector:
    def __init__(self) -> None:
        self.messages: list[tuple[int, bytes]] = []

    def __call__(self, msg_type_id: int, body: memoryview) -> None:
        self.messages.append((msg_type_id, bytes(body)))


# --- layout and transmit ------------------------------------------------------------------------------


def test_layout_constants_match_agrona() -> None:
    assert (TAIL_INTENT_COUNTER_OFFSET, TAIL_COUNTER_OFFSET, LATEST_COUNTER_OFFSET) == (0, 8, 16)
    assert TRAILER_LENGTH == 128
    assert (HEADER_LENGTH, RECORD_ALIGNMENT, PADDING_MSG_TYPE_ID) == (8, 8, -1)
    assert SCRATCH_BUFFER_LENGTH == 4096


def test_capacity_and_max_msg_length() -> None:
    _, buffer, transmitter = make_broadcast(1 << 20)
    assert transmitter.capacity == 1 << 20
    assert transmitter.max_msg_length == 131_072
    assert BroadcastReceiver(buffer).capacity == 1 << 20


@pytest.mark.parametrize("length", [1000 + TRAILER_LENGTH, TRAILER_LENGTH, 1024])
def test_rejects_capacity_that_is_not_a_power_of_two(length: int) -> None:
    buffer = AtomicBuffer(bytearray(length))
    with pytest.raises(ValueError, match="power of two"):
        BroadcastTransmitter(buffer)
    with pytest.raises(ValueError, match="power of two"):
        BroadcastReceiver(buffer)


def test_transmit_lays_out_record_and_counters() -> None:
    raw, _, transmitter = make_broadcast()
    transmitter.transmit(5, b"hello")
    assert (i32_at(raw, 0), i32_at(raw, 4)) == (13, 5)
    assert raw[8:13] == b"hello"
    assert i64_at(raw, CAPACITY + 0) == 16  # tail intent
    assert i64_at(raw, CAPACITY + 8) == 16  # tail
    assert i64_at(raw, CAPACITY + 16) == 0  # latest: start of the record just written

    transmitter.transmit(6, memoryview(b"0123456789abcdef"))
    assert (i32_at(raw, 16), i32_at(raw, 20)) == (24, 6)
    assert raw[24:40] == b"0123456789abcdef"
    assert (i64_at(raw, CAPACITY), i64_at(raw, CAPACITY + 8), i64_at(raw, CAPACITY + 16)) == (40, 40, 16)


def test_transmit_pads_the_end_and_wraps_to_zero() -> None:
    raw, _, transmitter = make_broadcast()
    set_counters(raw, 1000)
    transmitter.transmit(3, b"z" * 20)  # needs 32, 24 left
    assert (i32_at(raw, 1000), i32_at(raw, 1004)) == (24, PADDING_MSG_TYPE_ID)
    assert (i32_at(raw, 0), i32_at(raw, 4)) == (28, 3)
    assert raw[8:28] == b"z" * 20
    assert i64_at(raw, CAPACITY + TAIL_INTENT_COUNTER_OFFSET) == 1056
    assert i64_at(raw, CAPACITY + TAIL_COUNTER_OFFSET) == 1056
    assert i64_at(raw, CAPACITY + LATEST_COUNTER_OFFSET) == 1024


def test_transmit_rejects_bad_type_and_oversized_message() -> None:
    _, _, transmitter = make_broadcast()
    with pytest.raises(ValueError, match="greater than zero"):
        transmitter.transmit(0, b"")
    with pytest.raises(ValueError, match="max_msg_length of 128"):
        transmitter.transmit(1, bytes(129))
    transmitter.transmit(1, bytes(128))


# --- receive ------------------------------------------------------------------------------------------


def test_new_receiver_starts_at_the_latest_record() -> None:
    _, buffer, transmitter = make_broadcast()
    for seq in range(3):
        transmitter.transmit(seq + 1, body_for(seq, 10))
    receiver = BroadcastReceiver(buffer)
    assert receiver.receive_next()
    assert current(receiver) == (3, body_for(2, 10))
    assert receiver.validate()
    assert not receiver.receive_next()
    transmitter.transmit(9, b"next")
    assert receiver.receive_next()
    assert current(receiver) == (9, b"next")
    assert receiver.offset() == 72 + HEADER_LENGTH


def test_receiver_on_an_empty_buffer_has_nothing() -> None:
    _, buffer, _ = make_broadcast()
    receiver = BroadcastReceiver(buffer)
    assert not receiver.receive_next()
    assert CopyBroadcastReceiver(receiver).receive(CopyCollector()) == 0


def test_record_ending_exactly_at_the_end_needs_no_padding() -> None:
    raw, buffer, transmitter = make_broadcast()
    set_counters(raw, 960)
    transmitter.transmit(1, bytes(56))  # 960..1024 exactly
    receiver = BroadcastReceiver(buffer)  # at latest = 960
    transmitter.transmit(2, b"wrapped")
    assert (i32_at(raw, 0), i32_at(raw, 4)) == (15, 2)
    assert receiver.receive_next()
    assert current(receiver) == (1, bytes(56))
    assert receiver.receive_next()
    assert current(receiver) == (2, b"wrapped")
    assert receiver.offset() == HEADER_LENGTH


def test_receiver_skips_a_padding_record() -> None:
    raw, buffer, transmitter = make_broadcast()
    set_counters(raw, 1000)
    receiver = BroadcastReceiver(buffer)  # cursor at 1000, where the padding will go
    transmitter.transmit(4, b"after the padding")
    assert receiver.receive_next()
    assert current(receiver) == (4, b"after the padding")
    assert receiver.offset() == HEADER_LENGTH
    assert receiver.validate()
    assert not receiver.receive_next()


def test_copy_receiver_delivers_one_message_per_call() -> None:
    _, buffer, transmitter = make_broadcast()
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    transmitter.transmit(1, b"one")
    transmitter.transmit(2, b"two")
    collector = CopyCollector()
    assert copy.receive(collector) == 1
    assert copy.receive(collector) == 1
    assert copy.receive(collector) == 0
    assert collector.messages == [(1, b"one"), (2, b"two")]


def test_copy_receiver_handler_gets_exactly_the_body() -> None:
    _, buffer, transmitter = make_broadcast()
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    transmitter.transmit(1, b"a much longer first message")
    transmitter.transmit(2, b"short")
    lengths: list[int] = []
    copy.receive(lambda t, body: lengths.append(len(body)))
    copy.receive(lambda t, body: lengths.append(len(body)))
    assert lengths == [27, 5]


def test_copy_receiver_rejects_message_longer_than_scratch() -> None:
    _, buffer, transmitter = make_broadcast()
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer), scratch_length=16)
    transmitter.transmit(1, bytes(17))
    transmitter.transmit(2, bytes(16))
    with pytest.raises(IllegalStateError, match="17 bytes does not fit the 16-byte scratch"):
        copy.receive(CopyCollector())
    collector = CopyCollector()
    assert copy.receive(collector) == 1  # the oversized one was skipped, not retried forever
    assert collector.messages == [(2, bytes(16))]


# --- lapping ------------------------------------------------------------------------------------------


def test_transmitter_laps_a_slow_receiver() -> None:
    _, buffer, transmitter = make_broadcast(SMALL_CAPACITY)
    receiver = BroadcastReceiver(buffer)
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    for seq in range(10):  # 10 * 32 bytes > 256
        transmitter.transmit(seq + 1, body_for(seq, 24))

    assert receiver.receive_next()
    assert receiver.lapped_count() == 1
    assert current(receiver) == (10, body_for(9, 24))  # jumped to the latest
    assert receiver.validate()

    with pytest.raises(IllegalStateError, match="unable to keep up with broadcast"):
        copy.receive(CopyCollector())
    assert copy.broadcast_receiver.lapped_count() == 1
    transmitter.transmit(11, b"caught up")
    collector = CopyCollector()
    assert copy.receive(collector) == 1
    assert collector.messages == [(11, b"caught up")]


def test_validate_fails_when_overwritten_after_receive() -> None:
    _, buffer, transmitter = make_broadcast(SMALL_CAPACITY)
    receiver = BroadcastReceiver(buffer)
    transmitter.transmit(1, b"first")
    assert receiver.receive_next()
    assert receiver.validate()
    for seq in range(8):
        transmitter.transmit(2, body_for(seq, 24))
    assert not receiver.validate()


class OverwrittenDuringCopy(BroadcastReceiver):
    """Lets the transmitter lap us between receive_next() and the copy's re-validation."""

    def __init__(self, buffer: AtomicBuffer, transmitter: BroadcastTransmitter) -> None:
        super().__init__(buffer)
        self.transmitter = transmitter

    def receive_next(self) -> bool:
        available = super().receive_next()
        for seq in range(8):
            self.transmitter.transmit(2, body_for(seq, 24))
        return available


def test_copy_receiver_raises_when_validation_fails_after_copying() -> None:
    _, buffer, transmitter = make_broadcast(SMALL_CAPACITY)
    receiver = OverwrittenDuringCopy(buffer, transmitter)
    transmitter.transmit(1, b"first")
    collector = CopyCollector()
    with pytest.raises(IllegalStateError, match="unable to keep up with broadcast"):
        CopyBroadcastReceiver(receiver).receive(collector)
    assert collector.messages == []


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(0, SMALL_CAPACITY // 8), min_size=1, max_size=40),
    extra=st.integers(0, SMALL_CAPACITY // 8),
)
def test_lapped_receiver_jumps_to_latest(lengths: list[int], extra: int) -> None:
    _, buffer, transmitter = make_broadcast(SMALL_CAPACITY)
    receiver = BroadcastReceiver(buffer)
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    sent = 0
    seq = 0
    # Keep transmitting until more than a whole buffer has gone past the receivers' cursor at 0.
    while sent <= SMALL_CAPACITY:
        length = lengths[seq % len(lengths)]
        transmitter.transmit(seq + 1, body_for(seq, length))
        sent += align(length + HEADER_LENGTH, RECORD_ALIGNMENT)
        seq += 1
    last = (seq, body_for(seq - 1, lengths[(seq - 1) % len(lengths)]))

    assert receiver.receive_next()
    assert receiver.lapped_count() == 1
    assert current(receiver) == last
    with pytest.raises(IllegalStateError, match="unable to keep up"):
        copy.receive(CopyCollector())

    transmitter.transmit(1000, body_for(1000, extra))
    collector = CopyCollector()
    assert copy.receive(collector) == 1
    assert collector.messages == [(1000, body_for(1000, extra))]
    assert receiver.receive_next()
    assert current(receiver) == (1000, body_for(1000, extra))
    assert receiver.lapped_count() == 1


# --- model-based property test ------------------------------------------------------------------------


class BroadcastModel:
    """Records keyed by absolute position; receivers follow the spec's rules over that map."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.tail = 0
        self.tail_intent = 0
        self.latest = 0
        # position -> (aligned length, type id, body); body None for padding.
        self.records: dict[int, tuple[int, int, bytes | None]] = {}

    def transmit(self, msg_type_id: int, body: bytes) -> None:
        aligned = align(len(body) + HEADER_LENGTH, RECORD_ALIGNMENT)
        to_end = self.capacity - self.tail % self.capacity
        if to_end < aligned:
            self.records[self.tail] = (to_end, PADDING_MSG_TYPE_ID, None)
            self.tail += to_end
        self.records[self.tail] = (aligned, msg_type_id, body)
        self.latest = self.tail
        self.tail += aligned
        self.tail_intent = self.tail


class ReceiverModel:
    def __init__(self, model: BroadcastModel) -> None:
        self.model = model
        self.next_record = model.latest
        self.lapped_count = 0

    def receive_next(self) -> tuple[int, bytes] | None:
        model = self.model
        if model.tail <= self.next_record:
            return None
        cursor = self.next_record
        if cursor + model.capacity <= model.tail_intent:
            self.lapped_count += 1
            cursor = model.latest
        aligned, msg_type_id, body = model.records[cursor]
        if body is None:
            cursor += aligned
            aligned, msg_type_id, body = model.records[cursor]
        assert body is not None
        self.next_record = cursor + aligned
        return msg_type_id, body


body_length = st.integers(0, SMALL_CAPACITY // 8)
# Start anywhere in the first two laps so that short runs also cross the end of the buffer.
start_position = st.integers(0, 2 * SMALL_CAPACITY // RECORD_ALIGNMENT - 1).map(
    lambda n: n * RECORD_ALIGNMENT
)
ops_strategy = st.lists(
    st.one_of(
        st.tuples(st.just("transmit"), st.lists(body_length, min_size=1, max_size=10)),
        st.tuples(st.just("receive"), st.integers(1, 6)),
        st.tuples(st.just("copy"), st.integers(1, 6)),
        st.tuples(st.just("new receiver"), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(start_position, ops_strategy)
def test_matches_model_for_random_transmits_and_receives(
    start: int, ops: list[tuple[str, int] | tuple[str, list[int]]]
) -> None:
    raw, buffer, transmitter = make_broadcast(SMALL_CAPACITY)
    set_counters(raw, start, SMALL_CAPACITY)
    model = BroadcastModel(SMALL_CAPACITY)
    model.tail = model.tail_intent = model.latest = start
    receiver, receiver_model = BroadcastReceiver(buffer), ReceiverModel(model)
    copy, copy_model = CopyBroadcastReceiver(BroadcastReceiver(buffer)), ReceiverModel(model)
    seq = 0

    for op, arg in ops:
        if isinstance(arg, list):
            for length in arg:
                seq += 1
                body = body_for(seq, length)
                records_before = len(model.records)
                transmitter.transmit(seq, body)
                model.transmit(seq, body)
                if len(model.records) - records_before == 2:
                    event("transmit wrapped with padding")
        elif op == "new receiver":
            receiver, receiver_model = BroadcastReceiver(buffer), ReceiverModel(model)
        elif op == "receive":
            for _ in range(arg):
                lapped_before = receiver_model.lapped_count
                expected = receiver_model.receive_next()
                assert receiver.receive_next() == (expected is not None)
                assert receiver.lapped_count() == receiver_model.lapped_count
                if receiver_model.lapped_count != lapped_before:
                    event("receiver lapped")
                if expected is None:
                    break
                assert current(receiver) == expected
                assert receiver.validate()
        else:
            for _ in range(arg):
                lapped_before = copy_model.lapped_count
                expected = copy_model.receive_next()
                collector = CopyCollector()
                if copy_model.lapped_count != lapped_before:
                    event("copy receiver lapped")
                    with pytest.raises(IllegalStateError, match="unable to keep up"):
                        copy.receive(collector)
                    assert collector.messages == []
                    continue
                assert copy.receive(collector) == (expected is not None)
                if expected is None:
                    break
                assert collector.messages == [expected]

        assert i64_at(raw, SMALL_CAPACITY + TAIL_COUNTER_OFFSET) == model.tail
        assert i64_at(raw, SMALL_CAPACITY + TAIL_INTENT_COUNTER_OFFSET) == model.tail_intent
        assert i64_at(raw, SMALL_CAPACITY + LATEST_COUNTER_OFFSET) == model.latest


@settings(max_examples=200, deadline=None)
@given(start_position, st.lists(body_length, min_size=1, max_size=100))
def test_receiver_that_keeps_up_gets_everything_in_order(start: int, lengths: list[int]) -> None:
    raw, buffer, transmitter = make_broadcast(SMALL_CAPACITY)
    set_counters(raw, start, SMALL_CAPACITY)
    receiver = BroadcastReceiver(buffer)
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    received: list[tuple[int, bytes]] = []
    copied = CopyCollector()
    for seq, length in enumerate(lengths):
        transmitter.transmit(seq + 1, body_for(seq, length))
        assert receiver.receive_next()
        received.append(current(receiver))
        assert receiver.validate()
        assert copy.receive(copied) == 1
        assert not receiver.receive_next()
    expected = [(seq + 1, body_for(seq, length)) for seq, length in enumerate(lengths)]
    assert received == expected
    assert copied.messages == expected
    assert receiver.lapped_count() == 0
