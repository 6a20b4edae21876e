"""TermRebuilder.insert (spec/logbuffer.md section 7): datagrams copied to the offset their first header names,
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
