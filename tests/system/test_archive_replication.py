"""Archive replication between two hosts (docs/archive.md section 20): each network namespace runs our driver
with its archive (``mediadriver run --archive``); this process talks to each archive through its driver's aeron
dir on the local control channel (IPC), and B's archive reaches A's over the veth link.

- A records a live UDP stream at 100 k msgs/s (a publisher with a driver of its own in A, multi-destination
  with dynamic control); B replicates it from its start with a live destination (``mediadriver archive
  replicate``) and merges with live; after the publisher stops, B's copy ends where A's recording ends and the
  segment files hold the same bytes over the recorded range.
- A stopped recording (an IPC stream recorded on A, replayed over the link) is replicated with the link taken
  down for 2 s half-way: B's progress timeout (1 s) stops the copy cleanly, asking again extends it, and the copy
  ends equal to the source. The recording is 1 GiB (about 40 s here; ``REPLICATION_TEST_MIB=256`` makes it a
  quarter of that for a quick run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from driver.archive.codecs import SourceLocation
from harness.archive_host import ArchiveHost
from harness.embedded import new_aeron_dir
from harness.netns import Host, require_netns, two_hosts
from tests.support import wait_for
from tests.support.recording_files import assert_same_recording

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TERM_LENGTH = 1024 * 1024
MTU = 1408  # the veth link carries 1500-byte packets: a larger frame would not get through
STREAM_ID = 1001
RATE = 100_000
FRAME = 64  # the live publisher's 32-byte messages
STOPPED_MIB = int(os.environ.get("REPLICATION_TEST_MIB", "1024"))
STOPPED_BYTES = STOPPED_MIB * 1024 * 1024
SIZE_TIMEOUT_S = 30 + STOPPED_MIB / 4  # a copy at 4 MB/s or more (a loaded machine)
STOPPED_MESSAGE = 1376  # a frame of 1408 bytes, one per datagram


def same_bytes(a: ArchiveHost, a_id: int, b: ArchiveHost, b_id: int) -> tuple[int, int]:
    return assert_same_recording(
        a.archive_dir, a.archive.list_recording(a_id), b.archive_dir, b.archive.list_recording(b_id)
    )


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[ArchiveHost, ArchiveHost, Host, Host]]:
    require_netns()
    with two_hosts(tag="repl") as (a, b):
        source = ArchiveHost(a, tmp_path, "a", "-Daeron.spies.simulate.connection=true")
        copy = ArchiveHost(
            b,
            tmp_path,
            "b",
            f"-Daeron.archive.replication.channel=aeron:udp?endpoint={b.address}:0",
            "-Daeron.archive.replication.progress.timeout=1s",
        )
        try:
            yield source, copy, a, b
        finally:
            copy.close()
            source.close()


def test_live_recording_replicated_and_merged_with_live_ends_equal(hosts, tmp_path: Path) -> None:
    source, copy, a, b = hosts
    ctrl = 40_456
    live_channel = f"aeron:udp?control={a.address}:{ctrl}|mtu={MTU}"
    source.archive.start_recording(
        f"aeron:udp?endpoint={a.address}:40457|control={a.address}:{ctrl}", STREAM_ID, SourceLocation.REMOTE
    )
    publisher = a.run(
        sys.executable,
        "-m",
        "harness.live_publisher",
        str(new_aeron_dir(tmp_path, "publisher")),
        live_channel,
        str(STREAM_ID),
        str(RATE),
        str(1 << 62),
        str(TERM_LENGTH),
        stdin=subprocess.PIPE,
        cwd=REPO,
    )
    line = publisher.stdout.readline()
    assert line.startswith("READY"), line + publisher.stderr.read()
    recordings = wait_for(lambda: source.archive.list_recordings(0, 10), 10, "the recording")
    src_id = recordings[0].recording_id
    wait_for(lambda: source.archive.get_recording_position(src_id) > 3 * TERM_LENGTH, 20, "3 terms recorded")
    began = time.monotonic()
    live_before = source.archive.get_recording_position(src_id)
    done = copy.replicate(
        "--from",
        source.control_channel,
        str(src_id),
        "--live-destination",
        f"aeron:udp?endpoint={b.address}:40458|control={a.address}:{ctrl}",
    )
    merged_after = time.monotonic() - began
    assert done.returncode == 0, done.stdout + done.stderr
    assert "started: recording 0 position 0" in done.stdout
    assert "merged:" in done.stdout, done.stdout
    time.sleep(1.0)  # live, recorded by both
    rate = (source.archive.get_recording_position(src_id) - live_before) / FRAME / (time.monotonic() - began)
    publisher.stdin.close()
    publisher.wait(10)
    wait_for(lambda: source.archive.get_stop_position(src_id) > 0, 15, "the source recording's stop")
    wait_for(lambda: copy.archive.get_stop_position(0) > 0, 15, "the copy's stop")
    start, stop = same_bytes(source, src_id, copy, 0)
    assert start == 0 and stop > 3 * TERM_LENGTH
    print(f"merged {merged_after:.2f} s after the request, live at {rate:,.0f} msgs/s; {stop} bytes equal")


def test_stopped_recording_copied_across_a_link_cut_then_extended(hosts, tmp_path: Path) -> None:
    source, copy, a, b = hosts
    source.archive.start_recording("aeron:ipc", STREAM_ID, SourceLocation.LOCAL)
    sent = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.fast_publisher",
            str(source.aeron_dir),
            f"aeron:ipc?term-length={16 * TERM_LENGTH}|mtu={MTU}",
            str(STREAM_ID),
            str(STOPPED_BYTES // (STOPPED_MESSAGE + 32)),
            str(STOPPED_MESSAGE),
        ],
        capture_output=True,
        text=True,
        timeout=SIZE_TIMEOUT_S,
        cwd=REPO,
    )
    assert sent.returncode == 0, sent.stderr
    source.archive.stop_recording("aeron:ipc", STREAM_ID)
    src_id = source.archive.list_recordings(0, 10)[0].recording_id
    wait_for(lambda: source.archive.get_stop_position(src_id) > 0, 10, "the source's stop")
    src_stop = source.archive.get_stop_position(src_id)

    replication = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "driver",
            "archive",
            "--aeron-dir",
            str(copy.aeron_dir),
            "replicate",
            "--from",
            source.control_channel,
            str(src_id),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        try:
            wait_for(
                lambda: (copy.archive.get_recording_position(0) or 0) > src_stop // 2,
                SIZE_TIMEOUT_S,
                "half the copy",
                interval=0.01,
            )
        except AssertionError as e:
            replication.kill()
            out, err = replication.communicate()
            raise AssertionError(f"{e}\n{out}{err}\n{copy.log.read_text()[-3000:]}") from None
        for host in (a, b):
            host.check("ip", "link", "set", host.interface, "down")
        time.sleep(2)
        for host in (a, b):
            host.check("ip", "link", "set", host.interface, "up")
        out, err = replication.communicate(timeout=SIZE_TIMEOUT_S)
    finally:
        if replication.poll() is None:
            replication.kill()
            replication.wait()
    assert "no progress from the source" in err, out + err
    cut = copy.archive.get_stop_position(0)
    assert src_stop // 2 < cut < src_stop, (cut, src_stop)
    # What was copied ends with a whole frame, exactly at the stop position (the offline verify's checks).
    verified = subprocess.run(
        [sys.executable, "-m", "driver", "archive", "verify", "--dir", str(copy.archive_dir), "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr

    done = copy.replicate(
        "--from", source.control_channel, str(src_id), "--extend", "0", timeout_s=SIZE_TIMEOUT_S
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"extended: recording 0 position {cut}" in done.stdout, done.stdout
    assert f"synced: recording 0 position {src_stop}" in done.stdout, done.stdout
    wait_for(lambda: copy.archive.get_stop_position(0) == src_stop, 10, "the copy's stop")
    same_bytes(source, src_id, copy, 0)
    again = copy.replicate("--from", source.control_channel, str(src_id), "--extend", "0")
    assert again.returncode == 0 and "synced" in again.stdout, again.stdout + again.stderr
