"""The frame header layout a term holds (docs/wire.md sections 1-2, docs/logbuffer.md section 4).

Aeron keeps this in its log buffer package (FrameDescriptor, DataHeaderFlyweight's offsets): the log buffer
code and the wire protocol share it, and it sits here, below both, so that ``driver/protocol/frames.py``
imports it and nothing in ``driver/concurrent/`` imports the protocol. All fields are little-endian;
``native/include/amd_term.h`` mirrors the offsets C needs (checked by a test).
"""

from __future__ import annotations

import struct

from driver.util.bit_util import SIZE_OF_INT32, SIZE_OF_INT64

_SIZE_OF_UINT8 = 1
_SIZE_OF_UINT16 = 2

CURRENT_VERSION = 0

# Common header, the first 8 bytes of every frame.
FRAME_LENGTH_OFFSET = 0
VERSION_OFFSET = FRAME_LENGTH_OFFSET + SIZE_OF_INT32
FLAGS_OFFSET = VERSION_OFFSET + _SIZE_OF_UINT8
TYPE_OFFSET = FLAGS_OFFSET + _SIZE_OF_UINT8
MIN_HEADER_LENGTH = TYPE_OFFSET + _SIZE_OF_UINT16

# DATA and PAD frames.
TERM_OFFSET_OFFSET = MIN_HEADER_LENGTH
SESSION_ID_OFFSET = TERM_OFFSET_OFFSET + SIZE_OF_INT32
STREAM_ID_OFFSET = SESSION_ID_OFFSET + SIZE_OF_INT32
TERM_ID_OFFSET = STREAM_ID_OFFSET + SIZE_OF_INT32
RESERVED_VALUE_OFFSET = TERM_ID_OFFSET + SIZE_OF_INT32
HEADER_LENGTH = RESERVED_VALUE_OFFSET + SIZE_OF_INT64
DATA_HEADER_LENGTH = HEADER_LENGTH

FRAME_ALIGNMENT = 32

# Frame types (uint16 at TYPE_OFFSET).
HDR_TYPE_PAD = 0x00
HDR_TYPE_DATA = 0x01
HDR_TYPE_NAK = 0x02
HDR_TYPE_SM = 0x03
HDR_TYPE_ERR = 0x04
HDR_TYPE_SETUP = 0x05
HDR_TYPE_RTTM = 0x06
HDR_TYPE_EXT = 0xFFFF

# DATA flags (uint8 at FLAGS_OFFSET).
BEGIN_FLAG = 0x80
END_FLAG = 0x40
UNFRAGMENTED = BEGIN_FLAG | END_FLAG
EOS_FLAG = 0x20
BEGIN_END_AND_EOS_FLAGS = UNFRAGMENTED | EOS_FLAG

# frame_length, version, flags, type, term_offset, session_id, stream_id, term_id, reserved_value
DATA_HEADER = struct.Struct("<iBBHiiiiq")
assert DATA_HEADER.size == HEADER_LENGTH


def create_default_header(session_id: int, stream_id: int, term_id: int) -> bytes:
    """The default DATA header a driver stores in a log's metadata (DataHeaderFlyweight.createDefaultHeader):
    frame_length 0, version 0, flags BEGIN|END, type DATA, term_offset 0, reserved value 0."""
    return DATA_HEADER.pack(
        0, CURRENT_VERSION, UNFRAGMENTED, HDR_TYPE_DATA, 0, session_id, stream_id, term_id, 0
    )
