"""The seeded loss generator: determinism, the frame-type filter, rates at the edges, properties."""

from __future__ import annotations

import struct

import pytest

from driver.media.loss_generator import (
    LossGenerator,
    parse_frame_types,
)

PAD, DATA, NAK, SM, SETUP, RTTM = 0, 1, 2, 3, 5, 6


def datagram(frame_type: int, length: int = 64) -> memoryview:
    data = bytearray(length)
    struct.pack_into("<iBBH", data, 0, length, 0, 0xC0, frame_type)
    return memoryview(data)


def decisions(generator: LossGenerator, datagrams: list[memoryview]) -> list[bool]:
    return [generator.should_drop(d) for d in datagrams]


def test_same_seed_same_drops_different_seed_different_drops() -> None:
    stream = [datagram(DATA) for _ in range(1000)]
    first = decisions(LossGenerator(0.2, seed=42), stream)
    assert decisions(LossGenerator(0.2, seed=42), stream) == first
    assert decisions(LossGenerator(0.2, seed=43), stream) != first
    assert 120 < sum(first) < 280  # ~20 %


def test_rate_edges() -> None:
    stream = [datagram(DATA) for _ in range(200)]
    never = LossGenerator(0.0, seed=1)
    always = LossGenerator(1.0, seed=1)
    assert not any(decisions(never, stream))
    assert all(decisions(always, stream))
    assert (always.seen, always.dropped) == (200, 200)
    with pytest.raises(ValueError, match="outside"):
        LossGenerator(1.5, seed=1)


def test_type_filter_drops_only_those_types_and_others_use_no_draws() -> None:
    data_only = [datagram(DATA) for _ in range(300)]
    mixed = []
    for d in data_only:
        mixed.extend([datagram(SETUP), d, datagram(RTTM)])
    plain = decisions(LossGenerator(0.5, seed=7, frame_types={DATA}), data_only)
    filtered = LossGenerator(0.5, seed=7, frame_types={DATA})
    mixed_decisions = decisions(filtered, mixed)
    # SETUP and RTTM always pass, and DATA sees exactly the draws it saw alone
    assert mixed_decisions[0::3] == [False] * 300
    assert mixed_decisions[2::3] == [False] * 300
    assert mixed_decisions[1::3] == plain
    assert filtered.seen == 300
    assert filtered.dropped == sum(plain)


def test_type_is_read_from_offset_6_of_the_first_frame() -> None:
    generator = LossGenerator(1.0, seed=0, frame_types={PAD})
    two_frames = bytearray(datagram(PAD, 32).tobytes() + datagram(DATA, 32).tobytes())
    assert generator.should_drop(memoryview(two_frames))
    assert not generator.should_drop(datagram(DATA))
    assert generator.should_drop(bytes(datagram(0x0000)))  # bytes work too


def test_short_datagrams_are_never_dropped() -> None:
    for generator in (LossGenerator(1.0, seed=0), LossGenerator(1.0, seed=0, frame_types={DATA})):
        assert not generator.should_drop(b"\x00" * 7)
        assert generator.seen == 0


def test_parse_frame_types() -> None:
    assert parse_frame_types("DATA,PAD") == {DATA, PAD}
    assert parse_frame_types(" data , 0x5 ,6") == {DATA, SETUP, RTTM}
    assert parse_frame_types("") is None
    with pytest.raises(ValueError, match="neither a number nor one of"):
        parse_frame_types("DATUM")
    with pytest.raises(ValueError, match="uint16"):
        LossGenerator(0.1, 1, {70000})
