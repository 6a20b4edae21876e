#!/usr/bin/env python3
"""Where a round trip's time goes inside our driver: Java Ping <-> Pong over UDP, split into stages.

Java's ``Ping`` writes ``System.nanoTime()`` (CLOCK_MONOTONIC on Linux, the clock of Python's
``time.monotonic_ns()``) into the first 8 bytes of each message and ``Pong`` echoes the message, so every data
frame of a round trip carries the time its ping was offered. The driver runs in a child process of this script
with its publications' sends and its UDP transport's send and receive calls wrapped (nothing in the driver
changes): each data frame sent or read is stamped with its age. Frames the native steady-state cycle (driver/fast_cycle.py) moves never pass
those calls: they are stamped when its call returns, from the logs between each publication's sender position
(and each image's high-water mark) before and after it (a read is then stamped after its rebuild, a microsecond
or two late). The stages, medians over the timed round trips (µs since the ping was offered):

- ``ping_sent``: the sender found Ping's frame in the log and handed it to the kernel;
- ``ping_read``: the receiver read that datagram (loopback delivery and the loop's wake-up);
- ``pong_sent``: Pong polled the ping, offered its echo, and the sender sent it;
- ``pong_read``: the receiver read the echo;
- ``rtt``: Ping's own p50 (it polled the echo from the image).

Each stage's own time is the difference to the previous one (``split``), and Ping's quartiles (the round trips
are spread wide here: the median moves a long way between runs when it falls between two humps). Also the
driver's CPU per round trip (its CPU time while Ping ran over Ping's round trips, warm-up included: with a
busy-spinning client on each of two cores the driver shares a core with one of them and waits for its turn, so
the round trip grows with this figure), the driver's duty-cycle rate, how
often it parked, and the median time of a duty cycle that did work and of one that did none (SHARED threading),
and per agent the median time of a duty cycle that did nothing and of one that did work (the timing wrappers add
about 0.2 µs each), how late the park timer's wake-ups run after their armed time, and how often the work probe
answered a park's end without a cycle, how many wake-ups per round trip the native cycle served and how many it
handed back to a Python cycle, so a change in the idle strategy or the cost of a cycle shows; and
``tail_stages``: the share of round trips with a stage over a millisecond, by stage (where the tail's waits
fall). With ``RTT_SPLIT_CPROFILE=FILE`` in its environment the driver runs under cProfile and leaves its
statistics in FILE (``python -m pstats FILE``). One run takes about 30 s:

    .venv/bin/python -m tools.bench.rtt_split                            # our defaults
    .venv/bin/python -m tools.bench.rtt_split --profile low-latency
    .venv/bin/python -m tools.bench.rtt_split --ours-prop aeron.idle.max.park=100us

Prints progress to stderr and one JSON line to stdout. Exit code 0, or 2 when nothing could be measured.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import signal
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.cnc import cnc_ready
from tools.bench.compare import add_prop_args, parse_props
from tools.bench.cpu import tree_cpu_seconds
from tools.bench.harness import STARTUP_TIMEOUT_S, Harness, free_udp_port, require_peers, wait_ready
from tools.bench.report import BenchError, emit, host_info, no_comparison, progress, run_main
from tools.bench.samples import parse_histogram

PING_STREAM_ID, PONG_STREAM_ID = 10, 11
STAGES = ("ping_sent", "ping_read", "pong_sent", "pong_read")
TAIL_NS = 1_000_000
"""A stage longer than this is in the round trips' millisecond tail (``tail_stages``)."""
# Data frame header (docs/wire.md): frame length, version, flags, type, term offset, session, stream, term id,
# reserved value; the payload follows at 32.
_FRAME = struct.Struct("<iBBhiiii")
HDR_TYPE_DATA = 1
DATA_HEADER_LENGTH = 32
FRAME_ALIGNMENT = 32


def _stamp(records: list[tuple[int, int, int]], side: int, data: memoryview, now_ns: int) -> None:
    """Append (side, stream id, age in ns) for each data frame in ``data`` that carries a payload."""
    offset, end = 0, len(data)
    while offset + DATA_HEADER_LENGTH + 8 <= end:
        length, _, _, frame_type, _, _, stream_id, _ = _FRAME.unpack_from(data, offset)
        if length <= 0:
            break
        if frame_type == HDR_TYPE_DATA and length >= DATA_HEADER_LENGTH + 8:
            (sent_ns,) = struct.unpack_from("<q", data, offset + DATA_HEADER_LENGTH)
            records.append((side, stream_id, now_ns - sent_ns))
        offset += (length + FRAME_ALIGNMENT - 1) & ~(FRAME_ALIGNMENT - 1)


def child(aeron_dir: str, out: str, props: list[str]) -> int:
    """Our driver (``mediadriver run``) with its UDP sends and reads stamped; the stamps go to ``out`` at exit."""
    from driver import cli
    from driver.agent import runner as runner_module
    from driver.agent.work_probe import WorkProbe
    from driver.conductor import DriverConductor
    from driver.fast_cycle import FastCycle
    from driver.media.udp_transport import UdpTransport
    from driver.network_publication import NetworkPublication
    from driver.receiver import Receiver
    from driver.sender import Sender

    records: list[tuple[int, int, int]] = []
    cycles: dict[str, Any] = {
        "ticks": 0, "parks": 0, "probes_quiet": 0, "probes_busy": 0, "native": 0, "handbacks": 0
    }
    clock = time.monotonic_ns
    publication_send, send, receive_batch = (
        NetworkPublication.send,
        UdpTransport.send,
        UdpTransport.receive_batch,
    )

    def stamped_publication_send(self: Any, now_ns: int) -> int:
        # The publication's burst is one native call (its send step): stamp the frames it moved the sender over.
        before = self.sender_position.get()
        result = publication_send(self, now_ns)
        after = self.sender_position.get()
        if after > before:
            _stamp(records, 0, term_region(self._term_buffers, self.position_bits_to_shift, before, after), clock())
        return result

    def stamped_send(self: Any, data: Any) -> int:
        sent = send(self, data)
        if sent > 0:
            _stamp(records, 0, memoryview(data), clock())
        return sent

    def stamped_receive(self: Any, batch: Any) -> int:
        received = receive_batch(self, batch)
        if received:
            now_ns = clock()
            for i in range(received):
                _stamp(records, 1, batch.data(i), now_ns)
        return received

    fast_run = FastCycle.run

    def term_region(terms: Any, bits: int, start: int, end: int) -> memoryview:
        """The log's bytes from position ``start`` to ``end`` (at most to the end of ``start``'s term)."""
        term = terms[(start >> bits) % 3]
        offset = start & ((1 << bits) - 1)
        return term.view[offset : min(offset + end - start, len(term))]

    def stamped_fast_run(self: Any) -> Any:
        # The native cycle sends and rebuilds in C: stamp the frames between each publication's sender position
        # (and each image's high-water mark) before and after it, as the wrapped calls stamp the Python path's.
        publications = [p for agent in self._participants if isinstance(agent, Sender) for p in agent._publications]
        sent = [(p, p.sender_position.get()) for p in publications] if self.armed else []
        read = [(i, i.hwm_position.get()) for slot in self._endpoints for i in slot.images] if self.armed else []
        result = fast_run(self)
        now_ns = clock()
        cycles["native" if result is not None else "handbacks"] += 1
        for publication, before in sent:
            after = publication.sender_position.get()
            if after > before:
                bits = publication.position_bits_to_shift
                _stamp(records, 0, term_region(publication._term_buffers, bits, before, after), now_ns)
        for image, before in read:
            after = image.hwm_position.get()
            if after > before:
                bits = image.position_bits_to_shift
                _stamp(records, 1, term_region(image._term_buffers, bits, before, after), now_ns)
        return result

    FastCycle.run = stamped_fast_run  # type: ignore[method-assign]
    NetworkPublication.send = stamped_publication_send  # type: ignore[method-assign]
    UdpTransport.send = stamped_send  # type: ignore[method-assign]
    UdpTransport.receive_batch = stamped_receive  # type: ignore[method-assign]
    tick = runner_module.AgentRunner._tick

    def counted_tick(self: Any) -> None:
        cycles["ticks"] += 1
        tick(self)
        if self._parked:
            cycles["parks"] += 1

    runner_module.AgentRunner._tick = counted_tick  # type: ignore[method-assign]
    fast = runner_module.AgentRunner._fast

    def counted_fast(self: Any) -> None:
        ticks = cycles["ticks"]
        fast(self)
        if self._parked and cycles["ticks"] == ticks:
            cycles["parks"] += 1  # a native cycle's park (a hand-back's is the duty cycle's, counted there)

    runner_module.AgentRunner._fast = counted_fast  # type: ignore[method-assign]
    park_timer = runner_module.ParkTimer
    arm, on_park_timer = park_timer.arm, runner_module.AgentRunner._on_park_timer
    armed: dict[str, int] = {"due_ns": 0}
    late_ns: list[int] = []

    def timed_arm(self: Any, delay_ns: int) -> None:
        armed["due_ns"] = clock() + delay_ns
        arm(self, delay_ns)

    def timed_on_park_timer(self: Any) -> None:
        if armed["due_ns"]:
            late_ns.append(clock() - armed["due_ns"])
            armed["due_ns"] = 0
        on_park_timer(self)

    is_quiet = WorkProbe.is_quiet

    def counted_is_quiet(self: Any) -> bool:
        quiet = is_quiet(self)
        cycles["probes_quiet" if quiet else "probes_busy"] += 1
        return quiet

    WorkProbe.is_quiet = counted_is_quiet  # type: ignore[method-assign]
    park_timer.arm = timed_arm  # type: ignore[method-assign]
    runner_module.AgentRunner._on_park_timer = timed_on_park_timer  # type: ignore[method-assign]
    do_work = runner_module.CompositeAgent.do_work
    cycle_ns: dict[bool, list[int]] = {True: [], False: []}

    def timed_do_work(self: Any) -> int:
        started_ns = clock()
        work = do_work(self)
        cycle_ns[work > 0].append(clock() - started_ns)
        return work

    runner_module.CompositeAgent.do_work = timed_do_work  # type: ignore[method-assign]
    agent_ns: dict[str, list[int]] = {}
    agent_busy_ns: dict[str, list[int]] = {}
    for agent_class in (DriverConductor, Sender, Receiver):
        samples = agent_ns[agent_class.__name__] = []
        busy_samples = agent_busy_ns[agent_class.__name__] = []

        def timed(
            self: Any,
            _work: Any = agent_class.do_work,
            _samples: list[int] = samples,
            _busy: list[int] = busy_samples,
        ) -> int:
            started_ns = clock()
            work = _work(self)
            (_busy if work else _samples).append(clock() - started_ns)
            return work

        agent_class.do_work = timed  # type: ignore[method-assign]
    started = time.monotonic()
    profile_out = os.environ.get("RTT_SPLIT_CPROFILE")
    profiler = cProfile.Profile() if profile_out else None
    if profiler is not None:
        profiler.enable()
    try:
        return cli.main(["run", "--dir", aeron_dir, *props]) or 0
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile_out)
        with open(out, "w") as f:
            busy, idle = (sorted(cycle_ns[k]) for k in (True, False))
            cycles["busy_cycle_us"] = busy[len(busy) // 2] / 1000 if busy else None
            cycles["busy_cycles"], cycles["idle_cycles"] = len(busy), len(idle)
            cycles["idle_cycle_us"] = idle[len(idle) // 2] / 1000 if idle else None
            late = sorted(late_ns)
            cycles["park_late_us"] = (
                {q: late[int(len(late) * f)] / 1000 for q, f in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}
                if late
                else None
            )
            cycles["busy_agent_us"] = {
                name: sorted(values)[len(values) // 2] / 1000 if values else None
                for name, values in agent_busy_ns.items()
            }
            cycles["idle_agent_us"] = {
                name: sorted(values)[len(values) // 2] / 1000 if values else None
                for name, values in agent_ns.items()
            }
            json.dump({"records": records, **cycles, "seconds": time.monotonic() - started}, f)


def stage_medians(records: list[list[int]], skip: int) -> dict[str, float | None]:
    """Median age in µs at each stage over the round trips after the first ``skip`` (Ping's warm-up)."""
    by_stage: dict[str, list[int]] = {stage: [] for stage in STAGES}
    keys = {(0, PING_STREAM_ID): "ping_sent", (1, PING_STREAM_ID): "ping_read"}
    keys |= {(0, PONG_STREAM_ID): "pong_sent", (1, PONG_STREAM_ID): "pong_read"}
    for side, stream_id, age_ns in records:
        stage = keys.get((side, stream_id))
        if stage is not None:
            by_stage[stage].append(age_ns)
    return {
        stage: round(statistics.median(ages[skip:]) / 1000, 1) if len(ages) > skip else None
        for stage, ages in by_stage.items()
    }


def tail_stages(records: list[list[int]], skip: int, threshold_ns: int = TAIL_NS) -> dict[str, Any]:
    """Where the millisecond tail goes: over the round trips after the first ``skip``, how many took a stage
    longer than ``threshold_ns`` (a stage's own time: its age minus the previous stage's), by stage. A round trip
    is the run of records from one ``ping_sent`` to the next (Ping waits for each echo, so they do not overlap)."""
    keys = {(0, PING_STREAM_ID): 0, (1, PING_STREAM_ID): 1, (0, PONG_STREAM_ID): 2, (1, PONG_STREAM_ID): 3}
    trips: list[list[int | None]] = []
    for side, stream_id, age_ns in records:
        index = keys.get((side, stream_id))
        if index is None:
            continue
        if index == 0:
            trips.append([None] * len(STAGES))
        if trips and trips[-1][index] is None:
            trips[-1][index] = age_ns
    counted = [trip for trip in trips[skip:] if None not in trip]
    slow = dict.fromkeys(STAGES, 0)
    for trip in counted:
        previous = 0
        for stage, age_ns in zip(STAGES, trip, strict=True):
            assert age_ns is not None
            if age_ns - previous > threshold_ns:
                slow[stage] += 1
            previous = age_ns
    share = {stage: round(n / len(counted), 4) if counted else None for stage, n in slow.items()}
    return {"round_trips": len(counted), "share_over_threshold": share}


def measure(args: argparse.Namespace, props: dict[str, str]) -> dict[str, Any]:
    peers = require_peers()
    with Harness(peers) as h, tempfile.TemporaryDirectory(prefix="rtt-split-") as tmp:
        aeron_dir = h.new_dir("ours") / "aeron"
        out = Path(tmp) / "stamps.json"
        extra = ["--profile", args.profile] if args.profile else []
        cmd = [sys.executable, "-m", "tools.bench.rtt_split", "--child", str(aeron_dir), str(out), "--", *extra]
        cmd += [f"-D{k}={v}" for k, v in props.items()]
        driver = h.spawn("ours-driver", cmd)
        wait_ready(driver, lambda: cnc_ready(aeron_dir), "our driver")
        client_props: dict[str, Any] = {
            "aeron.dir": aeron_dir,
            "aeron.sample.ping.channel": f"aeron:udp?endpoint=localhost:{free_udp_port()}",
            "aeron.sample.pong.channel": f"aeron:udp?endpoint=localhost:{free_udp_port()}",
            "aeron.sample.ping.streamId": PING_STREAM_ID,
            "aeron.sample.pong.streamId": PONG_STREAM_ID,
            "aeron.sample.messages": args.messages,
            "aeron.sample.messageLength": 32,
            "aeron.sample.warmup.iterations": args.warmup_iterations,
            "aeron.sample.warmup.messages": args.warmup_messages,
        }
        pong = h.java("io.aeron.samples.Pong", client_props)
        h.wait_for(
            lambda: pong.find("^Using exclusive publications") is not None,
            STARTUP_TIMEOUT_S,
            "Pong to start",
            watch=[pong, driver],
            fail_on_exception=[pong],
        )
        cpu_before = tree_cpu_seconds(driver.pid)
        ping = h.java("io.aeron.samples.Ping", client_props, stdin=b"n\n")
        h.wait_for(
            lambda: ping.find(r"^#\[Max\s*=") is not None,
            args.timeout,
            "Ping's histogram",
            watch=[pong, ping, driver],
            fail_on_exception=[pong, ping],
        )
        driver_cpu_s = tree_cpu_seconds(driver.pid) - cpu_before
        histogram = parse_histogram(ping.text())
        driver.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while driver.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        if not out.exists():
            raise BenchError(f"the driver left no stamps: {driver.tail(5)}")
        data = json.loads(out.read_text())
    warmup = args.warmup_iterations * args.warmup_messages
    stages = stage_medians(data["records"], warmup)
    rtt = histogram["p50_us"]
    previous, split = 0.0, {}
    for stage, value in [*stages.items(), ("rtt", rtt)]:
        if value is None:
            split[stage] = None
            continue
        split[stage] = round(value - previous, 1)
        previous = value
    return {
        "stages_us": {**stages, "rtt": rtt},
        "split_us": split,
        "rtt_p99_us": histogram["p99_us"],
        "tail_stages": tail_stages(data["records"], warmup),
        "rtt_quartiles_us": [histogram["p25_us"], histogram["p50_us"], histogram["p75_us"]],
        # Ping's round trips, warm-up included, over the driver's CPU while Ping ran (its start-up is ~1 %).
        "driver_cpu_us_per_round_trip": round(
            driver_cpu_s * 1e6 / (warmup + args.messages), 1
        ),
        "duty_cycles_per_s": round(data["ticks"] / data["seconds"]),
        # Over the driver's whole run (Pong's and Ping's start-up add a few hundred).
        "cycles_per_round_trip": {
            kind: round(data[f"{kind}_cycles"] / (warmup + args.messages), 2) for kind in ("busy", "idle")
        },
        "parks_per_round_trip": round(data["parks"] / (warmup + args.messages), 2),
        # The native steady-state cycle (driver/fast_cycle.py): wake-ups it served, and those it handed back to a
        # Python duty cycle (counted in cycles_per_round_trip too).
        "native_cycles_per_round_trip": {
            kind: round(data[kind] / (warmup + args.messages), 2) for kind in ("native", "handbacks")
        },
        "probes_per_s": {
            k: round(data[f"probes_{k}"] / data["seconds"]) for k in ("quiet", "busy")
        },
        "parked_share": round(data["parks"] / max(1, data["ticks"]), 3),
        "busy_cycle_us": data["busy_cycle_us"],
        "idle_cycle_us": data["idle_cycle_us"],
        "idle_agent_us": data["idle_agent_us"],
        "busy_agent_us": data["busy_agent_us"],
        "park_late_us": data["park_late_us"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000, help="timed round trips (default 20,000)")
    parser.add_argument("--warmup-iterations", type=int, default=2, help="Ping's warm-up iterations (2)")
    parser.add_argument("--warmup-messages", type=int, default=5_000, help="messages per warm-up (5,000)")
    parser.add_argument("--profile", default=None, help="mediadriver run --profile NAME (e.g. low-latency)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds a run may take (180)")
    add_prop_args(parser)
    args = parser.parse_args()
    base = {"bench": "rtt_split", "profile": args.profile, **host_info()}
    try:
        result = measure(args, parse_props(args.ours_prop))
    except BenchError as exc:
        return no_comparison(base, exc)
    progress(f"rtt_split: {result}")
    emit({**base, **result})
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        aeron_dir, out, *rest = sys.argv[2:]
        os.environ.pop("AERON_DIR", None)
        sys.exit(child(aeron_dir, out, [a for a in rest if a != "--"]))
    run_main(main)
