"""The sparse sidecar index of a recording (docs/archive.md section 18): ``<recordingId>.idx`` beside the segment
files, which 1.15.1 tools never read. A 16-byte header (magic, version, entry length) and then entries of
(position i64, recorder time epoch ns i64, message count i64), appended by the recorder every ``interval_bytes`` or
``interval_ns``, before a block that follows an idle gap, and at the stop. An entry says: the recording reached
``position`` (a frame boundary) at ``time``, and ``count`` messages (unfragmented or BEGIN_FRAG DATA frames) start
below it. An index rebuilt by a scan of the segments has no times (-1). Lookups read the mapped file with numpy.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from driver.archive.segment_file import segment_path, segment_position
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    FRAME_ALIGNMENT,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
)
from driver.util.files import FilePermissions

INDEX_MAGIC = 0x58444941  # "AIDX" little-endian
INDEX_VERSION = 1
HEADER = struct.Struct("<iiii")  # magic, version, entry length, reserved
ENTRY = struct.Struct("<qqq")  # position, time epoch ns, message count
ENTRY_DTYPE = np.dtype([("position", "<i8"), ("time_ns", "<i8"), ("count", "<i8")])
NULL_TIME = -1

_FRAME_HEAD = struct.Struct("<iBBH")  # frame length, version, flags, type (docs/wire.md)
_SCAN_CHUNK = 1 << 20


def index_path(archive_dir: Path, recording_id: int) -> Path:
    return Path(archive_dir) / f"{recording_id}.idx"


def count_messages(view: memoryview, offset: int, length: int) -> int:
    """Messages (unfragmented or BEGIN_FRAG DATA frames) that start in a block of whole frames."""
    count = 0
    end = offset + length
    unpack = _FRAME_HEAD.unpack_from
    while offset < end:
        frame_length, _, flags, frame_type = unpack(view, offset)
        if frame_length <= 0:
            break
        if frame_type == HDR_TYPE_DATA and flags & BEGIN_FLAG:
            count += 1
        offset += (frame_length + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT
    return count


class RecordingIndexWriter:
    """Appends entries as the recorder writes blocks; ``clock_ns`` is the recorder's epoch clock in ns."""

    def __init__(
        self,
        archive_dir: Path,
        recording_id: int,
        interval_bytes: int,
        interval_ns: int,
        clock_ns: Callable[[], int],
        permissions: FilePermissions | None = None,
    ) -> None:
        self.path = index_path(archive_dir, recording_id)
        self.permissions = permissions or FilePermissions()
        self.interval_bytes = interval_bytes
        self.interval_ns = interval_ns
        self._clock_ns = clock_ns
        self._fd = -1
        self.count = 0
        self._last_position = 0
        self._last_entry_position = -1
        self._last_entry_ns = 0
        self._last_block_ns = 0

    def init(self, position: int, prior_count: int = 0) -> None:
        """Open for appending at ``position`` (the join position); an extension continues the count."""
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, self.permissions.file_mode)
        self.permissions.apply_to_fd(self._fd)  # the index is ours alone: always under the archive's policy
        if prior_count == 0 or os.fstat(self._fd).st_size < HEADER.size:
            # A new recording starts a new index (whatever a file of that name held before).
            os.ftruncate(self._fd, 0)
            os.write(self._fd, HEADER.pack(INDEX_MAGIC, INDEX_VERSION, ENTRY.size, 0))
        self.count = prior_count
        self._last_position = position
        now = self._clock_ns()
        self._last_block_ns = now
        self._append(position, now)

    def _append(self, position: int, time_ns: int) -> None:
        os.write(self._fd, ENTRY.pack(position, time_ns, self.count))
        self._last_entry_position = position
        self._last_entry_ns = time_ns

    def on_block(self, term_buffer: AtomicBuffer, offset: int, length: int, messages: int = -1) -> None:
        """The block's messages are ``messages`` when the caller counted them (else one native walk here)."""
        if self._fd < 0:
            return
        now = self._clock_ns()
        if now - self._last_block_ns >= self.interval_ns:
            # An idle gap: mark when the data before it arrived and that nothing came since, so the times of
            # the block after it are not spread over the gap.
            if self._last_position != self._last_entry_position:
                self._append(self._last_position, self._last_block_ns)
            self._append(self._last_position, now)
        # One native walk of the block's frames (docs/archive.md section 18): handing frame offsets back to
        # Python cost the recorder two thirds of its time on small messages. The recorder counts in the walk
        # that finds the block.
        self.count += messages if messages >= 0 else term_buffer.count_messages(offset, offset + length)
        self._last_position += length
        self._last_block_ns = now
        if (
            self._last_position - self._last_entry_position >= self.interval_bytes
            or now - self._last_entry_ns >= self.interval_ns
        ):
            self._append(self._last_position, now)

    def close(self) -> None:
        if self._fd >= 0:
            if self._last_position != self._last_entry_position:
                self._append(self._last_position, self._last_block_ns)
            os.close(self._fd)
            self._fd = -1


def read_index(archive_dir: Path, recording_id: int) -> np.ndarray | None:
    """The index entries, mapped (None when there is no valid index file)."""
    path = index_path(archive_dir, recording_id)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            magic, version, entry_length, _ = HEADER.unpack(f.read(HEADER.size))
    except (OSError, struct.error):
        return None
    if magic != INDEX_MAGIC or version != INDEX_VERSION or entry_length != ENTRY.size:
        return None
    entries = (size - HEADER.size) // ENTRY.size
    if entries <= 0:
        return np.zeros(0, dtype=ENTRY_DTYPE)
    return np.memmap(path, dtype=ENTRY_DTYPE, mode="r", offset=HEADER.size, shape=(entries,))


class SegmentScanner:
    """Walks the frames of one recording in its segment files (laid out as docs/archive.md section 7)."""

    def __init__(
        self, archive_dir: Path, recording_id: int, start_position: int, term_length: int, segment_length: int
    ) -> None:
        self.archive_dir = Path(archive_dir)
        self.recording_id = recording_id
        self.start_position = start_position
        self.term_length = term_length
        self.segment_length = segment_length

    def frames(self, from_position: int, to_position: int) -> Iterator[tuple[int, int, int]]:
        """(position, flags, type) of each frame starting in [from, to); stops at a hole or a missing file."""
        position = from_position
        term_length = self.term_length
        while position < to_position:
            index, offset = segment_position(self.start_position, position, term_length, self.segment_length)
            length = min(to_position - position, term_length - (position & (term_length - 1)), _SCAN_CHUNK)
            try:
                with open(segment_path(self.archive_dir, self.recording_id, index), "rb") as f:
                    raw = os.pread(f.fileno(), length, offset)
            except OSError:
                return
            frame_offset = 0
            while frame_offset + 8 <= len(raw):
                frame_length, _, flags, frame_type = _FRAME_HEAD.unpack_from(raw, frame_offset)
                if frame_length <= 0 or frame_type not in (HDR_TYPE_DATA, HDR_TYPE_PAD):
                    return
                aligned = (frame_length + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT
                if frame_type == HDR_TYPE_DATA and frame_offset + aligned > len(raw):
                    break  # the frame continues past this read: read again from it
                yield position + frame_offset, flags, frame_type
                frame_offset += aligned
            if frame_offset == 0:
                return
            position += frame_offset

    def rebuild(
        self, stop_position: int, interval_bytes: int, permissions: FilePermissions | None = None
    ) -> None:
        """Write a fresh index by counting messages (no times: a scan cannot know them)."""
        permissions = permissions or FilePermissions()
        path = index_path(self.archive_dir, self.recording_id)
        tmp = path.with_suffix(".idx.tmp")
        count = 0
        last = self.start_position
        end = self.start_position
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, permissions.file_mode)
        permissions.apply_to_fd(fd)
        with open(fd, "wb") as f:
            f.write(HEADER.pack(INDEX_MAGIC, INDEX_VERSION, ENTRY.size, 0))
            f.write(ENTRY.pack(last, NULL_TIME, 0))
            for position, flags, frame_type in self.frames(self.start_position, stop_position):
                if position - last >= interval_bytes:
                    f.write(ENTRY.pack(position, NULL_TIME, count))
                    last = position
                if frame_type == HDR_TYPE_DATA and flags & BEGIN_FLAG:
                    count += 1
                end = position
            if end != last or stop_position != last:
                f.write(ENTRY.pack(stop_position, NULL_TIME, count))
        os.replace(tmp, path)


class LookupError_(ValueError):
    """A lookup the index cannot answer (the message is the archive's error text)."""


def position_at_time(entries: np.ndarray, time_ns: int) -> int:
    """Start of the index interval in which the first message recorded at or after ``time_ns`` lies."""
    times = np.asarray(entries["time_ns"])
    if len(times) == 0 or times[0] == NULL_TIME:
        raise LookupError_("recording has no recorded times (index rebuilt by a scan)")
    k = int(np.searchsorted(times, time_ns, side="left"))
    if k >= len(times):
        return int(entries["position"][-1])
    return int(entries["position"][max(k - 1, 0)])


def position_of_last(entries: np.ndarray, scanner: SegmentScanner, n: int, bound: int) -> int:
    """The position of the first of the last ``n`` messages that start below ``bound``."""
    positions = np.asarray(entries["position"])
    counts = np.asarray(entries["count"])
    k = max(int(np.searchsorted(positions, bound, side="right")) - 1, 0)
    total = int(counts[k])
    for _, flags, frame_type in scanner.frames(int(positions[k]), bound):
        if frame_type == HDR_TYPE_DATA and flags & BEGIN_FLAG:
            total += 1
    target = total - n
    if target <= 0:
        return scanner.start_position
    j = int(np.searchsorted(counts[: k + 1], target, side="right")) - 1
    seen = int(counts[j])
    for position, flags, frame_type in scanner.frames(int(positions[j]), bound):
        if frame_type == HDR_TYPE_DATA and flags & BEGIN_FLAG:
            if seen == target:
                return position
            seen += 1
    return bound


def position_schedule(entries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(times, positions) for pacing, with entries without times dropped and times made non-decreasing."""
    times = np.asarray(entries["time_ns"], dtype=np.int64)
    positions = np.asarray(entries["position"], dtype=np.int64)
    keep = times != NULL_TIME
    times, positions = times[keep], positions[keep]
    return np.maximum.accumulate(times) if len(times) else times, positions
