"""Frame header layout of Aeron 1.15.1 (docs/wire.md section 2), and its mirror in native/include/amd_term.h."""

from __future__ import annotations

import contextlib
import struct

import pytest
from driver._native import lib
from hypothesis import given, settings
from hypothesis import strategies as st

from driver.protocol import frames as f


def test_data_header_field_offsets_follow_the_spec() -> None:
    assert (f.FRAME_LENGTH_OFFSET, f.VERSION_OFFSET, f.FLAGS_OFFSET, f.TYPE_OFFSET) == (0, 4, 5, 6)
    assert f.MIN_HEADER_LENGTH == 8
    assert (f.TERM_OFFSET_OFFSET, f.SESSION_ID_OFFSET, f.STREAM_ID_OFFSET, f.TERM_ID_OFFSET) == (
        8,
        12,
        16,
        20,
    )
    assert f.RESERVED_VALUE_OFFSET == 24
    assert f.HEADER_LENGTH == f.DATA_HEADER_LENGTH == 32
    assert f.FRAME_ALIGNMENT == 32
    assert f.CURRENT_VERSION == 0


def test_frame_types_and_flags() -> None:
    types = (
        f.HDR_TYPE_PAD,
        f.HDR_TYPE_DATA,
        f.HDR_TYPE_NAK,
        f.HDR_TYPE_SM,
        f.HDR_TYPE_ERR,
        f.HDR_TYPE_SETUP,
        f.HDR_TYPE_RTTM,
    )
    assert types == (0, 1, 2, 3, 4, 5, 6)
    assert f.HDR_TYPE_EXT == 0xFFFF
    assert (f.BEGIN_FLAG, f.END_FLAG, f.EOS_FLAG) == (0x80, 0x40, 0x20)
    assert f.UNFRAGMENTED == 0xC0
    assert f.BEGIN_END_AND_EOS_FLAGS == 0xE0


def test_default_header_is_what_the_driver_stores_in_log_metadata() -> None:
    header = f.create_default_header(session_id=-7, stream_id=1001, term_id=-2_000_000_000)
    assert len(header) == f.HEADER_LENGTH
    assert header[:8] == bytes([0, 0, 0, 0, 0, 0xC0, 1, 0])
    assert f.DATA_HEADER.unpack(header) == (0, 0, 0xC0, f.HDR_TYPE_DATA, 0, -7, 1001, -2_000_000_000, 0)


def test_the_c_header_mirrors_these_offsets() -> None:
    assert lib.AMD_FRAME_LENGTH_OFFSET == f.FRAME_LENGTH_OFFSET
    assert lib.AMD_FLAGS_OFFSET == f.FLAGS_OFFSET
    assert lib.AMD_TYPE_OFFSET == f.TYPE_OFFSET
    assert lib.AMD_TERM_OFFSET_OFFSET == f.TERM_OFFSET_OFFSET
    assert lib.AMD_SESSION_ID_OFFSET == f.SESSION_ID_OFFSET
    assert lib.AMD_STREAM_ID_OFFSET == f.STREAM_ID_OFFSET
    assert lib.AMD_TERM_ID_OFFSET == f.TERM_ID_OFFSET
    assert lib.AMD_RESERVED_VALUE_OFFSET == f.RESERVED_VALUE_OFFSET
    assert lib.AMD_DATA_HEADER_LENGTH == f.HEADER_LENGTH
    assert lib.AMD_FRAME_ALIGNMENT == f.FRAME_ALIGNMENT
    assert lib.AMD_HDR_TYPE_PAD == f.HDR_TYPE_PAD
    assert lib.AMD_HDR_TYPE_DATA == f.HDR_TYPE_DATA
    assert (lib.AMD_BEGIN_FLAG, lib.AMD_END_FLAG) == (f.BEGIN_FLAG, f.END_FLAG)
    assert lib.AMD_MAX_UDP_PAYLOAD_LENGTH == f.MAX_UDP_PAYLOAD_LENGTH


# --- control frames (docs/wire.md sections 3-6) --------------------------------------------------------------


def test_control_frame_layouts() -> None:
    assert (f.SETUP_HEADER_LENGTH, f.SM_HEADER_LENGTH, f.NAK_HEADER_LENGTH, f.RTTM_HEADER_LENGTH) == (
        40,
        36,
        28,
        40,
    )
    assert (f.SETUP_TERM_OFFSET_OFFSET, f.SETUP_SESSION_ID_OFFSET, f.SETUP_STREAM_ID_OFFSET) == (8, 12, 16)
    assert (f.SETUP_INITIAL_TERM_ID_OFFSET, f.SETUP_ACTIVE_TERM_ID_OFFSET, f.SETUP_TERM_LENGTH_OFFSET) == (
        20,
        24,
        28,
    )
    assert (f.SETUP_MTU_LENGTH_OFFSET, f.SETUP_TTL_OFFSET) == (32, 36)
    assert (f.SM_SESSION_ID_OFFSET, f.SM_STREAM_ID_OFFSET, f.SM_CONSUMPTION_TERM_ID_OFFSET) == (8, 12, 16)
    assert (f.SM_CONSUMPTION_TERM_OFFSET_OFFSET, f.SM_RECEIVER_WINDOW_OFFSET, f.SM_RECEIVER_ID_OFFSET) == (
        20,
        24,
        28,
    )
    assert (f.NAK_SESSION_ID_OFFSET, f.NAK_STREAM_ID_OFFSET, f.NAK_TERM_ID_OFFSET) == (8, 12, 16)
    assert (f.NAK_TERM_OFFSET_OFFSET, f.NAK_LENGTH_OFFSET) == (20, 24)
    assert (f.RTTM_SESSION_ID_OFFSET, f.RTTM_STREAM_ID_OFFSET, f.RTTM_ECHO_TIMESTAMP_OFFSET) == (8, 12, 16)
    assert (f.RTTM_RECEPTION_DELTA_OFFSET, f.RTTM_RECEIVER_ID_OFFSET) == (24, 32)
    assert f.SEND_SETUP_FLAG == f.REPLY_FLAG == 0x80
    assert (f.HEARTBEAT_FLAGS, f.EOS_HEARTBEAT_FLAGS) == (0xC0, 0xE0)


def test_setup_bytes_and_round_trip() -> None:
    data = f.encode_setup(1408, -3, 10, 100, 102, 65536, 1408, 0)
    assert len(data) == 40
    assert data[:8] == bytes([40, 0, 0, 0, 0, 0, 5, 0])
    assert struct.unpack_from("<8i", data, 8) == (1408, -3, 10, 100, 102, 65536, 1408, 0)
    setup = f.SetupFrame.decode(data)
    assert (setup.frame_length, setup.type, setup.term_offset, setup.session_id, setup.stream_id) == (
        40,
        f.HDR_TYPE_SETUP,
        1408,
        -3,
        10,
    )
    assert (setup.initial_term_id, setup.active_term_id, setup.term_length, setup.mtu_length, setup.ttl) == (
        100,
        102,
        65536,
        1408,
        0,
    )
    assert f.validate_frame(len(data), data) is None


def test_status_message_bytes_round_trip_and_feedback() -> None:
    data = f.encode_status_message(7, 8, 101, 4096, 32768, -0x1122334455667788)
    assert len(data) == 36
    assert data[:8] == bytes([36, 0, 0, 0, 0, 0, 3, 0])
    assert struct.unpack_from("<5iq", data, 8) == (7, 8, 101, 4096, 32768, -0x1122334455667788)
    sm = f.StatusMessageFrame.decode(data)
    assert (sm.session_id, sm.stream_id, sm.consumption_term_id, sm.consumption_term_offset) == (
        7,
        8,
        101,
        4096,
    )
    assert (sm.receiver_window, sm.receiver_window_length, sm.receiver_id, sm.feedback) == (
        32768,
        32768,
        -0x1122334455667788,
        b"",
    )
    assert not sm.is_setup_eliciting
    with_feedback = f.encode_status_message(7, 8, 101, 4096, 32768, 1, feedback=b"\x01\x02\x03")
    assert len(with_feedback) == 39 and f.StatusMessageFrame.decode(with_feedback).feedback == b"\x01\x02\x03"
    # in a receive buffer larger than the frame: feedback ends at frame_length
    assert f.StatusMessageFrame.decode(bytes(8) + with_feedback + bytes(20), 8).feedback == b"\x01\x02\x03"
    eliciting = f.encode_setup_eliciting_status_message(7, 8, 99)
    sm = f.StatusMessageFrame.decode(eliciting)
    assert sm.is_setup_eliciting and sm.flags == 0x80
    assert (sm.consumption_term_id, sm.consumption_term_offset, sm.receiver_window) == (0, 0, 0)
    for frame in (data, with_feedback, eliciting):
        assert f.validate_frame(len(frame), frame) is None


def test_nak_bytes_and_round_trip() -> None:
    data = f.encode_nak(1, 2, 3, 160, 96)
    assert len(data) == 28
    assert data[:8] == bytes([28, 0, 0, 0, 0, 0, 2, 0])
    nak = f.NakFrame.decode(data)
    assert (nak.session_id, nak.stream_id, nak.term_id, nak.term_offset, nak.length) == (1, 2, 3, 160, 96)
    assert f.validate_frame(28, data) is None


def test_rttm_bytes_and_round_trip() -> None:
    data = f.encode_rttm(1, 2, 123_456_789_000, 55, -9, flags=f.REPLY_FLAG)
    assert len(data) == 40
    assert data[:8] == bytes([40, 0, 0, 0, 0, 0x80, 6, 0])
    rttm = f.RttmFrame.decode(data)
    assert (
        rttm.session_id,
        rttm.stream_id,
        rttm.echo_timestamp_ns,
        rttm.reception_delta,
        rttm.receiver_id,
    ) == (
        1,
        2,
        123_456_789_000,
        55,
        -9,
    )
    assert rttm.is_reply_requested
    assert not f.RttmFrame.decode(f.encode_rttm(1, 2, 3, 0, 4)).is_reply_requested
    assert f.validate_frame(40, data) is None


def test_heartbeats() -> None:
    hb = f.encode_heartbeat(1, 2, 3, 4096, eos=False)
    eos = f.encode_heartbeat(1, 2, 3, 4096, eos=True)
    assert len(hb) == len(eos) == 32
    assert hb[:8] == bytes([0, 0, 0, 0, 0, 0xC0, 1, 0]) and eos[5] == 0xE0
    assert f.is_heartbeat(hb, 32) and f.is_heartbeat(eos, 32)
    assert not f.is_heartbeat(hb, 64)
    assert f.is_end_of_stream(eos) and not f.is_end_of_stream(hb)
    header = f.DataHeader.decode(eos)
    assert (header.frame_length, header.flags, header.type, header.term_offset, header.term_id) == (
        0,
        0xE0,
        1,
        4096,
        3,
    )
    assert header.is_end_of_stream
    assert f.validate_frame(32, hb) is None and f.validate_frame(32, eos) is None


def test_data_header_decode() -> None:
    data = f.DATA_HEADER.pack(132, 0, 0xC0, 1, 256, 1, 2, 3, 77) + bytes(128)
    header = f.DataHeader.decode(data)
    assert header == f.DataHeader(132, 0, 0xC0, 1, 256, 1, 2, 3, 77)
    assert f.validate_frame(160, data) is None


def data_frame(frame_length: int = 132, term_offset: int = 0, frame_type: int = f.HDR_TYPE_DATA) -> bytes:
    return f.DATA_HEADER.pack(frame_length, 0, 0xC0, frame_type, term_offset, 1, 2, 3, 0)


@pytest.mark.parametrize(
    ("packet", "length", "term_length", "fragment"),
    [
        (bytes(7), 7, None, "shorter than a frame header"),
        (data_frame()[:8], 8, None, "shorter than the 32-byte header"),
        (b"\x20\x00\x00\x00\x01\x00\x01\x00" + bytes(24), 32, None, "version 1"),
        (data_frame()[:6] + b"\x09\x00" + bytes(24), 32, None, "unsupported frame type"),
        (data_frame()[:6] + b"\x04\x00" + bytes(24), 32, None, "unsupported frame type"),
        (data_frame()[:6] + b"\xff\xff" + bytes(24), 32, None, "unsupported frame type"),
        (data_frame(200) + bytes(128), 160, None, "longer than the datagram"),
        (data_frame(-5) + bytes(128), 160, None, "shorter than a data header"),
        (data_frame(20), 32, None, "shorter than a data header"),
        (data_frame(132, 16) + bytes(128), 160, None, "not a frame offset"),
        (data_frame(132, -32) + bytes(128), 160, None, "not a frame offset"),
        (data_frame(132, 65536 - 128) + bytes(128), 160, 65536, "cross the end of the term"),
        (data_frame(132, 65536) + bytes(128), 160, 65536, "not a frame offset"),
        (data_frame(4096, 65536 - 1024, f.HDR_TYPE_PAD), 32, 65536, "padding"),
        (data_frame(0, 0, f.HDR_TYPE_PAD), 32, None, "shorter than a data header"),
        (data_frame(64, 0, f.HDR_TYPE_PAD) + bytes(64), 96, None, "longer than its padding"),
        (bytes(100), 70000, None, "shorter than the datagram length"),
        (f.encode_setup(0, 1, 2, 3, 3, 65536 + 1, 1408, 0), 40, None, "term length"),
        (f.encode_setup(0, 1, 2, 3, 3, 32 * 1024, 1408, 0), 40, None, "term length"),
        (f.encode_setup(0, 1, 2, 3, 3, 65536, 1400, 0), 40, None, "mtu length"),
        (f.encode_setup(0, 1, 2, 3, 3, 65536, 16, 0), 40, None, "mtu length"),
        (f.encode_setup(0, 1, 2, 3, 3, 65536, 65536, 0), 40, None, "mtu length"),
        (f.encode_setup(65536, 1, 2, 3, 3, 65536, 1408, 0), 40, None, "SETUP term offset"),
        (f.encode_setup(8, 1, 2, 3, 3, 65536, 1408, 0), 40, None, "SETUP term offset"),
        (f.encode_setup(0, 1, 2, 3, 3, 65536, 1408, -1), 40, None, "ttl"),
        (f.encode_setup(0, 1, 2, 3, 3, 65536, 1408, 0)[:36], 36, None, "shorter than the 40-byte header"),
        (
            struct.pack("<i", 20) + f.encode_setup(0, 1, 2, 3, 3, 65536, 1408, 0)[4:],
            40,
            None,
            "frame length 20",
        ),
        (f.encode_nak(1, 2, 3, 64, -1), 28, None, "NAK length"),
        (f.encode_nak(1, 2, 3, -32, 64), 28, None, "NAK term offset"),
        (f.encode_nak(1, 2, 3, 65536 - 16, 64), 28, 65536, "NAK term offset"),
        (f.encode_nak(1, 2, 3, 0, 64)[:27], 27, None, "shorter than the 28-byte header"),
        (f.encode_status_message(1, 2, 3, 0, -1, 9), 36, None, "receiver window"),
        (f.encode_status_message(1, 2, 3, -64, 100, 9), 36, None, "consumption term offset"),
        (f.encode_status_message(1, 2, 3, 0, 100, 9, feedback=b"abcd")[:38], 38, None, "frame length 40"),
        (f.encode_rttm(1, 2, 3, 4, 5)[:39], 39, None, "shorter than the 40-byte header"),
    ],
)
def test_validate_frame_flags_hostile_datagrams(
    packet: bytes, length: int, term_length: int | None, fragment: str
) -> None:
    reason = f.validate_frame(length, packet, term_length)
    assert reason is not None and fragment in reason


def test_validate_frame_accepts_what_aeron_sends() -> None:
    # several frames in one datagram, the datagram longer than the first frame (alignment included)
    packet = data_frame(132) + bytes(128) + f.DATA_HEADER.pack(100, 0, 0xC0, 1, 160, 1, 2, 3, 0) + bytes(96)
    assert f.validate_frame(288, packet) is None
    # a padding header alone, its length up to the end of the term
    assert f.validate_frame(32, data_frame(65536 - 1024, 1024, f.HDR_TYPE_PAD), 65536) is None
    # in a receive buffer longer than the datagram
    assert f.validate_frame(160, memoryview(bytearray(data_frame() + bytes(2000)))) is None


@settings(max_examples=2000, deadline=None)
@given(st.binary(min_size=0, max_size=120), st.integers(0, 8))
def test_decoders_raise_only_value_error_and_validation_never_raises(data: bytes, offset: int) -> None:
    for decoder in (f.DataHeader, f.SetupFrame, f.StatusMessageFrame, f.NakFrame, f.RttmFrame):
        with contextlib.suppress(ValueError):
            decoder.decode(data, offset)
    reason = f.validate_frame(len(data), data)
    assert reason is None or isinstance(reason, str)
    if reason is None:
        assert len(data) >= 8 and data[4] == 0


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["setup", "sm", "nak", "rttm", "data"]), st.integers(0, 39), st.integers(0, 255))
def test_a_mutated_byte_is_flagged_or_still_decodes(kind: str, position: int, value: int) -> None:
    frames = {
        "setup": f.encode_setup(0, 1, 2, 3, 3, 65536, 1408, 0),
        "sm": f.encode_status_message(1, 2, 3, 0, 100, 9),
        "nak": f.encode_nak(1, 2, 3, 0, 64),
        "rttm": f.encode_rttm(1, 2, 3, 4, 5),
        "data": data_frame(40) + bytes(32),
    }
    packet = bytearray(frames[kind])
    packet[position % len(packet)] = value
    if f.validate_frame(len(packet), packet) is None:
        decoder = {"setup": f.SetupFrame, "sm": f.StatusMessageFrame, "nak": f.NakFrame, "rttm": f.RttmFrame}
        decoder.get(kind, f.DataHeader).decode(packet)
        assert packet[4] == 0
