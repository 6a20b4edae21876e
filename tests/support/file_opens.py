"""Which files of a directory any process opens, seen by the kernel (inotify IN_OPEN), while a block runs."""

from __future__ import annotations

import ctypes
import os
import struct
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

IN_OPEN = 0x20
IN_NONBLOCK = 0o4000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length


@contextmanager
def file_opens(directory: Path) -> Iterator[Counter[str]]:
    """A Counter of file name -> opens in ``directory``, filled when the block ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    opened: Counter[str] = Counter()
    try:
        if libc.inotify_add_watch(fd, os.fsencode(directory), IN_OPEN) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory}")
        yield opened
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            at = 0
            while at < len(data):
                _, _, _, length = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0").decode()
                if name:
                    opened[name] += 1
                at += _EVENT.size + length
    finally:
        os.close(fd)
