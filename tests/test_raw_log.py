"""Log files the driver creates: 1.15.1 names and their lifecycle."""

from __future__ import annotations

from pathlib import Path

from driver.concurrent.logbuffer import log_buffer_descriptor as lbd
from driver.raw_log import RawLog, log_file_name


def test_names_use_java_hex_for_session_stream_and_correlation() -> None:
    # As the real 1.15.1 driver: UDP-00000000-0-7f000001-40456-38c8e1df-3e9-2.logbuffer
    assert log_file_name("UDP-00000000-0-7f000001-40456", 952689119, 1001, 2) == (
        "UDP-00000000-0-7f000001-40456-38c8e1df-3e9-2.logbuffer"
    )
    assert log_file_name("ipc", -1, 10, -2) == "ipc-ffffffff-a-fffffffffffffffe.logbuffer"


def test_raw_log_maps_a_new_log_and_free_deletes_it(tmp_path: Path) -> None:
    path = tmp_path / "publications" / log_file_name("ipc", 7, 8, 9)
    path.parent.mkdir()
    raw_log = RawLog(path, 64 * 1024, 4096, sparse=False)
    assert path.stat().st_size == 3 * 64 * 1024 + 4096
    assert raw_log.file_name == str(path.resolve())
    assert lbd.term_length(raw_log.meta_data) == 64 * 1024
    assert len(raw_log.term_buffers) == 3
    assert raw_log.free()
    assert not path.exists()


def test_a_sparse_log_is_allocated_as_it_is_written_and_released_terms_read_as_zeros(tmp_path: Path) -> None:
    sparse_path, full_path = tmp_path / "sparse.logbuffer", tmp_path / "full.logbuffer"
    term_length = 1024 * 1024
    sparse = RawLog(sparse_path, term_length, 4096, sparse=True)
    full = RawLog(full_path, term_length, 4096, sparse=False)
    try:
        assert sparse_path.stat().st_size == full_path.stat().st_size == 3 * term_length + 4096
        assert sparse_path.stat().st_blocks * 512 <= 64 * 1024  # the metadata, not the terms
        assert full_path.stat().st_blocks * 512 >= 3 * term_length
        full.term_buffers[1].put_bytes(0, b"\x01" * 4096)
        full.release_terms()  # a drained publication's linger holds no term memory
        assert full_path.stat().st_blocks * 512 <= 64 * 1024
        assert not any(full.term_buffers[1].get_bytes(0, 4096))
        assert lbd.term_length(full.meta_data) == term_length  # the metadata stays
    finally:
        sparse.free()
        full.free()
