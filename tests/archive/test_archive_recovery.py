"""Crash safety (docs/archive.md sections 7 and 12): an archive killed with SIGKILL while recording recovers,
at its next start, every message that reached its segment files, for recordings that started term aligned or
not; and a failed write stops a recording at what is on disk."""

from __future__ import annotations

import errno
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from driver.archive.catalog import Catalog
from driver.archive.codecs import (
    RecordingPositionRequest,
    SourceLocation,
    StartRecordingRequest,
    StopPositionRequest,
)
from driver.archive.recording_writer import RecordingWriteError, RecordingWriter
from driver.archive.segment_file import segment_path
from driver.client import Aeron
from driver.concurrent.atomic_buffer import AtomicBuffer
from driver.concurrent.cnc_file import CNC_FILE
from tests.support import free_port, new_aeron_dir, wait_for
from tests.support.archive_control import ArchiveControl

pytestmark = pytest.mark.slow

TERM_LENGTH = 64 * 1024
MESSAGE_LENGTH = 1000


def start_driver(aeron_dir: Path, archive_dir: Path, log: Path) -> subprocess.Popen:
    props = {
        "aeron.archive.dir": archive_dir,
        "aeron.archive.segment.file.length": TERM_LENGTH,
        "aeron.archive.control.channel": f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        "aeron.archive.recording.events.channel": f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
        "aeron.ipc.term.buffer.length": TERM_LENGTH,
    }
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "driver", "run", "--dir", str(aeron_dir), "--archive"]
            + [f"-D{k}={v}" for k, v in props.items()],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wait_for(lambda: "archive in" in log.read_text() and (aeron_dir / CNC_FILE).exists(), 30, log.read_text())
    return proc


def test_kill_during_recording_then_restart_recovers_every_written_message(tmp_path: Path) -> None:
    archive_dir = tmp_path / "archive"
    log = tmp_path / "driver.log"
    starts = (0, 10560, TERM_LENGTH + 4096)
    recorded: dict[int, int] = {}
    first_dir = new_aeron_dir(tmp_path)
    proc = start_driver(first_dir, archive_dir, log)
    try:
        with Aeron.connect(first_dir) as aeron:
            control = ArchiveControl(aeron)
            publications = []
            for index, start in enumerate(starts):
                term_id = 5 + start // TERM_LENGTH
                channel = (
                    f"aeron:ipc?init-term-id=5|term-id={term_id}|term-offset={start % TERM_LENGTH}"
                    f"|term-length={TERM_LENGTH}"
                )
                stream_id = 4000 + index
                publications.append(aeron.add_exclusive_publication(channel, stream_id))
                assert (
                    control.request(StartRecordingRequest, stream_id, SourceLocation.LOCAL, "aeron:ipc").code
                    == 0
                )
            for recording_id, publication in enumerate(publications):
                for i in range(150):  # over two segment ends, with padding at each term end
                    data = struct.pack("<q", i) + bytes(MESSAGE_LENGTH - 8)
                    wait_for(lambda d=data, p=publication: p.offer(d) > 0, 10, "offer")
                target = publication.position
                wait_for(
                    lambda r=recording_id, t=target: (
                        control.request(RecordingPositionRequest, r).relevant_id == t
                    ),
                    10,
                    f"recording {recording_id} up to {target}",
                )
                recorded[recording_id] = target
            # Killed while the recordings run: once this client left, its publications' end of stream would
            # let the archive stop them (stop positions in the catalog) before a later kill.
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    with Catalog(archive_dir, read_only=True) as catalog:
        assert [catalog.stop_position(r) for r in recorded] == [-1] * len(recorded)

    second_dir = new_aeron_dir(tmp_path)
    proc = start_driver(second_dir, archive_dir, log)
    try:
        with Aeron.connect(second_dir) as aeron:
            control = ArchiveControl(aeron)
            for recording_id, target in recorded.items():
                assert control.request(StopPositionRequest, recording_id).relevant_id == target
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, log.read_text()[-3000:]
    with Catalog(archive_dir, read_only=True) as catalog:
        for recording_id, start in enumerate(starts):
            assert catalog.descriptor(recording_id).start_position == start


def test_a_failed_write_records_nothing_past_what_is_on_disk(tmp_path: Path) -> None:
    calls: list[int] = []

    def disk_full_after_one_block(fd: int, data: Any, offset: int) -> int:
        calls.append(offset)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.pwrite(fd, data, offset)

    writer = RecordingWriter(tmp_path, 3, 0, TERM_LENGTH, TERM_LENGTH, pwrite=disk_full_after_one_block)
    writer.init(0)
    term = AtomicBuffer(bytearray(TERM_LENGTH))
    frame = struct.pack("<iBBHiiiiq", 64, 0, 0xC0, 1, 0, 1, 2, 5, 0) + bytes(32)
    term.view[0:64] = frame
    term.view[64:128] = frame
    writer.on_block(term, 0, 64, 1, 5)
    with pytest.raises(RecordingWriteError, match="No space left on device"):
        writer.on_block(term, 64, 64, 1, 5)
    assert writer.position == 64  # the block that failed is not counted
    writer.close()
    term.close()
    with open(segment_path(tmp_path, 3, 0), "rb") as f:
        assert f.read(128) == frame + bytes(64)
    time.sleep(0)
