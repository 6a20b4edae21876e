"""cnc.dat, CnC version 15 (Aeron 1.15.1): the header and the five regions that follow it.

Region offsets are always computed from the lengths in the header, never assumed.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.util.bit_util import CACHE_LINE_LENGTH, SIZE_OF_INT32, SIZE_OF_INT64, align
from driver.util.files import FilePermissions, create_allocated_file

CNC_FILE = "cnc.dat"
CNC_VERSION = 15

CNC_VERSION_FIELD_OFFSET = 0
TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET = CNC_VERSION_FIELD_OFFSET + SIZE_OF_INT32
TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET = TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET + SIZE_OF_INT32
COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET = TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET + SIZE_OF_INT32
COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET = COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET + SIZE_OF_INT32
ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET = COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET + SIZE_OF_INT32
CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET = ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET + SIZE_OF_INT32
START_TIMESTAMP_FIELD_OFFSET = CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET + SIZE_OF_INT64
PID_FIELD_OFFSET = START_TIMESTAMP_FIELD_OFFSET + SIZE_OF_INT64
META_DATA_LENGTH = PID_FIELD_OFFSET + SIZE_OF_INT64
END_OF_METADATA_OFFSET = align(META_DATA_LENGTH, CACHE_LINE_LENGTH * 2)


class CncError(Exception):
    """cnc.dat is missing, of another version, or malformed."""


@dataclass(frozen=True)
class CncLengths:
    to_driver: int
    to_clients: int
    counters_metadata: int
    counters_values: int
    error_log: int

    def total(self) -> int:
        return (
            END_OF_METADATA_OFFSET
            + self.to_driver
            + self.to_clients
            + self.counters_metadata
            + self.counters_values
            + self.error_log
        )


def cnc_file_length(lengths: CncLengths, page_size: int) -> int:
    return align(lengths.total(), page_size)


class CncFile:
    """A mapping of cnc.dat and views of its regions. Close it to release the mapping."""

    def __init__(self, path: Path, mapping: mmap.mmap, writable: bool) -> None:
        self.path = path
        self._mmap = mapping
        self.writable = writable
        self.buffer = AtomicBuffer(mapping)
        problem = None
        if len(self.buffer) < END_OF_METADATA_OFFSET:
            problem = f"{path} is {len(mapping)} bytes, too short for a CnC header"
        else:
            lengths = self.lengths()
            if lengths.total() > len(self.buffer) or min(lengths.__dict__.values()) < 0:
                problem = (
                    f"{path}: header lengths need {lengths.total()} bytes but the file has {len(mapping)}"
                )
        if problem is not None:
            self.buffer.close()
            mapping.close()
            raise CncError(problem)
        offset = END_OF_METADATA_OFFSET
        regions = []
        for length in (
            lengths.to_driver,
            lengths.to_clients,
            lengths.counters_metadata,
            lengths.counters_values,
            lengths.error_log,
        ):
            regions.append(self.buffer.slice(offset, length))
            offset += length
        (
            self.to_driver_buffer,
            self.to_clients_buffer,
            self.counters_metadata_buffer,
            self.counters_values_buffer,
            self.error_log_buffer,
        ) = regions

    @classmethod
    def create(
        cls,
        directory: Path,
        lengths: CncLengths,
        client_liveness_timeout_ns: int,
        start_timestamp_ms: int,
        pid: int,
        page_size: int = 4096,
        permissions: FilePermissions | None = None,
    ) -> CncFile:
        """Create a zero-filled cnc.dat with its header written but the version still 0 (not ready).

        The whole file is allocated first (FileAllocationError if it cannot be): the error log region is
        written long after start, and a page the file system could not back then would fault the driver.
        """
        path = directory / CNC_FILE
        length = cnc_file_length(lengths, page_size)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale file is replaced, never reused: a client must not see old contents
        fd = create_allocated_file(path, length, permissions or FilePermissions())
        try:
            mapping = mmap.mmap(fd, length)
        finally:
            os.close(fd)
        header = AtomicBuffer(mapping, 0, END_OF_METADATA_OFFSET)
        header.put_int32(TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET, lengths.to_driver)
        header.put_int32(TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET, lengths.to_clients)
        header.put_int32(COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET, lengths.counters_metadata)
        header.put_int32(COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET, lengths.counters_values)
        header.put_int32(ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET, lengths.error_log)
        header.put_int64(CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET, client_liveness_timeout_ns)
        header.put_int64(START_TIMESTAMP_FIELD_OFFSET, start_timestamp_ms)
        header.put_int64(PID_FIELD_OFFSET, pid)
        header.close()
        return cls(path, mapping, writable=True)

    @classmethod
    def map_existing(cls, path: Path, writable: bool = True) -> CncFile:
        """Map an existing cnc.dat; raises FileNotFoundError, or CncError when it is too short."""
        fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < END_OF_METADATA_OFFSET:
                raise CncError(f"{path} is {size} bytes, too short for a CnC header (still being created?)")
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            mapping = mmap.mmap(fd, size, access=access)
        finally:
            os.close(fd)
        return cls(path, mapping, writable)

    def close(self) -> None:
        if self.buffer is not None:
            self.buffer.close()
            self.buffer = None  # type: ignore[assignment]
            self._mmap.close()

    def __enter__(self) -> CncFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lengths(self) -> CncLengths:
        b = self.buffer
        return CncLengths(
            b.get_int32(TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET),
            b.get_int32(TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET),
            b.get_int32(COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET),
            b.get_int32(COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET),
            b.get_int32(ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET),
        )

    @property
    def version(self) -> int:
        return self.buffer.get_int32_volatile(CNC_VERSION_FIELD_OFFSET)

    def signal_ready(self) -> None:
        """Publish the version last: clients treat a non-zero version as 'the driver is ready'."""
        self.buffer.put_int32_volatile(CNC_VERSION_FIELD_OFFSET, CNC_VERSION)

    @property
    def client_liveness_timeout_ns(self) -> int:
        return self.buffer.get_int64(CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET)

    @property
    def start_timestamp_ms(self) -> int:
        return self.buffer.get_int64(START_TIMESTAMP_FIELD_OFFSET)

    @property
    def pid(self) -> int:
        return self.buffer.get_int64(PID_FIELD_OFFSET)


def check_version(cnc: CncFile) -> None:
    version = cnc.version
    if version != CNC_VERSION:
        raise CncError(
            f"{cnc.path} has CnC version {version}, but this is Aeron 1.15.1's CnC version {CNC_VERSION}: "
            "it belongs to another Aeron version's driver"
        )
