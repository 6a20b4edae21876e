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

from driver.archive.client.exceptions import ArchiveError, ArchiveProtocolError
from driver.archive.codecs import (
    CodecError,
    ControlResponse,
    ControlResponseCode,
    RecordingDescriptor,
    SchemaMismatchError,
    UnknownTemplateError,
    decode,
)
from driver.client import FragmentAssembler, Subscription
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.logbuffer.header import Header

FRAGMENT_LIMIT = 10
MAX_UNCLAIMED_ERRORS = 64

Response = ControlResponse | RecordingDescriptor


class ControlResponsePoller:
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
        self.subscription = subscription
        self.fragment_limit = fragment_limit
        self.control_session_id: int | None = None
        self.on_unclaimed_error = on_unclaimed_error
        self.unclaimed_errors: deque[ArchiveError] = deque(maxlen=MAX_UNCLAIMED_ERRORS)
        self._inbox: dict[int, deque[Response]] = {}
        self._assembler = FragmentAssembler(self._on_fragment)
        self._failure: ArchiveProtocolError | None = None

    # -- awaiting --------------------------------------------------------------------------------------------

    def expect(self, correlation_id: int) -> None:
        self._inbox.setdefault(correlation_id, deque())

    def forget(self, correlation_id: int) -> None:
        """Stop awaiting ``correlation_id``: an ERROR already queued for it (the archive may follow an OK with
        one) becomes unclaimed, as any later one will."""
        for message in self._inbox.pop(correlation_id, ()):
            if isinstance(message, ControlResponse) and message.code == ControlResponseCode.ERROR:
                self._unclaimed(message)

    def take(self, correlation_id: int) -> Response | None:
        """The next message that arrived for ``correlation_id``, or None."""
        inbox = self._inbox.get(correlation_id)
        return inbox.popleft() if inbox else None

    # -- polling ---------------------------------------------------------------------------------------------

    def poll(self) -> int:
        """Poll up to ``fragment_limit`` fragments; raises ``ArchiveProtocolError`` on another schema."""
        assert self.subscription is not None
        count = self.subscription.poll(self._assembler, self.fragment_limit)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        return count

    def _on_fragment(self, buffer: AtomicBuffer, offset: int, length: int, _header: Header) -> None:
        try:
            self.on_message(buffer.view, offset, length)
        except ArchiveProtocolError as exc:
            # Raised from poll(), after the term reader has moved past the fragment.
            self._failure = self._failure or exc

    def on_message(self, buffer: Any, offset: int, length: int) -> None:
        """One whole message (sans-IO: any bytes-like buffer)."""
        try:
            message = decode(buffer, offset, length)
        except UnknownTemplateError:
            return
        except SchemaMismatchError as exc:
            raise ArchiveProtocolError(f"control response stream: {exc.reason}") from exc
        except CodecError as exc:
            raise ArchiveProtocolError(f"control response stream: undecodable message: {exc}") from exc
        if not isinstance(message, ControlResponse | RecordingDescriptor):
            return  # events or catalog records have no place here: ignored like unknown templates
        if self.control_session_id is not None and message.control_session_id != self.control_session_id:
            return
        inbox = self._inbox.get(message.correlation_id)
        if inbox is not None:
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
