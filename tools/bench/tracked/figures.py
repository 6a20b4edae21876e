"""The tracked figures (asv ``track_*`` benchmarks): each a same-run ratio of ours against its reference, or a
figure with a goal of its own, taken from one quick run of a benchmark script of tools/bench.

Each class runs its script once (``setup_cache``: its one JSON line; asv keys the cache by where the method is
written, so each class writes its own) and its ``track_*`` attributes, made by ``figure``, read figures from it:
each with its unit, whether higher or lower is better (tools/bench/track.py names a figure that got more than 20 %
worse) and its goal. The scripts start the references as their users do (the Java driver, archive
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
    path: tuple[str, ...], unit: str, better: str, goal: float | None = None
) -> Callable[[Any, dict[str, Any]], float]:
    """A track method reading the number at ``path`` of the class's JSON line (see ``pick``)."""

    def track(self: Any, result: dict[str, Any]) -> float:
        return pick(result, *path)

    track.unit = unit  # type: ignore[attr-defined]
    track.goal = goal  # type: ignore[attr-defined]
    track.better = better  # type: ignore[attr-defined]
    return track


def tracked(cls: type) -> type:
    """Names each ``figure`` of the class after its attribute and notes which way is better."""
    for name, method in vars(cls).items():
        if name.startswith("track_"):
            method.__name__, method.__qualname__ = name, f"{cls.__name__}.{name}"
            DIRECTIONS[method.__qualname__] = method.better
    return cls


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
    """The number at ``path``; a key ending in ``*`` matches the first key that starts with the rest; of a list of
    numbers (one per run), the largest."""
    value: Any = result
    for key in path:
        if key.endswith("*"):
            key = next(k for k in value if k.startswith(key[:-1]))
        value = value[key]
    if isinstance(value, list) and value and all(isinstance(v, int | float) for v in value):
        value = max(value)
    if not isinstance(value, int | float):
        raise ValueError(f"{'/'.join(path)} is {value!r}, not a number")
    return float(value)


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
LOSS_QUICK = ("--runs", "1", "--seconds", "5", "--skip", "2")
JAVA_DRIVER = "the Java 1.15.1 driver (SHARED), Java sample clients for both"
JAVA_LOSS = "the Java 1.15.1 driver with its DebugReceiveChannelEndpoint, Java clients for both"
JAVA_ARCHIVE = "the Java 1.15.1 ArchivingMediaDriver, the 1.15.1 AeronArchive client for both"


@tracked
class Startup:
    """Launch to a ready cnc.dat and idle anonymous memory, ours vs the Java driver; the CLI's start-up."""

    timeout = 300
    script, args = "startup", ("--launches", "3")
    reference = "the Java 1.15.1 driver launched the same way"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_ready_ratio = figure(("ready_ratio",), "x Java", "lower", 0.7)
    track_rss_anon_ratio = figure(("rss_ratio",), "x Java", "lower", 0.7)
    track_help_s = figure(("help_s",), "s", "lower", 0.25)
    track_stat_once_s = figure(("stat_once_s",), "s", "lower", 0.25)


@tracked
class Udp32:
    """Java StreamingPublisher -> RateSubscriber over UDP loopback, 32 B, ours vs the Java driver (SHARED)."""

    timeout = 300
    script, args, reference = "udp_throughput", STEADY_QUICK, JAVA_DRIVER

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_msgs_ratio = figure(("ratios", "ours*"), "x Java", "higher", 1.5)


@tracked
class Udp1k:
    """The same at 1 KiB."""

    timeout = 300
    script, args, reference = "udp_throughput", (*STEADY_QUICK, "--length", "1024"), JAVA_DRIVER

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_msgs_ratio = figure(("ratios", "ours*"), "x Java", "higher", 1.5)


@tracked
class RoundTrips:
    """Java Ping <-> Pong over UDP: ours with defaults and with the low-latency profile vs the Java driver."""

    timeout = 600
    script, args = "ping_pong", ("--runs", "1", "--channel", "udp")
    reference = "the Java 1.15.1 driver (SHARED), Java Ping and Pong for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_p50_ratio = figure(("p50_ratio",), "x Java", "lower", 1.0)
    track_p99_ratio = figure(("p99_ratio",), "x Java", "lower", 1.0)
    track_low_latency_p50_ratio = figure(("ll_p50_ratio",), "x Java", "lower", 0.7)
    track_low_latency_p99_ratio = figure(("ll_p99_ratio",), "x Java", "lower", 0.7)


@tracked
class Loss5:
    """Sequenced publisher -> subscriber over UDP with 5 % of data datagrams dropped at the receiver."""

    timeout = 300
    script, args, reference = "loss_throughput", (*LOSS_QUICK, "--loss", "0.05"), JAVA_LOSS

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_msgs_ratio = figure(("ratio",), "x Java", "higher", 10.0)


@tracked
class Loss1:
    """The same with 1 % dropped."""

    timeout = 300
    script, args, reference = "loss_throughput", (*LOSS_QUICK, "--loss", "0.01"), JAVA_LOSS

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_msgs_ratio = figure(("ratio",), "x Java", "higher", 5.0)


@tracked
class Archive:
    """The 1.15.1 AeronArchive client records an IPC stream and replays it: ours (checksums on) vs Java's."""

    timeout = 600
    script, args, reference = "archive_throughput", ("--runs", "1", "--no-shell-check"), JAVA_ARCHIVE

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_record_32_ratio = figure(("len_32", "record_ratio"), "x Java", "higher", 1.0)
    track_replay_32_ratio = figure(("len_32", "replay_ratio"), "x Java", "higher", 1.0)
    track_record_1k_ratio = figure(("len_1024", "record_ratio"), "x Java", "higher", 1.0)
    track_replay_1k_ratio = figure(("len_1024", "replay_ratio"), "x Java", "higher", 1.0)


@tracked
class ReplayLatency:
    """startReplay -> first fragment polled over IPC, ours vs Java's archive."""

    timeout = 300
    script, args = "archive_replay_latency", ("--runs", "1", "--reps", "200", "--warmup", "50")
    reference = JAVA_ARCHIVE

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_p50_ratio = figure(("p50_ratio",), "x Java", "lower", 0.5)


@tracked
class PythonClients:
    """Our Python client vs pyaeron (the Aeron 1.53 C client) through our driver, per message, process to
    process; and our asyncio API against our blocking one."""

    timeout = 900
    script, args = "python_clients", ("--runs", "1")
    reference = "pyaeron 0.1.0 (the Aeron 1.53 C client) through our driver, same interpreter"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_ipc_32_ratio = figure(("ratios", "message/ipc/32 *", "ratio"), "x pyaeron", "higher", 1.2)
    track_ipc_1k_ratio = figure(("ratios", "message/ipc/1024 *", "ratio"), "x pyaeron", "higher", 1.2)
    track_udp_32_ratio = figure(("ratios", "message/udp/32 *", "ratio"), "x pyaeron", "higher", 1.0)
    track_asyncio_ipc_32_ratio = figure(
        ("ratios", "asyncio/ipc/32 *", "ratio"), "x ours blocking", "higher", 0.8
    )


@tracked
class ServiceReplay:
    """The record & replay service's replay forwarding, from the request, against the archive's plain replay."""

    timeout = 300
    script, args = "service_replay", ("--runs", "1", "--messages", "100000")
    reference = "the archive's plain replay of the same recording"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_msgs_per_s = figure(("msgs_per_s", "service"), "msgs/s", "higher", 200_000)
    track_vs_plain_ratio = figure(("service_vs_plain",), "x plain replay", "higher")


@tracked
class Replication:
    """Archive replication between two network namespaces against a plain replay over the same link; the time
    from a merge request to the live stream."""

    timeout = 600
    script, args = "replication", ("--runs", "1", "--mib", "64")
    reference = "a plain replay over the same veth link between two namespaces"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_copy_ratio = figure(("ratio",), "x plain replay", "higher", 0.8)
    track_merge_s = figure(("merge_s",), "s", "lower", 2.0)


@tracked
class ManyStreams:
    """16 and 256 streams of one UDP channel at 200 k msgs/s in all, our Python client on both ends: the
    driver's CPU, ours vs the Java driver."""

    timeout = 600
    script, args = "many_streams", ("--streams", "16,256", "--seconds", "5", "--warmup", "2")
    reference = "the Java 1.15.1 driver (SHARED), the same Python client processes for both"

    def setup_cache(self) -> dict[str, Any]:
        return run_script(self.script, *self.args)

    track_cpu_16_ratio = figure(("streams", "16", "cpu_ratio"), "x Java", "lower", 1.0)
    track_cpu_256_ratio = figure(("streams", "256", "cpu_ratio"), "x Java", "lower", 1.0)
