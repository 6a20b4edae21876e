"""Decode whole loss-report.dat files into rows: the reference decoder, and the layout constants (stdlib only).

Self-contained (standard library only) so that the job can ship it to executors by value: workers need pyspark
but not this package. Independent of ``driver.reports.loss_report`` on purpose, so tests can check one decoder
against the other. Layout: docs/lossreport.md.
"""

from __future__ import annotations

import posixpath
import struct
from typing import Any

ENTRY_ALIGNMENT = 64
# The fixed fields, in file order (docs/lossreport.md): four int64, then int32 session, stream, channel length.
OBSERVATION_COUNT_OFFSET = 0
TOTAL_BYTES_LOST_OFFSET = OBSERVATION_COUNT_OFFSET + 8
FIRST_OBSERVATION_OFFSET = TOTAL_BYTES_LOST_OFFSET + 8
LAST_OBSERVATION_OFFSET = FIRST_OBSERVATION_OFFSET + 8
SESSION_ID_OFFSET = LAST_OBSERVATION_OFFSET + 8
STREAM_ID_OFFSET = SESSION_ID_OFFSET + 4
CHANNEL_LENGTH_OFFSET = STREAM_ID_OFFSET + 4
CHANNEL_OFFSET = CHANNEL_LENGTH_OFFSET + 4
FIXED_LENGTH = CHANNEL_OFFSET + 4  # with the source length, which follows the channel
LOSS_REPORT_FILE = "loss-report.dat"

# Formats, not Struct objects: Struct does not pickle, and this module may be shipped to executors by value.
ENTRY_FORMAT = "<qqqqiii"  # offsets 0..44: every fixed field up to the channel length

# Row layout, in order (``columns.SCHEMA`` too); the job turns the two *_ms columns into timestamps.
ROW_FIELDS = (
    "file",
    "host",
    "channel",
    "source",
    "stream_id",
    "session_id",
    "observation_count",
    "total_bytes_lost",
    "first_observation_ms",
    "last_observation_ms",
)


class LossFileError(ValueError):
    """A loss file that is truncated or garbled; ``offset`` is where its bad entry starts."""

    def __init__(self, offset: int, problem: str, length: int) -> None:
        super().__init__(f"entry at offset {offset}: {problem} (file is {length} bytes)")
        self.offset = offset


def host_of(path: str) -> str:
    """The driver a file came from: ``.../<host>/loss-report.dat`` -> host; ``<host>.loss-report.dat`` -> host."""
    path = path.rstrip("/")
    name = posixpath.basename(path)
    if name == LOSS_REPORT_FILE:
        return posixpath.basename(posixpath.dirname(path)) or name
    for suffix in ("." + LOSS_REPORT_FILE, "-" + LOSS_REPORT_FILE, "_" + LOSS_REPORT_FILE, ".dat"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def decode_entries(
    data: bytes | bytearray | memoryview,
) -> list[tuple[int, int, int, int, int, int, str, str]]:
    """(count, bytes lost, first ms, last ms, session, stream, channel, source) per entry, in file order.

    Stops at a zero observation count or the end; raises ``LossFileError`` when an entry runs past the end or
    has a negative count or length.
    """
    length = len(data)
    entries = []
    append = entries.append
    unpack_entry = struct.Struct(ENTRY_FORMAT).unpack_from
    unpack_i32 = struct.Struct("<i").unpack_from
    strings: dict[bytes, str] = {}  # channels and sources repeat: decode each distinct one once
    offset = 0
    while offset < length:
        if offset + 8 > length:
            raise LossFileError(offset, "observation count runs past the end", length)
        if offset + FIXED_LENGTH > length:
            if struct.unpack_from("<q", data, offset)[0] == 0:
                break
            raise LossFileError(offset, "fixed fields run past the end", length)
        count, lost, first, last, session_id, stream_id, channel_length = unpack_entry(data, offset)
        if count <= 0:
            if count == 0:
                break
            raise LossFileError(offset, f"negative observation count {count}", length)
        at = offset + CHANNEL_OFFSET
        if channel_length < 0 or at + channel_length + 4 > length:
            raise LossFileError(offset, f"channel length {channel_length} runs past the end", length)
        raw_channel = bytes(data[at : at + channel_length])
        at += channel_length
        source_length = unpack_i32(data, at)[0]
        at += 4
        if source_length < 0 or at + source_length > length:
            raise LossFileError(offset, f"source length {source_length} runs past the end", length)
        raw_source = bytes(data[at : at + source_length])
        channel = strings.get(raw_channel)
        if channel is None:
            channel = strings[raw_channel] = raw_channel.decode("ascii", "replace")
        source = strings.get(raw_source)
        if source is None:
            source = strings[raw_source] = raw_source.decode("ascii", "replace")
        append((count, lost, first, last, session_id, stream_id, channel, source))
        offset += (FIXED_LENGTH + channel_length + source_length + ENTRY_ALIGNMENT - 1) & -ENTRY_ALIGNMENT
    return entries


def file_rows(path: str, data: bytes | bytearray | memoryview) -> list[tuple[Any, ...]]:
    """Rows in ``ROW_FIELDS`` order for one file (raises ``LossFileError``)."""
    host = host_of(path)
    return [
        (path, host, channel, source, stream_id, session_id, count, lost, first, last)
        for count, lost, first, last, session_id, stream_id, channel, source in decode_entries(data)
    ]


class SetAccumulatorParam:
    """A Spark ``AccumulatorParam`` (duck-typed) whose value is a set: retried tasks add nothing new."""

    def zero(self, value: set[Any]) -> set[Any]:
        return set()

    def addInPlace(self, value1: set[Any], value2: set[Any]) -> set[Any]:  # Spark calls it by this name
        value1 |= value2
        return value1
