"""Replication on one host (docs/archive.md section 20): two of our archives, each embedded in a driver process
of its own, B copying A's recordings over UDP loopback. The refusals a client gets at once, a source that does
not have the recording, a source nobody answers for, and a copy of a recording still going (no live destination)
stopped by request (its counter seen meanwhile), extended while the source still records, and ending synced when
the source's recording stops (the replay follows it)."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from driver.archive.client import AeronArchive, ArchiveError
from driver.archive.codecs import SourceLocation
from driver.archive.replication_session import REPLICATION_TYPE_ID
from driver.client import Aeron
from harness.embedded import embedded_driver
from tests.support import free_port, wait_for
from tests.support.driver_pool import DriverPool
from tests.support.java_archive import archive_channels
from tests.support.recording_files import assert_same_recording
from tests.support.scratch import scratch_dir

LOCAL = dict(
    control_request_channel="aeron:ipc", control_request_stream_id=11, control_response_channel="aeron:ipc"
)
STREAM_ID = 1004


class Archives:
    def __init__(self, pool: Any, base: Path) -> None:
        self.dirs: dict[str, Path] = {}
        self.props: dict[str, dict[str, str]] = {}
        self.drivers: dict[str, Any] = {}
        self.clients: dict[str, AeronArchive] = {}
        for name in ("a", "b"):
            self.dirs[name] = base / name
            self.props[name] = archive_channels() | {
                "aeron.archive.dir": str(base / name),
                "aeron.archive.threading.mode": "SHARED",
                "aeron.archive.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
                # Short, so a lost source ends a copy soon; not 1 s: on 2 busy cores a following copy once
                # stood still that long with its source alive.
                "aeron.archive.replication.progress.timeout": "3s",
            }
            driver = pool.ours(self.props[name], args=["--archive"])
            self.drivers[name] = driver
            self.clients[name] = wait_for(lambda d=driver: _connect(d.aeron_dir), 20, f"archive {name}")

    @property
    def source_channel(self) -> str:
        return self.props["a"]["aeron.archive.control.channel"]


def _connect(aeron_dir: Path) -> AeronArchive | None:
    try:
        return AeronArchive.connect(aeron_dir=str(aeron_dir), **LOCAL)
    except Exception:
        return None


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archives]:
    pool = DriverPool()
    with scratch_dir(tmp_path_factory, "replication") as base:
        try:
            archives = Archives(pool, base)
            yield archives
            for client in archives.clients.values():
                client.close()
        finally:
            problems = pool.close()
    assert not problems, problems


def test_requests_refused_at_once(archives: Archives) -> None:
    b = archives.clients["b"]
    with pytest.raises(ArchiveError, match="unknown recording id 77") as refused:
        b.replicate(0, archives.source_channel, dst_recording_id=77)
    assert refused.value.code == 5
    with pytest.raises(ArchiveError, match="replicate: "):
        b.replicate(0, "aeron:bogus?endpoint=x:1")
    with pytest.raises(ArchiveError, match="live destination must be aeron:udp"):
        b.replicate(0, archives.source_channel, live_destination="aeron:ipc")
    with pytest.raises(ArchiveError, match="unknown replication id 4242"):
        b.stop_replication(4242)


def test_a_recording_the_source_does_not_have_is_an_error_then_stopped(archives: Archives) -> None:
    b = archives.clients["b"]
    replication_id = b.replicate(999, archives.source_channel)
    with pytest.raises(ArchiveError, match="unknown recording id 999 at the source"):
        b.await_replication(replication_id, timeout_s=20)


def test_a_source_nobody_answers_for_is_an_error(archives: Archives) -> None:
    b = archives.clients["b"]
    replication_id = b.replicate(0, f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}")
    with pytest.raises(ArchiveError, match="the source archive"):
        b.await_replication(replication_id, timeout_s=30)


def test_copy_of_a_live_recording_stopped_by_request_then_extended_following_it_to_its_end(
    archives: Archives, tmp_path: Path
) -> None:
    a, b = archives.clients["a"], archives.clients["b"]
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
    a.start_recording(channel, STREAM_ID, SourceLocation.REMOTE)
    running = threading.Event()
    running.set()
    # The publisher is on a driver of its own, as across hosts: the source's driver must not hold the session.
    with embedded_driver() as publisher_driver, Aeron.connect(str(publisher_driver.aeron_dir)) as aeron:
        publication = aeron.add_publication(channel, STREAM_ID)

        def publish() -> None:
            sequence = 0
            while running.is_set():
                if publication.offer(struct.pack("<q", sequence) + bytes(192)) > 0:
                    sequence += 1
                    if sequence % 200 == 0:
                        time.sleep(0.001)

        thread = threading.Thread(target=publish, daemon=True)
        thread.start()
        try:
            src = wait_for(lambda: a.list_recordings_for_uri(0, 10, channel, STREAM_ID), 10, "the recording")[
                0
            ]
            wait_for(lambda: a.get_recording_position(src.recording_id) > 1 << 20, 20, "1 MiB recorded")
            replication_id = b.replicate(src.recording_id, archives.source_channel)
            (started,) = b.await_replication(replication_id, until="started", timeout_s=20)
            copy_id = started.recording_id
            wait_for(lambda: (b.get_recording_position(copy_id) or 0) > 1 << 20, 20, "1 MiB copied")
            counters = _replication_counters(archives.drivers["b"].aeron_dir)
            assert any(value > 0 for value in counters.values()), counters
            b.stop_replication(replication_id)
            (stopped,) = b.await_replication(replication_id, timeout_s=20)
            assert stopped.name == "stopped" and stopped.position > 1 << 20
            assert b.get_stop_position(copy_id) == stopped.position
            assert _replication_counters(archives.drivers["b"].aeron_dir) == {}
            # The stopped copy's replay publication lingers 5 s on the source's driver with the session id.
            time.sleep(5.5)
            replication_id = b.replicate(src.recording_id, archives.source_channel, dst_recording_id=copy_id)
            (extended,) = b.await_replication(replication_id, until="extended", timeout_s=20)
            assert extended.position == stopped.position
            wait_for(
                lambda: (b.get_recording_position(copy_id) or 0) > stopped.position, 10, "the copy moving"
            )
        finally:
            running.clear()
            thread.join(5)
            publication.close()
        a.stop_recording(channel, STREAM_ID)
        wait_for(lambda: a.get_stop_position(src.recording_id) > 0, 10, "the source's stop")
        # The replay follows the source's recording, and ends with it.
        names = [(s.name, s.position) for s in b.await_replication(replication_id, timeout_s=30)]
    end = a.get_stop_position(src.recording_id)
    assert names == [("synced", end), ("stopped", end)], names
    assert_same_recording(
        archives.dirs["a"], a.list_recording(src.recording_id), archives.dirs["b"], b.list_recording(copy_id)
    )


def _replication_counters(aeron_dir: Path) -> dict[int, int]:
    with Aeron.connect(str(aeron_dir)) as aeron:
        found: dict[int, int] = {}
        reader = aeron.counters_reader

        def match(counter_id: int, type_id: int, key: bytes, label: str) -> None:
            if type_id == REPLICATION_TYPE_ID:
                found[counter_id] = reader.get_counter_value(counter_id)

        reader.for_each(match)
        return found
