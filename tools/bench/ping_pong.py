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

Every run measures, one after the other in an order that rotates from run to run: our driver with its
defaults (``ours``), our driver with the documented low-latency profile (``ours_ll``: ``mediadriver run
--profile low-latency``, docs/tuning.md "The low-latency profile"; ``--no-profile`` skips it) and the Java driver. The JSON
line reports median p50/p99 per driver over ``--runs`` and ratios to Java (lower is better). Goals over UDP:
p50 and p99 <= 1.0x Java with our defaults, <= 0.7x with the low-latency profile; over IPC p99 <= 1.5x.
Ping's warm-up (``--warmup-iterations`` x ``--warmup-messages``) runs before the timed round trips, so the
histogram is steady state.

With ``--reference c`` (or ``java,c``) the Aeron 1.53 C driver ``aeronmd`` (SHARED, ``--c-prop``;
harness/c_driver.py) is measured with our C ``ping`` and ``pong`` clients (``c``), and so is our driver with
those same clients (``ours-c``): ``c_p50_ratio`` / ``c_p99_ratio`` are ``ours-c`` over ``c``, held to the goals of
``ours``. The C ping prints its round trips in the Java Ping's table layout (exact percentiles).

Over IPC the driver is not on the message path (Ping and Pong share mapped log buffers), so the figures there
mostly show that our conductor does not disturb the clients; over UDP every message crosses the driver twice.
On a machine with fewer than 3 cores the two busy-spinning clients and the driver compete for CPU and the
latencies are scheduler-bound.

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed or does not support the channel, or no peer).
"""

from __future__ import annotations

import argparse
from typing import Any

from driver.context import PROFILES
from harness.java import Peers
from tools.bench.compare import (
    JAVA_DEFAULT_PROPS,
    add_compare_args,
    driver_props,
    first_error,
    median_of,
    parse_props,
    ratio,
    rounded,
)
from tools.bench.harness import C_KIND, STARTUP_TIMEOUT_S, Harness, free_udp_port, require_peers
from tools.bench.report import BenchError, emit, host_info, no_comparison, progress, run_main
from tools.bench.samples import parse_histogram

PING_STREAM_ID, PONG_STREAM_ID = 10, 11
# Per channel: timed round trips, warm-up iterations, warm-up messages per iteration (None: Ping's own 5 x 10,000).
# UDP round trips on a small, busy machine are scheduler-bound (milliseconds), hence the smaller UDP counts.
DEFAULTS: dict[str, tuple[int, int | None, int | None]] = {
    "ipc": (200_000, None, None),
    "udp": (20_000, 3, 5_000),
}
GOALS = {"ipc": {"ours": 1.5}, "udp": {"ours": 1.0, "ours_ll": 0.7}}
"""Per channel and variant: the largest p50 and p99 ratio to Java that meets the goal (IPC: p99 only)."""


def run_orders(runs: int, kinds: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Each run's order: the kinds rotated by one more each run, so none always goes first."""
    return [kinds[i % len(kinds) :] + kinds[: i % len(kinds)] for i in range(runs)]


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
    clients: str = "java",
) -> dict[str, Any]:
    """One run of ``kind``'s driver with the Java Ping/Pong, or with our C ping/pong when ``clients`` is "c"."""
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
        if clients == C_KIND:
            pong, ready = h.c_client("pong", props), "^Pong ready"
        else:
            pong, ready = h.java("io.aeron.samples.Pong", props), "^Using exclusive publications"
        h.wait_for(
            lambda: pong.find(ready) is not None,
            STARTUP_TIMEOUT_S,
            "Pong to start",
            watch=[pong, driver.proc],
            fail_on_exception=[pong],
        )
        if clients == C_KIND:
            ping = h.c_client("ping", props)
        else:
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
    parser.add_argument(
        "--no-profile", action="store_true", help="skip our driver with the low-latency profile"
    )
    parser.add_argument(
        "--reference",
        default="java",
        help="java (the Java driver with Java Ping/Pong), c (aeronmd, with ours, both with our C ping/pong) or "
        "java,c (default java)",
    )
    parser.add_argument("--c-prop", action="append", metavar="NAME=VALUE", help="-D property for aeronmd")
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
    props[C_KIND] = {**JAVA_DEFAULT_PROPS, **parse_props(args.c_prop)}
    props["ours-c"] = props["ours"]
    references = [r.strip() for r in args.reference.split(",") if r.strip()]
    if not references or any(r not in ("java", C_KIND) for r in references):
        raise SystemExit(f"--reference {args.reference!r}: expected java, c or java,c")
    try:
        peers = require_peers()
    except BenchError as exc:
        return no_comparison({"bench": "ping_pong"}, exc)
    host = host_info()

    kinds: tuple[str, ...] = ()
    if "java" in references:
        kinds = ("ours", "java") if args.no_profile else ("ours", "ours_ll", "java")
    if C_KIND in references:
        kinds += ("ours-c", C_KIND)
    props["ours_ll"] = {**PROFILES["low-latency"], **props["ours"]}

    def measure(kind: str) -> dict[str, Any]:
        return measure_ping(
            kind if kind in ("java", C_KIND) else "ours",
            args.channel,
            args.messages,
            args.length,
            args.timeout,
            props[kind],
            peers,
            args.warmup_iterations,
            args.warmup_messages,
            C_KIND if kind in ("ours-c", C_KIND) else "java",
        )

    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for i, order in enumerate(run_orders(args.runs, kinds)):
        for kind in order:
            progress(f"ping_pong[{args.channel}]: run {i + 1}/{args.runs}, {kind}")
            try:
                result_of_run = measure(kind)
            except BenchError as exc:
                result_of_run = {"error": str(exc)}
            progress(f"ping_pong[{args.channel}]: {kind} run {i + 1}: {result_of_run}")
            results[kind].append(result_of_run)
    medians = {
        (kind, key): median_of(results[kind], key)
        for kind in kinds
        for key in ("p50_us", "p99_us", "p999_us", "max_us")
    }
    result: dict[str, Any] = {
        "bench": "ping_pong",
        "channel": "aeron:ipc" if args.channel == "ipc" else "aeron:udp?endpoint=localhost:<free port>",
        "length": args.length,
        "messages": args.messages,
        "warmup": f"{_or(args.warmup_iterations, 5)} x {_or(args.warmup_messages, 10_000)}",
    }
    if "java" in references:
        result.update(
            {
                "ours_p50_us": rounded(medians["ours", "p50_us"], 3),
                "java_p50_us": rounded(medians["java", "p50_us"], 3),
                "p50_ratio": ratio(medians["ours", "p50_us"], medians["java", "p50_us"]),
                "ours_p99_us": rounded(medians["ours", "p99_us"], 3),
                "java_p99_us": rounded(medians["java", "p99_us"], 3),
                "p99_ratio": ratio(medians["ours", "p99_us"], medians["java", "p99_us"]),
                "ours_p999_us": rounded(medians["ours", "p999_us"], 3),
                "java_p999_us": rounded(medians["java", "p999_us"], 3),
            }
        )
    if C_KIND in references:  # ours and aeronmd, both with the C ping/pong
        for p in ("p50", "p99", "p999"):
            result[f"ours_c_{p}_us"] = rounded(medians["ours-c", f"{p}_us"], 3)
            result[f"c_{p}_us"] = rounded(medians[C_KIND, f"{p}_us"], 3)
        for p in ("p50", "p99"):
            result[f"c_{p}_ratio"] = ratio(medians["ours-c", f"{p}_us"], medians[C_KIND, f"{p}_us"])
    result["goal"] = {kind: f"ratios <= {goal:g}" for kind, goal in GOALS[args.channel].items()}
    result["runs"] = args.runs
    result.update(host)
    if "ours_ll" in kinds:
        result["ours_ll_p50_us"] = rounded(medians["ours_ll", "p50_us"], 3)
        result["ours_ll_p99_us"] = rounded(medians["ours_ll", "p99_us"], 3)
        result["ll_p50_ratio"] = ratio(medians["ours_ll", "p50_us"], medians["java", "p50_us"])
        result["ll_p99_ratio"] = ratio(medians["ours_ll", "p99_us"], medians["java", "p99_us"])
    for kind in kinds:
        if medians[kind, "p99_us"] is None:
            result[f"{kind}_error"] = first_error(results[kind]) or "not run"
        result[f"{kind}_runs"] = [
            {"error": r["error"]}
            if "error" in r
            else {k: r[k] for k in ("p25_us", "p50_us", "p75_us", "p99_us", "p999_us", "max_us", "mean_us")}
            for r in results[kind]
        ]
    emit(result)
    # Per reference, the ratio prefixes held to each goal: ours (and ours_ll) to java, ours-c to c (ours' goal).
    held: list[tuple[str, float]] = []
    if "java" in references:
        held += [
            ("" if kind == "ours" else "ll_", goal)
            for kind, goal in GOALS[args.channel].items()
            if kind in kinds
        ]
    if C_KIND in references:
        held.append(("c_", GOALS[args.channel]["ours"]))
    if any(result.get(f"{prefix}p99_ratio") is None for prefix, _ in held if prefix != "ll_"):
        return 2
    checked = ("p99",) if args.channel == "ipc" else ("p50", "p99")
    met = all(
        (result[f"{prefix}{p}_ratio"] or float("inf")) <= goal for prefix, goal in held for p in checked
    )
    return 0 if met else 1


if __name__ == "__main__":
    run_main(main)
