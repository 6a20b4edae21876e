"""The archive's ``rec-pos`` counter (type 100) as Aeron Archive 1.15.1 allocates it through ADD_COUNTER
(docs/counters.md section 7), for tests that make one with the client's ``add_counter``."""

from __future__ import annotations

import struct

from driver.concurrent.counter_types import RECORDING_MAX_SOURCE_IDENTITY_LENGTH, RECORDING_POSITION_TYPE_ID

REC_POS_TYPE_ID = RECORDING_POSITION_TYPE_ID


def rec_pos_key(recording_id: int, session_id: int, source_identity: str) -> bytes:
    """recordingId i64 @0, sessionId i32 @8, source identity length i32 @12, source identity @16 (≤ 96)."""
    source = source_identity.encode("ascii")[:RECORDING_MAX_SOURCE_IDENTITY_LENGTH]
    return struct.pack("<qii", recording_id, session_id, len(source)) + source


def rec_pos_label(recording_id: int, session_id: int, stream_id: int, stripped_channel: str) -> str:
    return f"rec-pos: {recording_id} {session_id} {stream_id} {stripped_channel}"
