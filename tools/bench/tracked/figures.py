"""The tracked figures (asv ``track_*`` benchmarks): each a same-run ratio of ours against its reference, or a
figure with a goal of its own, taken from one quick run of a benchmark script of tools/bench.

Each class runs its script once (``setup_cache``: its one JSON line) and its ``track_*`` methods read figures from
it. ``@figure`` gives each its unit, whether higher or lower is better (tools/bench/track.py names a figure that got
more than 20 % worse) and its goal. The scripts start the references as their users do (the Java driver, archive
and sample clients from the jar; pyaeron in its own venv); the options here are the quick set's, about 12 minutes
in all on a 2-core machine. Run through asv (``make bench``), or one class alone:
``python -m asv run --python=same --quick --bench Startup --config tools/bench/asv.conf.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SCRIPT_TIMEOUT_S = 900

DIRECTIONS: dict[str, str] = {}
"""Each track method (``Class.track_x``) -> "higher" or "lower": which way is better."""


def figure(
    unit: str, better: str, goal: float | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def mark(method: Callable[..., Any]) -> Callable[..., Any]:
        method.unit = unit  # type: ignore[attr-defined]
        method.goal = goal  # type: ignore[attr-defined]
        DIRECTIONS[method.__qualname__] = better
        return method

    return mark


def direction(name: str) -> str:
    """Which way is better for an asv benchmark name (``figures.Class.track_x``)."""
    return DIRECTIONS[name.split(".", 1)[1]]


def run_script(name: str, *args: str) -> dict[str, Any]:
    """``python -m tools.bench.<name> *args`` from the repository root: its JSON line (progress goes to stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", f"tools.bench.{name}", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(
            f"tools.bench.{name} {' '.join(args)} printed no JSON line (exit {done.returncode})"
        )
    return json.loads(lines[-1])


def pick(result: dict[str, Any], *path: str) -> float:
    """The number at ``path``; a key ending in ``*`` matches the first key that starts with the rest."""
    value: Any = result
    for key in path:
        if key.endswith("*"):
            key = next(k for k in value if k.startswith(key[:-1]))
        value = value[key]
    if not isinstance(value, int | float):
        raise ValueError(f"{'/'.join(path)} is {value!r}, not a number")
    return float(value)


class Startup:
    """Launch to a ready cnc.dat and idle anonymous memory, ours vs the Java driver; the CLI's start-up."""

    timeout = 300
    script = "startup"
    args = ("--launches", "3")
    reference = "the Java 1.15.1 driver launched the same way"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "lower", 0.7)
    def track_ready_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ready_ratio")

    @figure("x Java", "lower", 0.7)
    def track_rss_anon_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "rss_ratio")

    @figure("s", "lower", 0.25)
    def track_help_s(self, r: dict[str, Any]) -> float:
        return pick(r, "help_s")

    @figure("s", "lower", 0.25)
    def track_stat_once_s(self, r: dict[str, Any]) -> float:
        return pick(r, "stat_once_s")


STEADY_QUICK = (
    "--runs",
    "1",
    "--seconds",
    "5",
    "--orders",
    "together",
    "--setups",
    "ours,java",
    "--no-shell-check",
)


class Udp32:
    """Java StreamingPublisher -> RateSubscriber over UDP loopback, 32 B, ours vs the Java driver (SHARED)."""

    timeout = 300
    script = "udp_throughput"
    args = STEADY_QUICK
    reference = "the Java 1.15.1 driver (SHARED), Java sample clients for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "higher", 1.5)
    def track_msgs_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratios", "ours*")


class Udp1k:
    """The same at 1 KiB."""

    timeout = 300
    script = "udp_throughput"
    args = (*STEADY_QUICK, "--length", "1024")
    reference = "the Java 1.15.1 driver (SHARED), Java sample clients for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "higher", 1.5)
    def track_msgs_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratios", "ours*")


class RoundTrips:
    """Java Ping <-> Pong over UDP: ours with defaults and with the low-latency profile vs the Java driver."""

    timeout = 600
    script = "ping_pong"
    args = ("--runs", "1", "--channel", "udp")
    reference = "the Java 1.15.1 driver (SHARED), Java Ping and Pong for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "lower", 1.0)
    def track_p50_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "p50_ratio")

    @figure("x Java", "lower", 1.0)
    def track_p99_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "p99_ratio")

    @figure("x Java", "lower", 0.7)
    def track_low_latency_p50_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ll_p50_ratio")

    @figure("x Java", "lower", 0.7)
    def track_low_latency_p99_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ll_p99_ratio")


LOSS_QUICK = ("--runs", "1", "--seconds", "5", "--skip", "2")


class Loss5:
    """Sequenced publisher -> subscriber over UDP with 5 % of data datagrams dropped at the receiver."""

    timeout = 300
    script = "loss_throughput"
    args = (*LOSS_QUICK, "--loss", "0.05")
    reference = "the Java 1.15.1 driver with its DebugReceiveChannelEndpoint, Java clients for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "higher", 10.0)
    def track_msgs_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratio")


class Loss1:
    """The same with 1 % dropped."""

    timeout = 300
    script = "loss_throughput"
    args = (*LOSS_QUICK, "--loss", "0.01")
    reference = "the Java 1.15.1 driver with its DebugReceiveChannelEndpoint, Java clients for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "higher", 5.0)
    def track_msgs_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratio")


class Archive:
    """The 1.15.1 AeronArchive client records an IPC stream and replays it: ours (checksums on) vs Java's."""

    timeout = 600
    script = "archive_throughput"
    args = ("--runs", "1", "--no-shell-check")
    reference = "the Java 1.15.1 ArchivingMediaDriver, the 1.15.1 AeronArchive client for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "higher", 1.0)
    def track_record_32_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "len_32", "record_ratio")

    @figure("x Java", "higher", 1.0)
    def track_replay_32_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "len_32", "replay_ratio")

    @figure("x Java", "higher", 1.0)
    def track_record_1k_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "len_1024", "record_ratio")

    @figure("x Java", "higher", 1.0)
    def track_replay_1k_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "len_1024", "replay_ratio")


class ReplayLatency:
    """startReplay -> first fragment polled over IPC, ours vs Java's archive."""

    timeout = 300
    script = "archive_replay_latency"
    args = ("--runs", "1", "--reps", "200", "--warmup", "50")
    reference = "the Java 1.15.1 ArchivingMediaDriver, the 1.15.1 AeronArchive client for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "lower", 0.5)
    def track_p50_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "p50_ratio")


class PythonClients:
    """Our Python client vs pyaeron (the Aeron 1.53 C client) through our driver, per message, process to
    process; and our asyncio API against our blocking one."""

    timeout = 900
    script = "python_clients"
    args = ("--runs", "1")
    reference = "pyaeron 0.1.0 (the Aeron 1.53 C client) through our driver, same interpreter"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x pyaeron", "higher", 1.2)
    def track_ipc_32_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratios", "message/ipc/32 *")

    @figure("x pyaeron", "higher", 1.2)
    def track_ipc_1k_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratios", "message/ipc/1024 *")

    @figure("x pyaeron", "higher", 1.0)
    def track_udp_32_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratios", "message/udp/32 *")

    @figure("x ours blocking", "higher", 0.8)
    def track_asyncio_ipc_32_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratios", "asyncio/ipc/32 *")


class ServiceReplay:
    """The record & replay service's replay forwarding, from the request, against the archive's plain replay."""

    timeout = 300
    script = "service_replay"
    args = ("--runs", "1", "--messages", "100000")
    reference = "the archive's plain replay of the same recording"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("msgs/s", "higher", 200_000)
    def track_msgs_per_s(self, r: dict[str, Any]) -> float:
        return pick(r, "msgs_per_s", "service")

    @figure("x plain replay", "higher")
    def track_vs_plain_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "service_vs_plain")


class Replication:
    """Archive replication between two network namespaces against a plain replay over the same link; the time
    from a merge request to the live stream."""

    timeout = 600
    script = "replication"
    args = ("--runs", "1", "--mib", "64")
    reference = "a plain replay over the same veth link between two namespaces"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x plain replay", "higher", 0.8)
    def track_copy_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "ratio")

    @figure("s", "lower", 2.0)
    def track_merge_s(self, r: dict[str, Any]) -> float:
        return max(r["merge_s"])


class ManyStreams:
    """16 and 256 streams of one UDP channel at 200 k msgs/s in all, our Python client on both ends: the
    driver's CPU, ours vs the Java driver."""

    timeout = 600
    script = "many_streams"
    args = ("--streams", "16,256", "--seconds", "5", "--warmup", "2")
    reference = "the Java 1.15.1 driver (SHARED), the same Python client processes for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    @figure("x Java", "lower", 1.0)
    def track_cpu_16_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "streams", "16", "cpu_ratio")

    @figure("x Java", "lower", 1.0)
    def track_cpu_256_ratio(self, r: dict[str, Any]) -> float:
        return pick(r, "streams", "256", "cpu_ratio")
