"""Bounds on what a client can hold of the service (docs/service.md section 1): uvicorn's HTTP protocol (httptools)
with deadlines on each request's arrival and on the client's reading, and a bound on open connections.

A request's headers must arrive within ``header_timeout_s`` of its first byte (of the connection, for the
first), a JSON body within ``body_timeout_s`` of the headers, and an upload (the import's raw body) must keep
bringing at least ``upload_min_bytes_per_s`` over each ``upload_window_s`` while the service is reading it. A
response the client stops reading (the socket's buffer full) for ``send_timeout_s`` is cut. Past a deadline the
connection is answered 408 when nothing was answered yet, and closed. Over ``max_connections`` the connection
that has waited longest on its client (for a request, or idle between two) is closed to make room, never one
being answered; so stalled clients cannot crowd out a status poll. Each connection costs one timer, re-armed at
each phase: nothing runs per byte.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import Enum

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

UPLOAD_PATH_SUFFIX = "/datasets/import"
_TIMEOUT_BODY = b'{"error": "the request did not arrive in time"}'
_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


@dataclass(frozen=True)
class RequestLimits:
    header_timeout_s: float = 30.0
    body_timeout_s: float = 30.0
    upload_min_bytes_per_s: int = 16 * 1024
    upload_window_s: float = 30.0
    send_timeout_s: float = 60.0
    max_connections: int = 1000


class Phase(Enum):
    HEADERS = "waiting for the request's headers"
    BODY = "waiting for the request's body"
    UPLOAD = "receiving an upload"
    ANSWERING = "answering"
    IDLE = "idle between requests"


_WAITING_ON_CLIENT = (Phase.HEADERS, Phase.BODY, Phase.UPLOAD, Phase.IDLE)


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's protocol with the deadlines above; ``limits`` is set on a subclass per server."""

    limits = RequestLimits()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._write_paused_at: float | None = None
        self._phase_since = self.loop.time()
        self._enter(Phase.HEADERS, self.limits.header_timeout_s)
        self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    # -- phases, from httptools' callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._enter(Phase.HEADERS, self.limits.header_timeout_s)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        if self.scope["method"] == "POST" and self.scope.get("path", "").endswith(UPLOAD_PATH_SUFFIX):
            self._window_bytes = 0
            self._enter(Phase.UPLOAD, self.limits.upload_window_s)
        else:
            self._enter(Phase.BODY, self.limits.body_timeout_s)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self._phase is Phase.UPLOAD:
            self._window_bytes += len(body)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._enter(Phase.ANSWERING, None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._phase is Phase.ANSWERING:
            self._enter(Phase.IDLE, None)  # uvicorn's keep-alive timeout closes it

    def pause_writing(self) -> None:
        super().pause_writing()
        self._write_paused_at = self.loop.time()
        self._arm(self.limits.send_timeout_s)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._write_paused_at = None

    # -- the timer ---------------------------------------------------------------------------------------------

    def _enter(self, phase: Phase, timeout_s: float | None) -> None:
        if getattr(self, "_phase", None) is not phase or phase is Phase.HEADERS:
            self._phase_since = self.loop.time()
        self._phase = phase
        self._cancel()
        if timeout_s is not None:
            self._arm(timeout_s)

    def _arm(self, delay_s: float) -> None:
        self._cancel()
        self._timer = self.loop.call_later(delay_s, self._expired)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        if self._write_paused_at is not None and now - self._write_paused_at >= self.limits.send_timeout_s:
            self.transport.abort()  # it stopped reading: what is queued for it is dropped
            return
        if self._phase is Phase.UPLOAD:
            if self.flow.read_paused:  # the service is behind, not the client: a fresh window
                self._window_bytes = 0
                self._arm(self.limits.upload_window_s)
                return
            wanted = self.limits.upload_min_bytes_per_s * self.limits.upload_window_s
            if self._window_bytes >= wanted:
                self._window_bytes = 0
                self._arm(self.limits.upload_window_s)
                return
        elif self._phase not in (Phase.HEADERS, Phase.BODY):
            if self._write_paused_at is not None:
                self._arm(self._write_paused_at + self.limits.send_timeout_s - now)
            return
        self._give_up()

    def _give_up(self) -> None:
        answered = self.cycle is not None and self.cycle.response_started
        if not answered and self._phase is not Phase.IDLE:
            self.transport.write(_REQUEST_TIMEOUT)
        if self.cycle is not None:
            self.cycle.keep_alive = False
        self.transport.close()

    def _make_room(self) -> None:
        """Over the bound: close the connection that has waited longest on its client; if every other one is
        being answered, this one."""
        open_now = sum(1 for c in self.connections if not c.transport.is_closing())
        if open_now <= self.limits.max_connections:
            return
        waiting = [
            c
            for c in self.connections
            if isinstance(c, GuardedHttpProtocol)
            and c is not self
            and c._phase in _WAITING_ON_CLIENT
            and not c.transport.is_closing()
        ]
        victim = min(waiting, key=lambda c: c._phase_since, default=self)
        victim._cancel()
        victim.transport.close()
