"""``mediadriver loss``: LossStat's CSV exactly, a table for people, and clear failures."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, timedelta, timezone
from pathlib import Path

import pytest

from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.reports.loss_report import LossEntry, LossReport, LossReportFile, create_loss_report_file
from driver.reports.loss_stat import CSV_HEADER, csv_lines, table_lines

T0 = 1_795_271_087_123  # 2026-11-21 14:24:47.123 UTC
ENTRY = LossEntry(
    3, 4096, T0, T0 + 61_001, -42, 1001, "aeron:udp?endpoint=localhost:40123", "/127.0.0.1:44363"
)


def mediadriver(*args: str, tz: str = "UTC") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
    env["TZ"] = tz
    return subprocess.run(
        [sys.executable, "-m", "driver", *args], capture_output=True, text=True, timeout=30, env=env
    )


def write_report(directory: Path, specs: list[tuple[int, int, int, int, str, str]]) -> Path:
    path = create_loss_report_file(directory, 1 << 16, 4096)
    with LossReportFile.map_existing(path, writable=True) as f:
        assert f.buffer is not None
        report = LossReport(f.buffer)
        for lost, ts, session, stream, channel, source in specs:
            assert report.create_entry(lost, ts, session, stream, channel, source) is not None
    return path


def test_csv_is_what_loss_stat_prints() -> None:
    assert CSV_HEADER == (
        "#OBSERVATION_COUNT, TOTAL_BYTES_LOST, FIRST_OBSERVATION, LAST_OBSERVATION, SESSION_ID, STREAM_ID, "
        "CHANNEL, SOURCE"
    )
    assert csv_lines([ENTRY], UTC) == [
        CSV_HEADER,
        "3,4096,2026-11-21 14:24:47.123+0000,2026-11-21 14:25:48.124+0000,-42,1001,"
        "aeron:udp?endpoint=localhost:40123,/127.0.0.1:44363",
        "1 entries read",
    ]
    india = timezone(timedelta(hours=5, minutes=30))
    assert csv_lines([ENTRY], india)[1].startswith("3,4096,2026-11-21 19:54:47.123+0530,")
    assert csv_lines([], UTC) == [CSV_HEADER, "0 entries read"]


def test_table_lines_up_columns() -> None:
    lines = table_lines([ENTRY, ENTRY._replace(total_bytes_lost=1_234_567, stream_id=7)], UTC)
    assert lines[0].split() == [
        "OBSERVATIONS", "BYTES", "LOST", "FIRST", "OBSERVATION", "LAST", "OBSERVATION",
        "SESSION", "STREAM", "CHANNEL", "SOURCE",
    ]  # fmt: skip
    assert set(lines[1]) == {"-", " "}
    assert "1,234,567" in lines[3] and lines[2].index("4,096") + 5 == lines[3].index("1,234,567") + 9
    assert lines[2].index("aeron:udp") == lines[0].index("CHANNEL")
    assert lines[-1] == "2 entries read, 1,238,663 bytes lost in total"


def test_loss_command_prints_csv_and_table(tmp_path: Path) -> None:
    write_report(
        tmp_path, [(100, T0, 1, 10, "aeron:udp?endpoint=a:1", "/1.2.3.4:5"), (7, T0 + 1, 2, 11, "c", "s")]
    )
    result = mediadriver("loss", "--dir", str(tmp_path), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        CSV_HEADER,
        "1,100,2026-11-21 14:24:47.123+0000,2026-11-21 14:24:47.123+0000,1,10,aeron:udp?endpoint=a:1,/1.2.3.4:5",
        "1,7,2026-11-21 14:24:47.124+0000,2026-11-21 14:24:47.124+0000,2,11,c,s",
        "2 entries read",
    ]
    # The local zone is used, as Java's SimpleDateFormat does.
    result = mediadriver("loss", f"-Daeron.dir={tmp_path}", "--format", "csv", tz="Asia/Kolkata")
    assert result.stdout.splitlines()[1].startswith("1,100,2026-11-21 19:54:47.123+0530,")
    result = mediadriver("loss", "--dir", str(tmp_path / "loss-report.dat"))
    assert result.returncode == 0
    assert "aeron:udp?endpoint=a:1" in result.stdout and result.stdout.splitlines()[-1].startswith(
        "2 entries read"
    )


def test_loss_command_on_a_missing_report(tmp_path: Path) -> None:
    result = mediadriver("loss", "--dir", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert f"Loss report does not exist: {tmp_path / 'nowhere' / 'loss-report.dat'}" in result.stderr


def test_loss_command_shows_good_entries_then_names_the_corrupt_offset(tmp_path: Path) -> None:
    path = write_report(tmp_path, [(100, T0, 1, 10, "aeron:udp?endpoint=a:1", "/x")] * 3)
    raw = bytearray(path.read_bytes())
    raw[128 + 40 : 128 + 44] = (10**6).to_bytes(4, "little")
    path.write_bytes(raw)
    result = mediadriver("loss", "--dir", str(tmp_path), "--format", "csv")
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == "1 entries read"
    assert "corrupt loss report entry at offset 128: channel length 1000000" in result.stderr
    assert str(path) in result.stderr


@pytest.mark.parametrize("fmt", ["csv", "table"])
def test_an_empty_report(tmp_path: Path, fmt: str) -> None:
    create_loss_report_file(tmp_path, 4096, 4096)
    result = mediadriver("loss", "--dir", str(tmp_path), "--format", fmt)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1].startswith("0 entries read")


def test_read_only_mapping_of_a_live_buffer_sees_new_entries(tmp_path: Path) -> None:
    path = create_loss_report_file(tmp_path, 4096, 4096)
    with (
        LossReportFile.map_existing(path, writable=True) as writer,
        LossReportFile.map_existing(path) as reader,
    ):
        assert isinstance(writer.buffer, AtomicBuffer)
        report = LossReport(writer.buffer)
        assert list(reader.entries()) == []
        entry = report.create_entry(10, T0, 1, 2, "c", "s")
        assert entry is not None
        assert [e.observation_count for e in reader.entries()] == [1]
        entry.record_observation(5, T0 + 9)
        assert list(reader.entries()) == [LossEntry(2, 15, T0, T0 + 9, 1, 2, "c", "s")]
