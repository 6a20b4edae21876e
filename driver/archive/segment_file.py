"""Segment files ``<recordingId>-<segmentIndex>.rec``: the recorded term frames, as Aeron Archive 1.15.1 writes
them (docs/archive.md sections 7 and 12).

1.15.1's writer lays a recording out from the term base of its start position: segment k holds positions
[termBase + k·L, termBase + (k+1)·L) at file offset (position - termBase) & (L - 1), the bytes before the start
position are left empty, and each file is pre-sized (sparse) to L. ``segment_position`` is that layout, and what
our archive uses for every lookup. 1.15.1's own replay/truncate lookup, ``(position - start) >> log2(L)``, agrees
with it only when the start is term aligned (docs/archive.md section 12); it is kept as
``lookup_index_1_15_1`` for the cases where the archive must answer exactly as 1.15.1 does.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from driver.concurrent.logbuffer.frame_descriptor import HDR_TYPE_PAD
from driver.util.bit_util import align, is_power_of_two
from driver.util.files import FilePermissions

RECORDING_SEGMENT_SUFFIX = ".rec"
MIN_SEGMENT_LENGTH = 64 * 1024
MAX_SEGMENT_LENGTH = 1024 * 1024 * 1024
FRAME_ALIGNMENT = 32
FRAME_HEADER_LENGTH = 32
FRAME_LENGTH_OFFSET = 0
PAGE_SIZE = 4096

_LENGTH_AND_TYPE = struct.Struct("<ixxH")  # frame length, version, flags, type
_NAME = re.compile(r"^(\d+)-(\d+)" + re.escape(RECORDING_SEGMENT_SUFFIX) + "$")


class SegmentPosition(NamedTuple):
    index: int
    offset: int


def validate_segment_length(segment_length: int) -> None:
    if not is_power_of_two(segment_length):
        raise ValueError(f"segment file length not a power of 2: {segment_length}")
    if not MIN_SEGMENT_LENGTH <= segment_length <= MAX_SEGMENT_LENGTH:
        raise ValueError(f"segment file length not in valid range: {segment_length}")


def segment_file_name(recording_id: int, segment_index: int) -> str:
    return f"{recording_id}-{segment_index}{RECORDING_SEGMENT_SUFFIX}"


def parse_segment_file_name(name: str) -> tuple[int, int] | None:
    """(recordingId, segmentIndex) of a segment file name, None for any other name."""
    match = _NAME.match(name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def term_base(position: int, term_length: int) -> int:
    """The position at which the term holding ``position`` starts."""
    return position - (position & (term_length - 1))


def segment_position(
    start_position: int, position: int, term_length: int, segment_length: int
) -> SegmentPosition:
    """Segment index and file offset at which 1.15.1's writer stores ``position`` of a recording started at
    ``start_position``."""
    relative = position - term_base(start_position, term_length)
    shift = segment_length.bit_length() - 1
    return SegmentPosition(relative >> shift, relative & (segment_length - 1))


def segment_base_position(
    start_position: int, segment_index: int, term_length: int, segment_length: int
) -> int:
    """The stream position at file offset 0 of segment ``segment_index``."""
    return term_base(start_position, term_length) + segment_index * segment_length


def lookup_index_1_15_1(start_position: int, position: int, segment_length: int) -> int:
    """1.15.1's ``Archive.segmentFileIndex``: its replay and truncate lookup, and the writer's first index for a
    join position (docs/archive.md section 12)."""
    return (position - start_position) >> (segment_length.bit_length() - 1)


def segment_indexes(archive_dir: str | os.PathLike[str], recording_id: int) -> list[int]:
    """Indexes of the recording's segment files present in ``archive_dir``, ascending."""
    found = []
    for name in os.listdir(archive_dir):
        parsed = parse_segment_file_name(name)
        if parsed is not None and parsed[0] == recording_id:
            found.append(parsed[1])
    return sorted(found)


def segment_path(archive_dir: str | os.PathLike[str], recording_id: int, segment_index: int) -> Path:
    return Path(archive_dir) / segment_file_name(recording_id, segment_index)


def create_segment_file(
    path: str | os.PathLike[str], segment_length: int, permissions: FilePermissions | None = None
) -> None:
    """Creates (or keeps) ``path`` sized to the segment length; sparse, like RandomAccessFile.setLength. A file
    this call creates gets ``permissions`` (default private: 0600) whatever the umask."""
    fd, _created = _open_segment(path, permissions or FilePermissions())
    try:
        os.ftruncate(fd, segment_length)
    finally:
        os.close(fd)


def _open_segment(path: str | os.PathLike[str], permissions: FilePermissions) -> tuple[int, bool]:
    """``path`` opened read-write, created with ``permissions`` if it was not there; (fd, created)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | os.O_EXCL, permissions.file_mode)
    except FileExistsError:
        return os.open(path, flags), False
    try:
        permissions.apply_to_fd(fd)  # exact mode and group whatever the umask (docs/archive.md section 15)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return fd, True


def reserve_segment_file(
    path: str | os.PathLike[str], segment_length: int, permissions: FilePermissions | None = None
) -> int:
    """Creates (or keeps) ``path`` sized to the segment length with every block allocated, and returns it open.

    Reserved up front with ``posix_fallocate`` (docs/archive.md section 15) so that a full file system fails
    the recording when a segment is created, at a frame boundary, instead of in the middle of a block; 1.15.1
    leaves the file sparse. A file this call creates gets ``permissions`` (default private: 0600) whatever the
    umask, and is removed again when the reservation fails."""
    fd, created = _open_segment(path, permissions or FilePermissions())
    try:
        os.posix_fallocate(fd, 0, segment_length)
    except BaseException:
        os.close(fd)
        if created:
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise
    return fd


NEXT_SEGMENT_SUFFIX = ".next"
"""A segment reserved ahead is staged as ``<recordingId>-<segmentIndex>.rec.next`` (a name no segment scan, ours
or 1.15.1's, takes for a segment) and renamed into place when the recording reaches it."""


def staged_segment_path(path: str | os.PathLike[str]) -> Path:
    return Path(str(path) + NEXT_SEGMENT_SUFFIX)


def is_staged_segment_name(name: str) -> bool:
    return name.endswith(RECORDING_SEGMENT_SUFFIX + NEXT_SEGMENT_SUFFIX)


class SegmentReserver:
    """Reserves recordings' next segment files on one background thread (docs/archive.md section 15).

    Reserving a segment (``posix_fallocate`` of the whole file) takes tens of milliseconds for the default
    segment length; done inline at each roll-over it was a quarter of the recorder's time on small messages. A
    writer asks for its next segment half way through the current one; the reservation happens under the staged
    name, so a crash before the roll-over leaves no segment file that recovery could take for the last one."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None

    def submit(self, path: Path, segment_length: int, permissions: FilePermissions) -> Future[int]:
        """The staged file of ``path`` reserved on the reserver's thread; the future holds its fd or the error."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="segment-reserver")
        return self._executor.submit(
            reserve_segment_file, staged_segment_path(path), segment_length, permissions
        )

    @staticmethod
    def discard(path: Path, future: Future[int]) -> None:
        """A staged segment no longer wanted (the recording stopped first): closed and removed once it is made,
        without waiting for it here."""

        def drop(done: Future[int]) -> None:
            if done.cancelled() or done.exception() is not None:
                return
            os.close(done.result())
            with contextlib.suppress(OSError):
                os.unlink(staged_segment_path(path))

        future.add_done_callback(drop)

    def close(self) -> None:
        """Waits for the reservations under way (their discards run as they finish)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


def recording_files(archive_dir: str | os.PathLike[str], recording_id: int) -> list[Path]:
    """Every file of a recording in ``archive_dir``: its segments (staged ones too) and its sidecars
    (``<id>.<suffix>``: the index and the checksums)."""
    found = []
    sidecar_prefix = f"{recording_id}."
    for name in os.listdir(archive_dir):
        parsed = parse_segment_file_name(name.removesuffix(NEXT_SEGMENT_SUFFIX))
        if (parsed is not None and parsed[0] == recording_id) or name.startswith(sidecar_prefix):
            found.append(Path(archive_dir) / name)
    return sorted(found)


class SegmentDeleter:
    """Deletes purged recordings' files on one background thread: unlinking a large file takes the file system
    tens of milliseconds per GiB, which the archive's loop must not wait for (docs/archive.md section 19)."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None

    def submit(self, paths: list[Path]) -> Future[list[str]]:
        """The files deleted in order on the deleter's thread; the future holds what could not be deleted."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="segment-deleter")
        return self._executor.submit(_delete_files, paths)

    def close(self) -> None:
        """Finishes the deletions under way."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


def _delete_files(paths: list[Path]) -> list[str]:
    errors = []
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            errors.append(f"failed to delete {path}: {e.strerror or e}")
    return errors


def remove_staged_segments(archive_dir: str | os.PathLike[str]) -> list[str]:
    """Deletes the staged segments a crash left behind; their names."""
    removed = []
    for name in os.listdir(archive_dir):
        if is_staged_segment_name(name):
            with contextlib.suppress(OSError):
                os.unlink(Path(archive_dir) / name)
                removed.append(name)
    return removed


def scan_stop_offset(path: str | os.PathLike[str], from_offset: int, segment_length: int) -> int:
    """Offset just past the last complete frame of a segment, scanning frame headers from ``from_offset`` to the
    first zero length (docs/archive.md section 7).

    A write cut short by a crash (a kill inside ``pwrite``, or pages reaching the disk out of order) is cut at
    a page boundary, and the frame header, at the frame's start, is on the earlier page: the frame looks whole
    but its tail is zeros. So the last frame is dropped when its first and last bytes lie on different 4 KiB
    pages. A frame that ends exactly on a page boundary lies on one page and is kept (1.15.1 drops it, its check
    uses the next offset's page); a padding frame, of which only the header is written, is kept; a length that
    runs past the end of the file ends the scan before that frame."""
    last = next_offset = from_offset
    last_is_padding = False
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        limit = min(size, segment_length)
        while next_offset + FRAME_HEADER_LENGTH <= limit:
            frame_length, frame_type = _LENGTH_AND_TYPE.unpack(
                os.pread(f.fileno(), _LENGTH_AND_TYPE.size, next_offset + FRAME_LENGTH_OFFSET)
            )
            end = next_offset + align(frame_length, FRAME_ALIGNMENT)
            if frame_length <= 0 or end > limit:
                break
            last, last_is_padding = next_offset, frame_type == HDR_TYPE_PAD
            next_offset = end
    if next_offset == last or last_is_padding or last // PAGE_SIZE == (next_offset - 1) // PAGE_SIZE:
        return next_offset
    return last


def recover_stop_position(
    archive_dir: str | os.PathLike[str],
    recording_id: int,
    start_position: int,
    term_length: int,
    segment_length: int,
) -> int:
    """The stop position of a recording that was not stopped cleanly, from its highest segment file.

    Unlike 1.15.1 (which counts a non-aligned start's term offset twice, docs/archive.md section 12), the scan
    of the first segment starts at the start position's offset and the result is a stream position."""
    indexes = segment_indexes(archive_dir, recording_id)
    if not indexes:
        return start_position
    index = indexes[-1]
    # Segments are at least a term long (docs/archive.md section 6), so the start always falls in segment 0.
    from_offset = start_position - term_base(start_position, term_length) if index == 0 else 0
    stop_offset = scan_stop_offset(
        segment_path(archive_dir, recording_id, index), from_offset, segment_length
    )
    stop = segment_base_position(start_position, index, term_length, segment_length) + stop_offset
    return max(stop, start_position)
