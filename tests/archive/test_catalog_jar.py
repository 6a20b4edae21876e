"""archive.catalog across implementations: 1.15.1's CatalogTool reads a catalog we wrote, and our reader reads one
written by 1.15.1's own Catalog class (CatalogWriter.java)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from driver.archive.catalog import Catalog
from driver.archive.codecs import RecordingDescriptor

pytestmark = pytest.mark.interop

RECORDINGS = [
    RecordingDescriptor(
        0, 0, 0, 1_600_000_000_000, 1_600_000_000_500, 0, 65536 * 3 + 96, 7, 1 << 27, 65536, 1408, 42, 1001,
        "aeron:udp?endpoint=localhost:40123", "aeron:udp?endpoint=localhost:40123|term-length=65536",
        "127.0.0.1:55555",
    ),
    RecordingDescriptor(
        0, 0, 1, 1_600_000_001_000, -1, 10560, -1, -5, 1 << 16, 65536, 4096, -9, 2, "aeron:ipc",
        "aeron:ipc?tags=7", "aeron:ipc",
    ),
    RecordingDescriptor(
        77, 88, 2, 1_600_000_002_000, -1, 1 << 40, -1, 0, 1 << 30, 1 << 30, 65504, 2**31 - 1, -(2**31),
        "aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1", "aeron:udp?endpoint=224.0.1.1:40456",
        "aeron:ipc",
    ),
]  # fmt: skip


def java_to_string(d: RecordingDescriptor) -> str:
    """RecordingDescriptorDecoder.toString() of 1.15.1, what CatalogTool describe prints."""
    fields = (
        f"controlSessionId={d.control_session_id}|correlationId={d.correlation_id}|recordingId={d.recording_id}|"
        f"startTimestamp={d.start_timestamp}|stopTimestamp={d.stop_timestamp}|startPosition={d.start_position}|"
        f"stopPosition={d.stop_position}|initialTermId={d.initial_term_id}|"
        f"segmentFileLength={d.segment_file_length}|termBufferLength={d.term_buffer_length}|"
        f"mtuLength={d.mtu_length}|sessionId={d.session_id}|streamId={d.stream_id}|"
        f"strippedChannel='{d.stripped_channel}'|originalChannel='{d.original_channel}'|"
        f"sourceIdentity='{d.source_identity}'"
    )
    return f"[RecordingDescriptor](sbeTemplateId=22|sbeSchemaId=101|sbeSchemaVersion=0|sbeBlockLength=80):{fields}"


def write_ours(archive_dir: Path) -> None:
    with Catalog(archive_dir, max_entries=16) as catalog:
        for d in RECORDINGS:
            recording_id = catalog.add_new_recording(
                start_position=d.start_position,
                start_timestamp=d.start_timestamp,
                initial_term_id=d.initial_term_id,
                segment_file_length=d.segment_file_length,
                term_buffer_length=d.term_buffer_length,
                mtu_length=d.mtu_length,
                session_id=d.session_id,
                stream_id=d.stream_id,
                stripped_channel=d.stripped_channel,
                original_channel=d.original_channel,
                source_identity=d.source_identity,
            )
            assert recording_id == d.recording_id
        catalog.recording_stopped(0, RECORDINGS[0].stop_position, RECORDINGS[0].stop_timestamp)
        catalog.invalidate(1)
        catalog.extend_recording(2, 77, 88)


def catalog_tool(archive_java: Any, archive_dir: Path, *args: Any) -> str:
    result = archive_java.run("io.aeron.archive.CatalogTool", archive_dir, *args, timeout=60.0, check=True)
    return result.stdout


def test_catalog_tool_reads_our_catalog(archive_java: Any, tmp_path: Path) -> None:
    write_ours(tmp_path)
    assert catalog_tool(archive_java, tmp_path, "count-entries").split() == ["3"]
    assert catalog_tool(archive_java, tmp_path, "max-entries").split() == ["16"]
    for d in RECORDINGS:
        assert catalog_tool(archive_java, tmp_path, "describe", d.recording_id).strip() == java_to_string(d)
    assert catalog_tool(archive_java, tmp_path, "describe", 3).strip() == ""


def test_catalog_tool_grows_our_catalog_and_we_read_it(archive_java: Any, tmp_path: Path) -> None:
    write_ours(tmp_path)
    assert catalog_tool(archive_java, tmp_path, "max-entries", 40).split() == ["40"]
    with Catalog(tmp_path, read_only=True) as catalog:
        assert (catalog.max_entries, catalog.count_entries) == (40, 3)


def test_we_read_a_catalog_written_by_1_15_1(archive_java: Any, tmp_path: Path) -> None:
    result = archive_java.run("io.aeron.archive.CatalogWriter", tmp_path, timeout=60.0, check=True)
    assert result.stdout.split() == ["3", "16"]
    ours = tmp_path / "ours"
    ours.mkdir()
    write_ours(ours)
    theirs_bytes = (tmp_path / "archive.catalog").read_bytes()
    assert theirs_bytes == (ours / "archive.catalog").read_bytes()
    with Catalog(tmp_path, read_only=True) as catalog:
        assert (catalog.count_entries, catalog.max_entries) == (3, 16)
        entries = list(catalog)
    assert [e.valid for e in entries] == [True, False, True]
    assert [e.descriptor for e in entries] == RECORDINGS
