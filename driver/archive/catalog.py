"""``archive.catalog``: the archive's index of recordings, laid out as Aeron Archive 1.15.1 lays it out
(docs/archive.md section 10).

::

    0       CatalogHeader body (no message header): version i32 = 0, entryLength i32 = 1024
    L·(r+1) entry of recording r (L = entryLength):
              RecordingDescriptorHeader body (32 bytes): length i32 (encoded descriptor length), valid i8
              RecordingDescriptor body (80-byte block + strippedChannel, originalChannel, sourceIdentity)

The file is sized for ``max_entries`` (min(max_entries·1024 + 1024, 2^31 - 1)), created sparse and memory
mapped; an existing file keeps its size when larger (that is how 1.15.1's ``CatalogTool max-entries N`` grows it).
A full catalog grows the same way while the archive runs: the file is made twice as long and mapped again, so a
1.15.1 archive opens the grown file as it opens one CatalogTool grew.
Entries are counted from id 0 up to the first entry whose descriptor length is 0, so an entry is committed by
writing its length last. The stop position is written with release order: other threads read it live.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from driver.archive.codecs.messages import (
    CatalogHeader,
    RecordingDescriptor,
    RecordingDescriptorHeader,
    codec,
)
from driver.archive.codecs.sbe import VAR_LENGTH_LENGTH, CodecError
from driver.archive.segment_file import recover_stop_position
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import INT32_MAX
from driver.util.files import FilePermissions

CATALOG_FILE_NAME = "archive.catalog"

_CATALOG_HEADER = codec(CatalogHeader)
_DESCRIPTOR_HEADER = codec(RecordingDescriptorHeader)
_DESCRIPTOR = codec(RecordingDescriptor)

CATALOG_VERSION = 0
CATALOG_VERSION_OFFSET = _CATALOG_HEADER.offsets["version"]
CATALOG_ENTRY_LENGTH_OFFSET = _CATALOG_HEADER.offsets["entry_length"]

DEFAULT_RECORD_LENGTH = 1024
DEFAULT_MAX_ENTRIES = 8 * 1024

# Within an entry.
DESCRIPTOR_HEADER_LENGTH = _DESCRIPTOR_HEADER.block_length
DESCRIPTOR_LENGTH_OFFSET = _DESCRIPTOR_HEADER.offsets["length"]
_MIN_DESCRIPTOR_LENGTH = _DESCRIPTOR.block_length + 3 * 4  # the block and three string lengths
VALID_OFFSET = _DESCRIPTOR_HEADER.offsets["valid"]
DESCRIPTOR_OFFSET = DESCRIPTOR_HEADER_LENGTH
CONTROL_SESSION_ID_OFFSET = DESCRIPTOR_OFFSET + _DESCRIPTOR.offsets["control_session_id"]
CORRELATION_ID_OFFSET = DESCRIPTOR_OFFSET + _DESCRIPTOR.offsets["correlation_id"]
START_POSITION_OFFSET = DESCRIPTOR_OFFSET + _DESCRIPTOR.offsets["start_position"]
STOP_TIMESTAMP_OFFSET = DESCRIPTOR_OFFSET + _DESCRIPTOR.offsets["stop_timestamp"]
STOP_POSITION_OFFSET = DESCRIPTOR_OFFSET + _DESCRIPTOR.offsets["stop_position"]

VALID = 1
INVALID = 0
NULL_POSITION = -1
NULL_TIMESTAMP = -1
NULL_RECORD_ID = -1
PAGE_SIZE = 4096

SYNC_NONE = 0
SYNC_DATA = 1
SYNC_DATA_AND_METADATA = 2


def max_strings_combined_length(record_length: int) -> int:
    """Room left for the three channel strings: 1024 - (32 + 80 + 12) = 900 by default."""
    return record_length - (DESCRIPTOR_HEADER_LENGTH + _DESCRIPTOR.block_length + 3 * VAR_LENGTH_LENGTH)


def catalog_length(max_entries: int) -> int:
    return min(max_entries * DEFAULT_RECORD_LENGTH + DEFAULT_RECORD_LENGTH, INT32_MAX)


def max_entries_for(length: int, record_length: int) -> int:
    if length == INT32_MAX:
        return (INT32_MAX - (record_length - 1)) // record_length
    return length // record_length - 1


MAX_ENTRIES = max_entries_for(INT32_MAX, DEFAULT_RECORD_LENGTH)


def entry_offset(recording_id: int, record_length: int = DEFAULT_RECORD_LENGTH) -> int:
    return recording_id * record_length + record_length


class CatalogError(Exception):
    """The catalog cannot be opened, is full, or an entry does not fit (1.15.1's messages)."""


class CatalogEntry(NamedTuple):
    recording_id: int
    valid: bool
    descriptor: RecordingDescriptor


class Catalog:
    """The mapped ``archive.catalog`` of one archive directory.

    ``file_sync_level``: 0 leaves writes to the page cache; 1 syncs data after every change (fdatasync);
    2 also syncs metadata (fsync), and the directory entry when the file is created.
    """

    def __init__(
        self,
        archive_dir: str | os.PathLike[str],
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        file_sync_level: int = SYNC_NONE,
        read_only: bool = False,
        permissions: FilePermissions | None = None,
    ) -> None:
        if not 1 <= max_entries <= MAX_ENTRIES:
            raise CatalogError(
                f"Catalog max entries must be between 1 and {MAX_ENTRIES}: maxEntries={max_entries}"
            )
        self.archive_dir = Path(archive_dir)
        self.path = self.archive_dir / CATALOG_FILE_NAME
        self.file_sync_level = file_sync_level
        self._closed = False
        self._read_only = read_only
        # Mappings replaced by a larger one: kept until close, as other threads may still read through them (the
        # file is shared, so they see every write).
        self._retired: list[tuple[AtomicBuffer, mmap.mmap]] = []
        pre_exists = self.path.exists()
        if read_only and not pre_exists:
            raise CatalogError(f"no catalog at {self.path}")
        permissions = permissions or FilePermissions()
        flags = os.O_RDONLY if read_only else os.O_RDWR | os.O_CREAT
        self._fd = os.open(self.path, flags, permissions.file_mode)
        try:
            if not pre_exists:
                permissions.apply_to_fd(self._fd)  # exact mode and group whatever the umask (section 15)
            size = os.fstat(self._fd).st_size
            length = size if read_only else max(size, catalog_length(max_entries))
            if length < 2 * DEFAULT_RECORD_LENGTH and read_only:
                raise CatalogError(f"catalog {self.path} is too short: {size} bytes")
            if size < length:
                os.ftruncate(self._fd, length)  # sparse: untouched entries take no disk
            access = mmap.ACCESS_READ if read_only else mmap.ACCESS_WRITE
            self._map = mmap.mmap(self._fd, length, access=access)
            self._buffer = AtomicBuffer(self._map)
            if pre_exists:
                version = self._buffer.get_int32(CATALOG_VERSION_OFFSET)
                if version != CATALOG_VERSION:
                    raise CatalogError(
                        f"catalog file version {version} does not match software:{CATALOG_VERSION}"
                    )
                self.record_length = self._buffer.get_int32(CATALOG_ENTRY_LENGTH_OFFSET)
                if self.record_length < DESCRIPTOR_HEADER_LENGTH + _DESCRIPTOR.block_length + 12:
                    raise CatalogError(f"catalog entry length {self.record_length} is too small")
            else:
                self.record_length = DEFAULT_RECORD_LENGTH
                _CATALOG_HEADER.encode_body_into(
                    self._map, 0, CatalogHeader(CATALOG_VERSION, DEFAULT_RECORD_LENGTH)
                )
                self._sync(directory=True)
            self.max_entries = max_entries_for(length, self.record_length)
            self._max_strings = max_strings_combined_length(self.record_length)
            self._next_recording_id = 0
            while (
                self._next_recording_id < self.max_entries
                and self._get_int32(self._next_recording_id, DESCRIPTOR_LENGTH_OFFSET) > 0
            ):
                self._next_recording_id += 1
        except BaseException:
            self.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for old_buffer, old_map in self._retired:
            old_buffer.close()
            old_map.close()
        buffer = getattr(self, "_buffer", None)
        if buffer is not None:
            buffer.close()
        mapping = getattr(self, "_map", None)
        if mapping is not None:
            mapping.close()
        os.close(self._fd)

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sync(self, *, directory: bool = False) -> None:
        if self.file_sync_level >= SYNC_DATA_AND_METADATA:
            os.fsync(self._fd)
        elif self.file_sync_level >= SYNC_DATA:
            os.fdatasync(self._fd)
        if directory and self.file_sync_level > SYNC_NONE:
            dir_fd = os.open(self.archive_dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    # -- field access ----------------------------------------------------------------------------------------------

    def _offset(self, recording_id: int, field_offset: int) -> int:
        return entry_offset(recording_id, self.record_length) + field_offset

    def _get_int32(self, recording_id: int, field_offset: int) -> int:
        return self._buffer.get_int32(self._offset(recording_id, field_offset))

    def _check_known(self, recording_id: int) -> None:
        if not 0 <= recording_id < self._next_recording_id:
            raise CatalogError(f"unknown recording id {recording_id}")

    @property
    def count_entries(self) -> int:
        return self._next_recording_id

    def has_recording(self, recording_id: int) -> bool:
        """Known and valid, as 1.15.1's Catalog.hasRecording."""
        return (
            0 <= recording_id < self._next_recording_id
            and self._buffer.view[self._offset(recording_id, VALID_OFFSET)] == VALID
        )

    # -- writes ----------------------------------------------------------------------------------------------------

    def add_new_recording(
        self,
        *,
        start_position: int,
        start_timestamp: int,
        initial_term_id: int,
        segment_file_length: int,
        term_buffer_length: int,
        mtu_length: int,
        session_id: int,
        stream_id: int,
        stripped_channel: str,
        original_channel: str,
        source_identity: str,
    ) -> int:
        """Appends a valid entry (stop position and timestamp -1) and returns its recording id; a full catalog is
        grown first."""
        if self._next_recording_id >= self.max_entries:
            self.grow()
        combined = len(stripped_channel) + len(original_channel) + len(source_identity)
        if combined > self._max_strings:
            raise CatalogError(
                f"combined length of channel:'{stripped_channel}' and sourceIdentity:'{source_identity}' "
                f"and originalChannel:'{original_channel}' exceeds max allowed:{self._max_strings}"
            )
        recording_id = self._next_recording_id
        entry = self._offset(recording_id, 0)
        try:
            # The file is sparse: a mapped page the file system cannot back would raise SIGBUS when written, so
            # the entry's blocks are allocated first and a full disk refuses the recording instead.
            os.posix_fallocate(self._fd, entry, self.record_length)
        except OSError as exc:
            raise CatalogError(
                f"cannot allocate catalog entry {recording_id} in {self.path}: {exc.strerror or exc}"
            ) from exc
        descriptor = RecordingDescriptor(
            control_session_id=0,
            correlation_id=0,
            recording_id=recording_id,
            start_timestamp=start_timestamp,
            stop_timestamp=NULL_TIMESTAMP,
            start_position=start_position,
            stop_position=NULL_POSITION,
            initial_term_id=initial_term_id,
            segment_file_length=segment_file_length,
            term_buffer_length=term_buffer_length,
            mtu_length=mtu_length,
            session_id=session_id,
            stream_id=stream_id,
            stripped_channel=stripped_channel,
            original_channel=original_channel,
            source_identity=source_identity,
        )
        try:
            length = _DESCRIPTOR.encode_body_into(
                self._buffer.view, self._offset(recording_id, DESCRIPTOR_OFFSET), descriptor
            )
        except CodecError as exc:
            raise CatalogError(str(exc)) from exc
        self._buffer.view[self._offset(recording_id, VALID_OFFSET)] = VALID
        self._buffer.put_int32_release(self._offset(recording_id, DESCRIPTOR_LENGTH_OFFSET), length)
        self._next_recording_id += 1
        self._sync()
        return recording_id

    def grow(self) -> None:
        """Twice the entries (at most MAX_ENTRIES): the file is extended (sparse) and mapped again. 1.15.1 opens a
        catalog at max(file size, its configured size), so it reads the grown file."""
        if self._read_only or self.max_entries >= MAX_ENTRIES:
            raise CatalogError(f"catalog is full, max recordings reached: {self.max_entries}")
        new_max = min(self.max_entries * 2, MAX_ENTRIES)
        length = min((new_max + 1) * self.record_length, INT32_MAX)
        try:
            os.ftruncate(self._fd, length)
            new_map = mmap.mmap(self._fd, length, access=mmap.ACCESS_WRITE)
        except OSError as exc:
            raise CatalogError(
                f"catalog is full, max recordings reached: {self.max_entries}; cannot grow {self.path}: "
                f"{exc.strerror or exc}"
            ) from exc
        self._retired.append((self._buffer, self._map))
        self._map = new_map
        self._buffer = AtomicBuffer(new_map)
        self.max_entries = max_entries_for(length, self.record_length)
        self._sync()

    def recording_stopped(self, recording_id: int, position: int, timestamp: int | None = None) -> None:
        """Sets the stop position (release order) and, when given, the stop timestamp (truncate leaves it)."""
        self._check_known(recording_id)
        if timestamp is not None:
            self._buffer.put_int64(self._offset(recording_id, STOP_TIMESTAMP_OFFSET), timestamp)
        self._buffer.put_int64_release(self._offset(recording_id, STOP_POSITION_OFFSET), position)
        self._sync()

    def extend_recording(self, recording_id: int, control_session_id: int, correlation_id: int) -> None:
        """Marks a recording live again for an extension: new session ids, stop position/timestamp -1."""
        self._check_known(recording_id)
        self._buffer.put_int64(self._offset(recording_id, CONTROL_SESSION_ID_OFFSET), control_session_id)
        self._buffer.put_int64(self._offset(recording_id, CORRELATION_ID_OFFSET), correlation_id)
        self._buffer.put_int64(self._offset(recording_id, STOP_TIMESTAMP_OFFSET), NULL_TIMESTAMP)
        self._buffer.put_int64_release(self._offset(recording_id, STOP_POSITION_OFFSET), NULL_POSITION)
        self._sync()

    def set_start_position(self, recording_id: int, position: int) -> None:
        """Moves the start position (for purging the front of a recording; 1.15.1 itself never does)."""
        self._check_known(recording_id)
        self._buffer.put_int64(self._offset(recording_id, START_POSITION_OFFSET), position)
        self._sync()

    def invalidate(self, recording_id: int) -> None:
        self._check_known(recording_id)
        self._buffer.view[self._offset(recording_id, VALID_OFFSET)] = INVALID
        self._sync()

    def recover(self, now_ms: int) -> list[int]:
        """At start-up: valid entries left without a stop position (the archive did not stop cleanly) get one from
        their segment files, and stop timestamp ``now_ms``. Returns the recovered ids."""
        recovered = []
        for entry in self:
            d = entry.descriptor
            if entry.valid and d.stop_position == NULL_POSITION:
                stop = recover_stop_position(
                    self.archive_dir,
                    d.recording_id,
                    d.start_position,
                    d.term_buffer_length,
                    d.segment_file_length,
                )
                self.recording_stopped(d.recording_id, stop, now_ms)
                recovered.append(d.recording_id)
        return recovered

    # -- reads -----------------------------------------------------------------------------------------------------

    def stop_position(self, recording_id: int) -> int:
        self._check_known(recording_id)
        return self._buffer.get_int64_acquire(self._offset(recording_id, STOP_POSITION_OFFSET))

    def entry(self, recording_id: int) -> CatalogEntry | None:
        """The entry of ``recording_id``, valid or not; None when there is none."""
        if not 0 <= recording_id < self._next_recording_id:
            return None
        start = entry_offset(recording_id, self.record_length)
        # A damaged entry (a torn write, a foreign tool) is refused by name instead of being served: its length
        # must hold the block and three string lengths, and stay inside the entry; its strings must be US-ASCII
        # (they are sent to clients as such).
        length = self._get_int32(recording_id, DESCRIPTOR_LENGTH_OFFSET)
        if not _MIN_DESCRIPTOR_LENGTH <= length <= self.record_length - DESCRIPTOR_OFFSET:
            raise CatalogError(
                f"recording {recording_id}: descriptor length {length} outside "
                f"[{_MIN_DESCRIPTOR_LENGTH}, {self.record_length - DESCRIPTOR_OFFSET}]"
            )
        try:
            descriptor = _DESCRIPTOR.decode_body(
                self._buffer.view,
                start + DESCRIPTOR_OFFSET,
                _DESCRIPTOR.block_length,
                start + DESCRIPTOR_OFFSET + length,
            )
        except CodecError as exc:
            raise CatalogError(f"recording {recording_id}: {exc}") from exc
        for name in ("stripped_channel", "original_channel", "source_identity"):
            if not getattr(descriptor, name).isascii():
                raise CatalogError(f"recording {recording_id}: {name} is not US-ASCII")
        return CatalogEntry(recording_id, self._buffer.view[start + VALID_OFFSET] == VALID, descriptor)

    def descriptor(self, recording_id: int) -> RecordingDescriptor | None:
        """The descriptor of a valid recording, or None (what a listing answers RECORDING_UNKNOWN for)."""
        entry = self.entry(recording_id)
        return entry.descriptor if entry is not None and entry.valid else None

    def __iter__(self) -> Iterator[CatalogEntry]:
        for recording_id in range(self._next_recording_id):
            entry = self.entry(recording_id)
            assert entry is not None
            yield entry

    def find_last(self, min_recording_id: int, session_id: int, stream_id: int, channel_fragment: str) -> int:
        """Highest valid id >= min with equal session and stream whose original channel contains the fragment."""
        for recording_id in range(self._next_recording_id - 1, max(min_recording_id, 0) - 1, -1):
            try:
                d = self.descriptor(recording_id)
            except CatalogError:
                continue  # damaged: reported at start-up
            if (
                d is not None
                and d.session_id == session_id
                and d.stream_id == stream_id
                and channel_fragment in d.original_channel
            ):
                return recording_id
        return NULL_RECORD_ID
