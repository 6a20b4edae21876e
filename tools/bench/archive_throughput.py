#!/usr/bin/env python3
"""Archive record and replay throughput: ours (``mediadriver run --archive``) vs the Java ArchivingMediaDriver.

Each run starts one archiving driver -- ours, or the Aeron 1.15.1 ``io.aeron.archive.ArchivingMediaDriver``
(driver and archive SHARED, one thread each) -- in a fresh dir under /dev/shm, and the same Java client,
tools/bench/java/ArchiveBench.java, with the unmodified 1.15.1 AeronArchive.

Steady state (``--mode steady``, the default, what a long recording feels): the client starts a LOCAL recording
of ``--channel`` and offers ``--length``-byte messages on an exclusive publication without pause for
``--seconds``; a sampler prints how many messages the recording position moved each second. It then replays the
whole recording over aeron:ipc, counting the messages polled each second. Record and replay msgs/s are the
medians of those per-second rates once the first ``--warmup`` seconds are dropped (and the last, partial, second
of the replay); the first seconds are reported apart as ``cold``.

One pass (``--mode pass``): ``--messages`` per pass, record msgs/s = messages / (first offer .. recorded to the
end), replay msgs/s = messages / (replay request .. last message polled), ``--passes`` passes, the last counts.

Ours and Java alternate (``--order``) ``--runs`` times per length; the JSON line has the medians and ratios
ours / java for record and replay, per length. Goal: every ratio >= 1.0.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run, or no peer / javac).
"""

from __future__ import annotations

import argparse
import re
import statistics
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
from tools.bench.report import BenchError, emit, host_info, run_main

DEFAULT_BYTES = 64 * 1024 * 1024  # payload per pass: 2 M messages of 32 B, 64 k of 1 KiB
DONE = re.compile(r"^REPLAY pass=")
STEADY_DONE = re.compile(r"^STEADY done")


def per_second(lines: list[str], prefix: str) -> list[float]:
    return [float(fields(ln)["messages"]) for ln in lines if ln.startswith(prefix + " ")]


def steady_rates(lines: list[str], warmup: int) -> dict[str, Any]:
    """Medians of the per-second rates after ``warmup`` seconds; the replay's last second is partial."""
    record = per_second(lines, "RECORD_RATE")
    replay = per_second(lines, "REPLAY_RATE")
    record_steady, replay_steady = record[warmup:], replay[1:]
    if len(record_steady) < 3 or not replay_steady:
        raise BenchError(f"too few per-second samples: record {record}, replay {replay}")
    return {
        "record_msgs_per_s": statistics.median(record_steady),
        "replay_msgs_per_s": statistics.median(replay_steady),
        "record_cold_msgs_per_s": statistics.mean(record[:warmup]) if warmup else None,
        "replay_cold_msgs_per_s": replay[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", default="32,1024", help="message lengths, comma separated (default 32,1024)"
    )
    parser.add_argument(
        "--messages", type=int, default=None, help="messages per pass (default 64 MiB / length)"
    )
    parser.add_argument("--passes", type=int, default=2, help="passes per run; the last counts (default 2)")
    parser.add_argument(
        "--mode", choices=("steady", "pass"), default="steady", help="see above (default steady)"
    )
    parser.add_argument("--seconds", type=int, default=10, help="steady: seconds of publishing (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="steady: first seconds dropped (default 2)")
    parser.add_argument("--channel", choices=("ipc", "udp"), default="ipc", help="the recorded stream")
    add_compare_args(parser, timeout=300.0)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    props = archive_driver_props(args, {"aeron.spies.simulate.connection": "true"})
    prepared = prepare_bench_client("archive_throughput")
    if prepared is None:
        return 2
    peers, classes = prepared

    host = host_info()
    result: dict[str, Any] = {
        "bench": "archive_throughput",
        "channel": args.channel,
        "goal": ">= 1.0 (steady)",
    }
    ratios: list[float | None] = []
    for length in lengths:
        messages = args.messages or max(1, DEFAULT_BYTES // length)

        def measure(kind: str, length: int = length, messages: int = messages) -> dict[str, Any]:
            if args.mode == "steady":
                bench = {"bench.mode": "steady", "bench.seconds": args.seconds}
                done, count = STEADY_DONE, 1
            else:
                bench = {"bench.messages": messages, "bench.passes": args.passes}
                done, count = DONE, args.passes

            def bench_props() -> dict[str, Any]:
                return {
                    "bench.channel": ipc_or_udp_channel(args.channel),
                    "bench.length": length,
                    "bench.timeout.ms": int(args.timeout * 1000),
                    **bench,
                }

            lines = measure_bench_client(
                peers, classes, kind, props[kind], bench_props, args.timeout, done, count
            )
            if args.mode == "steady":
                return steady_rates(lines, args.warmup)
            record = fields([ln for ln in lines if ln.startswith("RECORD ")][-1])
            replay = fields([ln for ln in lines if ln.startswith("REPLAY ")][-1])
            return {
                "record_msgs_per_s": record["msgs_per_s"],
                "replay_msgs_per_s": replay["msgs_per_s"],
            }

        results = compare(measure, args.runs, args.order, label=f"archive_throughput {length} B")
        entry: dict[str, Any] = {"messages": messages} if args.mode == "pass" else {}
        for what in ("record", "replay"):
            ours = median_of(results["ours"], f"{what}_msgs_per_s")
            java = median_of(results["java"], f"{what}_msgs_per_s")
            entry[f"{what}_ours_msgs_per_s"] = rounded(ours, 0)
            entry[f"{what}_java_msgs_per_s"] = rounded(java, 0)
            entry[f"{what}_ours_mb_per_s"] = rounded(ours * length / 1e6 if ours else None)
            entry[f"{what}_java_mb_per_s"] = rounded(java * length / 1e6 if java else None)
            entry[f"{what}_ratio"] = ratio(ours, java)
            ratios.append(entry[f"{what}_ratio"])
            if args.mode == "steady":
                entry[f"{what}_cold_ratio"] = ratio(
                    median_of(results["ours"], f"{what}_cold_msgs_per_s"),
                    median_of(results["java"], f"{what}_cold_msgs_per_s"),
                )
        entry.update(errors_and_runs(results, digits=1))
        result[f"len_{length}"] = entry
    result.update(runs=args.runs, mode=args.mode, **host)
    if args.mode == "steady":
        result.update(seconds=args.seconds, warmup=args.warmup)
    else:
        result.update(passes=args.passes)
    emit(result)
    if any(r is None for r in ratios):
        return 2
    return 0 if all(r >= 1.0 for r in ratios if r is not None) else 1


if __name__ == "__main__":
    run_main(main)
