"""1.15.1's own ArchivingMediaDriver (JavaArchiveLive.java) recording a stream: ``mediadriver stat --once``,
``streams --once``, the exporter and ``archive list|verify`` read its cnc.dat and archive dir while the recording
is in progress (docs/counters.md section 7, docs/archive.md section 12)."""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from driver.cli import main
from driver.exporter.collector import CncCollector
from tests.archive.conftest import archive_java  # noqa: F401  (fixtures)
from tests.support.scratch import scratch_dir

pytestmark = pytest.mark.interop

MESSAGES = 100


@pytest.fixture(scope="module")
def live_recording(
    archive_java: Any,  # noqa: F811  (the imported fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Path, list[int]]]:
    with scratch_dir(tmp_path_factory, "java-archive-live") as base:
        archive_dir = base / "archive"
        aeron_dir = Path(f"/dev/shm/aeron-archive-live-{uuid.uuid4().hex[:12]}")
        proc = archive_java.spawn("JavaArchiveLive", archive_dir, aeron_dir, MESSAGES, stdin=True)
        try:
            lines = proc.read_until(r"^RECORDING ", 60)
            fields = next(line for line in lines if line.startswith("RECORDING ")).split()[1:]
            yield archive_dir, aeron_dir, [int(f) for f in fields]
            proc.write_line("stop")
            proc.wait(30)
        finally:
            proc.stop()
            shutil.rmtree(aeron_dir, ignore_errors=True)


def test_stat_streams_and_exporter_show_the_recording(
    live_recording: tuple[Path, Path, list[int]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, aeron_dir, (recording_id, counter_id, session_id, position) = live_recording
    assert main(["stat", "--dir", str(aeron_dir), "--once"]) == 0
    stat = capsys.readouterr().out
    assert re.search(
        rf"^ *{counter_id}: +{position:,d} - rec-pos: {recording_id} {session_id} 33 aeron:ipc$", stat, re.M
    ), stat
    assert main(["stat", "--dir", str(aeron_dir), "--once", "--table", "--type", "rec-pos"]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row[:5] == [str(counter_id), "rec-pos", f"{position:,d}", str(session_id), "33"]
    assert main(["streams", "--dir", str(aeron_dir), "--once"]) == 0
    streams = capsys.readouterr().out.splitlines()
    line = next(line for line in streams if f" rec-pos:{recording_id}:" in line)
    assert line.startswith(f"sessionId={session_id} streamId=33 channel=aeron:ipc :")
    assert line.endswith(f"rec-pos:{recording_id}:{position}") and "sub-pos:" in line

    collector = CncCollector(aeron_dir)
    try:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        samples = [
            s
            for family in text_string_to_metric_families(generate_latest(registry).decode())
            for s in family.samples
        ]
    finally:
        collector.close()
    rec = [s for s in samples if s.name == "aeron_recording_position_bytes"]
    assert len(rec) == 1 and rec[0].value == position
    assert {k: rec[0].labels[k] for k in ("recording_id", "session_id", "stream_id", "channel")} == {
        "recording_id": str(recording_id),
        "session_id": str(session_id),
        "stream_id": "33",
        "channel": "aeron:ipc",
    }
    assert [s.value for s in samples if s.name == "aeron_recordings_active"] == [1]


def test_archive_tools_on_a_recording_in_progress(
    live_recording: tuple[Path, Path, list[int]], capsys: pytest.CaptureFixture[str]
) -> None:
    archive_dir, _, (recording_id, _, session_id, position) = live_recording
    assert main(["archive", "list", "--dir", str(archive_dir)]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row[:6] == [str(recording_id), "yes", "33", str(session_id), "0", "-1"]
    assert main(["archive", "verify", str(recording_id), "--dir", str(archive_dir)]) == 0
    out = capsys.readouterr().out
    assert f"frames well formed up to {position}" in out and f"the data reaches {position}" in out
