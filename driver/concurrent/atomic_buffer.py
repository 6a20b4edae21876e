"""A view over mapped (or plain) memory with plain, ordered and atomic access to aligned fields.

This is the one place that holds ``ffi.from_buffer`` pointers. An ``AtomicBuffer`` made over a
buffer owns its pointer and must be closed before the mapping is; ``slice()`` makes children that
borrow the parent's pointer and are invalid once the parent is closed.
"""

from __future__ import annotations

import struct
from typing import Any

from driver._native import ffi, lib

TERM_REBUILD_OUT_OF_TERM: int = lib.AMD_REBUILD_OUT_OF_TERM
"""term_rebuild_insert: the datagram does not fit the term at its offset (nothing written)."""
TERM_REBUILD_MALFORMED: int = lib.AMD_REBUILD_MALFORMED
"""term_rebuild_insert: a frame header of the datagram is inconsistent (nothing written)."""

_CLOSED = object()  # stands in for the pointer of a closed buffer
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

    def address(self, offset: int = 0) -> Any:
        """The cffi pointer to ``offset``, for native structs built in driver/concurrent/ only.

        Whoever stores it must stop using it before this buffer (and its mapping) is closed.
        """
        if not 0 <= offset <= self._length:
            raise ValueError(f"offset {offset} is outside a buffer of {self._length} bytes")
        return self._ptr + offset

    def address_value(self) -> int:
        """The address of this buffer's first byte as an int, for the client's CPython fast path
        (driver/concurrent/logbuffer/fastpath.py), with the same rule as ``address``."""
        return int(ffi.cast("uintptr_t", self._ptr))

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
        self._ptr = _CLOSED  # cffi raises TypeError on use after close, instead of passing NULL to C

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
        """Copy ``length`` bytes of ``src`` from ``src_offset`` to ``offset``; IndexError (nothing written)
        when either region is outside its buffer: the C side checks, so no caller can write past a mapping."""
        if lib.amd_copy(self._ptr, self._length, offset, src._ptr, src._length, src_offset, length):
            raise IndexError(
                f"copy of {length} bytes from {src_offset} (of {src._length}) to {offset} (of {self._length}) "
                "is outside a buffer"
            )

    def set_zero(self, offset: int, length: int) -> None:
        """Zero ``length`` bytes at ``offset``; IndexError (nothing written) when outside the buffer."""
        if lib.amd_zero(self._ptr, self._length, offset, length):
            raise IndexError(f"zeroing {offset}+{length} is outside a buffer of {self._length} bytes")

    # Frames of a term (docs/logbuffer.md section 5; contract in native/README.md). ``header_template`` is
    # the 32-byte default data header as ``bytes`` (cffi passes it without a copy); callers check its length.
    def write_frame(
        self,
        offset: int,
        frame_length: int,
        header_template: bytes,
        term_id: int,
        flags: int,
        reserved_value: int,
        src: Any,
        src_offset: int = 0,
    ) -> None:
        """Write and commit one DATA frame: header, reserved value, ``frame_length - 32`` bytes of ``src``
        from ``src_offset``, then a release store of the length. ``flags`` < 0 keeps the template's flags."""
        if type(src) is not bytes:
            src = ffi.from_buffer("uint8_t[]", src)
        lib.amd_frame_write(
            self._ptr, offset, frame_length, header_template, term_id, flags, reserved_value, src, src_offset
        )

    def write_frame_header(
        self, offset: int, frame_length: int, header_template: bytes, term_id: int
    ) -> None:
        """The header of a claimed frame, its length left at ``-frame_length`` until the claim commits."""
        lib.amd_frame_header_write(self._ptr, offset, frame_length, header_template, term_id)

    def write_padding_frame(
        self, offset: int, frame_length: int, header_template: bytes, term_id: int
    ) -> None:
        """Write and commit a PAD frame of ``frame_length`` bytes (only its header is written)."""
        lib.amd_frame_write_padding(self._ptr, offset, frame_length, header_template, term_id)

    def write_fragments(
        self,
        offset: int,
        header_template: bytes,
        term_id: int,
        src: Any,
        max_payload_length: int,
        reserved_value: int,
    ) -> None:
        """Write and commit ``src`` as consecutive frames of at most ``max_payload_length`` bytes flagged
        BEGIN, 0, ..., END, each committed before the next is written."""
        if type(src) is not bytes:
            src = ffi.from_buffer("uint8_t[]", src)
        lib.amd_frame_write_fragments(
            self._ptr, offset, header_template, term_id, src, len(src), max_payload_length, reserved_value
        )

    # A concurrent claim in this term: ONE fetch-and-add on the int64 tail counter at ``tail_offset`` of
    # ``tail_buffer`` reserves the space. Result: the new term offset, or AMD_APPEND_* (< 0). (Concurrent
    # offers reserve the same way inside one native call: logbuffer/publication_offer.py.)
    def term_claim(
        self, tail_buffer: AtomicBuffer, tail_offset: int, term_id: int, header_template: bytes, length: int
    ) -> int:
        """Reserve and write the header of a frame of ``length`` payload bytes, its length left negative."""
        return lib.amd_term_claim(
            self._ptr, self._length, tail_buffer._ptr, tail_offset, term_id, header_template, length
        )

    def scan_frames(self, offset: int, max_frames: int, batch: FrameBatch) -> tuple[int, int]:
        """Walk committed frames from ``offset`` as TermReader does; (non-padding frames found, next offset).

        Their (offset, length) pairs are in ``batch.pairs(count)``. Padding is stepped over, not reported."""
        if max_frames > batch.capacity:
            max_frames = batch.capacity
        result = lib.amd_term_scan_frames(self._ptr, self._length, offset, max_frames, batch._frames)
        return result & 0xFFFFFFFF, result >> 32

    def scan_for_availability(self, offset: int, max_length: int) -> tuple[int, int]:
        """TermScanner.scanForAvailability: (available bytes, padding bytes to skip after them)."""
        result = lib.amd_term_scan_for_availability(self._ptr, self._length, offset, max_length)
        return result & 0xFFFFFFFF, result >> 32

    def scan_block(self, offset: int, limit_offset: int) -> int:
        """TermBlockScanner.scan: the offset after the last whole committed frame before ``limit_offset``."""
        if limit_offset > self._length:
            limit_offset = self._length
        return lib.amd_term_block_scan(self._ptr, offset, limit_offset)

    def scan_block_counting(self, offset: int, limit_offset: int) -> tuple[int, int]:
        """``scan_block`` and the messages of the block, in one walk: (end offset, messages)."""
        if limit_offset > self._length:
            limit_offset = self._length
        result = lib.amd_term_block_scan_count(self._ptr, offset, limit_offset)
        return result & 0xFFFFFFFF, result >> 32

    def count_messages(self, offset: int, end: int) -> int:
        """Messages (unfragmented or BEGIN_FRAG DATA frames) among the committed frames in [offset, end)."""
        if end > self._length:
            end = self._length
        return lib.amd_term_count_messages(self._ptr, self._length, offset, end)

    def write_block(
        self, term_offset: int, src: bytearray, length: int, limit: int, session_id: int, stream_id: int
    ) -> tuple[int, bool]:
        """A replay's block (docs/archive.md section 15): the whole DATA/PAD frames at the start of
        ``src[:length]`` that begin before ``limit``, with their session and stream ids rewritten (in ``src``
        too), copied to ``term_offset`` and made visible at once by a release store of the first frame's length
        (ExclusivePublication.offerBlock). Returns (bytes copied, whether a frame that is neither DATA nor PAD
        stopped the run)."""
        if not 0 <= length <= len(src):
            raise ValueError(f"block of {length} bytes is outside a source of {len(src)} bytes")
        if term_offset < 0 or term_offset & 31 or term_offset + length > self._length:
            raise ValueError(f"block {term_offset}+{length} is not inside a term of {self._length} bytes")
        result = lib.amd_term_write_block(
            self._ptr,
            self._length,
            term_offset,
            ffi.from_buffer("uint8_t[]", src),
            length,
            limit,
            session_id,
            stream_id,
        )
        return result & 0xFFFFFFFF, bool(result >> 32)

    # Receiver-side rebuild (docs/logbuffer.md section 7; contract in native/README.md, amd_rebuild.h).
    def term_rebuild_insert(self, term_offset: int, src: Any, src_offset: int, length: int) -> int:
        """TermRebuilder.insert of the datagram ``src[src_offset : src_offset + length]`` at ``term_offset``.

        Result: frames inserted (0 for a duplicate or a heartbeat), or AMD_REBUILD_OUT_OF_TERM /
        AMD_REBUILD_MALFORMED (< 0, nothing written). Every frame header is checked before anything is
        written; each absent frame goes in body first, its first 8 bytes last with a release store."""
        if src_offset < 0 or length < 0 or src_offset + length > len(src):
            raise ValueError(f"packet {src_offset}+{length} is outside a source of {len(src)} bytes")
        if type(src) is not bytes:
            src = ffi.from_buffer("uint8_t[]", src)
        return lib.amd_term_rebuild_insert(self._ptr, self._length, term_offset, src, src_offset, length)

    def scan_for_gap(self, rebuild_offset: int, limit_offset: int) -> tuple[int, int]:
        """TermGapScanner.scanForGap: (gap offset == new rebuild offset, gap length; 0 when no gap)."""
        if not 0 <= rebuild_offset <= self._length or rebuild_offset & 31:
            raise ValueError(f"rebuild offset {rebuild_offset} is not a frame offset in {self._length} bytes")
        result = lib.amd_term_scan_for_gap(self._ptr, self._length, rebuild_offset, limit_offset)
        return result >> 32, result & 0xFFFFFFFF

    def scan_for_gaps(
        self, rebuild_offset: int, limit_offset: int, max_gaps: int, batch: FrameBatch
    ) -> tuple[int, int]:
        """Every gap below ``limit_offset``, at most ``max_gaps``: (new rebuild offset, gap count); the
        (offset, length) pairs are in ``batch.pairs(count)``."""
        if not 0 <= rebuild_offset <= self._length or rebuild_offset & 31:
            raise ValueError(f"rebuild offset {rebuild_offset} is not a frame offset in {self._length} bytes")
        if max_gaps > batch.capacity:
            max_gaps = batch.capacity
        result = lib.amd_term_scan_for_gaps(
            self._ptr, self._length, rebuild_offset, limit_offset, max_gaps, batch._frames
        )
        return result >> 32, result & 0xFFFFFFFF

    def term_gap_fill(self, gap_offset: int, gap_length: int, header_template: bytes, term_id: int) -> bool:
        """TermGapFiller.tryFillGap: a committed PAD frame over the gap if every 32-byte slot is still 0."""
        return bool(
            lib.amd_term_gap_fill(self._ptr, self._length, gap_offset, gap_length, header_template, term_id)
        )

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


class FrameBatch:
    """Scratch for ``AtomicBuffer.scan_frames``: room for ``capacity`` (offset, length) int32 pairs.

    Its owner (a term reader) allocates it once and reuses it every poll, so a scan allocates nothing.
    This is memory cffi owns, not a pointer into a mapping, so it outlives any buffer it is used with.
    """

    __slots__ = ("_frames", "_view", "capacity")

    def __init__(self, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError(f"a frame batch needs room for at least one frame, capacity={capacity}")
        self.capacity = capacity
        self._frames = ffi.new("int32_t[]", 2 * capacity)
        self._view = memoryview(ffi.buffer(self._frames)).cast("i")

    def pairs(self, count: int) -> list[int]:
        """[offset0, length0, offset1, length1, ...] of the last scan's first ``count`` frames, as a list:
        a copy, so a handler that scans again (re-entrantly) cannot overwrite what is being delivered."""
        return self._view[: 2 * count].tolist()
