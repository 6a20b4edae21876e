"""Differences of position counters of one stream: receive gap, subscriber lag, sender backlog, headroom."""

from __future__ import annotations

from driver.concurrent.counter_types import (
    CounterInfo,
    decode_counter,
    stream_position_key,
    stream_position_label,
)
from driver.status.driver_snapshot import derived_positions

CHANNEL = "aeron:udp?endpoint=localhost:40456"


def stream(
    cid: int,
    type_id: int,
    name: str,
    reg: int,
    value: int,
    session: int = 7,
    stream_id: int = 1001,
    channel: str = CHANNEL,
) -> CounterInfo:
    key = stream_position_key(reg, session, stream_id, channel)
    return decode_counter(
        cid, type_id, key, stream_position_label(name, reg, session, stream_id, channel), value
    )


def derived(counters: list[CounterInfo]) -> dict[tuple[str, int], int]:
    return {(d.name, d.registration_id): d.value for d in derived_positions(counters)}


def test_derived_positions_of_a_network_stream() -> None:
    counters = [
        stream(28, 12, "pub-pos (sample)", 2, 10_000),
        stream(29, 1, "pub-lmt", 2, 64_000),
        stream(30, 2, "snd-pos", 2, 9_000),
        stream(31, 9, "snd-lmt", 2, 70_000),
        stream(32, 4, "sub-pos", 1, 8_000),
        stream(33, 3, "rcv-hwm", 3, 9_000),
        stream(34, 5, "rcv-pos", 3, 8_500),
    ]
    assert derived(counters) == {
        ("receive_gap", 3): 500,
        ("subscriber_lag", 1): 500,
        ("sender_backlog", 2): 1_000,
        ("publisher_headroom", 2): 54_000,
    }
    # pub-pos is only a sample: a sender ahead of it is no backlog.
    counters[0] = stream(28, 12, "pub-pos (sample)", 2, 8_000)
    assert derived(counters)[("sender_backlog", 2)] == 0


def test_subscriber_lag_matching() -> None:
    other = "aeron:udp?endpoint=localhost:40456|reliable=true"
    counters = [
        stream(32, 4, "sub-pos", 1, 100, channel=other),  # another URI string for the same endpoint
        stream(34, 5, "rcv-pos", 3, 300),
        stream(40, 12, "pub-pos (sample)", 8, 900, session=9, stream_id=7, channel="aeron:ipc"),
        stream(
            41, 4, "sub-pos", 10, 600, session=9, stream_id=7, channel="aeron:ipc"
        ),  # IPC: against pub-pos
        stream(42, 4, "sub-pos", 11, 600, session=99, stream_id=7, channel="aeron:ipc"),  # nothing to compare
    ]
    assert derived(counters) == {("subscriber_lag", 1): 200, ("subscriber_lag", 10): 300}
