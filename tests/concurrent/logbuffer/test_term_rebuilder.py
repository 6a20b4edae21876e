"""TermRebuilder.insert (docs/logbuffer.md section 7): datagrams copied to the offset their first header names,
body first and the length last; duplicates, heartbeats and malformed datagrams write nothing; any arrival
order of a stream's datagrams (with duplicates and overlapping regroupings) rebuilds the original term."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import term_rebuilder
from driver.media.udp_batch import ReceiveBatch
from driver.protocol import frames as f
from driver.util.bit_util import align

T = 64 * 1024
SESSION, STREAM, TERM_ID = 77, 1001, -5
TEMPLATE = f.create_default_header(SESSION, STREAM, TERM_ID)


@pytest.fixture
def term() -> Iterator[AtomicBuffer]:
    buffer = AtomicBuffer(bytearray(T))
    yield buffer
    buffer.close()


def build_stream(
    payload_lengths: list[int], pad_to_end: bool = False, seed: int = 1
) -> tuple[bytearray, list[int]]:
    """A term written as a publication would; returns (term bytes, frame offsets + the end offset)."""
    rng = random.Random(seed)
    data = bytearray(T)
    buffer = AtomicBuffer(data)
    offsets = [0]
    offset = 0
    for length in payload_lengths:
        payload = bytes(rng.randrange(256) for _ in range(length))
        buffer.write_frame(offset, length + 32, TEMPLATE, TERM_ID, -1, rng.randrange(1 << 40), payload)
        offset += align(length + 32, 32)
        offsets.append(offset)
    if pad_to_end and offset < T:
        buffer.write_padding_frame(offset, T - offset, TEMPLATE, TERM_ID)
        offsets.append(T)
    buffer.close()
    return data, offsets


def datagram(data: bytearray, start: int, end: int) -> bytes:
    """The datagram a sender makes of the frames in [start, end): a PAD frame travels as its header only."""
    if f.DATA_HEADER.unpack_from(data, start)[3] == f.HDR_TYPE_PAD:
        return bytes(data[start : start + 32])
    return bytes(data[start:end])


def groupings(offsets: list[int], rng: random.Random, max_frames: int) -> list[tuple[int, int]]:
    """A random partition of the frames into contiguous datagrams of up to ``max_frames`` frames."""
    result = []
    i = 0
    while i < len(offsets) - 1:
        n = rng.randint(1, max_frames)
        j = min(i + n, len(offsets) - 1)
        # padding ends a datagram and is alone at its start
        for k in range(i, j):
            if offsets[k + 1] == T and k > i:
                j = k
                break
        result.append((offsets[i], offsets[j]))
        i = j
    return result


def test_insert_writes_a_datagram_whole_at_its_offset(term: AtomicBuffer) -> None:
    data, offsets = build_stream([100, 0, 200])
    packet = datagram(data, 0, offsets[-1])
    assert term_rebuilder.insert(term, 0, packet, len(packet)) == 3
    assert term.get_bytes(0, T) == bytes(data)


def test_duplicate_is_ignored_and_leaves_the_term_alone(term: AtomicBuffer) -> None:
    data, offsets = build_stream([100])
    packet = bytearray(datagram(data, 0, offsets[1]))
    assert term_rebuilder.insert(term, 0, packet, len(packet)) == 1
    before = term.get_bytes(0, 256)
    packet[40] ^= 0xFF  # same frame, different bytes: a duplicate must not overwrite
    assert term_rebuilder.insert(term, 0, packet, len(packet)) == 0
    assert term.get_bytes(0, 256) == before


def test_overlapping_datagram_fills_only_the_missing_frames(term: AtomicBuffer) -> None:
    data, offsets = build_stream([64, 64, 64, 64])
    first = datagram(data, offsets[0], offsets[2])
    overlapping = datagram(data, offsets[1], offsets[4])
    assert term_rebuilder.insert(term, 0, first, len(first)) == 2
    assert term_rebuilder.insert(term, offsets[1], overlapping, len(overlapping)) == 2
    assert term.get_bytes(0, T) == bytes(data)


def test_heartbeat_writes_nothing(term: AtomicBuffer) -> None:
    hb = f.encode_heartbeat(SESSION, STREAM, TERM_ID, 1024, eos=False)
    assert term_rebuilder.insert(term, 1024, hb, len(hb)) == 0
    assert term.get_bytes(0, T) == bytes(T)


def test_padding_header_alone_is_inserted_with_its_full_length(term: AtomicBuffer) -> None:
    data, offsets = build_stream([100], pad_to_end=True)
    pad = datagram(data, offsets[1], T)
    assert len(pad) == 32
    assert term_rebuilder.insert(term, offsets[1], pad, 32) == 1
    assert f.DATA_HEADER.unpack_from(term.view, offsets[1])[:4] == (T - offsets[1], 0, 0xC0, f.HDR_TYPE_PAD)


def test_packet_inside_a_larger_receive_buffer(term: AtomicBuffer) -> None:
    data, offsets = build_stream([100, 300])
    packet = datagram(data, 0, offsets[-1])
    batch = bytearray(1000) + bytearray(packet) + bytearray(500)
    assert term.term_rebuild_insert(0, memoryview(batch), 1000, len(packet)) == 2
    assert term_rebuilder.insert(term, 0, batch, len(packet), packet_offset=1000) == 0
    assert term.get_bytes(0, T) == bytes(data)


def test_out_of_term_and_malformed_datagrams_write_nothing(term: AtomicBuffer) -> None:
    data, offsets = build_stream([100, 100])
    good = datagram(data, 0, offsets[-1])

    def rejected(term_offset: int, packet: bytes | bytearray, length: int | None = None) -> int:
        result = term_rebuilder.insert(term, term_offset, packet, len(packet) if length is None else length)
        assert term.get_bytes(0, T) == bytes(T)
        return result

    assert rejected(T - 128, good) == term_rebuilder.OUT_OF_TERM  # crosses the end
    assert rejected(-32, good) == term_rebuilder.OUT_OF_TERM
    assert rejected(16, good) == term_rebuilder.OUT_OF_TERM  # not aligned
    assert rejected(0, good[:20]) == term_rebuilder.MALFORMED
    assert rejected(32, good) == term_rebuilder.MALFORMED  # header says offset 0

    def mutated(position: int, fmt: str, value: int) -> bytearray:
        packet = bytearray(good)
        struct.pack_into(fmt, packet, position, value)
        return packet

    second = offsets[1]
    assert rejected(0, mutated(0, "<i", 1000)) == term_rebuilder.MALFORMED  # longer than the datagram
    assert rejected(0, mutated(0, "<i", 16)) == term_rebuilder.MALFORMED  # shorter than a header
    assert rejected(0, mutated(0, "<i", -100)) == term_rebuilder.MALFORMED
    assert rejected(0, mutated(4, "<B", 1)) == term_rebuilder.MALFORMED  # version
    assert rejected(0, mutated(6, "<H", f.HDR_TYPE_NAK)) == term_rebuilder.MALFORMED
    assert rejected(0, mutated(second + 12, "<i", SESSION + 1)) == term_rebuilder.MALFORMED
    assert rejected(0, mutated(second + 16, "<i", STREAM + 1)) == term_rebuilder.MALFORMED
    assert rejected(0, mutated(second + 20, "<i", TERM_ID + 1)) == term_rebuilder.MALFORMED
    assert rejected(0, mutated(second + 8, "<i", second + 32)) == term_rebuilder.MALFORMED
    assert rejected(0, mutated(second, "<i", 0)) == term_rebuilder.MALFORMED  # a hole inside a datagram
    assert rejected(0, good + bytes(40)) == term_rebuilder.MALFORMED  # trailing bytes after the last frame
    # padding that runs past the term, or that is followed by more bytes
    pad = bytearray(f.DATA_HEADER.pack(T, 0, 0xC0, f.HDR_TYPE_PAD, 64, SESSION, STREAM, TERM_ID, 0))
    assert rejected(64, pad) == term_rebuilder.MALFORMED
    pad = bytearray(f.DATA_HEADER.pack(64, 0, 0xC0, f.HDR_TYPE_PAD, 64, SESSION, STREAM, TERM_ID, 0))
    assert rejected(64, pad + bytes(64)) == term_rebuilder.MALFORMED
    with pytest.raises(ValueError):
        term_rebuilder.insert(term, 0, good, len(good) + 1)


@settings(max_examples=150, deadline=None)
@given(
    payload_lengths=st.lists(st.integers(0, 700), min_size=1, max_size=60),
    pad_to_end=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_arrival_order_with_duplicates_and_overlaps_rebuilds_the_original(
    payload_lengths: list[int], pad_to_end: bool, seed: int
) -> None:
    data, offsets = build_stream(payload_lengths, pad_to_end, seed)
    rng = random.Random(seed)
    complete = groupings(offsets, rng, 8)
    overlapping = groupings(offsets, rng, 5)
    packets = complete + rng.sample(overlapping, k=len(overlapping) // 2)
    packets += rng.choices(packets, k=len(packets) // 3)  # duplicates
    rng.shuffle(packets)

    rebuilt = AtomicBuffer(bytearray(T))
    for start, end in packets:
        packet = datagram(data, start, end)
        assert term_rebuilder.insert(rebuilt, start, packet, len(packet)) >= 0
    assert rebuilt.get_bytes(0, T) == bytes(data)
    rebuilt.close()


@settings(max_examples=1000, deadline=None)
@given(
    garbage=st.binary(min_size=0, max_size=300),
    term_offset=st.sampled_from([0, 32, 64, 100, T - 64, T - 32, T, -32, 2**31 - 32]),
    mutate_at=st.integers(0, 299),
    mutate_to=st.integers(0, 255),
    use_real=st.booleans(),
)
def test_random_and_mutated_datagrams_are_rejected_or_inserted_whole(
    garbage: bytes, term_offset: int, mutate_at: int, mutate_to: int, use_real: bool
) -> None:
    """Whatever arrives, the call neither crashes nor writes outside the term; a rejected datagram writes nothing."""
    if use_real:
        data, offsets = build_stream([40, 10, 100], seed=mutate_at)
        packet = bytearray(datagram(data, 0, offsets[-1]))
        packet[mutate_at % len(packet)] = mutate_to
        term_offset = 0
    else:
        packet = bytearray(garbage)
    backing = bytearray(T + 64)
    term = AtomicBuffer(backing, 0, T)
    result = term_rebuilder.insert(term, term_offset, packet, len(packet))
    if result <= 0:
        assert backing == bytearray(T + 64)
    else:
        assert 0 <= term_offset <= T - len(packet)
        written = bytes(backing[term_offset : term_offset + len(packet)])
        assert written[:32] == bytes(packet[:32])
    assert backing[T:] == bytes(64)
    term.close()


# --- RebuildBatch: the receiver's one call per received batch ---------------------------------------------

BITS = 16  # log2(T)


def fill(batch: ReceiveBatch, datagrams: list[bytes], truncated: tuple[int, ...] = ()) -> None:
    """Put ``datagrams`` in the batch's slots as a recvmmsg would (indices in ``truncated`` marked so)."""
    for i, packet in enumerate(datagrams):
        offset = batch.slot_offset(i)
        batch.slot_buffer.view[offset : offset + len(packet)] = packet
        batch.lengths_pointer[i] = -len(packet) if i in truncated else len(packet)
    batch.count = len(datagrams)


class Table:
    """Three terms of one image (initial term id TERM_ID, so positions are term offsets in the first term)."""

    def __init__(self) -> None:
        self.terms = [AtomicBuffer(bytearray(T)) for _ in range(3)]
        self.batch = ReceiveBatch(8, 2048)
        self.rebuild = term_rebuilder.RebuildBatch(2)
        assert self.rebuild.set_images([(SESSION, STREAM, TERM_ID, BITS, self.terms)]) == 1

    def run(self, datagrams, last_sm=0, window_limit=T, accepting=True, truncated=()):
        fill(self.batch, datagrams, truncated)
        self.rebuild.prepare(0, last_sm, window_limit, accepting)
        left = self.rebuild.rebuild(self.batch)
        return self.rebuild.unhandled(left), self.rebuild.result(0), self.rebuild.bytes_received

    def close(self) -> None:
        self.rebuild.clear()
        self.batch.close()
        for t in self.terms:
            t.close()


@pytest.fixture
def table() -> Iterator[Table]:
    t = Table()
    yield t
    t.close()


def test_batch_inserts_data_and_proposes_the_highest_end_position(table: Table) -> None:
    data, offsets = build_stream([100, 0, 200, 64])
    first, second = datagram(data, offsets[2], offsets[4]), datagram(data, 0, offsets[2])
    left, result, received = table.run([first, second])
    assert left == []
    assert result == (2, offsets[4], 0, 0, 0)  # (inserted, hwm, under-runs, over-runs, invalid)
    assert received == len(first) + len(second)
    assert table.terms[0].get_bytes(0, offsets[4]) == bytes(data[: offsets[4]])


def test_batch_leaves_everything_but_plain_data_of_its_images_to_the_caller_in_order(table: Table) -> None:
    data, offsets = build_stream([100, 100], pad_to_end=True)
    other_session = bytearray(datagram(data, 0, offsets[1]))
    other_session[12] ^= 1
    datagrams = [
        f.encode_setup(0, SESSION, STREAM, TERM_ID, TERM_ID, T, 1408, 0),  # 0: SETUP
        f.encode_heartbeat(SESSION, STREAM, TERM_ID, 0, eos=False),  # 1: heartbeat
        bytes(other_session),  # 2: unknown session
        datagram(data, offsets[2], T),  # 3: PAD first
        datagram(data, 0, offsets[1]),  # 4: taken
        datagram(data, offsets[1], offsets[2]),  # 5: truncated by recvmmsg
        f.encode_rttm(SESSION, STREAM, 1, 0, 9),  # 6: RTTM
    ]
    left, result, received = table.run(datagrams, truncated=(5,))
    assert left == [0, 1, 2, 3, 5, 6]
    assert result[:2] == (1, offsets[1])
    assert received == len(datagrams[4])


def test_batch_checks_the_window_as_insert_packet_does(table: Table) -> None:
    data, offsets = build_stream([100, 100, 100])
    a, b, c = (datagram(data, offsets[i], offsets[i + 1]) for i in range(3))
    left, result, received = table.run([a, b, c], last_sm=offsets[1], window_limit=offsets[2])
    assert left == []
    assert result == (1, offsets[2], 1, 1, 0)  # a: under-run, b: inserted, c: over-run
    assert received == len(a) + len(b) + len(c)  # counted as 1.15.1 does, dropped or not
    assert table.terms[0].get_bytes(0, offsets[1]) == bytes(offsets[1])


def test_batch_counts_a_datagram_the_insert_rejects_as_invalid(table: Table) -> None:
    data, offsets = build_stream([100, 100])
    bad = bytearray(datagram(data, 0, offsets[2]))
    bad[offsets[1] + 16] ^= 1  # the second frame's stream id differs
    left, result, _ = table.run([bytes(bad)])
    assert left == []
    assert result == (0, 0, 0, 0, 1)
    assert table.terms[0].get_bytes(0, T) == bytes(T)


def test_batch_leaves_unaccepted_and_odd_datagrams_to_the_caller(table: Table) -> None:
    data, offsets = build_stream([100])
    good = datagram(data, 0, offsets[1])
    assert table.run([good], accepting=False)[:2] == ([0], (0, 0, 0, 0, 0))
    too_long_frame = bytearray(good)
    too_long_frame[0:4] = (len(good) + 32).to_bytes(4, "little")
    misaligned = bytearray(good)
    misaligned[8:12] = (16).to_bytes(4, "little")
    version = bytearray(good)
    version[4] = 1
    before_start = bytearray(good)
    before_start[20:24] = (TERM_ID - 1).to_bytes(4, "little", signed=True)  # position < 0
    odd = [bytes(too_long_frame), bytes(misaligned), bytes(version), bytes(before_start), good[:20]]
    left, result, received = table.run(odd)
    assert left == [0, 1, 2, 3, 4]
    assert (result, received) == ((0, 0, 0, 0, 0), 0)


def test_batch_picks_the_term_of_the_position_and_matches_each_image(table: Table) -> None:
    other = [AtomicBuffer(bytearray(T)) for _ in range(3)]
    try:
        table.rebuild.set_images(
            [(SESSION, STREAM, TERM_ID, BITS, table.terms), (SESSION + 1, STREAM, TERM_ID, BITS, other)]
        )
        data, offsets = build_stream([100])
        in_third_term = bytearray(datagram(data, 0, offsets[1]))
        in_third_term[20:24] = (TERM_ID + 2).to_bytes(4, "little", signed=True)
        second_image = bytearray(datagram(data, 0, offsets[1]))
        second_image[12:16] = (SESSION + 1).to_bytes(4, "little")
        fill(table.batch, [bytes(in_third_term), bytes(second_image)])
        table.rebuild.prepare(0, 0, 3 * T, True)
        table.rebuild.prepare(1, 0, T, True)
        assert table.rebuild.rebuild(table.batch) == 0
        assert table.rebuild.result(0) == (1, 2 * T + offsets[1], 0, 0, 0)
        assert table.rebuild.result(1) == (1, offsets[1], 0, 0, 0)
        assert table.terms[2].get_bytes(32, 100) == bytes(data[32:132])
        assert other[0].get_bytes(32, 100) == bytes(data[32:132])
    finally:
        table.rebuild.clear()
        for t in other:
            t.close()


def test_batch_table_keeps_at_most_its_capacity_and_an_empty_table_takes_nothing(table: Table) -> None:
    entry = (SESSION, STREAM, TERM_ID, BITS, table.terms)
    assert table.rebuild.set_images([entry, entry, entry]) == 2
    table.rebuild.clear()
    data, offsets = build_stream([100])
    fill(table.batch, [datagram(data, 0, offsets[1])])
    assert table.rebuild.rebuild(table.batch) == 1
    short = AtomicBuffer(bytearray(T // 2))
    try:
        with pytest.raises(ValueError):
            table.rebuild.set_images([(SESSION, STREAM, TERM_ID, BITS, [*table.terms[:2], short])])
        assert table.rebuild.count == 0
    finally:
        short.close()
