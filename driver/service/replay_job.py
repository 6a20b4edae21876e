"""A replay (docs/service.md section 5): the archive replays each chosen recording paced (docs/archive.md section
18) onto an IPC stream of the service's, and the service forwards every message to its target publication,
counting them, so the status is exact and a cancel stops the flow at once. Rounds (``repeat``) are the service's:
each waits for every recording's replay to end, so streams stay in step across rounds."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driver.archive.client import ArchiveError
from driver.client import ExclusivePublication, Image
from driver.service.forwarding import IDLE_S, Forwarder, close_quietly
from driver.service.models import DataSet, RecordingInfo, ReplayRequest, ReplayStatus

if TYPE_CHECKING:
    from driver.service.service import RecordReplayService

log = logging.getLogger(__name__)

REPLAY_CHANNEL = "aeron:ipc"
CONNECT_TIMEOUT_S = 2.0
START_TIMEOUT_S = 10.0


@dataclass
class _Part:
    """One recording's share of the replay: which bytes, when to start (its offset in the data set)."""

    recording: RecordingInfo
    position: int
    length: int
    delay_s: float
    target: ExclusivePublication | None = None
    session_id: int | None = None
    replay_session_id: int | None = None
    image: Image | None = None
    forwarder: Forwarder | None = None
    done: bool = False


class ReplayJob:
    def __init__(
        self, service: RecordReplayService, request: ReplayRequest, dataset: DataSet, replay_id: str = ""
    ) -> None:
        self.service = service
        self.replay_id = replay_id
        self.request = request
        self.dataset = dataset
        self.state = "running"
        self.error: str | None = None
        self.task: asyncio.Task | None = None
        self.repeats_done = 0
        self._cancel = asyncio.Event()
        self._stopped = asyncio.Event()
        self._messages = 0
        self._bytes = 0
        self._parts: list[_Part] = []
        self._started = time.monotonic()
        self._ended: float | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"replay-{self.replay_id}-{self.dataset.id}"
        )

    def cancel(self) -> None:
        self._cancel.set()

    async def wait_stopped(self, timeout_s: float = 30.0) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), timeout_s)

    def status(self) -> ReplayStatus:
        end = self._ended if self._ended is not None else time.monotonic()
        forwarders = [p.forwarder for p in self._parts if p.forwarder is not None]
        in_round = sum(f.messages for f in forwarders)
        in_round_bytes = sum(f.bytes for f in forwarders)
        return ReplayStatus(
            state=self.state,
            running=self.running,
            replay_id=self.replay_id,
            dataset_id=self.dataset.id,
            messages=self._messages + in_round,
            bytes=self._bytes + in_round_bytes,
            duration_s=round(end - self._started, 6),
            repeats_done=self.repeats_done,
            repeat=self.request.repeat,
            error=self.error,
        )

    async def _run(self) -> None:
        targets: list[ExclusivePublication] = []
        try:
            parts = self._parts = await self._plan()
            for part in parts:
                recording = part.recording
                channel = self.request.channel or recording.source_channel
                stream_id = (
                    recording.source_stream_id if self.request.stream_id is None else self.request.stream_id
                )
                part.target = await self.service.aeron.add_exclusive_publication_async(channel, stream_id)
                targets.append(part.target)
            deadline = time.monotonic() + CONNECT_TIMEOUT_S
            while not all(t.is_connected for t in targets) and time.monotonic() < deadline:
                if self._cancel.is_set():
                    break
                await asyncio.sleep(0.001)
            self._started = time.monotonic()
            for _ in range(self.request.repeat):
                if self._cancel.is_set():
                    break
                await self._round(parts)
                if self._cancel.is_set():
                    break
                self.repeats_done += 1
            self.state = "cancelled" if self._cancel.is_set() else "done"
        except Exception as e:  # reported in the status
            log.exception("replay of %s failed", self.dataset.id)
            self.state, self.error = "failed", f"{type(e).__name__}: {e}"
        finally:
            if self._ended is None:
                self._ended = time.monotonic()
            for target in targets:
                await close_quietly(target)
            self._stopped.set()

    async def _plan(self) -> list[_Part]:
        """The recordings asked for, each with the positions of the time range and its start offset."""
        dataset, request = self.dataset, self.request
        chosen = dataset.recordings
        if request.streams is not None:
            wanted = {(s.channel, s.stream_id) for s in request.streams}
            chosen = [r for r in chosen if (r.source_channel, r.source_stream_id) in wanted]
        time_range = request.time_range
        range_start_ns, range_end_ns = (
            (dataset.start_time_ns, None)
            if time_range is None
            else time_range.bounds_ns(dataset.start_time_ns)
        )
        range_start_ns = max(range_start_ns, dataset.start_time_ns)
        parts = []
        for rec in chosen:
            position, stop = rec.start_position, rec.stop_position
            if range_start_ns > max(rec.start_time_ns, dataset.start_time_ns):
                position = await self._position_at(rec, range_start_ns)
            if range_end_ns is not None and range_end_ns < dataset.end_time_ns:
                stop = await self._position_at(rec, range_end_ns)
            if stop > position:
                delay_ns = max(0, rec.start_time_ns - range_start_ns)
                parts.append(_Part(rec, position, stop - position, delay_ns / 1e9 / request.rate))
        return parts

    async def _position_at(self, rec: RecordingInfo, time_ns: int) -> int:
        service = self.service
        try:
            position = await service.call_archive(
                service.archive.lookup_position_by_time_async, rec.recording_id, time_ns
            )
        except ArchiveError:
            return rec.stop_position  # nothing recorded at or after that time
        return min(max(position, rec.start_position), rec.stop_position)

    async def _round(self, parts: list[_Part]) -> None:
        service = self.service
        stream_id = service.next_stream_id()
        subscription = await service.aeron.add_subscription_async(REPLAY_CHANNEL, stream_id)
        for part in parts:
            part.session_id = part.replay_session_id = part.image = None
            part.done = False
            assert part.target is not None
            part.forwarder = Forwarder(part.target, drop_unconnected=True)
        try:
            start = time.monotonic()
            pending = sorted(parts, key=lambda p: p.delay_s)
            by_session: dict[int, _Part] = {}
            while not self._cancel.is_set():
                now = time.monotonic()
                while pending and now - start >= pending[0].delay_s:
                    part = pending.pop(0)
                    await self._start_part(part, stream_id)
                    by_session[part.session_id] = part  # type: ignore[index]
                work = 0
                for image in subscription.images:
                    part = by_session.get(image.session_id)
                    if part is None or part.done:
                        continue
                    part.image = image
                    forwarder = part.forwarder
                    assert forwarder is not None
                    work += forwarder.forward(image)
                    if image.is_end_of_stream and not forwarder.pending:
                        part.done = True
                if not pending and all(p.done for p in parts):
                    break
                await asyncio.sleep(0 if work else IDLE_S)
        finally:
            self._ended = time.monotonic() if self._cancel.is_set() else None
            for part in parts:
                if part.forwarder is not None:
                    self._messages += part.forwarder.messages
                    self._bytes += part.forwarder.bytes
                    part.forwarder = None
            await close_quietly(subscription)
            if self._cancel.is_set():
                for part in parts:
                    if part.replay_session_id is not None and not part.done:
                        with contextlib.suppress(ArchiveError):
                            await service.call_archive(
                                service.archive.stop_replay_async, part.replay_session_id
                            )

    async def _start_part(self, part: _Part, stream_id: int) -> None:
        request, service = self.request, self.service
        gap = None if request.max_idle_gap_s is None else int(request.max_idle_gap_s * 1e9)
        part.replay_session_id = await service.call_archive(
            service.archive.start_paced_replay_async,
            part.recording.recording_id,
            part.position,
            part.length,
            REPLAY_CHANNEL,
            stream_id,
            request.rate,
            1,
            gap,
        )
        # The replay's publication takes the low 32 bits of the replay session id as its session id.
        part.session_id = _int32(part.replay_session_id)


def _int32(value: int) -> int:
    value &= 0xFFFF_FFFF
    return value - (1 << 32) if value & 0x8000_0000 else value
