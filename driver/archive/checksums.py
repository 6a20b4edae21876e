"""The checksum sidecar ``<recordingId>.crc`` (docs/archive.md section 19): a CRC32C of every recorded frame,
which 1.15.1's frames have no room for. The recorder appends one entry per frame after the frame is in its
segment file; ``verify --checksums`` compares the segments with it; start-up recovery after a crash uses it to
end the recording at the last frame whose checksum holds (a torn tail); replays may check frames against it.

::

    0   header: magic u32 0x43524341 ("ACRC"), version i32 1, entry length i32 16, reserved i32
    16  entries, in position order: position i64, frame length i32, crc32c u32

The CRC covers the frame's ``frame length`` bytes, header included, and of a padding frame only its 32-byte
header (all a segment keeps of one). 1.15.1's tools read only the catalog and ``*.rec``, so they ignore the file.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from driver.archive.recording_writer import RecordingWriteError
from driver.archive.segment_file import FRAME_ALIGNMENT, segment_path, segment_position
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.frame_checksums import ENTRY_DTYPE, frame_checksums
from driver.util.bit_util import align
from driver.util.files import FilePermissions

CHECKSUM_MAGIC = 0x43524341
CHECKSUM_VERSION = 1
HEADER = struct.Struct("<Iiii")
ENTRY_LENGTH = ENTRY_DTYPE.itemsize
SUFFIX = ".crc"
_CHUNK = 8 * 1024 * 1024  # bytes of segment checked per native call
_RECOVERY_LOOKBACK = 4096  # frames tried, from the end back, for one whose checksum holds


def checksum_path(archive_dir: str | os.PathLike[str], recording_id: int) -> Path:
    return Path(archive_dir) / f"{recording_id}{SUFFIX}"


class ChecksumWriter:
    """Appends the entries of each recorded block; an extension continues the file (entries at or past the join
    position, left by a truncation, are dropped first)."""

    def __init__(self, archive_dir: Path, recording_id: int, permissions: FilePermissions) -> None:
        self.path = checksum_path(archive_dir, recording_id)
        self.permissions = permissions
        self._fd = -1
        self._out = np.empty(0, ENTRY_DTYPE)

    def init(self, join_position: int) -> None:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.permissions.file_mode)
        size = os.fstat(self._fd).st_size
        if size < HEADER.size:
            os.ftruncate(self._fd, 0)
            os.write(self._fd, HEADER.pack(CHECKSUM_MAGIC, CHECKSUM_VERSION, ENTRY_LENGTH, 0))
        else:
            os.ftruncate(self._fd, _length_below(self.path, join_position))
        os.lseek(self._fd, 0, os.SEEK_END)

    def on_block(self, term_buffer: AtomicBuffer, term_offset: int, length: int, position: int) -> None:
        capacity = max(length // FRAME_ALIGNMENT, 1)
        if len(self._out) < capacity:
            self._out = np.empty(capacity, ENTRY_DTYPE)
        entries = frame_checksums(term_buffer.view, position, term_offset, length, self._out)
        count = len(entries)
        try:
            os.write(self._fd, entries.data.cast("B"))
        except OSError as e:  # the recording stops as at a failed segment write, naming the file
            raise RecordingWriteError(
                e.errno, f"write of {count} checksums to {self.path} failed: {e.strerror or e}"
            ) from e

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_checksums(archive_dir: str | os.PathLike[str], recording_id: int) -> np.ndarray | None:
    """The entries (a copy), or None when the recording has no checksum file or it is not one."""
    path = checksum_path(archive_dir, recording_id)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) < HEADER.size:
        return None
    magic, version, entry_length, _ = HEADER.unpack_from(data)
    if (magic, version, entry_length) != (CHECKSUM_MAGIC, CHECKSUM_VERSION, ENTRY_LENGTH):
        return None
    body = data[HEADER.size :]
    return np.frombuffer(body[: len(body) - len(body) % ENTRY_LENGTH], ENTRY_DTYPE).copy()


def _length_below(path: Path, position: int) -> int:
    """File length that keeps only the entries of frames starting below ``position``."""
    entries = read_checksums(path.parent, int(path.name.removesuffix(SUFFIX)))
    if entries is None:
        return HEADER.size
    kept = int(np.searchsorted(entries["position"], position, side="left"))
    return HEADER.size + kept * ENTRY_LENGTH


def truncate_checksums(archive_dir: str | os.PathLike[str], recording_id: int, position: int) -> None:
    """A truncated recording keeps the entries of the frames below ``position`` only."""
    path = checksum_path(archive_dir, recording_id)
    if path.exists():
        os.truncate(path, _length_below(path, position))


class _Segments:
    """Read-only maps of one recording's segment files, opened as needed."""

    def __init__(self, archive_dir: Path, d: Any) -> None:
        self.archive_dir, self.d = archive_dir, d
        self._maps: dict[int, mmap.mmap | None] = {}

    def segment(self, position: int) -> tuple[mmap.mmap | None, int]:
        d = self.d
        index, offset = segment_position(
            d.start_position, position, d.term_buffer_length, d.segment_file_length
        )
        if index not in self._maps:
            try:
                with open(segment_path(self.archive_dir, d.recording_id, index), "rb") as f:
                    self._maps[index] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                self._maps[index] = None
        return self._maps[index], offset

    def close(self) -> None:
        for mapping in self._maps.values():
            if mapping is not None:
                mapping.close()


def verify_checksums(archive_dir: str | os.PathLike[str], d: Any, stop: int) -> str | None:
    """The first frame in [start, stop) whose bytes do not match its checksum (naming its position), a frame
    without one, or None when all hold. ``d`` is the recording's descriptor."""
    entries = read_checksums(archive_dir, d.recording_id)
    if entries is None:
        return f"no checksum file {checksum_path(archive_dir, d.recording_id).name}"
    entries = entries[(entries["position"] >= d.start_position) & (entries["position"] < stop)]
    if len(entries) == 0:
        return None if stop <= d.start_position else f"no checksums below the stop position {stop}"
    segments = _Segments(Path(archive_dir), d)
    segment_length = d.segment_file_length
    try:
        # An extension of a recording made without checksums (by 1.15.1, or with them off) has them from its
        # join position on.
        position = int(entries["position"][0])
        checked = 0
        while position < stop:
            mapping, offset = segments.segment(position)
            if mapping is None:
                return f"position {position}: segment file missing"
            length = min(_CHUNK, segment_length - offset, stop - position, len(mapping) - offset)
            computed = frame_checksums(mapping, position, offset, length)
            expected = entries[checked : checked + len(computed)]
            if len(computed) == 0:
                return f"position {position}: no whole frame where the recording has one"
            if len(expected) < len(computed):
                missing = computed[len(expected)]
                return f"position {int(missing['position'])}: frame has no checksum"
            differs = np.flatnonzero(computed != expected)
            if len(differs):
                bad = expected[differs[0]]
                return (
                    f"checksum mismatch at position {int(bad['position'])} "
                    f"(frame of {int(bad['length'])} bytes)"
                )
            checked += len(computed)
            last = computed[-1]
            position = int(last["position"]) + align(int(last["length"]), FRAME_ALIGNMENT)
        if checked < len(entries):
            return f"position {int(entries[checked]['position'])}: checksum of a frame past the recorded end"
        return None
    finally:
        segments.close()


def last_good_position(archive_dir: str | os.PathLike[str], d: Any, scan_stop: int) -> int | None:
    """Start-up recovery: where the recording ends by its checksums, at most ``scan_stop`` (what the segment scan
    found): the end of the last frame whose checksum holds. None when it has no checksums."""
    entries = read_checksums(archive_dir, d.recording_id)
    if entries is None:
        return None
    ends = entries["position"] + (
        (entries["length"].astype(np.int64) + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT
    )
    candidates = np.flatnonzero((entries["position"] >= d.start_position) & (ends <= scan_stop))
    if len(candidates) == 0:
        return d.start_position
    segments = _Segments(Path(archive_dir), d)
    try:
        for i in candidates[::-1][:_RECOVERY_LOOKBACK]:
            entry = entries[i]
            mapping, offset = segments.segment(int(entry["position"]))
            if mapping is None:
                continue
            computed = frame_checksums(
                mapping, int(entry["position"]), offset, min(len(mapping) - offset, 1 << 16)
            )
            if len(computed) and computed[0] == entry:
                return int(ends[i])
        return int(entries[candidates[max(len(candidates) - _RECOVERY_LOOKBACK, 0)]]["position"])
    finally:
        segments.close()


class ReplayChecker:
    """A replay's check of each block it read against the checksums (``aeron.archive.replay.checksums``). A live
    recording's frames may be read before the recorder has appended their checksums: the file is read again
    then, and frames still without one pass unchecked."""

    def __init__(self, archive_dir: Path, recording_id: int) -> None:
        self.archive_dir, self.recording_id = archive_dir, recording_id
        self._entries = self._load()

    def _load(self) -> np.ndarray:
        entries = read_checksums(self.archive_dir, self.recording_id)
        return entries if entries is not None else np.empty(0, ENTRY_DTYPE)

    def check(self, data: Any, position: int, length: int) -> str | None:
        """None, or what is wrong with the first frame of ``data[:length]`` (at ``position``) that does not match."""
        computed = frame_checksums(data, position, 0, length)
        if len(computed) == 0:
            return None
        first = int(np.searchsorted(self._entries["position"], position))
        expected = self._entries[first : first + len(computed)]
        if len(expected) < len(computed):
            self._entries = self._load()
            expected = self._entries[first : first + len(computed)]
        count = len(expected)
        differs = np.flatnonzero(computed[:count] != expected)
        if len(differs) == 0:
            return None
        bad = computed[differs[0]]
        return f"checksum mismatch at position {int(bad['position'])} (frame of {int(bad['length'])} bytes)"
