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
