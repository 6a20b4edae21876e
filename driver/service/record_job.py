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
from driver.service.models import (
    DataSet,
    RecordingInfo,
    RecordRequest,
    RecordStatus,
    RollingStatus,
    StreamSpec,
)

if TYPE_CHECKING:
    from driver.service.service import RecordReplayService

log = logging.getLogger(__name__)

RECORD_CHANNEL = "aeron:ipc"
CATCH_UP_TIMEOUT_S = 10.0
BLOCK_LIMIT = 256 * 1024
CUT_GRACE_S = 0.1
"""A rolling capture's cut waits this long for each source's next message start."""


def placed_channel(image: Image, term_id: int | None = None, term_offset: int = 0) -> str:
    """An IPC channel whose exclusive publication starts where ``image`` is (or at ``term_id`` and ``term_offset``
    of its log), with its term length."""
    term_length = image.term_length
    if term_id is None:
        position = image.position
        term_id = image.initial_term_id + (position >> image.position_bits_to_shift)
        term_id = ((term_id + (1 << 31)) & 0xFFFF_FFFF) - (1 << 31)  # an int32 that wraps
        term_offset = position & (term_length - 1)
    return (
        f"{RECORD_CHANNEL}?term-length={term_length}|init-term-id={image.initial_term_id}|term-id={term_id}"
        f"|term-offset={term_offset}"
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
    moved: bool = False
    """(A rolling capture's cut) the image goes on in the next data set."""

    def __post_init__(self) -> None:
        self.pending: list[bytearray] = []


@dataclass
class _Segment:
    """One data set of the job: its own IPC stream the archive records, one source per image."""

    dataset_id: str
    name: str
    seq: int
    stream_id: int
    start_ns: int
    started: float
    recording: bool = False
    """The archive records its stream (until stopped)."""

    def __post_init__(self) -> None:
        self.sources: dict[tuple[int, int], _Source] = {}

    @property
    def messages(self) -> int:
        return sum(s.messages for s in self.sources.values())

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.sources.values())


class RecordJob:
    def __init__(
        self, service: RecordReplayService, request: RecordRequest, dataset_id: str, name: str
    ) -> None:
        self.service = service
        self.request = request
        self.name = name
        self.state = "running"
        self.error: str | None = None
        self.task: asyncio.Task | None = None
        self._cancel = asyncio.Event()
        self._stopped = asyncio.Event()
        self._budget = Budget(request.max_messages)
        self._started = time.monotonic()
        self._ended: float | None = None
        self.capture_id = dataset_id if request.rotate is not None else None
        """A rolling capture's id: its first data set's."""
        self._segment = _Segment(dataset_id, self._segment_name(1), 1, 0, time.time_ns(), self._started)
        self._closing: _Segment | None = None
        """The data set being cut: its sources move to the next one at their next message start."""
        self._cut_grace = 0.0
        self._finishing: list[asyncio.Task] = []
        self._standby: asyncio.Task | None = None
        """(A rolling capture) the next data set's stream, recorded ahead of its cut: the archive's subscription
        is in place by then, so the sources' first blocks there are taken at once."""
        self._live: list[_Segment] = []
        """Segments whose stream the archive records, not yet stopped."""
        self._closed_messages = 0
        self._closed_bytes = 0
        self._cut_ids: set[str] = set()
        self._last_saved: str | None = None
        self._dropped = 0

    @property
    def dataset_id(self) -> str:
        """The data set being recorded."""
        return self._segment.dataset_id

    @property
    def running(self) -> bool:
        return self.state in ("running", "stopping")

    def _segment_name(self, seq: int) -> str:
        return self.name if self.request.rotate is None else f"{self.name}-{seq:04d}"

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"record-{self.dataset_id}")

    def cancel(self) -> None:
        self._cancel.set()

    async def wait_stopped(self, timeout_s: float = 30.0) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), timeout_s)

    def _open_segments(self) -> list[_Segment]:
        return [s for s in (self._closing, self._segment) if s is not None]

    def status(self) -> RecordStatus:
        now = time.monotonic()
        end = self._ended if self._ended is not None else now
        segment = self._segment
        open_segments = self._open_segments()
        rolling = None
        rotate = self.request.rotate
        if rotate is not None:
            rolling = RollingStatus(
                every_s=rotate.every_s,
                every_bytes=rotate.every_bytes,
                datasets_cut=len(self._cut_ids),
                datasets_dropped=self._dropped,
                last_dataset_id=self._last_saved,
                dataset_seq=segment.seq,
                dataset_messages=segment.messages,
                dataset_bytes=segment.bytes,
                dataset_duration_s=round(end - segment.started, 6) if self.running else 0.0,
            )
        return RecordStatus(
            state=self.state,
            running=self.running,
            dataset_id=segment.dataset_id,
            name=segment.name,
            messages=self._closed_messages + sum(s.messages for s in open_segments),
            bytes=self._closed_bytes + sum(s.bytes for s in open_segments),
            duration_s=round(end - self._started, 6),
            error=self.error,
            rolling=rolling,
        )

    def unsaved(self) -> list[DataSet]:
        """What the job holds in the archive with no manifest yet (for retention, which counts it, as the data set
        it will be): the data set being recorded and any being closed."""
        now_ns = time.time_ns()
        return [
            DataSet(
                id=segment.dataset_id,
                name=segment.name,
                created=self.service.now_iso(),
                streams=self.request.streams,
                recordings=[],
                messages=segment.messages,
                bytes=segment.bytes,
                start_time_ns=segment.start_ns,
                end_time_ns=now_ns,
                span_s=0.0,
            )
            for segment in self._open_segments()
            if segment.recording
        ]

    def note_dropped(self, dataset_ids: list[str]) -> None:
        """Retention deleted these data sets."""
        self._dropped += len(self._cut_ids.intersection(dataset_ids))

    async def _run(self) -> None:
        service, request = self.service, self.request
        subscriptions: list[tuple[StreamSpec, Subscription]] = []
        try:
            await self._start_segment(self._segment)
            for spec in request.streams:
                if request.wants_stream(spec.channel, spec.stream_id):
                    subscriptions.append(
                        (spec, await service.aeron.add_subscription_async(spec.channel, spec.stream_id))
                    )
            self._segment.start_ns = time.time_ns()
            self._started = self._segment.started = time.monotonic()
            if request.rotate is not None:
                self._prepare_next()
            await self._forward(subscriptions)
            self._ended = time.monotonic()
            self.state = "stopping"
            for _spec, subscription in subscriptions:
                await close_quietly(subscription)
            subscriptions.clear()
            end_ns = time.time_ns()
            for segment in self._open_segments():
                if segment is not self._segment or request.rotate is None or segment.messages:
                    await self._close_segment(segment, end_ns)
            self._closing = None
            for task in self._finishing:
                await task
            self.state = "cancelled" if self._cancel.is_set() else "done"
        except Exception as e:  # reported in the status; the loop goes on serving
            log.exception("recording %s failed", self.dataset_id)
            self.state, self.error = "failed", f"{type(e).__name__}: {e}"
        finally:
            if self._ended is None:
                self._ended = time.monotonic()
            for _spec, subscription in subscriptions:
                await close_quietly(subscription)
            for task in self._finishing:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            if self._standby is not None:  # let its archive request end, then stop it with the rest
                with contextlib.suppress(Exception):
                    await self._standby
            for segment in list(self._live):
                await self._stop_segment(segment)
            self._stopped.set()

    async def _start_segment(self, segment: _Segment) -> None:
        service = self.service
        segment.stream_id = service.next_stream_id()
        await service.call_archive(
            service.archive.start_recording_async, RECORD_CHANNEL, segment.stream_id, SourceLocation.LOCAL
        )
        segment.recording = True
        self._live.append(segment)

    async def _stop_segment(self, segment: _Segment) -> None:
        service = self.service
        if segment.recording:
            segment.recording = False
            with contextlib.suppress(ArchiveError):
                await service.call_archive(
                    service.archive.stop_recording_async, RECORD_CHANNEL, segment.stream_id
                )
        for source in segment.sources.values():
            await close_quietly(source.publication)
        with contextlib.suppress(ValueError):
            self._live.remove(segment)

    async def _close_segment(self, segment: _Segment, end_ns: int) -> None:
        """Waits for the archive to hold every byte of the segment, stops recording it and saves its data set."""
        infos = await self._finish(segment)
        await self._stop_segment(segment)
        self._save(segment, infos, end_ns)

    async def _next_segment(self, now: float) -> None:
        """A rolling capture's cut: a new data set records from each source's next message start on."""
        segment = self._segment
        assert self._standby is not None
        following: _Segment = await self._standby
        following.seq = segment.seq + 1
        following.dataset_id = self.service.store.new_id()
        following.name = self._segment_name(following.seq)
        following.start_ns, following.started = time.time_ns(), now
        self._closing, self._segment = segment, following
        self._cut_grace = time.monotonic() + CUT_GRACE_S
        self._prepare_next()

    def _prepare_next(self) -> None:
        async def start() -> _Segment:
            following = _Segment("", "", 0, 0, 0, 0.0)
            await self._start_segment(following)
            return following

        self._standby = asyncio.ensure_future(start())

    def _hand_over(self, segment: _Segment) -> None:
        """Every source of the segment being cut has moved on: close it while the capture goes on."""
        self._closing = None
        self._closed_messages += segment.messages
        self._closed_bytes += segment.bytes
        end_ns = time.time_ns()
        self._finishing.append(asyncio.ensure_future(self._close_segment(segment, end_ns)))

    def _check_finishing(self) -> None:
        for task in [t for t in self._finishing if t.done()]:
            self._finishing.remove(task)
            task.result()  # a segment the archive did not take fails the job

    def _cut_due(self, segment: _Segment, now: float) -> bool:
        rotate = self.request.rotate
        return rotate is not None and (
            (rotate.every_s is not None and now - segment.started >= rotate.every_s)
            or (rotate.every_bytes is not None and segment.bytes >= rotate.every_bytes)
        )

    async def _forward(self, subscriptions: list[tuple[StreamSpec, Subscription]]) -> None:
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
                if all(s.closed for s in self._segment.sources.values()):
                    break
                drain_until = drain_until or now + 0.1
                if now > drain_until:
                    break
            self._check_finishing()
            if self._closing is None and self._cut_due(self._segment, now):
                if self._segment.messages:
                    await self._next_segment(now)
                else:  # nothing to cut: the data set's time starts again
                    self._segment.started, self._segment.start_ns = now, time.time_ns()
            closing = self._closing
            if closing is not None and (
                now > self._cut_grace or all(s.moved for s in closing.sources.values())
            ):
                # An idle source, or one inside a message past the grace, moves where it is.
                for source in closing.sources.values():
                    source.moved = True
                self._hand_over(closing)
                closing = None
            segment = self._segment
            work = 0
            for index, (spec, subscription) in enumerate(subscriptions):
                for image in subscription.images:
                    key = (index, image.correlation_id)
                    old = closing.sources.get(key) if closing is not None else None
                    if old is not None and not old.moved and key not in segment.sources:
                        work += await self._cut_source(old, image, segment, key)
                        continue
                    source = segment.sources.get(key)
                    if source is None:
                        if key in ignored or not request.wants(
                            spec.channel, spec.stream_id, image.source_identity
                        ):
                            # Drained, or the publisher would wait on us (IPC flow control follows every subscriber).
                            ignored.add(key)
                            work += image.block_poll(lambda *_: None, BLOCK_LIMIT)
                            continue
                        publication = await aeron.add_exclusive_publication_async(
                            placed_channel(image), segment.stream_id
                        )
                        source = _Source(spec, image, publication, time.time_ns())
                        segment.sources[key] = source
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

    async def _cut_source(self, old: _Source, image: Image, segment: _Segment, key: tuple[int, int]) -> int:
        """One block of a source being cut: up to its first message start to the old data set, the rest (and all
        that follows) to the new one, through a publication placed at that message's position."""
        carried: list[tuple[int, int, int, int, bytearray]] = []  # term id, offset, messages, bytes, frames

        def on_block(buffer, offset, length, _session_id, term_id) -> None:
            starts = message_starts(buffer.view, offset, length)
            head = starts[0] if starts else length
            if head:
                old.messages += buffer.count_messages(offset, offset + head)
                old.bytes += frame_bytes(buffer, offset, head)
                old.pending.append(bytearray(buffer.view[offset : offset + head]))
            if starts:
                old.moved = True
                at, rest = offset + head, length - head
                carried.append(
                    (
                        term_id,
                        at,
                        buffer.count_messages(at, at + rest),
                        frame_bytes(buffer, at, rest),
                        bytearray(buffer.view[at : at + rest]),
                    )
                )

        work = image.block_poll(on_block, BLOCK_LIMIT)
        if old.pending:
            await _offer_blocks(old.publication, old.pending)
        if carried:
            term_id, term_offset, count, size, block = carried[0]
            publication = await self.service.aeron.add_exclusive_publication_async(
                placed_channel(image, term_id, term_offset), segment.stream_id
            )
            source = _Source(old.spec, image, publication, time.time_ns(), count, size)
            segment.sources[key] = source
            source.pending.append(block)
            await _offer_blocks(publication, source.pending)
        return work

    async def _finish(self, segment: _Segment) -> list[RecordingInfo]:
        """Wait until the archive has every republished byte of the segment."""
        service = self.service
        archive = service.archive
        infos = []
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        for source in segment.sources.values():
            publication = source.publication
            end = publication.position
            recording_id = NULL_RECORDING_ID
            while recording_id == NULL_RECORDING_ID:
                recording_id = await service.call_archive(
                    archive.find_last_matching_recording_async,
                    0,
                    RECORD_CHANNEL,
                    segment.stream_id,
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

    def _save(self, segment: _Segment, infos: list[RecordingInfo], end_ns: int) -> None:
        rolling = self.request.rotate is not None
        self.service.store.save(
            DataSet(
                id=segment.dataset_id,
                name=segment.name,
                created=self.service.now_iso(),
                streams=self.request.streams,
                recordings=infos,
                messages=sum(i.messages for i in infos),
                bytes=sum(i.bytes for i in infos),
                start_time_ns=segment.start_ns,
                end_time_ns=end_ns,
                span_s=round((end_ns - segment.start_ns) / 1e9, 6),
                capture=self.capture_id,
                capture_seq=segment.seq if rolling else None,
            )
        )
        if rolling:
            self._cut_ids.add(segment.dataset_id)
            self._last_saved = segment.dataset_id
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
                    f"the archive took nothing of stream {publication.stream_id} for {OFFER_TIMEOUT_S} s "
                    f"(connected {publication.is_connected}, position {publication.position}, "
                    f"limit {publication.position_limit}, result {result})"
                )
            await asyncio.sleep(IDLE_S / 4)
    blocks.clear()
