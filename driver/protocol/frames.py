"""Aeron 1.15.1 frames on the wire (docs/wire.md): control frames, validation, encoders and decoders.

All fields are little-endian. The common and DATA/PAD header layout lives below the log buffer code in
``driver/concurrent/logbuffer/frame_descriptor.py`` (the terms hold those frames) and is re-exported here.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from driver.concurrent.logbuffer.frame_descriptor import (
    BEGIN_END_AND_EOS_FLAGS as BEGIN_END_AND_EOS_FLAGS,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    BEGIN_FLAG as BEGIN_FLAG,
)

# The DATA/PAD header and the common header are the log buffer's layout; re-exported here for the wire code.
from driver.concurrent.logbuffer.frame_descriptor import (
    CURRENT_VERSION as CURRENT_VERSION,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    DATA_HEADER as DATA_HEADER,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    DATA_HEADER_LENGTH as DATA_HEADER_LENGTH,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    END_FLAG as END_FLAG,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    EOS_FLAG as EOS_FLAG,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    FLAGS_OFFSET as FLAGS_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT as FRAME_ALIGNMENT,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    FRAME_LENGTH_OFFSET as FRAME_LENGTH_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_DATA as HDR_TYPE_DATA,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_ERR as HDR_TYPE_ERR,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_EXT as HDR_TYPE_EXT,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_NAK as HDR_TYPE_NAK,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_PAD as HDR_TYPE_PAD,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_RTTM as HDR_TYPE_RTTM,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_SETUP as HDR_TYPE_SETUP,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HDR_TYPE_SM as HDR_TYPE_SM,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    HEADER_LENGTH as HEADER_LENGTH,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    MIN_HEADER_LENGTH as MIN_HEADER_LENGTH,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    RESERVED_VALUE_OFFSET as RESERVED_VALUE_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    SESSION_ID_OFFSET as SESSION_ID_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    STREAM_ID_OFFSET as STREAM_ID_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    TERM_ID_OFFSET as TERM_ID_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    TERM_OFFSET_OFFSET as TERM_OFFSET_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    TYPE_OFFSET as TYPE_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    UNFRAGMENTED as UNFRAGMENTED,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    VERSION_OFFSET as VERSION_OFFSET,
)
from driver.concurrent.logbuffer.frame_descriptor import (
    create_default_header as create_default_header,
)
from driver.util.bit_util import SIZE_OF_INT32, SIZE_OF_INT64

# ---------------------------------------------------------------------------------------------------------
# Control frames (docs/wire.md sections 3-6), validation of datagrams from the network, encoders, decoders.
# ---------------------------------------------------------------------------------------------------------

MAX_UDP_PAYLOAD_LENGTH = 65504
TERM_MIN_LENGTH = 64 * 1024
TERM_MAX_LENGTH = 1024 * 1024 * 1024

# Common header alone: frame_length, version, flags, type.
COMMON_HEADER = struct.Struct("<iBBH")
assert COMMON_HEADER.size == MIN_HEADER_LENGTH

# SETUP (40 bytes). 1.15.1 sends flags 0; today's Aeron sets SEND_RESPONSE_SETUP_FLAG on a request
# publication's SETUP (it wants a response channel) and GROUP_FLAG for group semantics.
SEND_RESPONSE_SETUP_FLAG = 0x80
GROUP_FLAG = 0x40
SETUP_TERM_OFFSET_OFFSET = MIN_HEADER_LENGTH
SETUP_SESSION_ID_OFFSET = SETUP_TERM_OFFSET_OFFSET + SIZE_OF_INT32
SETUP_STREAM_ID_OFFSET = SETUP_SESSION_ID_OFFSET + SIZE_OF_INT32
SETUP_INITIAL_TERM_ID_OFFSET = SETUP_STREAM_ID_OFFSET + SIZE_OF_INT32
SETUP_ACTIVE_TERM_ID_OFFSET = SETUP_INITIAL_TERM_ID_OFFSET + SIZE_OF_INT32
SETUP_TERM_LENGTH_OFFSET = SETUP_ACTIVE_TERM_ID_OFFSET + SIZE_OF_INT32
SETUP_MTU_LENGTH_OFFSET = SETUP_TERM_LENGTH_OFFSET + SIZE_OF_INT32
SETUP_TTL_OFFSET = SETUP_MTU_LENGTH_OFFSET + SIZE_OF_INT32
SETUP_HEADER_LENGTH = SETUP_TTL_OFFSET + SIZE_OF_INT32
# frame_length, version, flags, type, term_offset, session_id, stream_id, initial_term_id, active_term_id,
# term_length, mtu_length, ttl
SETUP_HEADER = struct.Struct("<iBBHiiiiiiii")
assert SETUP_HEADER.size == SETUP_HEADER_LENGTH == 40

# SM, status message (36 bytes + optional application-specific feedback).
SEND_SETUP_FLAG = 0x80
SM_SESSION_ID_OFFSET = MIN_HEADER_LENGTH
SM_STREAM_ID_OFFSET = SM_SESSION_ID_OFFSET + SIZE_OF_INT32
SM_CONSUMPTION_TERM_ID_OFFSET = SM_STREAM_ID_OFFSET + SIZE_OF_INT32
SM_CONSUMPTION_TERM_OFFSET_OFFSET = SM_CONSUMPTION_TERM_ID_OFFSET + SIZE_OF_INT32
SM_RECEIVER_WINDOW_OFFSET = SM_CONSUMPTION_TERM_OFFSET_OFFSET + SIZE_OF_INT32
SM_RECEIVER_ID_OFFSET = SM_RECEIVER_WINDOW_OFFSET + SIZE_OF_INT32
SM_HEADER_LENGTH = SM_RECEIVER_ID_OFFSET + SIZE_OF_INT64
# frame_length, version, flags, type, session_id, stream_id, consumption_term_id, consumption_term_offset,
# receiver_window, receiver_id
SM_HEADER = struct.Struct("<iBBHiiiiiq")
assert SM_HEADER.size == SM_HEADER_LENGTH == 36

# NAK (28 bytes, flags 0).
NAK_SESSION_ID_OFFSET = MIN_HEADER_LENGTH
NAK_STREAM_ID_OFFSET = NAK_SESSION_ID_OFFSET + SIZE_OF_INT32
NAK_TERM_ID_OFFSET = NAK_STREAM_ID_OFFSET + SIZE_OF_INT32
NAK_TERM_OFFSET_OFFSET = NAK_TERM_ID_OFFSET + SIZE_OF_INT32
NAK_LENGTH_OFFSET = NAK_TERM_OFFSET_OFFSET + SIZE_OF_INT32
NAK_HEADER_LENGTH = NAK_LENGTH_OFFSET + SIZE_OF_INT32
# frame_length, version, flags, type, session_id, stream_id, term_id, term_offset, length
NAK_HEADER = struct.Struct("<iBBHiiiii")
assert NAK_HEADER.size == NAK_HEADER_LENGTH == 28

# RTTM, RTT measurement (40 bytes).
REPLY_FLAG = 0x80
RTTM_SESSION_ID_OFFSET = MIN_HEADER_LENGTH
RTTM_STREAM_ID_OFFSET = RTTM_SESSION_ID_OFFSET + SIZE_OF_INT32
RTTM_ECHO_TIMESTAMP_OFFSET = RTTM_STREAM_ID_OFFSET + SIZE_OF_INT32
RTTM_RECEPTION_DELTA_OFFSET = RTTM_ECHO_TIMESTAMP_OFFSET + SIZE_OF_INT64
RTTM_RECEIVER_ID_OFFSET = RTTM_RECEPTION_DELTA_OFFSET + SIZE_OF_INT64
RTTM_HEADER_LENGTH = RTTM_RECEIVER_ID_OFFSET + SIZE_OF_INT64
# frame_length, version, flags, type, session_id, stream_id, echo_timestamp_ns, reception_delta, receiver_id
RTTM_HEADER = struct.Struct("<iBBHiiqqq")
assert RTTM_HEADER.size == RTTM_HEADER_LENGTH == 40

# RSP_SETUP, response setup (today's Aeron, not 1.15.1; 20 bytes): the image of a request publication
# tells that publication's driver the session id the server's response publication uses.
HDR_TYPE_RSP_SETUP = 0x0B
RSP_SETUP_SESSION_ID_OFFSET = MIN_HEADER_LENGTH
RSP_SETUP_STREAM_ID_OFFSET = RSP_SETUP_SESSION_ID_OFFSET + SIZE_OF_INT32
RSP_SETUP_RESPONSE_SESSION_ID_OFFSET = RSP_SETUP_STREAM_ID_OFFSET + SIZE_OF_INT32
RSP_SETUP_HEADER_LENGTH = RSP_SETUP_RESPONSE_SESSION_ID_OFFSET + SIZE_OF_INT32
# frame_length, version, flags, type, session_id, stream_id, response_session_id
RSP_SETUP_HEADER = struct.Struct("<iBBHiii")
assert RSP_SETUP_HEADER.size == RSP_SETUP_HEADER_LENGTH == 20

# Heartbeats are 32-byte DATA frames with frame_length 0.
HEARTBEAT_FLAGS = UNFRAGMENTED
EOS_HEARTBEAT_FLAGS = BEGIN_END_AND_EOS_FLAGS

_HEADER_LENGTH_BY_TYPE = {
    HDR_TYPE_PAD: HEADER_LENGTH,
    HDR_TYPE_DATA: HEADER_LENGTH,
    HDR_TYPE_NAK: NAK_HEADER_LENGTH,
    HDR_TYPE_SM: SM_HEADER_LENGTH,
    HDR_TYPE_SETUP: SETUP_HEADER_LENGTH,
    HDR_TYPE_RTTM: RTTM_HEADER_LENGTH,
    HDR_TYPE_RSP_SETUP: RSP_SETUP_HEADER_LENGTH,
}
_INT4 = struct.Struct("<iiii")
_I32 = struct.Struct("<i")


def is_valid_mtu_length(mtu_length: int) -> bool:
    return HEADER_LENGTH <= mtu_length <= MAX_UDP_PAYLOAD_LENGTH and mtu_length % FRAME_ALIGNMENT == 0


def is_valid_term_length(term_length: int) -> bool:
    return TERM_MIN_LENGTH <= term_length <= TERM_MAX_LENGTH and term_length & (term_length - 1) == 0


def is_heartbeat(buffer: bytes | bytearray | memoryview, datagram_length: int, offset: int = 0) -> bool:
    """DataHeaderFlyweight.isHeartbeat: a 32-byte datagram whose frame length is 0."""
    return datagram_length == HEADER_LENGTH and _I32.unpack_from(buffer, offset)[0] == 0


def is_end_of_stream(buffer: bytes | bytearray | memoryview, offset: int = 0) -> bool:
    """DataHeaderFlyweight.isEndOfStream: flags byte equal to BEGIN|END|EOS."""
    return buffer[offset + FLAGS_OFFSET] == BEGIN_END_AND_EOS_FLAGS


def validate_frame(
    datagram_length: int, buffer: bytes | bytearray | memoryview, term_length: int | None = None
) -> str | None:
    """Why the datagram in ``buffer[:datagram_length]`` must be dropped, or None if its first frame is sound.

    Aeron's check (docs/wire.md section 1: length >= 8, version 0) plus the header sanity of the first
    frame that a hostile or broken peer could get wrong: each type's whole header present, frame lengths
    that fit, term offsets that are 32-aligned and inside the term (``term_length`` when the caller knows
    the image's, else the largest legal term), sane SETUP parameters, no negative lengths or windows.
    Unknown, ERR and EXT types are reported too (1.15.1 handles none of them). Frames after the first of a
    DATA datagram are checked by the rebuild insert, which writes nothing unless all of them are sound."""
    if datagram_length < MIN_HEADER_LENGTH:
        return f"datagram of {datagram_length} bytes is shorter than a frame header"
    if len(buffer) < datagram_length:
        return f"buffer of {len(buffer)} bytes is shorter than the datagram length {datagram_length}"
    if datagram_length > MAX_UDP_PAYLOAD_LENGTH:
        return f"datagram of {datagram_length} bytes is longer than the maximum UDP payload"
    frame_length, version, _flags, frame_type = COMMON_HEADER.unpack_from(buffer, 0)
    if version != CURRENT_VERSION:
        return f"version {version}, expected {CURRENT_VERSION}"
    header_length = _HEADER_LENGTH_BY_TYPE.get(frame_type)
    if header_length is None:
        return f"unsupported frame type {frame_type:#06x}"
    if datagram_length < header_length:
        return f"datagram of {datagram_length} bytes is shorter than the {header_length}-byte header of type {frame_type}"
    max_term_length = TERM_MAX_LENGTH if term_length is None else term_length

    if frame_type in (HDR_TYPE_DATA, HDR_TYPE_PAD):
        term_offset = _INT4.unpack_from(buffer, TERM_OFFSET_OFFSET)[0]
        if term_offset < 0 or term_offset & (FRAME_ALIGNMENT - 1) or term_offset >= max_term_length:
            return f"term offset {term_offset} is not a frame offset in a term of {max_term_length} bytes"
        if frame_length == 0 and datagram_length == HEADER_LENGTH and frame_type == HDR_TYPE_DATA:
            return None  # heartbeat
        if frame_length < HEADER_LENGTH:
            return f"frame length {frame_length} is shorter than a data header"
        if frame_type == HDR_TYPE_DATA:
            if frame_length > datagram_length:
                return f"frame length {frame_length} is longer than the datagram ({datagram_length} bytes)"
            if term_offset + datagram_length > max_term_length:
                return f"{datagram_length} bytes at term offset {term_offset} cross the end of the term"
        else:
            if term_offset + frame_length > max_term_length:
                return f"padding of {frame_length} bytes at term offset {term_offset} crosses the end of the term"
            if datagram_length > ((frame_length + FRAME_ALIGNMENT - 1) & ~(FRAME_ALIGNMENT - 1)):
                return f"datagram of {datagram_length} bytes is longer than its padding frame"
        return None

    if frame_length < header_length or frame_length > datagram_length:
        return f"frame length {frame_length} for type {frame_type} in a datagram of {datagram_length} bytes"

    if frame_type == HDR_TYPE_SETUP:
        (_, _, _, _, term_offset, _, _, _, _, setup_term_length, mtu_length, ttl) = SETUP_HEADER.unpack_from(
            buffer, 0
        )
        if not is_valid_term_length(setup_term_length):
            return f"SETUP term length {setup_term_length} is not a power of two in 64 KiB..1 GiB"
        if not is_valid_mtu_length(mtu_length):
            return f"SETUP mtu length {mtu_length} is not a multiple of 32 in 32..{MAX_UDP_PAYLOAD_LENGTH}"
        if term_offset < 0 or term_offset & (FRAME_ALIGNMENT - 1) or term_offset >= setup_term_length:
            return f"SETUP term offset {term_offset} is not a frame offset in a term of {setup_term_length} bytes"
        if ttl < 0:
            return f"SETUP ttl {ttl} is negative"
    elif frame_type == HDR_TYPE_SM:
        _, _, consumption_term_offset, window = _INT4.unpack_from(buffer, SM_STREAM_ID_OFFSET)
        if consumption_term_offset < 0 or consumption_term_offset > max_term_length:
            return f"SM consumption term offset {consumption_term_offset} is outside a term of {max_term_length} bytes"
        if window < 0:
            return f"SM receiver window {window} is negative"
    elif frame_type == HDR_TYPE_NAK:
        term_offset, length = _INT4.unpack_from(buffer, NAK_STREAM_ID_OFFSET)[2:]
        if term_offset < 0 or term_offset > max_term_length - HEADER_LENGTH:
            return f"NAK term offset {term_offset} is outside a term of {max_term_length} bytes"
        if length < 0:
            return f"NAK length {length} is negative"
    return None


# --- encoders ----------------------------------------------------------------------------------------------


def encode_setup(
    term_offset: int,
    session_id: int,
    stream_id: int,
    initial_term_id: int,
    active_term_id: int,
    term_length: int,
    mtu_length: int,
    ttl: int,
    flags: int = 0,
) -> bytes:
    return SETUP_HEADER.pack(
        SETUP_HEADER_LENGTH,
        CURRENT_VERSION,
        flags,
        HDR_TYPE_SETUP,
        term_offset,
        session_id,
        stream_id,
        initial_term_id,
        active_term_id,
        term_length,
        mtu_length,
        ttl,
    )


def encode_status_message(
    session_id: int,
    stream_id: int,
    consumption_term_id: int,
    consumption_term_offset: int,
    receiver_window: int,
    receiver_id: int,
    flags: int = 0,
    feedback: bytes | bytearray | memoryview = b"",
) -> bytes:
    header = SM_HEADER.pack(
        SM_HEADER_LENGTH + len(feedback),
        CURRENT_VERSION,
        flags,
        HDR_TYPE_SM,
        session_id,
        stream_id,
        consumption_term_id,
        consumption_term_offset,
        receiver_window,
        receiver_id,
    )
    return header + bytes(feedback) if feedback else header


def encode_setup_eliciting_status_message(session_id: int, stream_id: int, receiver_id: int) -> bytes:
    """The SM a receiver sends for data of an unknown session: SEND_SETUP, term 0, offset 0, window 0."""
    return encode_status_message(session_id, stream_id, 0, 0, 0, receiver_id, SEND_SETUP_FLAG)


def encode_response_setup(session_id: int, stream_id: int, response_session_id: int) -> bytes:
    return RSP_SETUP_HEADER.pack(
        RSP_SETUP_HEADER_LENGTH, CURRENT_VERSION, 0, HDR_TYPE_RSP_SETUP, session_id, stream_id, response_session_id
    )


def encode_nak(session_id: int, stream_id: int, term_id: int, term_offset: int, length: int) -> bytes:
    return NAK_HEADER.pack(
        NAK_HEADER_LENGTH,
        CURRENT_VERSION,
        0,
        HDR_TYPE_NAK,
        session_id,
        stream_id,
        term_id,
        term_offset,
        length,
    )


def encode_rttm(
    session_id: int,
    stream_id: int,
    echo_timestamp_ns: int,
    reception_delta: int,
    receiver_id: int,
    flags: int = 0,
) -> bytes:
    return RTTM_HEADER.pack(
        RTTM_HEADER_LENGTH,
        CURRENT_VERSION,
        flags,
        HDR_TYPE_RTTM,
        session_id,
        stream_id,
        echo_timestamp_ns,
        reception_delta,
        receiver_id,
    )


def encode_heartbeat(session_id: int, stream_id: int, term_id: int, term_offset: int, eos: bool) -> bytes:
    """A 32-byte DATA frame with frame length 0 at the sender position; flags 0xE0 once at end of stream."""
    return DATA_HEADER.pack(
        0,
        CURRENT_VERSION,
        EOS_HEARTBEAT_FLAGS if eos else HEARTBEAT_FLAGS,
        HDR_TYPE_DATA,
        term_offset,
        session_id,
        stream_id,
        term_id,
        0,
    )


# --- decoders ----------------------------------------------------------------------------------------------
# Immutable records (NamedTuple: attribute access, equality, hashing; about 4x cheaper to build than a frozen
# dataclass, which matters for the SMs a fast sender decodes). Each ``decode`` raises ValueError (only) when
# the buffer is too short for the header; field values are not judged here, that is validate_frame's job.

_tuple_new = tuple.__new__


def _check_room(buffer: bytes | bytearray | memoryview, offset: int, length: int, name: str) -> None:
    if offset < 0 or len(buffer) - offset < length:
        raise ValueError(f"{name} needs {length} bytes at offset {offset} of a {len(buffer)}-byte buffer")


class DataHeader(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    term_offset: int
    session_id: int
    stream_id: int
    term_id: int
    reserved_value: int

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> DataHeader:
        _check_room(buffer, offset, HEADER_LENGTH, "a DATA header")
        return _tuple_new(cls, DATA_HEADER.unpack_from(buffer, offset))

    @property
    def is_end_of_stream(self) -> bool:
        return self.flags == BEGIN_END_AND_EOS_FLAGS


class SetupFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    term_offset: int
    session_id: int
    stream_id: int
    initial_term_id: int
    active_term_id: int
    term_length: int
    mtu_length: int
    ttl: int

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> SetupFrame:
        _check_room(buffer, offset, SETUP_HEADER_LENGTH, "a SETUP frame")
        return _tuple_new(cls, SETUP_HEADER.unpack_from(buffer, offset))


class ResponseSetupFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    response_session_id: int

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> ResponseSetupFrame:
        _check_room(buffer, offset, RSP_SETUP_HEADER_LENGTH, "a RSP_SETUP frame")
        return _tuple_new(cls, RSP_SETUP_HEADER.unpack_from(buffer, offset))


class StatusMessageFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    consumption_term_id: int
    consumption_term_offset: int
    receiver_window: int
    receiver_id: int
    feedback: bytes = b""

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> StatusMessageFrame:
        """Feedback = the bytes after the 36-byte header up to frame_length (as far as the buffer goes)."""
        _check_room(buffer, offset, SM_HEADER_LENGTH, "a status message")
        fields = SM_HEADER.unpack_from(buffer, offset)
        frame_length = fields[0]
        if frame_length > SM_HEADER_LENGTH:
            end = min(offset + frame_length, len(buffer))
            return _tuple_new(cls, (*fields, bytes(buffer[offset + SM_HEADER_LENGTH : end])))
        return _tuple_new(cls, (*fields, b""))

    @property
    def receiver_window_length(self) -> int:
        return self.receiver_window

    @property
    def is_setup_eliciting(self) -> bool:
        return bool(self.flags & SEND_SETUP_FLAG)


class NakFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    term_id: int
    term_offset: int
    length: int

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> NakFrame:
        _check_room(buffer, offset, NAK_HEADER_LENGTH, "a NAK")
        return _tuple_new(cls, NAK_HEADER.unpack_from(buffer, offset))


class RttmFrame(NamedTuple):
    frame_length: int
    version: int
    flags: int
    type: int
    session_id: int
    stream_id: int
    echo_timestamp_ns: int
    reception_delta: int
    receiver_id: int

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> RttmFrame:
        _check_room(buffer, offset, RTTM_HEADER_LENGTH, "an RTTM frame")
        return _tuple_new(cls, RTTM_HEADER.unpack_from(buffer, offset))

    @property
    def is_reply_requested(self) -> bool:
        return bool(self.flags & REPLY_FLAG)


_FRAME_TYPE = struct.Struct("<H")


def frame_type(buffer: bytes | bytearray | memoryview, offset: int = 0) -> int:
    """The type field of the frame at ``offset`` (dispatch is on the first frame of a datagram)."""
    return _FRAME_TYPE.unpack_from(buffer, offset + TYPE_OFFSET)[0]
