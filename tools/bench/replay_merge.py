#!/usr/bin/env python3
"""Catch-up throughput (``CatchUp``: replay to the live join, then live; docs/archive.md section 17) against a
plain replay of the same recording, in the same run, on our driver with its archive (``mediadriver run
--archive`` in a process of its own), and the time a consumer three terms behind takes to be on live.

A Python publication on ``aeron:ipc`` (64 KiB terms) is recorded (``--messages`` messages of 32 bytes) and
stays open. Then, each ``--runs`` times, like against like: a plain replay of the whole recording
(``archive.replay``) against a catch-up from position 0, both as fragments (a counting fragment handler;
``CatchUp.poll_fragments``) and as messages (the plain replay through a FragmentAssembler making
``driver.client.aio.Message``s as ``aio.messages`` does; ``CatchUp.poll``), each timed from the request to the
last message; and a catch-up from three terms before the end, timed until its state is LIVE. Prints one JSON
line with the medians and both ratios; the goal is catch-up at least 0.8 of the plain replay's, both ways (exit
0; 1 if missed, 2 if the run failed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.children import terminate
from tools.bench.harness import free_udp_port
from tools.bench.report import emit, host_info, progress

ROOT = Path(__file__).resolve().parents[2]

STREAM_ID = 1001
REPLAY_STREAM_ID = 1101
LENGTH = 32
FRAME = 64
TERM_LENGTH = 64 * 1024
GOAL = 0.8
KINDS = ("plain_fragments", "catch_up_fragments", "plain_messages", "catch_up_messages")


def wait(predicate, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.0005)
    return result


def measure(aeron_dir: Path, control: str, messages: int, runs: int) -> dict[str, object]:
    from driver.archive.client import AeronArchive, CatchUp, CatchUpState, channel_fragment
    from driver.archive.client.archive_requests import PolledArchive
    from driver.archive.codecs import SourceLocation
    from driver.client import Aeron, FragmentAssembler
    from driver.client.aio import Message

    with Aeron.connect(str(aeron_dir)) as aeron:
        archive = AeronArchive.connect(
            aeron,
            control_request_channel=control,
            control_response_channel=f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
        )
        publication = aeron.add_exclusive_publication(f"aeron:ipc?term-length={TERM_LENGTH}", STREAM_ID)
        archive.start_recording("aeron:ipc", STREAM_ID, SourceLocation.LOCAL)
        (recording,) = wait(
            lambda: archive.list_recordings_for_uri(0, 1, "aeron:ipc", STREAM_ID), 10, "recording"
        )
        payload = bytearray(LENGTH)
        for i in range(messages):
            payload[:8] = i.to_bytes(8, "little")
            while publication.offer(payload) < 0:
                time.sleep(0)
        end = publication.position
        wait(lambda: archive.get_recording_position(recording.recording_id) == end, 30, "the recording")
        term_length = publication.term_length
        progress(f"recorded {messages} messages ({end} bytes)")

        count = [0]

        def on_fragment(*_args: object) -> None:
            count[0] += 1

        def on_message(_message: object) -> None:
            count[0] += 1

        # A plain replay as messages: what ``driver.client.aio.messages`` does for each fragment.
        def on_replayed(buffer: Any, offset: int, length: int, header: Any) -> None:
            on_message(
                Message(
                    buffer.get_bytes(offset, length),
                    header.session_id,
                    header.stream_id,
                    header.position,
                    header.reserved_value,
                )
            )

        replayed_messages = FragmentAssembler(on_replayed)
        rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
        to_live_ms: list[float] = []
        stream_ids = iter(range(REPLAY_STREAM_ID, REPLAY_STREAM_ID + 10 * runs))

        def plain(handler: Any) -> float:
            count[0] = 0
            started = time.monotonic()
            replay = archive.replay(recording.recording_id, 0, end, "aeron:ipc", next(stream_ids))
            while count[0] < messages:
                if replay.poll(handler, 1024) == 0:
                    time.sleep(0)
            elapsed = time.monotonic() - started
            replay.close()
            return messages / elapsed

        def catch_up_from(from_position: int, poll: Callable[[CatchUp], int]) -> tuple[float, float]:
            """(msgs/s until every message arrived, ms until LIVE)"""
            count[0] = 0
            live = aeron.add_subscription("aeron:ipc", STREAM_ID)
            started = time.monotonic()
            catch_up = CatchUp(
                live,
                PolledArchive(archive),
                aeron.add_subscription,
                from_position,
                channel_fragment=channel_fragment("aeron:ipc"),
                replay_stream_id=next(stream_ids),
            )
            # The publication is idle: what lies before the join is replayed, the rest (the IPC join may
            # lag the end) comes from the live image.
            wanted = (end - from_position) // FRAME
            live_at = None
            while count[0] < wanted or live_at is None:
                if poll(catch_up) == 0:
                    time.sleep(0)
                if live_at is None and catch_up.state is CatchUpState.LIVE:
                    live_at = time.monotonic()
            elapsed = time.monotonic() - started
            catch_up.close()
            live.close()
            return count[0] / elapsed, (live_at - started) * 1000

        for run in range(runs):
            rates["plain_fragments"].append(plain(on_fragment))
            rates["catch_up_fragments"].append(
                catch_up_from(0, lambda c: c.poll_fragments(on_fragment, 1024))[0]
            )
            rates["plain_messages"].append(plain(replayed_messages))
            rates["catch_up_messages"].append(catch_up_from(0, lambda c: c.poll(on_message, 1024))[0])
            to_live_ms.append(
                catch_up_from(max(0, end - 3 * term_length), lambda c: c.poll(on_message, 1024))[1]
            )
            progress(
                f"run {run + 1}: "
                + ", ".join(f"{kind} {values[-1]:,.0f} msgs/s" for kind, values in rates.items())
                + f", 3 terms behind to live {to_live_ms[-1]:.1f} ms"
            )
        publication.close()
        archive.close()
    median = {kind: statistics.median(values) for kind, values in rates.items()}
    fragments_ratio = median["catch_up_fragments"] / median["plain_fragments"]
    messages_ratio = median["catch_up_messages"] / median["plain_messages"]
    return {
        "bench": "replay_merge",
        "messages": messages,
        "length": LENGTH,
        **{f"{kind}_msgs_per_s": round(rate) for kind, rate in median.items()},
        "fragments_ratio": round(fragments_ratio, 3),
        "messages_ratio": round(messages_ratio, 3),
        "ratio": round(min(fragments_ratio, messages_ratio), 3),
        "three_terms_to_live_ms": round(statistics.median(to_live_ms), 1),
        "runs": {kind: [round(r) for r in values] for kind, values in rates.items()},
        "goal": f"catch-up >= {GOAL} x plain replay, as fragments and as messages",
        "host": host_info(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-replay-merge-"))
    aeron_dir = Path("/dev/shm") / f"bench-replay-merge-{os.getpid()}"
    control = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    env = dict(
        os.environ,
        AERON_ARCHIVE_CONTROL_CHANNEL=control,
        AERON_ARCHIVE_RECORDING_EVENTS_CHANNEL=f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
    )
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "driver",
            "run",
            "--dir",
            str(aeron_dir),
            "--archive",
            "--archive-dir",
            str(work / "archive"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait(lambda: (aeron_dir / "cnc.dat").exists(), 10, "the driver")
        time.sleep(0.5)
        result = measure(aeron_dir, control, args.messages, args.runs)
    except Exception as error:  # one JSON line whatever happened
        emit({"bench": "replay_merge", "error": repr(error)})
        return 2
    finally:
        terminate(driver, 10)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(aeron_dir, ignore_errors=True)
    emit(result)
    return 0 if result["ratio"] >= GOAL else 1  # type: ignore[operator]


if __name__ == "__main__":
    sys.exit(main())
