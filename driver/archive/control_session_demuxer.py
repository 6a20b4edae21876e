"""ControlSessionDemuxer: decodes the requests of one control request image and hands each to the conductor for
the control session it names (docs/archive.md sections 2 and 5).

A control session belongs to the image its ConnectRequest arrived on. What cannot be served is reported (the
archive's error counter and log) and dropped: another schema, a truncated or malformed message, a session id
this image never connected. A known session that sends a template id the archive does not know gets an ERROR
naming it (1.15.1 answers nothing and the client times out). When the image goes, its sessions are aborted.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from driver.archive.codecs import (
    ARCHIVE,
    HEADER_LENGTH,
    CloseSessionRequest,
    CodecError,
    ConnectRequest,
    UnknownTemplateError,
)
from driver.archive.control_session import ControlSession
from driver.client.fragment_assembler import FragmentAssembler
from driver.client.image import Image

if TYPE_CHECKING:
    from driver.archive.archive_conductor import ArchiveConductor

FRAGMENT_LIMIT = 10

log = logging.getLogger("driver.archive")
_SESSION_AND_CORRELATION = struct.Struct("<qq")


class ControlSessionDemuxer:
    def __init__(self, image: Image, conductor: ArchiveConductor) -> None:
        self.image = image
        self._conductor = conductor
        self.sessions: dict[int, ControlSession] = {}
        self._assembler = FragmentAssembler(self._on_fragment)
        self.is_done = False

    def do_work(self) -> int:
        if self.is_done:
            return 0
        image = self.image
        fragments = image.poll(self._assembler, FRAGMENT_LIMIT)
        if fragments == 0 and (image.is_closed or image.is_end_of_stream):  # no request can come any more
            for session in self.sessions.values():
                session.abort()
            self.sessions.clear()
            self.is_done = True
            return 1
        return fragments

    def remove(self, session: ControlSession) -> None:
        self.sessions.pop(session.control_session_id, None)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        try:
            self._dispatch(buffer.view, offset, length)
        except Exception as e:  # whatever a request does, the image keeps being polled
            log.exception("archive: control request failed")
            self._conductor.report_error(f"{self._source()}: request dropped: {e!r}")

    def _source(self) -> str:
        return f"control request image session {self.image.session_id} ({self.image.source_identity})"

    def _dispatch(self, view: Any, offset: int, length: int) -> None:
        source = self._source()
        try:
            request = ARCHIVE.decode(view, offset, length)
        except UnknownTemplateError as e:
            self._on_unknown_template(view, offset, length, e.template_id, source)
            return
        except CodecError as e:
            self._conductor.report_error(f"{source}: request dropped: {e}")
            return
        if isinstance(request, ConnectRequest):
            session = self._conductor.new_control_session(request, self)
            if session is not None:
                self.sessions[session.control_session_id] = session
            return
        control_session_id = getattr(request, "control_session_id", None)
        session = self.sessions.get(control_session_id) if control_session_id is not None else None
        if session is None:
            self._conductor.report_error(
                f"{source}: {type(request).__name__} for unknown control session {control_session_id} dropped"
            )
            return
        if isinstance(request, CloseSessionRequest):
            session.abort()
            return
        self._conductor.on_request(session, request)

    def _on_unknown_template(
        self, view: Any, offset: int, length: int, template_id: int, source: str
    ) -> None:
        body = offset + HEADER_LENGTH
        if length >= HEADER_LENGTH + _SESSION_AND_CORRELATION.size:
            control_session_id, correlation_id = _SESSION_AND_CORRELATION.unpack_from(view, body)
            session = self.sessions.get(control_session_id)
            if session is not None:
                session.send_error(
                    correlation_id, f"unknown template id {template_id}: request not supported"
                )
                self._conductor.report_error(f"{source}: unknown template id {template_id}")
                return
        self._conductor.report_error(f"{source}: message of unknown template id {template_id} dropped")
