"""tools/bench/rtt_split.py: how it groups the driver's stamps into round trips and says where the tail waits."""

from __future__ import annotations

from tools.bench.rtt_split import PING_STREAM_ID, PONG_STREAM_ID, tail_stages

SENT, READ = 0, 1


def trip(ping_sent_us: int, ping_read_us: int, pong_sent_us: int, pong_read_us: int) -> list[list[int]]:
    """One round trip's four stamps (side, stream, age in ns), as the instrumented driver records them."""
    return [
        [SENT, PING_STREAM_ID, ping_sent_us * 1000],
        [READ, PING_STREAM_ID, ping_read_us * 1000],
        [SENT, PONG_STREAM_ID, pong_sent_us * 1000],
        [READ, PONG_STREAM_ID, pong_read_us * 1000],
    ]


def test_a_stage_over_a_millisecond_is_counted_where_it_fell() -> None:
    records = trip(5000, 5010, 5050, 5060)  # warm-up: skipped even though it waited 5 ms
    records += trip(40, 50, 100, 110) * 2  # two quick round trips
    records += trip(2500, 2510, 2560, 2570)  # the driver noticed the ping late
    records += trip(40, 50, 1900, 1910)  # the echo waited
    result = tail_stages(records, skip=1)
    assert result["round_trips"] == 4
    assert result["share_over_threshold"] == {
        "ping_sent": 0.25,
        "ping_read": 0.0,
        "pong_sent": 0.25,
        "pong_read": 0.0,
    }


def test_a_round_trip_missing_a_stamp_is_left_out_and_a_repeat_keeps_the_first() -> None:
    incomplete = trip(40, 50, 100, 110)[:3]  # the driver stopped before the echo was read
    repeated = trip(40, 50, 1500, 1510)
    repeated.insert(3, [SENT, PONG_STREAM_ID, 90_000])  # a retransmit of the echo: its first send counts
    result = tail_stages(incomplete + repeated, skip=0)
    assert result["round_trips"] == 1
    assert result["share_over_threshold"]["pong_sent"] == 1.0
    assert tail_stages([], skip=0) == {
        "round_trips": 0,
        "share_over_threshold": dict.fromkeys(("ping_sent", "ping_read", "pong_sent", "pong_read")),
    }
