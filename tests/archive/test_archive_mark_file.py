"""archive-mark.dat on real mapped files (docs/archive.md section 11), and across implementations with 1.15.1's
ArchiveMarkFile and MarkFileHeaderDecoder (MarkFileTool.java)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

from driver.archive.archive_mark_file import FILENAME, ArchiveMarkFile, MarkFileError
from driver.archive.codecs.mark import MarkFileHeader

SETTINGS: dict[str, Any] = {
    "control_channel": "aeron:udp?endpoint=localhost:8010",
    "control_stream_id": 10,
    "local_control_channel": "aeron:ipc",
    "local_control_stream_id": 11,
    "events_channel": "aeron:udp?endpoint=localhost:8030",
    "events_stream_id": 30,
    "aeron_directory": "/dev/shm/aeron-test",
}
EXPECTED = MarkFileHeader(
    0, 1_700_000_000_123, 1_699_999_999_000, 4242, 10, 11, 30,
    "aeron:udp?endpoint=localhost:8010", "aeron:ipc", "aeron:udp?endpoint=localhost:8030", "/dev/shm/aeron-test",
)  # fmt: skip


def create(archive_dir: Path, now_ms: int = 1_699_999_999_000, **overrides: Any) -> ArchiveMarkFile:
    return ArchiveMarkFile.create(archive_dir, now_ms=now_ms, pid=4242, **{**SETTINGS, **overrides})


def test_created_layout_and_timestamp_updates(tmp_path: Path) -> None:
    with create(tmp_path) as mark_file:
        mark_file.update_activity_timestamp(1_700_000_000_123)
        with ArchiveMarkFile.open(tmp_path) as reader:
            assert reader.header() == EXPECTED
            mark_file.update_activity_timestamp(1_700_000_000_124)
            assert reader.activity_timestamp() == 1_700_000_000_124
    data = (tmp_path / FILENAME).read_bytes()
    assert len(data) == 1024  # align(128 + 16 + 94, 1024)
    assert struct.unpack_from("<iiqqqiii", data) == (
        0,
        0,
        1_700_000_000_124,
        1_699_999_999_000,
        4242,
        10,
        11,
        30,
    )
    assert data[128:132] == struct.pack("<I", 33)


def test_pid_defaults_to_ours_and_long_settings_grow_the_file(tmp_path: Path) -> None:
    settings = {k: v for k, v in SETTINGS.items() if k != "aeron_directory"}
    with ArchiveMarkFile.create(tmp_path, now_ms=5, aeron_directory="/d" * 500, **settings) as mark_file:
        assert mark_file.header().pid == os.getpid()
    assert (tmp_path / FILENAME).stat().st_size == 2048


def test_a_file_of_another_version_is_refused(tmp_path: Path) -> None:
    create(tmp_path).close()
    path = tmp_path / FILENAME
    data = bytearray(path.read_bytes())
    struct.pack_into("<i", data, 0, 1)
    path.write_bytes(data)
    with pytest.raises(MarkFileError, match="mark file version 1 does not match software:0"):
        create(tmp_path)
    with pytest.raises(MarkFileError, match="mark file version 1"):
        ArchiveMarkFile.open(tmp_path)
    assert path.read_bytes() == data  # refused without touching it
    path.write_bytes(b"\0" * 100)
    with pytest.raises(MarkFileError, match="too short"):
        ArchiveMarkFile.open(tmp_path)


@pytest.mark.interop
def test_1_15_1_decodes_ours(archive_java: Any, tmp_path: Path) -> None:
    with create(tmp_path) as mark_file:
        mark_file.update_activity_timestamp(1_700_000_000_123)
    out = archive_java.run("MarkFileTool", "read", tmp_path, timeout=60.0, check=True).stdout.splitlines()
    assert out[0] == "1024"
    assert out[1] == (
        "[MarkFileHeader](sbeTemplateId=200|sbeSchemaId=100|sbeSchemaVersion=0|sbeBlockLength=128):version=0|"
        "activityTimestamp=1700000000123|startTimestamp=1699999999000|pid=4242|controlStreamId=10|"
        "localControlStreamId=11|eventsStreamId=30|controlChannel='aeron:udp?endpoint=localhost:8010'|"
        "localControlChannel='aeron:ipc'|eventsChannel='aeron:udp?endpoint=localhost:8030'|"
        "aeronDirectory='/dev/shm/aeron-test'"
    )


@pytest.mark.interop
def test_we_read_the_one_1_15_1_writes(archive_java: Any, tmp_path: Path) -> None:
    archive_java.run("MarkFileTool", "write", tmp_path, timeout=60.0, check=True)
    with ArchiveMarkFile.open(tmp_path) as reader:
        assert reader.header() == EXPECTED
    ours = tmp_path / "ours"
    ours.mkdir()
    with create(ours) as mark_file:
        mark_file.update_activity_timestamp(1_700_000_000_123)
    assert (ours / FILENAME).read_bytes() == (tmp_path / FILENAME).read_bytes()
