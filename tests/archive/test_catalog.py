"""archive.catalog written and read by driver.archive.catalog on real mapped files (docs/archive.md section 10)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from driver.archive.catalog import (
    CATALOG_FILE_NAME,
    DEFAULT_MAX_ENTRIES,
    DESCRIPTOR_HEADER_LENGTH,
    MAX_ENTRIES,
    NULL_POSITION,
    NULL_RECORD_ID,
    Catalog,
    CatalogError,
    catalog_length,
    max_strings_combined_length,
)
from driver.archive.codecs import RecordingDescriptor, codec


def recording(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "start_position": 0,
        "start_timestamp": 1_600_000_000_000,
        "initial_term_id": 7,
        "segment_file_length": 1 << 27,
        "term_buffer_length": 65536,
        "mtu_length": 1408,
        "session_id": 42,
        "stream_id": 1001,
        "stripped_channel": "aeron:udp?endpoint=localhost:40123",
        "original_channel": "aeron:udp?endpoint=localhost:40123|term-length=65536",
        "source_identity": "127.0.0.1:55555",
    }
    fields.update(overrides)
    return fields


def test_new_catalog_is_sized_sparse_with_its_header(tmp_path: Path) -> None:
    with Catalog(tmp_path) as catalog:
        assert catalog.count_entries == 0
        assert catalog.max_entries == DEFAULT_MAX_ENTRIES
    data = (tmp_path / CATALOG_FILE_NAME).read_bytes()
    assert len(data) == 8_389_632 == catalog_length(DEFAULT_MAX_ENTRIES)
    assert struct.unpack_from("<ii", data) == (0, 1024)
    assert (tmp_path / CATALOG_FILE_NAME).stat().st_blocks * 512 < len(data)
    assert max_strings_combined_length(1024) == 900
    assert catalog_length(MAX_ENTRIES) == 2**31 - 1


def test_entries_are_laid_out_at_1024_per_recording(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=4) as catalog:
        assert catalog.add_new_recording(**recording()) == 0
        assert catalog.add_new_recording(**recording(session_id=43, start_position=4096)) == 1
    data = (tmp_path / CATALOG_FILE_NAME).read_bytes()
    assert len(data) == 5 * 1024
    descriptor_codec = codec(RecordingDescriptor)
    for recording_id in (0, 1):
        entry = 1024 * (recording_id + 1)
        length, valid = struct.unpack_from("<ib", data, entry)
        assert valid == 1
        d = descriptor_codec.decode_body(data, entry + DESCRIPTOR_HEADER_LENGTH, 80)
        assert length == descriptor_codec.body_length(d)
        assert d.recording_id == recording_id
        assert (d.stop_position, d.stop_timestamp) == (NULL_POSITION, -1)
        assert (d.control_session_id, d.correlation_id) == (0, 0)
    assert struct.unpack_from("<i", data, 3 * 1024) == (0,)


def test_updates_survive_reopen(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=8) as catalog:
        for i in range(3):
            catalog.add_new_recording(**recording(stream_id=i))
        catalog.recording_stopped(0, 8192, 1_600_000_000_900)
        catalog.recording_stopped(1, 4096)  # truncate: stop timestamp untouched
        catalog.extend_recording(0, 11, 12)
        catalog.invalidate(2)
    with Catalog(tmp_path, read_only=True) as catalog:
        assert catalog.max_entries == 8
    with Catalog(tmp_path) as catalog:
        assert catalog.max_entries == DEFAULT_MAX_ENTRIES  # max(file size, size for max_entries), as 1.15.1
        assert catalog.count_entries == 3
        first = catalog.entry(0)
        assert first is not None and first.valid
        assert first.descriptor[:2] == (11, 12)
        assert catalog.stop_position(0) == NULL_POSITION
        assert catalog.entry(1).descriptor.stop_position == 4096  # type: ignore[union-attr]
        assert catalog.entry(1).descriptor.stop_timestamp == -1  # type: ignore[union-attr]
        assert catalog.descriptor(2) is None and not catalog.has_recording(2)
        assert [e.recording_id for e in catalog] == [0, 1, 2]
        assert catalog.entry(3) is None


def test_growing_keeps_entries(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=2) as catalog:
        catalog.add_new_recording(**recording())
        catalog.add_new_recording(**recording())
    with Catalog(tmp_path, max_entries=10) as catalog:
        assert (catalog.max_entries, catalog.count_entries) == (10, 2)
        assert catalog.add_new_recording(**recording()) == 2


def test_a_full_catalog_grows_while_open(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=2) as catalog:
        for expected in range(5):
            assert catalog.add_new_recording(**recording(session_id=expected)) == expected
        catalog.recording_stopped(1, 4096, 5)
        assert catalog.max_entries == 8
        assert (tmp_path / CATALOG_FILE_NAME).stat().st_size == catalog_length(8)
        assert [e.descriptor.session_id for e in catalog] == list(range(5))
    with Catalog(tmp_path, max_entries=2) as catalog:  # reopened at the grown size, as 1.15.1 does
        assert (catalog.max_entries, catalog.count_entries) == (8, 5)
        assert catalog.stop_position(1) == 4096


def test_strings_longer_than_an_entry_are_refused(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=2) as catalog:
        catalog.add_new_recording(**recording(stripped_channel="a" * 300, original_channel="b" * 300,
                                              source_identity="c" * 300))  # fmt: skip
        with pytest.raises(CatalogError, match="exceeds max allowed:900"):
            catalog.add_new_recording(**recording(stripped_channel="a" * 301, original_channel="b" * 300,
                                                  source_identity="c" * 300))  # fmt: skip
        assert catalog.count_entries == 1


def test_find_last(tmp_path: Path) -> None:
    with Catalog(tmp_path, max_entries=8) as catalog:
        for session_id in (1, 2, 1, 1):
            catalog.add_new_recording(**recording(session_id=session_id))
        catalog.invalidate(3)
        assert catalog.find_last(0, 1, 1001, "localhost:40123") == 2
        assert catalog.find_last(3, 1, 1001, "") == NULL_RECORD_ID
        assert catalog.find_last(0, 2, 1001, "term-length") == 1
        assert catalog.find_last(0, 2, 1001, "nowhere") == NULL_RECORD_ID


def test_bad_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="no catalog"):
        Catalog(tmp_path, read_only=True)
    with pytest.raises(CatalogError, match="max entries must be between 1 and"):
        Catalog(tmp_path, max_entries=0)
    with Catalog(tmp_path, max_entries=1):
        pass
    path = tmp_path / CATALOG_FILE_NAME
    data = bytearray(path.read_bytes())
    struct.pack_into("<i", data, 0, 3)
    path.write_bytes(data)
    with pytest.raises(CatalogError, match="catalog file version 3 does not match software:0"):
        Catalog(tmp_path)


@pytest.mark.parametrize("sync_level", [0, 1, 2])
def test_sync_levels(tmp_path: Path, sync_level: int) -> None:
    with Catalog(tmp_path, max_entries=2, file_sync_level=sync_level) as catalog:
        catalog.add_new_recording(**recording())
        catalog.recording_stopped(0, 64, 5)
    with Catalog(tmp_path, read_only=True) as catalog:
        assert catalog.stop_position(0) == 64
