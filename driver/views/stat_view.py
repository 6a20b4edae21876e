"""``mediadriver stat``: counter filters (type, stream, channel) and the live table."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from driver.concurrent.counter_types import CounterInfo, parse_type
from driver.status.driver_snapshot import DriverSnapshot
from driver.util.text import printable


def _split(values: Sequence[str] | None) -> list[str]:
    """Repeatable options that also take comma lists: ``--type rcv-pos,sub-pos --type 1``."""
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class CounterFilter:
    """Keeps counters matching every given criterion; within one criterion any listed value matches.

    A stream filter keeps only counters that have a stream id (stream positions, rec-pos); a channel filter
    (substring of the channel URI) only counters that have a channel (stream positions, channel status,
    rec-pos). Unlike AeronStat's, these never keep system counters once a stream or channel is asked for.
    """

    type_ids: frozenset[int] | None = None
    stream_ids: frozenset[int] | None = None
    channels: tuple[str, ...] | None = None

    @classmethod
    def from_options(
        cls,
        types: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
        channels: Sequence[str] | None = None,
    ) -> CounterFilter:
        """Raises ValueError with a message naming the bad value."""
        type_values, stream_values, channel_values = _split(types), _split(streams), _split(channels)
        stream_ids = []
        for value in stream_values:
            try:
                stream_ids.append(int(value))
            except ValueError:
                raise ValueError(f"--stream {value!r} is not a stream id (an integer)") from None
        return cls(
            frozenset(parse_type(t) for t in type_values) if type_values else None,
            frozenset(stream_ids) if stream_ids else None,
            tuple(channel_values) if channel_values else None,
        )

    @property
    def active(self) -> bool:
        return self.type_ids is not None or self.stream_ids is not None or self.channels is not None

    def matches(self, c: CounterInfo) -> bool:
        if self.type_ids is not None and c.type_id not in self.type_ids:
            return False
        if self.stream_ids is not None and c.stream_id not in self.stream_ids:
            return False
        return self.channels is None or (c.channel is not None and any(s in c.channel for s in self.channels))

    def apply(self, counters: Iterable[CounterInfo]) -> list[CounterInfo]:
        return [c for c in counters if self.matches(c)]


def render_table(
    snapshot: DriverSnapshot,
    counter_filter: CounterFilter | None = None,
    previous: DriverSnapshot | None = None,
    interval_s: float | None = None,
    now_ms: int | None = None,
) -> str:
    """The live view: one row per counter with its type, stream and rate since the previous screen."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    counters = (counter_filter or CounterFilter()).apply(snapshot.counters)
    before: dict[tuple[int, int, str], int] = {}
    if previous is not None and previous.pid == snapshot.pid:
        before = {(c.counter_id, c.type_id, c.label): c.value for c in previous.counters}
    # A clean stop withdraws the heartbeat (0): there is no age to show.
    heartbeat = (
        "driver stopped"
        if snapshot.heartbeat_ms == 0
        else f"heartbeat {(now_ms - snapshot.heartbeat_ms) / 1000:.1f} s ago"
    )
    lines = [
        f"{time.strftime('%H:%M:%S')} - Aeron Stat (CnC v{snapshot.version}), pid {snapshot.pid}, "
        f"{heartbeat}, {len(counters)} of {len(snapshot.counters)} counters",
        f"{'ID':>4} {'TYPE':<16} {'VALUE':>20} {'PER SECOND':>14} {'SESSION':>11} {'STREAM':>7}  LABEL",
    ]
    for c in counters:
        old = before.get((c.counter_id, c.type_id, c.label))
        rate = "" if old is None or not interval_s else f"{(c.value - old) / interval_s:,.0f}"
        lines.append(
            f"{c.counter_id:>4} {c.type_name:<16} {c.value:>20,d} {rate:>14} "
            f"{'' if c.session_id is None else c.session_id:>11} {'' if c.stream_id is None else c.stream_id:>7}  "
            f"{printable(c.label)}"
        )
    return "\n".join(lines)
