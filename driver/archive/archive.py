"""Archive: the archive's three agents (conductor, recorder, replayer) over one archive directory
(docs/archive.md), and what happens at start-up: the mark file, the catalog, and the recovery of recordings a
crash left without a stop position.

The archive is a client of the driver in agent mode: its client's duty cycle runs inside the conductor's, on the
archive's loop. Threading modes say how the agents are grouped for runners (``agent_groups``): DEDICATED, one
runner each; SHARED, one runner over the Archive itself (it is an agent: on_start/do_work/on_close over the
three); INVOKER, no runner, the embedder calls ``on_start()``, ``do_work()`` and ``on_close()``. Runners belong to
the layer above (driver/archive_launcher.py).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.agent.command_queue import CommandQueue
from driver.archive.archive_conductor import ArchiveConductor
from driver.archive.archive_conductor_proxy import ArchiveConductorProxy
from driver.archive.archive_context import ArchiveContext
from driver.archive.archive_mark_file import FILENAME as MARK_FILE_NAME
from driver.archive.archive_mark_file import ArchiveMarkFile
from driver.archive.catalog import CATALOG_FILE_NAME, NULL_POSITION, Catalog, CatalogError
from driver.archive.checksums import last_good_position
from driver.archive.codecs import RecordingDescriptor
from driver.archive.recorder import Recorder
from driver.archive.replayer import Replayer
from driver.archive.segment_file import (
    FRAME_ALIGNMENT,
    FRAME_HEADER_LENGTH,
    SegmentReserver,
    parse_segment_file_name,
    recover_stop_position,
    remove_staged_segments,
    segment_path,
    segment_position,
)
from driver.archive.session_worker_proxy import ReplayerProxy, SessionWorkerProxy
from driver.client.aeron import Aeron
from driver.client.exceptions import AeronError
from driver.util.bit_util import is_power_of_two
from driver.util.files import FilePermissions, remove_dir

log = logging.getLogger("driver.archive")


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


class FailedOffers:
    """Commands between the archive's agents that waited in a proxy's backlog for room in the queue."""

    def __init__(self) -> None:
        self.count = 0

    def increment(self) -> int:
        self.count += 1
        return self.count


class ArchiveStartError(RuntimeError):
    """The archive cannot start (its directory, catalog or mark file, or no driver); the message says why."""


def _descriptor_problem(d: RecordingDescriptor) -> str | None:
    """What makes a descriptor's positions or lengths unusable (docs/archive.md section 13), or None."""
    if not is_power_of_two(d.term_buffer_length) or not is_power_of_two(d.segment_file_length):
        return (
            f"term length {d.term_buffer_length} or segment length {d.segment_file_length} not a power of 2"
        )
    if d.segment_file_length < d.term_buffer_length:
        return f"segment length {d.segment_file_length} < term length {d.term_buffer_length}"
    if d.start_position < 0 or d.start_position % FRAME_ALIGNMENT:
        return f"start position {d.start_position} not a non-negative multiple of {FRAME_ALIGNMENT}"
    if d.stop_position != NULL_POSITION and (
        d.stop_position < d.start_position or d.stop_position % FRAME_ALIGNMENT
    ):
        return f"stop position {d.stop_position} before the start or not a multiple of {FRAME_ALIGNMENT}"
    return None


_OWNED_NAME = re.compile(r"-?\d+(-\d+\.rec|\.crc|\.idx|\.idx\.tmp)")


_SERVICE_ENTRIES = ("datasets", "http-token")
"""The record & replay service keeps its data sets and token in the archive dir (docs/service.md): they describe
the recordings, so they go with them."""


def owns_entry(name: str) -> bool:
    """What the archive makes in its dir (catalog, mark file, segments and sidecars) and the service's entries: all
    that ``aeron.archive.dir.delete.on.start`` removes from a dir the archive may not remove (a mount point)."""
    return (
        name in (CATALOG_FILE_NAME, MARK_FILE_NAME, *_SERVICE_ENTRIES) or _OWNED_NAME.fullmatch(name) is not None
    )


def create_archive_dir(archive_dir: Path, permissions: FilePermissions) -> None:
    """Creates ``archive_dir`` (and missing parents) with the policy's mode and group, whatever the umask. A dir
    that already exists keeps its mode and group: the user made it, perhaps for other uses too, and the files the
    archive creates in it are private under the policy anyway (docs/archive.md section 15)."""
    if archive_dir.is_dir():
        return
    archive_dir.parent.mkdir(parents=True, exist_ok=True)
    archive_dir.mkdir(mode=permissions.dir_mode)
    permissions.apply_to_dir(archive_dir)


class Archive:
    role_name = "archive"

    def __init__(
        self,
        ctx: ArchiveContext,
        aeron: Aeron | None = None,
        *,
        epoch_clock_ms: Callable[[], int] = epoch_ms,
        error_handler: Callable[[str], None] | None = None,
        driver_timeout_s: float = 10.0,
    ) -> None:
        """``aeron``: a client in agent mode whose duty cycle the embedder runs, or None to connect one to
        ``ctx.aeron_dir`` in agent mode (the archive then runs its duty cycle and closes it)."""
        self.ctx = ctx
        self.archive_dir = Path(ctx.archive_dir)
        self.errors: list[str] = []
        self._error_handler = error_handler
        self._closed = False
        self._owns_aeron = aeron is None
        self.catalog: Catalog | None = None
        self.mark_file: ArchiveMarkFile | None = None
        permissions = ctx.file_permissions
        try:
            if ctx.delete_archive_on_start:
                remove_dir(self.archive_dir, owns_entry)
            create_archive_dir(self.archive_dir, permissions)
        except OSError as e:
            raise ArchiveStartError(
                f"cannot create the archive dir {self.archive_dir}: {e.strerror or e}; choose a writable one "
                "with --archive-dir or -Daeron.archive.dir"
            ) from e
        if aeron is None:
            try:
                aeron = Aeron.connect(
                    ctx.aeron_dir or None,
                    timeout_s=driver_timeout_s,
                    use_conductor_agent_invoker=True,
                )
            except AeronError as e:
                raise ArchiveStartError(f"the archive needs a running driver: {e}") from e
        elif aeron.conductor_agent_invoker is None:
            raise ArchiveStartError(
                "the archive's client must run in agent mode (Aeron.connect(..., use_conductor_agent_invoker=True)) "
                "on the archive's loop"
            )
        self.aeron = aeron
        try:
            self.catalog = Catalog(
                self.archive_dir,
                max_entries=ctx.max_catalog_entries,
                file_sync_level=ctx.catalog_file_sync_level,
                permissions=permissions,
            )
            self.mark_file = ArchiveMarkFile.create(
                self.archive_dir,
                control_channel=ctx.control_channel,
                control_stream_id=ctx.control_stream_id,
                local_control_channel=ctx.local_control_channel,
                local_control_stream_id=ctx.local_control_stream_id,
                events_channel=ctx.recording_events_channel,
                events_stream_id=ctx.recording_events_stream_id,
                aeron_directory=str(aeron.aeron_dir),
                now_ms=epoch_clock_ms(),
                permissions=permissions,
            )
        except (CatalogError, OSError, ValueError) as e:
            self._close_files()
            if self._owns_aeron:
                aeron.close()
            raise ArchiveStartError(f"cannot open the archive in {self.archive_dir}: {e}") from e
        self.segment_reserver = SegmentReserver()
        # The agents meet only through these queues and the proxies over them (docs/design.md section 3).
        failed = self.failed_offers = FailedOffers()
        to_conductor, to_recorder, to_replayer = CommandQueue(), CommandQueue(), CommandQueue()
        self.recorder = Recorder(to_recorder, ArchiveConductorProxy(to_conductor, failed))
        self.replayer = Replayer(to_replayer, ArchiveConductorProxy(to_conductor, failed), epoch_clock_ms)
        self.conductor = ArchiveConductor(
            ctx,
            aeron,
            self.catalog,
            self.mark_file,
            to_conductor,
            SessionWorkerProxy(to_recorder, failed),
            ReplayerProxy(to_replayer, failed),
            epoch_clock_ms,
            client_agent=aeron.conductor_agent_invoker if self._owns_aeron else None,
            error_handler=self._on_error,
            segment_reserver=self.segment_reserver,
        )
        self.recovered = self._recover(epoch_clock_ms())

    def _on_error(self, message: str) -> None:
        self.errors.append(message)
        if self._error_handler is not None:
            self._error_handler(message)

    def _recover(self, now_ms: int) -> list[int]:
        """Each valid entry without a stop position gets the stop found by scanning its last segment file
        (docs/archive.md section 7). A damaged entry, a missing or short segment file, or bytes after the last
        whole frame are reported by name (log and "Archive errors"), never raised; the rest of the archive
        works (docs/archive.md section 15)."""
        catalog = self.catalog
        assert catalog is not None
        report = self.conductor.report_error
        segments: dict[int, set[int]] = {}
        try:
            remove_staged_segments(self.archive_dir)  # reserved ahead and never reached before a crash
            for name in os.listdir(self.archive_dir):
                parsed = parse_segment_file_name(name)
                if parsed is not None:
                    segments.setdefault(parsed[0], set()).add(parsed[1])
        except OSError as e:
            report(f"start-up: cannot list the archive dir {self.archive_dir}: {e.strerror or e}")
        recovered = []
        for recording_id in range(catalog.count_entries):
            try:
                entry = catalog.entry(recording_id)
            except CatalogError as e:
                report(f"start-up: catalog entry of recording {recording_id} is damaged: {e}")
                continue
            if entry is None or not entry.valid:
                continue
            d = entry.descriptor
            problem = _descriptor_problem(d)
            if problem is not None:
                report(f"start-up: catalog entry of recording {recording_id} is damaged: {problem}")
                continue
            if d.stop_position != NULL_POSITION:
                self._check_segments(d, segments.get(recording_id, set()))
                continue
            if recording_id not in segments:
                report(f"start-up: recording {recording_id} has no segment file; its stop is its start")
            try:
                stop = recover_stop_position(
                    self.archive_dir,
                    recording_id,
                    d.start_position,
                    d.term_buffer_length,
                    d.segment_file_length,
                )
                self._check_after_stop(d, stop)
                stop = self._checksummed_stop(d, stop)
            except (OSError, ValueError) as e:
                report(f"start-up: recording {recording_id} cannot be recovered from its segment files: {e}")
                continue
            catalog.recording_stopped(recording_id, stop, now_ms)
            log.info("archive: recovered recording %d: stop position %d", recording_id, stop)
            recovered.append(recording_id)
        return recovered

    def _checksummed_stop(self, d: RecordingDescriptor, stop: int) -> int:
        """With a checksum sidecar, the recording ends after the last frame whose checksum holds: a torn tail
        (a frame whose header reached the file but not all of its body) is cut off (docs/archive.md section 19)."""
        good = last_good_position(self.archive_dir, d, stop)
        if good is None or good == stop:
            return stop
        self.conductor.report_error(
            f"start-up: recording {d.recording_id}: the frames from {good} to {stop} do not match their checksums "
            f"(a torn tail); the recording stops at {good}"
        )
        return good

    def _check_segments(self, d: RecordingDescriptor, present: set[int]) -> None:
        """Reports each segment file a stopped recording's [start, stop) needs that is missing or short."""
        if d.stop_position <= d.start_position:
            return
        try:
            first = segment_position(
                d.start_position, d.start_position, d.term_buffer_length, d.segment_file_length
            )
            last = segment_position(
                d.start_position, d.stop_position - 1, d.term_buffer_length, d.segment_file_length
            )
        except (ValueError, ZeroDivisionError) as e:
            self.conductor.report_error(f"start-up: recording {d.recording_id}: bad lengths: {e}")
            return
        for index in range(first.index, last.index + 1):
            path = segment_path(self.archive_dir, d.recording_id, index)
            if index not in present:
                self.conductor.report_error(
                    f"start-up: recording {d.recording_id}: segment file {path} is missing"
                )
                continue
            try:
                size = path.stat().st_size
            except OSError as e:
                self.conductor.report_error(
                    f"start-up: recording {d.recording_id}: {path}: {e.strerror or e}"
                )
                continue
            if size < d.segment_file_length:
                self.conductor.report_error(
                    f"start-up: recording {d.recording_id}: segment file {path} is {size} bytes, "
                    f"not {d.segment_file_length}"
                )

    def _check_after_stop(self, d: RecordingDescriptor, stop: int) -> None:
        """Reports bytes where the recovery scan stopped that are not zeros: a torn or damaged frame, not counted."""
        index, offset = segment_position(d.start_position, stop, d.term_buffer_length, d.segment_file_length)
        path = segment_path(self.archive_dir, d.recording_id, index)
        if offset >= d.segment_file_length or not path.exists():
            return
        with open(path, "rb") as f:
            head = os.pread(f.fileno(), FRAME_HEADER_LENGTH, offset)
        if any(head):
            self.conductor.report_error(
                f"start-up: recording {d.recording_id}: {path} holds bytes that are not a whole frame at offset "
                f"{offset} (a torn or damaged frame); the recording stops at {stop}, before them"
            )

    # -- agents ----------------------------------------------------------------------------------------------------

    @property
    def agents(self) -> list[Any]:
        return [self.conductor, self.recorder, self.replayer]

    def agent_groups(self) -> list[Any]:
        """What each runner runs: DEDICATED, one per agent; SHARED and INVOKER, the Archive itself."""
        if self.ctx.threading_mode == "DEDICATED":
            return self.agents
        return [self]

    def is_dormant(self) -> bool:
        """No session, request or outcome in flight in any agent (the embedding driver may then park longer)."""
        return self.conductor.is_dormant() and self.recorder.is_dormant() and self.replayer.is_dormant()

    def on_start(self) -> None:
        for agent in self.agents:
            agent.on_start()

    def do_work(self) -> int:
        return self.conductor.do_work() + self.recorder.do_work() + self.replayer.do_work()

    def on_close(self) -> None:
        """Stops every session, records the stop positions, and leaves the driver (when it owns the client)."""
        if self._closed:
            return
        self._closed = True
        self.replayer.on_close()
        self.recorder.on_close()
        self.segment_reserver.close()
        self._drain_outcomes()  # the workers' last outcomes: stop positions into the catalog
        self.conductor.on_close()
        if self._owns_aeron:
            self.aeron.close()
        self._close_files()

    def _drain_outcomes(self) -> None:
        """Every outcome the closed workers left, however many: more than one duty cycle's worth may wait."""
        conductor = self.conductor
        workers = (self.recorder.conductor, self.replayer.conductor)
        while any(proxy.has_pending() for proxy in workers):
            for proxy in workers:
                proxy.flush()
            conductor.commands.drain(conductor, len(conductor.commands))
        conductor.do_work()

    def close(self) -> None:
        self.on_close()

    def _close_files(self) -> None:
        if self.catalog is not None:
            self.catalog.close()
        if self.mark_file is not None:
            self.mark_file.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
