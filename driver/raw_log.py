"""Log buffer files the driver creates for publications and images, named as Aeron 1.15.1 names them.

A log that is not sparse is allocated in full before it is mapped (driver/util/files.py), so neither the driver
nor a client can fault on a full file system, and its pages are faulted into the driver's mapping up front. A
sparse log (asked for: ``sparse=true``, ``aeron.term.buffer.sparse.file``) is neither: only its metadata page is
allocated at creation, as in Aeron (docs/logbuffer.md section 1). It is made only if the file system has room
for all of it beside what the driver's other sparse logs may still take as they are written, so the driver's
own logs never promise more space than there is.

Large logs are made and destroyed by :class:`LogFactory` on its own thread: allocating, mapping or unmapping
gigabytes takes seconds, and the conductor's duty cycle (and its heartbeat) must not wait for that.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from driver.concurrent.logbuffer.log_buffer_descriptor import (
    LOG_META_DATA_LENGTH,
    LOG_PAGE_SIZE_OFFSET,
    LOG_TERM_LENGTH_OFFSET,
    check_page_size,
    check_term_length,
    compute_log_length,
)
from driver.concurrent.logbuffer.log_buffers import LogBuffers
from driver.util.bit_util import java_hex
from driver.util.files import FileAllocationError, FilePermissions, create_allocated_file, free_bytes

PUBLICATIONS_DIR = "publications"
IMAGES_DIR = "images"
IPC_MEDIA = "ipc"

_I32 = struct.Struct("<i")


def log_file_name(channel: str, session_id: int, stream_id: int, correlation_id: int) -> str:
    """``<channel>-<sessionHex>-<streamHex>-<corrHex>.logbuffer`` (Java's toHexString, two's complement)."""
    return f"{channel}-{java_hex(session_id)}-{java_hex(stream_id)}-{java_hex(correlation_id, 64)}.logbuffer"


class RawLog:
    """A log file the driver created and maps; ``free()`` unmaps and deletes it.

    Raises FileAllocationError (nothing left behind) when the file system cannot hold the whole log.
    """

    def __init__(
        self,
        path: Path,
        term_length: int,
        page_size: int,
        sparse: bool,
        permissions: FilePermissions | None = None,
    ) -> None:
        check_term_length(term_length)
        check_page_size(page_size)
        length = compute_log_length(term_length, page_size)
        fd = create_allocated_file(path, length, permissions or FilePermissions(), reserve=not sparse)
        try:
            # Term length and page size first, so the file maps; initialise_*_metadata writes the rest.
            meta_offset = length - LOG_META_DATA_LENGTH
            os.pwrite(fd, _I32.pack(term_length), meta_offset + LOG_TERM_LENGTH_OFFSET)
            os.pwrite(fd, _I32.pack(page_size), meta_offset + LOG_PAGE_SIZE_OFFSET)
        finally:
            os.close(fd)
        try:
            self.buffers = LogBuffers(path, populate=not sparse)
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self.path = path
        self.term_length = term_length
        self.term_buffers = self.buffers.term_buffers
        self.meta_data = self.buffers.meta_data_buffer
        self.length = length
        self.sparse = sparse
        self.terms_released = False
        self._release_executor: ThreadPoolExecutor | None = None

    @property
    def file_name(self) -> str:
        """The absolute path, as sent to clients."""
        return str(self.path.resolve())

    def free(self) -> bool:
        """Unmap and delete; a large log does it on its factory's thread (the file goes a little later)."""
        executor, self._release_executor = self._release_executor, None
        if executor is not None:
            with contextlib.suppress(RuntimeError):  # shut down: release here instead
                executor.submit(self._release)
                return True
        self._release()
        return True

    def release_terms(self) -> None:
        """Give the terms' pages back to the file system (they read as zeros from then on); the metadata
        stays. For a publication every subscriber has drained: its linger then holds no memory
        (docs/logbuffer.md section 1). A large log does it on its factory's thread, before its release."""
        self.terms_released = True
        executor = self._release_executor
        if executor is not None:
            with contextlib.suppress(RuntimeError):  # shut down: do it here instead
                executor.submit(self.buffers.remove_terms)
                return
        self.buffers.remove_terms()

    def unallocated_bytes(self, device: int) -> int:
        """What writing the rest of this (sparse) log may still take on ``device``: 0 once freed, drained
        (its terms are never written again) or elsewhere."""
        if self.terms_released:
            return 0
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return 0
        return max(0, self.length - st.st_blocks * 512) if st.st_dev == device else 0

    def _release(self) -> None:
        self.buffers.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


DEFAULT_ASYNC_LOG_LENGTH = 64 * 1024 * 1024


class LogFactory:
    """Creates the driver's logs: small ones at once, large ones (``async_length`` bytes or more) on a
    thread of its own; large logs are also unmapped and deleted there."""

    def __init__(
        self,
        page_size: int,
        permissions: FilePermissions | None = None,
        async_length: int = DEFAULT_ASYNC_LOG_LENGTH,
    ) -> None:
        self.page_size = page_size
        self.permissions = permissions or FilePermissions()
        self.async_length = async_length
        self._executor: ThreadPoolExecutor | None = None
        # Sparse logs made so far (dropped once gone): what they may still take is kept free. The lock makes
        # the check and the creation one step for the conductor and the factory's thread.
        self._sparse_logs: list[RawLog] = []
        self._sparse_lock = threading.Lock()

    def is_large(self, term_length: int) -> bool:
        return compute_log_length(term_length, self.page_size) >= self.async_length

    def create(self, path: Path, term_length: int, sparse: bool) -> RawLog:
        if not sparse:
            return RawLog(path, term_length, self.page_size, sparse, self.permissions)
        with self._sparse_lock:
            self._check_room_for_sparse(path, compute_log_length(term_length, self.page_size))
            raw_log = RawLog(path, term_length, self.page_size, sparse, self.permissions)
            self._sparse_logs.append(raw_log)
        return raw_log

    def _check_room_for_sparse(self, path: Path, length: int) -> None:
        """FileAllocationError unless the file system holds ``length`` more bytes beside what the other sparse
        logs on it may still take (unknown free space is not checked)."""
        free = free_bytes(path.parent)
        if free is None:
            return
        device = os.stat(path.parent).st_dev
        self._sparse_logs = [log for log in self._sparse_logs if log.path.exists()]
        promised = sum(log.unallocated_bytes(device) for log in self._sparse_logs)
        if free - promised < length:
            raise FileAllocationError(
                errno.ENOSPC,
                f"no space for {path}: a sparse log takes its {length} bytes as it is written and the file "
                f"system has {free} bytes free, {promised} of them due to the driver's other sparse logs; free "
                "space there or choose smaller terms (term-length, aeron.term.buffer.length)",
            )

    def submit(self, path: Path, term_length: int, sparse: bool) -> Future[RawLog]:
        """Create the log on the factory's thread; the future holds the RawLog or the error."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="log-factory")
        executor = self._executor
        check_term_length(term_length)  # a bad length is refused at once, not later

        def make() -> RawLog:
            raw_log = self.create(path, term_length, sparse)
            raw_log._release_executor = executor
            return raw_log

        return executor.submit(make)

    def close(self) -> None:
        """Wait for creations and releases under way; logs made for nobody are released."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    @staticmethod
    def discard(future: Future[RawLog]) -> None:
        """The log of a request that was abandoned: freed when (and if) it is made."""

        def done(f: Future[RawLog]) -> None:
            if not f.cancelled() and f.exception() is None:
                raw_log = f.result()
                raw_log._release_executor = None
                raw_log.free()

        future.add_done_callback(done)
