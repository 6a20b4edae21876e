"""A loss-report.dat written by the real Aeron 1.15.1 driver under injected loss, read by our tools.

The Java driver drops 10 % of received DATA frames through its own debug receive endpoint
(``DebugReceiveChannelEndpointSupplier`` + ``aeron.debug.receive.data.loss.rate``), while the Java samples
StreamingPublisher -> RateSubscriber stream over ``aeron:udp?endpoint=localhost:<port>``. A snapshot of its
loss-report.dat is then read by our reader, by ``mediadriver loss --format csv`` (equal to the real LossStat's
output) and by the Spark job next to three synthetic drivers with less loss, where it must be the top offender.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from driver.reports.loss_report import LossEntry, LossReport, LossReportFile, create_loss_report_file
from tests.support import free_port

pytestmark = pytest.mark.interop

STREAM_ID = 1001
DEBUG_LOSS = {
    "aeron.ReceiveChannelEndpoint.supplier": "io.aeron.driver.ext.DebugReceiveChannelEndpointSupplier",
    "aeron.debug.receive.data.loss.rate": "0.1",
    "aeron.debug.receive.data.loss.seed": "15",
}
MIN_BYTES_LOST = 200_000  # more than any synthetic stream below can lose
SYNTHETIC_LOSS_PER_ENTRY = 1024
SPARK_TIMEOUT_S = 120.0


def _entries(location: Path) -> list[LossEntry]:
    try:
        with LossReportFile.map_existing(location) as f:
            return list(f.entries())
    except FileNotFoundError:
        return []


def _write_synthetic_driver(directory: Path, index: int) -> None:
    """A driver whose 40 images each lost a little on two other streams."""
    directory.mkdir(parents=True)
    path = create_loss_report_file(directory, 1 << 20, 4096)
    with LossReportFile.map_existing(path, writable=True) as f:
        assert f.buffer is not None
        report = LossReport(f.buffer)
        for i in range(40):
            report.create_entry(
                SYNTHETIC_LOSS_PER_ENTRY,
                1_700_000_000_000 + i * 1000,
                1000 * index + i,
                2000 + i % 2,
                f"aeron:udp?endpoint=10.1.{index}.1:4{i % 2}000",
                f"/10.1.{index}.9:{5000 + i}",
            )


def test_java_loss_report_read_by_our_reader_loss_stat_and_spark(
    drivers, spawn_java, run_java, run_driver_cli, cnc, tmp_path: Path
) -> None:
    started = time.monotonic()
    driver = drivers.java(DEBUG_LOSS)
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    sample = {
        "aeron.dir": driver.aeron_dir,
        "aeron.sample.channel": channel,
        "aeron.sample.streamId": STREAM_ID,
    }
    subscriber = spawn_java("io.aeron.samples.RateSubscriber", props=sample)
    publisher = spawn_java(
        "io.aeron.samples.StreamingPublisher", props={**sample, "aeron.sample.messages": 1_000_000_000}
    )
    live = driver.aeron_dir / "loss-report.dat"

    def lossy_entry() -> LossEntry | None:
        found = [e for e in _entries(live) if (e.channel, e.stream_id) == (channel, STREAM_ID)]
        return found[0] if found and found[0].total_bytes_lost >= MIN_BYTES_LOST else None

    entry = cnc.wait_for(
        lossy_entry, 20.0, interval=0.1, what=f"{MIN_BYTES_LOST} bytes lost on {channel} in {live}"
    )
    # Our command reads the live file the Java driver is still writing.
    result = run_driver_cli("loss", "--dir", driver.aeron_dir)
    assert result.returncode == 0, result.stderr
    assert channel in result.stdout and re.search(r"^1 entries read, [\d,]+ bytes lost", result.stdout, re.M)
    publisher.stop()
    subscriber.stop()

    snapshot = tmp_path / "java-driver"
    snapshot.mkdir()
    shutil.copyfile(live, snapshot / "loss-report.dat")

    # Our reader: one entry for the image, as 1.15.1 lays it out.
    (entry,) = _entries(snapshot)
    assert (entry.channel, entry.stream_id) == (channel, STREAM_ID)
    assert re.fullmatch(r"/127\.0\.0\.1:\d+", entry.source), entry.source
    assert entry.observation_count >= 2 and entry.total_bytes_lost >= MIN_BYTES_LOST
    assert entry.total_bytes_lost % 32 == 0  # gaps are whole frames
    assert 0 < entry.first_observation_ms <= entry.last_observation_ms <= time.time() * 1000

    # mediadriver loss --format csv prints exactly what LossStat prints.
    java = run_java("io.aeron.samples.LossStat", props={"aeron.dir": snapshot}, timeout=30, check=True)
    ours = run_driver_cli("loss", "--dir", snapshot, "--format", "csv")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == java.stdout
    assert java.stdout.splitlines()[-1] == "1 entries read"

    # The Spark job over the Java driver's file and three synthetic drivers finds the lossy stream on top.
    for index in range(3):
        _write_synthetic_driver(tmp_path / "fleet" / f"driver-{index}", index)
    out = tmp_path / "analysis"
    result = run_driver_cli(
        "analyze-loss",
        snapshot,
        f"{tmp_path}/fleet/*/loss-report.dat",
        "--master",
        "local[2]",
        "--out",
        out,
        timeout=SPARK_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    top = summary["top_offenders"][0]
    assert (top["channel"], top["stream_id"], top["bytes_lost"]) == (
        channel,
        STREAM_ID,
        entry.total_bytes_lost,
    )
    assert summary["by_host"][0]["host"] == "java-driver"
    assert summary["files_read"] == 4 and summary["skipped"] == []
    assert summary["totals"]["entries"] == 1 + 3 * 40
    assert (out / "report.md").exists() and (out / "top_offenders.png").exists()
    assert "decoding" in result.stderr  # progress lines
    print(f"\n[loss interop] whole test took {time.monotonic() - started:.1f} s")
