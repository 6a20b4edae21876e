"""ControlResponsePoller: reads a control response stream and sorts what belongs to this control session by
correlation id (docs/archive.md sections 3 and 12).

Several clients may share a response channel and stream (each gets its own archive publication, so its own
image): messages naming another control session are skipped. Unknown template ids are ignored, as a 1.15.1
client does; a message of another schema is an ``ArchiveProtocolError``, as 1.15.1 throws.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from driver.archive.client.exceptions import ArchiveError
from driver.archive.client.message_stream import FRAGMENT_LIMIT, MessageStream
from driver.archive.codecs import (
    ControlResponse,
    ControlResponseCode,
    RecordingDescriptor,
    RecordingSignalEvent,
)
from driver.client import Subscription

MAX_UNCLAIMED_ERRORS = 64

Response = ControlResponse | RecordingDescriptor


class ControlResponsePoller(MessageStream):
    stream_name = "control response stream"

    """Decodes responses; those awaited (``expect``) are kept per correlation id until taken.

    ``control_session_id`` is None until the session is open: the connect response is matched on its
    correlation id alone. An ERROR that nobody awaits (the archive reports some failures after the OK, with
    the original correlation id) goes to ``on_unclaimed_error`` and into ``unclaimed_errors``.
    """

    def __init__(
        self,
        subscription: Subscription | None,
        fragment_limit: int = FRAGMENT_LIMIT,
        on_unclaimed_error: Callable[[ArchiveError], None] | None = None,
    ) -> None:
        super().__init__(subscription, fragment_limit)
        self.control_session_id: int | None = None
        self.on_unclaimed_error = on_unclaimed_error
        self.unclaimed_errors: deque[ArchiveError] = deque(maxlen=MAX_UNCLAIMED_ERRORS)
        self._inbox: dict[int, deque[Response]] = {}
        self._signal_requests: dict[int, int] = {}
        """Replicate requests' correlation ids, to their replication ids once answered (-1 until then)."""
        self._signals: deque[Any] = deque()

    # -- awaiting --------------------------------------------------------------------------------------------

    def expect(self, correlation_id: int) -> None:
        self._inbox.setdefault(correlation_id, deque())

    def forget(self, correlation_id: int) -> None:
        """Stop awaiting ``correlation_id``: an ERROR already queued for it (the archive may follow an OK with
        one) becomes unclaimed, as any later one will."""
        for message in self._inbox.pop(correlation_id, ()):
            if isinstance(message, ControlResponse) and message.code == ControlResponseCode.ERROR:
                self._unclaimed(message)

    def watch_signals(self, correlation_id: int) -> None:
        """Keep RecordingSignalEvents and later ERRORs of this (replicate) request for ``take_signals``."""
        self._signal_requests[correlation_id] = -1

    def take_signals(self) -> list[Any]:
        """RecordingSignalEvents and (replication id, error message) pairs, in arrival order."""
        signals = list(self._signals)
        self._signals.clear()
        return signals

    def take_signal(self, replication_id: int) -> Any:
        """The oldest signal or error of ``replication_id`` (others stay), or None."""
        for index, item in enumerate(self._signals):
            owner = item.subscription_id if isinstance(item, RecordingSignalEvent) else item[0]
            if owner == replication_id:
                del self._signals[index]
                return item
        return None

    def take(self, correlation_id: int) -> Response | None:
        """The next message that arrived for ``correlation_id``, or None."""
        inbox = self._inbox.get(correlation_id)
        return inbox.popleft() if inbox else None

    # -- polling ---------------------------------------------------------------------------------------------

    def on_decoded(self, message: Any) -> None:
        if isinstance(message, RecordingSignalEvent):
            if message.control_session_id == self.control_session_id:
                self._signal_requests[message.correlation_id] = message.subscription_id
                self._signals.append(message)
            return
        if not isinstance(message, ControlResponse | RecordingDescriptor):
            return  # events or catalog records have no place here: ignored like unknown templates
        if self.control_session_id is not None and message.control_session_id != self.control_session_id:
            return
        inbox = self._inbox.get(message.correlation_id)
        replication_id = self._signal_requests.get(message.correlation_id)
        if replication_id is not None and isinstance(message, ControlResponse):
            if inbox is not None:  # the answer to the replicate request itself
                inbox.append(message)
                if message.code == ControlResponseCode.OK:
                    self._signal_requests[message.correlation_id] = message.relevant_id
            elif message.code == ControlResponseCode.ERROR:
                self._signals.append((replication_id, message.error_message))
        elif inbox is not None:
            inbox.append(message)
        elif (
            isinstance(message, ControlResponse)
            and message.code == ControlResponseCode.ERROR
            and self.control_session_id is not None  # else: another client's connect failing
        ):
            self._unclaimed(message)

    def _unclaimed(self, response: ControlResponse) -> None:
        error = ArchiveError(response.error_message, response.relevant_id, response.correlation_id)
        self.unclaimed_errors.append(error)
        if self.on_unclaimed_error is not None:
            self.on_unclaimed_error(error)
