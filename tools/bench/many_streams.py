"""Cost as streams multiply: N streams of one UDP channel, ours against the Java 1.15.1 driver (same run).

One publisher process and one subscriber process (tools/bench/many_streams_peer.py, our Python client for both
drivers, each in a session of its own) share ``aeron:udp?endpoint=localhost:<free port>|term-length=65536``: N
exclusive publications on stream ids 1001..1000+N offered round-robin at ``--rate`` messages of ``--length``
bytes a second in all (0: flat out), N subscriptions polled round-robin. Per N and driver: the driver's CPU (% of
one core) over the steady window (``--seconds`` after ``--warmup``), the delivered rate over it, and the p50/p99 of
a message's time from offer to poll (the monotonic clock stamped in it). Both drivers get a counters buffer large
enough for 1,024 streams. Medians over ``--runs``; ratios ours / Java: CPU (lower is better) and delivered rate.

    .venv/bin/python -m tools.bench.many_streams                          # 1, 16, 256 streams at 200 k msgs/s
    .venv/bin/python -m tools.bench.many_streams --streams 1024
    .venv/bin/python -m tools.bench.many_streams --streams 256 --rate 0   # flat out

Goals: at a fixed rate, ours' CPU <= Java's with the full rate delivered; flat out, ours >= 2x Java's rate.
Exit code: 0 goals met, 1 a goal missed, 2 no comparison.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from typing import Any

from tools.bench.compare import ratio, rounded
from tools.bench.harness import KINDS, Harness, free_udp_port
from tools.bench.report import BenchError, emit, host_info, no_comparison, progress, run_main

COUNTERS_BUFFER = 16 * 1024 * 1024
RATE_LINE = re.compile(r"^RATE (\S+) (\d+)$")
LATENCY_LINE = re.compile(r"^LATENCY (\S+) (\S+) (\d+)$")
DELIVERED_GOAL = 0.95  # of the offered rate, at a fixed rate


def measure(kind: str, streams: int, args: argparse.Namespace) -> dict[str, Any]:
    with Harness() as h:
        driver = h.start_driver(kind, {"aeron.counters.buffer.length": COUNTERS_BUFFER})
        channel = f"aeron:udp?endpoint=localhost:{free_udp_port()}|term-length=65536"
        total_s = args.warmup + args.seconds
        common = ["--dir", str(driver.aeron_dir), "--channel", channel, "--streams", str(streams)]
        peer = [sys.executable, "-m", "tools.bench.many_streams_peer"]
        sub = h.spawn("sub", [*peer, "sub", *common, "--seconds", str(total_s + 2)])
        h.wait_for(lambda: sub.find("^SUBSCRIBED") is not None, 60 + streams / 10, "subscriptions", [sub])
        pub_args = ["--rate", str(args.rate), "--length", str(args.length), "--seconds", str(total_s + 1)]
        pub = h.spawn("pub", [*peer, "pub", *common, *pub_args])
        for proc in (pub, sub):
            h.wait_for(
                lambda p=proc: p.find("^READY") is not None,
                60 + streams / 10,
                f"{proc.name} ready",
                [pub, sub],
            )
        time.sleep(args.warmup)
        t0, cpu0 = driver.cpu.now()
        time.sleep(args.seconds)
        t1, cpu1 = driver.cpu.now()
        h.wait_for(lambda: sub.find("^LATENCY") is not None, 30, "subscriber's latency line", [sub])
        rates = [
            (float(m.group(1)), int(m.group(2))) for _, line in sub.lines if (m := RATE_LINE.match(line))
        ]
        window = [(t, n) for t, n in rates if t0 - 0.5 <= t <= t1 + 0.5]
        if len(window) < 2:
            raise BenchError(f"{kind}: too few RATE lines in the window: {rates}")
        delivered = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
        latency = LATENCY_LINE.match(sub.find(LATENCY_LINE).group(0))  # type: ignore[union-attr]
        return {
            "driver_cpu_pct": 100.0 * (cpu1 - cpu0) / (t1 - t0),
            "delivered_msgs_per_s": delivered,
            "p50_us": float(latency.group(1)),  # type: ignore[union-attr]
            "p99_us": float(latency.group(2)),  # type: ignore[union-attr]
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--streams", default="1,16,256", help="stream counts, comma separated (default 1,16,256)"
    )
    parser.add_argument(
        "--rate", type=float, default=200_000, help="msgs/s in all (0: flat out; default 200,000)"
    )
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=8.0, help="steady window (default 8)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before the window (default 3)")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    base = {"bench": "many_streams", "rate": args.rate, "length": args.length, **host_info()}
    table: dict[str, Any] = {}
    met = []
    try:
        for streams in [int(n) for n in args.streams.split(",")]:
            results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
            for run in range(args.runs):
                for kind in KINDS if run % 2 == 0 else KINDS[::-1]:
                    results[kind].append(measure(kind, streams, args))
                    progress(f"{streams} streams, {kind}, run {run + 1}: {results[kind][-1]}")
            entry: dict[str, Any] = {}
            for kind in KINDS:
                for key in ("driver_cpu_pct", "delivered_msgs_per_s", "p50_us", "p99_us"):
                    entry[f"{kind}_{key}"] = rounded(statistics.median(r[key] for r in results[kind]), 1)
            entry["cpu_ratio"] = ratio(entry["ours_driver_cpu_pct"], entry["java_driver_cpu_pct"])
            entry["rate_ratio"] = ratio(
                entry["ours_delivered_msgs_per_s"], entry["java_delivered_msgs_per_s"]
            )
            if args.rate > 0:
                met.append(
                    entry["cpu_ratio"] <= 1.0
                    and entry["ours_delivered_msgs_per_s"] >= DELIVERED_GOAL * args.rate
                )
            else:
                met.append(entry["rate_ratio"] >= 2.0)
            table[str(streams)] = entry
    except BenchError as exc:
        return no_comparison({**base, "streams": table}, exc)
    emit({**base, "streams": table})
    return 0 if all(met) else 1


if __name__ == "__main__":
    run_main(main)
