"""A recording (docs/service.md section 4): the service subscribes to the requested streams, keeps the images its
filters accept, and republishes each of them into an exclusive IPC publication the archive records. The
publication is placed where the image is (its term length, initial term id and position), so the image's blocks
of frames go across whole and unchanged but for the session and stream ids (``block_poll`` then ``offer_block``,
as the archive's own replay does): the recording holds the source's frames at the source's positions, padding
included. The service counts the messages (BEGIN frames) of each block and decides where a count limit cuts, so
a data set holds exactly the matching messages; the recorder stamps their times as they arrive, a few
microseconds after the source."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driver.archive.client import NULL_RECORDING_ID, ArchiveError
from driver.archive.codecs import SourceLocation
from driver.client import CLOSED, MAX_POSITION_EXCEEDED, ExclusivePublication, Image, Subscription
from driver.concurrent.logbuffer.frame_descriptor import BEGIN_FLAG, FRAME_ALIGNMENT, HDR_TYPE_DATA
from driver.service.forwarding import IDLE_S, OFFER_TIMEOUT_S, Budget, close_quietly, frame_bytes
from driver.service.models import DataSet, RecordingInfo, RecordRequest, RecordStatus, StreamSpec

if TYPE_CHECKING:
    from driver.service.service import RecordReplayService

log = logging.getLogger(__name__)

RECORD_CHANNEL = "aeron:ipc"
CATCH_UP_TIMEOUT_S = 10.0
BLOCK_LIMIT = 256 * 1024


def placed_channel(image: Image) -> str:
    """An IPC channel whose exclusive publication starts where ``image`` is, with its term length."""
    position, term_length = image.position, image.term_length
    term_id = image.initial_term_id + (position >> image.position_bits_to_shift)
    term_id = ((term_id + (1 << 31)) & 0xFFFF_FFFF) - (1 << 31)  # an int32 that wraps
    return (
        f"{RECORD_CHANNEL}?term-length={term_length}|init-term-id={image.initial_term_id}|term-id={term_id}"
        f"|term-offset={position & (term_length - 1)}"
    )


def message_starts(view: memoryview, offset: int, length: int) -> list[int]:
    """Offsets (from ``offset``) of the frames that begin a message (unfragmented or BEGIN_FRAG DATA frames)."""
    starts = []
    end = offset + length
    at = offset
    while at < end:
        frame_length = int.from_bytes(view[at : at + 4], "little", signed=True)
        if frame_length <= 0:
            break
        if int.from_bytes(view[at + 6 : at + 8], "little") == HDR_TYPE_DATA and view[at + 5] & BEGIN_FLAG:
            starts.append(at - offset)
        at += (frame_length + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT
    return starts


@dataclass
class _Source:
    spec: StreamSpec
    image: Image
    publication: ExclusivePublication
    start_time_ns: int
    messages: int = 0
    bytes: int = 0
    closed: bool = False
    """No more of this image goes in: the count limit cut it at a message boundary."""

    def __post_init__(self) -> None:
        self.pending: list[bytearray] = []


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
            messages=sum(s.messages for s in self._sources.values()),
            bytes=sum(s.bytes for s in self._sources.values()),
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
        aeron = self.service.aeron
        budget = self._budget
        drain_until = None
        while not self._cancel.is_set():
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            if budget.exhausted:
                # Every source stops at its next message start; one cut inside a message gets a moment to end.
                if all(s.closed for s in self._sources.values()):
                    break
                drain_until = drain_until or now + 0.1
                if now > drain_until:
                    break
            work = 0
            for index, (spec, subscription) in enumerate(subscriptions):
                for image in subscription.images:
                    key = (index, image.correlation_id)
                    source = self._sources.get(key)
                    if source is None:
                        if key in ignored or not request.wants(
                            spec.channel, spec.stream_id, image.source_identity
                        ):
                            # Drained, or the publisher would wait on us (IPC flow control follows every subscriber).
                            ignored.add(key)
                            work += image.block_poll(lambda *_: None, BLOCK_LIMIT)
                            continue
                        publication = await aeron.add_exclusive_publication_async(
                            placed_channel(image), stream_id
                        )
                        source = _Source(spec, image, publication, time.time_ns())
                        self._sources[key] = source
                    if source.closed:
                        work += image.block_poll(lambda *_: None, BLOCK_LIMIT)
                        continue

                    def on_block(buffer, offset, length, _session_id, _term_id, source=source) -> None:
                        count = buffer.count_messages(offset, offset + length)
                        if (budget.remaining is not None and count > budget.remaining) or budget.exhausted:
                            starts = message_starts(buffer.view, offset, length)
                            allowed = budget.remaining or 0
                            if len(starts) > allowed:
                                length, count = starts[allowed], allowed
                                source.closed = True
                        if budget.remaining is not None:
                            budget.remaining -= count
                        source.messages += count
                        if length:
                            source.bytes += frame_bytes(buffer, offset, length)
                            source.pending.append(bytearray(buffer.view[offset : offset + length]))

                    work += image.block_poll(on_block, BLOCK_LIMIT)
                    if source.pending:
                        await _offer_blocks(source.publication, source.pending)
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
                    # The archive refuses an image after its OK to start recording (a full catalog or disk, too
                    # many recordings): its own words are why the job failed.
                    error = archive.poll_for_error_response()
                    if error is not None:
                        raise error
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
                    messages=source.messages,
                    bytes=source.bytes,
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
        self.service.retain_soon()  # a new data set may put older ones beyond retention


async def _offer_blocks(publication: ExclusivePublication, blocks: list[bytearray]) -> None:
    """Append each block whole, waiting out back pressure (the archive's recorder is the subscriber)."""
    for block in blocks:
        deadline = None
        while block:
            before = publication.position
            result = publication.offer_block(block, len(block), len(block))
            if result in (CLOSED, MAX_POSITION_EXCEEDED):
                raise RuntimeError(f"the recorded publication {publication.stream_id} closed")
            if result > before:
                del block[: result - before]
                deadline = None
                continue
            now = time.monotonic()
            deadline = deadline or now + OFFER_TIMEOUT_S
            if now > deadline:
                raise TimeoutError(
                    f"the archive took nothing of stream {publication.stream_id} for {OFFER_TIMEOUT_S} s"
                )
            await asyncio.sleep(IDLE_S / 4)
    blocks.clear()
