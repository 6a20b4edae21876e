"""One control exchange: a request and the ControlResponse that answers it (docs/archive.md sections 2-9).

``begin`` then ``step`` until it returns True: each step offers the request if it is not yet sent, else polls
the response stream for its answer; the message timeout starts again once the request is sent and with each
answer. AeronArchive's blocking and ``*_async`` methods drive a step loop with sleeps or awaits, the polled
requests of archive_requests.py with their caller's duty cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from driver.archive.client.archive_proxy import ArchiveProxy
from driver.archive.client.control_response_poller import ControlResponsePoller, Response
from driver.archive.client.exceptions import ArchiveError, ArchiveTimeoutError
from driver.archive.codecs import ControlResponse, ControlResponseCode, RecordingDescriptor

DescriptorConsumer = Callable[[RecordingDescriptor], None]


class Exchange:
    """A request and the ControlResponse (OK, relevantId) that answers it."""

    def __init__(self, what: str, correlation_id: int, request: tuple[Any, ...]) -> None:
        self.what = what
        self.correlation_id = correlation_id
        self.request = request
        self.sent = False
        self.result: Any = None
        self.deadline_ns = 0

    def begin(self, poller: ControlResponsePoller, timeout_ns: int) -> None:
        """Claim the answers to this request's correlation id; the message timeout starts now."""
        poller.expect(self.correlation_id)
        self.deadline_ns = time.monotonic_ns() + timeout_ns

    def step(self, proxy: ArchiveProxy, poller: ControlResponsePoller, timeout_ns: int) -> bool:
        """One attempt: offer the request if not yet sent, else poll for its answer. True when done; raises the
        archive's error, or ArchiveTimeoutError once the message timeout passes without progress."""
        now_ns = time.monotonic_ns()
        if not self.sent:
            if proxy.try_offer(self.request, self.correlation_id, self.what):
                self.sent = True
                self.deadline_ns = now_ns + timeout_ns
                return False
        else:
            poller.poll()
            while (message := poller.take(self.correlation_id)) is not None:
                self.deadline_ns = now_ns + timeout_ns  # any answer is progress
                if self.on_response(message):
                    return True
        if now_ns > self.deadline_ns:
            timeout_s = timeout_ns / 1e9
            if self.sent:
                reason = f"no response from the archive within {timeout_s:g} s"
            elif proxy.publication.is_connected:
                reason = f"could not send the request within {timeout_s:g} s: the archive pushes back"
            else:
                reason = (
                    f"could not send the request within {timeout_s:g} s: no archive is connected to "
                    f"{proxy.publication.channel} stream {proxy.publication.stream_id}"
                )
            raise ArchiveTimeoutError(reason, correlation_id=self.correlation_id, request=self.what)
        return False

    def error(self, response: ControlResponse) -> ArchiveError:
        return ArchiveError(response.error_message, response.relevant_id, self.correlation_id, self.what)

    def on_response(self, message: Response) -> bool:
        """True when ``message`` ends the exchange (``result`` set); raises the archive's error."""
        if not isinstance(message, ControlResponse):
            return False
        if message.code == ControlResponseCode.ERROR:
            raise self.error(message)
        if message.code != ControlResponseCode.OK:
            raise ArchiveError(
                f"unexpected response code {message.code.name}",
                correlation_id=self.correlation_id,
                request=self.what,
            )
        self.result = self.value(message)
        return True

    def value(self, response: ControlResponse) -> Any:
        return response.relevant_id


class ConnectExchange(Exchange):
    def value(self, response: ControlResponse) -> Any:
        # The session is the response's controlSessionId field, as the Java client takes it.
        return response.control_session_id


class ListingExchange(Exchange):
    """Descriptors until ``count`` arrived or RECORDING_UNKNOWN says the catalog ended (docs/archive.md
    section 9); the result is the list."""

    def __init__(
        self,
        what: str,
        correlation_id: int,
        request: tuple[Any, ...],
        count: int,
        consumer: DescriptorConsumer | None,
    ) -> None:
        super().__init__(what, correlation_id, request)
        self.remaining = count
        self.result: list[RecordingDescriptor] = []
        self.consumer = consumer

    def on_response(self, message: Response) -> bool:
        if isinstance(message, RecordingDescriptor):
            self.result.append(message)
            if self.consumer is not None:
                self.consumer(message)
            self.remaining -= 1
            return self.remaining <= 0
        if message.code == ControlResponseCode.ERROR:
            raise self.error(message)
        if message.code == ControlResponseCode.RECORDING_UNKNOWN:
            return True
        raise ArchiveError(
            f"unexpected response code {message.code.name} to a listing",
            correlation_id=self.correlation_id,
            request=self.what,
        )
