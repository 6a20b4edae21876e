"""Log buffer files the driver creates for publications and images, named as Aeron 1.15.1 names them."""

from __future__ import annotations

import contextlib
from pathlib import Path

from driver.concurrent.logbuffer.log_buffers import LogBuffers, create_log_file
from driver.util.bit_util import java_hex

PUBLICATIONS_DIR = "publications"
IMAGES_DIR = "images"
IPC_MEDIA = "ipc"


def log_file_name(channel: str, session_id: int, stream_id: int, correlation_id: int) -> str:
    """``<channel>-<sessionHex>-<streamHex>-<corrHex>.logbuffer`` (Java's toHexString, two's complement)."""
    return f"{channel}-{java_hex(session_id)}-{java_hex(stream_id)}-{java_hex(correlation_id, 64)}.logbuffer"


class RawLog:
    """A log file the driver created and maps; ``free()`` unmaps and deletes it."""

    def __init__(self, path: Path, term_length: int, page_size: int, sparse: bool) -> None:
        create_log_file(path, term_length, page_size, sparse)
        self.path = path
        self.buffers = LogBuffers(path)
        self.term_length = term_length
        self.term_buffers = self.buffers.term_buffers
        self.meta_data = self.buffers.meta_data_buffer

    @property
    def file_name(self) -> str:
        """The absolute path, as sent to clients."""
        return str(self.path.resolve())

    def free(self) -> bool:
        self.buffers.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        return True
