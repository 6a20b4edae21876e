"""The sans-IO parts of response channels: the RSP_SETUP frame and SETUP flags as today's Aeron lays them out,
and what a channel asks for (control-mode=response, response-correlation-id) with the refusals."""

from __future__ import annotations

import struct

import pytest

from driver.protocol import frames
from driver.protocol.channel_uri import ChannelUri, InvalidChannelError
from driver.protocol.response_channel import (
    NO_RESPONSE,
    ResponseParams,
    refuse_response_params,
    response_params,
    response_publication_error,
)


def test_rsp_setup_frame_is_twenty_bytes_of_type_0x0b() -> None:
    frame = frames.encode_response_setup(session_id=7, stream_id=1001, response_session_id=-42)
    assert len(frame) == frames.RSP_SETUP_HEADER_LENGTH == 20
    assert struct.unpack("<iBBHiii", frame) == (20, 0, 0, 0x0B, 7, 1001, -42)
    assert frames.validate_frame(len(frame), frame) is None
    decoded = frames.ResponseSetupFrame.decode(frame)
    assert (decoded.session_id, decoded.stream_id, decoded.response_session_id) == (7, 1001, -42)


def test_a_short_rsp_setup_is_dropped_with_a_reason() -> None:
    frame = frames.encode_response_setup(1, 2, 3)[:16]
    assert "shorter than the 20-byte header" in (frames.validate_frame(len(frame), frame) or "")


def test_setup_flags_of_today_and_1_15_1() -> None:
    assert (frames.SEND_RESPONSE_SETUP_FLAG, frames.GROUP_FLAG) == (0x80, 0x40)
    plain = frames.encode_setup(0, 1, 2, 3, 3, 65536, 1408, 0)
    asking = frames.encode_setup(0, 1, 2, 3, 3, 65536, 1408, 0, flags=frames.SEND_RESPONSE_SETUP_FLAG)
    assert frames.SetupFrame.decode(plain).flags == 0  # 1.15.1 peers see what they always saw
    assert frames.SetupFrame.decode(asking).flags == 0x80
    assert frames.validate_frame(len(asking), asking) is None
    assert plain[:5] == asking[:5] and plain[6:] == asking[6:]  # only the flags byte differs


@pytest.mark.parametrize(
    ("channel", "expected"),
    [
        ("aeron:udp?endpoint=h:1", NO_RESPONSE),
        ("aeron:udp?endpoint=h:1|response-correlation-id=12", ResponseParams(False, 12)),
        ("aeron:udp?endpoint=h:1|response-correlation-id=-1", NO_RESPONSE),
        ("aeron:udp?control=h:2|control-mode=response", ResponseParams(True, None)),
        ("aeron:udp?control=h:2|control-mode=response|response-correlation-id=9", ResponseParams(True, 9)),
    ],
)
def test_what_a_channel_asks_for(channel: str, expected: ResponseParams) -> None:
    assert response_params(ChannelUri.parse(channel)) == expected


def test_only_a_request_publication_flags_its_setup() -> None:
    assert ResponseParams(False, 12).is_request and ResponseParams(False, 12).setup_flags == 0x80
    assert not ResponseParams(True, 9).is_request and ResponseParams(True, 9).setup_flags == 0
    assert NO_RESPONSE.setup_flags == 0


@pytest.mark.parametrize(
    ("channel", "reason"),
    [
        ("aeron:udp?endpoint=h:1|response-correlation-id=prototype", "prototype is not supported"),
        ("aeron:udp?endpoint=h:1|response-correlation-id=-2", "must be a number of -1 or more"),
        ("aeron:udp?endpoint=h:1|response-correlation-id=0x10", "must be a number of -1 or more"),
        ("aeron:udp?control-mode=response", "needs control=host:port"),
    ],
)
def test_bad_response_channels_are_refused_naming_the_key(channel: str, reason: str) -> None:
    with pytest.raises(InvalidChannelError, match=reason):
        response_params(ChannelUri.parse(channel))


def test_ipc_has_no_response_channels_here() -> None:
    for channel in ("aeron:ipc?control-mode=response", "aeron:ipc?response-correlation-id=3"):
        with pytest.raises(InvalidChannelError, match="not supported on IPC"):
            refuse_response_params(ChannelUri.parse(channel), "IPC")
    refuse_response_params(ChannelUri.parse("aeron:ipc?control-mode=manual"), "IPC")


def test_a_response_publication_answers_only_an_image_that_asked() -> None:
    answering = ResponseParams(True, 9)
    assert response_publication_error(answering, frames.SEND_RESPONSE_SETUP_FLAG) is None
    assert "no image has that correlation id" in (response_publication_error(answering, None) or "")
    assert "did not ask" in (response_publication_error(answering, 0) or "")
    assert "needs response-correlation-id" in (response_publication_error(ResponseParams(True, None), 0x80) or "")
