"""Replayer: the agent that runs every ReplaySession (docs/archive.md section 8)."""

from __future__ import annotations

from collections.abc import Callable

from driver.archive.replay_session import ReplaySession
from driver.archive.session_worker import ReplayDone, SessionQueue


class Replayer:
    role_name = "archive-replayer"

    def __init__(
        self, commands: SessionQueue, outcomes: SessionQueue, epoch_clock_ms: Callable[[], int]
    ) -> None:
        self._commands = commands
        self._outcomes = outcomes
        self._epoch_clock_ms = epoch_clock_ms
        self.sessions: dict[int, ReplaySession] = {}

    def on_start(self) -> None:
        pass

    def is_dormant(self) -> bool:
        return not (self.sessions or len(self._commands))

    def do_work(self) -> int:
        work = 0
        for command, item in self._commands.drain():
            work += 1
            if command == "add":
                self.sessions[item.replay_session_id] = item
            elif command == "abort" and item in self.sessions:
                self.sessions[item].abort()
            elif command == "credit" and item[0] in self.sessions:
                controls = self.sessions[item[0]].controls
                credit = controls.credit() if controls is not None else None
                if credit is not None:
                    credit.grant(item[1])
        if not self.sessions:
            return work
        now_ms = self._epoch_clock_ms()
        for replay_session_id, session in list(self.sessions.items()):
            work += session.do_work(now_ms)
            if session.is_done:
                del self.sessions[replay_session_id]
                self._outcomes.put("replay_done", ReplayDone(replay_session_id, session.error))
        return work

    def on_close(self) -> None:
        now_ms = self._epoch_clock_ms()
        for session in self.sessions.values():
            session.abort()
            session.do_work(now_ms)
        self.sessions.clear()
