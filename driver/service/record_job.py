"""A recording (docs/service.md section 4): the service subscribes to the requested streams, keeps the images its
filters accept, and republishes their messages, each source into an exclusive IPC publication the archive
records. The service decides which messages go in, so a count limit is exact and the data set holds exactly the
matching messages; the archive's recorder stamps their times as they arrive, a few microseconds after the source."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driver.archive.client import NULL_RECORDING_ID, ArchiveError
from driver.archive.codecs import SourceLocation
from driver.client import ExclusivePublication, Image, Subscription
from driver.service.forwarding import IDLE_S, Budget, Collector, close_quietly, offer_all
from driver.service.models import DataSet, RecordingInfo, RecordRequest, RecordStatus, StreamSpec

if TYPE_CHECKING:
    from driver.service.service import RecordReplayService

log = logging.getLogger(__name__)

RECORD_CHANNEL = "aeron:ipc"
CATCH_UP_TIMEOUT_S = 10.0


@dataclass
class _Source:
    spec: StreamSpec
    image: Image
    publication: ExclusivePublication
    collector: Collector
    start_time_ns: int


class RecordJob:
    def __init__(
        self, service: RecordReplayService, request: RecordRequest, dataset_id: str, name: str
    ) -> None:
        self.service = service
        self.request = request
        self.dataset_id = dataset_id
        self.name = name
        self.state = "running"
        self.error: str | None = None
        self.task: asyncio.Task | None = None
        self._cancel = asyncio.Event()
        self._stopped = asyncio.Event()
        self._budget = Budget(request.max_messages)
        self._sources: dict[tuple[int, int], _Source] = {}
        self._started = time.monotonic()
        self._ended: float | None = None

    @property
    def running(self) -> bool:
        return self.state in ("running", "stopping")

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"record-{self.dataset_id}")

    def cancel(self) -> None:
        self._cancel.set()

    async def wait_stopped(self, timeout_s: float = 30.0) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), timeout_s)

    def status(self) -> RecordStatus:
        end = self._ended if self._ended is not None else time.monotonic()
        return RecordStatus(
            state=self.state,
            running=self.running,
            dataset_id=self.dataset_id,
            name=self.name,
            messages=sum(s.collector.messages for s in self._sources.values()),
            bytes=sum(s.collector.bytes for s in self._sources.values()),
            duration_s=round(end - self._started, 6),
            error=self.error,
        )

    async def _run(self) -> None:
        service, request = self.service, self.request
        stream_id = service.next_stream_id()
        subscriptions: list[tuple[StreamSpec, Subscription]] = []
        recording = False
        start_ns = time.time_ns()
        try:
            await service.call_archive(
                service.archive.start_recording_async, RECORD_CHANNEL, stream_id, SourceLocation.LOCAL
            )
            recording = True
            for spec in request.streams:
                if request.wants_stream(spec.channel, spec.stream_id):
                    subscriptions.append(
                        (spec, await service.aeron.add_subscription_async(spec.channel, spec.stream_id))
                    )
            start_ns = time.time_ns()
            self._started = time.monotonic()
            await self._forward(subscriptions, stream_id)
            self._ended = time.monotonic()
            self.state = "stopping"
            for _spec, subscription in subscriptions:
                await close_quietly(subscription)
            subscriptions.clear()
            end_ns = time.time_ns()
            infos = await self._finish(stream_id)
            recording = False
            self._save(infos, start_ns, end_ns)
            self.state = "cancelled" if self._cancel.is_set() else "done"
        except Exception as e:  # reported in the status; the loop goes on serving
            log.exception("recording %s failed", self.dataset_id)
            self.state, self.error = "failed", f"{type(e).__name__}: {e}"
        finally:
            if self._ended is None:
                self._ended = time.monotonic()
            for _spec, subscription in subscriptions:
                await close_quietly(subscription)
            if recording:
                with contextlib.suppress(ArchiveError):
                    await service.call_archive(
                        service.archive.stop_recording_async, RECORD_CHANNEL, stream_id
                    )
            for source in self._sources.values():
                await close_quietly(source.publication)
            self._stopped.set()

    async def _forward(self, subscriptions: list[tuple[StreamSpec, Subscription]], stream_id: int) -> None:
        request = self.request
        deadline = None if request.duration_s is None else self._started + request.duration_s
        ignored: set[tuple[int, int]] = set()
        discard = Collector(Budget(0))
        aeron = self.service.aeron
        while not self._cancel.is_set() and not self._budget.exhausted:
            if deadline is not None and time.monotonic() >= deadline:
                break
            work = 0
            for index, (spec, subscription) in enumerate(subscriptions):
                for image in subscription.images:
                    key = (index, image.correlation_id)
                    source = self._sources.get(key)
                    if source is None:
                        if key not in ignored and request.wants(
                            spec.channel, spec.stream_id, image.source_identity
                        ):
                            publication = await aeron.add_exclusive_publication_async(
                                RECORD_CHANNEL, stream_id
                            )
                            source = _Source(
                                spec, image, publication, Collector(self._budget), time.time_ns()
                            )
                            self._sources[key] = source
                        else:
                            # Drained, or the publisher would wait on us (IPC flow control follows every subscriber).
                            ignored.add(key)
                            work += image.poll(discard.assembler, 256)
                            continue
                    work += image.poll(source.collector.assembler, 256)
                    if source.collector.pending:
                        await offer_all(source.publication, source.collector.pending, drop_unconnected=False)
            await asyncio.sleep(0 if work else IDLE_S)

    async def _finish(self, stream_id: int) -> list[RecordingInfo]:
        """Wait until the archive has every republished byte, then stop recording."""
        service = self.service
        archive = service.archive
        infos = []
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        for source in self._sources.values():
            publication = source.publication
            end = publication.position
            recording_id = NULL_RECORDING_ID
            while recording_id == NULL_RECORDING_ID:
                recording_id = await service.call_archive(
                    archive.find_last_matching_recording_async,
                    0,
                    RECORD_CHANNEL,
                    stream_id,
                    publication.session_id,
                )
                if recording_id == NULL_RECORDING_ID:
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"the archive did not start recording session {publication.session_id}"
                        )
                    await asyncio.sleep(0.005)
            while await service.call_archive(archive.get_recording_position_async, recording_id) < end:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"recording {recording_id} did not reach {end}")
                await asyncio.sleep(0.002)
            descriptor = await service.call_archive(archive.list_recording_async, recording_id)
            assert descriptor is not None
            infos.append(
                RecordingInfo(
                    recording_id=recording_id,
                    source_channel=source.spec.channel,
                    source_stream_id=source.spec.stream_id,
                    source_session_id=source.image.session_id,
                    source_identity=source.image.source_identity,
                    start_position=descriptor.start_position,
                    stop_position=end,
                    start_time_ns=source.start_time_ns,
                    messages=source.collector.messages,
                    bytes=source.collector.bytes,
                )
            )
        return infos

    def _save(self, infos: list[RecordingInfo], start_ns: int, end_ns: int) -> None:
        self.service.store.save(
            DataSet(
                id=self.dataset_id,
                name=self.name,
                created=self.service.now_iso(),
                streams=self.request.streams,
                recordings=infos,
                messages=sum(i.messages for i in infos),
                bytes=sum(i.bytes for i in infos),
                start_time_ns=start_ns,
                end_time_ns=end_ns,
                span_s=round((end_ns - start_ns) / 1e9, 6),
            )
        )
