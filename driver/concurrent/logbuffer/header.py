"""Header: a flyweight over the DATA header of the frame a fragment handler is being given (Aeron's Header).

The reader points it at each frame in turn (``buffer`` and ``offset`` are plain attributes so that costs
one store); the properties decode the frame's fields when asked. Valid only during the handler call.
"""

from __future__ import annotations

import struct
from typing import Any

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.frame_descriptor import (
    FLAGS_OFFSET,
    FRAME_ALIGNMENT,
    RESERVED_VALUE_OFFSET,
    SESSION_ID_OFFSET,
    STREAM_ID_OFFSET,
    TERM_ID_OFFSET,
    TYPE_OFFSET,
)
from driver.util.bit_util import to_int32

_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
_I64 = struct.Struct("<q")
_FRAME_LENGTH_AND_TERM_ID = struct.Struct(f"<i{TERM_ID_OFFSET - 4}xi")
_ALIGNMENT_MASK = ~(FRAME_ALIGNMENT - 1)


class Header:
    __slots__ = ("buffer", "context", "initial_term_id", "offset", "position_bits_to_shift")

    def __init__(self, initial_term_id: int, position_bits_to_shift: int, context: Any = None) -> None:
        self.initial_term_id = initial_term_id
        self.position_bits_to_shift = position_bits_to_shift
        self.context = context
        self.buffer: AtomicBuffer | None = None
        self.offset = 0

    @property
    def frame_length(self) -> int:
        return _I32.unpack_from(self.buffer.view, self.offset)[0]

    @property
    def flags(self) -> int:
        """The flags byte, 0..255 (Java's is a signed byte)."""
        return self.buffer.view[self.offset + FLAGS_OFFSET]

    @property
    def type(self) -> int:
        return _U16.unpack_from(self.buffer.view, self.offset + TYPE_OFFSET)[0]

    @property
    def term_offset(self) -> int:
        """The frame's offset in its term; as Aeron, where it sits rather than its term_offset field."""
        return self.offset

    @property
    def session_id(self) -> int:
        return _I32.unpack_from(self.buffer.view, self.offset + SESSION_ID_OFFSET)[0]

    @property
    def stream_id(self) -> int:
        return _I32.unpack_from(self.buffer.view, self.offset + STREAM_ID_OFFSET)[0]

    @property
    def term_id(self) -> int:
        return _I32.unpack_from(self.buffer.view, self.offset + TERM_ID_OFFSET)[0]

    @property
    def reserved_value(self) -> int:
        return _I64.unpack_from(self.buffer.view, self.offset + RESERVED_VALUE_OFFSET)[0]

    @property
    def position(self) -> int:
        """The stream position just after this frame (aligned): where a subscriber is once it is consumed."""
        offset = self.offset
        frame_length, term_id = _FRAME_LENGTH_AND_TERM_ID.unpack_from(self.buffer.view, offset)
        end_offset = (offset + frame_length + FRAME_ALIGNMENT - 1) & _ALIGNMENT_MASK
        return (to_int32(term_id - self.initial_term_id) << self.position_bits_to_shift) + end_offset

    def __repr__(self) -> str:
        if self.buffer is None:
            return f"Header(initial_term_id={self.initial_term_id}, unset)"
        return (
            f"Header(term_id={self.term_id}, term_offset={self.offset}, frame_length={self.frame_length}, "
            f"flags=0x{self.flags:02x}, type={self.type}, session_id={self.session_id}, "
            f"stream_id={self.stream_id})"
        )
