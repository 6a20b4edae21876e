"""ControlSession: one connected archive client, from its ConnectRequest to its close (docs/archive.md section 5).

INIT waits (at most the connect timeout) for the response publication to exist and be connected, then sends the
connect OK. ACTIVE sends each response straight away (up to 3 offers) and queues what back pressure holds up;
a queue that cannot drain within the connect timeout, or a response publication that is lost or no longer
connected, ends the session.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from driver.archive.codecs import ControlResponseCode
from driver.archive.control_response_proxy import LOST, OFFERED, control_response, offer
from driver.archive.state import StateMachine
from driver.client.exceptions import AeronError
from driver.client.publication import ExclusivePublication

if TYPE_CHECKING:
    from driver.client.aeron import Aeron

log = logging.getLogger(__name__)


class State(enum.Enum):
    INIT = "INIT"
    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"
    DONE = "DONE"


TRANSITIONS: dict[tuple[State, str], State] = {
    (State.INIT, "connected"): State.ACTIVE,
    (State.INIT, "connect_timeout"): State.INACTIVE,
    (State.INIT, "publication_failed"): State.INACTIVE,
    (State.INIT, "abort"): State.INACTIVE,
    (State.ACTIVE, "abort"): State.INACTIVE,
    (State.ACTIVE, "publication_lost"): State.INACTIVE,
    (State.ACTIVE, "response_timeout"): State.INACTIVE,
    (State.INACTIVE, "closed"): State.DONE,
}


class ControlSession:
    def __init__(
        self,
        control_session_id: int,
        connect_correlation_id: int,
        aeron: Aeron,
        publication_registration_id: int,
        now_ms: int,
        connect_timeout_ms: int,
        on_error: Callable[[str], None],
    ) -> None:
        self.control_session_id = control_session_id
        self.connect_correlation_id = connect_correlation_id
        self._aeron = aeron
        self._publication_registration_id = publication_registration_id
        self.publication: ExclusivePublication | None = None
        self._connect_deadline_ms = now_ms + connect_timeout_ms
        self._timeout_ms = connect_timeout_ms
        self._queue: deque[bytes] = deque()
        self._queue_deadline_ms = -1
        self._on_error = on_error
        self.machine = StateMachine(TRANSITIONS, State.INIT)
        self.active_listing: object | None = None
        self.now_ms = now_ms

    @property
    def state(self) -> State:
        return self.machine.state

    @property
    def is_done(self) -> bool:
        return self.machine.state is State.DONE

    @property
    def is_active(self) -> bool:
        return self.machine.state in (State.INIT, State.ACTIVE)

    def abort(self) -> None:
        self.machine.on("abort")

    # -- duty cycle ------------------------------------------------------------------------------------------------

    def do_work(self, now_ms: int) -> int:
        self.now_ms = now_ms
        work = 0
        if self.machine.state is State.INIT:
            work += self._wait_for_connection(now_ms)
        if self.machine.state is State.ACTIVE:
            if not self.publication.is_connected:
                # The client is gone (its response subscription removed when the driver timed it out): the
                # session ends now instead of at its next response, and its replays with it (as Aeron since 1.47).
                self.machine.on("publication_lost")
            else:
                work += self._send_queued(now_ms)
        if self.machine.state is State.INACTIVE:
            self._close()
            work += 1
        return work

    def _wait_for_connection(self, now_ms: int) -> int:
        if self.publication is None:
            try:
                self.publication = self._aeron.get_exclusive_publication(self._publication_registration_id)
            except AeronError as e:
                self._on_error(
                    f"control session {self.control_session_id}: response publication refused: {e}"
                )
                self.machine.on("publication_failed")
                return 1
        if self.publication is not None and self.publication.is_connected:
            self.machine.on("connected")
            self._queue.appendleft(
                control_response(
                    self.control_session_id,
                    self.connect_correlation_id,
                    self.control_session_id,
                    ControlResponseCode.OK,
                )
            )
            self._queue_deadline_ms = now_ms + self._timeout_ms
            return 1
        if now_ms > self._connect_deadline_ms:
            self.machine.on("connect_timeout")
        return 0

    def _send_queued(self, now_ms: int) -> int:
        work = 0
        while self._queue:
            outcome = offer(self.publication, self._queue[0])
            if outcome == OFFERED:
                self._queue.popleft()
                work += 1
            elif outcome == LOST:
                self.machine.on("publication_lost")
                return work
            else:
                break
        if not self._queue:
            self._queue_deadline_ms = -1
        elif now_ms > self._queue_deadline_ms:
            self._on_error(
                f"control session {self.control_session_id}: responses not sent within {self._timeout_ms} ms"
            )
            self.machine.on("response_timeout")
        return work

    def _close(self) -> None:
        if self.publication is not None:
            self.publication.close()
        elif self._publication_registration_id is not None:
            # Still pending: released as soon as the driver answers (closing an unknown id is harmless).
            try:
                publication = self._aeron.get_exclusive_publication(self._publication_registration_id)
            except AeronError:
                publication = None
            if publication is not None:
                publication.close()
        self._queue.clear()
        self.machine.on("closed")

    # -- responses -------------------------------------------------------------------------------------------------

    def _send(self, message: bytes) -> None:
        state = self.machine.state
        if state is State.INIT or (state is State.ACTIVE and self._queue):
            # In order: nothing overtakes the connect OK or a response already waiting.
            self._queue.append(message)
            return
        if state is not State.ACTIVE:
            return
        outcome = offer(self.publication, message)
        if outcome == LOST:
            self.machine.on("publication_lost")
        elif outcome != OFFERED:
            self._queue.append(message)
            self._queue_deadline_ms = self.now_ms + self._timeout_ms

    def send_message(self, message: bytes) -> None:
        """An encoded message (a descriptor of ListRecording), sent or queued like a response."""
        self._send(message)

    def send_ok(self, correlation_id: int, relevant_id: int = 0) -> None:
        self._send(
            control_response(self.control_session_id, correlation_id, relevant_id, ControlResponseCode.OK)
        )

    def send_recording_unknown(self, correlation_id: int, recording_id: int) -> None:
        self._send(
            control_response(
                self.control_session_id, correlation_id, recording_id, ControlResponseCode.RECORDING_UNKNOWN
            )
        )

    def send_error(self, correlation_id: int, message: str, error_code: int = 0) -> None:
        self._send(
            control_response(
                self.control_session_id, correlation_id, error_code, ControlResponseCode.ERROR, message
            )
        )

    def attempt_error(self, correlation_id: int, message: str, error_code: int = 0) -> None:
        """An error offered 3 times and never queued (1.15.1's attemptErrorResponse)."""
        if self.machine.state is State.ACTIVE:
            offer(
                self.publication,
                control_response(
                    self.control_session_id, correlation_id, error_code, ControlResponseCode.ERROR, message
                ),
            )

    def try_send(self, message: bytes) -> bool:
        """A descriptor of a listing: offered (3 attempts) only when nothing is queued; False to retry later."""
        if self.machine.state is not State.ACTIVE or self._queue:
            return False
        outcome = offer(self.publication, message)
        if outcome == LOST:
            self.machine.on("publication_lost")
        return outcome == OFFERED
