"""BufferClaim: a frame claimed in a term (tryClaim), filled in place and then committed or aborted.

Until ``commit()`` the frame's length field holds ``-frame_length``, so readers stop in front of it and
later frames wait behind it: commit or abort promptly (the driver unblocks a frame left claimed for
``aeron.publication.unblock.timeout`` by turning it into padding).
"""

from __future__ import annotations

import struct

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer import fastpath
from driver.concurrent.logbuffer.frame_descriptor import (
    FLAGS_OFFSET,
    FRAME_LENGTH_OFFSET,
    HDR_TYPE_PAD,
    HEADER_LENGTH,
    RESERVED_VALUE_OFFSET,
    TYPE_OFFSET,
)

_U16 = struct.Struct("<H")
_I64 = struct.Struct("<q")
_put_int32_release = fastpath.int32_release_store()
_UNCLAIMED = "no claimed frame: claim() did not succeed, or it was committed or aborted"


class BufferClaimError(RuntimeError):
    """The claim was used before a successful claim, or after it was committed or aborted."""


class BufferClaim:
    __slots__ = ("_address", "_buffer", "_frame_length", "_frame_offset")

    def __init__(self) -> None:
        self._buffer: AtomicBuffer | None = None
        self._frame_offset = 0
        self._frame_length = 0
        self._address = 0
        """The frame's address when the fast path's try_claim set it (then commit is one C call), else 0."""

    def wrap(self, buffer: AtomicBuffer, frame_offset: int, frame_length: int) -> None:
        """Called by the appender with the claimed frame (its header written, its length negative)."""
        self._buffer = buffer
        self._frame_offset = frame_offset
        self._frame_length = frame_length
        self._address = 0

    def _claimed(self) -> AtomicBuffer:
        buffer = self._buffer
        if buffer is None:
            raise BufferClaimError(_UNCLAIMED)
        return buffer

    @property
    def is_claimed(self) -> bool:
        return self._buffer is not None

    @property
    def buffer(self) -> AtomicBuffer:
        """The term buffer holding the claimed frame."""
        return self._claimed()

    @property
    def frame_offset(self) -> int:
        return self._frame_offset

    @property
    def offset(self) -> int:
        """Where the payload starts in ``buffer``."""
        return self._frame_offset + HEADER_LENGTH

    @property
    def length(self) -> int:
        """Payload length claimed."""
        return self._frame_length - HEADER_LENGTH

    @property
    def view(self) -> memoryview:
        """The payload region, for writing the message in place."""
        start = self._frame_offset + HEADER_LENGTH
        return self._claimed().view[start : self._frame_offset + self._frame_length]

    def put_bytes(self, src: bytes | bytearray | memoryview, offset: int = 0) -> BufferClaim:
        """Copy ``src`` into the payload at ``offset``."""
        buffer = self._buffer
        if buffer is None:
            raise BufferClaimError(_UNCLAIMED)
        length = len(src) if type(src) is bytes else memoryview(src).nbytes
        if offset < 0 or offset + length > self._frame_length - HEADER_LENGTH:
            raise ValueError(
                f"{length} bytes at {offset} do not fit a claim of {self._frame_length - HEADER_LENGTH} bytes"
            )
        buffer.put_bytes(self._frame_offset + HEADER_LENGTH + offset, src)
        return self

    @property
    def flags(self) -> int:
        return self._claimed().view[self._frame_offset + FLAGS_OFFSET]

    @flags.setter
    def flags(self, value: int) -> None:
        self._claimed().view[self._frame_offset + FLAGS_OFFSET] = value

    @property
    def header_type(self) -> int:
        return _U16.unpack_from(self._claimed().view, self._frame_offset + TYPE_OFFSET)[0]

    @header_type.setter
    def header_type(self, value: int) -> None:
        _U16.pack_into(self._claimed().view, self._frame_offset + TYPE_OFFSET, value)

    @property
    def reserved_value(self) -> int:
        return _I64.unpack_from(self._claimed().view, self._frame_offset + RESERVED_VALUE_OFFSET)[0]

    @reserved_value.setter
    def reserved_value(self, value: int) -> None:
        _I64.pack_into(self._claimed().view, self._frame_offset + RESERVED_VALUE_OFFSET, value)

    def commit(self) -> None:
        """Publish the frame: a release store of its positive length."""
        buffer = self._buffer
        if buffer is None:
            raise BufferClaimError(_UNCLAIMED)
        self._buffer = None
        if self._address:
            _put_int32_release(self._address + FRAME_LENGTH_OFFSET, self._frame_length)
        else:
            buffer.put_int32_release(self._frame_offset + FRAME_LENGTH_OFFSET, self._frame_length)

    def abort(self) -> None:
        """Give the space up: the frame becomes padding that readers step over."""
        buffer = self._claimed()
        self._buffer = None
        _U16.pack_into(buffer.view, self._frame_offset + TYPE_OFFSET, HDR_TYPE_PAD)
        buffer.put_int32_release(self._frame_offset + FRAME_LENGTH_OFFSET, self._frame_length)
