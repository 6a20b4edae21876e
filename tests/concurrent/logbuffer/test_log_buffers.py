"""Creating and mapping log buffer files as the 1.15.1 driver and clients do (docs/logbuffer.md section 1)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.concurrent.logbuffer.log_buffers import LogBufferError, LogBuffers, create_log_file

MIB = 1024 * 1024


def _publication(log: LogBuffers, initial_term_id: int = 5) -> None:
    lbd.initialise_publication_metadata(
        log.meta_data_buffer,
        session_id=1,
        stream_id=2,
        initial_term_id=initial_term_id,
        mtu_length=1408,
        term_length=log.term_length,
        page_size=4096,
        correlation_id=3,
    )


@pytest.mark.parametrize(
    ("term_length", "expected"),
    [(64 * 1024, 200_704), (16 * MIB, 50_335_744), (64 * MIB, 201_330_688)],
)
def test_file_length_is_compute_log_length(tmp_path: Path, term_length: int, expected: int) -> None:
    path = tmp_path / "a.logbuffer"
    create_log_file(path, term_length, 4096, sparse=True)
    assert path.stat().st_size == expected


def test_term_length_and_page_size_are_written_at_creation(tmp_path: Path) -> None:
    path = tmp_path / "a.logbuffer"
    create_log_file(path, 128 * 1024, 4096, sparse=True)
    data = path.read_bytes()
    meta = data[-4096:]
    assert struct.unpack_from("<ii", meta, lbd.LOG_TERM_LENGTH_OFFSET) == (128 * 1024, 4096)
    rest = bytearray(data)
    struct.pack_into("<ii", rest, len(data) - 4096 + lbd.LOG_TERM_LENGTH_OFFSET, 0, 0)
    assert rest == bytes(len(data))  # nothing else is written


def test_non_sparse_files_have_every_page_allocated(tmp_path: Path) -> None:
    sparse, full = tmp_path / "sparse.logbuffer", tmp_path / "full.logbuffer"
    create_log_file(sparse, 1 * MIB, 4096, sparse=True)
    create_log_file(full, 1 * MIB, 4096, sparse=False)
    length = lbd.compute_log_length(1 * MIB, 4096)
    assert full.stat().st_blocks * 512 >= length
    assert sparse.stat().st_blocks * 512 < length // 2
    assert full.read_bytes()[: 3 * MIB] == bytes(3 * MIB)


def test_create_refuses_existing_files_and_bad_lengths(tmp_path: Path) -> None:
    path = tmp_path / "a.logbuffer"
    create_log_file(path, 64 * 1024, 4096, sparse=True)
    with pytest.raises(FileExistsError):
        create_log_file(path, 64 * 1024, 4096, sparse=True)
    with pytest.raises(ValueError, match="not a power of 2: length=100000"):
        create_log_file(tmp_path / "b.logbuffer", 100_000, 4096, sparse=True)
    with pytest.raises(ValueError, match="page size=1000"):
        create_log_file(tmp_path / "c.logbuffer", 64 * 1024, 1000, sparse=True)
    assert not (tmp_path / "b.logbuffer").exists()


def test_mapping_exposes_three_terms_and_the_trailing_metadata(tmp_path: Path) -> None:
    path = tmp_path / "a.logbuffer"
    create_log_file(path, 64 * 1024, 4096, sparse=False)
    with LogBuffers(str(path)) as log:
        assert log.term_length == 64 * 1024
        assert [t.capacity for t in log.term_buffers] == [64 * 1024] * 3
        assert log.meta_data_buffer.capacity == 4096
        _publication(log)
        for i, term in enumerate(log.term_buffers):
            term.put_int32(0, 1000 + i)
        log.meta_data_buffer.put_int64(lbd.LOG_CORRELATION_ID_OFFSET, 99)
    data = path.read_bytes()
    assert [struct.unpack_from("<i", data, i * 64 * 1024)[0] for i in range(3)] == [1000, 1001, 1002]
    assert struct.unpack_from("<q", data, len(data) - 4096 + 256)[0] == 99


def test_two_mappings_of_one_file_share_memory(tmp_path: Path) -> None:
    path = tmp_path / "a.logbuffer"
    create_log_file(path, 64 * 1024, 4096, sparse=True)
    with LogBuffers(path) as writer, LogBuffers(path) as reader:
        writer.term_buffers[2].put_int32_release(64, 12345)
        assert reader.term_buffers[2].get_int32_acquire(64) == 12345
        lbd.set_is_connected(writer.meta_data_buffer, True)
        assert lbd.is_connected(reader.meta_data_buffer)


def test_metadata_at_the_end_of_a_page_aligned_file(tmp_path: Path) -> None:
    # 64 KiB terms with 64 KiB pages: the file is 256 KiB and the metadata is its last 4 KiB, not at 3 * T.
    path = tmp_path / "a.logbuffer"
    create_log_file(path, 64 * 1024, 64 * 1024, sparse=True)
    assert path.stat().st_size == 256 * 1024
    with LogBuffers(path) as log:
        assert lbd.page_size(log.meta_data_buffer) == 64 * 1024
        lbd.set_mtu_length(log.meta_data_buffer, 4096)
    assert struct.unpack_from("<i", path.read_bytes(), 256 * 1024 - 4096 + 272)[0] == 4096


def _write_meta_int(path: Path, offset: int, value: int) -> None:
    size = path.stat().st_size
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, struct.pack("<i", value), size - 4096 + offset)
    finally:
        os.close(fd)


def test_invalid_metadata_is_rejected_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.logbuffer"
    create_log_file(path, 64 * 1024, 4096, sparse=True)
    _write_meta_int(path, lbd.LOG_TERM_LENGTH_OFFSET, 65536 + 32)
    with pytest.raises(LogBufferError, match=r"bad\.logbuffer.*not a power of 2: length=65568"):
        LogBuffers(path)
    _write_meta_int(path, lbd.LOG_TERM_LENGTH_OFFSET, 65536)
    _write_meta_int(path, lbd.LOG_PAGE_SIZE_OFFSET, 0)
    with pytest.raises(LogBufferError, match=r"bad\.logbuffer.*page size=0"):
        LogBuffers(path)
    _write_meta_int(path, lbd.LOG_PAGE_SIZE_OFFSET, 4096)
    _write_meta_int(path, lbd.LOG_TERM_LENGTH_OFFSET, 128 * 1024)
    with pytest.raises(
        LogBufferError, match=r"bad\.logbuffer is 200704 bytes, too short for 3 terms of 131072"
    ):
        LogBuffers(path)


def test_short_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "short.logbuffer"
    path.write_bytes(bytes(100))
    with pytest.raises(LogBufferError, match=r"short\.logbuffer is 100 bytes"):
        LogBuffers(path)
    with pytest.raises(FileNotFoundError):
        LogBuffers(tmp_path / "missing.logbuffer")


def test_close_releases_buffers_then_mapping_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "a.logbuffer"
    create_log_file(path, 64 * 1024, 4096, sparse=True)
    log = LogBuffers(path)
    term = log.term_buffers[0]
    assert not log.is_closed
    log.close()
    assert log.is_closed
    assert term.view is None  # the slices are released with their parent
    log.close()
    assert "closed" in repr(log)
