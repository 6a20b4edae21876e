"""The record & replay service left running (docs/archive.md section 19): deleting a data set purges its
recordings, so record-and-delete cycles go on past the catalog's configured size, leave no files behind, and
1.15.1's CatalogTool still reads the grown catalog; a record job the archive refuses fails with the archive's
own words."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from driver.archive.client import AeronArchive, SourceLocation
from driver.service.command import control_settings
from tests.support import wait_for
from tests.support.service_env import API, Publisher, start_service_env, stop_service_env, wait_for_state

CYCLES = 60
MAX_ENTRIES = 16


def leftover_files(archive_dir: Path) -> list[str]:
    """Files of recordings (segments, staged segments, sidecars) in the archive dir."""
    return sorted(p.name for p in archive_dir.iterdir() if p.is_file() and p.name[0].isdigit())


def record_small_dataset(env: Any, stream_id: int) -> dict:
    response = env.client.post(
        f"{API}/record",
        json={"streams": [{"channel": "aeron:ipc", "stream_id": stream_id}], "max_messages": 20},
    )
    assert response.status_code == 202, response.text
    publisher = Publisher(env, "aeron:ipc", stream_id, 0.0005)
    publisher.start()
    try:
        return wait_for_state(env, "record")
    finally:
        publisher.stop()


@pytest.mark.slow
@pytest.mark.interop
def test_record_and_delete_cycles_past_a_catalog_of_16(tmp_path: Path, archive_java: Any) -> None:
    env, archive = start_service_env(
        tmp_path, max_catalog_entries=MAX_ENTRIES, segment_file_length=2 * 1024 * 1024
    )
    archive_dir = env.archive_dir
    started = time.monotonic()
    try:
        for cycle in range(CYCLES):
            status = record_small_dataset(env, 2001 + cycle % 4)
            assert status["state"] == "done", f"cycle {cycle}: {status}"
            dataset_id = status["dataset_id"]
            assert leftover_files(archive_dir), "the recording wrote no files"
            response = env.client.delete(f"{API}/datasets/{dataset_id}")
            assert response.status_code == 200, f"cycle {cycle}: {response.text}"
            wait_for(lambda: not leftover_files(archive_dir), 10, f"cycle {cycle}: the purged files to go")
        assert env.client.get(f"{API}/datasets").json()["datasets"] == []
    finally:
        stop_service_env(env, archive)
    print(f"{CYCLES} record-and-delete cycles in {time.monotonic() - started:.1f} s")
    assert leftover_files(archive_dir) == []

    def catalog_tool(*args: Any) -> str:
        return archive_java.run(
            "io.aeron.archive.CatalogTool", archive_dir, *args, timeout=60.0, check=True
        ).stdout.strip()

    assert catalog_tool("count-entries") == str(CYCLES)
    assert catalog_tool("max-entries") == str(MAX_ENTRIES * 4)  # grown twice: 16, 32, 64
    last = catalog_tool("describe", CYCLES - 1)
    assert f"recordingId={CYCLES - 1}|" in last and "streamId=" in last


def test_a_refused_record_job_reports_the_archives_error(tmp_path: Path) -> None:
    env, archive = start_service_env(tmp_path, max_concurrent_recordings=1)
    client = AeronArchive.connect(env.aeron, **control_settings("aeron:ipc", 11))
    try:
        # Our own recording takes the only slot after the job's start was accepted, so the archive refuses the
        # job's image after its OK.
        client.start_recording("aeron:ipc", 3001, SourceLocation.LOCAL)
        response = env.client.post(
            f"{API}/record",
            json={"streams": [{"channel": "aeron:ipc", "stream_id": 3002}], "max_messages": 20},
        )
        assert response.status_code == 202, response.text
        # 1.15.1 has no request that lists recording subscriptions: the archive's own table shows the job's.
        wait_for(lambda: len(archive.conductor._subscriptions) == 2, 10, "the job's recording subscription")
        ours = env.aeron.add_publication("aeron:ipc", 3001)
        wait_for(lambda: client.list_recordings(0, 10), 10, "our recording to start")
        publisher = Publisher(env, "aeron:ipc", 3002, 0.0005)
        publisher.start()
        try:
            status = wait_for_state(env, "record")
        finally:
            publisher.stop()
            ours.close()
        assert status["state"] == "failed"
        assert "max concurrent recordings reached, cannot record" in status["error"], status
        assert "did not start recording" not in status["error"]
    finally:
        client.close()
        stop_service_env(env, archive)
