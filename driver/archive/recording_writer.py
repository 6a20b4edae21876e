"""RecordingWriter: puts the blocks of one recording into its segment files, laid out as 1.15.1's writer lays
them out (docs/archive.md section 7): position p at offset ``segment_position(start, p)``, one ``pwrite`` per
block straight from the mapped term, only the 32-byte header of a padding frame, a new segment file at each
segment end, reserved in full when it is created so that a full disk stops the recording there, at a frame
boundary (docs/archive.md section 15). A write that fails raises ``RecordingWriteError`` and leaves the position
where it was, so nothing is counted as recorded that is not on disk.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from driver.archive.segment_file import (
    SegmentReserver,
    reserve_segment_file,
    segment_path,
    segment_position,
    staged_segment_path,
)
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.frame_descriptor import HDR_TYPE_PAD, HEADER_LENGTH, TYPE_OFFSET
from driver.util.files import FilePermissions

_U16 = struct.Struct("<H")

SYNC_NONE = 0
SYNC_DATA = 1
SYNC_DATA_AND_METADATA = 2

PWrite = Callable[[int, memoryview, int], int]


class RecordingWriteError(OSError):
    """A block could not be written whole; the message names the segment file and what the OS said."""


class RecordingWriter:
    def __init__(
        self,
        archive_dir: str | os.PathLike[str],
        recording_id: int,
        start_position: int,
        term_length: int,
        segment_length: int,
        file_sync_level: int = SYNC_NONE,
        pwrite: PWrite = os.pwrite,
        permissions: FilePermissions | None = None,
        reserver: SegmentReserver | None = None,
    ) -> None:
        self.archive_dir = Path(archive_dir)
        self.recording_id = recording_id
        self.start_position = start_position
        self.term_length = term_length
        self.segment_length = segment_length
        self.file_sync_level = file_sync_level
        self._pwrite = pwrite
        self.permissions = permissions or FilePermissions()
        self._fd = -1
        self._segment_index = -1
        self._segment_offset = 0
        self.position = 0
        self._reserver = reserver
        self._next: Future[int] | None = None  # the next segment, reserved ahead when there is a reserver
        self._next_index = -1
        self._reserve_at = segment_length // 2

    def init(self, position: int) -> None:
        """Open the segment that ``position`` (the join position) falls in (nothing if already open there)."""
        if self._fd >= 0 and self.position == position:
            return
        self.position = position
        index, offset = segment_position(self.start_position, position, self.term_length, self.segment_length)
        self._open(index)
        self._segment_offset = offset

    def _open(self, index: int) -> None:
        self.close()
        path = segment_path(self.archive_dir, self.recording_id, index)
        try:
            self._fd = self._take_reserved(index, path)
            if self._fd < 0:
                self._fd = reserve_segment_file(path, self.segment_length, self.permissions)
            if self.file_sync_level >= SYNC_DATA_AND_METADATA:
                dir_fd = os.open(self.archive_dir, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        except OSError as e:
            raise RecordingWriteError(
                e.errno,
                f"recording {self.recording_id}: cannot create segment file {path} of {self.segment_length} "
                f"bytes: {e.strerror or e}",
            ) from e
        self._segment_index = index

    def _take_reserved(self, index: int, path: Path) -> int:
        """The staged segment reserved ahead, renamed into place; -1 when there is none (or it failed: the
        caller then reserves it inline, so the error, if it persists, is the inline one)."""
        future, self._next = self._next, None
        if future is None or self._next_index != index:
            if future is not None:
                SegmentReserver.discard(
                    segment_path(self.archive_dir, self.recording_id, self._next_index), future
                )
            return -1
        try:
            fd = future.result()
        except OSError:
            return -1
        if path.exists():  # kept as it is: an extension may already have this segment
            os.close(fd)
            os.unlink(staged_segment_path(path))
            return -1
        try:
            os.rename(staged_segment_path(path), path)
        except OSError:
            os.close(fd)
            raise
        return fd

    def _reserve_next(self) -> None:
        index = self._segment_index + 1
        path = segment_path(self.archive_dir, self.recording_id, index)
        self._next_index = index
        if path.exists():
            self._next = None
            return
        assert self._reserver is not None
        self._next = self._reserver.submit(path, self.segment_length, self.permissions)

    @property
    def segment_file(self) -> Path:
        return segment_path(self.archive_dir, self.recording_id, self._segment_index)

    def on_block(
        self, term_buffer: AtomicBuffer, term_offset: int, length: int, _session_id: int, _term_id: int
    ) -> None:
        """BlockHandler: one write of the block (of only the header when it is a padding frame)."""
        if self._segment_offset >= self.segment_length:
            # Roll over before writing: a segment that cannot be opened fails this block, not the last one.
            self._open(self._segment_index + 1)
            self._segment_offset = 0
        view = term_buffer.view
        is_padding = _U16.unpack_from(view, term_offset + TYPE_OFFSET)[0] == HDR_TYPE_PAD
        write_length = HEADER_LENGTH if is_padding else length
        offset = self._segment_offset
        try:
            written = self._pwrite(self._fd, view[term_offset : term_offset + write_length], offset)
            if written != write_length:
                raise OSError(28, f"short write: {written} of {write_length} bytes")
            if self.file_sync_level >= SYNC_DATA_AND_METADATA:
                os.fsync(self._fd)
            elif self.file_sync_level >= SYNC_DATA:
                os.fdatasync(self._fd)
        except OSError as e:
            raise RecordingWriteError(
                e.errno,
                f"recording {self.recording_id}: write of {write_length} bytes at offset {offset} of "
                f"{self.segment_file} failed: {e.strerror or e}",
            ) from e
        self.position += length
        self._segment_offset = offset + length
        if (
            self._reserver is not None
            and self._segment_offset >= self._reserve_at
            and self._next_index <= self._segment_index
        ):
            self._reserve_next()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def discard_reserved(self) -> None:
        """Drops the segment reserved ahead (the recording stopped before it)."""
        future, self._next = self._next, None
        if future is not None:
            SegmentReserver.discard(
                segment_path(self.archive_dir, self.recording_id, self._next_index), future
            )
