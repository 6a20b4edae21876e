"""The archive client without Java: its settings, its response poller and events adapter fed bytes, and a
scripted archive on an embedded driver (IPC) for the handshake, other sessions, unknown templates, another
schema and timeouts (docs/archive.md sections 3, 4 and 12)."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from driver.archive.client import (
    AeronArchive,
    ArchiveClientContext,
    ArchiveConfigurationError,
    ArchiveError,
    ArchiveErrorCode,
    ArchiveProtocolError,
    ArchiveTimeoutError,
    ControlResponsePoller,
    RecordingEventsAdapter,
    RecordingProgress,
    RecordingStarted,
    RecordingStopped,
    replay_channel_for_session,
)
from driver.archive.codecs import (
    ConnectRequest,
    ControlResponse,
    ControlResponseCode,
    RecordingDescriptor,
    RecordingPositionRequest,
    decode,
    encode,
)
from driver.client import Aeron
from tests.support import embedded_driver

OK, ERROR, UNKNOWN = ControlResponseCode.OK, ControlResponseCode.ERROR, ControlResponseCode.RECORDING_UNKNOWN


def foreign(template_id: int, schema_id: int = 101) -> bytes:
    """A message header (+ 8 body bytes) of a template or schema the client does not know."""
    return struct.pack("<HHHH", 8, template_id, schema_id, 0) + bytes(8)


def descriptor(session: int, correlation: int, recording_id: int) -> RecordingDescriptor:
    return RecordingDescriptor(
        session, correlation, recording_id, 1, -1, 0, -1, 0, 1 << 20, 65536, 1408, 5, 6
    )


# -- settings ------------------------------------------------------------------------------------------------


def test_context_defaults_and_the_request_channel_as_the_java_client_makes_it() -> None:
    ctx = ArchiveClientContext.from_sources(environ={})
    assert (ctx.control_request_channel, ctx.control_request_stream_id) == (
        "aeron:udp?endpoint=localhost:8010",
        10,
    )
    assert (ctx.control_response_channel, ctx.control_response_stream_id) == (
        "aeron:udp?endpoint=localhost:8020",
        20,
    )
    assert (ctx.recording_events_channel, ctx.recording_events_stream_id) == (
        "aeron:udp?endpoint=localhost:8030",
        30,
    )
    assert ctx.message_timeout_ns == 5_000_000_000
    assert ctx.concluded_control_request_channel() == (
        "aeron:udp?endpoint=localhost:8010|term-length=65536|mtu=1408|sparse=true"
    )


def test_context_takes_arguments_over_properties_over_environment() -> None:
    ctx = ArchiveClientContext.from_sources(
        {"control_response_stream_id": 99},
        {"aeron.archive.control.response.stream.id": "21", "aeron.archive.message.timeout": "250ms"},
        {
            "AERON_ARCHIVE_CONTROL_RESPONSE_STREAM_ID": "22",
            "AERON_ARCHIVE_CONTROL_CHANNEL": "aeron:ipc",
            "AERON_ARCHIVE_CONTROL_TERM_BUFFER_LENGTH": "128k",
            "AERON_ARCHIVE_CONTROL_TERM_BUFFER_SPARSE": "false",
        },
    )
    assert ctx.control_response_stream_id == 99
    assert ctx.message_timeout_ns == 250_000_000
    assert ctx.concluded_control_request_channel() == "aeron:ipc?term-length=131072|mtu=1408|sparse=false"
    with pytest.raises(ArchiveConfigurationError, match=r"aeron.archive.message.timeout='soon'"):
        ArchiveClientContext.from_sources(properties={"aeron.archive.message.timeout": "soon"}, environ={})
    with pytest.raises(ArchiveConfigurationError, match="unknown archive client settings"):
        ArchiveClientContext.from_sources({"control_chanel": "aeron:ipc"}, environ={})


def test_replay_channel_carries_the_low_32_bits_of_the_replay_session_id_as_an_int() -> None:
    assert replay_channel_for_session("aeron:ipc", (3 << 32) | 7) == "aeron:ipc?session-id=7"
    assert replay_channel_for_session("aeron:udp?endpoint=localhost:9000", (1 << 32) | 0xFFFF_FFFE) == (
        "aeron:udp?endpoint=localhost:9000|session-id=-2"
    )


# -- the response poller, fed bytes --------------------------------------------------------------------------


def test_poller_keeps_answers_of_its_session_by_correlation_id() -> None:
    errors: list[ArchiveError] = []
    poller = ControlResponsePoller(None, on_unclaimed_error=errors.append)
    poller.expect(10)
    # Before the session is open only the connect's correlation id counts, whatever the session.
    connected = encode(ControlResponse(77, 10, 77, OK))
    poller.on_message(connected, 0, len(connected))
    assert poller.take(10) == ControlResponse(77, 10, 77, OK)
    poller.control_session_id = 77
    poller.expect(11)
    for message in (
        ControlResponse(78, 11, 0, OK),  # another client's session on the same stream: skipped
        descriptor(78, 11, 0),
        foreign(999),  # a template this client does not know: ignored
        descriptor(77, 11, 4),
        ControlResponse(77, 11, 5, UNKNOWN),
        ControlResponse(77, 12, 0, OK),  # nobody awaits it: dropped
    ):
        data = message if isinstance(message, bytes) else encode(message)
        poller.on_message(data, 0, len(data))
    assert [poller.take(11), poller.take(11), poller.take(11)] == [
        descriptor(77, 11, 4),
        ControlResponse(77, 11, 5, UNKNOWN),
        None,
    ]
    assert errors == []


def test_poller_raises_on_another_schema_and_keeps_errors_nobody_awaits() -> None:
    errors: list[ArchiveError] = []
    poller = ControlResponsePoller(None, on_unclaimed_error=errors.append)
    poller.control_session_id = 5
    with pytest.raises(ArchiveProtocolError, match="expected schemaId=101, actual=7"):
        poller.on_message(foreign(1, schema_id=7), 0, 16)
    # An ERROR after the OK of an exchange (queued, then the exchange ends) and one arriving later.
    poller.expect(20)
    for response in (ControlResponse(5, 20, 0, OK), ControlResponse(5, 20, 9, ERROR, "bad extension")):
        data = encode(response)
        poller.on_message(data, 0, len(data))
    assert poller.take(20) == ControlResponse(5, 20, 0, OK)
    poller.forget(20)
    late = encode(ControlResponse(5, 21, 6, ERROR, "late"))
    poller.on_message(late, 0, len(late))
    assert [(e.code, e.error_message, e.correlation_id) for e in errors] == [
        (ArchiveErrorCode.INVALID_EXTENSION, "bad extension", 20),
        (ArchiveErrorCode.UNKNOWN_REPLAY, "late", 21),
    ]
    assert list(poller.unclaimed_errors) == errors


def test_events_adapter_dispatches_each_event_and_ignores_unknown_templates() -> None:
    seen: list[object] = []
    adapter = RecordingEventsAdapter(
        None,  # type: ignore[arg-type]
        on_start=lambda e: seen.append(("start", e)),
        on_stop=lambda e: seen.append(("stop", e)),
        on_event=lambda e: seen.append(("any", e)),
    )
    started = RecordingStarted(1, 0, 5, 6, "aeron:ipc", "aeron:ipc")
    progress = RecordingProgress(1, 0, 64)
    stopped = RecordingStopped(1, 0, 128)
    for data in (encode(started), foreign(999), encode(progress), encode(stopped)):
        adapter.on_message(data, 0, len(data))
    assert seen == [
        ("start", started),
        ("any", started),
        ("any", progress),
        ("stop", stopped),
        ("any", stopped),
    ]
    with pytest.raises(ArchiveProtocolError, match="actual=100"):
        adapter.on_message(foreign(200, schema_id=100), 0, 16)


# -- a scripted archive on an embedded driver ----------------------------------------------------------------


def test_connect_without_an_archive_times_out_naming_the_request(aeron_dir: Path) -> None:
    with embedded_driver(aeron_dir), Aeron.connect(aeron_dir) as aeron:
        with pytest.raises(ArchiveTimeoutError) as caught:
            AeronArchive.connect(
                aeron,
                control_request_channel="aeron:ipc",
                control_response_channel="aeron:ipc",
                control_request_stream_id=1011,
                message_timeout_ns=200_000_000,
            )
        assert isinstance(caught.value, TimeoutError)
        assert caught.value.request == "connect"
        assert "no archive is connected to aeron:ipc" in str(caught.value)


def test_async_client_against_a_scripted_archive(aeron_dir: Path) -> None:
    """The script answers the connect after a response of another session and an unknown template, then
    answers a position request with a message of another schema."""
    with embedded_driver(aeron_dir), Aeron.connect(aeron_dir) as aeron:
        asyncio.run(scripted(aeron))


async def scripted(aeron: Aeron) -> None:
    if True:
        requests = await aeron.add_subscription_async("aeron:ipc", 2010)
        responses = await aeron.add_exclusive_publication_async("aeron:ipc", 2020)

        async def next_request() -> object:
            got: list[object] = []
            while not got:
                requests.poll(lambda b, o, n, _h: got.append(decode(b.view, o, n)), 1)
                await asyncio.sleep(0.001)
            return got[0]

        async def archive_script() -> None:
            connect = await next_request()
            assert isinstance(connect, ConnectRequest) and connect.response_stream_id == 2020
            for data in (
                encode(ControlResponse(41, connect.correlation_id + 1, 41, OK)),
                foreign(999),
                encode(ControlResponse(42, connect.correlation_id, 42, OK)),
            ):
                await responses.offer_async(data, timeout_s=5)
            position = await next_request()
            assert isinstance(position, RecordingPositionRequest) and position.control_session_id == 42
            await responses.offer_async(foreign(1, schema_id=102), timeout_s=5)

        script = asyncio.create_task(archive_script())
        archive = await AeronArchive.connect_async(
            aeron,
            control_request_channel="aeron:ipc",
            control_request_stream_id=2010,
            control_response_channel="aeron:ipc",
            control_response_stream_id=2020,
            message_timeout_ns=2_000_000_000,
        )
        try:
            assert archive.control_session_id == 42
            with pytest.raises(ArchiveProtocolError, match="expected schemaId=101, actual=102"):
                await archive.get_recording_position_async(3)
            await script
        finally:
            await archive.close_async()
        assert archive.is_closed
        with pytest.raises(ArchiveError, match="closed"):
            archive.get_stop_position(3)
