"""The service's state: one archive control session, at most one recording job and one replay job, and the data
set store (docs/service.md). Jobs run as tasks on the loop the service was made on (the driver's own when embedded)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from driver.archive.client import AeronArchive, ArchiveError, ArchiveErrorCode
from driver.client import Aeron
from driver.protocol.channel_uri import ChannelUri
from driver.service.datasets import DataSetStore
from driver.service.models import (
    DataSet,
    RecordRequest,
    RecordStatus,
    ReplayRequest,
    ReplayStatus,
)
from driver.service.record_job import RecordJob
from driver.service.replay_job import ReplayJob
from driver.service.retention import Retention, beyond_retention

T = TypeVar("T")

log = logging.getLogger(__name__)

PURGE_TIMEOUT_S = 10.0
MAX_REPLAYS = 16
KEPT_ENDED_REPLAYS = 32

INTERNAL_STREAM_BASE = 0x7E5E_0000
"""Stream ids of the service's own IPC streams (the republished sources it records, the replays it forwards) are
taken from here on, away from the small ids applications use."""


@dataclass(frozen=True)
class ReservedStream:
    """A stream a replay must not target: the archive's control, events and recording streams, the service's."""

    channel: str
    stream_id: int
    what: str


def same_stream(a_channel: str, a_stream: int, b_channel: str, b_stream: int) -> bool:
    """Whether two channel/stream pairs reach the same subscribers here: IPC and IPC, or one UDP endpoint."""
    if a_stream != b_stream:
        return False
    try:
        a, b = ChannelUri.parse(a_channel), ChannelUri.parse(b_channel)
    except ValueError:
        return False
    if a.is_ipc or b.is_ipc:
        return a.is_ipc and b.is_ipc
    return (a.get("endpoint") or "").lower().replace("localhost", "127.0.0.1") == (
        b.get("endpoint") or ""
    ).lower().replace("localhost", "127.0.0.1")


class ServiceError(Exception):
    """A request the service refuses: ``status`` is the HTTP status, ``message`` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RecordReplayService:
    def __init__(
        self,
        aeron: Aeron,
        archive: AeronArchive,
        archive_dir: str | os.PathLike[str],
        *,
        owns_aeron: bool = True,
        reserved: Sequence[ReservedStream] = (),
    ) -> None:
        self.aeron = aeron
        self.reserved = list(reserved)
        self.archive = archive
        self.archive_dir = Path(archive_dir)
        self.store = DataSetStore(archive_dir)
        self._owns_aeron = owns_aeron
        self._archive_lock = asyncio.Lock()
        self._next_stream = INTERNAL_STREAM_BASE + secrets.randbelow(0x8000) * 16
        self.record_job: Any = None
        self.replays: dict[str, Any] = {}
        """Replay jobs by id, oldest first: the running ones and the last few ended (for their status)."""
        self.transfer_lock = asyncio.Lock()
        self.retention = Retention()
        self._retaining: asyncio.Task | None = None

    @classmethod
    async def connect(
        cls,
        aeron_dir: str | os.PathLike[str],
        archive_dir: str | os.PathLike[str],
        reserved: Sequence[ReservedStream] = (),
        **archive_settings: Any,
    ) -> RecordReplayService:
        """A client of the driver in ``aeron_dir`` (its conductor in a thread of its own) and a control session
        with the archive whose dir is ``archive_dir``; ``archive_settings`` are ArchiveClientContext fields;
        ``reserved`` the archive's streams no replay may target (its control and response streams are added)."""
        aeron = await asyncio.to_thread(Aeron.connect, str(aeron_dir))
        try:
            archive = await AeronArchive.connect_async(aeron, **archive_settings)
        except BaseException:
            aeron.close()
            raise
        own = [
            ReservedStream(
                archive_settings.get("control_request_channel", "aeron:ipc"),
                archive_settings.get("control_request_stream_id", 11),
                "the archive's control requests",
            ),
            ReservedStream(
                archive_settings.get("control_response_channel", "aeron:ipc"),
                archive_settings.get("control_response_stream_id", 20),
                "the service's archive control responses",
            ),
        ]
        return cls(aeron, archive, archive_dir, reserved=[*reserved, *own])

    @property
    def replay_job(self) -> Any:
        """The latest replay (what ``/replay`` and the metrics show)."""
        return next(reversed(self.replays.values()), None)

    async def close(self) -> None:
        for job in (self.record_job, *self.replays.values()):
            if job is not None and job.task is not None and not job.task.done():
                job.cancel()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(job.task, 5.0)
        with contextlib.suppress(Exception):
            await self.archive.close_async()
        if self._owns_aeron:
            self.aeron.close()

    # -- shared helpers ------------------------------------------------------------------------------------------

    def next_stream_id(self) -> int:
        self._next_stream += 1
        return self._next_stream

    async def call_archive(self, request: Callable[..., Awaitable[T]], *args: Any) -> T:
        """One archive request at a time: the control session matches one answer to one waiting request."""
        async with self._archive_lock:
            return await request(*args)

    @staticmethod
    def now_iso() -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds")

    # -- record ----------------------------------------------------------------------------------------------

    def start_record(self, request: RecordRequest) -> RecordStatus:
        job = self.record_job
        if job is not None and job.running:
            raise ServiceError(
                409, f"a recording is already running (data set {job.dataset_id}): cancel it first"
            )
        dataset_id = self.store.new_id()
        name = request.name or f"recording-{time.strftime('%Y%m%d-%H%M%S')}-{dataset_id[:4]}"
        self.record_job = RecordJob(self, request, dataset_id, name)
        self.record_job.start()
        return self.record_job.status()

    def record_status(self) -> RecordStatus:
        job = self.record_job
        return RecordStatus(state="idle", running=False) if job is None else job.status()

    async def cancel_record(self) -> RecordStatus:
        job = self.record_job
        if job is None or not job.running:
            raise ServiceError(404, "no recording is running")
        job.cancel()
        await job.wait_stopped()
        return job.status()

    # -- replay ------------------------------------------------------------------------------------------------

    def start_replay(self, request: ReplayRequest) -> ReplayStatus:
        running = [j for j in self.replays.values() if j.running]
        if len(running) >= MAX_REPLAYS:
            raise ServiceError(409, f"{len(running)} replays are running, the most at once: cancel one first")
        dataset = self.store.get(request.dataset_id)
        if dataset is None:
            raise ServiceError(404, f"unknown data set {request.dataset_id!r}")
        self._check_range(request, dataset)
        self._check_targets(request, dataset)
        replay_id = secrets.token_hex(4)
        while replay_id in self.replays:
            replay_id = secrets.token_hex(4)
        job = ReplayJob(self, request, dataset, replay_id)
        self.replays[replay_id] = job
        ended = [i for i, j in self.replays.items() if not j.running]
        for old in ended[: max(0, len(ended) - KEPT_ENDED_REPLAYS)]:
            del self.replays[old]
        job.start()
        return job.status()

    @staticmethod
    def _check_range(request: ReplayRequest, dataset: DataSet) -> None:
        if request.time_range is None:
            return
        start, end = request.time_range.bounds_ns(dataset.start_time_ns)
        if start >= dataset.end_time_ns or (end is not None and end <= dataset.start_time_ns):

            def iso(ns: int) -> str:
                return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds")

            raise ServiceError(
                400,
                f"the time range is outside data set {dataset.id} "
                f"({iso(dataset.start_time_ns)} to {iso(dataset.end_time_ns)}, {dataset.span_s:.3f} s)",
            )

    def _check_targets(self, request: ReplayRequest, dataset: DataSet) -> None:
        """A replay into the archive's control or events streams, or the service's own, would feed them frames
        they cannot parse (or record the replay into a data set): refused, naming the clash."""
        recordings = dataset.recordings
        if request.streams is not None:
            wanted = {(s.channel, s.stream_id) for s in request.streams}
            recordings = [r for r in recordings if (r.source_channel, r.source_stream_id) in wanted]
        for rec in recordings:
            channel = request.channel or rec.source_channel
            stream_id = rec.source_stream_id if request.stream_id is None else request.stream_id
            for reserved in self.reserved:
                if same_stream(channel, stream_id, reserved.channel, reserved.stream_id):
                    raise ServiceError(
                        409,
                        f"the replay target {channel} stream {stream_id} is {reserved.what} "
                        f"({reserved.channel} stream {reserved.stream_id}): choose another channel or stream_id",
                    )
            if ChannelUri.parse(
                channel
            ).is_ipc and INTERNAL_STREAM_BASE <= stream_id < INTERNAL_STREAM_BASE + (0x8000 * 16 + 0x10000):
                raise ServiceError(
                    409,
                    f"the replay target {channel} stream {stream_id} is in the service's own range of IPC "
                    f"streams ({INTERNAL_STREAM_BASE:#x} on, the streams it records and replays through)",
                )

    def replay_status(self) -> ReplayStatus:
        job = self.replay_job
        return ReplayStatus(state="idle", running=False) if job is None else job.status()

    async def cancel_replay(self) -> ReplayStatus:
        """Every running replay; the latest one's status."""
        running = [j for j in self.replays.values() if j.running]
        if not running:
            raise ServiceError(404, "no replay is running")
        for job in running:
            job.cancel()
        await asyncio.gather(*(job.wait_stopped() for job in running))
        return running[-1].status()

    def get_replay(self, replay_id: str) -> Any:
        job = self.replays.get(replay_id)
        if job is None:
            raise ServiceError(404, f"unknown replay {replay_id!r}")
        return job

    async def cancel_replay_id(self, replay_id: str) -> ReplayStatus:
        job = self.get_replay(replay_id)
        if not job.running:
            raise ServiceError(404, f"replay {replay_id} is not running ({job.state})")
        job.cancel()
        await job.wait_stopped()
        return job.status()

    # -- data sets -----------------------------------------------------------------------------------------------

    def get_dataset(self, dataset_id: str) -> DataSet:
        dataset = self.store.get(dataset_id)
        if dataset is None:
            raise ServiceError(404, f"unknown data set {dataset_id!r}")
        return dataset

    def in_use(self, dataset_id: str) -> bool:
        record = self.record_job
        return bool(
            (record is not None and record.running and record.dataset_id == dataset_id)
            or any(j.running and j.dataset.id == dataset_id for j in self.replays.values())
        )

    async def apply_retention(self) -> list[DataSet]:
        """Deletes the data sets beyond ``retention`` (docs/service.md section 3), oldest first; those deleted."""
        if not self.retention.bounded:
            return []
        in_use = {d.id for d in self.store.list() if self.in_use(d.id)}
        dropped = []
        for dataset in beyond_retention(self.store.list(), self.retention, time.time_ns(), in_use):
            with contextlib.suppress(ServiceError):  # deleted meanwhile, or taken into use
                dropped.append(await self.delete_dataset(dataset.id))
        return dropped

    def retain_soon(self) -> None:
        """Retention once more, as a task of its own (one at a time)."""
        if self.retention.bounded and (self._retaining is None or self._retaining.done()):
            self._retaining = asyncio.ensure_future(self.apply_retention())

    async def retain_forever(self) -> None:
        """Retention every ``interval_s`` while the service runs (data sets age without new ones)."""
        while self.retention.bounded:
            self.retain_soon()
            await asyncio.sleep(self.retention.interval_s)

    async def delete_dataset(self, dataset_id: str) -> DataSet:
        """The manifest goes first (the data set is gone at once), then each recording is purged: its catalog entry
        is marked invalid and the archive deletes its files in the background."""
        dataset = self.get_dataset(dataset_id)
        if self.in_use(dataset_id):
            raise ServiceError(409, f"data set {dataset_id} is being recorded or replayed")
        self.store.remove(dataset_id)
        for rec in dataset.recordings:
            await self._purge(rec.recording_id)
        return dataset

    async def _purge(self, recording_id: int) -> None:
        """A recording the job has just stopped is still active until the archive has seen its image close."""
        deadline = time.monotonic() + PURGE_TIMEOUT_S
        while True:
            try:
                await self.call_archive(self.archive.purge_recording_async, recording_id)
                return
            except ArchiveError as e:
                if e.code != ArchiveErrorCode.ACTIVE_RECORDING or time.monotonic() > deadline:
                    log.warning("data set recording %d not purged: %s", recording_id, e.error_message)
                    return
            await asyncio.sleep(0.01)
