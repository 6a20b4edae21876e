"""The service's jobs as counters in cnc.dat (layout: driver/status/service_counters.py; docs/service.md section
9), sampled from the jobs' status a few times a second by a task on the service's loop, so the jobs themselves do
no extra work and the Prometheus exporter, ``mediadriver stat`` and AeronStat show them."""

from __future__ import annotations

import asyncio
import contextlib
import time

from driver.client import Aeron, Counter
from driver.service.forwarding import close_quietly
from driver.service.models import RecordStatus, ReplayStatus
from driver.status.service_counters import (
    FIELDS,
    SERVICE_JOB_TYPE_ID,
    Field,
    Job,
    key,
    label,
    state_code,
)

SAMPLE_INTERVAL_S = 0.25
ADD_TIMEOUT_S = 10.0


async def add_counter_async(aeron: Aeron, type_id: int, key_bytes: bytes, text: str) -> Counter:
    registration_id = aeron.async_add_counter(type_id, key_bytes, text)
    deadline = time.monotonic() + ADD_TIMEOUT_S
    while (counter := aeron.get_counter(registration_id)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the driver did not allocate counter {text!r} in {ADD_TIMEOUT_S} s")
        await asyncio.sleep(0.001)
    return counter


def record_progress(job, status: RecordStatus) -> float:
    """The fraction of the recording's limit reached: its count or its duration, whichever is nearer."""
    if job is None:
        return 0.0
    if status.state == "done":
        return 1.0
    fractions = [0.0]
    if job.request.max_messages:
        fractions.append(status.messages / job.request.max_messages)
    if job.request.duration_s:
        fractions.append(status.duration_s / job.request.duration_s)
    return min(1.0, max(fractions))


def replay_progress(job, status: ReplayStatus) -> float:
    """Messages forwarded over the messages of every round (the data set's count times ``repeat``)."""
    if job is None:
        return 0.0
    if status.state == "done":
        return 1.0
    total = job.dataset.messages * max(1, status.repeat)
    return min(1.0, status.messages / total) if total else 0.0


class ServiceMetrics:
    """The counters and the task that samples into them; ``close()`` stops sampling and frees them."""

    def __init__(self, service, counters: dict[tuple[Job, Field], Counter]) -> None:
        self.service = service
        self.counters = counters
        self.task: asyncio.Task | None = None

    @classmethod
    async def start(cls, service, interval_s: float = SAMPLE_INTERVAL_S) -> ServiceMetrics:
        counters: dict[tuple[Job, Field], Counter] = {}
        try:
            for job, fields in FIELDS.items():
                for field in fields:
                    counters[(job, field)] = await add_counter_async(
                        service.aeron, SERVICE_JOB_TYPE_ID, key(job, field), label(job, field)
                    )
        except BaseException:
            for counter in counters.values():
                await close_quietly(counter)
            raise
        metrics = cls(service, counters)
        metrics.sample()
        metrics.task = asyncio.get_running_loop().create_task(
            metrics._run(interval_s), name="service-metrics"
        )
        return metrics

    def sample(self) -> None:
        service = self.service
        record, replay = service.record_status(), service.replay_status()
        self._write(Job.RECORD, record, record_progress(service.record_job, record))
        self._write(Job.REPLAY, replay, replay_progress(service.replay_job, replay))
        self.counters[(Job.REPLAY, Field.REPEATS_DONE)].set(replay.repeats_done)
        self.counters[(Job.REPLAY, Field.REPEAT)].set(replay.repeat)

    def _write(self, job: Job, status: RecordStatus | ReplayStatus, progress: float) -> None:
        c = self.counters
        c[(job, Field.STATE)].set(state_code(status.state))
        c[(job, Field.MESSAGES)].set(status.messages)
        c[(job, Field.BYTES)].set(status.bytes)
        c[(job, Field.DURATION_MS)].set(round(status.duration_s * 1000))
        c[(job, Field.PROGRESS_PPM)].set(round(progress * 1_000_000))

    async def _run(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            self.sample()

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.sample()  # the last state, for a reader that looks before the client's counters go
        for counter in self.counters.values():
            await close_quietly(counter)
