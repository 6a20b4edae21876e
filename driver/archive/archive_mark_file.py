"""``archive-mark.dat``: marks a directory as an archive's, as Aeron Archive 1.15.1 lays it out
(docs/archive.md sections 11 and 12).

::

    0    MarkFileHeader body (schema 100, no message header), block 128:
         version i32 @0, activityTimestamp i64 @8, startTimestamp i64 @16, pid i64 @24,
         controlStreamId i32 @32, localControlStreamId i32 @36, eventsStreamId i32 @40
    128  controlChannel, localControlChannel, eventsChannel, aeronDirectory (uint32 length + ASCII each)

The file is ``align(128 + 16 + the four string lengths, 1024)`` bytes. The archive writes the fields, then the
activity timestamp, then the version last with release order (what readers wait on; 1.15.1's version is 0),
updates the activity timestamp as its millisecond clock moves, and leaves the file in place at stop. There is no
error buffer in 1.15.1's mark file.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from driver.archive.codecs.mark import MARK_FILE_HEADER, SCHEMA_VERSION, MarkFileHeader
from driver.archive.codecs.sbe import VAR_LENGTH_LENGTH, CodecError
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import align
from driver.util.files import FilePermissions

FILENAME = "archive-mark.dat"
ALIGNMENT = 1024
VERSION_OFFSET = MARK_FILE_HEADER.offsets["version"]
ACTIVITY_TIMESTAMP_OFFSET = MARK_FILE_HEADER.offsets["activity_timestamp"]
PID_OFFSET = MARK_FILE_HEADER.offsets["pid"]
HEADER_BLOCK_LENGTH = MARK_FILE_HEADER.block_length


class MarkFileError(Exception):
    """The mark file cannot be created or read (wrong version, too short, malformed)."""


def aligned_total_file_length(
    control_channel: str, local_control_channel: str, events_channel: str, aeron_directory: str
) -> int:
    strings = len(control_channel) + len(local_control_channel) + len(events_channel) + len(aeron_directory)
    return align(HEADER_BLOCK_LENGTH + 4 * VAR_LENGTH_LENGTH + strings, ALIGNMENT)


class ArchiveMarkFile:
    """A mapped ``archive-mark.dat``: ``create`` for the archive, ``open`` to read one (read-only)."""

    def __init__(self, path: Path, fd: int, mapping: mmap.mmap) -> None:
        self.path = path
        self._fd = fd
        self._map = mapping
        self._buffer = AtomicBuffer(mapping)
        self._closed = False

    @classmethod
    def create(
        cls,
        archive_dir: str | os.PathLike[str],
        *,
        control_channel: str,
        control_stream_id: int,
        local_control_channel: str,
        local_control_stream_id: int,
        events_channel: str,
        events_stream_id: int,
        aeron_directory: str,
        now_ms: int,
        pid: int | None = None,
        permissions: FilePermissions | None = None,
    ) -> ArchiveMarkFile:
        """Writes the header for a starting archive. An existing file is reused only if its version is 0, as
        1.15.1 does (it has no live-archive detection)."""
        path = Path(archive_dir) / FILENAME
        length = aligned_total_file_length(
            control_channel, local_control_channel, events_channel, aeron_directory
        )
        header = MarkFileHeader(
            version=SCHEMA_VERSION,
            activity_timestamp=now_ms,
            start_timestamp=now_ms,
            pid=os.getpid() if pid is None else pid,
            control_stream_id=control_stream_id,
            local_control_stream_id=local_control_stream_id,
            events_stream_id=events_stream_id,
            control_channel=control_channel,
            local_control_channel=local_control_channel,
            events_channel=events_channel,
            aeron_directory=aeron_directory,
        )
        permissions = permissions or FilePermissions()
        flags = os.O_RDWR | os.O_CREAT
        try:
            fd = os.open(path, flags | os.O_EXCL, permissions.file_mode)
            created = True
        except FileExistsError:
            fd = os.open(path, flags)
            created = False
        try:
            if created:  # exact mode and group whatever the umask (docs/archive.md section 15)
                permissions.apply_to_fd(fd)
            size = os.fstat(fd).st_size
            if size >= VERSION_OFFSET + 4:
                version = int.from_bytes(os.pread(fd, 4, VERSION_OFFSET), "little", signed=True)
                if version != SCHEMA_VERSION:
                    raise MarkFileError(
                        f"mark file version {version} does not match software:{SCHEMA_VERSION}"
                    )
            os.ftruncate(fd, 0)
            os.ftruncate(fd, length)
            mapping = mmap.mmap(fd, length)
        except BaseException:
            os.close(fd)
            raise
        mark_file = cls(path, fd, mapping)
        try:
            MARK_FILE_HEADER.encode_body_into(mark_file._buffer.view, 0, header)
        except CodecError as exc:
            mark_file.close()
            raise MarkFileError(str(exc)) from exc
        mark_file.update_activity_timestamp(now_ms)
        mark_file._buffer.put_int32_release(VERSION_OFFSET, SCHEMA_VERSION)
        return mark_file

    @classmethod
    def open(cls, archive_dir: str | os.PathLike[str]) -> ArchiveMarkFile:
        path = Path(archive_dir) / FILENAME
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_BLOCK_LENGTH + 4 * VAR_LENGTH_LENGTH:
                raise MarkFileError(f"mark file {path} is too short: {size} bytes")
            mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except BaseException:
            os.close(fd)
            raise
        mark_file = cls(path, fd, mapping)
        version = mark_file._buffer.get_int32_acquire(VERSION_OFFSET)
        if version != SCHEMA_VERSION:
            mark_file.close()
            raise MarkFileError(f"mark file version {version} does not match software:{SCHEMA_VERSION}")
        return mark_file

    def header(self) -> MarkFileHeader:
        try:
            decoded: MarkFileHeader = MARK_FILE_HEADER.decode_body(self._buffer.view, 0, HEADER_BLOCK_LENGTH)
        except CodecError as exc:
            raise MarkFileError(f"{self.path}: {exc}") from exc
        return decoded._replace(activity_timestamp=self.activity_timestamp())

    def update_activity_timestamp(self, now_ms: int) -> None:
        self._buffer.put_int64_release(ACTIVITY_TIMESTAMP_OFFSET, now_ms)

    def activity_timestamp(self) -> int:
        return self._buffer.get_int64_acquire(ACTIVITY_TIMESTAMP_OFFSET)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._buffer.close()
        self._map.close()
        os.close(self._fd)

    def __enter__(self) -> ArchiveMarkFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
