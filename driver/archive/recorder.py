"""Recorder: the session worker that runs every RecordingSession (docs/archive.md section 6)."""

from __future__ import annotations

from driver.archive.recording_session import RecordingSession
from driver.archive.session_worker import SessionWorker


class Recorder(SessionWorker[RecordingSession]):
    role_name = "archive-recorder"

    def work_on(self, session: RecordingSession) -> int:
        return session.do_work()

    def session_done(self, session_id: int, session: RecordingSession) -> None:
        self.conductor.recording_stopped(session_id, session.recorded_position, session.error)
