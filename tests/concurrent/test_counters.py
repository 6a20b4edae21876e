from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent import counter_types as ct
from driver.concurrent import counters as c
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.counters import (
    AtomicCounter,
    CountersFullError,
    CountersManager,
    CountersReader,
)
from driver.util.bit_util import INT64_MAX
from tests.support import ManualClock


def make_manager(
    counters: int = 16, timeout_ms: int = 0, clock: ManualClock | None = None
) -> tuple[CountersManager, bytearray, bytearray, ManualClock]:
    metadata = bytearray(counters * c.METADATA_LENGTH)
    values = bytearray(counters * c.COUNTER_LENGTH)
    clock = clock or ManualClock(epoch_ms=1_000)
    manager = CountersManager(AtomicBuffer(metadata), AtomicBuffer(values), clock.epoch_clock_ms, timeout_ms)
    return manager, metadata, values, clock


def collect(reader: CountersReader) -> list[tuple[int, int, bytes, str]]:
    seen: list[tuple[int, int, bytes, str]] = []
    reader.for_each(lambda *args: seen.append(args))
    return seen


def test_layout_constants_match_agrona() -> None:
    assert (c.TYPE_ID_OFFSET, c.FREE_FOR_REUSE_DEADLINE_OFFSET, c.KEY_OFFSET) == (4, 8, 16)
    assert (c.LABEL_OFFSET, c.MAX_KEY_LENGTH, c.MAX_LABEL_LENGTH, c.FULL_LABEL_LENGTH) == (128, 112, 380, 384)
    assert (c.METADATA_LENGTH, c.COUNTER_LENGTH) == (512, 128)
    assert (c.RECORD_UNUSED, c.RECORD_ALLOCATED, c.RECORD_RECLAIMED) == (0, 1, -1)
    assert c.NOT_FREE_TO_REUSE == INT64_MAX and c.NULL_COUNTER_ID == -1
    assert ct.STREAM_MAX_CHANNEL_LENGTH == 92 and ct.CHANNEL_STATUS_MAX_CHANNEL_LENGTH == 108


def test_metadata_record_bytes() -> None:
    manager, metadata, values, _ = make_manager()
    manager.allocate("first")
    counter_id = manager.allocate("abc", type_id=7, key=b"\x01\x02\x03")
    assert counter_id == 1
    base = 512
    assert struct.unpack_from("<iiq", metadata, base) == (1, 7, INT64_MAX)
    assert metadata[base + 16 : base + 19] == b"\x01\x02\x03"
    assert metadata[base + 19 : base + 128] == bytes(109)
    assert struct.unpack_from("<i", metadata, base + 128) == (3,)
    assert metadata[base + 132 : base + 135] == b"abc"
    assert metadata[base + 135 : base + 512] == bytes(377)
    # The next record is untouched and values start at zero.
    assert metadata[1024:1536] == bytes(512)
    assert values[128:256] == bytes(128)


def test_reader_accessors() -> None:
    manager, _, _, _ = make_manager()
    counter_id = manager.allocate("lbl", type_id=3, key=b"k")
    manager.set_counter_value(counter_id, 42)
    assert manager.get_counter_value(counter_id) == 42
    assert manager.get_counter_state(counter_id) == c.RECORD_ALLOCATED
    assert manager.get_counter_type_id(counter_id) == 3
    assert manager.get_counter_label(counter_id) == "lbl"
    assert manager.get_counter_key(counter_id) == b"k" + bytes(111)
    assert manager.get_free_for_reuse_deadline(counter_id) == INT64_MAX
    assert manager.get_counter_state(5) == c.RECORD_UNUSED
    assert manager.max_counter_id == 16


@pytest.mark.parametrize("bad_id", [-1, 16, 1000])
def test_invalid_ids_are_rejected(bad_id: int) -> None:
    manager, _, _, _ = make_manager()
    with pytest.raises(ValueError, match=rf"counter id {bad_id} out of range: valid ids are 0\.\.15"):
        manager.get_counter_value(bad_id)
    with pytest.raises(ValueError, match="out of range"):
        manager.get_counter_label(bad_id)


def test_metadata_must_be_four_times_values() -> None:
    with pytest.raises(ValueError, match="at least 8192 bytes"):
        CountersManager(
            AtomicBuffer(bytearray(4096)), AtomicBuffer(bytearray(2048)), ManualClock().epoch_clock_ms
        )


def test_reader_over_foreign_smaller_metadata_is_bounded() -> None:
    reader = CountersReader(AtomicBuffer(bytearray(2 * 1024)), AtomicBuffer(bytearray(1024)))
    assert reader.max_counter_id == 4


def test_label_truncation_and_non_ascii() -> None:
    manager, metadata, _, _ = make_manager()
    long_id = manager.allocate("x" * 500)
    assert manager.get_counter_label(long_id) == "x" * 380
    assert struct.unpack_from("<i", metadata, 128) == (380,)
    text_id = manager.allocate("caf\u00e9 \U0001f600!")
    # One '?' per UTF-16 unit, as Java's ASCII encoder writes.
    assert manager.get_counter_label(text_id) == "caf? ??!"
    bytes_id = manager.allocate("caf\u00e9".encode())
    assert manager.get_counter_label(bytes_id) == "caf\u00e9"


def test_key_truncated_to_max_key_length() -> None:
    manager, metadata, _, _ = make_manager()
    counter_id = manager.allocate("k", key=bytes(range(200)))
    assert manager.get_counter_key(counter_id) == bytes(range(112))
    assert struct.unpack_from("<i", metadata, 128) == (1,)  # label length not clobbered


def test_for_each_stops_at_first_unused() -> None:
    manager, metadata, _, _ = make_manager()
    for name in ("a", "b", "c"):
        manager.allocate(name, type_id=5)
    manager.free(1)
    # A record after a hole of UNUSED must not be reported: readers stop at the first unused one.
    struct.pack_into("<i", metadata, 5 * 512, c.RECORD_ALLOCATED)
    seen = collect(manager)
    assert [(i, t, label) for i, t, _, label in seen] == [(0, 5, "a"), (2, 5, "c")]
    assert all(len(key) == 112 for _, _, key, _ in seen)


def test_free_and_reuse_after_deadline() -> None:
    manager, _, _, clock = make_manager(timeout_ms=1_000)
    first = manager.allocate("one")
    second = manager.allocate("two")
    manager.set_counter_value(first, 99)
    manager.free(first)
    assert manager.get_counter_state(first) == c.RECORD_RECLAIMED
    assert manager.get_free_for_reuse_deadline(first) == 2_000
    assert manager.get_counter_value(first) == 99  # not cleared on free
    clock.epoch_ms = 1_999
    assert manager.allocate("three") == 2  # deadline not reached: a fresh id
    clock.epoch_ms = 2_000
    reused = manager.allocate("four", type_id=9)
    assert reused == first
    assert manager.get_counter_value(reused) == 0  # zeroed on reuse
    assert manager.get_counter_label(reused) == "four"
    assert manager.get_counter_type_id(reused) == 9
    assert manager.get_free_for_reuse_deadline(reused) == INT64_MAX
    assert second == 1


def test_reuse_takes_first_freed_and_clears_old_key() -> None:
    manager, _, _, clock = make_manager(timeout_ms=10)
    ids = [manager.allocate(f"c{i}", key=b"\xff" * 50) for i in range(4)]
    manager.free(ids[2])
    manager.free(ids[0])
    clock.epoch_ms += 10
    assert manager.allocate("again", key=b"\x01") == ids[2]
    assert manager.get_counter_key(ids[2]) == b"\x01" + bytes(111)
    assert manager.allocate("again2") == ids[0]
    assert manager.allocate("fresh") == 4


def test_free_twice_is_a_bug() -> None:
    manager, _, _, _ = make_manager()
    counter_id = manager.allocate("x")
    manager.free(counter_id)
    with pytest.raises(ValueError, match="not allocated"):
        manager.free(counter_id)


def test_full_raises_with_advice() -> None:
    manager, _, _, clock = make_manager(counters=2, timeout_ms=100)
    manager.allocate("a")
    manager.allocate("b")
    with pytest.raises(
        CountersFullError, match=r"all 2 counter ids are in use.*aeron\.counters\.buffer\.length"
    ):
        manager.allocate("c")
    manager.free(0)
    with pytest.raises(CountersFullError, match="1 freed, waiting out the reuse timeout"):
        manager.allocate("c")
    clock.epoch_ms += 100
    assert manager.allocate("c") == 0


def test_atomic_counter_operations() -> None:
    manager, _, _, _ = make_manager()
    manager.allocate("skip")
    counter = manager.new_counter("ops", type_id=2)
    assert counter.id == 1
    counter.set(10)
    assert counter.get() == counter.get_weak() == 10
    assert counter.increment() == 10
    assert counter.get_and_add(5) == 11
    counter.set_ordered(3)
    assert counter.get() == 3
    assert counter.increment_ordered() == 3
    assert counter.get_and_add_ordered(6) == 4
    assert counter.get() == 10
    assert counter.compare_and_set(10, 20) and not counter.compare_and_set(10, 30)
    assert not counter.propose_max_ordered(5) and counter.propose_max_ordered(25)
    assert counter.propose_max(26) and not counter.propose_max(26)
    counter.set_weak(-7)
    assert manager.get_counter_value(1) == -7
    assert struct.unpack_from("<q", manager.values_buffer.view, 128) == (-7,)


def test_atomic_counter_close_frees_once() -> None:
    manager, _, _, _ = make_manager()
    with manager.new_counter("owned") as counter:
        assert not counter.is_closed
    assert counter.is_closed
    assert manager.get_counter_state(counter.id) == c.RECORD_RECLAIMED
    counter.close()  # idempotent: a second free would corrupt the free list
    unowned = AtomicCounter(manager.values_buffer, manager.allocate("unowned"))
    unowned.close()
    assert manager.get_counter_state(unowned.id) == c.RECORD_ALLOCATED


def test_atomic_counter_id_outside_values_buffer() -> None:
    values = AtomicBuffer(bytearray(256))
    AtomicCounter(values, 1)
    with pytest.raises(ValueError, match="counter id 2 out of range"):
        AtomicCounter(values, 2)


# Aeron 1.15.1 keys and labels (docs/counters.md §4-6).

CHANNEL = "aeron:udp?endpoint=localhost:40456"


def test_stream_position_label_examples() -> None:
    assert (
        ct.stream_position_label("pub-lmt", 2, 952689119, 1001, CHANNEL)
        == "pub-lmt: 2 952689119 1001 aeron:udp?endpoint=localhost:40456"
    )
    assert (
        ct.stream_position_label("sub-pos", 1, 952689119, 1001, CHANNEL, join_position=0)
        == "sub-pos: 1 952689119 1001 aeron:udp?endpoint=localhost:40456 @0"
    )
    assert (
        ct.stream_position_label("pub-lmt", 4, 952689120, 7, "aeron:ipc") == "pub-lmt: 4 952689120 7 aeron:ipc"
    )
    assert ct.stream_position_label("rcv-hwm", 3, -5, 10, "aeron:ipc") == "rcv-hwm: 3 -5 10 aeron:ipc"


def test_stream_position_label_truncation() -> None:
    prefix = "sub-pos: 1 2 3 "
    long_channel = "aeron:udp?endpoint=h:1|alias=" + "a" * 500
    label = ct.stream_position_label("sub-pos", 1, 2, 3, long_channel, join_position=4096)
    assert len(label) == 380 and label == (prefix + long_channel)[:380]  # too long for " @..."
    # Just under 360: the suffix is appended, then the whole label is cut at 380.
    channel = "x" * (359 - len(prefix))
    label = ct.stream_position_label("sub-pos", 1, 2, 3, channel, join_position=-(2**63))
    assert label == (prefix + channel + " @-9223372036854775808")[:380]
    assert len(label) == 380
    channel = "x" * (360 - len(prefix))
    assert ct.stream_position_label("sub-pos", 1, 2, 3, channel, join_position=7) == prefix + channel


def test_stream_position_key() -> None:
    key = ct.stream_position_key(2, 952689119, 1001, CHANNEL)
    assert key == struct.pack("<qiii", 2, 952689119, 1001, len(CHANNEL)) + CHANNEL.encode()
    assert len(key) == 20 + 34
    long_key = ct.stream_position_key(1, 2, 3, "z" * 200)
    # 1.15.1 writes up to 92 channel bytes (StreamPositionCounter.MAX_CHANNEL_LENGTH), filling the key.
    assert len(long_key) == 112 and struct.unpack_from("<i", long_key, 16) == (92,)


def test_stream_position_counter_round_trip() -> None:
    manager, _, _, _ = make_manager()
    counter_id = manager.allocate(
        ct.stream_position_label("pub-lmt", 2, 952689119, 1001, CHANNEL),
        ct.PUBLISHER_LIMIT_TYPE_ID,
        ct.stream_position_key(2, 952689119, 1001, CHANNEL),
    )
    key = AtomicBuffer(bytearray(manager.get_counter_key(counter_id)))
    assert key.get_int64(ct.STREAM_REGISTRATION_ID_OFFSET) == 2
    assert key.get_int32(ct.STREAM_SESSION_ID_OFFSET) == 952689119
    assert key.get_int32(ct.STREAM_STREAM_ID_OFFSET) == 1001
    assert key.get_string_ascii(ct.STREAM_CHANNEL_LENGTH_OFFSET) == CHANNEL


def test_channel_status_key_quirk() -> None:
    channel = "aeron:udp?endpoint=localhost:40123"
    key = ct.channel_status_key(channel)
    assert len(channel) == 34 and len(key) == 34
    assert key == struct.pack("<i", 34) + channel[:30].encode()
    manager, _, _, _ = make_manager()
    counter_id = manager.allocate(
        ct.channel_status_label(ct.SEND_CHANNEL_STATUS_NAME, channel), ct.SEND_CHANNEL_STATUS_TYPE_ID, key
    )
    assert manager.get_counter_label(counter_id) == "snd-channel: aeron:udp?endpoint=localhost:40123"
    # A length-prefixed read gets the truncated channel plus the zeros after it.
    stored = AtomicBuffer(bytearray(manager.get_counter_key(counter_id)))
    assert stored.get_string_ascii(0) == channel[:30] + "\x00" * 4
    assert ct.channel_status_key("abc") == struct.pack("<i", 3)[:3]
    assert len(ct.channel_status_key("q" * 300)) == 108
    assert len(ct.channel_status_label("rcv-channel", "q" * 500)) == 380


def test_client_heartbeat_key_and_label() -> None:
    assert ct.client_heartbeat_key(123456789) == struct.pack("<q", 123456789)
    assert ct.client_heartbeat_label(123456789) == "client-heartbeat: 123456789"


# Property: ids handed out are unique among allocated ones, and a freed id comes back only after its
# deadline, first-freed-first, exactly as Agrona's CountersManager behaves.

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("allocate"), st.integers(0, 0)),
        st.tuples(st.just("free"), st.integers(0, 63)),
        st.tuples(st.just("tick"), st.integers(0, 7)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=_ops, timeout_ms=st.integers(0, 5))
def test_allocate_free_sequences(ops: list[tuple[str, int]], timeout_ms: int) -> None:
    capacity = 8
    manager, _, _, clock = make_manager(counters=capacity, timeout_ms=timeout_ms)
    allocated: list[int] = []
    freed: list[tuple[int, int]] = []  # (id, deadline) in free order
    high_water = -1
    for op, arg in ops:
        if op == "tick":
            clock.epoch_ms += arg
        elif op == "free":
            if not allocated:
                continue
            counter_id = allocated.pop(arg % len(allocated))
            manager.free(counter_id)
            freed.append((counter_id, clock.epoch_ms + timeout_ms))
        else:
            due = [i for i, (_, deadline) in enumerate(freed) if deadline <= clock.epoch_ms]
            if due:
                expected = freed.pop(due[0])[0]
            elif high_water + 1 < capacity:
                high_water += 1
                expected = high_water
            else:
                with pytest.raises(CountersFullError):
                    manager.allocate("x")
                continue
            counter_id = manager.allocate(f"c{expected}")
            assert counter_id == expected
            assert counter_id not in allocated
            assert manager.get_counter_value(counter_id) == 0
            manager.set_counter_value(counter_id, 100 + counter_id)  # must be zeroed if reused
            allocated.append(counter_id)
    assert sorted(i for i, _, _, _ in collect(manager)) == sorted(allocated)
