"""Decode whole loss-report.dat files into rows, one Python call per file (the Spark job's flatMap).

Self-contained (standard library only) so that the job can ship it to executors by value: workers need pyspark
but not this package. Independent of ``driver.reports.loss_report`` on purpose, so tests can check one decoder
against the other. Layout: docs/lossreport.md.
"""

from __future__ import annotations

import array
import posixpath
import struct
from typing import Any

ENTRY_ALIGNMENT = 64
FIXED_LENGTH = 48  # count, bytes, first, last (int64); session, stream, channel length, source length (int32)
LOSS_REPORT_FILE = "loss-report.dat"

# Formats, not Struct objects: Struct does not pickle, and this module may be shipped to executors by value.
ENTRY_FORMAT = "<qqqqiii"  # offsets 0..44: every fixed field up to the channel length

# Pyrolite (Spark's unpickler) knows the C type codes, not 'q': 'l' is int64 on the LP64 platforms Spark runs on.
INT64 = "l" if array.array("l").itemsize == 8 else "q"

# Row layout, in order; the job turns the two *_ms columns into timestamps. ``file_columns`` gives the same
# fields with one value for file and host and an array for each of the others.
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
        at = offset + 44
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


def file_columns(path: str, data: bytes | bytearray | memoryview) -> tuple[Any, ...] | None:
    """One file as one row of columns (``COLUMN_FIELDS``), or None when it has no entries.

    Numbers travel as ``array.array`` (int32 'i', int64 'l'), which Spark unpickles into primitive arrays;
    the job explodes them in the JVM. Far cheaper than a Python tuple per entry.
    """
    entries = decode_entries(data)
    if not entries:
        return None
    count, lost, first, last, session_id, stream_id, channel, source = zip(*entries, strict=True)
    return (
        path,
        host_of(path),
        list(channel),
        list(source),
        array.array("i", stream_id),
        array.array("i", session_id),
        array.array(INT64, count),
        array.array(INT64, lost),
        array.array(INT64, first),
        array.array(INT64, last),
    )


class SetAccumulatorParam:
    """A Spark ``AccumulatorParam`` (duck-typed) whose value is a set: retried tasks add nothing new."""

    def zero(self, value: set[Any]) -> set[Any]:
        return set()

    def addInPlace(self, value1: set[Any], value2: set[Any]) -> set[Any]:  # Spark calls it by this name
        value1 |= value2
        return value1


def decode_file_for_spark(
    item: tuple[str, bytes], skipped: Any = None, files: Any = None, entries: Any = None
) -> list[tuple[Any, ...]]:
    """flatMap over ``binaryFiles``: one row of columns for a file, or none (and ``(path, reason)`` into
    ``skipped`` when the file is truncated or corrupt)."""
    path, data = item
    try:
        columns = file_columns(path, data)
    except LossFileError as e:
        if skipped is not None:
            skipped.add({(path, str(e))})
        return []
    if files is not None:
        files.add(1)
    if columns is None:
        return []
    if entries is not None:
        entries.add(len(columns[2]))
    return [columns]
