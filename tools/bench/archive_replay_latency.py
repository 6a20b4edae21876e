#!/usr/bin/env python3
"""Replay request -> first message latency: ours (``mediadriver run --archive``) vs the Java ArchivingMediaDriver.

Each run starts one archiving driver (ours, or the Aeron 1.15.1 ``io.aeron.archive.ArchivingMediaDriver`` with
driver and archive SHARED) in a fresh dir under /dev/shm and the Java client tools/bench/java/ArchiveBench.java
in latency mode: it records 100 messages of ``--length`` bytes over aeron:ipc, adds one subscription on the
replay channel (``--channel ipc``: aeron:ipc; ``udp``: aeron:udp on a free port), then ``--reps`` times (after
``--warmup`` untimed ones) calls ``AeronArchive.startReplay`` for the whole recording and times from the call to
the first fragment polled from that replay's image, reading the rest before the next. The JSON line has the
medians over ``--runs`` of each run's p50/p99 (µs) and ratios ours / java. Goal: p50 and p99 ratios <= 0.5.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run, or no peer / javac).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from tools.bench.archive_harness import (
    archive_driver_props,
    errors_and_runs,
    fields,
    ipc_or_udp_channel,
    measure_bench_client,
    prepare_bench_client,
)
from tools.bench.compare import add_compare_args, compare, median_of, ratio, rounded
from tools.bench.report import emit, host_info, run_main

GOAL = 0.5
DONE = re.compile(r"^LATENCY reps=")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channel", choices=("ipc", "udp"), default="ipc", help="the replay channel")
    parser.add_argument("--reps", type=int, default=500, help="timed replays per run (default 500)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed replays first (default 100)")
    parser.add_argument("--length", type=int, default=32, help="message length (default 32)")
    add_compare_args(parser, timeout=300.0)
    args = parser.parse_args()
    props = archive_driver_props(args)
    prepared = prepare_bench_client("archive_replay_latency")
    if prepared is None:
        return 2
    peers, classes = prepared

    def measure(kind: str) -> dict[str, Any]:
        def bench_props() -> dict[str, Any]:
            return {
                "bench.mode": "latency",
                "bench.replay.channel": ipc_or_udp_channel(args.channel),
                "bench.length": args.length,
                "bench.reps": args.reps,
                "bench.warmup": args.warmup,
                "bench.timeout.ms": 30_000,
            }

        lines = measure_bench_client(peers, classes, kind, props[kind], bench_props, args.timeout, DONE)
        return fields(next(ln for ln in lines if DONE.search(ln)))

    host = host_info()
    results = compare(measure, args.runs, args.order, label=f"archive_replay_latency {args.channel}")
    result: dict[str, Any] = {"bench": "archive_replay_latency", "channel": args.channel, "reps": args.reps}
    ratios = []
    for p in ("p50_us", "p99_us"):
        ours, java = median_of(results["ours"], p), median_of(results["java"], p)
        result[f"ours_{p}"] = rounded(ours)
        result[f"java_{p}"] = rounded(java)
        result[f"{p.removesuffix('_us')}_ratio"] = ratio(ours, java)
        ratios.append(result[f"{p.removesuffix('_us')}_ratio"])
    result["goal"] = f"<= {GOAL:g}"
    result.update(errors_and_runs(results))
    result.update(runs=args.runs, **host)
    emit(result)
    if any(r is None for r in ratios):
        return 2
    return 0 if all(r <= GOAL for r in ratios) else 1


if __name__ == "__main__":
    run_main(main)
