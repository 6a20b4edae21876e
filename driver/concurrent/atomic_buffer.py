"""A view over mapped (or plain) memory with plain, ordered and atomic access to aligned fields.

This is the one place that holds ``ffi.from_buffer`` pointers. An ``AtomicBuffer`` made over a
buffer owns its pointer and must be closed before the mapping is; ``slice()`` makes children that
borrow the parent's pointer and are invalid once the parent is closed.
"""

from __future__ import annotations

import struct
from typing import Any

from driver._native import ffi, lib

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


class AtomicBuffer:
    __slots__ = ("_children", "_length", "_owner", "_ptr", "_view")

    def __init__(self, buffer: Any, offset: int = 0, length: int | None = None) -> None:
        whole = memoryview(buffer).cast("B")
        if length is None:
            length = len(whole) - offset
        if offset < 0 or length < 0 or offset + length > len(whole):
            raise ValueError(f"region {offset}+{length} is outside a buffer of {len(whole)} bytes")
        self._owner = ffi.from_buffer("uint8_t[]", buffer, require_writable=False)
        self._ptr = self._owner + offset
        self._view = whole[offset : offset + length]
        self._length = length
        self._children: list[AtomicBuffer] = []
        whole.release()

    @classmethod
    def _child(cls, parent: AtomicBuffer, offset: int, length: int) -> AtomicBuffer:
        child = cls.__new__(cls)
        child._owner = None
        child._ptr = parent._ptr + offset
        child._view = parent._view[offset : offset + length]
        child._length = length
        child._children = []
        parent._children.append(child)
        return child

    def slice(self, offset: int, length: int) -> AtomicBuffer:
        """A child view of ``length`` bytes at ``offset`` sharing this buffer's memory."""
        if offset < 0 or length < 0 or offset + length > self._length:
            raise ValueError(f"slice {offset}+{length} is outside a buffer of {self._length} bytes")
        return AtomicBuffer._child(self, offset, length)

    def close(self) -> None:
        """Release views and the cffi pointer so that the underlying mapping can be closed."""
        for child in self._children:
            child.close()
        self._children.clear()
        if self._view is not None:
            self._view.release()
            self._view = None  # type: ignore[assignment]
        if self._owner is not None:
            ffi.release(self._owner)
            self._owner = None
        self._ptr = None

    def __len__(self) -> int:
        return self._length

    @property
    def capacity(self) -> int:
        return self._length

    @property
    def view(self) -> memoryview:
        return self._view

    # Plain access: no ordering, for fields nobody else writes concurrently.
    def get_int32(self, offset: int) -> int:
        return _I32.unpack_from(self._view, offset)[0]

    def put_int32(self, offset: int, value: int) -> None:
        _I32.pack_into(self._view, offset, value)

    def get_int64(self, offset: int) -> int:
        return _I64.unpack_from(self._view, offset)[0]

    def put_int64(self, offset: int, value: int) -> None:
        _I64.pack_into(self._view, offset, value)

    # Ordered and atomic access (contract in native/README.md).
    def get_int32_acquire(self, offset: int) -> int:
        return lib.amd_get_int32_acquire(self._ptr, offset)

    def get_int64_acquire(self, offset: int) -> int:
        return lib.amd_get_int64_acquire(self._ptr, offset)

    def put_int32_release(self, offset: int, value: int) -> None:
        lib.amd_put_int32_release(self._ptr, offset, value)

    def put_int64_release(self, offset: int, value: int) -> None:
        lib.amd_put_int64_release(self._ptr, offset, value)

    def get_int32_volatile(self, offset: int) -> int:
        return lib.amd_get_int32_volatile(self._ptr, offset)

    def get_int64_volatile(self, offset: int) -> int:
        return lib.amd_get_int64_volatile(self._ptr, offset)

    def put_int32_volatile(self, offset: int, value: int) -> None:
        lib.amd_put_int32_volatile(self._ptr, offset, value)

    def put_int64_volatile(self, offset: int, value: int) -> None:
        lib.amd_put_int64_volatile(self._ptr, offset, value)

    def compare_and_set_int32(self, offset: int, expected: int, update: int) -> bool:
        return bool(lib.amd_cas_int32(self._ptr, offset, expected, update))

    def compare_and_set_int64(self, offset: int, expected: int, update: int) -> bool:
        return bool(lib.amd_cas_int64(self._ptr, offset, expected, update))

    def get_and_add_int32(self, offset: int, delta: int) -> int:
        return lib.amd_get_and_add_int32(self._ptr, offset, delta)

    def get_and_add_int64(self, offset: int, delta: int) -> int:
        return lib.amd_get_and_add_int64(self._ptr, offset, delta)

    @staticmethod
    def fence_acquire() -> None:
        lib.amd_fence_acquire()

    @staticmethod
    def fence_release() -> None:
        lib.amd_fence_release()

    @staticmethod
    def fence_full() -> None:
        lib.amd_fence_full()

    # Bytes.
    def get_bytes(self, offset: int, length: int) -> bytes:
        return bytes(self._view[offset : offset + length])

    def put_bytes(self, offset: int, src: bytes | bytearray | memoryview) -> None:
        self._view[offset : offset + len(src)] = src

    def copy_from(self, offset: int, src: AtomicBuffer, src_offset: int, length: int) -> None:
        lib.amd_copy(self._ptr, offset, src._ptr, src_offset, length)

    def set_zero(self, offset: int, length: int) -> None:
        lib.amd_zero(self._ptr, offset, length)

    def get_string_ascii(self, offset: int) -> str:
        """An int32 length-prefixed string, as Agrona's getStringAscii reads it."""
        length = self.get_int32(offset)
        return self.get_bytes(offset + 4, length).decode("ascii", "replace")

    def get_string_utf8(self, offset: int) -> str:
        length = self.get_int32(offset)
        return self.get_bytes(offset + 4, length).decode("utf-8", "replace")

    def put_string_ascii(self, offset: int, value: str) -> int:
        """Write an int32 length-prefixed ASCII string (non-ASCII becomes '?'); returns bytes written."""
        data = value.encode("ascii", "replace")
        self.put_int32(offset, len(data))
        self.put_bytes(offset + 4, data)
        return 4 + len(data)
