"""The checksum sidecar ``<recordingId>.crc`` (docs/archive.md section 19): a CRC32C of every recorded block of
frames, which 1.15.1's frames have no room for. The recorder appends one entry per block after the block is in
its segment file; ``verify --checksums`` compares the segments with it; start-up recovery after a crash uses it
to end the recording at the last block whose checksum holds (a torn tail); replays may check blocks against it.

::

    0   header: magic u32 0x43524341 ("ACRC"), version i32 2, entry length i32 16, reserved i32
    16  entries, in position order: position i64, length i32, crc32c u32

An entry covers a run of whole frames starting at its position: its ``length`` bytes, headers included, and of a
padding frame (always a run of its own) only its 32-byte header (all a segment keeps of one). Version 1 files
have one entry per frame (a run of one frame, its length unaligned) and are read the same way; extending one
makes it version 2. 1.15.1's tools read only the catalog and ``*.rec``, so they ignore the file.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from driver.archive.recording_writer import RecordingWriteError
from driver.archive.segment_file import FRAME_ALIGNMENT, segment_base_position, segment_path, segment_position
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.frame_checksums import ENTRY_DTYPE, first_mismatch, run_checksum
from driver.util.files import FilePermissions

CHECKSUM_MAGIC = 0x43524341
CHECKSUM_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: an entry per frame; 2: an entry per recorded block
HEADER = struct.Struct("<Iiii")
ENTRY = struct.Struct("<qiI")
ENTRY_LENGTH = ENTRY_DTYPE.itemsize
SUFFIX = ".crc"
_RECOVERY_LOOKBACK = 4096  # entries tried, from the end back, for one whose checksum holds


def checksum_path(archive_dir: str | os.PathLike[str], recording_id: int) -> Path:
    return Path(archive_dir) / f"{recording_id}{SUFFIX}"


class ChecksumWriter:
    """Appends the entries of each recorded block; an extension continues the file (entries at or past the join
    position, left by a truncation, are dropped first)."""

    def __init__(self, archive_dir: Path, recording_id: int, permissions: FilePermissions) -> None:
        self.path = checksum_path(archive_dir, recording_id)
        self.permissions = permissions
        self._fd = -1

    def init(self, join_position: int) -> None:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.permissions.file_mode)
        size = os.fstat(self._fd).st_size
        header = HEADER.pack(CHECKSUM_MAGIC, CHECKSUM_VERSION, ENTRY_LENGTH, 0)
        if size < HEADER.size:
            os.ftruncate(self._fd, 0)
        else:  # a version 1 file's entries are runs of one frame: its extension continues as version 2
            os.ftruncate(self._fd, _length_below(self.path, join_position))
        os.pwrite(self._fd, header, 0)
        os.lseek(self._fd, 0, os.SEEK_END)

    def on_block(self, term_buffer: AtomicBuffer, term_offset: int, length: int, position: int) -> None:
        """One entry for the block (one native CRC over it), after the block is in its segment file."""
        entry = ENTRY.pack(position, length, run_checksum(term_buffer.view, term_offset, length))
        try:
            os.write(self._fd, entry)
        except OSError as e:  # the recording stops as at a failed segment write, naming the file
            raise RecordingWriteError(
                e.errno,
                f"write of the checksum of {length} bytes at {position} to {self.path} failed: "
                f"{e.strerror or e}",
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
    if magic != CHECKSUM_MAGIC or version not in READABLE_VERSIONS or entry_length != ENTRY_LENGTH:
        return None
    body = data[HEADER.size :]
    return np.frombuffer(body[: len(body) - len(body) % ENTRY_LENGTH], ENTRY_DTYPE).copy()


def _length_below(path: Path, position: int) -> int:
    """File length that keeps only the entries of runs starting below ``position`` (a truncation or an
    extension is always at a frame boundary, and one inside a run keeps none of it)."""
    entries = read_checksums(path.parent, int(path.name.removesuffix(SUFFIX)))
    if entries is None:
        return HEADER.size
    ends = entries["position"] + _aligned(entries["length"])
    kept = int(np.searchsorted(ends, position, side="right"))
    return HEADER.size + kept * ENTRY_LENGTH


def _aligned(lengths: np.ndarray) -> np.ndarray:
    return (lengths.astype(np.int64) + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT


def truncate_checksums(
    archive_dir: str | os.PathLike[str], recording_id: int, position: int, d: Any = None
) -> None:
    """A truncated recording keeps the entries of the runs below ``position`` only; a run that ``position``
    cuts (a truncation inside a recorded block) is checksummed again up to it from the segment file, when the
    descriptor ``d`` is given to find it."""
    path = checksum_path(archive_dir, recording_id)
    if not path.exists():
        return
    entries = read_checksums(archive_dir, recording_id)
    length = _length_below(path, position)
    os.truncate(path, length)
    kept = (length - HEADER.size) // ENTRY_LENGTH
    if d is None or entries is None or kept >= len(entries):
        return
    start = int(entries[kept]["position"])
    if not start < position:
        return
    segments = _Segments(Path(archive_dir), d)
    try:
        mapping, offset = segments.segment(start)
        if mapping is None or offset + position - start > len(mapping):
            return
        crc = run_checksum(mapping, offset, position - start)
    finally:
        segments.close()
    with open(path, "ab") as f:
        f.write(ENTRY.pack(start, position - start, crc))


class _Segments:
    """Read-only maps of one recording's segment files, opened as needed."""

    def __init__(self, archive_dir: Path, d: Any) -> None:
        self.archive_dir, self.d = archive_dir, d
        self._maps: dict[int, mmap.mmap | None] = {}

    def index_of(self, position: int) -> tuple[int, int]:
        d = self.d
        return segment_position(d.start_position, position, d.term_buffer_length, d.segment_file_length)

    def segment(self, position: int) -> tuple[mmap.mmap | None, int]:
        index, offset = self.index_of(position)
        if index not in self._maps:
            try:
                with open(segment_path(self.archive_dir, self.d.recording_id, index), "rb") as f:
                    self._maps[index] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                self._maps[index] = None
        return self._maps[index], offset

    def close(self) -> None:
        for mapping in self._maps.values():
            if mapping is not None:
                mapping.close()


def _mismatch(entry: Any) -> str:
    return f"checksum mismatch at position {int(entry['position'])} ({_run(entry)})"


def _run(entry: Any) -> str:
    return f"a run of {int(entry['length'])} bytes"


def verify_checksums(archive_dir: str | os.PathLike[str], d: Any, stop: int) -> str | None:
    """The first run of frames in [start, stop) whose bytes do not match its checksum (naming its position),
    frames without one, or None when all hold. ``d`` is the recording's descriptor."""
    entries = read_checksums(archive_dir, d.recording_id)
    if entries is None:
        return f"no checksum file {checksum_path(archive_dir, d.recording_id).name}"
    entries = entries[(entries["position"] >= d.start_position) & (entries["position"] < stop)]
    if len(entries) == 0:
        return None if stop <= d.start_position else f"no checksums below the stop position {stop}"
    # An extension of a recording made without checksums (by 1.15.1, or with them off) has them from its join
    # position on.
    positions = entries["position"]
    ends = positions + _aligned(entries["length"])
    gaps = np.flatnonzero(positions[1:] != ends[:-1])
    if len(gaps):
        return f"position {int(ends[gaps[0]])}: frames without a checksum"
    if int(ends[-1]) > stop:
        return f"position {int(positions[-1])}: checksum of a run past the recorded end {stop}"
    segments = _Segments(Path(archive_dir), d)
    try:
        indexes = np.array([segments.index_of(int(p))[0] for p in positions[[0, -1]]])
        first = 0
        for index in range(int(indexes[0]), int(indexes[-1]) + 1):
            base = segment_base_position(d.start_position, index, d.term_buffer_length, d.segment_file_length)
            last = int(np.searchsorted(positions, base + d.segment_file_length, side="left"))
            if last == first:
                continue
            mapping, _ = segments.segment(int(positions[first]))
            if mapping is None:
                return f"position {int(positions[first])}: segment file missing"
            bad = first + first_mismatch(mapping, base, entries[first:last])
            if bad < last:
                return _mismatch(entries[bad])
            first = last
        if int(ends[-1]) < stop:
            return f"position {int(ends[-1])}: frames without a checksum"
        return None
    finally:
        segments.close()


def last_good_position(archive_dir: str | os.PathLike[str], d: Any, scan_stop: int) -> int | None:
    """Start-up recovery: where the recording ends by its checksums, at most ``scan_stop`` (what the segment scan
    found): the end of the last run whose checksum holds. None when it has no checksums."""
    entries = read_checksums(archive_dir, d.recording_id)
    if entries is None:
        return None
    ends = entries["position"] + _aligned(entries["length"])
    candidates = np.flatnonzero((entries["position"] >= d.start_position) & (ends <= scan_stop))
    if len(candidates) == 0:
        return d.start_position
    segments = _Segments(Path(archive_dir), d)
    try:
        for i in candidates[::-1][:_RECOVERY_LOOKBACK]:
            mapping, offset = segments.segment(int(entries[i]["position"]))
            if (
                mapping is not None
                and first_mismatch(mapping, int(entries[i]["position"]) - offset, entries[i : i + 1]) == 1
            ):
                return int(ends[i])
        return int(entries[candidates[max(len(candidates) - _RECOVERY_LOOKBACK, 0)]]["position"])
    finally:
        segments.close()


class ReplayChecker:
    """A replay's check of each block it read against the checksums (``aeron.archive.replay.checksums``): every
    run the block reaches into is checked once, before any of it is sent; one the block holds only part of is
    checked whole from its segment file. A live recording's runs may be read before the recorder has appended
    their checksums: the file is read again then, and runs still without one pass unchecked."""

    def __init__(self, archive_dir: Path, summary: Any) -> None:
        self.archive_dir, self.recording_id = archive_dir, summary.recording_id
        self._segments = _Segments(archive_dir, summary)
        self._entries = self._load()
        self._checked_to = -1  # runs ending at or below this were checked

    def _load(self) -> np.ndarray:
        entries = read_checksums(self.archive_dir, self.recording_id)
        if entries is None:
            entries = np.empty(0, ENTRY_DTYPE)
        self._ends = entries["position"] + _aligned(entries["length"])
        return entries

    def check(self, data: Any, position: int, length: int) -> str | None:
        """None, or what is wrong with the first run in ``data[:length]`` (at ``position``) that does not match."""
        end = position + length
        if len(self._entries) == 0 or int(self._ends[-1]) < end:
            self._entries = self._load()
        entries, ends = self._entries, self._ends
        low = int(np.searchsorted(ends, max(position, self._checked_to), side="right"))
        high = int(np.searchsorted(entries["position"], end, side="left"))
        if low >= high:
            return None
        inside_low = low if int(entries[low]["position"]) >= position else low + 1
        inside_high = max(int(np.searchsorted(ends, end, side="right")), inside_low)
        for i in (low, high - 1):  # the runs the block holds only part of
            if (i < inside_low or i >= inside_high) and not self._check_from_file(entries[i : i + 1]):
                return _mismatch(entries[i])
        if inside_high > inside_low:
            view = memoryview(data)[:length]
            bad = inside_low + first_mismatch(view, position, entries[inside_low:inside_high])
            if bad < inside_high:
                return _mismatch(entries[bad])
        self._checked_to = int(ends[high - 1])
        return None

    def _check_from_file(self, entry: np.ndarray) -> bool:
        mapping, offset = self._segments.segment(int(entry["position"][0]))
        return mapping is not None and first_mismatch(mapping, int(entry["position"][0]) - offset, entry) == 1

    def close(self) -> None:
        self._segments.close()
