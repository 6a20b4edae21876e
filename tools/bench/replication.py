#!/usr/bin/env python3
"""Archive replication (docs/archive.md section 20) against a plain replay over the same UDP path, and the time a
copy takes to merge with live. Two network namespaces (harness/netns.py, a veth link) each run our driver
with its archive (``mediadriver run --archive``); this process reaches each archive through its driver's aeron
dir (local control channel, IPC).

1. A records ``--mib`` MiB (256) of 1376-byte messages (1408-byte frames: one per datagram on the 1500-byte link)
   from an IPC publication, and the recording stops.
2. ``--runs`` times (3), alternating (6 s apart: a copy's replay publication, which has the recorded session id,
   lingers 5 s on A's driver, and the next copy's replay is refused until it has gone): B replicates it (request to SYNC signal: a new copy each run, its bytes
   recorded on B's disk; timed from START, the copy's first frame, and from the request), and a plain replay from
   A's archive to a subscription on B's driver over the same link, drained by block polls (nothing written; timed
   from its image's appearance, and from the request).
3. A live publisher in A (its own driver, 100 k msgs/s of 32 bytes, 1 MiB terms) recorded by A; once the recording
   is 3 terms ahead, B replicates it from its start with a live destination: request to MERGE signal.

Prints one JSON line: the medians in MB/s, their ratio (goal: replication at least 0.8 of the plain replay), and
the merge times. Exit 0 when the goal is met, 1 when missed, 2 when no comparison was possible (needs root for
the namespaces). Figures on a shared machine are indicative.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from driver.archive.codecs import SourceLocation
from driver.client import Aeron
from harness import netns
from harness.archive_host import ArchiveHost
from harness.embedded import new_aeron_dir, remove_aeron_dirs
from harness.wait import wait_for
from tools.bench.report import emit, host_info, progress

ROOT = Path(__file__).resolve().parents[2]

STREAM_ID = 1001
LIVE_STREAM_ID = 1003
REPLAY_STREAM_ID = 1002
MESSAGE = 1376
MTU = 1408
TERM_LENGTH = 1024 * 1024
LIVE_RATE = 100_000
GOAL = 0.8


def record_stopped(source: ArchiveHost, mib: int) -> tuple[int, int]:
    source.archive.start_recording("aeron:ipc", STREAM_ID, SourceLocation.LOCAL)
    count = mib * 1024 * 1024 // (MESSAGE + 32)
    subprocess.run(
        [sys.executable, "-m", "harness.fast_publisher", str(source.aeron_dir),
         f"aeron:ipc?term-length={16 * TERM_LENGTH}|mtu={MTU}", str(STREAM_ID), str(count), str(MESSAGE)],
        check=True, capture_output=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    source.archive.stop_recording("aeron:ipc", STREAM_ID)
    recording_id = source.archive.list_recordings_for_uri(0, 10, "aeron:ipc", STREAM_ID)[-1].recording_id
    wait_for(lambda: source.archive.get_stop_position(recording_id) > 0, 30, "the recording's stop")
    return recording_id, source.archive.get_stop_position(recording_id)


def replicate_once(
    source: ArchiveHost, copy: ArchiveHost, recording_id: int, stop: int
) -> tuple[float, float]:
    """(MB/s from the request to SYNC, MB/s from START to SYNC: the copying alone)."""
    began = time.monotonic()
    replication_id = copy.archive.replicate(recording_id, source.control_channel)
    copy.archive.await_replication(replication_id, until="started", timeout_s=60)
    started = time.monotonic()
    seen = copy.archive.await_replication(replication_id, until="synced", timeout_s=300)
    ended = time.monotonic()
    assert seen[-1].name == "synced" and seen[-1].position == stop, seen
    copy.archive.await_replication(replication_id, timeout_s=30)
    return stop / (ended - began) / 1e6, stop / (ended - started) / 1e6


def plain_replay_once(
    source: ArchiveHost, copy: ArchiveHost, recording_id: int, stop: int, port: int
) -> tuple[float, float]:
    """(MB/s from the request to the last byte, MB/s from the image's appearance to the last byte)."""
    channel = f"aeron:udp?endpoint={copy.host.address}:{port}"
    with Aeron.connect(str(copy.aeron_dir)) as aeron:
        subscription = aeron.add_subscription(channel, REPLAY_STREAM_ID)
        began = time.monotonic()
        appeared = None
        source.archive.start_replay(recording_id, 0, -1, channel, REPLAY_STREAM_ID)

        def drain(buffer: Any, offset: int, length: int, *_: Any) -> None:
            pass

        deadline = began + 300
        while True:
            images = subscription.images
            image = images[0] if images else None
            if image is not None:
                appeared = appeared or time.monotonic()
                if image.position >= stop:
                    break
                if image.block_poll(drain, 2 * 1024 * 1024):
                    continue
            if time.monotonic() > deadline:
                raise TimeoutError("plain replay incomplete")
            time.sleep(0.0002)
        ended = time.monotonic()
        subscription.close()
    assert appeared is not None
    return stop / (ended - began) / 1e6, stop / (ended - appeared) / 1e6


def merge_once(
    source: ArchiveHost, copy: ArchiveHost, a: netns.Host, b: netns.Host, base: Path, ctrl: int
) -> float:
    source.archive.start_recording(
        f"aeron:udp?endpoint={a.address}:{ctrl + 1}|control={a.address}:{ctrl}",
        LIVE_STREAM_ID,
        SourceLocation.REMOTE,
    )
    publisher = a.run(
        sys.executable, "-m", "harness.live_publisher", str(new_aeron_dir(base, "publisher")),
        f"aeron:udp?control={a.address}:{ctrl}|mtu={MTU}", str(LIVE_STREAM_ID), str(LIVE_RATE), str(1 << 62),
        str(TERM_LENGTH), stdin=subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip
    try:
        line = publisher.stdout.readline()
        assert line.startswith("READY"), line
        recording_id = wait_for(
            lambda: source.archive.list_recordings_for_uri(0, 10, "aeron:udp", LIVE_STREAM_ID),
            10,
            "the recording",
        )[-1].recording_id
        wait_for(lambda: source.archive.get_recording_position(recording_id) > 3 * TERM_LENGTH, 30, "3 terms")
        began = time.monotonic()
        replication_id = copy.archive.replicate(
            recording_id,
            source.control_channel,
            live_destination=f"aeron:udp?endpoint={b.address}:{ctrl + 2}|control={a.address}:{ctrl}",
        )
        seen = copy.archive.await_replication(replication_id, until="merged", timeout_s=120)
        took = time.monotonic() - began
        assert seen[-1].name == "merged", seen
        return took
    finally:
        publisher.stdin.close()
        publisher.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mib", type=int, default=256, help="size of the stopped recording (default 256)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--merge-runs", type=int, default=1)
    args = parser.parse_args()
    base_result: dict[str, Any] = {"bench": "replication", "mib": args.mib, "host": host_info()}
    reason = netns.unavailable_reason()
    if reason is not None:
        emit(base_result | {"error": reason})
        return 2
    replication: list[tuple[float, float]] = []
    plain: list[tuple[float, float]] = []
    merges: list[float] = []
    with ExitStack() as stack:
        # Undone in reverse: the archive clients, the namespaces (their drivers stop), the temporary dir, and last
        # the aeron dirs new_aeron_dir put on /dev/shm (outside the temporary dir).
        stack.callback(remove_aeron_dirs)
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="replbench-")))
        a, b = stack.enter_context(netns.two_hosts(tag="replbench"))
        source = ArchiveHost(a, base, "a", "-Daeron.spies.simulate.connection=true")
        stack.callback(source.close)
        copy = ArchiveHost(b, base, "b", f"-Daeron.archive.replication.channel=aeron:udp?endpoint={b.address}:0")
        stack.callback(copy.close)
        progress(f"recording {args.mib} MiB on A")
        recording_id, stop = record_stopped(source, args.mib)
        time.sleep(6)  # the recorded publication's linger: until then A's driver holds its session id
        for run in range(args.runs):
            if run:
                time.sleep(6)  # the last copy's replay publication lingers with the recorded session id
            replication.append(replicate_once(source, copy, recording_id, stop))
            plain.append(plain_replay_once(source, copy, recording_id, stop, 41_000 + run))
            progress(
                f"run {run + 1}: replication {replication[-1][1]:.1f} MB/s copying "
                f"({replication[-1][0]:.1f} from the request), plain replay {plain[-1][1]:.1f} MB/s "
                f"({plain[-1][0]:.1f} from the request)"
            )
        for run in range(args.merge_runs):
            merges.append(merge_once(source, copy, a, b, base, 42_000 + 10 * run))
            progress(f"merged with live {merges[-1]:.2f} s after the request")
    ours = statistics.median(r[1] for r in replication)
    reference = statistics.median(p[1] for p in plain)
    ratio = ours / reference
    emit(
        base_result
        | {
            "replication_mb_s": round(ours, 1),
            "plain_replay_mb_s": round(reference, 1),
            "ratio": round(ratio, 3),
            "replication_from_request_mb_s": round(statistics.median(r[0] for r in replication), 1),
            "plain_from_request_mb_s": round(statistics.median(p[0] for p in plain), 1),
            "replication_runs_mb_s": [round(r[1], 1) for r in replication],
            "plain_runs_mb_s": [round(p[1], 1) for p in plain],
            "merge_s": [round(x, 2) for x in merges],
            "goal": f"ratio >= {GOAL} (copying: START to SYNC, against the plain replay's image to its end)",
        }
    )
    return 0 if ratio >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
