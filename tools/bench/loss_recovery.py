#!/usr/bin/env python3
"""Loss recovery: time to recover from a burst of loss on a 50 ms RTT link, ours vs the Java driver.

Each run builds two
network namespaces (harness/netns.py) joined by a link delaying every packet 25 ms each way (RTT 50 ms,
no other impairment: netns.py's TUN relay here, veth + netem where the kernel has netem), and runs the same
driver kind on both ends -- ours, or the Aeron 1.15.1 Java MediaDriver (SHARED threading) -- with the same
Java clients: ``SequencedPublisher`` on host a offers a steady stream (default 4,000 msgs/s of 256 bytes,
about 1.1 MB/s, 45 % of what a 128 KiB receiver window allows at 50 ms RTT) to
``aeron:udp?endpoint=<host b>:40124``, and ``SequencedSubscriber`` on host b checks every message arrives in
order and intact (a run where it does not is recorded as failed).

The burst (default: 30 % loss for 1 s, both directions): after ``--warmup`` seconds of steady streaming a
classic-BPF ``tc`` filter on the ingress of both hosts' link devices starts dropping each IP packet with
probability ``--burst-loss`` (``ld rand`` against a threshold; a match is redirected to a down IFB device,
which drops it). This is real loss in the kernel, independent of the relay. The filter is installed at set-up
matching nothing; the burst starts and ends by replacing its program (``tc filter replace``, about 4 ms
each, b's device first), so the packets it dropped are counted by the same action. The drops come from the
kernel's random numbers (not seeded), hence several runs and medians. ``--burst-loss 1
--burst-ms 200`` gives a 200 ms blackout instead.

Recovery time: the burst ends when both filters match nothing again (t_end). Right then the sending driver's
``snd-pos`` of the stream is read: everything up to it had been sent before the burst ended. Recovery time is
from t_end until the subscriber's ``sub-pos`` in the receiving driver reaches that position (cnc.dat counters
polled every 0.5 ms from outside the namespaces). It includes at least a one-way delay (data sent in the
burst's last 25 ms is still in flight) and is limited by how the receiver NAKs: Aeron 1.15.1 NAKs one gap at a
time (the first after the rebuild position) so each gap costs a round trip, while our driver NAKs every gap a
scan finds. Also reported per run: NAKs sent by the receiver, NAKs received and retransmits sent by the sender
from the burst's start until recovery, and the packets the burst dropped each way.

Runs alternate ours/Java (``--order``), ``--runs`` each (default 3); medians are reported, ratio = ours / java
recovery time (goal < 1.0: ours faster). One JSON line on stdout, progress on stderr.

Needs root and iproute2 with ``tc`` (network namespaces, clsact, cls_bpf, mirred, ifb), the Aeron peer
(``make peers``) and javac (the clients are tests/system/java/Sequenced*.java, compiled at start).

Exit code: 0 goal met, 1 goal missed, 2 no ratio (a driver failed every run, or something is missing).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import netns
from harness.children import Proc, describe_failure
from harness.cnc import Counters, cnc_ready
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
from tools.bench.harness import SEQUENCED_SOURCES, Harness, compiled_java, require_peers, wait_ready
from tools.bench.report import BenchError, emit, host_info, no_comparison, run_main
from tools.bench.samples import check_sequenced

STREAM_ID = 1002
PORT = 40124
POLL_INTERVAL_S = 0.0005
CONNECT_TIMEOUT_S = 30.0
SUBSCRIBER_COUNT = 10**15  # run until stopped

# Classic BPF for cls_bpf: A = random u32 (ld rand = SKF_AD_OFF + SKF_AD_RANDOM); match (return -1, so the
# mirred action drops the packet) when A < threshold, else no match (return 0).
_LD_RAND = "32 0 0 4294963256"
NEVER = "1,6 0 0 0"
ALWAYS = "1,6 0 0 4294967295"


def drop_program(probability: float) -> str:
    if probability <= 0:
        return NEVER
    if probability >= 1:
        return ALWAYS
    threshold = round(probability * 2**32)
    return f"4,{_LD_RAND},53 1 0 {threshold},6 0 0 4294967295,6 0 0 0"


SYSTEM_COUNTERS = ("NAKs sent", "NAKs received", "Retransmits sent")
SENDER_POSITION, SUBSCRIBER_POSITION = 2, 4


# ---------------------------------------------------------------------------------------------------------------
# One run


class Run:
    """Both hosts of one run: drivers, clients and the burst filters."""

    def __init__(self, h: Harness, classes: Path, a: netns.Host, b: netns.Host) -> None:
        self.h, self.classes, self.hosts = h, classes, (a, b)
        self.drop_devices: dict[str, str] = {}

    def start_driver(self, host: netns.Host, kind: str, props: Mapping[str, Any]) -> Path:
        aeron_dir = self.h.new_dir(f"{kind}-{host.name[-1]}") / "aeron"
        cmd = host.command(*self.h.driver_cmd(kind, aeron_dir, props))
        proc = self.h.spawn(f"{kind}-driver-{host.name[-1]}", cmd)
        wait_ready(proc, lambda: cnc_ready(aeron_dir), f"{kind} driver")
        return aeron_dir

    def client(self, host: netns.Host, main_class: str, aeron_dir: Path, *args: Any) -> Proc:
        cmd = self.h.java_cmd(main_class, {"aeron.dir": aeron_dir}, args, self.classes)
        return self.h.spawn(f"{main_class}-{host.name[-1]}", host.command(*cmd))

    def install_filters(self) -> None:
        """A clsact qdisc on each link device with a drop filter that matches nothing yet."""
        for host in self.hosts:
            device = f"{host.interface[:-1]}x{host.interface[-1]}"  # amd<token>xa: an IFB left down
            host.check("ip", "link", "add", device, "type", "ifb")
            host.check("tc", "qdisc", "add", "dev", host.interface, "clsact")
            self.drop_devices[host.name] = device
            self._filter(host, "add", NEVER)

    def _filter(self, host: netns.Host, verb: str, program: str) -> None:
        cmd = ["tc", "-n", host.name, "filter", verb, "dev", host.interface, "ingress", "protocol", "ip"]
        cmd += ["prio", "1", "handle", "1", "bpf", "bytecode", program]
        cmd += ["action", "mirred", "egress", "redirect", "dev", self.drop_devices[host.name], "index", "1"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            raise BenchError(f"tc filter {verb} failed in {host.name}: {result.stderr.strip()}")

    def set_loss(self, program: str) -> None:
        a, b = self.hosts
        self._filter(b, "replace", program)
        self._filter(a, "replace", program)

    def dropped(self, host: netns.Host) -> int:
        text = host.check("tc", "-s", "actions", "ls", "action", "mirred").stdout
        match = re.search(r"Sent \d+ bytes (\d+) pkt", text)
        return int(match.group(1)) if match else -1


def measure_recovery(
    kind: str, args: argparse.Namespace, props: Mapping[str, Any], peers: Peers, classes: Path
) -> dict[str, Any]:
    try:
        hosts = netns.two_hosts(delay_ms=args.delay_ms)
        with hosts as (a, b), Harness(peers) as h:
            return _measure(Run(h, classes, a, b), kind, args, props)
    except netns.NetnsUnavailable as exc:
        raise BenchError(str(exc)) from None
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        if isinstance(exc, BenchError):
            raise
        raise BenchError(f"{type(exc).__name__}: {exc}") from None


def _measure(run: Run, kind: str, args: argparse.Namespace, props: Mapping[str, Any]) -> dict[str, Any]:
    a, b = run.hosts
    h = run.h
    run.install_filters()
    a_dir, b_dir = run.start_driver(a, kind, props), run.start_driver(b, kind, props)
    channel = f"aeron:udp?endpoint={b.address}:{PORT}"
    limit_s = int(args.warmup + args.burst_ms / 1000 + args.timeout + 60)
    sub = run.client(
        b, "SequencedSubscriber", b_dir, channel, STREAM_ID, SUBSCRIBER_COUNT, args.length, limit_s
    )
    clients = [sub]
    h.wait_for(lambda: sub.find(r"^READY") is not None, CONNECT_TIMEOUT_S, "the subscriber", watch=clients)
    pub = run.client(a, "SequencedPublisher", a_dir, channel, STREAM_ID, 0, args.length, args.rate, limit_s)
    clients.append(pub)
    drivers = [p for p in h.procs if "driver" in p.name]
    watch = [*clients, *drivers]
    h.wait_for(lambda: pub.find(r"^CONNECTED") is not None, CONNECT_TIMEOUT_S, "a connection", watch=watch)
    session_id = int(pub.find(r"^PUB (-?\d+)").group(1))  # type: ignore[union-attr]

    sending, receiving = Counters(a_dir), Counters(b_dir)
    try:
        found: dict[str, int | None] = {}

        def positions_found() -> bool:
            found["snd"] = sending.find(SENDER_POSITION, session_id=session_id, stream_id=STREAM_ID)
            found["sub"] = receiving.find(SUBSCRIBER_POSITION, session_id=session_id, stream_id=STREAM_ID)
            return found["snd"] is not None and found["sub"] is not None

        h.wait_for(positions_found, CONNECT_TIMEOUT_S, "snd-pos and sub-pos counters", watch=watch)
        snd_pos, sub_pos = found["snd"], found["sub"]
        assert snd_pos is not None and sub_pos is not None
        time.sleep(args.warmup)
        check_sequenced(sub, pub)
        before = _system(sending, receiving)
        rate_before = _stream_rate(receiving, sub_pos, 1.0)
        if rate_before <= 0:
            raise BenchError("the stream is not flowing before the burst")

        burst_start = time.monotonic()
        run.set_loss(drop_program(args.burst_loss))
        loss_on = time.monotonic()
        time.sleep(max(0.0, args.burst_ms / 1000 - (loss_on - burst_start)))
        run.set_loss(NEVER)
        burst_end = time.monotonic()
        target = sending.value(snd_pos)
        behind = target - receiving.value(sub_pos)

        deadline = burst_end + args.timeout
        while (position := receiving.value(sub_pos)) < target:
            now = time.monotonic()
            if now > deadline:
                raise BenchError(
                    f"not recovered {args.timeout:g} s after the burst: sub-pos {position:,} < {target:,}"
                )
            if now - burst_end > 1.0 and any(not p.alive for p in watch):
                raise BenchError(describe_failure(next(p for p in watch if not p.alive)))
            time.sleep(POLL_INTERVAL_S)
        recovered = time.monotonic()
        after = _system(sending, receiving)
        time.sleep(0.5)
        check_sequenced(sub, pub)
        return {
            "recovery_ms": (recovered - burst_end) * 1000,
            "burst_ms": (burst_end - burst_start) * 1000,
            "target_position": target,
            "behind_at_burst_end": behind,
            "naks_sent": after["NAKs sent"] - before["NAKs sent"],
            "naks_received": after["NAKs received"] - before["NAKs received"],
            "retransmits_sent": after["Retransmits sent"] - before["Retransmits sent"],
            "dropped_a_to_b": run.dropped(b),
            "dropped_b_to_a": run.dropped(a),
            "msgs_per_s_before": rate_before / (args.length + 32),
            "link_mode": a.link.mode,
        }
    finally:
        sending.close()
        receiving.close()


def _system(sending: Counters, receiving: Counters) -> dict[str, int]:
    return {
        "NAKs sent": receiving.system("NAKs sent"),
        "NAKs received": sending.system("NAKs received"),
        "Retransmits sent": sending.system("Retransmits sent"),
    }


def _stream_rate(counters: Counters, cid: int, seconds: float) -> float:
    start = counters.value(cid)
    time.sleep(seconds)
    return (counters.value(cid) - start) / seconds


# ---------------------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_compare_args(parser, timeout=60.0)
    parser.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay (default 25: RTT 50 ms)")
    parser.add_argument("--burst-loss", type=float, default=0.3, help="loss rate in the burst (default 0.3)")
    parser.add_argument("--burst-ms", type=float, default=1000.0, help="burst length (default 1000 ms)")
    parser.add_argument("--rate", type=int, default=4000, help="messages per second (default 4000)")
    parser.add_argument("--length", type=int, default=256, help="message length in bytes (default 256)")
    parser.add_argument("--warmup", type=float, default=3.0, help="steady streaming before the burst (s)")
    args = parser.parse_args()
    if not 0 < args.burst_loss <= 1:
        parser.error("--burst-loss must be in (0, 1]")
    if args.length < 16:
        parser.error("--length must be at least 16")
    props = driver_props(args)
    burst = {
        "loss": args.burst_loss,
        "ms": args.burst_ms,
        "where": "ingress of both link devices (tc cls_bpf)",
    }
    base = {
        "bench": "loss_recovery",
        "burst": burst,
        "link": {"delay_ms_each_way": args.delay_ms, "rtt_ms": 2 * args.delay_ms},
        "stream": {"msgs_per_s": args.rate, "length": args.length},
    }
    reason = netns.unavailable_reason()
    if reason is None and shutil.which("tc") is None:
        reason = "the tc command is missing: install iproute2 (make system-deps)"
    try:
        if reason is not None:
            raise BenchError(reason)
        peers = require_peers()
        with compiled_java(peers, SEQUENCED_SOURCES) as classes:
            host = host_info()
            results = compare(
                lambda kind: measure_recovery(kind, args, props[kind], peers, classes),
                args.runs,
                args.order,
                label="loss_recovery",
            )
    except BenchError as exc:
        return no_comparison(base, exc)

    ours_ms, java_ms = median_of(results["ours"], "recovery_ms"), median_of(results["java"], "recovery_ms")
    result_ratio = ratio(ours_ms, java_ms)
    result = {
        **base,
        "ours_recovery_ms": rounded(ours_ms),
        "java_recovery_ms": rounded(java_ms),
        "ratio": result_ratio,
        "goal": "ratio < 1.0 (ours recovers faster)",
        "goal_met": None if result_ratio is None else result_ratio < 1.0,
        "ours_error": first_error(results["ours"]),
        "java_error": first_error(results["java"]),
        "ours_runs": [_round_run(r) for r in results["ours"]],
        "java_runs": [_round_run(r) for r in results["java"]],
        **host,
    }
    for kind in ("ours", "java"):
        ok = [r for r in results[kind] if "error" not in r]
        if ok:
            result[f"{kind}_naks_sent"] = statistics.median(r["naks_sent"] for r in ok)
            result[f"{kind}_retransmits_sent"] = statistics.median(r["retransmits_sent"] for r in ok)
    emit(result)
    if result_ratio is None:
        return 2
    return 0 if result_ratio < 1.0 else 1


def _round_run(run: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in run.items()}


if __name__ == "__main__":
    run_main(main)
