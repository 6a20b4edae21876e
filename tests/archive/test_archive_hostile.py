"""Hostile control traffic (docs/archive.md section 15): malformed, absurd and random requests on the control
channel are answered with an ERROR where a session can be named, or dropped and counted in "Archive errors";
the archive never stops serving, and a recording running beside them completes intact."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.archive.codecs import (
    ARCHIVE,
    HEADER_LENGTH,
    CodecError,
    ConnectRequest,
    ControlResponse,
    ControlResponseCode,
    ExtendRecordingRequest,
    FindLastMatchingRecordingRequest,
    ListRecordingRequest,
    ListRecordingsForUriRequest,
    ListRecordingsRequest,
    RecordingPositionRequest,
    ReplayRequest,
    SourceLocation,
    StartRecordingRequest,
    StopPositionRequest,
    StopRecordingRequest,
    StopRecordingSubscriptionRequest,
    StopReplayRequest,
    TruncateRecordingRequest,
    encode,
)
from driver.util.bit_util import to_int32
from tests.archive.test_archive_server import message, publish
from tests.support import wait_for
from tests.support.archive_control import ArchiveControl
from tests.support.archive_env import Env, archive_env

OK = ControlResponseCode.OK
ERROR = ControlResponseCode.ERROR


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with archive_env(tmp_path) as environment:
        yield environment


# Ids no single mutation turns into one the test's own recording uses (registration ids are small).
FAR = 0x7766_5544_3322_1100


def errors(env: Env) -> int:
    return env.archive.conductor.error_count


def test_malformed_channels_and_absurd_values_are_answered(env: Env) -> None:
    control = env.control
    for factory, fields in [
        (StartRecordingRequest, (5, SourceLocation.LOCAL, "aeron:udp?endpoint=")),
        (StartRecordingRequest, (5, SourceLocation.LOCAL, "not a channel")),
        (StartRecordingRequest, (-(2**31), SourceLocation.LOCAL, "aeron:udp?endpoint=localhost:99999")),
        (StopRecordingRequest, (5, "aeron:bogus")),
        (ReplayRequest, (0, 0, -1, 5, "aeron:udp?endpoint=")),
        (ReplayRequest, (0, 0, -1, 5, "aeron:ipc?linger=forever")),
        (ReplayRequest, (-1, 0, -1, 5, "aeron:ipc")),
        (ReplayRequest, (2**62, -(2**63), -5, 2**31 - 1, "aeron:ipc")),
        (ExtendRecordingRequest, (0, 5, SourceLocation.LOCAL, "aeron:")),
        (ExtendRecordingRequest, (-7, 5, SourceLocation.LOCAL, "aeron:ipc")),
        (TruncateRecordingRequest, (-1, -64)),
        (StopReplayRequest, (-1,)),
        (StopPositionRequest, (-(2**63),)),
        (StopRecordingSubscriptionRequest, (-1,)),
    ]:
        response = control.request(factory, *fields)
        assert response.code == ERROR and response.error_message, (factory.__name__, fields, response)
    # Listings with absurd counts end, with RECORDING_UNKNOWN, instead of running forever or failing.
    for factory, fields in [
        (ListRecordingsRequest, (0, 2**31 - 1)),
        (ListRecordingsRequest, (-(2**40), -5)),
        (ListRecordingRequest, (-1,)),
        (ListRecordingsForUriRequest, (0, 2**31 - 1, 5, "aeron:ipc")),
        (ListRecordingsForUriRequest, (0, 10, 5, "::not a channel::")),
        (FindLastMatchingRecordingRequest, (-5, 1, 2, "aeron:udp?endpoint=")),
    ]:
        listed = control.descriptors(factory, *fields, count=2**31)
        assert listed and isinstance(listed[-1], ControlResponse), (factory.__name__, fields, listed)
    assert control.request(RecordingPositionRequest, 0).code == OK  # still serving


def test_truncated_messages_and_var_data_past_the_buffer_are_counted(env: Env) -> None:
    control = env.control
    valid = encode(StartRecordingRequest(control.control_session_id, 1, 5, SourceLocation.LOCAL, "aeron:ipc"))
    before = errors(env)
    hostile = [
        valid[:4],  # not even a header
        valid[:HEADER_LENGTH],  # a header and nothing else
        valid[: HEADER_LENGTH + 20],  # the block cut short
        valid[: HEADER_LENGTH + 21 + 2],  # the var-data length cut short
        valid[: HEADER_LENGTH + 21] + struct.pack("<I", 0xFFFF_FFFF) + b"aeron:ipc",  # length past the end
        valid[: HEADER_LENGTH + 21] + struct.pack("<I", 2**31) + b"aeron:ipc",
        struct.pack("<HHHH", 3, 4, 101, 0) + valid[HEADER_LENGTH:],  # blockLength smaller than the block
        struct.pack("<HHHH", 0xFFFF, 4, 101, 0) + valid[HEADER_LENGTH:],  # blockLength past the end
        valid[:HEADER_LENGTH]
        + valid[HEADER_LENGTH : HEADER_LENGTH + 20]
        + b"\x07"
        + valid[HEADER_LENGTH + 21 :],
    ]
    for data in hostile:
        control.send_raw(data)
    wait_for(lambda: errors(env) >= before + len(hostile), 5, f"{len(hostile)} errors counted")
    assert control.request(RecordingPositionRequest, 0).code == OK  # still serving


def test_requests_before_connect_and_for_other_sessions_are_dropped(env: Env) -> None:
    stranger = env.aeron.add_exclusive_publication("aeron:ipc", 11)
    wait_for(lambda: stranger.is_connected, 5, "the control subscription")
    before = errors(env)
    for data in [
        encode(ListRecordingsRequest(env.control.control_session_id, 1, 0, 10)),  # another image's session
        encode(RecordingPositionRequest(0, 2, 0)),  # no session yet
        encode(StopReplayRequest(-1, 3, 0)),
    ]:
        wait_for(lambda d=data: stranger.offer(d) > 0, 5, "offer")
    wait_for(lambda: errors(env) >= before + 3, 5, "three errors counted")
    stranger.close()
    assert env.control.request(RecordingPositionRequest, 0).code == OK


def _base_requests(session_id: int) -> list[Any]:
    """One valid request of each kind, none of them touching the test's own recording (stream 4001)."""
    return [
        ConnectRequest(FAR, 4902, "aeron:ipc"),
        StartRecordingRequest(session_id, FAR, 4903, SourceLocation.LOCAL, "aeron:ipc"),
        StopRecordingRequest(session_id, FAR, 4904, "aeron:ipc"),
        ReplayRequest(session_id, FAR, FAR, 0, 1024, 4905, "aeron:ipc"),
        StopReplayRequest(session_id, FAR, FAR),
        ListRecordingsRequest(session_id, FAR, 0, 3),
        ListRecordingsForUriRequest(session_id, FAR, 0, 3, 4906, "aeron:ipc"),
        ListRecordingRequest(session_id, FAR, FAR),
        ExtendRecordingRequest(session_id, FAR, FAR, 4907, SourceLocation.LOCAL, "aeron:ipc"),
        RecordingPositionRequest(session_id, FAR, FAR),
        TruncateRecordingRequest(session_id, FAR, FAR, 0),
        StopRecordingSubscriptionRequest(session_id, FAR, FAR),
        StopPositionRequest(session_id, FAR, FAR),
        FindLastMatchingRecordingRequest(session_id, FAR, FAR, 1, 4908, "aeron:ipc"),
    ]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(6)
    if kind == 0:  # a few random bytes
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif kind == 1:  # cut short
        del out[rng.randrange(len(out)) :]
    elif kind == 2:  # an absurd fixed field value
        at = rng.randrange(HEADER_LENGTH, max(HEADER_LENGTH + 1, len(out) - 8))
        out[at : at + 8] = struct.pack("<q", rng.choice([-1, -(2**63), 2**63 - 1, 2**31, -(2**31), 0]))
    elif kind == 3:  # header fields: block length, template, schema, version
        at = rng.choice([0, 2, 4, 6])
        out[at : at + 2] = struct.pack("<H", rng.randrange(65536))
    elif kind == 4:  # garbage appended
        out += rng.randbytes(rng.randrange(1, 64))
    else:  # entirely random
        out = bytearray(rng.randbytes(rng.randrange(1, 200)))
    return bytes(out)


@pytest.mark.slow
def test_fuzz_of_ten_thousand_requests_beside_a_recording(env: Env) -> None:
    rng = random.Random(20_151)
    control, catalog = env.control, env.archive.catalog
    publication = env.aeron.add_exclusive_publication("aeron:ipc", 4001)
    started = control.request(StartRecordingRequest, 4001, SourceLocation.LOCAL, "aeron:ipc")
    assert started.code == OK, started
    wait_for(lambda: catalog.count_entries == 1, 10, "the recording to start")

    fuzzer = ArchiveControl(env.aeron)
    bases = [encode(m) for m in _base_requests(fuzzer.control_session_id)]
    before = errors(env)
    undecodable = 0
    count, length = 2_000, 200
    for i in range(10_000):
        data = _mutate(rng, rng.choice(bases))
        try:
            ARCHIVE.decode(data, 0, len(data))
        except CodecError:
            undecodable += 1
        fuzzer.send_raw(data)
        if i % 5 == 0:
            publish(publication, i // 5, 1, length)  # the recording keeps going meanwhile
        if i % 50 == 0:
            fuzzer.poll()
            fuzzer.received.clear()
    target = publication.position
    wait_for(
        lambda: control.request(RecordingPositionRequest, 0).relevant_id == target,
        30,
        f"recorded up to {target}",
    )
    # Every message the codec cannot read was dropped and counted (and some decodable ones too: unknown
    # sessions, invalid channels of connect requests).
    wait_for(lambda: errors(env) - before >= undecodable, 30, f"{undecodable} errors counted")
    assert undecodable > 1_000
    env.clock.advance_ms(10_000)  # the sessions and replays the fuzz opened time out
    stop = control.request(StopRecordingSubscriptionRequest, started.relevant_id)
    assert stop.code == OK, stop
    wait_for(lambda: catalog.stop_position(0) == target, 10, "the stop position")
    assert replayed_payloads(env, 0, 4002, count) == [message(i, length) for i in range(count)]
    fuzzer.close()


def replayed_payloads(env: Env, recording_id: int, stream_id: int, count: int) -> list[bytes]:
    """Every message of a whole-recording replay, bytes and all."""
    response = env.control.request(ReplayRequest, recording_id, -1, -1, stream_id, "aeron:ipc")
    assert response.code == OK, response
    subscription = env.aeron.add_subscription(
        f"aeron:ipc?session-id={to_int32(response.relevant_id)}", stream_id
    )
    received: list[bytes] = []

    def on_fragment(buffer: Any, offset: int, length: int, _header: Any) -> None:
        received.append(bytes(buffer.view[offset : offset + length]))

    wait_for(lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) >= count, 20, "the replay")
    subscription.close()
    return received
