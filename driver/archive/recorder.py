"""Recorder: the agent that runs every RecordingSession (docs/archive.md section 6)."""

from __future__ import annotations

from driver.archive.recording_session import RecordingSession
from driver.archive.session_worker import RecordingStopped, SessionQueue


class Recorder:
    role_name = "archive-recorder"

    def __init__(self, commands: SessionQueue, outcomes: SessionQueue) -> None:
        self._commands = commands
        self._outcomes = outcomes
        self.sessions: dict[int, RecordingSession] = {}

    def on_start(self) -> None:
        pass

    def is_dormant(self) -> bool:
        return not (self.sessions or len(self._commands))

    def do_work(self) -> int:
        work = 0
        for command, item in self._commands.drain():
            work += 1
            if command == "add":
                self.sessions[item.recording_id] = item
            elif command == "abort" and item in self.sessions:
                self.sessions[item].abort()
        for recording_id, session in list(self.sessions.items()):
            work += session.do_work()
            if session.is_done:
                del self.sessions[recording_id]
                self._outcomes.put(
                    "recording_stopped",
                    RecordingStopped(recording_id, session.recorded_position, session.error),
                )
        return work

    def on_close(self) -> None:
        for recording_id, session in self.sessions.items():
            session.abort()
            session.do_work()
            self._outcomes.put(
                "recording_stopped", RecordingStopped(recording_id, session.recorded_position, session.error)
            )
        self.sessions.clear()
