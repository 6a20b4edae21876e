#!/usr/bin/env python3
"""Round-trip latency: Java Ping <-> Pong through our driver vs the Java driver, over aeron:ipc or aeron:udp.

Over UDP (``--channel udp``) or IPC (``--channel ipc``). Each run starts one
driver -- ours, or the Aeron 1.15.1 Java MediaDriver in SHARED threading mode -- then ``io.aeron.samples.Pong``
and ``io.aeron.samples.Ping`` (both busy-spin) against it. Ping publishes on the ping channel, stream 10, Pong
echoes each message back on the pong channel, stream 11: both ``aeron:ipc``, or
``aeron:udp?endpoint=localhost:<free port>`` with one port for each direction. Ping warms up (its default: 5
iterations of 10,000 messages), sends ``--messages`` messages of ``--length`` bytes one at a time and prints an
HdrHistogram of the round trips in microseconds; p50/p99 are read from that table (the first row whose
cumulative count reaches 50 % / 99 %). A run that does not finish within ``--timeout`` seconds, or whose
client throws (e.g. a channel the driver does not support yet), is recorded as failed.

Ours and Java run alternately ``--runs`` times; the JSON line reports median p50/p99 per driver and ratios
ours / java (lower is better; the goal is p99 ratio <= 1.5).

Over IPC the driver is not on the message path (Ping and Pong share mapped log buffers), so the figures there
mostly show that our conductor does not disturb the clients; over UDP every message crosses the driver twice.
On a machine with fewer than 3 cores the two busy-spinning clients and the driver compete for CPU and the
latencies are scheduler-bound.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed or does not support the channel, or no peer).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    STARTUP_TIMEOUT_S,
    BenchError,
    Harness,
    Peers,
    add_compare_args,
    compare,
    driver_props,
    emit,
    first_error,
    free_udp_port,
    host_info,
    median_of,
    parse_histogram,
    progress,
    ratio,
    require_peers,
    rounded,
    run_main,
)

PING_STREAM_ID, PONG_STREAM_ID = 10, 11
GOAL_P99_RATIO = 1.5
# Per channel: timed round trips, warm-up iterations, warm-up messages per iteration (None: Ping's own 5 x 10,000).
# UDP round trips on a small, busy machine are scheduler-bound (milliseconds), hence the smaller UDP counts.
DEFAULTS: dict[str, tuple[int, int | None, int | None]] = {
    "ipc": (200_000, None, None),
    "udp": (10_000, 2, 1_000),
}


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def channels(kind: str) -> tuple[str, str]:
    if kind == "ipc":
        return "aeron:ipc", "aeron:ipc"
    return (
        f"aeron:udp?endpoint=localhost:{free_udp_port()}",
        f"aeron:udp?endpoint=localhost:{free_udp_port()}",
    )


def measure_ping(
    kind: str,
    channel_kind: str,
    messages: int,
    length: int,
    timeout: float,
    driver_props: dict[str, str],
    peers: Peers,
    warmup_iterations: int | None,
    warmup_messages: int | None,
) -> dict[str, Any]:
    ping_channel, pong_channel = channels(channel_kind)
    with Harness(peers) as h:
        driver = h.start_driver(kind, driver_props)
        props: dict[str, Any] = {
            "aeron.dir": driver.aeron_dir,
            "aeron.sample.ping.channel": ping_channel,
            "aeron.sample.pong.channel": pong_channel,
            "aeron.sample.ping.streamId": PING_STREAM_ID,
            "aeron.sample.pong.streamId": PONG_STREAM_ID,
            "aeron.sample.messages": messages,
            "aeron.sample.messageLength": length,
        }
        if warmup_iterations is not None:
            props["aeron.sample.warmup.iterations"] = warmup_iterations
        if warmup_messages is not None:
            props["aeron.sample.warmup.messages"] = warmup_messages
        pong = h.java("io.aeron.samples.Pong", props)
        h.wait_for(
            lambda: pong.find("^Using exclusive publications") is not None,
            STARTUP_TIMEOUT_S,
            "Pong to start",
            watch=[pong, driver.proc],
            fail_on_exception=[pong],
        )
        ping = h.java("io.aeron.samples.Ping", props, stdin=b"n\n")
        try:
            h.wait_for(
                lambda: ping.find(r"^#\[Max\s*=") is not None,
                timeout,
                f"Ping's histogram of {messages:,} round trips",
                watch=[pong, ping, driver.proc],
                fail_on_exception=[pong, ping],
            )
        except BenchError as exc:
            if not str(exc).startswith("timed out"):
                raise
            raise BenchError(f"{exc} (Ping's last line: {ping.tail(1).strip()!r})") from None
        return parse_histogram(ping.text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--channel", choices=("ipc", "udp"), default="ipc", help="aeron:ipc (default) or aeron:udp"
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=None,
        help=f"timed round trips per run (default {DEFAULTS['ipc'][0]:,} on ipc, {DEFAULTS['udp'][0]:,} on udp)",
    )
    parser.add_argument("--length", type=int, default=32, help="message length in bytes (default 32)")
    parser.add_argument(
        "--warmup-iterations",
        type=int,
        default=None,
        help="Ping's warm-up iterations (default: Ping's own 5 on ipc, 2 on udp)",
    )
    parser.add_argument(
        "--warmup-messages",
        type=int,
        default=None,
        help="messages per warm-up iteration (default: Ping's own 10,000 on ipc, 1,000 on udp)",
    )
    add_compare_args(parser, timeout=300.0)
    args = parser.parse_args()
    default_messages, default_iterations, default_warmup = DEFAULTS[args.channel]
    if args.messages is None:
        args.messages = default_messages
    if args.warmup_iterations is None:
        args.warmup_iterations = default_iterations
    if args.warmup_messages is None:
        args.warmup_messages = default_warmup
    props = driver_props(args)
    try:
        peers = require_peers()
    except BenchError as exc:
        progress(str(exc))
        emit({"bench": "ping_pong", "error": str(exc)})
        return 2
    host = host_info()

    def measure(kind: str) -> dict[str, Any]:
        return measure_ping(
            kind,
            args.channel,
            args.messages,
            args.length,
            args.timeout,
            props[kind],
            peers,
            args.warmup_iterations,
            args.warmup_messages,
        )

    results = compare(measure, args.runs, args.order, label=f"ping_pong[{args.channel}]")
    medians = {
        (kind, key): median_of(results[kind], key)
        for kind in ("ours", "java")
        for key in ("p50_us", "p99_us", "p999_us", "max_us")
    }
    result: dict[str, Any] = {
        "bench": "ping_pong",
        "channel": "aeron:ipc" if args.channel == "ipc" else "aeron:udp?endpoint=localhost:<free port>",
        "length": args.length,
        "messages": args.messages,
        "warmup": f"{_or(args.warmup_iterations, 5)} x {_or(args.warmup_messages, 10_000)}",
        "ours_p50_us": rounded(medians["ours", "p50_us"], 3),
        "java_p50_us": rounded(medians["java", "p50_us"], 3),
        "p50_ratio": ratio(medians["ours", "p50_us"], medians["java", "p50_us"]),
        "ours_p99_us": rounded(medians["ours", "p99_us"], 3),
        "java_p99_us": rounded(medians["java", "p99_us"], 3),
        "p99_ratio": ratio(medians["ours", "p99_us"], medians["java", "p99_us"]),
        "ours_p999_us": rounded(medians["ours", "p999_us"], 3),
        "java_p999_us": rounded(medians["java", "p999_us"], 3),
        "goal": f"p99_ratio <= {GOAL_P99_RATIO:g}",
        "runs": args.runs,
        **host,
    }
    for kind in ("ours", "java"):
        if medians[kind, "p99_us"] is None:
            result[f"{kind}_error"] = first_error(results[kind]) or "not run"
        result[f"{kind}_runs"] = [
            {"error": r["error"]}
            if "error" in r
            else {k: r[k] for k in ("p50_us", "p99_us", "p999_us", "max_us", "mean_us")}
            for r in results[kind]
        ]
    emit(result)
    if result["p99_ratio"] is None:
        return 2
    return 0 if result["p99_ratio"] <= GOAL_P99_RATIO else 1


if __name__ == "__main__":
    run_main(main)
