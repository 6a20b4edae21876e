#!/usr/bin/env python3
"""IPC throughput: Java StreamingPublisher -> RateSubscriber over aeron:ipc, our driver vs the Java driver.

Each run starts one driver -- ours (``python -m driver run``) or the Aeron 1.15.1 Java
MediaDriver in SHARED threading mode (the reference) -- in a fresh dir under /dev/shm, then the same Java sample
clients: ``RateSubscriber`` first, then ``StreamingPublisher`` sending ``--messages`` messages of ``--length``
bytes on stream 10. A run ends when the subscriber's running total reaches ``--messages``; one that does not
within ``--timeout`` seconds (or whose driver or subscriber dies, or whose client throws) is recorded as failed.

Method: RateSubscriber prints its running total once a second; the harness timestamps each line as it arrives.
Throughput is (total at end - total at start) / (time at end - time at start) where start is the first line with
a nonzero total and end the line before the last increase -- i.e. whole seconds only, without the partial first
and last seconds (see ``harness.steady_throughput``). Driver CPU is utime+stime of the driver process tree from
/proc over the same window, in % of one core. Ours and Java run alternately (``--order``) ``--runs`` times; the
JSON line reports the medians and ratio = ours / java (goal >= 1.0).

On IPC the data never passes through the driver: the publisher writes the mapped log and the subscriber reads
it. The driver's share is the conductor work -- publisher limit from subscriber positions, cleaning -- so a slow
or CPU-hungry conductor shows up as back pressure and as CPU taken from the clients.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run or the peer is missing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    BenchError,
    add_compare_args,
    compare,
    driver_props,
    emit,
    first_error,
    host_info,
    measure_stream,
    median_of,
    progress,
    ratio,
    require_peers,
    rounded,
    run_main,
)

DEFAULT_MESSAGES = 50_000_000  # ~5-6 s through the Java driver at ~9 M msgs/s on a 2-core box


def parse_stream_args(parser: argparse.ArgumentParser, messages: int, timeout: float) -> argparse.Namespace:
    """--messages (default ``messages`` for 32-byte messages, scaled by 32 / length above that), --length and
    the comparison options."""
    parser.add_argument(
        "--messages",
        type=int,
        default=None,
        help=f"messages per run (default {messages:,} x 32 / max(length, 32))",
    )
    parser.add_argument("--length", type=int, default=32, help="message length in bytes (default 32)")
    add_compare_args(parser, timeout)
    args = parser.parse_args()
    if args.messages is None:
        args.messages = max(1, messages * 32 // max(args.length, 32))
    return args


def throughput_result(
    bench: str,
    args: argparse.Namespace,
    results: dict[str, list[dict[str, Any]]],
    extra: dict[str, Any],
    host: dict[str, Any],
) -> tuple[dict[str, Any], int]:
    ours = median_of(results["ours"], "msgs_per_s")
    java = median_of(results["java"], "msgs_per_s")
    result: dict[str, Any] = {
        "bench": bench,
        "length": args.length,
        "messages": args.messages,
        "ours_msgs_per_s": rounded(ours, 0),
        "java_msgs_per_s": rounded(java, 0),
        "ratio": ratio(ours, java),
        "ours_driver_cpu_pct": rounded(median_of(results["ours"], "driver_cpu_pct")),
        "java_driver_cpu_pct": rounded(median_of(results["java"], "driver_cpu_pct")),
        "goal": ">= 1.0",
        **extra,
        "runs": args.runs,
        **host,
    }
    for kind in ("ours", "java"):
        runs = results[kind]
        if (ours if kind == "ours" else java) is None:
            result[f"{kind}_error"] = first_error(runs) or "not run"
        result[f"{kind}_runs"] = [
            {"error": r["error"]}
            if "error" in r
            else {
                "msgs_per_s": round(r["msgs_per_s"]),
                "driver_cpu_pct": rounded(r["driver_cpu_pct"]),
                "window_s": round(r["window_s"], 2),
                **({} if r["steady"] else {"steady": False}),
            }
            for r in runs
        ]
    if result["ratio"] is None:
        return result, 2
    return result, 0 if result["ratio"] >= 1.0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args = parse_stream_args(parser, DEFAULT_MESSAGES, timeout=120.0)
    props = driver_props(args)
    channel = "aeron:ipc"
    try:
        peers = require_peers()
    except BenchError as exc:
        progress(str(exc))
        emit({"bench": "ipc_throughput", "error": str(exc)})
        return 2

    def measure(kind: str) -> dict[str, Any]:
        return measure_stream(kind, channel, args.messages, args.length, args.timeout, props[kind], peers)

    host = host_info()
    results = compare(measure, args.runs, args.order, label="ipc_throughput")
    result, code = throughput_result("ipc_throughput", args, results, {"channel": channel}, host)
    emit(result)
    return code


if __name__ == "__main__":
    run_main(main)
