#!/usr/bin/env python3
"""Forwarding throughput of the record & replay service's replay (docs/service.md section 5) against the archive's
own replays of the same recording, in the same run: ``mediadriver run --archive --http 0`` (driver, archive and
service in one process, as deployed) records ``--messages`` messages of 32 B published without pause on
``aeron:ipc`` through the API; then, each ``--runs`` times, in turn:

- ``plain``: the archive's plain replay of the recording onto ``aeron:ipc``, polled by this process;
- ``paced``: the archive's paced replay at ``--rate`` (what the service asks for) onto ``aeron:ipc``, polled here;
- ``service``: ``POST /api/v1/replay`` at ``--rate`` to a target stream this process polls: the paced replay to
  the service, which forwards every message to the target.

Each is timed from the request to the last message polled (``poll_batch``, so the reader is not the limit). The
recording's own timing divided by ``--rate`` (default 1000) is far below those times: the rate asks for as fast
as possible. Prints one JSON line with the medians (msgs/s) and the ratios service/paced and service/plain; the
goal is the service forwarding at least 200,000 msgs/s (exit 0; 1 if missed, 2 if the run failed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from driver.client import Aeron
from tools.bench.harness import free_udp_port
from tools.bench.report import BenchError, emit, host_info, progress
from tools.bench.service_harness import (
    CONTROL_CHANNEL,
    archive_channel_props,
    driver_cmd,
    owner_client,
    run_bench,
    start_api,
    stop,
    wait_done,
)

GOAL_MSGS_S = 200_000
LENGTH = 32
RECORD_STREAM_ID = 1001
KINDS = ("plain", "paced", "service")


def wait(predicate, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise BenchError(f"timed out waiting for {what}")
        time.sleep(0.001)
    return result


def drain(subscription, messages: int, timeout_s: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Poll until ``messages`` fragments (32 B messages are one each) arrived; the monotonic times of the first
    and of the last."""
    count = 0
    first = 0.0
    deadline = time.monotonic() + timeout_s
    while count < messages:
        batch = subscription.poll_batch(4096)
        n = len(batch)
        batch.release()
        if n:
            if not count:
                first = time.monotonic()
            count += n
        elif time.monotonic() > deadline:
            raise BenchError(f"{count} of {messages} messages arrived in {timeout_s} s")
        else:
            time.sleep(0)
    return first, time.monotonic()


def run(args: argparse.Namespace, work: Path) -> dict:
    from driver.archive.client import AeronArchive

    aeron_dir = Path("/dev/shm") / f"aeron-bench-service-replay-{os.getpid()}"
    props = archive_channel_props()
    procs: list[subprocess.Popen] = []
    try:
        url = start_api(driver_cmd(aeron_dir, work / "archive", props, "--http", "0"), procs)
        client = owner_client(url, work / "archive", 60)
        with Aeron.connect(aeron_dir) as aeron:
            count = args.messages
            client.post(
                "/api/v1/record",
                json={
                    "streams": [{"channel": "aeron:ipc", "stream_id": RECORD_STREAM_ID}],
                    "max_messages": count,
                },
            ).raise_for_status()
            publication = aeron.add_publication("aeron:ipc", RECORD_STREAM_ID)
            wait(lambda: publication.is_connected, 10, "the recording to subscribe")
            payload = [bytes(LENGTH)] * 256
            started, sent = time.monotonic(), 0
            while sent < count:
                went = publication.offer_many(payload[: min(256, count - sent)])
                if went > 0:
                    sent += went
                else:
                    time.sleep(0)
            status = wait_done(client, "/api/v1/record", 120, 0.05)
            record_s = time.monotonic() - started
            publication.close()
            if status["messages"] != count:
                raise BenchError(f"recorded {status['messages']} of {count}")
            dataset = client.get(f"/api/v1/datasets/{status['dataset_id']}").json()
            (recording,) = dataset["recordings"]
            progress(
                f"recorded {count} messages of {LENGTH} B in {record_s:.2f} s, span {dataset['span_s']} s"
            )

            archive = AeronArchive.connect(
                aeron,
                control_request_channel=props[CONTROL_CHANNEL],
                control_response_channel=f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}",
            )
            position, length = (
                recording["start_position"],
                recording["stop_position"] - recording["start_position"],
            )
            stream_ids = iter(range(3001, 3001 + 10 * args.runs))
            rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
            flow: dict[str, list[float]] = {kind: [] for kind in KINDS}
            to_first: dict[str, list[float]] = {kind: [] for kind in KINDS}
            try:
                for run_index in range(args.runs):
                    for kind in KINDS:
                        stream_id = next(stream_ids)
                        subscription = aeron.add_subscription("aeron:ipc", stream_id)
                        started = time.monotonic()
                        if kind == "plain":
                            archive.start_replay(
                                recording["recording_id"], position, length, "aeron:ipc", stream_id
                            )
                        elif kind == "paced":
                            archive.start_paced_replay(
                                recording["recording_id"], position, length, "aeron:ipc", stream_id, args.rate
                            )
                        else:
                            client.post(
                                "/api/v1/replay",
                                json={"dataset_id": dataset["id"], "rate": args.rate, "stream_id": stream_id},
                            ).raise_for_status()
                        first, last = drain(subscription, count, 120)
                        if kind == "service":
                            replayed = wait_done(client, "/api/v1/replay", 30, 0.05)
                            if replayed["messages"] != count or replayed["state"] != "done":
                                raise BenchError(f"service replay: {replayed}")
                        rates[kind].append(count / (last - started))
                        flow[kind].append(count / (last - first))
                        to_first[kind].append((first - started) * 1000)
                        subscription.close()
                        progress(
                            f"run {run_index + 1} {kind}: {rates[kind][-1]:,.0f} msgs/s from the request, "
                            f"{flow[kind][-1]:,.0f} from the first message, first after {to_first[kind][-1]:.1f} ms"
                        )
            finally:
                archive.close()
        medians = {kind: round(statistics.median(values)) for kind, values in rates.items()}
        flow_medians = {kind: round(statistics.median(values)) for kind, values in flow.items()}
        return {
            "messages": count,
            "length": LENGTH,
            "rate": args.rate,
            "record_s": round(record_s, 2),
            "msgs_per_s": medians,
            "flow_msgs_per_s": flow_medians,
            "first_ms": {kind: round(statistics.median(values), 1) for kind, values in to_first.items()},
            "runs": {kind: [round(v) for v in values] for kind, values in rates.items()},
            "service_vs_paced": round(medians["service"] / medians["paced"], 2),
            "service_vs_plain": round(medians["service"] / medians["plain"], 2),
        }
    finally:
        stop(procs, aeron_dir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=300_000, help="messages recorded (default 300,000)")
    parser.add_argument("--rate", type=float, default=1000.0, help="replay rate (default 1000)")
    parser.add_argument("--runs", type=int, default=3, help="runs of the three replays (default 3)")
    args = parser.parse_args()
    result = run_bench("service_replay", lambda work: run(args, work), "bench-service-replay-")
    if result is None:
        return 2
    met = result["msgs_per_s"]["service"] >= GOAL_MSGS_S
    emit(
        {"bench": "service_replay", **result, "goal_msgs_per_s": GOAL_MSGS_S, "met": met, "host": host_info()}
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
