"""The service's state: one archive control session, at most one recording job and one replay job, and the data
set store (docs/service.md). Jobs run as tasks on the loop the service was made on (the driver's own when embedded)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from driver.archive.client import AeronArchive, ArchiveError, ArchiveErrorCode
from driver.client import Aeron
from driver.service.datasets import DataSetStore
from driver.service.models import (
    DataSet,
    RecordRequest,
    RecordStatus,
    ReplayRequest,
    ReplayStatus,
)

T = TypeVar("T")

log = logging.getLogger(__name__)

PURGE_TIMEOUT_S = 10.0

INTERNAL_STREAM_BASE = 0x7E5E_0000
"""Stream ids of the service's own IPC streams (the republished sources it records, the replays it forwards) are
taken from here on, away from the small ids applications use."""


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
    ) -> None:
        self.aeron = aeron
        self.archive = archive
        self.archive_dir = Path(archive_dir)
        self.store = DataSetStore(archive_dir)
        self._owns_aeron = owns_aeron
        self._archive_lock = asyncio.Lock()
        self._next_stream = INTERNAL_STREAM_BASE + secrets.randbelow(0x8000) * 16
        self.record_job: Any = None
        self.replay_job: Any = None
        self.transfer_lock = asyncio.Lock()

    @classmethod
    async def connect(
        cls, aeron_dir: str | os.PathLike[str], archive_dir: str | os.PathLike[str], **archive_settings: Any
    ) -> RecordReplayService:
        """A client of the driver in ``aeron_dir`` (its conductor in a thread of its own) and a control session
        with the archive whose dir is ``archive_dir``; ``archive_settings`` are ArchiveClientContext fields."""
        aeron = await asyncio.to_thread(Aeron.connect, str(aeron_dir))
        try:
            archive = await AeronArchive.connect_async(aeron, **archive_settings)
        except BaseException:
            aeron.close()
            raise
        return cls(aeron, archive, archive_dir)

    async def close(self) -> None:
        for job in (self.record_job, self.replay_job):
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
        from driver.service.record_job import RecordJob

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
        from driver.service.replay_job import ReplayJob

        job = self.replay_job
        if job is not None and job.running:
            raise ServiceError(
                409, f"a replay is already running (data set {job.dataset.id}): cancel it first"
            )
        dataset = self.store.get(request.dataset_id)
        if dataset is None:
            raise ServiceError(404, f"unknown data set {request.dataset_id!r}")
        self.replay_job = ReplayJob(self, request, dataset)
        self.replay_job.start()
        return self.replay_job.status()

    def replay_status(self) -> ReplayStatus:
        job = self.replay_job
        return ReplayStatus(state="idle", running=False) if job is None else job.status()

    async def cancel_replay(self) -> ReplayStatus:
        job = self.replay_job
        if job is None or not job.running:
            raise ServiceError(404, "no replay is running")
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
        record, replay = self.record_job, self.replay_job
        return bool(
            (record is not None and record.running and record.dataset_id == dataset_id)
            or (replay is not None and replay.running and replay.dataset.id == dataset_id)
        )

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
