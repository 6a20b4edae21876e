"""``mediadriver streams``: per-stream positions, in the format of Aeron 1.15.1's ``io.aeron.samples.StreamStat``.

One line per (session id, stream id, channel), listing each position counter of the stream as
``<name>:<registration id>:<value>`` in counter id order (StreamStat prints its streams in hash order; we print
them in order of their first counter).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from driver.concurrent.counter_types import (
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POS_TYPE_ID,
    RECEIVER_HWM_TYPE_ID,
    RECEIVER_POS_TYPE_ID,
    SENDER_LIMIT_TYPE_ID,
    SENDER_POSITION_TYPE_ID,
    SUBSCRIBER_POSITION_TYPE_ID,
    CounterInfo,
)
from driver.util.text import printable

# StreamPositionCounter.labelName(typeId) in 1.15.1; anything else (type 10) prints as "<unknown>".
LABEL_NAMES = {
    PUBLISHER_LIMIT_TYPE_ID: "pub-lmt",
    SENDER_POSITION_TYPE_ID: "snd-pos",
    RECEIVER_HWM_TYPE_ID: "rcv-hwm",
    SUBSCRIBER_POSITION_TYPE_ID: "sub-pos",
    RECEIVER_POS_TYPE_ID: "rcv-pos",
    SENDER_LIMIT_TYPE_ID: "snd-lmt",
    PUBLISHER_POS_TYPE_ID: "pub-pos (sample)",
}


def group_streams(counters: Iterable[CounterInfo]) -> dict[tuple[int, int, str], list[CounterInfo]]:
    streams: dict[tuple[int, int, str], list[CounterInfo]] = {}
    for c in counters:
        key = c.stream_key
        if key is not None:
            streams.setdefault(key, []).append(c)
    return streams


def stream_lines(counters: Iterable[CounterInfo]) -> list[str]:
    lines = []
    for (session_id, stream_id, channel), positions in group_streams(counters).items():
        lines.append(
            f"sessionId={session_id} streamId={stream_id} channel={printable(channel)} :"
            + "".join(
                f" {LABEL_NAMES.get(p.type_id, '<unknown>')}:{p.registration_id}:{p.value}" for p in positions
            )
        )
    return lines


def render_streams(cnc_path: Path, counters: Iterable[CounterInfo]) -> str:
    """StreamStat's whole output: the cnc.dat line, then one line per stream."""
    return "\n".join([f"Command `n Control file {cnc_path}", *stream_lines(counters)])
