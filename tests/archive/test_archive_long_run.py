"""The archive left running (docs/archive.md section 19): our archive on an embedded driver, driven by the Python
client. A purged recording's entry is invalid as 1.15.1 marks one, its files are deleted off the archive's loop, a
full catalog is grown instead of refusing a recording, and a client that dies takes its control session and
replays with it."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from driver.archive.archive import Archive
from driver.archive.archive_context import ArchiveContext
from driver.archive.catalog import Catalog
from driver.archive.checksums import (
    ChecksumWriter,
    ReplayChecker,
    checksum_path,
    read_checksums,
    truncate_checksums,
    verify_checksums,
)
from driver.archive.client import AeronArchive, ArchiveClientContext, ArchiveError, SourceLocation
from driver.archive.replay_session import RecordingSummary
from driver.archive.segment_file import recording_files, recover_stop_position, segment_path, segment_position
from driver.archive_launcher import connect_embedded
from driver.client import Aeron, ExclusivePublication
from driver.concurrent.frame_checksums import crc32c, frame_checksums
from driver.util.bit_util import align
from driver.util.files import FilePermissions
from tests.support import EmbeddedDriver, free_port, new_aeron_dir, wait_for

TERM_LENGTH = 64 * 1024
ROOT = Path(__file__).resolve().parents[2]
IPC = "aeron:ipc"


@dataclass
class Env:
    driver: EmbeddedDriver
    archive: Archive
    aeron: Aeron
    client: AeronArchive
    archive_dir: Path
    stream_ids: Iterator[int]
    control_channel: str


@contextmanager
def running_archive(tmp_path: Path, archive_dir: Path, settings: dict[str, Any]) -> Iterator[Env]:
    """Our archive on an embedded driver, with a client; ``settings`` are ArchiveContext fields, and under
    "driver" DriverContext fields."""
    settings = dict(settings)
    driver_settings = settings.pop("driver", {})
    control, events, response = (f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}" for _ in range(3))
    ctx = ArchiveContext(
        archive_dir=str(archive_dir),
        control_channel=control,
        recording_events_channel=events,
        threading_mode="SHARED",
        **{"segment_file_length": 64 * 1024, **settings},
    )
    aeron_dir = new_aeron_dir(tmp_path)
    driver = EmbeddedDriver(
        aeron_dir,
        on_created=lambda d: connect_embedded(d, ctx),
        spies_simulate_connection=True,
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
        **driver_settings,
    )
    try:
        aeron = Aeron.connect(aeron_dir)
        try:
            client = AeronArchive.connect(
                aeron,
                context=ArchiveClientContext(
                    control_request_channel=control,
                    control_response_channel=response,
                    recording_events_channel=events,
                ),
            )
            try:
                yield Env(
                    driver, driver.attached, aeron, client, archive_dir, iter(range(7001, 8000)), control
                )
            finally:
                client.close()
        finally:
            aeron.close()
    finally:
        driver.close()


@pytest.fixture
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Env]:
    with running_archive(tmp_path, tmp_path / "archive", getattr(request, "param", {})) as env:
        yield env


def start_recording(env: Env) -> tuple[int, ExclusivePublication]:
    stream_id = next(env.stream_ids)
    publication = env.aeron.add_exclusive_publication(IPC, stream_id)
    env.client.start_recording(IPC, stream_id, SourceLocation.LOCAL)
    recording_id = (
        wait_for(
            lambda: env.client.find_last_matching_recording(0, IPC, stream_id, publication.session_id) + 1,
            10,
            "the recording to start",
        )
        - 1
    )
    return recording_id, publication


def record(env: Env, messages: int = 200) -> int:
    """A stopped recording of ``messages`` messages of 1 KiB (more than one 64 KiB segment)."""
    recording_id, publication = start_recording(env)
    for i in range(messages):
        data = bytes([i & 0xFF]) * 1024
        wait_for(lambda d=data: publication.offer(d) > 0, 10, f"offer {i}")
    end = publication.position
    wait_for(lambda: env.client.get_recording_position(recording_id) == end, 10, "recorded to the end")
    env.client.stop_recording(IPC, publication.stream_id)
    wait_for(lambda: env.client.get_stop_position(recording_id) == end, 10, "the stop position")
    publication.close()
    return recording_id


def test_purge_invalidates_the_entry_and_deletes_every_file(env: Env) -> None:
    kept = record(env)
    purged = record(env)
    files = recording_files(env.archive_dir, purged)
    assert segment_path(env.archive_dir, purged, 1) in files
    assert env.archive_dir / f"{purged}.idx" in files
    assert env.client.purge_recording(purged) == len(files)
    wait_for(lambda: not any(path.exists() for path in files), 10, "the purged files to be deleted")
    assert env.client.list_recording(purged) is None
    assert [d.recording_id for d in env.client.list_recordings(0, 10)] == [kept]
    assert recording_files(env.archive_dir, kept)
    with pytest.raises(ArchiveError, match=f"unknown recording id {purged}"):
        env.client.purge_recording(purged)
    entry = env.archive.catalog.entry(purged)
    assert entry is not None and not entry.valid  # the entry stays, marked invalid as 1.15.1 marks one
    assert record(env) == purged + 1


def test_purge_is_refused_while_recording_or_replaying(env: Env) -> None:
    recording_id, publication = start_recording(env)
    with pytest.raises(ArchiveError, match=f"cannot purge active recording {recording_id}"):
        env.client.purge_recording(recording_id)
    env.client.stop_recording(IPC, publication.stream_id)
    publication.close()
    stopped = record(env)
    replay_stream = next(env.stream_ids)
    subscription = env.aeron.add_subscription(IPC, replay_stream)
    # A credit replay holds at its first limit until granted more, so it is still running when the purge comes.
    env.client.start_credit_replay(stopped, -1, -1, IPC, replay_stream, 0)
    with pytest.raises(ArchiveError, match=f"cannot purge recording with active replay {stopped}"):
        env.client.purge_recording(stopped)
    subscription.close()
    assert env.client.list_recording(stopped) is not None


@pytest.mark.parametrize("env", [{"max_catalog_entries": 2}], indirect=True)
def test_a_full_catalog_grows_while_recording(env: Env) -> None:
    ids = [record(env, 4) for _ in range(5)]
    assert ids == list(range(5))
    assert env.archive.catalog.max_entries == 8
    assert [d.recording_id for d in env.client.list_recordings(0, 10)] == ids


@pytest.mark.slow
def test_list_requests_are_answered_within_50ms_while_4gib_are_purged(env: Env) -> None:
    segment_length = 1 << 30
    count = 4
    if shutil.disk_usage(env.archive_dir).free < (count + 2) * segment_length:
        pytest.skip("less than 6 GiB free for 4 GiB of segments")
    recording_id = record(env, 4)
    for index in range(1, count + 1):  # real, allocated files: deleting them is real work for the file system
        fd = os.open(
            segment_path(env.archive_dir, recording_id, 100 + index), os.O_CREAT | os.O_WRONLY, 0o644
        )
        try:
            os.posix_fallocate(fd, 0, segment_length)
        finally:
            os.close(fd)
    files = recording_files(env.archive_dir, recording_id)
    assert sum(path.stat().st_blocks * 512 for path in files) >= count * segment_length

    def list_latency() -> float:
        asked = time.monotonic()
        env.client.list_recordings(0, 10)
        return time.monotonic() - asked

    # The same requests before the purge: on a machine too loaded to answer them within 50 ms anyway, the
    # purge cannot be judged.
    baseline = max(list_latency() for _ in range(200))
    if baseline >= 0.050:
        pytest.skip(
            f"the machine is too loaded: a list answer took {baseline * 1000:.0f} ms before the purge"
        )
    latencies: list[float] = []
    assert env.client.purge_recording(recording_id) == len(files)
    started = time.monotonic()
    while any(path.exists() for path in files):
        assert time.monotonic() - started < 30, "4 GiB of segments not deleted within 30 s"
        latencies.append(list_latency())
    assert latencies, "no list request was answered"
    assert max(latencies) < 0.050, f"slowest list answer {max(latencies) * 1000:.1f} ms"
    print(f"purge of 4 GiB: {time.monotonic() - started:.2f} s, {len(latencies)} lists, "
          f"slowest {max(latencies) * 1000:.1f} ms (before the purge {baseline * 1000:.1f} ms)")  # fmt: skip


def test_mediadriver_archive_purge(env: Env) -> None:
    recording_id = record(env, 4)
    files = recording_files(env.archive_dir, recording_id)

    def purge() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable, "-m", "driver", "archive", "purge", str(recording_id),
                "--aeron-dir", str(env.driver.aeron_dir),
                f"-Daeron.archive.control.channel={env.control_channel}",
                f"-Daeron.archive.control.response.channel=aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
            ],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
        )  # fmt: skip

    done = purge()
    assert done.returncode == 0, done.stderr
    assert f"recording {recording_id} purged: {len(files)} file(s)" in done.stdout
    wait_for(lambda: not any(path.exists() for path in files), 10, "the purged files to be deleted")
    again = purge()
    assert again.returncode == 1
    assert f"unknown recording id {recording_id}" in again.stderr and "Traceback" not in again.stderr


LIVENESS_S = 2.0
KILLED_CLIENT = """
import sys
from driver.archive.client import AeronArchive
from driver.client import Aeron

aeron_dir, recording_id, response_stream, replay_stream = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
aeron = Aeron.connect(aeron_dir)
archive = AeronArchive.connect(
    aeron, control_request_channel="aeron:ipc", control_request_stream_id=11,
    control_response_channel="aeron:ipc", control_response_stream_id=response_stream,
)
subscription = aeron.add_subscription("aeron:ipc", replay_stream)
archive.start_credit_replay(recording_id, -1, -1, "aeron:ipc", replay_stream, 0)  # held until granted: never ends
print("replaying", flush=True)
sys.stdin.read()
"""


# The driver checks client liveness on its timer (1 s by default): 100 ms keeps the check's own delay out of the
# bound being measured.
@pytest.mark.parametrize(
    "env",
    [{"driver": {"client_liveness_timeout_ns": int(LIVENESS_S * 1e9), "timer_interval_ns": 100_000_000}}],
    indirect=True,
)
def test_a_killed_clients_control_session_and_replay_end_within_its_liveness(env: Env) -> None:
    recording_id = record(env, 4)
    conductor = env.archive.conductor
    sessions_before = len(conductor._control_sessions)
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, str(env.driver.aeron_dir), str(recording_id),
         str(free_port("udp")), str(next(env.stream_ids))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, text=True,
    ) as child:  # fmt: skip
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "replaying"
            assert len(conductor.replays) == 1
            assert len(conductor._control_sessions) == sessions_before + 1
        finally:
            child.kill()
            killed = time.monotonic()
            child.wait(10)
    wait_for(
        lambda: not conductor.replays and len(conductor._control_sessions) == sessions_before,
        LIVENESS_S + 5,
        "the dead client's session and replay to end",
    )
    ended = time.monotonic() - killed
    print(
        f"the killed client's session and replay ended {ended:.2f} s after the kill (liveness {LIVENESS_S} s)"
    )
    assert ended <= LIVENESS_S + 1, f"ended {ended:.2f} s after the kill"
    assert not env.archive.replayer.sessions
    env.client.purge_recording(recording_id)  # nothing holds the recording any more


# -- checksums ----------------------------------------------------------------------------------------------------


def frame(term_id: int, term_offset: int, length: int, payload: int, frame_type: int = 1) -> bytearray:
    data = bytearray(align(length, 32))
    struct.pack_into("<iBBHiiii", data, 0, length, 0, 0xC0, frame_type, term_offset, 42, 9, term_id)
    data[32:length] = bytes([payload]) * (length - 32)
    return data


def test_crc32c_and_frame_checksums() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC32C check value
    block = frame(5, 0, 100, 1) + frame(5, 128, 32, 0) + frame(5, 160, 4096, 0, frame_type=0)
    block += bytes(4096 - 32)  # a padding frame's body: not covered
    entries = frame_checksums(block, 1000)
    assert entries["position"].tolist() == [1000, 1128, 1160]
    assert entries["length"].tolist() == [100, 32, 4096]
    assert entries["crc"].tolist() == [crc32c(block[:100]), crc32c(block[128:160]), crc32c(block[160:192])]


def test_frame_checksums_of_mixed_lengths_match_each_frame_alone() -> None:
    """Frames are checksummed several at a time: every length, and a padding frame among them, give each frame's
    own CRC."""
    lengths = [33, 64, 40, 1000, 32, 100, 47, 1408, 64, 64, 63, 96]
    block, starts = bytearray(), []
    for i, length in enumerate(lengths):
        starts.append(len(block))
        block += frame(1, len(block), length, i, frame_type=0 if i == 5 else 1)
    entries = frame_checksums(block, 64)
    covered = [32 if i == 5 else length for i, length in enumerate(lengths)]
    assert entries["position"].tolist() == [64 + start for start in starts]
    assert entries["crc"].tolist() == [crc32c(block[s : s + c]) for s, c in zip(starts, covered, strict=True)]


def message_frames(archive_dir: Path, d: Any) -> list[tuple[int, int]]:
    """(position, frame length) of the recording's data frames, walked from its segment files."""
    frames = []
    for index in range(
        segment_position(d.start_position, d.stop_position - 1, d.term_buffer_length, d.segment_file_length)[
            0
        ]
        + 1
    ):
        data = segment_path(archive_dir, d.recording_id, index).read_bytes()
        base = (
            index * d.segment_file_length + d.start_position - (d.start_position & (d.term_buffer_length - 1))
        )
        walked = frame_checksums(data, base, 0, min(len(data), d.stop_position - base))
        frames += [(int(e["position"]), int(e["length"])) for e in walked if e["length"] == 1056]
    return frames


def flip_byte(archive_dir: Path, d: Any, position: int) -> None:
    index, offset = segment_position(d.start_position, position, d.term_buffer_length, d.segment_file_length)
    with open(segment_path(archive_dir, d.recording_id, index), "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x10]))


def run_holding(entries: Any, position: int) -> Any:
    return entries[int(np.searchsorted(entries["position"], position, side="right")) - 1]


def test_the_recorder_writes_checksums_that_find_a_flipped_byte(env: Env) -> None:
    recording_id = record(env, 200)
    d = env.client.list_recording(recording_id)
    assert d is not None
    entries = read_checksums(env.archive_dir, recording_id)
    assert entries is not None
    # One entry per recorded block: runs of whole frames, end to end from the start to the stop position.
    ends = entries["position"] + ((entries["length"].astype(np.int64) + 31) & -32)
    assert int(entries["position"][0]) == d.start_position and int(ends[-1]) == d.stop_position
    assert entries["position"][1:].tolist() == ends[:-1].tolist()
    frames = message_frames(env.archive_dir, d)
    assert len(frames) == 200 and len(entries) < 200
    assert verify_checksums(env.archive_dir, d, d.stop_position) is None
    flipped = frames[150][0] + 500
    flip_byte(env.archive_dir, d, flipped)
    victim = run_holding(entries, flipped)
    problem = verify_checksums(env.archive_dir, d, d.stop_position)
    assert (
        problem
        == f"checksum mismatch at position {int(victim['position'])} (a run of {int(victim['length'])} bytes)"
    )


CRASHING_RECORDER = """
import sys
from driver.archive.archive_context import ArchiveContext
from driver.archive.client import AeronArchive, SourceLocation
from driver.archive_launcher import connect_embedded
from driver.client import Aeron
from tests.support import EmbeddedDriver, free_port

archive_dir, aeron_dir = sys.argv[1], sys.argv[2]
control = f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}"
ctx = ArchiveContext(archive_dir=archive_dir, control_channel=control, threading_mode="SHARED",
                     recording_events_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}",
                     segment_file_length=1 << 20)
driver = EmbeddedDriver(__import__("pathlib").Path(aeron_dir), on_created=lambda d: connect_embedded(d, ctx),
                        term_buffer_length=65536, ipc_term_buffer_length=65536)
aeron = Aeron.connect(driver.aeron_dir)
archive = AeronArchive.connect(aeron, control_request_channel=control,
                               control_response_channel=f"aeron:udp?endpoint=127.0.0.1:{free_port('udp')}")
publication = aeron.add_exclusive_publication("aeron:ipc", 9001)
archive.start_recording("aeron:ipc", 9001, SourceLocation.LOCAL)
sent = 0
while True:
    if publication.offer(bytes([0xAB]) * 992) > 0:  # frames of 1 KiB: none crosses a page
        sent += 1
        if sent == 2000:
            print("recording", flush=True)
"""


@pytest.mark.slow
def test_recovery_after_kill_9_stops_at_the_last_block_whose_checksum_holds(tmp_path: Path) -> None:
    archive_dir = tmp_path / "crashed"
    with subprocess.Popen(
        [sys.executable, "-c", CRASHING_RECORDER, str(archive_dir), str(new_aeron_dir(tmp_path))],
        stdout=subprocess.PIPE, cwd=ROOT, text=True,
    ) as child:  # fmt: skip
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "recording"
            time.sleep(0.3)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(10)
    with Catalog(archive_dir, read_only=True) as catalog:
        d = catalog.descriptor(0)
    assert d is not None and d.stop_position == -1
    entries = read_checksums(archive_dir, 0)
    assert entries is not None and int(entries["position"][-1] + entries["length"][-1]) >= 2000 * 1024
    # A torn tail: the last checksummed block has its first frame's header but the kernel kept only part of the
    # rest.
    last = entries[-1]
    index, offset = segment_position(
        d.start_position, int(last["position"]), d.term_buffer_length, d.segment_file_length
    )
    with open(segment_path(archive_dir, 0, index), "r+b") as f:
        f.seek(offset + 512)
        f.write(bytes(int(last["length"]) - 512))
    scanned = recover_stop_position(
        archive_dir, 0, d.start_position, d.term_buffer_length, d.segment_file_length
    )
    # The frame scan alone (as 1.15.1's, which drops only a last frame across pages) keeps the torn frame.
    assert scanned > int(last["position"])
    with running_archive(tmp_path, archive_dir, {"segment_file_length": 1 << 20}) as env:
        assert env.archive.recovered == [0]
        assert env.client.get_stop_position(0) == int(last["position"])
        assert any("do not match their checksums (a torn tail)" in e for e in env.archive.errors)
        d = env.client.list_recording(0)
        assert d is not None
        assert verify_checksums(archive_dir, d, d.stop_position) is None


@pytest.mark.slow
def test_verify_checksums_finds_one_flipped_byte_in_a_1gib_recording(tmp_path: Path) -> None:
    archive_dir = tmp_path / "archive"
    if shutil.disk_usage(tmp_path).free < 3 << 30:
        pytest.skip("less than 3 GiB free for a 1 GiB recording")
    term_length, frame_length, segment_length = 16 << 20, 16384, 1 << 30
    terms = segment_length // term_length
    stop = terms * term_length
    archive_dir.mkdir()
    with Catalog(archive_dir, max_entries=4) as catalog:
        catalog.add_new_recording(
            start_position=0, start_timestamp=1, initial_term_id=0, segment_file_length=segment_length,
            term_buffer_length=term_length, mtu_length=frame_length, session_id=42, stream_id=9,
            stripped_channel="aeron:ipc", original_channel="aeron:ipc", source_identity="aeron:ipc",
        )  # fmt: skip
        catalog.recording_stopped(0, stop, 2)
    template = bytearray().join(frame(0, o, frame_length, 0x5A) for o in range(0, term_length, frame_length))
    term_ids = slice(20, 24)
    with (
        open(segment_path(archive_dir, 0, 0), "wb") as segment,
        open(checksum_path(archive_dir, 0), "wb") as sums,
    ):
        sums.write(struct.pack("<Iiii", 0x43524341, 1, 16, 0))
        for term_id in range(terms):
            for o in range(0, term_length, frame_length):
                template[o + term_ids.start : o + term_ids.stop] = struct.pack("<i", term_id)
            segment.write(template)
            sums.write(frame_checksums(template, term_id * term_length).tobytes())
    flipped = 700 * term_length // 1024 + 37 * frame_length  # somewhere in the middle, in a frame's body
    with open(segment_path(archive_dir, 0, 0), "r+b") as f:
        f.seek(flipped + 1000)
        f.write(b"\xa5")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "driver", "archive", "verify", "--checksums", "--dir", str(archive_dir)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 3, done.stdout + done.stderr
    assert "recording 0: 1 problem(s)" in done.stdout
    assert (
        f"checksums: checksum mismatch at position {flipped} (a run of {frame_length} bytes)" in done.stdout
    )
    print(f"verify --checksums of 1 GiB: {took:.1f} s")


@pytest.mark.parametrize("env", [{"replay_checksums": True}], indirect=True)
def test_a_replay_checking_checksums_stops_at_a_flipped_byte(env: Env) -> None:
    recording_id = record(env, 200)
    d = env.client.list_recording(recording_id)
    assert d is not None
    entries = read_checksums(env.archive_dir, recording_id)
    assert entries is not None
    stream_id = next(env.stream_ids)
    subscription = env.aeron.add_subscription(IPC, stream_id)
    received: list[int] = []

    def replay_all() -> int:
        env.client.start_replay(recording_id, d.start_position, -1, IPC, stream_id)
        wait_for(lambda: subscription.images, 10, "the replay image")
        image = subscription.images[0]
        while not image.is_closed and not image.is_end_of_stream:
            if image.poll(lambda *_: received.append(1), 100) == 0:
                time.sleep(0.001)
        return len(received)

    assert replay_all() == 200  # all 200 messages; the checksums hold
    flipped = message_frames(env.archive_dir, d)[120][0] + 100
    flip_byte(env.archive_dir, d, flipped)
    victim = run_holding(entries, flipped)
    received.clear()
    wait_for(lambda: not subscription.images, 10, "the first replay's image to go")
    assert replay_all() < 120 + 1
    error = wait_for(env.client.poll_for_error_response, 10, "the replay's error")
    assert f"checksum mismatch at position {int(victim['position'])}" in str(error)
    subscription.close()


def runs_recording(tmp_path: Path, version: int = 2) -> tuple[Path, RecordingSummary, bytearray]:
    """A segment of 64 frames of 1 KiB in one term of 64 KiB and its sidecar: runs of 1 to 7 frames (version 2)
    or one entry per frame (version 1); no catalog needed."""
    archive_dir = tmp_path / f"runs{version}"
    archive_dir.mkdir()
    term = bytearray().join(frame(0, o, 1024, o // 1024) for o in range(0, 65536, 1024))
    segment_path(archive_dir, 7, 0).write_bytes(term)
    per_frame = frame_checksums(term, 0)
    if version == 1:
        entries = per_frame
    else:
        cuts = [0, 1, 3, 10, 11, 18, 25, 31, 40, 47, 50, 57, 64]
        entries = np.array(
            [
                (a * 1024, (b - a) * 1024, crc32c(term[a * 1024 : b * 1024]))
                for a, b in itertools.pairwise(cuts)
            ],
            per_frame.dtype,
        )
    checksum_path(archive_dir, 7).write_bytes(
        struct.pack("<Iiii", 0x43524341, version, 16, 0) + entries.tobytes()
    )
    summary = RecordingSummary(7, 0, 65536, 0, 1 << 20, 65536, 1408, 9)
    return archive_dir, summary, term


@pytest.mark.parametrize("version", [1, 2])
def test_a_replay_checker_checks_every_run_once_whatever_the_reads(tmp_path: Path, version: int) -> None:
    """Reads cut runs anywhere and overlap (a replay reads again from the last frame it sent): every run holds;
    a flipped byte is named by the first read that reaches into its run, before any of the run is sent."""
    archive_dir, summary, term = runs_recording(tmp_path, version)
    reads = [(0, 5000), (4096, 9000), (13312, 20000), (30720, 34816)]
    checker = ReplayChecker(archive_dir, summary)
    for position, length in reads:
        assert checker.check(term[position : position + length], position, length) is None
    checker.close()
    flip_byte(
        archive_dir, SimpleNamespace(**summary._asdict()), 26 * 1024 + 100
    )  # in the run of frames 25-30
    damaged = bytearray(segment_path(archive_dir, 7, 0).read_bytes())
    checker = ReplayChecker(archive_dir, summary)
    assert checker.check(damaged[0:5000], 0, 5000) is None
    assert (
        checker.check(damaged[4096:26700], 4096, 26700 - 4096) is not None
    )  # holds only the run's first bytes
    checker.close()
    run = (25, 6) if version == 2 else (26, 1)
    assert verify_checksums(archive_dir, summary, 65536) == (
        f"checksum mismatch at position {run[0] * 1024} (a run of {run[1] * 1024} bytes)"
    )


def test_a_truncation_inside_a_run_checksums_what_it_keeps(tmp_path: Path) -> None:
    archive_dir, summary, _ = runs_recording(tmp_path)
    truncate_checksums(archive_dir, 7, 20 * 1024, summary)  # inside the run of frames 18-24
    entries = read_checksums(archive_dir, 7)
    assert entries is not None and entries["position"].tolist()[-2:] == [11 * 1024, 18 * 1024]
    assert verify_checksums(archive_dir, summary, 20 * 1024) is None
    assert (
        verify_checksums(archive_dir, summary, 21 * 1024)
        == f"position {20 * 1024}: frames without a checksum"
    )


def test_extending_a_version_1_sidecar_continues_it_as_version_2(tmp_path: Path) -> None:
    archive_dir, _, _ = runs_recording(tmp_path, version=1)
    writer = ChecksumWriter(archive_dir, 7, FilePermissions())
    writer.init(32 * 1024)
    writer.close()
    header = checksum_path(archive_dir, 7).read_bytes()[:16]
    assert struct.unpack("<Iiii", header)[1] == 2
    entries = read_checksums(archive_dir, 7)
    assert entries is not None and len(entries) == 32  # the frames below the join position, kept


@pytest.mark.parametrize("env", [{"record_checksums": False}], indirect=True)
def test_verify_checksums_notes_a_recording_made_without_them(env: Env) -> None:
    recording_id = record(env, 4)
    assert not checksum_path(env.archive_dir, recording_id).exists()
    done = subprocess.run(
        [sys.executable, "-m", "driver", "archive", "verify", "--checksums", "--dir", str(env.archive_dir)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"recording {recording_id}: OK" in done.stdout
    assert "recorded without checksums: not checked against any" in done.stdout
