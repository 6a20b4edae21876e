"""A replicated recording as 1.15.1 sees it (docs/archive.md section 20): two of our archives on this host (each
embedded in a driver process of its own), B copies A's stopped recording; the copy's segment files are A's byte
for byte, 1.15.1's CatalogTool describes the copy as A's recording, and the 1.15.1 AeronArchive client lists and
replays the copy from B (every message, in order: count and CRC32 of the bytes), and a 1.15.1 client asking its
own questions of B while B makes another copy sees nothing new."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

from driver.archive.client import AeronArchive
from driver.archive.codecs import SourceLocation
from tests.support import wait_for
from tests.support.driver_pool import DriverPool
from tests.support.java_archive import archive_channels
from tests.support.recording_files import assert_same_recording

ROOT = Path(__file__).resolve().parents[2]
STREAM_ID = 1002
COUNT = 4000
LENGTH = 1000
LOCAL = dict(
    control_request_channel="aeron:ipc", control_request_stream_id=11, control_response_channel="aeron:ipc"
)


def expected_crc() -> int:
    """What tests/support/fast_publisher sends: LENGTH zero bytes, the first 8 the sequence number."""
    crc, payload = 0, bytearray(LENGTH)
    for i in range(COUNT):
        payload[:8] = i.to_bytes(8, "little")
        crc = zlib.crc32(payload, crc)
    return crc


def test_java_client_and_catalog_tool_read_and_replay_a_replica(
    archive_java: Any, tmp_path: Path
) -> None:
    pool = DriverPool()
    try:
        hosts = {}
        for name in ("a", "b"):
            props = archive_channels() | {
                "aeron.archive.dir": str(tmp_path / name),
                "aeron.archive.threading.mode": "SHARED",
                "aeron.archive.replication.channel": "aeron:udp?endpoint=127.0.0.1:0",
            }
            driver = pool.ours(props, args=["--archive"])
            archive = wait_for(lambda d=driver: _connect(d.aeron_dir), 20, f"archive {name}")
            hosts[name] = (driver, props, archive)
        (a_driver, a_props, a), (b_driver, _, b) = hosts["a"], hosts["b"]
        a.start_recording("aeron:ipc", STREAM_ID, SourceLocation.LOCAL)
        subprocess.run(
            [sys.executable, "-m", "harness.fast_publisher", str(a_driver.aeron_dir), "aeron:ipc",
             str(STREAM_ID), str(COUNT), str(LENGTH)],
            check=True, capture_output=True, timeout=60, cwd=ROOT,
        )  # fmt: skip
        a.stop_recording("aeron:ipc", STREAM_ID)
        wait_for(lambda: a.get_stop_position(0) > 0, 10, "the source's stop")

        replication_id = b.replicate(0, a_props["aeron.archive.control.channel"])
        signals = [s.name for s in b.await_replication(replication_id, timeout_s=60)]
        assert signals == ["started", "synced", "stopped"], signals
        source, copy = a.list_recording(0), b.list_recording(0)
        assert_same_recording(tmp_path / "a", source, tmp_path / "b", copy)
        assert (copy.original_channel, copy.source_identity) == (
            source.original_channel,
            source.source_identity,
        )

        snapshot = tmp_path / "b-copy"  # CatalogTool may touch what it reads
        shutil.copytree(tmp_path / "b", snapshot)
        described = archive_java.run(
            "io.aeron.archive.CatalogTool", snapshot, "describe", 0, timeout=60.0, check=True
        ).stdout
        for field in (
            "recordingId=0",
            f"startPosition={source.start_position}",
            f"stopPosition={source.stop_position}",
            f"sessionId={source.session_id}",
            f"streamId={STREAM_ID}",
            f"initialTermId={source.initial_term_id}",
        ):
            assert f"{field}|" in f"{described}|".replace(", ", "|").replace("}", "|"), described

        replayed = archive_java.run(
            "ReplicaReader",
            0,
            STREAM_ID + 1,
            props={
                "aeron.dir": b_driver.aeron_dir,
                "aeron.archive.control.channel": "aeron:ipc",
                "aeron.archive.control.stream.id": 11,
                "aeron.archive.control.response.channel": "aeron:ipc",
                "aeron.archive.control.response.stream.id": 22,
            },
            timeout=90.0,
        )
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        lines = replayed.stdout.splitlines()
        assert (
            f"DESCRIPTOR {source.start_position} {source.stop_position} {source.session_id} {STREAM_ID}"
            in lines
        )
        assert f"REPLAYED {COUNT} {expected_crc()}" in lines, replayed.stdout

        # A 1.15.1 client of B, asking its own questions while B makes a second copy, sees nothing new.
        bystander = archive_java.spawn(
            "ArchiveBystander",
            props={
                "aeron.dir": b_driver.aeron_dir,
                "aeron.archive.control.channel": "aeron:ipc",
                "aeron.archive.control.stream.id": 11,
                "aeron.archive.control.response.channel": "aeron:ipc",
                "aeron.archive.control.response.stream.id": 23,
                "bystander.duration.ms": 4000,
                "bystander.interval.ms": 50,
            },
        )
        try:
            bystander.read_until("BYSTANDER CONNECTED", 30)
            second = b.replicate(0, a_props["aeron.archive.control.channel"])
            signals = [s.name for s in b.await_replication(second, until="synced", timeout_s=60)]
            assert signals == ["started", "synced"], signals
            # STOP may have come in the same poll as SYNC: it waits for the next call.
            (stopped,) = b.await_replication(second, timeout_s=10)
            assert stopped.name == "stopped" and stopped.position == source.stop_position
            lines = bystander.read_until(r"BYSTANDER (OK|FAIL)", 30)
            assert any(line.startswith("BYSTANDER OK") for line in lines), lines
            assert bystander.wait(10) == 0
        finally:
            bystander.stop()
        a.close()
        b.close()
    finally:
        problems = pool.close()
    assert not problems, problems


def _connect(aeron_dir: Path) -> AeronArchive | None:
    try:
        return AeronArchive.connect(aeron_dir=str(aeron_dir), **LOCAL)
    except Exception:
        return None
