"""Encodes and offers what the archive sends: control responses and descriptors to one control session's
response publication, recording events to the events publication (docs/archive.md sections 3, 5 and 6)."""

from __future__ import annotations

from typing import Any

from driver.archive.codecs import (
    ControlResponse,
    ControlResponseCode,
    RecordingDescriptor,
    RecordingProgress,
    RecordingStarted,
    RecordingStopped,
    encode,
)
from driver.client.offer_result import ADMIN_ACTION, BACK_PRESSURED
from driver.client.publication import ExclusivePublication

SEND_ATTEMPTS = 3
"""A response is offered this many times before it is queued (docs/archive.md section 5)."""

OFFERED = 1
RETRY = 0
"""Back pressure: try again later."""
LOST = -1
"""The publication is gone (not connected, closed, or at its maximum position): nothing can be sent on it."""


def offer(publication: ExclusivePublication | None, message: bytes, attempts: int = SEND_ATTEMPTS) -> int:
    """OFFERED, RETRY (back pressured ``attempts`` times) or LOST."""
    if publication is None:
        return LOST
    for _ in range(attempts):
        result = publication.offer(message)
        if result > 0:
            return OFFERED
        if result not in (BACK_PRESSURED, ADMIN_ACTION):
            return LOST
    return RETRY


def control_response(
    control_session_id: int,
    correlation_id: int,
    relevant_id: int,
    code: ControlResponseCode,
    message: str = "",
) -> bytes:
    # An error text may quote what a client sent (a channel, decoded with replacement characters): the wire
    # field is US-ASCII, so anything else is escaped rather than making the answer impossible to encode.
    message = message.encode("ascii", "backslashreplace").decode("ascii")
    return encode(ControlResponse(control_session_id, correlation_id, relevant_id, code, message))


def descriptor_message(
    descriptor: RecordingDescriptor, control_session_id: int, correlation_id: int
) -> bytes:
    return encode(descriptor._replace(control_session_id=control_session_id, correlation_id=correlation_id))


class RecordingEventsProxy:
    """RecordingStarted (3 attempts), RecordingProgress (1 attempt), RecordingStopped (3 attempts); nothing is
    sent while the events publication is not connected (docs/archive.md section 6)."""

    def __init__(self) -> None:
        self.publication: ExclusivePublication | None = None

    def _send(self, message: Any, attempts: int) -> bool:
        publication = self.publication
        if publication is None or not publication.is_connected:
            return False
        return offer(publication, encode(message), attempts) == OFFERED

    def started(
        self,
        recording_id: int,
        start_position: int,
        session_id: int,
        stream_id: int,
        channel: str,
        source: str,
    ) -> bool:
        return self._send(
            RecordingStarted(recording_id, start_position, session_id, stream_id, channel, source),
            SEND_ATTEMPTS,
        )

    def progress(self, recording_id: int, start_position: int, position: int) -> bool:
        return self._send(RecordingProgress(recording_id, start_position, position), 1)

    def stopped(self, recording_id: int, start_position: int, stop_position: int) -> bool:
        return self._send(RecordingStopped(recording_id, start_position, stop_position), SEND_ATTEMPTS)
