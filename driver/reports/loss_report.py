"""loss-report.dat (docs/lossreport.md): created with the driver; entries are written by the conductor.

``LossReport`` is the writer (Aeron 1.15.1 ``io.aeron.driver.reports.LossReport``); ``read_loss_report`` and
``iter_loss_report`` are the reader (``LossReportReader``), made strict: an entry whose lengths run past the
buffer raises ``CorruptLossReportError`` instead of Java's IndexOutOfBoundsException. ``LossReportFile`` maps
``<dir>/loss-report.dat``. Time is passed in: nothing here reads a clock.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import SIZE_OF_INT32, SIZE_OF_INT64, align
from driver.util.files import FilePermissions, create_allocated_file

LOSS_REPORT_FILE = "loss-report.dat"

ENTRY_ALIGNMENT = 64
OBSERVATION_COUNT_OFFSET = 0
TOTAL_BYTES_LOST_OFFSET = OBSERVATION_COUNT_OFFSET + SIZE_OF_INT64
FIRST_OBSERVATION_OFFSET = TOTAL_BYTES_LOST_OFFSET + SIZE_OF_INT64
LAST_OBSERVATION_OFFSET = FIRST_OBSERVATION_OFFSET + SIZE_OF_INT64
SESSION_ID_OFFSET = LAST_OBSERVATION_OFFSET + SIZE_OF_INT64
STREAM_ID_OFFSET = SESSION_ID_OFFSET + SIZE_OF_INT32
CHANNEL_OFFSET = STREAM_ID_OFFSET + SIZE_OF_INT32
# Fixed part of an entry: the fields above plus the two string length prefixes (Java's "48 + lengths").
ENTRY_FIXED_LENGTH = CHANNEL_OFFSET + 2 * SIZE_OF_INT32

# total bytes lost .. channel length, read in one go (offsets 8..44).
_FIELDS = struct.Struct("<qqqiii")
_I32 = struct.Struct("<i")


class CorruptLossReportError(ValueError):
    """An entry of a loss report does not fit the buffer (truncated file) or has impossible fields."""

    def __init__(self, offset: int, problem: str, capacity: int) -> None:
        super().__init__(
            f"corrupt loss report entry at offset {offset}: {problem} (buffer is {capacity} bytes)"
        )
        self.offset = offset
        self.problem = problem


class LossEntry(NamedTuple):
    observation_count: int
    total_bytes_lost: int
    first_observation_ms: int
    last_observation_ms: int
    session_id: int
    stream_id: int
    channel: str
    source: str


def entry_length(channel: str, source: str) -> int:
    """Bytes an entry occupies in the buffer: fixed part plus both strings, aligned to 64."""
    return align(ENTRY_FIXED_LENGTH + len(channel) + len(source), ENTRY_ALIGNMENT)


class ReportEntry:
    """Handle on one entry (one image); ``record_observation`` is ``LossReport.ReportEntry.recordObservation``."""

    __slots__ = ("_buffer", "offset")

    def __init__(self, buffer: AtomicBuffer, offset: int) -> None:
        self._buffer = buffer
        self.offset = offset

    def record_observation(self, bytes_lost: int, timestamp_ms: int) -> None:
        # 1.15.1 order: last timestamp, then atomic adds of bytes and count, so a reader that sees count n also
        # sees the bytes and timestamp of those n observations.
        b, offset = self._buffer, self.offset
        b.put_int64_release(offset + LAST_OBSERVATION_OFFSET, timestamp_ms)
        b.get_and_add_int64(offset + TOTAL_BYTES_LOST_OFFSET, bytes_lost)
        b.get_and_add_int64(offset + OBSERVATION_COUNT_OFFSET, 1)


class LossReport:
    """Appends entries to a loss report buffer; a single writer (the conductor) as in Aeron."""

    __slots__ = ("_buffer", "_next_record_offset")

    def __init__(self, buffer: AtomicBuffer) -> None:
        self._buffer = buffer
        self._next_record_offset = 0

    @property
    def next_record_offset(self) -> int:
        return self._next_record_offset

    def create_entry(
        self,
        initial_bytes_lost: int,
        timestamp_ms: int,
        session_id: int,
        stream_id: int,
        channel: str,
        source: str,
    ) -> ReportEntry | None:
        """Write a new entry with count 1 (stored last, with release), or None when it does not fit.

        As in 1.15.1 the room check uses the unaligned length; the next entry starts at the aligned end.
        A None means loss reporting stops for that image.
        """
        channel_bytes = channel.encode("ascii", "replace")
        source_bytes = source.encode("ascii", "replace")
        required = ENTRY_FIXED_LENGTH + len(channel_bytes) + len(source_bytes)
        b, offset = self._buffer, self._next_record_offset
        if required > b.capacity - offset:
            return None
        # Every field after the count in one pack (struct caches the format per pair of string lengths).
        struct.pack_into(
            f"<qqqiii{len(channel_bytes)}si{len(source_bytes)}s",
            b.view,
            offset + TOTAL_BYTES_LOST_OFFSET,
            initial_bytes_lost,
            timestamp_ms,
            timestamp_ms,
            session_id,
            stream_id,
            len(channel_bytes),
            channel_bytes,
            len(source_bytes),
            source_bytes,
        )
        b.put_int64_release(offset + OBSERVATION_COUNT_OFFSET, 1)
        self._next_record_offset = offset + align(required, ENTRY_ALIGNMENT)
        return ReportEntry(b, offset)


def iter_loss_report(buffer: AtomicBuffer) -> Iterator[LossEntry]:
    """Entries from offset 0 until an observation count of 0 (or the end of the buffer).

    Raises ``CorruptLossReportError`` naming the offset when an entry runs past the buffer or has a negative
    count or length; the entries before it have already been yielded.
    """
    capacity = buffer.capacity
    view = buffer.view
    offset = 0
    while offset < capacity:
        if offset + SIZE_OF_INT64 > capacity:
            raise CorruptLossReportError(offset, "observation count runs past the end", capacity)
        count = buffer.get_int64_volatile(offset + OBSERVATION_COUNT_OFFSET)
        if count == 0:
            return
        if count < 0:
            raise CorruptLossReportError(offset, f"negative observation count {count}", capacity)
        if offset + ENTRY_FIXED_LENGTH > capacity:
            raise CorruptLossReportError(offset, "fixed fields run past the end", capacity)
        total, first, last, session_id, stream_id, channel_length = _FIELDS.unpack_from(
            view, offset + TOTAL_BYTES_LOST_OFFSET
        )
        at = offset + CHANNEL_OFFSET + SIZE_OF_INT32
        if channel_length < 0 or at + channel_length + SIZE_OF_INT32 > capacity:
            raise CorruptLossReportError(
                offset, f"channel length {channel_length} runs past the end", capacity
            )
        channel = bytes(view[at : at + channel_length]).decode("ascii", "replace")
        at += channel_length
        source_length = _I32.unpack_from(view, at)[0]
        at += SIZE_OF_INT32
        if source_length < 0 or at + source_length > capacity:
            raise CorruptLossReportError(offset, f"source length {source_length} runs past the end", capacity)
        source = bytes(view[at : at + source_length]).decode("ascii", "replace")
        yield LossEntry(count, total, first, last, session_id, stream_id, channel, source)
        offset += align(ENTRY_FIXED_LENGTH + channel_length + source_length, ENTRY_ALIGNMENT)


def read_loss_report(buffer: AtomicBuffer, consumer: Callable[[LossEntry], object]) -> int:
    """``LossReportReader.read``: call ``consumer`` per entry and return how many were read."""
    read = 0
    for entry in iter_loss_report(buffer):
        consumer(entry)
        read += 1
    return read


def create_loss_report_file(
    directory: Path, buffer_length: int, page_size: int, permissions: FilePermissions | None = None
) -> Path:
    """Allocated in full now (FileAllocationError if it cannot be): entries are appended while the driver
    runs, and a page the file system could not back then would fault the receiver."""
    path = directory / LOSS_REPORT_FILE
    os.close(create_allocated_file(path, align(buffer_length, page_size), permissions or FilePermissions()))
    return path


class LossReportFile:
    """A mapping of an existing loss-report.dat (read-only unless ``writable``), with its ``AtomicBuffer``."""

    def __init__(self, path: Path, mapping: mmap.mmap | None, writable: bool) -> None:
        self.path = path
        self.writable = writable
        self._mmap = mapping
        # An empty file cannot be mapped: it reads as an empty buffer.
        self.buffer: AtomicBuffer | None = AtomicBuffer(mapping if mapping is not None else bytearray())

    @staticmethod
    def path_for(location: Path | str) -> Path:
        """``location`` itself if it is a file (or names a .dat file), else ``<location>/loss-report.dat``."""
        location = Path(location)
        if location.is_file() or (not location.is_dir() and location.suffix == ".dat"):
            return location
        return location / LOSS_REPORT_FILE

    @classmethod
    def map_existing(cls, location: Path | str, writable: bool = False) -> LossReportFile:
        """Map ``<dir>/loss-report.dat`` (or the file given); raises FileNotFoundError if missing."""
        path = cls.path_for(location)
        fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            mapping = mmap.mmap(fd, size, access=access) if size else None
        finally:
            os.close(fd)
        return cls(path, mapping, writable)

    def entries(self) -> Iterator[LossEntry]:
        assert self.buffer is not None, "closed"
        return iter_loss_report(self.buffer)

    def close(self) -> None:
        if self.buffer is not None:
            self.buffer.close()
            self.buffer = None
            if self._mmap is not None:
                self._mmap.close()

    def __enter__(self) -> LossReportFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
