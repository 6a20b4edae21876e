#!/usr/bin/env python3
"""Throughput under random receive loss: a sequenced stream over UDP loopback, ours vs the Java driver.

One driver per run carries both ends of ``aeron:udp?endpoint=localhost:<free port>`` (as ``udp_throughput.py``),
and its receiver drops each arriving data datagram with probability ``--loss`` before looking at it: ours
with its in-driver loss generator (``aeron.debug.receive.data.loss.rate``, data and pad frames only), Java
with the same property through its ``DebugReceiveChannelEndpoint`` (``aeron.ReceiveChannelEndpoint.supplier``),
which drops data frames the same way. Everything the receiver NAKs, the sender retransmits (and the loss
applies to retransmissions too).

Clients: tests/system/java ``SequencedPublisher`` offering ``--length`` byte messages as fast as flow control
lets it, and ``SequencedSubscriber`` checking every message arrives once, intact and in order (a run where one
does not is recorded as failed). Rate: from the subscriber's per-second ``PROGRESS`` lines, the first
``--skip`` seconds dropped, over the next ``--seconds`` (steady state). Also per run: NAKs sent and
retransmits sent per second over the same window (cnc.dat system counters).

Runs alternate ours/Java (``--order``), ``--runs`` each; medians; ratio = ours / java msgs/s, goal
``--goal`` (default 5.0 at 5 % loss, the acceptance of docs/design.md's loss policy; 1.5 at 1 %).

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run, or something is missing).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from harness.children import Proc
from harness.cnc import Counters
from harness.java import Peers
from tools.bench.compare import (
    add_compare_args,
    compare,
    driver_props,
    first_error,
    median_of,
    ratio,
    rounded,
)
from tools.bench.harness import SEQUENCED_SOURCES, Harness, compiled_java, free_udp_port, require_peers
from tools.bench.report import BenchError, emit, host_info, no_comparison, run_main
from tools.bench.samples import check_sequenced

STREAM_ID = 1003
PROGRESS = re.compile(r"^PROGRESS (\d+) (\d+)")
COUNTERS = ("NAKs sent", "Retransmits sent")


def loss_props(kind: str, loss: float) -> dict[str, str]:
    if kind == "ours":
        return {"aeron.debug.receive.data.loss.rate": str(loss)}
    return {
        "aeron.ReceiveChannelEndpoint.supplier": "io.aeron.driver.ext.DebugReceiveChannelEndpointSupplier",
        "aeron.debug.receive.data.loss.rate": str(loss),
    }


def measure(
    kind: str, args: argparse.Namespace, props: dict[str, str], peers: Peers, classes: Path
) -> dict[str, Any]:
    with Harness(peers) as h:
        driver = h.start_driver(kind, {**loss_props(kind, args.loss), **props})
        channel = f"aeron:udp?endpoint=localhost:{free_udp_port()}"
        limit_s = int(args.skip + args.seconds + 30)

        def java(main: str, *main_args: Any) -> Proc:
            return h.java(main, {"aeron.dir": driver.aeron_dir}, args=main_args, classes=classes)

        sub = java("SequencedSubscriber", channel, STREAM_ID, 10**15, args.length, limit_s)
        h.wait_for(lambda: sub.find(r"^READY") is not None, 30, "the subscriber", watch=[sub, driver.proc])
        pub = java("SequencedPublisher", channel, STREAM_ID, 0, args.length, 0, limit_s)
        watch = [sub, pub, driver.proc]
        h.wait_for(lambda: sub.find(r"^AVAILABLE") is not None, 30, "a connection", watch=watch)
        counters = Counters(driver.aeron_dir)
        try:
            time.sleep(args.skip)
            start = (time.monotonic(), _received(sub), *(counters.system(c) for c in COUNTERS))
            time.sleep(args.seconds)
            end = (time.monotonic(), _received(sub), *(counters.system(c) for c in COUNTERS))
        finally:
            counters.close()
        check_sequenced(sub, pub)
        seconds = end[0] - start[0]
        return {
            "msgs_per_s": (end[1] - start[1]) / seconds,
            "naks_per_s": (end[2] - start[2]) / seconds,
            "retransmits_per_s": (end[3] - start[3]) / seconds,
        }


def _received(sub: Proc) -> int:
    """Messages received in order so far (the subscriber's last PROGRESS line)."""
    last = 0
    for _, line in list(sub.lines):
        match = PROGRESS.match(line)
        if match:
            last = int(match.group(1))
    return last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_compare_args(parser, timeout=120.0)
    parser.add_argument("--loss", type=float, default=0.05, help="receive data loss rate (default 0.05)")
    parser.add_argument("--length", type=int, default=32, help="message length in bytes (default 32)")
    parser.add_argument("--skip", type=float, default=3.0, help="seconds of data dropped first (default 3)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds (default 10)")
    parser.add_argument("--only", choices=("ours", "java"), help="measure one driver (no ratio)")
    parser.add_argument(
        "--goal", type=float, default=None, help="ratio goal (default 5 at >= 5 %%, else 1.5)"
    )
    args = parser.parse_args()
    if not 0 <= args.loss < 1:
        parser.error("--loss must be in [0, 1)")
    goal = args.goal if args.goal is not None else (5.0 if args.loss >= 0.05 else 1.5)
    props = driver_props(args)
    base = {"bench": "loss_throughput", "loss": args.loss, "length": args.length}
    try:
        peers = require_peers()
        with compiled_java(peers, SEQUENCED_SOURCES) as classes:
            host = host_info()
            results = compare(
                lambda kind: measure(kind, args, props[kind], peers, classes),
                args.runs,
                args.order,
                kinds=(args.only,) if args.only else ("ours", "java"),
                label=f"loss_throughput {args.loss:g}",
            )
    except BenchError as exc:
        return no_comparison(base, exc)
    results.setdefault("ours", [])
    results.setdefault("java", [])
    ours, java = median_of(results["ours"], "msgs_per_s"), median_of(results["java"], "msgs_per_s")
    result_ratio = ratio(ours, java)
    result = {
        **base,
        "ours_msgs_per_s": rounded(ours, 0),
        "java_msgs_per_s": rounded(java, 0),
        "ratio": result_ratio,
        "goal": f">= {goal:g}",
        "ours_error": first_error(results["ours"]),
        "java_error": first_error(results["java"]),
        "ours_runs": [
            {k: rounded(v, 0) for k, v in r.items()} if "error" not in r else r for r in results["ours"]
        ],
        "java_runs": [
            {k: rounded(v, 0) for k, v in r.items()} if "error" not in r else r for r in results["java"]
        ],
        **host,
    }
    emit(result)
    if result_ratio is None:
        return 2
    return 0 if result_ratio >= goal else 1


if __name__ == "__main__":
    run_main(main)
