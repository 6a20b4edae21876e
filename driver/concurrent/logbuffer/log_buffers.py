"""Log buffer files: creating one (the driver) and mapping one (clients and the driver), as Aeron 1.15.1.

The whole file is mapped read-write; the terms are its first 3 * term_length bytes and the metadata is
its last ``LOG_META_DATA_LENGTH`` bytes (docs/logbuffer.md section 1).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from pathlib import Path

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.log_buffer_descriptor import (
    LOG_META_DATA_LENGTH,
    LOG_PAGE_SIZE_OFFSET,
    LOG_TERM_LENGTH_OFFSET,
    PARTITION_COUNT,
    check_page_size,
    check_term_length,
    compute_log_length,
)
from driver.concurrent.logbuffer.log_buffer_descriptor import (
    page_size as read_page_size,
)
from driver.concurrent.logbuffer.log_buffer_descriptor import (
    term_length as read_term_length,
)

_I32 = struct.Struct("<i")


_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux >= 5.14
POPULATE_SLICE_LENGTH = 8 * 1024 * 1024
"""Larger logs are faulted in slice by slice: MAP_POPULATE of a whole large log holds the process's mapping
lock for seconds, stalling every other thread that maps or unmaps memory (the driver's loop included)."""
POPULATE_MAX_LENGTH = 512 * 1024 * 1024
"""Logs larger than this fault in on first touch: faulting in gigabytes up front costs seconds for pages most
streams reach much later, if ever (the space itself is already reserved when the file is created)."""


class LogBufferError(ValueError):
    """A log buffer file is too short or its metadata holds an invalid term length or page size."""


def create_log_file(path: str | Path, term_length: int, page_size: int, sparse: bool) -> None:
    """Create a zero-filled log of ``compute_log_length`` bytes with its term length and page size set;
    fails if ``path`` exists (as the driver does).

    Unless ``sparse``, one byte per page is written so the file system allocates every page now, rather
    than a publisher taking the page faults (or SIGBUS on a full /dev/shm) in the middle of a term.
    """
    check_term_length(term_length)
    check_page_size(page_size)
    length = compute_log_length(term_length, page_size)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.ftruncate(fd, length)
        # Term length and page size go in now so that LogBuffers can map the file straight away; the
        # driver's initialise_*_metadata writes them again with everything else.
        meta_offset = length - LOG_META_DATA_LENGTH
        os.pwrite(fd, _I32.pack(term_length), meta_offset + LOG_TERM_LENGTH_OFFSET)
        os.pwrite(fd, _I32.pack(page_size), meta_offset + LOG_PAGE_SIZE_OFFSET)
        if not sparse:
            with mmap.mmap(fd, length) as mapping:
                # An extended-slice assignment touches every page in one C loop.
                mapping[0:length:page_size] = bytes(len(range(0, length, page_size)))
    finally:
        os.close(fd)


class LogBuffers:
    """A read-write mapping of a log file: three term buffers and the metadata buffer.

    Close it (or use it as a context manager) to release the buffers and then the mapping; anything
    still holding the term or metadata buffers must be done with them by then.
    """

    __slots__ = ("_buffer", "_mmap", "meta_data_buffer", "path", "term_buffers", "term_length")

    def __init__(self, path: str | Path, populate: bool = True) -> None:
        """``populate``: fault every page in at mapping time (else on first touch)."""
        self.path = Path(path)
        fd = os.open(self.path, os.O_RDWR)
        try:
            file_length = os.fstat(fd).st_size
            if file_length < LOG_META_DATA_LENGTH:
                raise LogBufferError(
                    f"{self.path} is {file_length} bytes, shorter than the {LOG_META_DATA_LENGTH}-byte "
                    "log metadata section: not a log buffer (or still being created)"
                )
            # MAP_POPULATE: fault every page in now, not one per 4 KiB on the publish/poll hot path.
            populate = populate and file_length <= POPULATE_MAX_LENGTH
            in_slices = populate and file_length > POPULATE_SLICE_LENGTH
            self._mmap = mmap.mmap(
                fd,
                file_length,
                flags=mmap.MAP_SHARED | (_MAP_POPULATE if populate and not in_slices else 0),
                prot=mmap.PROT_READ | mmap.PROT_WRITE,
            )
        finally:
            os.close(fd)
        if in_slices:
            self._populate_in_slices(file_length)

        self._buffer = AtomicBuffer(self._mmap)
        try:
            meta = self._buffer.slice(file_length - LOG_META_DATA_LENGTH, LOG_META_DATA_LENGTH)
            term_length = read_term_length(meta)
            try:
                check_term_length(term_length)
                check_page_size(read_page_size(meta))
            except ValueError as e:
                raise LogBufferError(f"{self.path}: invalid log metadata: {e}") from None
            if PARTITION_COUNT * term_length + LOG_META_DATA_LENGTH > file_length:
                raise LogBufferError(
                    f"{self.path} is {file_length} bytes, too short for {PARTITION_COUNT} terms of "
                    f"{term_length} bytes and the metadata"
                )
        except BaseException:
            self.close()
            raise

        self.term_length = term_length
        self.meta_data_buffer = meta
        self.term_buffers = tuple(
            self._buffer.slice(i * term_length, term_length) for i in range(PARTITION_COUNT)
        )

    def _populate_in_slices(self, file_length: int) -> None:
        for offset in range(0, file_length, POPULATE_SLICE_LENGTH):
            try:
                self._mmap.madvise(
                    _MADV_POPULATE_WRITE, offset, min(POPULATE_SLICE_LENGTH, file_length - offset)
                )
            except OSError:
                return  # an older kernel: the pages fault in on first touch instead

    def remove_terms(self) -> None:
        """Free the terms' pages in the file (MADV_REMOVE: every mapping then reads zeros there); nothing
        where the file system or the platform cannot (the pages then stay until the file is deleted)."""
        if self._buffer is None or not hasattr(mmap, "MADV_REMOVE"):
            return
        with contextlib.suppress(OSError, ValueError):
            self._mmap.madvise(mmap.MADV_REMOVE, 0, PARTITION_COUNT * self.term_length)

    def close(self) -> None:
        """Release the buffers, then the mapping. Safe to call more than once."""
        buffer = getattr(self, "_buffer", None)
        if buffer is None:
            return
        self._buffer = None
        buffer.close()
        self._mmap.close()

    @property
    def is_closed(self) -> bool:
        return self._buffer is None

    def __enter__(self) -> LogBuffers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else f"term_length={self.term_length}"
        return f"LogBuffers({str(self.path)!r}, {state})"
