"""INVOKER threading mode (docs/archive.md section 15): the embedder runs the driver's invoker and the archive's
duty cycle itself, in one thread of its own, and the archive records and replays through it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import uvloop

from driver.archive.archive import Archive
from driver.archive.archive_context import ArchiveContext
from driver.archive.codecs import (
    ControlResponseCode,
    RecordingPositionRequest,
    ReplayRequest,
    SourceLocation,
    StartRecordingRequest,
    StopRecordingSubscriptionRequest,
)
from driver.client import Aeron
from driver.context import DriverContext
from driver.media_driver import MediaDriver
from driver.util.bit_util import to_int32
from tests.archive.test_archive_server import message, publish
from tests.support import free_port, new_aeron_dir, wait_for
from tests.support.archive_control import ArchiveControl

OK = ControlResponseCode.OK
TERM_LENGTH = 64 * 1024


class Embedder:
    """One thread: a loop whose only task calls the driver's invoker and the archive's duty cycle in turn."""

    def __init__(self, aeron_dir: Path, archive_dir: Path) -> None:
        self.driver = MediaDriver(
            DriverContext(
                aeron_dir=str(aeron_dir),
                threading_mode="INVOKER",
                spies_simulate_connection=True,
                ipc_term_buffer_length=TERM_LENGTH,
            )
        )
        self.ctx = ArchiveContext(
            aeron_dir=str(aeron_dir),
            archive_dir=str(archive_dir),
            control_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
            recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
            segment_file_length=64 * 1024,
            threading_mode="INVOKER",
        )
        self.archive: Archive | None = None
        self.cycles = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="archive-embedder", daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the embedder did not start"
        if self.failure is not None:
            raise self.failure

    def _run(self) -> None:
        loop = uvloop.new_event_loop()
        try:
            loop.run_until_complete(self._duty_cycles())
        except BaseException as e:
            self.failure = e
            self._ready.set()
        finally:
            loop.close()

    async def _duty_cycles(self) -> None:
        invoker = self.driver.invoker
        assert invoker is not None
        invoker.start()
        try:
            archive = self.archive = Archive(self.ctx)
            archive.on_start()
            self._ready.set()
            try:
                while not self._stop.is_set():
                    work = invoker.invoke() + archive.do_work()
                    self.cycles += 1
                    await asyncio.sleep(0 if work else 0.0005)
            finally:
                archive.on_close()
        finally:
            self.driver.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        if self.failure is not None:
            raise self.failure


def test_record_and_replay_with_the_embedder_running_the_duty_cycles(tmp_path: Path) -> None:
    aeron_dir = new_aeron_dir(tmp_path)
    embedder = Embedder(aeron_dir, tmp_path / "archive")
    try:
        archive = embedder.archive
        assert archive is not None and archive.agent_groups() == [archive]
        with Aeron.connect(aeron_dir) as aeron:
            control = ArchiveControl(aeron)
            publication = aeron.add_exclusive_publication("aeron:ipc", 7001)
            started = control.request(StartRecordingRequest, 7001, SourceLocation.LOCAL, "aeron:ipc")
            assert started.code == OK, started
            wait_for(lambda: archive.catalog.count_entries == 1, 10, "the recording to start")
            count, length = 200, 500
            publish(publication, 0, count, length)
            target = publication.position
            wait_for(
                lambda: control.request(RecordingPositionRequest, 0).relevant_id == target, 10, "recorded"
            )
            assert control.request(StopRecordingSubscriptionRequest, started.relevant_id).code == OK
            wait_for(lambda: archive.catalog.stop_position(0) == target, 10, "the stop position")

            replay = control.request(ReplayRequest, 0, -1, -1, 7002, "aeron:ipc")
            assert replay.code == OK, replay
            subscription = aeron.add_subscription(
                f"aeron:ipc?session-id={to_int32(replay.relevant_id)}", 7002
            )
            received: list[bytes] = []

            def on_fragment(buffer: Any, offset: int, size: int, _header: Any) -> None:
                received.append(bytes(buffer.view[offset : offset + size]))

            wait_for(
                lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) >= count, 10, "replay"
            )
            assert received == [message(i, length) for i in range(count)]
            subscription.close()
            publication.close()
            control.close()
        assert embedder.cycles > 0
    finally:
        embedder.close()
