#!/usr/bin/env python3
"""Catch-up throughput (``CatchUp``: replay to the live join, then live; docs/archive.md section 17) against a
plain replay of the same recording, in the same run, on our driver with its archive (``mediadriver run
--archive`` in a process of its own), and the time a consumer three terms behind takes to be on live.

A Python publication on ``aeron:ipc`` (64 KiB terms) is recorded (``--messages`` messages of 32 bytes) and stays open. Then, each
``--runs`` times: a plain replay of the whole recording (``archive.replay``, polled until every message arrived)
and a catch-up from position 0 (polled until every message arrived), both timed from the request to the last
message; and a catch-up from three terms before the end, timed until its state is LIVE. Prints one JSON line with
the medians; the goal is catch-up throughput at least 0.8 of the plain replay's (exit 0; 1 if missed, 2 if the
run failed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import emit, free_udp_port, host_info, progress  # noqa: E402

STREAM_ID = 1001
REPLAY_STREAM_ID = 1101
LENGTH = 32
TERM_LENGTH = 64 * 1024
GOAL = 0.8


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
    from driver.client import Aeron

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

        plain, catch_up_rates, to_live_ms = [], [], []
        for run in range(runs):
            count[0] = 0
            started = time.monotonic()
            replay = archive.replay(recording.recording_id, 0, end, "aeron:ipc", REPLAY_STREAM_ID + run)
            while count[0] < messages:
                if replay.poll(on_fragment, 1024) == 0:
                    time.sleep(0)
            plain.append(messages / (time.monotonic() - started))
            replay.close()

            for from_position, rates in ((0, catch_up_rates), (end - 3 * term_length, None)):
                count[0] = 0
                live = aeron.add_subscription("aeron:ipc", STREAM_ID)
                started = time.monotonic()
                catch_up = CatchUp(
                    live,
                    PolledArchive(archive),
                    aeron.add_subscription,
                    max(0, from_position),
                    channel_fragment=channel_fragment("aeron:ipc"),
                    replay_stream_id=REPLAY_STREAM_ID + 100 + run,
                )
                if rates is None:
                    while catch_up.state is not CatchUpState.LIVE:
                        if catch_up.poll(on_fragment, 1024) == 0:
                            time.sleep(0)
                    to_live_ms.append((time.monotonic() - started) * 1000)
                else:
                    # The publication is idle: what lies before the join is replayed, the rest (the IPC join
                    # may lag the end) comes from the live image.
                    while count[0] < messages:
                        if catch_up.poll(on_fragment, 1024) == 0:
                            time.sleep(0)
                    rates.append(count[0] / (time.monotonic() - started))
                catch_up.close()
                live.close()
            progress(
                f"run {run + 1}: plain {plain[-1]:,.0f} msgs/s, catch-up {catch_up_rates[-1]:,.0f} msgs/s, "
                f"3 terms behind to live {to_live_ms[-1]:.1f} ms"
            )
        publication.close()
        archive.close()
    plain_rate, catch_up_rate = statistics.median(plain), statistics.median(catch_up_rates)
    return {
        "bench": "replay_merge",
        "messages": messages,
        "length": LENGTH,
        "plain_replay_msgs_per_s": round(plain_rate),
        "catch_up_msgs_per_s": round(catch_up_rate),
        "ratio": round(catch_up_rate / plain_rate, 3),
        "three_terms_to_live_ms": round(statistics.median(to_live_ms), 1),
        "plain_runs": [round(r) for r in plain],
        "catch_up_runs": [round(r) for r in catch_up_rates],
        "goal": f"catch-up >= {GOAL} x plain replay",
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
        driver.send_signal(signal.SIGTERM)
        try:
            driver.wait(10)
        except subprocess.TimeoutExpired:
            driver.kill()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(aeron_dir, ignore_errors=True)
    emit(result)
    return 0 if result["ratio"] >= GOAL else 1  # type: ignore[operator]


if __name__ == "__main__":
    sys.exit(main())
