"""Schema 101 v0: the archive's control requests, responses, recording events and catalog records
(docs/archive.md sections 1-3). Field names are Aeron's, in snake_case; offsets chain in declaration order and
each declared block length is checked against them."""

from __future__ import annotations

import enum
from typing import Annotated, NamedTuple

from driver.archive.codecs.sbe import (
    INT32_NULL,
    UINT8_NULL,
    At,
    Int8,
    Int32,
    Int64,
    Schema,
    UInt8,
    VarAscii,
    enum_field,
)

SCHEMA_ID = 101
SCHEMA_VERSION = 0

ARCHIVE = Schema("archive", SCHEMA_ID, SCHEMA_VERSION)
message = ARCHIVE.message


class ControlResponseCode(enum.IntEnum):
    OK = 0
    ERROR = 1
    RECORDING_UNKNOWN = 2
    NULL_VAL = INT32_NULL


class ArchiveErrorCode(enum.IntEnum):
    """ArchiveException's codes: the relevantId of an ERROR response (docs/archive.md section 3)."""

    GENERIC = 0
    ACTIVE_LISTING = 1
    ACTIVE_RECORDING = 2
    ACTIVE_SUBSCRIPTION = 3
    UNKNOWN_SUBSCRIPTION = 4
    UNKNOWN_RECORDING = 5
    UNKNOWN_REPLAY = 6
    MAX_REPLAYS = 7
    MAX_RECORDINGS = 8
    INVALID_EXTENSION = 9


class SourceLocation(enum.IntEnum):
    LOCAL = 0
    REMOTE = 1
    NULL_VAL = UINT8_NULL


ResponseCode = enum_field(ControlResponseCode, Int32)
Location = enum_field(SourceLocation, UInt8)


# -- responses and events (docs/archive.md section 3) -------------------------------------------------------------


@message(template_id=1, block_length=28)
class ControlResponse(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    relevant_id: Int64
    code: ResponseCode
    error_message: VarAscii = ""


@message(template_id=20, block_length=8)
class CatalogHeader(NamedTuple):
    version: Int32
    entry_length: Int32


@message(template_id=21, block_length=32)
class RecordingDescriptorHeader(NamedTuple):
    length: Int32
    valid: Int8
    reserved: Annotated[Int8, At(31)] = 0


@message(template_id=22, block_length=80)
class RecordingDescriptor(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    start_timestamp: Int64
    stop_timestamp: Int64
    start_position: Int64
    stop_position: Int64
    initial_term_id: Int32
    segment_file_length: Int32
    term_buffer_length: Int32
    mtu_length: Int32
    session_id: Int32
    stream_id: Int32
    stripped_channel: VarAscii = ""
    original_channel: VarAscii = ""
    source_identity: VarAscii = ""


@message(template_id=101, block_length=24)
class RecordingStarted(NamedTuple):
    recording_id: Int64
    start_position: Int64
    session_id: Int32
    stream_id: Int32
    channel: VarAscii = ""
    source_identity: VarAscii = ""


@message(template_id=102, block_length=24)
class RecordingProgress(NamedTuple):
    recording_id: Int64
    start_position: Int64
    position: Int64


@message(template_id=103, block_length=24)
class RecordingStopped(NamedTuple):
    recording_id: Int64
    start_position: Int64
    stop_position: Int64


# -- control requests (docs/archive.md section 2) ----------------------------------------------------------------


@message(template_id=2, block_length=12)
class ConnectRequest(NamedTuple):
    correlation_id: Int64
    response_stream_id: Int32
    response_channel: VarAscii = ""


@message(template_id=3, block_length=8)
class CloseSessionRequest(NamedTuple):
    control_session_id: Int64


@message(template_id=4, block_length=21)
class StartRecordingRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    stream_id: Int32
    source_location: Location
    channel: VarAscii = ""


@message(template_id=5, block_length=20)
class StopRecordingRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    stream_id: Int32
    channel: VarAscii = ""


@message(template_id=6, block_length=44)
class ReplayRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    position: Int64
    length: Int64
    replay_stream_id: Int32
    replay_channel: VarAscii = ""


@message(template_id=7, block_length=24)
class StopReplayRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    replay_session_id: Int64


@message(template_id=8, block_length=28)
class ListRecordingsRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    from_recording_id: Int64
    record_count: Int32


@message(template_id=9, block_length=32)
class ListRecordingsForUriRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    from_recording_id: Int64
    record_count: Int32
    stream_id: Int32
    channel: VarAscii = ""


@message(template_id=10, block_length=24)
class ListRecordingRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64


@message(template_id=11, block_length=29)
class ExtendRecordingRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    stream_id: Int32
    source_location: Location
    channel: VarAscii = ""


@message(template_id=12, block_length=24)
class RecordingPositionRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64


@message(template_id=13, block_length=32)
class TruncateRecordingRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    position: Int64


@message(template_id=14, block_length=24)
class StopRecordingSubscriptionRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    subscription_id: Int64


@message(template_id=15, block_length=24)
class StopPositionRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64


@message(template_id=16, block_length=32)
class FindLastMatchingRecordingRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    min_recording_id: Int64
    session_id: Int32
    stream_id: Int32
    channel: VarAscii = ""


# -- extensions (docs/archive.md section 18) ---------------------------------------------------------------------
# BoundedReplayRequest is the later Aeron's (template 18, same layout), so its clients can use it. Our own
# requests take template ids far above any Aeron uses; every answer is a ControlResponse, so nothing but schema
# 101 v0 messages a client asked for reaches a response stream (docs/archive.md section 12).


@message(template_id=18, block_length=48)
class BoundedReplayRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    position: Int64
    length: Int64
    limit_counter_id: Int32
    replay_stream_id: Int32
    replay_channel: VarAscii = ""


class LookupType(enum.IntEnum):
    TIME = 0
    LAST_COUNT = 1
    NULL_VAL = INT32_NULL


Lookup = enum_field(LookupType, Int32)


@message(template_id=1101, block_length=44)
class PositionLookupRequest(NamedTuple):
    """TIME: the position of the first message recorded at or after ``value`` (epoch ns); LAST_COUNT: the
    position of the first of the last ``value`` messages before ``bound_position`` (NULL: the recorded end)."""

    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    lookup_type: Lookup
    value: Int64
    bound_position: Int64


@message(template_id=1102, block_length=76)
class ExtendedReplayRequest(NamedTuple):
    """A replay paced at ``rate_ppm`` millionths of the recorded speed (0: as fast as possible), ``repeat`` times,
    with idle gaps capped at ``max_idle_gap_ns`` (-1: uncapped), and bounded by client credit when
    ``credit_limit`` is not -1 (the first limit position; ReplayCreditRequest moves it)."""

    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    position: Int64
    length: Int64
    replay_stream_id: Int32
    repeat: Int32
    rate_ppm: Int64
    max_idle_gap_ns: Int64
    credit_limit: Int64
    replay_channel: VarAscii = ""


@message(template_id=1103, block_length=32)
class ReplayCreditRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    replay_session_id: Int64
    limit_position: Int64


# Replication (docs/archive.md section 20) takes the later Aeron's templates and layouts (ReplicateRequest 50,
# StopReplicationRequest 51, RecordingSignalEvent 24); signals go only to the control session that asked.


class RecordingSignal(enum.IntEnum):
    START = 0
    STOP = 1
    EXTEND = 2
    REPLICATE = 3
    MERGE = 4
    SYNC = 5
    DELETE = 6
    REPLICATE_END = 7
    NULL_VAL = INT32_NULL


Signal = enum_field(RecordingSignal, Int32)


@message(template_id=50, block_length=36)
class ReplicateRequest(NamedTuple):
    """Copy ``src_recording_id`` of the archive at ``src_control_channel``/``src_control_stream_id`` into a new
    recording (``dst_recording_id`` -1) or onto the end of ``dst_recording_id``; with ``live_destination`` the
    copy merges onto the live stream there and goes on recording it."""

    control_session_id: Int64
    correlation_id: Int64
    src_recording_id: Int64
    dst_recording_id: Int64
    src_control_stream_id: Int32
    src_control_channel: VarAscii = ""
    live_destination: VarAscii = ""


@message(template_id=51, block_length=24)
class StopReplicationRequest(NamedTuple):
    control_session_id: Int64
    correlation_id: Int64
    replication_id: Int64


@message(template_id=24, block_length=44)
class RecordingSignalEvent(NamedTuple):
    """To the control session that asked: ``correlation_id`` is its request's, ``subscription_id`` the
    replication id."""

    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64
    subscription_id: Int64
    position: Int64
    signal: Signal


@message(template_id=104, block_length=24)
class PurgeRecordingRequest(NamedTuple):
    """Invalidate a stopped recording's catalog entry and delete its files. The template id, block length and
    fields are the later Aeron's (schema version 5), so a newer client's purge works against our archive."""

    control_session_id: Int64
    correlation_id: Int64
    recording_id: Int64


EXTENSIONS = frozenset(
    {
        BoundedReplayRequest,
        PositionLookupRequest,
        ExtendedReplayRequest,
        ReplayCreditRequest,
        ReplicateRequest,
        StopReplicationRequest,
        RecordingSignalEvent,
        PurgeRecordingRequest,
    }
)
"""Messages 1.15.1 does not have (its jar has no encoders for them)."""

encode = ARCHIVE.encode
encode_into = ARCHIVE.encode_into
decode = ARCHIVE.decode
codec = ARCHIVE.codec
