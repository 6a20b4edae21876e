"""ArchiveControl: the archive's control protocol spoken by tests through our Python client (thread mode), with
raw codecs, so a test can send any request (also malformed ones) and see every response as it arrives."""

from __future__ import annotations

import itertools
import time
from typing import Any

from driver.archive.codecs import (
    ARCHIVE,
    ConnectRequest,
    ControlResponse,
    ControlResponseCode,
    RecordingDescriptor,
    encode,
)
from driver.client import Aeron

_correlation_ids = itertools.count(1_000)
_response_streams = itertools.count(9_100)


class ArchiveControl:
    """One control session on ``control_channel``/``control_stream_id`` (default: the local IPC channel)."""

    def __init__(
        self,
        aeron: Aeron,
        *,
        control_channel: str = "aeron:ipc",
        control_stream_id: int = 11,
        response_channel: str = "aeron:ipc",
        timeout_s: float = 10.0,
    ) -> None:
        self.aeron = aeron
        self.timeout_s = timeout_s
        self.response_stream_id = next(_response_streams)
        self.responses = aeron.add_subscription(response_channel, self.response_stream_id)
        self.requests = aeron.add_exclusive_publication(control_channel, control_stream_id)
        self.received: list[Any] = []
        self.control_session_id = 0
        self._wait(lambda: self.requests.is_connected, "the archive's control subscription")
        correlation_id = self.next_id()
        self.send(ConnectRequest(correlation_id, self.response_stream_id, response_channel))
        response = self.response(correlation_id)
        assert response.code == ControlResponseCode.OK, response
        self.control_session_id = response.control_session_id

    @staticmethod
    def next_id() -> int:
        return next(_correlation_ids)

    def _wait(self, condition: Any, what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what}")
            time.sleep(0.001)

    def send(self, message: Any) -> None:
        self.send_raw(encode(message))

    def send_raw(self, data: bytes) -> None:
        deadline = time.monotonic() + self.timeout_s
        while self.requests.offer(data) < 0:
            if time.monotonic() > deadline:
                raise TimeoutError("control request not accepted")
            time.sleep(0.001)

    def poll(self) -> int:
        def on_fragment(buffer: Any, offset: int, length: int, _header: Any) -> None:
            self.received.append(ARCHIVE.decode(buffer.view, offset, length))

        return self.responses.poll(on_fragment, 10)

    def response(self, correlation_id: int, timeout_s: float | None = None) -> ControlResponse:
        """The next ControlResponse for ``correlation_id`` (descriptors for it are kept in ``received``)."""
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            for index, message in enumerate(self.received):
                if isinstance(message, ControlResponse) and message.correlation_id == correlation_id:
                    del self.received[index]
                    return message
            if time.monotonic() > deadline:
                raise TimeoutError(f"no response to {correlation_id}; received {self.received}")
            if self.poll() == 0:
                time.sleep(0.001)

    def request(self, factory: Any, *fields: Any, timeout_s: float | None = None) -> ControlResponse:
        """Send ``factory(control_session_id, correlation_id, *fields)`` and wait for its response."""
        correlation_id = self.next_id()
        self.send(factory(self.control_session_id, correlation_id, *fields))
        return self.response(correlation_id, timeout_s)

    def descriptors(self, factory: Any, *fields: Any, count: int, timeout_s: float = 5.0) -> list[Any]:
        """A listing: its descriptors (up to ``count``) and, when it ends early, its RECORDING_UNKNOWN."""
        correlation_id = self.next_id()
        self.send(factory(self.control_session_id, correlation_id, *fields))
        out: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.poll()
            mine = [
                m
                for m in self.received
                if isinstance(m, ControlResponse | RecordingDescriptor) and m.correlation_id == correlation_id
            ]
            for message in mine:
                self.received.remove(message)
                out.append(message)
                if isinstance(message, ControlResponse):
                    return out
            if sum(isinstance(m, RecordingDescriptor) for m in out) >= count:
                return out
            time.sleep(0.001)
        return out

    def close(self) -> None:
        self.requests.close()
        self.responses.close()
