"""``mediadriver streams``: per-stream positions, in the format of Aeron 1.15.1's ``io.aeron.samples.StreamStat``.

One line per (session id, stream id, channel), listing each position counter of the stream as
``<name>:<registration id>:<value>`` in counter id order (StreamStat prints its streams in hash order; we print
them in order of their first counter).

The archive's ``rec-pos`` counters (type 100, docs/counters.md section 7) join the stream they record, as
``rec-pos:<recording id>:<value>``: the line with the same session and stream id, preferring the one whose
channel is the rec-pos label's (stripped) channel. A recording whose stream has no counters here (its publisher
is on another driver, say) gets a line of its own. StreamStat 1.15.1 leaves rec-pos out altogether.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from driver.concurrent.counter_types import (
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POS_TYPE_ID,
    RECEIVER_HWM_TYPE_ID,
    RECEIVER_POS_TYPE_ID,
    RECORDING_POSITION_TYPE_ID,
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
    RECORDING_POSITION_TYPE_ID: "rec-pos",
}


def group_streams(counters: Iterable[CounterInfo]) -> dict[tuple[int, int, str], list[CounterInfo]]:
    """Stream position counters by (session id, stream id, channel), with each rec-pos joined to its stream."""
    streams: dict[tuple[int, int, str], list[CounterInfo]] = {}
    recordings: list[CounterInfo] = []
    for c in counters:
        key = c.stream_key
        if key is not None:
            streams.setdefault(key, []).append(c)
        elif c.type_id == RECORDING_POSITION_TYPE_ID and c.session_id is not None and c.stream_id is not None:
            recordings.append(c)
    for rec in recordings:
        same = [k for k in streams if k[0] == rec.session_id and k[1] == rec.stream_id]
        exact = [k for k in same if k[2] == rec.channel]
        key = (exact or same or [(rec.session_id, rec.stream_id, rec.channel or "")])[0]
        streams.setdefault(key, []).append(rec)
    for positions in streams.values():
        positions.sort(key=lambda p: p.counter_id)
    return streams


def stream_lines(counters: Iterable[CounterInfo]) -> list[str]:
    lines = []
    for (session_id, stream_id, channel), positions in group_streams(counters).items():
        lines.append(
            f"sessionId={session_id} streamId={stream_id} channel={printable(channel)} :"
            + "".join(f" {LABEL_NAMES.get(p.type_id, '<unknown>')}:{_id(p)}:{p.value}" for p in positions)
        )
    return lines


def _id(c: CounterInfo) -> int | None:
    return c.recording_id if c.type_id == RECORDING_POSITION_TYPE_ID else c.registration_id


def render_streams(cnc_path: Path, counters: Iterable[CounterInfo]) -> str:
    """StreamStat's whole output: the cnc.dat line, then one line per stream."""
    return "\n".join([f"Command `n Control file {cnc_path}", *stream_lines(counters)])
